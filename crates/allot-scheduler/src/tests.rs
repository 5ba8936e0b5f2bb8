//! Scenario tests: a store, a runtime with only the scheduler, hand-made claims.

use super::*;
use allot_api::core::v1::PodCondition;
use allot_api::load::{LoadOptions, load_str};
use allot_api::resource::v1::{ResourceClaim, ResourceClaimConsumerReference};

/// The finalizer the scheduler puts on claims it allocates.
const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
use allot_api::meta::v1::Condition;
use allot_runtime::Runtime;

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {zone: z1}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {zone: z2}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-c, labels: {zone: z2}}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "110"}}
"#;

const GPU_CLASS: &str = r#"
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"#;

fn slice(node: &str, devices: &[(&str, &str)], binding: bool) -> String {
    let mut out = format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {node}-gpus}}\nspec:\n  driver: gpu.example.com\n  nodeName: {node}\n  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}\n  devices:\n"
    );
    for (name, size) in devices {
        out.push_str(&format!(
            "  - name: {name}\n    attributes:\n      size: {{string: {size}}}\n"
        ));
        if binding {
            out.push_str("    bindingConditions: [Attached]\n    bindingFailureConditions: [Failed]\n    bindsToNode: true\n");
        }
    }
    out
}

fn claim(name: &str, count: u32) -> String {
    format!(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly: {{deviceClassName: gpu, count: {count}}}\n"
    )
}

fn pod(name: &str, cpu: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: \"{cpu}\"}}}}\n{extra}"
    )
}

fn claim_ref(claims: &[&str]) -> String {
    let mut out = String::from("  resourceClaims:\n");
    for c in claims {
        out.push_str(&format!("  - name: {c}\n    resourceClaimName: {c}\n"));
    }
    out
}

fn store_of(docs: &[String]) -> Store {
    let text = docs.join("\n---\n");
    let loaded = load_str("test.yaml", &text, &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut store = Store::new();
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        if let Some(stored) = Stored::from_object(object) {
            store
                .create_stored(stored, &SimTime::ZERO.rfc3339())
                .unwrap();
        }
    }
    store
}

fn runtime(store: Store) -> Runtime {
    runtime_with(store, SchedulerConfig::default())
}

fn runtime_with(store: Store, config: SchedulerConfig) -> Runtime {
    Runtime::new(store, vec![Box::new(Scheduler::new(config))], SimTime::ZERO)
}

fn node_of(rt: &Runtime, pod: &str) -> Option<String> {
    rt.store
        .get::<Pod>("default", pod)
        .and_then(|p| p.spec.node_name.clone())
}

fn scheduled_condition(rt: &Runtime, pod: &str) -> PodCondition {
    rt.store
        .get::<Pod>("default", pod)
        .and_then(|p| {
            p.status
                .conditions
                .iter()
                .find(|c| c.type_ == "PodScheduled")
                .cloned()
        })
        .expect("PodScheduled condition")
}

fn message(rt: &Runtime, pod: &str) -> String {
    let c = scheduled_condition(rt, pod);
    assert_eq!(c.status, "False");
    assert_eq!(c.reason.as_deref(), Some("Unschedulable"));
    c.message.unwrap_or_default()
}

fn settle(rt: &mut Runtime) {
    rt.run_due(100_000).unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
}

/// Settles, then lets the longest queue backoff (10 s) pass: a pod an event moved out of the
/// unschedulable pods is tried when its backoff ends.
fn settle_backoff(rt: &mut Runtime) {
    let to = rt.now().plus_millis(10_000);
    rt.advance_to(to, 100_000).unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
}

#[test]
fn node_selector_picks_matching_node_and_explains_mismatch() {
    let docs = vec![
        NODES.to_string(),
        pod("p1", "1", "  nodeSelector: {zone: z2}\n"),
        pod("p2", "1", "  nodeSelector: {zone: z9}\n"),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p1").as_deref(), Some("node-b"));
    assert_eq!(scheduled_condition(&rt, "p1").status, "True");
    assert_eq!(node_of(&rt, "p2"), None);
    assert_eq!(
        message(&rt, "p2"),
        "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.\nNodeAffinity:\n  3 node(s) didn't match Pod's node affinity/selector:\n    node-a: nodeSelector zone=z9: the node has zone=z1\n    node-b: nodeSelector zone=z9: the node has zone=z2\n    node-c: nodeSelector zone=z9: the node has zone=z2"
    );
}

#[test]
fn taints_keep_pods_away_unless_tolerated() {
    let nodes = NODES.replace(
        "metadata: {name: node-a, labels: {zone: z1}}",
        "metadata: {name: node-a, labels: {zone: z1}}\nspec: {taints: [{key: gpu, value: \"true\", effect: NoSchedule}]}",
    );
    let docs = vec![
        nodes,
        pod("plain", "1", "  nodeSelector: {zone: z1}\n"),
        pod(
            "tolerant",
            "1",
            "  nodeSelector: {zone: z1}\n  tolerations: [{key: gpu, operator: Equal, value: \"true\", effect: NoSchedule}]\n",
        ),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "tolerant").as_deref(), Some("node-a"));
    assert_eq!(
        message(&rt, "plain"),
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.\n\
         TaintToleration:\n  1 node(s) had untolerated taint(s):\n    node-a: taint {gpu: true} (NoSchedule) not tolerated\nNodeAffinity:\n  2 node(s) didn't match Pod's node affinity/selector:\n    node-b: nodeSelector zone=z1: the node has zone=z2\n    node-c: nodeSelector zone=z1: the node has zone=z2"
    );
}

#[test]
fn resources_fit_and_least_allocated_spread() {
    let docs = vec![
        NODES.to_string(),
        pod("p1", "3", ""),
        pod("p2", "3", ""),
        pod("p3", "3", ""),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    // node-c has 2 CPUs; the two 4-CPU nodes take one each, then nothing fits.
    assert_eq!(node_of(&rt, "p1").as_deref(), Some("node-a"));
    assert_eq!(node_of(&rt, "p2").as_deref(), Some("node-b"));
    assert_eq!(
        message(&rt, "p3"),
        "0/3 nodes are available: 3 Insufficient cpu. \
         preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption victims found for incoming pod.\nNodeResourcesFit:\n  3 Insufficient cpu:\n    node-a: wants 3, 1 free: 4 allocatable, 3 requested by default/p1 3\n    node-b: wants 3, 1 free: 4 allocatable, 3 requested by default/p2 3\n    node-c: wants 3, more than the node's 2 allocatable"
    );
}

#[test]
fn messages_aggregate_reasons_as_upstream() {
    let docs = vec![
        NODES.to_string(),
        pod("big", "3", "  nodeSelector: {zone: z2}\n"),
        pod("p", "3", "  nodeSelector: {zone: z2}\n"),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "big").as_deref(), Some("node-b"));
    assert_eq!(
        message(&rt, "p"),
        "0/3 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 2 Insufficient cpu. \
         preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.\nNodeAffinity:\n  1 node(s) didn't match Pod's node affinity/selector:\n    node-a: nodeSelector zone=z2: the node has zone=z1\nNodeResourcesFit:\n  2 Insufficient cpu:\n    node-b: wants 3, 1 free: 4 allocatable, 3 requested by default/big 3\n    node-c: wants 3, more than the node's 2 allocatable"
    );
}

#[test]
fn pre_scheduled_pods_are_skipped_but_use_resources() {
    let docs = vec![
        NODES.to_string(),
        pod("pinned", "4", "  nodeName: node-a\n"),
        pod("p", "3", "  nodeSelector: {zone: z1}\n"),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let pinned = rt.store.get::<Pod>("default", "pinned").unwrap();
    assert!(
        pinned.status.conditions.is_empty(),
        "the scheduler does not touch pre-scheduled pods"
    );
    assert_eq!(
        message(&rt, "p"),
        "0/3 nodes are available: 1 Insufficient cpu, 2 node(s) didn't match Pod's node affinity/selector. \
         preemption: 0/3 nodes are available: 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for scheduling.\nNodeAffinity:\n  2 node(s) didn't match Pod's node affinity/selector:\n    node-b: nodeSelector zone=z1: the node has zone=z2\n    node-c: nodeSelector zone=z1: the node has zone=z2\nNodeResourcesFit:\n  1 Insufficient cpu:\n    node-a: wants 3, 0 free: 4 allocatable, 4 requested by default/pinned 4"
    );
}

#[test]
fn other_schedulers_pods_are_ignored() {
    let docs = vec![
        NODES.to_string(),
        pod("p", "1", "  schedulerName: my-scheduler\n"),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    assert!(
        rt.store
            .get::<Pod>("default", "p")
            .unwrap()
            .status
            .conditions
            .is_empty()
    );
}

#[test]
fn unschedulable_pod_retries_when_a_node_arrives() {
    let docs = vec![
        NODES.to_string(),
        pod("p", "1", "  nodeSelector: {zone: z9}\n"),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    let more = store_of(&[
        "apiVersion: v1\nkind: Node\nmetadata: {name: node-z, labels: {zone: z9}}\nstatus: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}}".to_string(),
    ]);
    let node = more
        .get::<allot_api::core::v1::Node>("", "node-z")
        .unwrap()
        .clone();
    rt.store.create(node, &SimTime::ZERO.rfc3339()).unwrap();
    settle_backoff(&mut rt);
    assert_eq!(node_of(&rt, "p").as_deref(), Some("node-z"));
}

fn dra_docs() -> Vec<String> {
    vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "small")], false),
        slice("node-b", &[("gpu-0", "small"), ("gpu-1", "small")], false),
    ]
}

#[test]
fn dra_allocation_reserves_and_binds() {
    let mut docs = dra_docs();
    for i in 0..4 {
        docs.push(claim(&format!("c{i}"), 1));
        docs.push(pod(
            &format!("p{i}"),
            "100m",
            &claim_ref(&[&format!("c{i}")]),
        ));
    }
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let mut used = BTreeSet::new();
    for i in 0..3 {
        let pod = rt
            .store
            .get::<Pod>("default", &format!("p{i}"))
            .unwrap()
            .clone();
        let node = pod.spec.node_name.clone().expect("bound");
        let claim = rt
            .store
            .get::<ResourceClaim>("default", &format!("c{i}"))
            .unwrap();
        let allocation = claim.status.allocation.as_ref().expect("allocated");
        assert_eq!(allocation.devices.results.len(), 1);
        let result = &allocation.devices.results[0];
        assert_eq!(result.pool, node, "devices come from the pod's node");
        assert!(
            used.insert((result.pool.clone(), result.device.clone())),
            "no device twice"
        );
        assert!(allocation.allocation_timestamp.is_some());
        assert_eq!(claim.status.reserved_for.len(), 1);
        assert_eq!(claim.status.reserved_for[0].name, pod.metadata.name);
        assert_eq!(claim.status.reserved_for[0].uid, pod.metadata.uid);
        assert!(
            claim
                .metadata
                .finalizers
                .iter()
                .any(|f| f == CLAIM_FINALIZER)
        );
    }
    let m = message(&rt, "p3");
    assert!(
        m.starts_with(
            "0/3 nodes are available: 3 cannot allocate all claims. \
             preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.\nclaims do not fit on node "
        ),
        "{m}"
    );
    assert!(m.contains("request gpu"), "{m}");
    assert!(
        rt.store
            .get::<ResourceClaim>("default", "c3")
            .unwrap()
            .status
            .allocation
            .is_none()
    );

    // Deleting a bound pod frees nothing by itself (its claim stays allocated), but freeing the
    // claim wakes the waiting pod.
    rt.store
        .modify::<ResourceClaim, _>("default", "c0", |c| {
            c.status.allocation = None;
            c.status.reserved_for.clear();
        })
        .unwrap();
    rt.store
        .delete(&ObjectKey::new(Kind::Pod, "default", "p0"))
        .unwrap();
    settle_backoff(&mut rt);
    assert!(node_of(&rt, "p3").is_some());
}

#[test]
fn claims_from_templates_wait_for_the_claim() {
    let mut docs = dra_docs();
    docs.push(pod(
        "p",
        "100m",
        "  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: gpu-template\n",
    ));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let m = message(&rt, "p");
    assert!(
        m.starts_with("0/3 nodes are available: pod \"default/p\": ResourceClaim not created yet"),
        "{m}"
    );
    // The claim controller's work, by hand: the claim, then the pod status.
    let uid = rt
        .store
        .get::<Pod>("default", "p")
        .unwrap()
        .metadata
        .uid
        .clone();
    let mut claim_store = store_of(&[claim("p-gpu-abcde", 1)]);
    let mut c = claim_store
        .get::<ResourceClaim>("default", "p-gpu-abcde")
        .unwrap()
        .clone();
    c.metadata.resource_version.clear();
    c.metadata
        .owner_references
        .push(allot_api::meta::v1::OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: "p".into(),
            uid,
            controller: Some(true),
            block_owner_deletion: Some(true),
        });
    let _ = &mut claim_store;
    rt.store.create(c, &SimTime::ZERO.rfc3339()).unwrap();
    rt.store
        .modify::<Pod, _>("default", "p", |p| {
            p.status
                .resource_claim_statuses
                .push(allot_api::core::v1::PodResourceClaimStatus {
                    name: "gpu".into(),
                    resource_claim_name: Some("p-gpu-abcde".into()),
                });
        })
        .unwrap();
    settle_backoff(&mut rt);
    assert!(node_of(&rt, "p").is_some());
    let claim = rt
        .store
        .get::<ResourceClaim>("default", "p-gpu-abcde")
        .unwrap();
    assert!(claim.status.allocation.is_some());
}

#[test]
fn prioritized_list_prefers_nodes_with_higher_ranked_subrequests() {
    let docs = vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "small")], false),
        slice("node-b", &[("gpu-0", "large")], false),
        slice("node-c", &[("gpu-0", "small")], false),
        r#"apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: c, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      firstAvailable:
      - name: large
        deviceClassName: gpu
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].size == "large"'}
      - name: small
        deviceClassName: gpu
"#
        .to_string(),
        pod("p", "100m", &claim_ref(&["c"])),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p").as_deref(), Some("node-b"));
    let claim = rt.store.get::<ResourceClaim>("default", "c").unwrap();
    assert_eq!(
        claim.status.allocation.as_ref().unwrap().devices.results[0].request,
        "gpu/large"
    );
}

fn binding_docs() -> Vec<String> {
    vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "small")], true),
        slice("node-b", &[("gpu-0", "small")], true),
        claim("c", 1),
        pod("p", "100m", &claim_ref(&["c"])),
    ]
}

fn set_device_condition(rt: &mut Runtime, condition: &str) {
    rt.store
        .modify::<ResourceClaim, _>("default", "c", |c| {
            let result = c.status.allocation.as_ref().unwrap().devices.results[0].clone();
            c.status.devices = vec![allot_api::resource::v1::AllocatedDeviceStatus {
                driver: result.driver.to_string(),
                pool: result.pool.to_string(),
                device: result.device.to_string(),
                share_id: None,
                conditions: vec![Condition {
                    type_: condition.into(),
                    status: "True".into(),
                    observed_generation: None,
                    last_transition_time: SimTime::ZERO.rfc3339(),
                    reason: "Test".into(),
                    message: String::new(),
                }],
                data: None,
                network_data: None,
            }];
        })
        .unwrap();
}

fn allocated_pool(rt: &Runtime) -> Option<String> {
    rt.store.get::<ResourceClaim>("default", "c").and_then(|c| {
        c.status
            .allocation
            .as_ref()
            .map(|a| a.devices.results[0].pool.to_string())
    })
}

#[test]
fn binding_conditions_wait_then_bind() {
    let mut rt = runtime(store_of(&binding_docs()));
    settle(&mut rt);
    assert_eq!(
        node_of(&rt, "p"),
        None,
        "PreBind waits for the binding conditions"
    );
    assert_eq!(allocated_pool(&rt).as_deref(), Some("node-a"));
    let claim = rt.store.get::<ResourceClaim>("default", "c").unwrap();
    assert_eq!(claim.status.reserved_for.len(), 1);
    set_device_condition(&mut rt, "Attached");
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p").as_deref(), Some("node-a"));
}

#[test]
fn binding_failure_retries_on_another_node() {
    let mut rt = runtime(store_of(&binding_docs()));
    settle(&mut rt);
    assert_eq!(allocated_pool(&rt).as_deref(), Some("node-a"));
    set_device_condition(&mut rt, "Failed");
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    assert_eq!(
        allocated_pool(&rt).as_deref(),
        Some("node-b"),
        "deallocated and allocated elsewhere"
    );
    let claim = rt.store.get::<ResourceClaim>("default", "c").unwrap();
    assert!(claim.status.devices.is_empty());
    set_device_condition(&mut rt, "Attached");
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p").as_deref(), Some("node-b"));
}

#[test]
fn binding_timeout_retries_on_another_node() {
    let config = SchedulerConfig {
        binding_timeout_seconds: 600,
        ..SchedulerConfig::default()
    };
    let mut rt = runtime_with(store_of(&binding_docs()), config);
    settle(&mut rt);
    assert_eq!(allocated_pool(&rt).as_deref(), Some("node-a"));
    rt.advance_to(SimTime::ZERO.plus_seconds(599), 100_000)
        .unwrap();
    assert_eq!(
        allocated_pool(&rt).as_deref(),
        Some("node-a"),
        "still waiting before the timeout"
    );
    rt.advance_to(SimTime::ZERO.plus_seconds(600), 100_000)
        .unwrap();
    assert_eq!(allocated_pool(&rt).as_deref(), Some("node-b"));
    let claim = rt.store.get::<ResourceClaim>("default", "c").unwrap();
    assert_eq!(
        claim
            .status
            .allocation
            .as_ref()
            .unwrap()
            .allocation_timestamp
            .as_deref(),
        Some(SimTime::ZERO.plus_seconds(600).rfc3339().as_str())
    );
    assert_eq!(node_of(&rt, "p"), None);
}

#[test]
fn allocated_claims_constrain_the_node() {
    let mut docs = dra_docs();
    docs.push(claim("shared", 1));
    docs.push(pod("p1", "100m", &claim_ref(&["shared"])));
    docs.push(pod("p2", "100m", &claim_ref(&["shared"])));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let n1 = node_of(&rt, "p1").unwrap();
    assert_eq!(
        node_of(&rt, "p2").as_deref(),
        Some(n1.as_str()),
        "a shared claim pins its users to one node"
    );
    let claim = rt.store.get::<ResourceClaim>("default", "shared").unwrap();
    assert_eq!(claim.status.reserved_for.len(), 2);
}

#[test]
fn missing_device_class_is_reported() {
    let mut docs = vec![NODES.to_string()];
    docs.push(claim("c", 1));
    docs.push(pod("p", "100m", &claim_ref(&["c"])));
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(
        message(&rt, "p"),
        "0/3 nodes are available: request gpu: device class gpu does not exist. \
         preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    );
    let class = store_of(&[GPU_CLASS.to_string()])
        .get::<allot_api::resource::v1::DeviceClass>("", "gpu")
        .unwrap()
        .clone();
    let mut class = class;
    class.metadata.resource_version.clear();
    rt.store.create(class, &SimTime::ZERO.rfc3339()).unwrap();
    settle_backoff(&mut rt);
    // No slices: now the allocator says why.
    assert!(
        message(&rt, "p").starts_with("0/3 nodes are available: 3 cannot allocate all claims.")
    );
}

#[test]
fn repeated_failures_name_each_pods_own_claim() {
    let mut docs = dra_docs();
    for i in 0..5 {
        docs.push(claim(&format!("c{i}"), 1));
        docs.push(pod(
            &format!("p{i}"),
            "100m",
            &claim_ref(&[&format!("c{i}")]),
        ));
    }
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let m3 = message(&rt, "p3");
    let m4 = message(&rt, "p4");
    assert!(m3.contains("claim default/c3"), "{m3}");
    assert!(m4.contains("claim default/c4"), "{m4}");
    assert_eq!(
        m3.replace("c3", "cX"),
        m4.replace("c4", "cX"),
        "the same failure, told for each pod"
    );
}

#[test]
fn podgroup_claims_are_reserved_for_the_group() {
    let mut docs = dra_docs();
    docs.push(claim("shared", 1));
    docs.push(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\nmetadata: {name: g, namespace: default}\nspec:\n  schedulingPolicy: {basic: {}}\n  resourceClaims:\n  - name: shared\n    resourceClaimName: shared\n"
            .to_string(),
    );
    for i in 0..2 {
        docs.push(pod(
            &format!("m{i}"),
            "100m",
            &format!(
                "{}  schedulingGroup: {{podGroupName: g}}\n",
                claim_ref(&["shared"])
            ),
        ));
    }
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert!(node_of(&rt, "m0").is_some());
    assert_eq!(node_of(&rt, "m0"), node_of(&rt, "m1"));
    let claim = rt.store.get::<ResourceClaim>("default", "shared").unwrap();
    assert_eq!(
        claim.status.reserved_for.len(),
        1,
        "{:?}",
        claim.status.reserved_for
    );
    assert_eq!(claim.status.reserved_for[0].resource, "podgroups");
    assert_eq!(claim.status.reserved_for[0].api_group, "scheduling.k8s.io");
    assert_eq!(claim.status.reserved_for[0].name, "g");
}

#[test]
fn full_claims_are_in_use() {
    let mut docs = dra_docs();
    docs.push(claim("c", 1));
    docs.push(pod("p", "100m", &claim_ref(&["c"])));
    let mut store = store_of(&docs);
    store
        .modify::<ResourceClaim, _>("default", "c", |c| {
            let mut allocation = allot_api::resource::v1::AllocationResult::default();
            allocation.devices.results.push(
                allot_api::resource::v1::DeviceRequestAllocationResult {
                    request: "gpu".into(),
                    driver: "gpu.example.com".into(),
                    pool: "node-b".into(),
                    device: "gpu-0".into(),
                    ..Default::default()
                },
            );
            c.status.allocation = Some(allocation);
            c.status.reserved_for = (0..RESERVED_FOR_MAX)
                .map(|i| ResourceClaimConsumerReference {
                    resource: "pods".into(),
                    name: format!("other-{i}"),
                    uid: format!("uid-{i}"),
                    ..Default::default()
                })
                .collect();
        })
        .unwrap();
    let mut rt = runtime(store);
    settle(&mut rt);
    assert!(message(&rt, "p").starts_with("0/3 nodes are available: resourceclaim in use"));
}

/// A selector that fails on some device (a CEL runtime error: upstream's classic "no such key"
/// for an attribute only some devices have) is an error of the DynamicResources filter: as
/// upstream's framework does, the attempt stops and the pod carries reason `SchedulerError`
/// with the allocator's error, instead of being counted as "cannot allocate all claims"
/// with nothing said. Once the claim no longer errs, the pod schedules.
#[test]
fn an_allocator_error_stops_the_attempt_with_scheduler_error() {
    let claim = r#"apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: half, namespace: default}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu
        selectors:
        - cel: {expression: 'device.attributes["gpu.example.com"].profile == "half"'}
"#;
    let docs = vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "big")], false),
        claim.to_string(),
        pod("p", "1", &claim_ref(&["half"])),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    let c = scheduled_condition(&rt, "p");
    assert_eq!(c.status, "False");
    assert_eq!(c.reason.as_deref(), Some("SchedulerError"));
    let m = c.message.unwrap_or_default();
    assert!(
        m.starts_with("running \"DynamicResources\" filter plugin: claim default/half"),
        "{m}"
    );
    assert!(m.contains("no such key"), "{m}");
    assert!(
        rt.store
            .get::<ResourceClaim>("default", "half")
            .unwrap()
            .status
            .allocation
            .is_none()
    );

    // A selector that every device can answer no longer errs: the pod schedules (it waited
    // for a change to its claim as an unschedulable pod does).
    rt.store
        .modify::<ResourceClaim, _>("default", "half", |c| {
            let request = c.spec.devices.requests[0].exactly.as_mut().unwrap();
            request.selectors[0].cel.as_mut().unwrap().expression =
                r#"device.attributes["gpu.example.com"].size == "big""#.into();
        })
        .unwrap();
    settle_backoff(&mut rt);
    assert_eq!(node_of(&rt, "p").as_deref(), Some("node-a"));
}

/// Three claims of two GPUs of one size on a node with three GPUs of each of two sizes: no
/// bound sees that they cannot fit, the search has to try the pairs.
fn pairs_docs() -> Vec<String> {
    let mut docs = vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice(
            "node-a",
            &[
                ("gpu-0", "small"),
                ("gpu-1", "small"),
                ("gpu-2", "small"),
                ("gpu-3", "big"),
                ("gpu-4", "big"),
                ("gpu-5", "big"),
            ],
            false,
        ),
    ];
    let mut names = Vec::new();
    for i in 0..3 {
        docs.push(format!(
            "{}    constraints:\n    - matchAttribute: gpu.example.com/size\n",
            claim(&format!("pair{i}"), 2)
        ));
        names.push(format!("pair{i}"));
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    docs.push(pod("p", "100m", &claim_ref(&names)));
    docs
}

#[test]
fn an_allocation_that_runs_out_of_its_budget_is_upstreams_filter_timeout() {
    // Within the default budget the search finishes: the claims do not fit.
    let mut rt = runtime(store_of(&pairs_docs()));
    settle(&mut rt);
    let c = scheduled_condition(&rt, "p");
    assert_eq!(c.reason.as_deref(), Some("Unschedulable"));
    let m = c.message.unwrap_or_default();
    assert!(
        m.starts_with("0/3 nodes are available: 3 cannot allocate all claims."),
        "{m}"
    );
    // Past its budget the allocator gives up: an error naming the node, as upstream's
    // DynamicResources filter answers when its filterTimeout expires.
    let config = SchedulerConfig {
        allocation_budget: allot_dra::Budget {
            max_steps: 1,
            ..allot_dra::Budget::default()
        },
        ..SchedulerConfig::default()
    };
    let mut rt = runtime_with(store_of(&pairs_docs()), config);
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    let c = scheduled_condition(&rt, "p");
    assert_eq!(c.status, "False");
    assert_eq!(c.reason.as_deref(), Some("SchedulerError"));
    let m = c.message.unwrap_or_default();
    assert!(
        m.starts_with(
            "running \"DynamicResources\" filter plugin: node node-a: timed out trying to allocate devices: gave up after "
        ),
        "{m}"
    );
}

/// Regression: a reconcile that first tries the queued pods of higher priority scheduled them
/// one after the other on the cache as it was before the first (a second pod's claim got the
/// device the first one's had just been allocated).
#[test]
fn higher_priority_pods_tried_in_one_reconcile_see_each_others_devices() {
    let docs = vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &[("gpu-0", "big"), ("gpu-1", "big")], false),
        claim("c-a", 1),
        claim("c-b", 1),
        pod("a-cpu-only", "1", "  nodeName: \"\"\n"),
        pod(
            "b-gpu",
            "1",
            &format!("  priority: 5\n{}", claim_ref(&["c-a"])),
        ),
        pod(
            "c-gpu",
            "1",
            &format!("  priority: 5\n{}", claim_ref(&["c-b"])),
        ),
    ];
    let mut rt = runtime(store_of(&docs));
    settle(&mut rt);
    let device = |name: &str| {
        rt.store
            .get::<ResourceClaim>("default", name)
            .and_then(|c| c.status.allocation.clone())
            .map(|a| a.devices.results[0].device.clone())
    };
    assert_eq!(device("c-a").as_deref(), Some("gpu-0"));
    assert_eq!(device("c-b").as_deref(), Some("gpu-1"));
}

mod gang;

/// `k + 1` claims of two same-size GPUs on a node with three GPUs of each of `k` sizes: no
/// bound sees that they cannot fit, the search has to try the pairs (a hopeless search that
/// grows fast with `k`).
fn triples_docs(k: usize) -> Vec<String> {
    let devices: Vec<(String, String)> = (0..3 * k)
        .map(|d| (format!("gpu-{d}"), format!("s{}", d / 3)))
        .collect();
    let refs: Vec<(&str, &str)> = devices
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let mut docs = vec![
        NODES.to_string(),
        GPU_CLASS.to_string(),
        slice("node-a", &refs, false),
    ];
    let mut names = Vec::new();
    for i in 0..=k {
        docs.push(format!(
            "{}    constraints:\n    - matchAttribute: gpu.example.com/size\n",
            claim(&format!("pair{i}"), 2)
        ));
        names.push(format!("pair{i}"));
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    docs.push(pod("p", "100m", &claim_ref(&names)));
    docs
}

fn with_filter_timeout(timeout: &str) -> SchedulerConfig {
    let value = serde_json::json!({
        "profiles": [{
            "schedulerName": "default-scheduler",
            "pluginConfig": [{"name": "DynamicResources", "args": {"filterTimeout": timeout}}],
        }],
    });
    SchedulerConfig {
        configuration: Some(
            config::SchedulerConfiguration::from_value(&value, &plugins::exists).unwrap(),
        ),
        ..SchedulerConfig::default()
    }
}

#[test]
fn filter_timeout_stops_each_nodes_search_and_zero_disables_it() {
    // A tiny filterTimeout on a hopeless search: upstream's error, naming the node, and the
    // limit with the steps done.
    let mut rt = runtime_with(store_of(&triples_docs(5)), with_filter_timeout("1ns"));
    settle(&mut rt);
    assert_eq!(node_of(&rt, "p"), None);
    let c = scheduled_condition(&rt, "p");
    assert_eq!(c.reason.as_deref(), Some("SchedulerError"));
    let m = c.message.unwrap_or_default();
    assert!(
        m.starts_with(
            "running \"DynamicResources\" filter plugin: node node-a: timed out trying to allocate devices: gave up at the time limit of one allocation (1ns, "
        ),
        "{m}"
    );
    // 0 disables the time limit: the answer is the one without a configuration.
    let mut plain = runtime(store_of(&triples_docs(5)));
    settle(&mut plain);
    let mut rt = runtime_with(store_of(&triples_docs(5)), with_filter_timeout("0s"));
    settle(&mut rt);
    let want = scheduled_condition(&plain, "p");
    let got = scheduled_condition(&rt, "p");
    assert!(
        !want
            .message
            .as_deref()
            .unwrap_or_default()
            .contains("time limit"),
        "{want:?}"
    );
    assert_eq!((got.reason, got.message), (want.reason, want.message));
}
