//! Pod-level resource managers and the Memory Manager (PodLevelResources and
//! PodLevelResourceManagers on): in pod scope the pod's `.spec.resources` memory budget is
//! aligned with its CPU bubble and partitioned among the containers; in container scope only the
//! containers that are Guaranteed on their own get pinned memory; with the gate off, pods with
//! `.spec.resources` get no pinned memory, as before.

use allot_kubelet::{Node, Report, Scenario, run};
use allot_kubelet_config::ValidateOptions;
use allot_topology::CpuSet;

const TOPOLOGY: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies/topoDualSocketHT.yaml"
));

const GI: u64 = 1 << 30;

/// Two NUMA nodes of 8Gi; 1Gi of node 0 is reserved, so node 0 has 7Gi and node 1 8Gi for pods.
fn scenario(config: &str, pods: &str) -> Scenario {
    let text = format!(
        "{TOPOLOGY}numaNodes:\n- {{id: 0, memory: 8Gi}}\n- {{id: 1, memory: 8Gi}}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nkubeReserved: {{cpu: \"1\"}}\nmemoryManagerPolicy: Static\nreservedMemory:\n- numaNode: 0\n  limits: {{memory: 1Gi}}\n{config}\n---\n{pods}"
    );
    Scenario::parse("test.yaml", &text).expect("scenario")
}

fn pod(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, uid: {name}}}\nspec:\n{spec}\n---\n"
    )
}

fn guaranteed(name: &str, cpu: &str, memory: &str) -> String {
    format!(
        "  - name: {name}\n    resources: {{requests: {{cpu: \"{cpu}\", memory: {memory}}}, limits: {{cpu: \"{cpu}\", memory: {memory}}}}}\n"
    )
}

fn budget(cpu: &str, memory: &str) -> String {
    format!(
        "  resources: {{requests: {{cpu: \"{cpu}\", memory: {memory}}}, limits: {{cpu: \"{cpu}\", memory: {memory}}}}}\n"
    )
}

/// The spec's pod-scope example: a 4 CPU / 4Gi pod, main-app with an exclusive 2 CPU / 2Gi
/// slice, two sidecars sharing the rest.
fn mixed(name: &str, memory: &str) -> String {
    pod(
        name,
        &(budget("4", memory)
            + "  initContainers:\n  - name: metrics\n    restartPolicy: Always\n  - name: logging\n    restartPolicy: Always\n  containers:\n"
            + &guaranteed("main", "2", "2Gi")),
    )
}

const POD_SCOPE: &str = "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\nfeatureGates: {PodLevelResourceManagers: true}";

fn run_it(s: &Scenario) -> (Node, Report) {
    run(s, None, ValidateOptions::default()).expect("run")
}

fn reserved(node: &Node, numa: usize) -> u64 {
    node.memory_state.machine_state[&numa].memory_map["memory"].reserved
}

fn cpus(s: &str) -> CpuSet {
    CpuSet::parse(s).expect("cpu list")
}

#[test]
fn pod_scope_aligns_cpus_and_memory_in_one_bubble() {
    let (node, r) = run_it(&scenario(POD_SCOPE, &mixed("a", "4Gi")));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    // Every container's memory is on one NUMA node, the one of the CPU bubble.
    let numa = p.containers[0].memory_numa_nodes.clone();
    assert_eq!(numa.len(), 1, "{p:?}");
    for c in &p.containers {
        assert_eq!(c.memory_numa_nodes, numa, "{c:?}");
    }
    // On this machine NUMA node 0 has the even CPUs and node 1 the odd ones.
    let node_cpus: CpuSet = (0..12u32).filter(|c| c % 2 == numa[0] as u32).collect();
    for c in &p.containers {
        assert!(cpus(&c.cpus).is_subset(&node_cpus), "{c:?} not on {numa:?}");
    }
    // The budget is taken once; main's 2Gi slice and the 2Gi shared pool partition it.
    assert_eq!(reserved(&node, numa[0]), 4 * GI);
    assert_eq!(reserved(&node, 1 - numa[0]), 0);
    let size = |c: &str| -> u64 {
        node.memory_state
            .blocks("a", c)
            .map(|b| b.iter().map(|b| b.size).sum())
            .unwrap_or(0)
    };
    assert_eq!(size("main"), 2 * GI);
    assert_eq!(size("metrics"), 2 * GI);
    assert_eq!(size("logging"), 2 * GI);
    assert_eq!(
        node.memory_state.pod_entries["a"].memory_blocks[0].size,
        4 * GI
    );
    let m = node.metrics.encode();
    assert!(m.contains("memory_manager_pinning_requests_total 1"), "{m}");
    assert!(
        m.contains("resource_manager_allocations_total{source=\"pod\"}"),
        "{m}"
    );
}

#[test]
fn memory_that_cannot_be_aligned_is_refused_under_single_numa_node() {
    // 9Gi fits no single NUMA node (7Gi and 8Gi free), though 4 CPUs would.
    let text = mixed("big", "9Gi") + &mixed("fits", "4Gi");
    let (node, r) = run_it(&scenario(POD_SCOPE, &text));
    let big = &r.pods[0];
    assert!(!big.admitted, "{big:?}");
    assert_eq!(big.reason.as_deref(), Some("TopologyAffinityError"));
    // Nothing of the refused pod is held: the next pod gets a whole bubble.
    assert!(!node.memory_state.pod_entries.contains_key("big"));
    assert!(!node.cpu_state.pod_pools.contains_key("big"));
    assert!(r.pods[1].admitted, "{:?}", r.pods[1]);
    // Best-effort admits the misaligned pod and spreads its memory over both nodes.
    let config = POD_SCOPE.replace("single-numa-node", "best-effort");
    let (node, r) = run_it(&scenario(&config, &mixed("big", "9Gi")));
    assert!(r.pods[0].admitted, "{:?}", r.pods[0]);
    assert_eq!(r.pods[0].containers[2].memory_numa_nodes, vec![0, 1]);
    assert_eq!(reserved(&node, 0) + reserved(&node, 1), 9 * GI);
}

#[test]
fn removal_returns_the_budget_and_the_bubble() {
    let s = scenario(POD_SCOPE, &mixed("a", "4Gi"));
    let mut fresh = Node::start(
        s.topology.clone(),
        &s.config,
        ValidateOptions::default(),
        &Default::default(),
    )
    .expect("start");
    let before_memory = fresh.memory_state.clone();
    let before_cpus = fresh.cpu_state.default_cpu_set.clone();
    let p = fresh.admit(&s.pods[0]);
    assert!(p.admitted, "{p:?}");
    assert_ne!(fresh.memory_state, before_memory);
    let names: Vec<String> = p.containers.iter().map(|c| c.name.clone()).collect();
    fresh.remove_pod("a", &names);
    assert_eq!(fresh.memory_state, before_memory);
    assert_eq!(fresh.cpu_state.default_cpu_set, before_cpus);
    assert!(fresh.admitted.is_empty());
}

#[test]
fn pod_level_memory_survives_a_checkpoint_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = scenario(POD_SCOPE, &mixed("a", "4Gi"));
    let (first_node, first) = run(&s, Some(dir.path()), ValidateOptions::default()).expect("run");
    assert!(first.pods[0].admitted, "{:?}", first.pods[0]);
    let text =
        std::fs::read_to_string(dir.path().join("memory_manager_state")).expect("checkpoint");
    let json: serde_json::Value = serde_json::from_str(&text).expect("json");
    // The kubelet's v3 file: pod entries only in the `data` payload, not in the v1 copy.
    assert!(json.get("podEntries").is_none(), "{text}");
    let data: serde_json::Value =
        serde_json::from_str(json["data"].as_str().expect("data")).expect("payload");
    assert_eq!(
        data["podEntries"]["a"]["memoryBlocks"][0]["size"],
        serde_json::json!(4 * GI)
    );
    assert_eq!(
        json["dataChecksum"],
        serde_json::json!(allot_memorymanager::data_checksum(
            json["data"].as_str().expect("data")
        ))
    );
    // Restarting from the files validates the pod's budget (counted once, not per container)
    // and keeps it; a second pod goes to the other NUMA node's free memory or shares it.
    let again = scenario(POD_SCOPE, &mixed("b", "4Gi"));
    let (node, r) = run(&again, Some(dir.path()), ValidateOptions::default()).expect("restart");
    assert_eq!(
        node.memory_state.pod_entries["a"],
        first_node.memory_state.pod_entries["a"]
    );
    // The pod's CPU pool comes back from cpu_manager_state's podEntries.
    let cpu: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("cpu_manager_state")).expect("checkpoint"),
    )
    .expect("json");
    let pool = &first_node.cpu_state.pod_pools["a"];
    assert_eq!(cpu["podEntries"]["a"]["cpuSet"], pool.to_string());
    assert_eq!(&node.cpu_state.pod_pools["a"], pool);
    assert!(r.pods[0].admitted, "{:?}", r.pods[0]);
    assert_eq!(reserved(&node, 0) + reserved(&node, 1), 8 * GI);
}

#[test]
fn an_empty_shared_pool_is_refused_with_upstreams_reason() {
    // All 4Gi go to exclusive slices, but the logging sidecar needs the pod shared pool.
    let spec = budget("4", "4Gi")
        + "  initContainers:\n  - name: logging\n    restartPolicy: Always\n  containers:\n"
        + &guaranteed("main", "2", "4Gi");
    let config = POD_SCOPE.replace("single-numa-node", "best-effort");
    let (node, r) = run_it(&scenario(&config, &pod("full", &spec)));
    let p = &r.pods[0];
    assert!(!p.admitted, "{p:?}");
    assert_eq!(p.reason.as_deref(), Some("EmptyPodSharedPoolError"));
    assert_eq!(
        p.message.as_deref(),
        Some(
            "pod rejected, sum of exclusive container memory requests equals pod budget, leaving no memory for shared containers"
        )
    );
    assert!(node.memory_state.pod_entries.is_empty());
    assert!(node.cpu_state.pod_pools.is_empty());
    // The CPU Manager's own check comes first when the CPUs run out too.
    let spec = budget("2", "4Gi")
        + "  initContainers:\n  - name: logging\n    restartPolicy: Always\n  containers:\n"
        + &guaranteed("main", "2", "2Gi");
    let (_, r) = run_it(&scenario(&config, &pod("cpus", &spec)));
    assert_eq!(r.pods[0].reason.as_deref(), Some("EmptyPodSharedPoolError"));
    assert_eq!(
        r.pods[0].message.as_deref(),
        Some(
            "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no cpus for shared containers"
        )
    );
    // Under single-numa-node the empty hint list refuses the pod before any allocation.
    let (_, r) = run_it(&scenario(POD_SCOPE, &pod("cpus", &spec)));
    assert_eq!(r.pods[0].reason.as_deref(), Some("TopologyAffinityError"));
}

#[test]
fn container_scope_pins_only_guaranteed_containers() {
    let config =
        "topologyManagerPolicy: single-numa-node\nfeatureGates: {PodLevelResourceManagers: true}";
    let spec = budget("4", "4Gi")
        + "  initContainers:\n"
        + &guaranteed("infra", "2", "2Gi")
        + "    restartPolicy: Always\n  containers:\n  - name: worker\n";
    let (node, r) = run_it(&scenario(config, &pod("c", &spec)));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    assert_eq!(p.containers[0].memory_numa_nodes.len(), 1, "{p:?}");
    assert!(p.containers[1].memory_numa_nodes.is_empty(), "{p:?}");
    assert_eq!(reserved(&node, 0) + reserved(&node, 1), 2 * GI);
    assert!(node.memory_state.pod_entries.is_empty());
}

#[test]
fn without_the_gate_pod_level_pods_get_no_pinned_memory() {
    let config = "topologyManagerPolicy: single-numa-node\ntopologyManagerScope: pod\nfeatureGates: {PodLevelResourceManagers: false}";
    let (node, r) = run_it(&scenario(config, &mixed("a", "4Gi")));
    let p = &r.pods[0];
    assert!(p.admitted, "{p:?}");
    assert!(p.containers.iter().all(|c| c.memory_numa_nodes.is_empty()));
    assert_eq!(reserved(&node, 0) + reserved(&node, 1), 0);
}
