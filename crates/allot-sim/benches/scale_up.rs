//! The scale-up search of `allot simulate --add-nodes` (issue 20): a generated cluster whose
//! GPUs are all taken, more one-GPU pods pending, and a NodeShape of 8 GPUs. Small sizes, so
//! that `cargo bench -p allot-sim --bench scale_up` ends in well under a minute; the full size
//! (1,000 nodes x 8 GPUs, 5,000 pending) is `examples/scale_up.rs`.

use std::hint::black_box;

use allot_sim::generate::{GenOptions, node_shape_text, scale_up_texts};
use allot_sim::shape::NodeShape;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The allocator the `allot` binary runs with.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn bench(c: &mut Criterion) {
    allot_sim::memory::disable_transparent_huge_pages();
    let mut group = c.benchmark_group("scale_up");
    group.sample_size(10);
    group.warm_up_time(std::time::Duration::from_millis(500));
    group.measurement_time(std::time::Duration::from_secs(4));
    let shape =
        NodeShape::parse("gpu-node.yaml", &node_shape_text("gpu-node", 8)).expect("valid shape");
    for (nodes, pending) in [(20, 100), (100, 500)] {
        let options = GenOptions {
            nodes,
            devices_per_node: 8,
            pods: nodes * 8,
        };
        let texts = scale_up_texts(options, pending);
        let borrowed: Vec<(&str, &str)> = texts
            .iter()
            .map(|(name, text)| (name.as_str(), text.as_str()))
            .collect();
        let input = allot_sim::load_texts(&borrowed).expect("valid cluster");
        group.throughput(Throughput::Elements(pending as u64));
        group.bench_function(format!("{nodes}x8-{pending}pending"), |b| {
            b.iter(|| {
                let answer = allot_sim::capacity::scale_up(
                    black_box(&input),
                    std::slice::from_ref(&shape),
                    &[],
                    &mut |_| {},
                )
                .expect("search runs");
                assert!(answer.found);
                black_box(answer.counts)
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
