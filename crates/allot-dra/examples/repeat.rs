//! Runs one scenario's allocation N times with a warm cache: a fixed amount of work for
//! instruction-counting profilers (`valgrind --tool=callgrind`), whose counts do not depend on
//! what else the machine is doing.
//!
//! `cargo run --release -p allot-dra --example repeat -- bench/dra/gpu8-1claim-1gpu.yaml 1000`

use allot_dra::{CelCache, Scenario, allocate_with_cache};

/// The allocator the `allot` binary ships with: the allocator allocates many small
/// vectors per call, and mimalloc serves them far faster than glibc's malloc.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args.next().ok_or("usage: repeat SCENARIO.yaml [N]")?;
    let n: usize = args.next().map_or(Ok(1000), |n| n.parse())?;
    let mut scenario = Scenario::parse(&std::fs::read_to_string(&path)?)?;
    // Slices shared across calls as the scheduler shares its informer objects.
    scenario.assign_identities();
    let features = scenario.features()?;
    let node = scenario.node(None)?;
    let claims = scenario.claims_to_allocate()?;
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    let cache = CelCache::default();
    let first = allocate_with_cache(&input, &features, &cache);
    println!(
        "{path}: {}",
        if matches!(&first, Ok(o) if o.is_allocated()) {
            "allocated"
        } else {
            "not allocated"
        }
    );
    let start = std::time::Instant::now();
    calls(&input, &features, &cache, n);
    println!(
        "{:.3} µs per call",
        start.elapsed().as_secs_f64() * 1e6 / n as f64
    );
    Ok(())
}

/// The measured calls, in a function of their own so that a profiler can count just them
/// (`valgrind --tool=callgrind --toggle-collect='*calls*'`).
#[inline(never)]
fn calls(
    input: &allot_dra::AllocationInput<'_>,
    features: &allot_dra::Features,
    cache: &CelCache,
    n: usize,
) {
    for _ in 0..n {
        std::hint::black_box(allocate_with_cache(input, features, cache)).ok();
    }
}
