//! Simulation throughput on generated clusters: pods placed per second of wall time.

use std::hint::black_box;

use allot_sim::generate::{GenOptions, load_generated};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The allocator the `allot` binary runs with.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn bench(c: &mut Criterion) {
    // As the `allot` binary does.
    allot_sim::memory::disable_transparent_huge_pages();
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    // The full issue-5 size (5,000 nodes x 8 devices, 50,000 pods) takes minutes per sample;
    // it runs when ALLOT_SIM_BENCH_FULL is set.
    let mut sizes = vec![(100, 8, 1_000), (500, 8, 4_000)];
    if std::env::var_os("ALLOT_SIM_BENCH_FULL").is_some() {
        sizes.push((5_000, 8, 50_000));
    }
    for (nodes, devices, pods) in sizes {
        let input = load_generated(GenOptions {
            nodes,
            devices_per_node: devices,
            pods,
        })
        .expect("valid cluster");
        group.throughput(Throughput::Elements(pods as u64));
        group.bench_function(format!("{nodes}x{devices}-{pods}pods"), |b| {
            b.iter(|| {
                let outcome = allot_sim::run(black_box(&input), &mut |_| {}).expect("runs");
                black_box(outcome.reconciles)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
