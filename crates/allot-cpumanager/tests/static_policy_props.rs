//! Property tests of the static policy: exclusive CPUs are never shared, the shared pool, the
//! exclusive CPUs and the reserved CPUs partition the machine (without strict reservation the
//! reserved CPUs stay in the shared pool), and the same inputs give the same assignments.

use allot_cpumanager::policy_static::{
    ContainerView, CpuQuantity, PodView, StaticPolicy, StaticPolicyOptions,
};
use allot_cpumanager::state::CpuManagerState;
use allot_topology::{CpuInfo, CpuSet, CpuTopology, NodeTopology};
use proptest::prelude::*;

/// A machine with `sockets` sockets, `cores` cores per socket and `threads` threads per core,
/// one NUMA node per socket, numbered like Linux numbers an SMT machine.
fn machine(sockets: u32, cores: u32, threads: u32) -> NodeTopology {
    let mut node = NodeTopology::new("prop");
    let per_thread = sockets * cores;
    for t in 0..threads {
        for s in 0..sockets {
            for c in 0..cores {
                node.cpus.push(CpuInfo {
                    id: t * per_thread + s * cores + c,
                    core: s * cores + c,
                    socket: s,
                    numa: s,
                    uncore_cache: s,
                });
            }
        }
    }
    node
}

#[derive(Debug, Clone)]
struct Step {
    cpus: u32,
    millis: bool,
    remove: Option<usize>,
}

fn run(
    topo: &NodeTopology,
    reserved: usize,
    options: StaticPolicyOptions,
    steps: &[Step],
) -> (CpuManagerState, CpuSet) {
    let topology = CpuTopology::new(topo).expect("valid topology");
    let mut policy =
        StaticPolicy::new(topology, reserved, &CpuSet::new(), options, false).expect("policy");
    let mut state = CpuManagerState::default();
    policy.start(&mut state).expect("start");
    let mut pods: Vec<String> = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        if let Some(victim) = step.remove.filter(|_| !pods.is_empty()) {
            let uid = pods[victim % pods.len()].clone();
            policy.remove_container(&mut state, &uid, "c");
        }
        let uid = format!("pod-{i}");
        let request = if step.millis {
            CpuQuantity::millis(i64::from(step.cpus) * 1000 - 500)
        } else {
            CpuQuantity::whole(i64::from(step.cpus))
        };
        let pod = PodView {
            uid: uid.clone(),
            guaranteed: true,
            init_containers: vec![],
            containers: vec![ContainerView {
                name: "c".into(),
                cpu_request: Some(request),
                restartable: false,
            }],
        };
        let container = pod.containers[0].clone();
        if let Ok(Some(_)) = policy.allocate(&mut state, &pod, &container, None) {
            pods.push(uid);
        }
    }
    (state, policy.reserved().clone())
}

fn options() -> impl Strategy<Value = StaticPolicyOptions> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(full, numa, strict)| {
        StaticPolicyOptions {
            full_physical_cpus_only: full,
            distribute_cpus_across_numa: numa,
            strict_cpu_reservation: strict,
            ..StaticPolicyOptions::default()
        }
    })
}

fn steps() -> impl Strategy<Value = Vec<Step>> {
    proptest::collection::vec(
        (1u32..6, any::<bool>(), proptest::option::of(0usize..8)).prop_map(
            |(cpus, millis, remove)| Step {
                cpus,
                millis,
                remove,
            },
        ),
        0..12,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn exclusive_cpus_partition_the_machine(
        shape in (1u32..3, 2u32..5, 1u32..3),
        reserved in 1usize..3,
        opts in options(),
        steps in steps(),
    ) {
        let topo = machine(shape.0, shape.1, shape.2);
        let all: CpuSet = topo.cpus.iter().map(|c| c.id).collect();
        let (state, reserved_set) = run(&topo, reserved, opts, &steps);
        let mut seen = CpuSet::new();
        for containers in state.assignments.values() {
            for cpus in containers.values() {
                prop_assert!(!seen.intersects(cpus), "CPU exclusive to two containers");
                prop_assert!(!cpus.intersects(&reserved_set), "reserved CPU assigned");
                seen.union_with(cpus);
            }
        }
        prop_assert!(!seen.intersects(&state.default_cpu_set));
        let mut union = seen.union(&state.default_cpu_set);
        union.union_with(&reserved_set);
        prop_assert_eq!(union, all);
        if !opts.strict_cpu_reservation {
            prop_assert!(reserved_set.is_subset(&state.default_cpu_set));
        }
    }

    #[test]
    fn admission_is_deterministic(
        shape in (1u32..3, 2u32..5, 1u32..3),
        opts in options(),
        steps in steps(),
    ) {
        let topo = machine(shape.0, shape.1, shape.2);
        let a = run(&topo, 1, opts, &steps);
        let b = run(&topo, 1, opts, &steps);
        prop_assert_eq!(a, b);
    }
}

#[test]
fn the_machine_model_allocates() {
    // Two sockets of 4 cores with 2 threads: reserving 1 takes CPU 0; 4 whole CPUs then come
    // from socket 0 as two full cores.
    let topo = machine(2, 4, 2);
    let steps = [Step {
        cpus: 4,
        millis: false,
        remove: None,
    }];
    let (state, reserved) = run(&topo, 1, StaticPolicyOptions::default(), &steps);
    assert_eq!(reserved, CpuSet::from_ids([0]));
    assert_eq!(
        state.cpu_set("pod-0", "c"),
        Some(&CpuSet::from_ids([1, 2, 9, 10]))
    );
}
