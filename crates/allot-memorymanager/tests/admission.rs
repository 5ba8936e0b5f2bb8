//! The Memory Manager under the Topology Manager: hints merged, affinity recorded, memory
//! allocated, and a TopologyAffinityError once no single NUMA node can hold a pod.

use std::collections::BTreeMap;

use allot_memorymanager::{
    ContainerResources, HugePages, MemoryManager, MemoryState, NumaNodeInfo, PodResources, Policy,
    StaticPolicy,
};
use allot_topologymanager::{
    Admission, HintProvider, NumaMask, Policy as TmPolicy, Rejection, Scope, TopologyHint,
    TopologyManager,
};

const GI: u64 = 1 << 30;

fn manager() -> MemoryManager {
    let machine = (0..2)
        .map(|id| NumaNodeInfo {
            id,
            memory: 9 * GI,
            hugepages: vec![HugePages {
                page_size_kib: 1 << 20,
                num_pages: 0,
            }],
        })
        .collect();
    let reserved = (0..2)
        .map(|id| (id, BTreeMap::from([("memory".to_string(), GI)])))
        .collect();
    let policy = StaticPolicy::new(machine, reserved).expect("valid policy");
    MemoryManager::new(Policy::Static(policy), MemoryState::default()).expect("starts")
}

fn pod(uid: &str, gib: u64) -> PodResources {
    PodResources {
        uid: uid.to_string(),
        guaranteed: true,
        pod_level_resources: false,
        init_containers: vec![],
        containers: vec![ContainerResources {
            name: "app".to_string(),
            restartable: false,
            requests: BTreeMap::from([("memory".to_string(), gib * GI)]),
        }],
    }
}

fn admit(
    tm: &mut TopologyManager,
    mm: &mut MemoryManager,
    pod: &PodResources,
) -> Admission<allot_memorymanager::Error> {
    let containers: Vec<(&str, &ContainerResources)> = pod
        .containers
        .iter()
        .map(|c| (c.name.as_str(), c))
        .collect();
    let mut providers: [&mut dyn HintProvider<PodResources, ContainerResources, Error = _>; 1] =
        [mm];
    tm.admit(&pod.uid, pod, &containers, &mut providers)
}

#[test]
fn single_numa_node_packs_then_rejects() {
    let mut tm = TopologyManager::new(
        TmPolicy::SingleNumaNode,
        Scope::Container,
        &BTreeMap::new(),
        &[0, 1],
        None,
    )
    .expect("valid topology manager");
    let mut mm = manager();
    // Each node has 8Gi allocatable: two 6Gi pods land on different nodes.
    for (uid, node) in [("a", 0), ("b", 1)] {
        assert!(admit(&mut tm, &mut mm, &pod(uid, 6)).is_admitted());
        assert_eq!(
            tm.affinity(uid, "app"),
            TopologyHint::new(NumaMask::from_ids([node]), true)
        );
        assert_eq!(
            mm.state()
                .blocks(uid, "app")
                .map(|b| b[0].numa_affinity.clone()),
            Some(vec![node])
        );
    }
    // A third 6Gi pod fits nowhere: as upstream, the Memory Manager then offers no hints at all
    // (which the Topology Manager reads as "no preference") and fails at allocation instead.
    match admit(&mut tm, &mut mm, &pod("c", 6)) {
        Admission::Rejected(Rejection::Allocation { container, error }) => {
            assert_eq!(container, "app");
            assert_eq!(error, allot_memorymanager::Error::NoDefaultAffinity);
        }
        other => panic!("expected an allocation error, got {other:?}"),
    }
    assert!(mm.state().blocks("c", "app").is_none());
    // Removing a pod frees its node for the next one.
    mm.remove_container("a", "app");
    tm.remove_pod("a");
    assert!(admit(&mut tm, &mut mm, &pod("c", 6)).is_admitted());
    assert_eq!(
        mm.state()
            .blocks("c", "app")
            .map(|b| b[0].numa_affinity.clone()),
        Some(vec![0])
    );
}

#[test]
fn single_numa_node_rejects_a_pod_that_needs_two_nodes() {
    let mut tm = TopologyManager::new(
        TmPolicy::SingleNumaNode,
        Scope::Pod,
        &BTreeMap::new(),
        &[0, 1],
        None,
    )
    .expect("valid topology manager");
    let mut mm = manager();
    match admit(&mut tm, &mut mm, &pod("big", 12)) {
        Admission::Rejected(Rejection::TopologyAffinity(err)) => {
            assert_eq!(err.reason(), "TopologyAffinityError");
            assert_eq!(err.container, None);
            assert!(
                err.explain()
                    .contains("memory: needs more than one NUMA node (preferred on [0,1])"),
                "{}",
                err.explain()
            );
        }
        other => panic!("expected a TopologyAffinityError, got {other:?}"),
    }
    assert!(mm.state().entries.is_empty());
}

#[test]
fn best_effort_spans_nodes_when_it_must_and_checkpoints() {
    let mut tm = TopologyManager::new(
        TmPolicy::BestEffort,
        Scope::Pod,
        &BTreeMap::new(),
        &[0, 1],
        None,
    )
    .expect("valid topology manager");
    let mut mm = manager();
    assert!(admit(&mut tm, &mut mm, &pod("big", 12)).is_admitted());
    assert_eq!(
        mm.state()
            .blocks("big", "app")
            .map(|b| b[0].numa_affinity.clone()),
        Some(vec![0, 1])
    );
    let written = mm.checkpoint().to_json();
    let restored =
        allot_memorymanager::Checkpoint::from_json(&written, "Static").expect("valid checkpoint");
    let again = MemoryManager::new(mm.policy().clone(), restored.into_state())
        .expect("restored state is valid");
    assert_eq!(again.state(), mm.state());
}
