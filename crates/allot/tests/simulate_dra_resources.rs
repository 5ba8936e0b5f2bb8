//! `allot simulate` end to end for extended resources backed by DRA, DRA node allocatable
//! resources and KubeletConfiguration per node label group: the binary on the scenario folders
//! `tests/simulate/{extended-resources,node-allocatable,kubelet-groups}`, checking the objects
//! it prints and the invariants.

#[path = "support/cli.rs"]
mod cli;

use cli::{allot, find, scenario, simulate_json};
use serde_json::Value;

fn claims(items: &[Value]) -> Vec<&Value> {
    items
        .iter()
        .filter(|i| i["kind"] == "ResourceClaim")
        .collect()
}

fn scheduled_message(pod: &Value) -> String {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodScheduled")
        .and_then(|c| c["message"].as_str())
        .unwrap_or_default()
        .to_string()
}

/// The pod's extended resource claim, checked against the pod the way upstream makes it.
fn extended_claim<'a>(items: &'a [Value], pod: &Value) -> &'a Value {
    let name = pod["status"]["extendedResourceClaimStatus"]["resourceClaimName"]
        .as_str()
        .expect("extendedResourceClaimStatus.resourceClaimName");
    let pod_name = pod["metadata"]["name"].as_str().unwrap();
    let base = format!("{pod_name}-extended-resources-");
    assert!(
        name.starts_with(&base) && name.len() == base.len() + 5,
        "{name}"
    );
    let claim = find(items, "ResourceClaim", name);
    assert_eq!(claim["metadata"]["generateName"], base);
    assert_eq!(
        claim["metadata"]["annotations"]["resource.kubernetes.io/extended-resource-claim"],
        "true"
    );
    let owner = &claim["metadata"]["ownerReferences"][0];
    assert_eq!(owner["apiVersion"], "v1");
    assert_eq!(owner["kind"], "Pod");
    assert_eq!(owner["name"], pod_name);
    assert_eq!(owner["uid"], pod["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    let reserved = claim["status"]["reservedFor"].as_array().unwrap();
    assert_eq!(reserved.len(), 1);
    assert_eq!(reserved[0]["uid"], pod["metadata"]["uid"]);
    claim
}

fn devices(claim: &Value) -> Vec<String> {
    claim["status"]["allocation"]["devices"]["results"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            format!(
                "{}/{}",
                r["request"].as_str().unwrap(),
                r["device"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
fn extended_resources_are_served_by_the_device_class_where_no_device_plugin_is() {
    let items = simulate_json(&[&scenario("extended-resources/cluster.yaml")]);

    // example.com/gpu: 2 in the main container, 1 in the init container, which reuses one of
    // the main container's devices: one request, two devices.
    let trainer = find(&items, "Pod", "trainer");
    assert_eq!(trainer["spec"]["nodeName"], "gpu-dra");
    let claim = extended_claim(&items, trainer);
    assert_eq!(
        claim["spec"]["devices"]["requests"],
        serde_json::json!([{
            "name": "container-1-request-1",
            "exactly": {"deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 2}
        }])
    );
    assert_eq!(devices(claim).len(), 2);
    assert_eq!(
        trainer["status"]["extendedResourceClaimStatus"]["requestMappings"],
        serde_json::json!([
            {"containerName": "train", "resourceName": "example.com/gpu", "requestName": "container-1-request-1"},
            {"containerName": "warmup", "resourceName": "example.com/gpu", "requestName": "container-1-request-1"}
        ])
    );
    // The kubelet prepared the devices and reports them for the container.
    assert_eq!(claim["status"]["devices"].as_array().map(Vec::len), Some(2));
    let resources: Value = serde_json::from_str(
        trainer["metadata"]["annotations"]["allot.dev/resources"]
            .as_str()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(
        resources["containers"][0]["dynamicResources"][0]["claimName"],
        claim["metadata"]["name"]
    );

    // The implicit deviceclass.resource.kubernetes.io/<class> name.
    let notebook = find(&items, "Pod", "notebook");
    let claim = extended_claim(&items, notebook);
    assert_eq!(
        claim["spec"]["devices"]["requests"][0]["exactly"]["count"],
        1
    );
    assert_eq!(
        notebook["status"]["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"],
        "deviceclass.resource.kubernetes.io/gpu.example.com"
    );

    // The device plugin node: NodeResourcesFit, no claim.
    let plugin = find(&items, "Pod", "plugin-user");
    assert_eq!(plugin["spec"]["nodeName"], "gpu-dp");
    assert!(plugin["status"]["extendedResourceClaimStatus"].is_null());
    assert_eq!(claims(&items).len(), 2);

    // Nothing left anywhere: each node says why, and the allocator explains gpu-dra.
    let waiting = find(&items, "Pod", "waiting");
    assert!(waiting["spec"]["nodeName"].is_null());
    let message = scheduled_message(waiting);
    assert!(
        message.starts_with(
            "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 cannot allocate all claims."
        ),
        "{message}"
    );
    assert!(
        message.contains("request container-0-request-0 (class gpu.example.com, ExactCount 2)"),
        "{message}"
    );
}

#[test]
fn the_extended_resource_claim_goes_with_its_pod() {
    let folder = scenario("extended-resources");
    let items = simulate_json(&[&folder]);
    assert!(items.iter().all(|i| i["metadata"]["name"] != "trainer"));
    assert!(
        claims(&items).iter().all(|c| !c["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("trainer-")),
        "the trainer's claim is deleted with it"
    );
    // Its devices went to the waiting pod.
    let waiting = find(&items, "Pod", "waiting");
    assert_eq!(waiting["spec"]["nodeName"], "gpu-dra");
    let claim = extended_claim(&items, waiting);
    assert_eq!(devices(claim).len(), 2);
    // The wide table names each pod claim with its ResourceClaim.
    let table = allot(&["simulate", &folder, "-o", "wide"]);
    assert_eq!(table.code, 0, "{}", table.stderr);
    assert!(
        table
            .stdout
            .contains("extended-resources=waiting-extended-resources-"),
        "{}",
        table.stdout
    );
}

#[test]
fn without_the_feature_gate_extended_resources_need_a_device_plugin() {
    let dir = std::env::temp_dir().join(format!("allot-ext-gate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let options = dir.join("options.yaml");
    std::fs::write(
        &options,
        "apiVersion: allot.dev/v1alpha1\nkind: SimulationOptions\nfeatureGates: {DRAExtendedResource: false}\n",
    )
    .unwrap();
    let items = simulate_json(&[
        &scenario("extended-resources/cluster.yaml"),
        options.to_str().unwrap(),
    ]);
    std::fs::remove_dir_all(&dir).ok();
    assert!(claims(&items).is_empty());
    let trainer = find(&items, "Pod", "trainer");
    assert!(trainer["spec"]["nodeName"].is_null());
    assert_eq!(
        scheduled_message(trainer),
        "0/2 nodes are available: 1 Insufficient example.com/gpu, 1 node(s) didn't match Pod's node affinity/selector. preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling.\nNodeAffinity:\n  1 node(s) didn't match Pod's node affinity/selector:\n    gpu-dp: nodeSelector kind=dra: the node has kind=dp\nNodeResourcesFit:\n  1 Insufficient example.com/gpu:\n    gpu-dra: wants 2, the node has none"
    );
}

#[test]
fn node_allocatable_resources_of_devices_count_against_the_node() {
    let items = simulate_json(&[&scenario("node-allocatable")]);
    let cpu_app = find(&items, "Pod", "cpu-app");
    assert_eq!(cpu_app["spec"]["nodeName"], "node-1");
    let claim = cpu_app["status"]["resourceClaimStatuses"][0]["resourceClaimName"].clone();
    assert_eq!(
        cpu_app["status"]["nodeAllocatableResourceClaimStatuses"],
        serde_json::json!([{
            "resourceClaimName": claim,
            "containers": ["app"],
            "mapping": [{"name": "cpu", "quantity": "4"}]
        }])
    );
    let xpu_app = find(&items, "Pod", "xpu-app");
    assert_eq!(xpu_app["spec"]["nodeName"], "node-1");
    assert_eq!(
        xpu_app["status"]["nodeAllocatableResourceClaimStatuses"][0]["overhead"],
        serde_json::json!([{"name": "memory", "perPod": "8Gi"}])
    );
    // NodeResourcesFit alone would have placed these two.
    let late = find(&items, "Pod", "cpu-late");
    assert_eq!(
        scheduled_message(late),
        "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
    assert!(late["status"]["nodeAllocatableResourceClaimStatuses"].is_null());
    assert_eq!(
        scheduled_message(find(&items, "Pod", "xpu-big")),
        "0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
    // A claim with a mapped device is one pod's.
    assert_eq!(find(&items, "Pod", "share-a")["spec"]["nodeName"], "node-1");
    assert_eq!(
        scheduled_message(find(&items, "Pod", "share-b")),
        "0/1 nodes are available: 1 node allocatable resource claim shared-cpus has a mapped device and cannot be shared across pods. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    );
}

#[test]
fn without_the_feature_gate_node_allocatable_resources_are_not_counted() {
    let dir = std::env::temp_dir().join(format!("allot-nar-gate-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let options = dir.join("options.yaml");
    std::fs::write(
        &options,
        "apiVersion: allot.dev/v1alpha1\nkind: SimulationOptions\nfeatureGates: {DRANodeAllocatableResources: false}\n",
    )
    .unwrap();
    let items = simulate_json(&[&scenario("node-allocatable"), options.to_str().unwrap()]);
    std::fs::remove_dir_all(&dir).ok();
    for pod in [
        "cpu-app", "cpu-late", "xpu-app", "xpu-big", "share-a", "share-b",
    ] {
        let pod = find(&items, "Pod", pod);
        assert_eq!(pod["spec"]["nodeName"], "node-1", "{pod}");
        assert!(pod["status"]["nodeAllocatableResourceClaimStatuses"].is_null());
    }
}

fn cpu_ids(pod: &Value) -> Option<Value> {
    let resources: Value = serde_json::from_str(
        pod["metadata"]["annotations"]["allot.dev/resources"]
            .as_str()
            .expect("allot.dev/resources"),
    )
    .unwrap();
    let ids = resources["containers"][0]["cpuIds"].clone();
    (!ids.is_null()).then_some(ids)
}

#[test]
fn kubelet_configuration_per_node_label_group() {
    let items = simulate_json(&[&scenario("kubelet-groups/cluster.yaml")]);
    // The group's static policy gives the Guaranteed pod exclusive CPUs (CPU 0 is reserved).
    assert_eq!(
        cpu_ids(find(&items, "Pod", "on-pinned-1")),
        Some(serde_json::json!([1, 2]))
    );
    // pinned-2 is in the group but has a document of its own; shared-1 takes the default.
    assert_eq!(cpu_ids(find(&items, "Pod", "on-pinned-2")), None);
    assert_eq!(cpu_ids(find(&items, "Pod", "on-shared-1")), None);
}

#[test]
fn a_node_in_two_kubelet_configuration_groups_is_bad_input() {
    let run = allot(&["simulate", &scenario("kubelet-groups")]);
    assert_eq!(run.code, 2, "{}", run.stdout);
    assert!(
        run.stderr
            .contains("cluster.yaml:4: Node pinned-1: metadata.labels: Invalid value:"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("KubeletConfiguration \"static-cpus\"")
            && run.stderr.contains("\"pinned\" ("),
        "{}",
        run.stderr
    );
    // pinned-2 is named by a document of its own, so it is not ambiguous.
    assert!(!run.stderr.contains("pinned-2"), "{}", run.stderr);
}
