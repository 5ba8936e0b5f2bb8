//! The three CPU-assignment cases of bench/kubelet/README.md, timed per call. Each checks its
//! answer against upstream's before timing.

use std::hint::black_box;

use allot_cpumanager::{
    CpuSortingStrategy, take_by_topology_numa_distributed, take_by_topology_numa_packed,
};
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use criterion::{Criterion, criterion_group, criterion_main};

const BENCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/kubelet");

fn topology(name: &str) -> CpuTopology {
    let text = std::fs::read_to_string(format!("{BENCH}/{name}.yaml")).expect("bench topology");
    CpuTopology::new(&NodeTopology::from_yaml_str(&text).expect("decodes")).expect("valid")
}

fn set(text: &str) -> CpuSet {
    CpuSet::parse(text).expect("cpu list")
}

fn cpu_assignment(c: &mut Criterion) {
    let large = topology("topoDualSocketMultiNumaPerSocketHTLarge");
    let small = topology("topoDualSocketHT");
    let free = set("2-63,66-127,130-191,194-255");
    let packed = CpuSortingStrategy::Packed;

    let got = take_by_topology_numa_packed(&large, &free, 16, packed, false).expect("packed");
    assert_eq!(
        got,
        set("2-9,130-137"),
        "packed 256-CPU answer differs from upstream"
    );
    c.bench_function("packed_256cpus_16", |b| {
        b.iter(|| {
            take_by_topology_numa_packed(black_box(&large), black_box(&free), 16, packed, false)
        })
    });

    let got = take_by_topology_numa_distributed(&large, &free, 48, 2, packed, false)
        .expect("distributed");
    assert_eq!(
        got,
        set("16-27,32-43,144-155,160-171"),
        "distributed answer differs from upstream"
    );
    c.bench_function("distributed_256cpus_48_group2", |b| {
        b.iter(|| {
            take_by_topology_numa_distributed(
                black_box(&large),
                black_box(&free),
                48,
                2,
                packed,
                false,
            )
        })
    });

    let free_small = set("1-11");
    let got =
        take_by_topology_numa_packed(&small, &free_small, 4, packed, false).expect("packed small");
    c.bench_function("packed_12cpus_4", |b| {
        b.iter(|| {
            take_by_topology_numa_packed(
                black_box(&small),
                black_box(&free_small),
                4,
                packed,
                false,
            )
        })
    });
    black_box(got);
}

criterion_group!(benches, cpu_assignment);
criterion_main!(benches);
