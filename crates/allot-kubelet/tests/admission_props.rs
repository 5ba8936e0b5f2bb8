//! Property tests of full node admission: whatever pods arrive (Guaranteed or not, with init
//! containers and sidecars, fitting or not), no CPU is exclusive to two containers, exclusive,
//! shared and reserved CPUs make up exactly the machine, and the same input gives the same
//! decisions.

use allot_kubelet::{Report, Scenario, run};
use allot_kubelet_config::ValidateOptions;
use allot_topology::CpuSet;
use proptest::prelude::*;

const TOPOLOGY: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies/topoDualSocketMultiNumaPerSocketHT.yaml"
));

#[derive(Debug, Clone)]
struct PodSpec {
    init: Option<u32>,
    sidecar: Option<u32>,
    app: u32,
    guaranteed: bool,
}

fn container(name: &str, cpu: u32, guaranteed: bool, sidecar: bool) -> String {
    let limits = if guaranteed {
        format!(", limits: {{cpu: \"{cpu}\", memory: 1Gi}}")
    } else {
        String::new()
    };
    let restart = if sidecar {
        "    restartPolicy: Always\n"
    } else {
        ""
    };
    format!(
        "  - name: {name}\n    resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}{limits}}}\n{restart}"
    )
}

fn scenario(policy: &str, options: &str, pods: &[PodSpec]) -> Scenario {
    let mut text = format!(
        "{TOPOLOGY}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nkubeReserved: {{cpu: \"2\"}}\ntopologyManagerPolicy: {policy}\ncpuManagerPolicyOptions: {{{options}}}\n"
    );
    for (i, p) in pods.iter().enumerate() {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}, namespace: ns, uid: u{i}}}\nspec:\n"
        ));
        if p.init.is_some() || p.sidecar.is_some() {
            text.push_str("  initContainers:\n");
            if let Some(n) = p.init {
                text.push_str(&container("init", n, p.guaranteed, false));
            }
            if let Some(n) = p.sidecar {
                text.push_str(&container("side", n, p.guaranteed, true));
            }
        }
        text.push_str("  containers:\n");
        text.push_str(&container("app", p.app, p.guaranteed, false));
    }
    Scenario::parse("prop.yaml", &text).expect("scenario")
}

fn report(s: &Scenario) -> Report {
    run(s, None, ValidateOptions::default()).expect("run").1
}

fn pods() -> impl Strategy<Value = Vec<PodSpec>> {
    proptest::collection::vec(
        (
            proptest::option::of(1u32..12),
            proptest::option::of(1u32..4),
            1u32..16,
            any::<bool>(),
        )
            .prop_map(|(init, sidecar, app, guaranteed)| PodSpec {
                init,
                sidecar,
                app,
                guaranteed,
            }),
        1..10,
    )
}

fn policy() -> impl Strategy<Value = (&'static str, &'static str)> {
    prop_oneof![
        Just(("none", "")),
        Just(("best-effort", "")),
        Just(("restricted", "full-pcpus-only: \"true\"")),
        Just(("single-numa-node", "")),
        Just(("best-effort", "distribute-cpus-across-numa: \"true\"")),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    #[test]
    fn exclusive_shared_and_reserved_partition_the_machine(p in policy(), pods in pods()) {
        let s = scenario(p.0, p.1, &pods);
        let (node, r) = run(&s, None, ValidateOptions::default()).expect("run");
        let all: CpuSet = s.topology.cpus.iter().map(|c| c.id).collect();
        let mut exclusive = CpuSet::new();
        for containers in node.cpu_state.assignments.values() {
            // Within a pod, a sidecar may reuse a finished init container's CPUs; across pods
            // and among long-running containers nothing is shared.
            let mut pod_cpus = CpuSet::new();
            for cpus in containers.values() {
                pod_cpus.union_with(cpus);
            }
            prop_assert!(!exclusive.intersects(&pod_cpus), "CPU exclusive to two pods");
            exclusive.union_with(&pod_cpus);
        }
        for pod in r.pods.iter().filter(|p| p.admitted) {
            let long_running: Vec<CpuSet> = pod
                .containers
                .iter()
                .filter(|c| c.exclusive && c.name != "init")
                .map(|c| CpuSet::parse(&c.cpus).expect("cpus"))
                .collect();
            for (i, a) in long_running.iter().enumerate() {
                for b in &long_running[i + 1..] {
                    prop_assert!(!a.intersects(b), "two running containers share a CPU");
                }
            }
        }
        let default = &node.cpu_state.default_cpu_set;
        prop_assert!(!default.intersects(&exclusive));
        let reserved = CpuSet::from_ids([0, 40]);
        prop_assert!(reserved.is_subset(default), "reserved CPUs left the shared pool");
        prop_assert_eq!(default.union(&exclusive), all);
    }

    #[test]
    fn admission_is_deterministic(p in policy(), pods in pods()) {
        let s = scenario(p.0, p.1, &pods);
        let a = serde_json::to_value(report(&s)).expect("json");
        let b = serde_json::to_value(report(&s)).expect("json");
        prop_assert_eq!(a, b);
    }
}
