//! Time per Static-policy hint calculation and allocation on an 8-NUMA-node machine.

use std::collections::BTreeMap;

use allot_memorymanager::{
    ContainerResources, HugePages, MemoryState, NumaNodeInfo, PodResources, StaticPolicy,
};
use allot_topologymanager::TopologyHint;
use criterion::{Criterion, criterion_group, criterion_main};

const GI: u64 = 1 << 30;

fn policy() -> StaticPolicy {
    let machine = (0..8)
        .map(|id| NumaNodeInfo {
            id,
            memory: 64 * GI,
            hugepages: vec![HugePages {
                page_size_kib: 1 << 20,
                num_pages: 8,
            }],
        })
        .collect();
    let reserved = (0..8)
        .map(|id| (id, BTreeMap::from([("memory".to_string(), GI)])))
        .collect();
    StaticPolicy::new(machine, reserved).expect("valid policy")
}

fn pod(uid: &str, memory: u64) -> PodResources {
    PodResources {
        uid: uid.to_string(),
        guaranteed: true,
        pod_level_resources: false,
        init_containers: vec![],
        containers: vec![ContainerResources {
            name: "app".to_string(),
            restartable: false,
            requests: BTreeMap::from([
                ("memory".to_string(), memory),
                ("hugepages-1Gi".to_string(), 2 * GI),
            ]),
        }],
    }
}

fn bench(c: &mut Criterion) {
    let policy = policy();
    let mut state = MemoryState::default();
    policy.start(&mut state).expect("empty state starts");
    let big = pod("big", 100 * GI);
    c.bench_function("memory/8-numa/hints-100Gi", |b| {
        b.iter(|| policy.get_topology_hints(&state, &big, &big.containers[0]))
    });
    c.bench_function("memory/8-numa/allocate-8Gi", |b| {
        b.iter(|| {
            let mut p = policy.clone();
            let mut s = state.clone();
            let small = pod("small", 8 * GI);
            p.allocate(
                &mut s,
                &small,
                &small.containers[0],
                &TopologyHint::default(),
            )
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
