//! Node admission end to end on scenario text: the managers together, rejections with the
//! kubelet's reasons, pod-level pools, devices, checkpoints on disk and start-up errors.

use allot_kubelet::{Report, Scenario, run};
use allot_kubelet_config::ValidateOptions;

const TOPOLOGY: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies/topoDualSocketHT.yaml"
));

fn scenario(config: &str, rest: &str) -> Scenario {
    let text = format!(
        "{TOPOLOGY}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{config}\n---\n{rest}"
    );
    Scenario::parse("test.yaml", &text).expect("scenario")
}

fn pod(name: &str, containers: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: {name}}}\nspec:\n{containers}\n---\n"
    )
}

fn admit(s: &Scenario) -> Report {
    run(s, None, ValidateOptions::default()).expect("run").1
}

const STATIC: &str = "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}";

fn guaranteed(name: &str, cpu: &str) -> String {
    format!(
        "  - name: {name}\n    resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}, limits: {{cpu: \"{cpu}\", memory: 1Gi}}}}\n"
    )
}

#[test]
fn guaranteed_gets_exclusive_cpus_and_others_share() {
    let text = pod("g", &format!("  containers:\n{}", guaranteed("app", "4")))
        + &pod(
            "b",
            "  containers:\n  - name: web\n    resources: {requests: {cpu: 500m}, limits: {cpu: \"1\"}}\n",
        )
        + &pod(
            "f",
            &format!("  containers:\n{}", guaranteed("frac", "1500m")),
        );
    let s = scenario(STATIC, &text);
    let r = admit(&s);
    let g = &r.pods[0];
    assert!(g.admitted);
    // The reserved CPU is 0 (lowest core); 4 CPUs come as two full cores of socket 0.
    assert_eq!(g.containers[0].cpus, "2,4,8,10");
    assert!(g.containers[0].exclusive);
    assert!(!g.containers[0].cfs_quota);
    let b = &r.pods[1];
    assert_eq!(b.containers[0].cpus, "0-1,3,5-7,9,11");
    assert!(!b.containers[0].exclusive);
    assert!(b.containers[0].cfs_quota);
    // A Guaranteed container with a fractional request stays in the shared pool.
    assert!(!r.pods[2].containers[0].exclusive);
    assert_eq!(r.state.cpu_manager["defaultCpuSet"], "0-1,3,5-7,9,11");
    assert_eq!(r.state.cpu_manager["entries"]["g"]["app"], "2,4,8,10");
}

#[test]
fn smt_alignment_rejection_is_released() {
    let config = format!("{STATIC}\ncpuManagerPolicyOptions: {{full-pcpus-only: \"true\"}}");
    let text = pod("odd", &format!("  containers:\n{}", guaranteed("a", "3")))
        + &pod("even", &format!("  containers:\n{}", guaranteed("a", "2")));
    let r = admit(&scenario(&config, &text));
    assert!(!r.pods[0].admitted);
    assert_eq!(r.pods[0].reason.as_deref(), Some("SMTAlignmentError"));
    assert_eq!(
        r.pods[0].message.as_deref(),
        Some("SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2")
    );
    assert!(r.pods[1].admitted);
    // Core 0 is reserved (CPU 0), so its sibling 6 is not used for full cores.
    assert_eq!(r.pods[1].containers[0].cpus, "2,8");
}

#[test]
fn single_numa_node_rejects_what_spans_two_nodes() {
    let config = format!("{STATIC}\ntopologyManagerPolicy: single-numa-node");
    let text = pod("big", &format!("  containers:\n{}", guaranteed("a", "8")))
        + &pod("small", &format!("  containers:\n{}", guaranteed("a", "4")));
    let r = admit(&scenario(&config, &text));
    assert!(!r.pods[0].admitted);
    assert_eq!(r.pods[0].reason.as_deref(), Some("TopologyAffinityError"));
    assert!(r.pods[0].explanation.is_some());
    assert!(r.pods[1].admitted);
    // NUMA node 0 and 1 both fit; the merge prefers the lower node.
    assert_eq!(r.pods[1].containers[0].cpus, "2,4,8,10");
}

#[test]
fn init_container_cpus_are_reused_and_sidecars_keep_theirs() {
    let text = pod(
        "p",
        &format!(
            "  initContainers:\n{}{}    restartPolicy: Always\n  containers:\n{}",
            guaranteed("init", "4"),
            guaranteed("side", "2"),
            guaranteed("app", "2")
        ),
    );
    let r = admit(&scenario(STATIC, &text));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    let init = &p.containers[0].cpus;
    let side = &p.containers[1].cpus;
    let app = &p.containers[2].cpus;
    let parse = |s: &str| allot_topology::CpuSet::parse(s).expect("cpus");
    // The sidecar starts after the init container finished, so it may reuse its CPUs; the app
    // reuses the rest and never shares with the sidecar.
    assert!(parse(side).is_subset(&parse(init)));
    assert!(!parse(app).intersects(&parse(side)));
}

#[test]
fn pod_level_pod_scope_slices_and_shared_pool() {
    let config = format!(
        "{STATIC}\ntopologyManagerPolicy: best-effort\ntopologyManagerScope: pod\nfeatureGates: {{PodLevelResourceManagers: true}}"
    );
    let mixed = "  resources: {requests: {cpu: \"4\", memory: 4Gi}, limits: {cpu: \"4\", memory: 4Gi}}\n  initContainers:\n  - name: log\n    restartPolicy: Always\n  containers:\n"
        .to_string()
        + &guaranteed("main", "2");
    let empty = "  resources: {requests: {cpu: \"4\", memory: 4Gi}, limits: {cpu: \"4\", memory: 4Gi}}\n  initContainers:\n".to_string()
        + &guaranteed("metrics", "1")
        + "    restartPolicy: Always\n  - name: log\n    restartPolicy: Always\n  containers:\n"
        + &guaranteed("main", "3");
    let text = pod("mixed", &mixed) + &pod("empty", &empty);
    let r = admit(&scenario(&config, &text));
    let m = &r.pods[0];
    assert!(m.admitted, "{m:?}");
    let log = &m.containers[0];
    let main = &m.containers[1];
    assert!(main.exclusive && !main.cfs_quota);
    assert!(!log.exclusive && log.cfs_quota);
    let parse = |s: &str| allot_topology::CpuSet::parse(s).expect("cpus");
    assert_eq!(parse(&main.cpus).len(), 2);
    assert_eq!(parse(&log.cpus).len(), 2);
    assert!(!parse(&main.cpus).intersects(&parse(&log.cpus)));
    // The whole pool stays out of the node's shared pool.
    let default = parse(r.state.cpu_manager["defaultCpuSet"].as_str().expect("set"));
    assert!(!default.intersects(&parse(&main.cpus).union(&parse(&log.cpus))));
    assert_eq!(
        r.state.cpu_manager["podEntries"]["mixed"]["cpuSet"]
            .as_str()
            .map(|s| parse(s).len()),
        Some(4)
    );
    let e = &r.pods[1];
    assert!(!e.admitted);
    assert_eq!(
        e.reason.as_deref(),
        Some(allot_kubelet::admission::EMPTY_POD_SHARED_POOL)
    );
}

#[test]
fn devices_follow_the_cpus_numa_node() {
    let topo = TOPOLOGY.to_string()
        + "devices:\n- {resourceName: vendor.com/nic, id: nic0, numa: 0}\n- {resourceName: vendor.com/nic, id: nic1, numa: 1}\n";
    let text = format!(
        "{topo}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{STATIC}\ntopologyManagerPolicy: single-numa-node\n---\n{}",
        pod(
            "p",
            "  containers:\n  - name: a\n    resources: {requests: {cpu: \"4\", memory: 1Gi, vendor.com/nic: \"1\"}, limits: {cpu: \"4\", memory: 1Gi, vendor.com/nic: \"1\"}}\n"
        ) + &pod(
            "q",
            "  containers:\n  - name: a\n    resources: {requests: {cpu: \"4\", memory: 1Gi, vendor.com/nic: \"1\"}, limits: {cpu: \"4\", memory: 1Gi, vendor.com/nic: \"1\"}}\n"
        )
    );
    let s = Scenario::parse("t.yaml", &text).expect("scenario");
    let r = admit(&s);
    assert!(r.pods[0].admitted && r.pods[1].admitted, "{:?}", r.pods);
    assert_eq!(
        r.pods[0].containers[0].devices["vendor.com/nic"],
        vec!["nic0"]
    );
    assert_eq!(r.pods[0].containers[0].cpus, "2,4,8,10");
    assert_eq!(
        r.pods[1].containers[0].devices["vendor.com/nic"],
        vec!["nic1"]
    );
    assert_eq!(r.pods[1].containers[0].cpus, "1,3,7,9");
}

#[test]
fn checkpoints_persist_and_corruption_stops_start_up() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = scenario(
        STATIC,
        &pod("g", &format!("  containers:\n{}", guaranteed("app", "2"))),
    );
    let (_, first) = run(&s, Some(dir.path()), ValidateOptions::default()).expect("first run");
    assert!(first.pods[0].admitted);
    // A second run starts from the files: the same pod keeps its CPUs, a new one gets others.
    let s2 = scenario(
        STATIC,
        &(pod("g", &format!("  containers:\n{}", guaranteed("app", "2")))
            + &pod("h", &format!("  containers:\n{}", guaranteed("app", "2")))),
    );
    let (_, second) = run(&s2, Some(dir.path()), ValidateOptions::default()).expect("second run");
    assert_eq!(
        second.pods[0].containers[0].cpus,
        first.pods[0].containers[0].cpus
    );
    assert_ne!(
        second.pods[1].containers[0].cpus,
        first.pods[0].containers[0].cpus
    );
    // Tamper with the file: start-up refuses and says what to do.
    let path = dir.path().join("cpu_manager_state");
    let text = std::fs::read_to_string(&path).expect("read");
    std::fs::write(
        &path,
        text.replace("\"static\"", "\"static\" ")
            .replace("2,", "3,"),
    )
    .expect("write");
    let err = run(&s, Some(dir.path()), ValidateOptions::default()).expect_err("corrupt");
    assert!(err.is_start_error());
    let msg = err.to_string();
    assert!(msg.contains("checkpoint is corrupted"), "{msg}");
    assert!(
        msg.contains("please drain this node and delete the CPU manager checkpoint file"),
        "{msg}"
    );
    // A checkpoint written by another policy is refused too.
    let none = scenario("cpuManagerPolicy: none", "");
    std::fs::write(&path, text).expect("restore");
    let err = run(&none, Some(dir.path()), ValidateOptions::default()).expect_err("mismatch");
    assert!(
        err.to_string()
            .contains("configured policy \"none\" differs from state checkpoint policy \"static\""),
        "{err}"
    );
}

#[test]
fn none_policy_gives_every_cpu_and_cfs_quota() {
    let text = pod("g", &format!("  containers:\n{}", guaranteed("app", "2")));
    let r = admit(&scenario("cpuManagerPolicy: none", &text));
    let c = &r.pods[0].containers[0];
    assert_eq!(c.cpus, "0-11");
    assert!(!c.exclusive && c.cfs_quota);
}

#[test]
fn metrics_count_pinning() {
    let config = format!("{STATIC}\ncpuManagerPolicyOptions: {{full-pcpus-only: \"true\"}}");
    let text = pod("odd", &format!("  containers:\n{}", guaranteed("a", "3")))
        + &pod("even", &format!("  containers:\n{}", guaranteed("a", "2")));
    let (node, _) = run(&scenario(&config, &text), None, ValidateOptions::default()).expect("run");
    let m = node.metrics.encode();
    assert!(m.contains("cpu_manager_pinning_requests_total 2"), "{m}");
    assert!(m.contains("cpu_manager_pinning_errors_total 1"), "{m}");
    assert!(
        m.contains("resource_manager_allocations_total{source=\"node\"} 1"),
        "{m}"
    );
    assert!(
        m.contains("resource_manager_container_assignments{assignment_type=\"node_exclusive\"} 1"),
        "{m}"
    );
}

#[test]
fn pod_level_container_scope_mixes_exclusive_and_node_shared() {
    let config = format!(
        "{STATIC}\ntopologyManagerPolicy: best-effort\nfeatureGates: {{PodLevelResourceManagers: true}}"
    );
    let spec = "  resources: {requests: {cpu: \"4\", memory: 4Gi}, limits: {cpu: \"4\", memory: 4Gi}}\n  initContainers:\n".to_string()
        + &guaranteed("infra", "2")
        + "    restartPolicy: Always\n  containers:\n  - name: worker-1\n  - name: worker-2\n    resources: {requests: {cpu: \"1\"}}\n";
    let r = admit(&scenario(&config, &pod("mixed", &spec)));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    let infra = &p.containers[0];
    assert!(infra.exclusive && !infra.cfs_quota);
    assert_eq!(infra.cpus, "2,8");
    for w in &p.containers[1..] {
        // Workers run in the node's shared pool, bounded by the pod's CPU limit.
        assert!(!w.exclusive && w.cfs_quota, "{w:?}");
        assert_eq!(w.cpus, "0-1,3-7,9-11");
    }
    // Without the gate the pod-level Guaranteed pod's containers are judged as upstream does:
    // worker-2's integer request makes it exclusive too.
    let r = admit(&scenario(
        &format!("{STATIC}\ntopologyManagerPolicy: best-effort"),
        &pod("mixed", &spec),
    ));
    assert!(r.pods[0].containers[2].exclusive, "{:?}", r.pods[0]);
}

#[test]
fn init_container_devices_go_to_app_containers() {
    let topo =
        TOPOLOGY.to_string() + "devices:\n- {resourceName: vendor.com/nic, id: nic0, numa: 0}\n";
    let nic = |name: &str| {
        format!(
            "  - name: {name}\n    resources: {{requests: {{cpu: \"2\", memory: 1Gi, vendor.com/nic: \"1\"}}, limits: {{cpu: \"2\", memory: 1Gi, vendor.com/nic: \"1\"}}}}\n"
        )
    };
    let with_pod = |p: String| {
        let text = format!(
            "{topo}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{STATIC}\ntopologyManagerPolicy: single-numa-node\n---\n{p}"
        );
        admit(&Scenario::parse("t.yaml", &text).expect("scenario"))
    };
    // One NIC on the machine: the init container's is the app container's after it.
    let r = with_pod(pod(
        "p",
        &format!(
            "  initContainers:\n{}  containers:\n{}",
            nic("init"),
            nic("app")
        ),
    ));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    assert_eq!(p.containers[0].devices["vendor.com/nic"], vec!["nic0"]);
    assert_eq!(p.containers[1].devices["vendor.com/nic"], vec!["nic0"]);
    // A sidecar keeps its NIC, so the app container finds none.
    let r = with_pod(pod(
        "q",
        &format!(
            "  initContainers:\n{}    restartPolicy: Always\n  containers:\n{}",
            nic("side"),
            nic("app")
        ),
    ));
    assert!(!r.pods[0].admitted, "{:?}", r.pods[0]);
    assert_eq!(r.pods[0].reason.as_deref(), Some("TopologyAffinityError"));
}

#[test]
fn pod_level_slices_beyond_the_budget_fail_allocation_as_upstream() {
    // Nobody shares, so validatePodScopeResources passes; the 3 CPU slice cannot be cut from a
    // 2 CPU bubble and the allocation error is unexpected, as upstream's AllocatePod returns it.
    let config = format!(
        "{STATIC}\ntopologyManagerPolicy: best-effort\ntopologyManagerScope: pod\nfeatureGates: {{PodLevelResourceManagers: true}}"
    );
    let spec = "  resources: {requests: {cpu: \"2\", memory: 4Gi}, limits: {cpu: \"2\", memory: 4Gi}}\n  containers:\n".to_string()
        + &guaranteed("main", "3");
    let r = admit(&scenario(&config, &pod("over", &spec)));
    let p = &r.pods[0];
    assert!(!p.admitted, "{p:?}");
    assert_eq!(
        p.reason.as_deref(),
        Some("UnexpectedAdmissionError"),
        "{p:?}"
    );
    assert!(
        r.state.cpu_manager["entries"].get("over").is_none(),
        "{:?}",
        r.state
    );
}
