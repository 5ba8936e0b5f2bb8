//! Simulation throughput on generated clusters: pods placed per second of wall time.

use std::hint::black_box;

use allot_sim::generate::{GenOptions, cluster_json};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("simulate");
    group.sample_size(10);
    for (nodes, devices, pods) in [(100, 8, 1_000), (5_000, 8, 50_000)] {
        let text = cluster_json(GenOptions {
            nodes,
            devices_per_node: devices,
            pods,
        });
        let input = allot_sim::load_texts(&[("generated.json", &text)]).expect("valid cluster");
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
