//! Time per hint merge on an 8-NUMA-node machine, the shape upstream's policy benchmark uses.

use allot_topologymanager::{
    NumaInfo, NumaMask, Policy, PolicyOptions, ProviderHints, TopologyHint, merge,
};
use criterion::{Criterion, criterion_group, criterion_main};

/// Every non-empty subset of `nodes` as a hint, preferred when it has at most `preferred_max`
/// nodes: how the CPU and memory managers answer for a request of that size.
fn all_masks(nodes: usize, preferred_max: usize) -> Vec<TopologyHint> {
    (1u32..(1 << nodes))
        .map(|bits| {
            let mask = NumaMask::from_ids((0..nodes).filter(|i| bits & (1 << i) != 0));
            let preferred = mask.count() <= preferred_max;
            TopologyHint::new(mask, preferred)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let nodes: Vec<usize> = (0..8).collect();
    let options = PolicyOptions::default();
    let numa = NumaInfo::new(&nodes, None, &options).expect("valid");
    let providers: Vec<ProviderHints> = vec![
        ProviderHints::from([("cpu".to_string(), Some(all_masks(8, 2)))]),
        ProviderHints::from([
            ("memory".to_string(), Some(all_masks(8, 1))),
            ("hugepages-1Gi".to_string(), Some(all_masks(8, 1))),
        ]),
        ProviderHints::from([("example.com/gpu".to_string(), Some(all_masks(8, 1)))]),
    ];
    for policy in [
        Policy::BestEffort,
        Policy::Restricted,
        Policy::SingleNumaNode,
    ] {
        c.bench_function(&format!("merge/8-numa/4x255-hints/{policy}"), |b| {
            b.iter(|| merge(policy, &options, &numa, &providers))
        });
    }
    // A common admission: CPU, memory and hugepages on a two-socket machine.
    let two: Vec<usize> = vec![0, 1];
    let numa2 = NumaInfo::new(&two, None, &options).expect("valid");
    let typical: Vec<ProviderHints> = vec![
        ProviderHints::from([("cpu".to_string(), Some(all_masks(2, 1)))]),
        ProviderHints::from([
            ("memory".to_string(), Some(all_masks(2, 1))),
            ("hugepages-1Gi".to_string(), Some(all_masks(2, 2))),
        ]),
    ];
    c.bench_function("merge/2-numa/cpu+memory+hugepages/restricted", |b| {
        b.iter(|| merge(Policy::Restricted, &options, &numa2, &typical))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
