//! Pod-level resource managers (PodLevelResourceManagers, pod scope): one NUMA-aligned budget
//! per pod, exclusive slices for containers that ask for memory, a pod shared pool for the rest.

use std::collections::BTreeMap;

use allot_memorymanager::{
    ContainerResources, Error, HugePages, MemoryState, NumaNodeInfo, PodResources, StaticPolicy,
    validate_pod_scope_resources,
};
use allot_topologymanager::{NumaMask, TopologyHint};

const GI: u64 = 1 << 30;

fn policy() -> StaticPolicy {
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
    StaticPolicy::new(machine, reserved).expect("valid policy")
}

fn ctr(name: &str, restartable: bool, gib: u64) -> ContainerResources {
    let requests = if gib == 0 {
        BTreeMap::new()
    } else {
        BTreeMap::from([("memory".to_string(), gib * GI)])
    };
    ContainerResources {
        name: name.to_string(),
        restartable,
        requests,
    }
}

fn budget(gib: u64) -> BTreeMap<String, u64> {
    BTreeMap::from([("memory".to_string(), gib * GI)])
}

/// The spec's example: a 4Gi pod, main-app with an exclusive 2Gi slice, sidecars sharing 2Gi.
fn mixed_pod() -> PodResources {
    PodResources {
        uid: "mixed".to_string(),
        guaranteed: true,
        pod_level_resources: false,
        init_containers: vec![ctr("init", false, 0), ctr("log-sidecar", true, 0)],
        containers: vec![ctr("main-app", false, 2), ctr("metrics", false, 0)],
    }
}

#[test]
fn pod_budget_is_partitioned_and_released_with_the_last_container() {
    let mut p = policy();
    let mut state = MemoryState::default();
    p.start(&mut state).expect("empty state starts");
    let fresh = state.clone();
    let pod = mixed_pod();
    let hints = p
        .get_pod_level_topology_hints(&state, &pod, &budget(4))
        .expect("hints");
    let preferred: Vec<&TopologyHint> = hints["memory"]
        .iter()
        .flatten()
        .filter(|h| h.preferred)
        .collect();
    assert_eq!(preferred.len(), 2, "either node alone holds 4Gi: {hints:?}");
    let on_node_0 = TopologyHint::new(NumaMask::from_ids([0]), true);
    p.allocate_pod(&mut state, &pod, &budget(4), &on_node_0)
        .expect("fits");

    let size = |c: &str| {
        state
            .blocks("mixed", c)
            .map(|b| b.iter().map(|b| b.size).sum::<u64>())
    };
    assert_eq!(size("main-app"), Some(2 * GI), "exclusive slice");
    assert_eq!(size("metrics"), Some(2 * GI), "pod shared pool");
    assert_eq!(
        size("log-sidecar"),
        Some(2 * GI),
        "sidecars use the shared pool"
    );
    assert_eq!(
        size("init"),
        Some(4 * GI),
        "a regular init container may use the whole budget"
    );
    assert_eq!(state.pod_entries["mixed"].memory_blocks[0].size, 4 * GI);
    assert_eq!(
        state.machine_state[&0].memory_map["memory"].reserved,
        4 * GI
    );
    assert_eq!(state.machine_state[&1].memory_map["memory"].reserved, 0);
    // The budget is counted once at start-up, not once per container.
    let mut restored = state.clone();
    p.start(&mut restored).expect("own state validates");

    for name in ["init", "log-sidecar", "main-app"] {
        p.remove_container(&mut state, "mixed", name);
        assert_eq!(
            state.machine_state[&0].memory_map["memory"].reserved,
            4 * GI,
            "held until the last container goes"
        );
    }
    p.remove_container(&mut state, "mixed", "metrics");
    assert_eq!(state, fresh);
}

#[test]
fn an_empty_shared_pool_is_refused() {
    let pod = PodResources {
        uid: "full".to_string(),
        guaranteed: true,
        pod_level_resources: false,
        init_containers: vec![],
        containers: vec![
            ctr("main-app", false, 3),
            ctr("metrics", false, 1),
            ctr("logger", false, 0),
        ],
    };
    let err = validate_pod_scope_resources(&pod, &budget(4)).expect_err("no shared memory left");
    assert_eq!(
        err.to_string(),
        "pod rejected, sum of exclusive container memory requests equals pod budget, leaving no memory for shared containers"
    );
    let p = policy();
    let mut state = MemoryState::default();
    p.start(&mut state).expect("starts");
    let hints = p
        .get_pod_level_topology_hints(&state, &pod, &budget(4))
        .expect("hints");
    assert_eq!(
        hints["memory"],
        Some(vec![]),
        "an empty hint list makes the Topology Manager refuse"
    );
    let mut p = p;
    assert!(matches!(
        p.allocate_pod(&mut state, &pod, &budget(4), &TopologyHint::default()),
        Err(Error::EmptyPodSharedPool { .. })
    ));
}

#[test]
fn an_init_container_larger_than_what_sidecars_leave_is_refused() {
    let pod = PodResources {
        uid: "init".to_string(),
        guaranteed: true,
        pod_level_resources: false,
        init_containers: vec![ctr("sidecar", true, 3), ctr("setup", false, 2)],
        containers: vec![ctr("app", false, 1)],
    };
    let err = validate_pod_scope_resources(&pod, &budget(4)).expect_err("1Gi left, 2Gi wanted");
    assert_eq!(
        err.to_string(),
        format!(
            "pod rejected, largest exclusive init container requests {} of memory, but only {} available",
            2 * GI,
            GI
        )
    );
}
