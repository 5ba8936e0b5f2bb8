//! Time per allocate call on the scenarios in `bench/dra/`: a fresh allocator per call (as the
//! scheduler builds one per scheduling cycle) with a warm CEL cache (compiled expressions kept
//! across calls, as upstream measures).

use allot_dra::{CelCache, Scenario, allocate_with_cache};

/// The allocator the `allot` binary ships with: the allocator allocates many small
/// vectors per call, and mimalloc serves them far faster than glibc's malloc.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;
use criterion::{Criterion, criterion_group, criterion_main};

const BENCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/dra");

fn scenarios() -> Vec<(String, Scenario)> {
    let mut paths: Vec<_> = std::fs::read_dir(BENCH)
        .expect("bench/dra")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    paths.sort();
    paths
        .into_iter()
        .map(|path| {
            let name = path
                .file_stem()
                .and_then(|s| s.to_str())
                .unwrap_or_default()
                .to_string();
            let text = std::fs::read_to_string(&path).expect("scenario");
            let mut scenario = Scenario::parse(&text).expect("scenario parses");
            // Slices shared across calls as the scheduler shares its informer objects (which
            // carry the uid and resourceVersion the store gave them).
            scenario.assign_identities();
            (name, scenario)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("allocate");
    for (name, scenario) in scenarios() {
        let features = scenario.features().expect("features");
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &allocated);
        let cache = CelCache::default();
        // Warm the cache and report the answer once.
        let answer = allocate_with_cache(&input, &features, &cache);
        eprintln!(
            "{name}: {}",
            match &answer {
                Ok(outcome) if outcome.is_allocated() => "allocated".to_string(),
                Ok(_) => "unschedulable".to_string(),
                Err(err) => format!("error: {err}"),
            }
        );
        group.bench_function(&name, |b| {
            b.iter(|| allocate_with_cache(&input, &features, &cache))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
