//! Invariants of the Static policy over random admission sequences (container-level and
//! pod-level): NUMA memory is never
//! over-committed, every state the policy produces passes its own start-up validation, and the
//! same inputs give the same state.

use std::collections::BTreeMap;

use allot_memorymanager::{
    ContainerResources, HugePages, MemoryState, NumaNodeInfo, PodResources, StaticPolicy,
};
use allot_topologymanager::{NumaInfo, Policy, PolicyOptions, ProviderHints, merge};
use proptest::prelude::*;

const GI: u64 = 1 << 30;

#[derive(Debug, Clone)]
enum Op {
    /// Admit a pod needing `memory` GiB and `hugepages` 1Gi pages, merged under `policy`.
    Admit {
        memory: u64,
        hugepages: u64,
        policy: Policy,
    },
    /// Admit a pod with a pod-level memory budget of `budget` GiB: an app container with an
    /// exclusive `exclusive` GiB slice and a sidecar in the pod shared pool.
    AdmitPodLevel { budget: u64, exclusive: u64 },
    /// Remove the n-th admitted pod (modulo the count).
    Remove(usize),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (1u64..12, 0u64..4, prop_oneof![
            Just(Policy::None),
            Just(Policy::BestEffort),
            Just(Policy::Restricted),
            Just(Policy::SingleNumaNode)
        ])
            .prop_map(|(memory, hugepages, policy)| Op::Admit { memory, hugepages, policy }),
        1 => (1u64..10, 0u64..6).prop_map(|(budget, exclusive)| Op::AdmitPodLevel { budget, exclusive }),
        1 => any::<usize>().prop_map(Op::Remove),
    ]
}

fn machine() -> impl Strategy<Value = Vec<NumaNodeInfo>> {
    proptest::collection::vec((1u64..9, 0u64..4), 1..5).prop_map(|nodes| {
        nodes
            .into_iter()
            .enumerate()
            .map(|(id, (gib, pages))| NumaNodeInfo {
                id,
                memory: (gib + pages + 1) * GI,
                hugepages: vec![HugePages {
                    page_size_kib: 1 << 20,
                    num_pages: pages,
                }],
            })
            .collect()
    })
}

/// Runs the ops; returns the final state and the admitted pod UIDs.
fn simulate(machine: &[NumaNodeInfo], ops: &[Op]) -> Result<MemoryState, TestCaseError> {
    let reserved = machine
        .iter()
        .map(|n| (n.id, BTreeMap::from([("memory".to_string(), GI / 2)])))
        .collect();
    let mut policy = StaticPolicy::new(machine.to_vec(), reserved).expect("reserved memory set");
    let mut state = MemoryState::default();
    policy.start(&mut state).expect("empty state starts");
    let ids: Vec<usize> = machine.iter().map(|n| n.id).collect();
    let numa = NumaInfo::new(&ids, None, &PolicyOptions::default()).expect("valid nodes");
    let mut admitted: Vec<String> = Vec::new();
    for (i, op) in ops.iter().enumerate() {
        match op {
            Op::Admit {
                memory,
                hugepages,
                policy: tm_policy,
            } => {
                let mut requests = BTreeMap::from([("memory".to_string(), memory * GI)]);
                if *hugepages > 0 {
                    requests.insert("hugepages-1Gi".to_string(), hugepages * GI);
                }
                let pod = PodResources {
                    uid: format!("pod-{i:03}"),
                    guaranteed: true,
                    pod_level_resources: false,
                    init_containers: vec![],
                    containers: vec![ContainerResources {
                        name: "app".to_string(),
                        restartable: false,
                        requests,
                    }],
                };
                let hints: ProviderHints = policy
                    .get_topology_hints(&state, &pod, &pod.containers[0])
                    .unwrap_or_default();
                let (hint, admit) = merge(*tm_policy, &PolicyOptions::default(), &numa, &[hints]);
                if !admit {
                    continue;
                }
                if policy
                    .allocate(&mut state, &pod, &pod.containers[0], &hint)
                    .is_ok()
                {
                    admitted.push(pod.uid.clone());
                } else {
                    prop_assert!(
                        state.blocks(&pod.uid, "app").is_none(),
                        "failed allocation left blocks"
                    );
                }
            }
            Op::AdmitPodLevel { budget, exclusive } => {
                let app_requests = if *exclusive > 0 {
                    BTreeMap::from([("memory".to_string(), exclusive * GI)])
                } else {
                    BTreeMap::new()
                };
                let pod = PodResources {
                    uid: format!("pod-{i:03}"),
                    guaranteed: true,
                    pod_level_resources: false,
                    init_containers: vec![ContainerResources {
                        name: "sidecar".to_string(),
                        restartable: true,
                        requests: BTreeMap::new(),
                    }],
                    containers: vec![ContainerResources {
                        name: "app".to_string(),
                        restartable: false,
                        requests: app_requests,
                    }],
                };
                let budget = BTreeMap::from([("memory".to_string(), budget * GI)]);
                let hints = policy
                    .get_pod_level_topology_hints(&state, &pod, &budget)
                    .unwrap_or_default();
                let (hint, admit) = merge(
                    Policy::BestEffort,
                    &PolicyOptions::default(),
                    &numa,
                    &[hints],
                );
                if admit
                    && policy
                        .allocate_pod(&mut state, &pod, &budget, &hint)
                        .is_ok()
                {
                    admitted.push(pod.uid.clone());
                } else {
                    prop_assert!(
                        state.blocks(&pod.uid, "app").is_none(),
                        "failed allocation left blocks"
                    );
                    prop_assert!(!state.pod_entries.contains_key(&pod.uid));
                }
            }
            Op::Remove(n) => {
                if !admitted.is_empty() {
                    let uid = admitted.remove(n % admitted.len());
                    policy.remove_container(&mut state, &uid, "app");
                    policy.remove_container(&mut state, &uid, "sidecar");
                }
            }
        }
        check_invariants(&policy, &state)?;
    }
    Ok(state)
}

fn check_invariants(policy: &StaticPolicy, state: &MemoryState) -> Result<(), TestCaseError> {
    let mut reserved_total: BTreeMap<&str, u128> = BTreeMap::new();
    for node in state.machine_state.values() {
        for (resource, t) in &node.memory_map {
            prop_assert!(
                t.reserved <= t.allocatable,
                "over-committed {resource}: {t:?}"
            );
            prop_assert_eq!(t.reserved + t.free, t.allocatable);
            *reserved_total.entry(resource).or_default() += u128::from(t.reserved);
        }
    }
    let mut blocks_total: BTreeMap<&str, u128> = BTreeMap::new();
    for entry in state.pod_entries.values() {
        for b in &entry.memory_blocks {
            *blocks_total.entry(&b.resource).or_default() += u128::from(b.size);
        }
    }
    for (pod, containers) in &state.entries {
        if state.pod_entries.contains_key(pod) {
            // Containers of a pod-level pod hold partitions of its budget, counted above.
            continue;
        }
        for blocks in containers.values() {
            for b in blocks {
                *blocks_total.entry(&b.resource).or_default() += u128::from(b.size);
            }
        }
    }
    for (resource, total) in &reserved_total {
        prop_assert_eq!(
            *total,
            blocks_total.get(resource).copied().unwrap_or(0),
            "{}",
            resource
        );
    }
    let mut copy = state.clone();
    prop_assert!(
        policy.start(&mut copy).is_ok(),
        "own state fails start-up validation"
    );
    Ok(())
}

proptest! {
    #[test]
    fn numa_memory_is_never_over_committed(machine in machine(), ops in proptest::collection::vec(op(), 1..25)) {
        simulate(&machine, &ops)?;
    }

    #[test]
    fn admission_is_deterministic(machine in machine(), ops in proptest::collection::vec(op(), 1..15)) {
        let first = simulate(&machine, &ops)?;
        let second = simulate(&machine, &ops)?;
        prop_assert_eq!(first, second);
    }
}
