//! The agent in a store and runtime with hand-made bound pods and claims.

use std::path::PathBuf;

use allot_api::core::v1::{Node, Pod};
use allot_api::resource::v1::{ResourceClaim, ResourceSlice};
use allot_kubelet_config::KubeletConfiguration;
use allot_runtime::{Runtime, SimTime};
use allot_store::{Kind, ObjectKey, Resource, Store};
use allot_topology::NodeTopology;
use serde_json::{Value, json};

use crate::{
    DEVICE_HEALTH_ANNOTATION, MetadataLog, NodeAgent, NodeAgentConfig, RESOURCES_ANNOTATION,
};

const NODE: &str = "node-1";
const DRIVER: &str = "gpu.example.com";

/// Two sockets, one NUMA node each, four cores of two threads per socket.
const TOPOLOGY: &str = r#"
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata: {name: node-1}
cpus:
- {id: 0, core: 0, socket: 0, numa: 0}
- {id: 1, core: 1, socket: 0, numa: 0}
- {id: 2, core: 2, socket: 0, numa: 0}
- {id: 3, core: 3, socket: 0, numa: 0}
- {id: 4, core: 4, socket: 1, numa: 1}
- {id: 5, core: 5, socket: 1, numa: 1}
- {id: 6, core: 6, socket: 1, numa: 1}
- {id: 7, core: 7, socket: 1, numa: 1}
- {id: 8, core: 0, socket: 0, numa: 0}
- {id: 9, core: 1, socket: 0, numa: 0}
- {id: 10, core: 2, socket: 0, numa: 0}
- {id: 11, core: 3, socket: 0, numa: 0}
- {id: 12, core: 4, socket: 1, numa: 1}
- {id: 13, core: 5, socket: 1, numa: 1}
- {id: 14, core: 6, socket: 1, numa: 1}
- {id: 15, core: 7, socket: 1, numa: 1}
numaNodes:
- {id: 0, memory: 32Gi}
- {id: 1, memory: 32Gi}
"#;

fn kubelet(extra: Value) -> KubeletConfiguration {
    let mut base = json!({
        "apiVersion": "kubelet.config.k8s.io/v1beta1",
        "kind": "KubeletConfiguration",
        "cpuManagerPolicy": "static",
        "reservedSystemCPUs": "0",
    });
    if let (Value::Object(b), Value::Object(e)) = (&mut base, extra) {
        b.extend(e);
    }
    serde_json::from_value(base).expect("kubelet configuration")
}

fn config(kubelet_config: KubeletConfiguration) -> NodeAgentConfig {
    let topology = NodeTopology::from_yaml_str(TOPOLOGY).expect("topology");
    NodeAgentConfig::new(NODE, topology, kubelet_config)
}

fn decode<R: serde::de::DeserializeOwned>(value: Value) -> R {
    serde_json::from_value(value).expect("object")
}

fn at(t: SimTime) -> String {
    t.rfc3339()
}

/// A Guaranteed pod on the node; `claims` are (pod claim name, claim name, template?).
fn pod(name: &str, cpu: &str, claims: &[(&str, &str, bool)]) -> Pod {
    let refs: Vec<Value> = claims.iter().map(|(n, _, _)| json!({"name": n})).collect();
    let entries: Vec<Value> = claims
        .iter()
        .map(|(n, c, template)| {
            if *template {
                json!({"name": n, "resourceClaimTemplateName": "gpu-template"})
            } else {
                json!({"name": n, "resourceClaimName": c})
            }
        })
        .collect();
    let statuses: Vec<Value> = claims
        .iter()
        .filter(|(_, _, template)| *template)
        .map(|(n, c, _)| json!({"name": n, "resourceClaimName": c}))
        .collect();
    decode(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "containers": [{
                "name": "app",
                "resources": {
                    "requests": {"cpu": cpu, "memory": "1Gi"},
                    "limits": {"cpu": cpu, "memory": "1Gi"},
                    "claims": refs,
                },
            }],
            "resourceClaims": entries,
        },
        "status": {"resourceClaimStatuses": statuses},
    }))
}

fn slice(skip: bool, extra_device: Value) -> ResourceSlice {
    let mut spec = json!({
        "driver": DRIVER,
        "nodeName": NODE,
        "pool": {"name": NODE, "generation": 1, "resourceSliceCount": 1},
        "devices": [
            {"name": "gpu-0", "attributes": {"index": {"int": 0}, "numaNode": {"int": 1}}},
            extra_device,
        ],
    });
    if skip {
        spec["skipNodeOperations"] = json!(["*"]);
    }
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-1-gpus"},
        "spec": spec,
    }))
}

/// A claim with gpu-0 allocated, reserved for `pod` when given.
fn claim(name: &str, pod: Option<&Pod>, skip: bool) -> ResourceClaim {
    let mut result = json!({"request": "gpu", "driver": DRIVER, "pool": NODE, "device": "gpu-0"});
    if skip {
        result["skipNodeOperations"] = json!(["*"]);
    }
    let reserved: Vec<Value> = pod
        .iter()
        .map(|p| json!({"resource": "pods", "name": p.metadata.name, "uid": p.metadata.uid}))
        .collect();
    decode(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
        "status": {
            "allocation": {"devices": {"results": [result]}},
            "reservedFor": reserved,
        },
    }))
}

fn node_object(declared: &[&str]) -> Node {
    decode(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
        "status": {"declaredFeatures": declared},
    }))
}

struct Sim {
    runtime: Runtime,
    log: MetadataLog,
}

impl Sim {
    fn new(config: NodeAgentConfig, store: Store) -> Sim {
        let agent = NodeAgent::new(config).expect("agent starts");
        let log = agent.metadata_log();
        Sim {
            runtime: Runtime::new(store, vec![Box::new(agent)], SimTime::ZERO),
            log,
        }
    }

    fn run(&mut self) {
        self.runtime
            .run_until_idle(SimTime::ZERO.plus_seconds(3600), 100_000)
            .expect("runs");
        assert!(
            self.runtime.errors().is_empty(),
            "{:?}",
            self.runtime.errors()
        );
    }

    fn advance(&mut self, seconds: u64) {
        let to = self.runtime.now().plus_seconds(seconds);
        self.runtime.advance_to(to, 100_000).expect("advances");
    }

    fn create<R: Resource>(&mut self, object: R) -> R {
        let now = at(self.runtime.now());
        self.runtime.store.create(object, &now).expect("created")
    }

    fn pod(&self, name: &str) -> Pod {
        self.runtime
            .store
            .get::<Pod>("default", name)
            .expect("pod")
            .clone()
    }

    fn claim(&self, name: &str) -> ResourceClaim {
        self.runtime
            .store
            .get::<ResourceClaim>("default", name)
            .expect("claim")
            .clone()
    }
}

fn phase(pod: &Pod) -> Option<&str> {
    pod.status.phase.as_deref()
}

/// Why a Pending pod's containers cannot start, from `PodReadyToStartContainers`.
fn waiting_message(pod: &Pod) -> String {
    assert_eq!(phase(pod), Some("Pending"));
    let condition = pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "PodReadyToStartContainers")
        .expect("PodReadyToStartContainers");
    assert_eq!(condition.status, "False");
    condition.message.clone().unwrap_or_default()
}

fn resources(pod: &Pod) -> Value {
    serde_json::from_str(&pod.metadata.annotations[RESOURCES_ANNOTATION]).expect("annotation")
}

fn cpu_ids(pod: &Pod) -> Vec<u64> {
    resources(pod)["containers"][0]["cpuIds"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default()
}

#[test]
fn admitted_pod_runs_with_exclusive_cpus_and_kubelet_conditions() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    sim.create(pod("p", "2", &[]));
    sim.run();
    let p = sim.pod("p");
    assert_eq!(phase(&p), Some("Running"));
    assert_eq!(cpu_ids(&p).len(), 2);
    let types: Vec<&str> = p
        .status
        .conditions
        .iter()
        .map(|c| c.type_.as_str())
        .collect();
    assert_eq!(
        types,
        [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled"
        ]
    );
    assert!(p.status.conditions.iter().all(|c| c.status == "True"));
    assert_eq!(p.status.qos_class.as_deref(), Some("Guaranteed"));
    let statuses = p
        .status
        .container_statuses
        .clone()
        .expect("container statuses");
    assert_eq!(statuses[0]["name"], "app");
    assert_eq!(statuses[0]["ready"], true);
    assert!(statuses[0]["state"]["running"].is_object());
}

#[test]
fn odd_cpu_request_with_full_pcpus_only_fails_with_smt_alignment_error() {
    let cfg = kubelet(json!({"cpuManagerPolicyOptions": {"full-pcpus-only": "true"}}));
    let mut sim = Sim::new(config(cfg), Store::new());
    sim.create(pod("odd", "1", &[]));
    sim.run();
    let p = sim.pod("odd");
    assert_eq!(phase(&p), Some("Failed"));
    assert_eq!(p.status.reason.as_deref(), Some("SMTAlignmentError"));
    let message = p.status.message.clone().unwrap_or_default();
    assert!(message.starts_with("Pod was rejected: "), "{message}");
    assert!(!p.metadata.annotations.contains_key(RESOURCES_ANNOTATION));
}

#[test]
fn pod_larger_than_a_numa_node_fails_with_topology_affinity_error() {
    let cfg = kubelet(json!({"topologyManagerPolicy": "single-numa-node"}));
    let mut sim = Sim::new(config(cfg), Store::new());
    sim.create(pod("big", "10", &[]));
    sim.run();
    let p = sim.pod("big");
    assert_eq!(phase(&p), Some("Failed"));
    assert_eq!(p.status.reason.as_deref(), Some("TopologyAffinityError"));
}

#[test]
fn deleting_a_pod_frees_its_cpus_for_the_next() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    sim.create(pod("first", "12", &[]));
    sim.run();
    assert_eq!(phase(&sim.pod("first")), Some("Running"));
    let first_cpus = cpu_ids(&sim.pod("first"));
    sim.create(pod("second", "12", &[]));
    sim.run();
    assert_eq!(phase(&sim.pod("second")), Some("Failed"));
    sim.runtime
        .store
        .delete(&ObjectKey::new(Kind::Pod, "default", "first"))
        .expect("deleted");
    sim.run();
    sim.create(pod("third", "12", &[]));
    sim.run();
    let third = sim.pod("third");
    assert_eq!(phase(&third), Some("Running"));
    assert_eq!(cpu_ids(&third), first_cpus);
}

#[test]
fn a_pod_that_ends_frees_its_cpus_exactly_then() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    let mut first = pod("first", "12", &[]);
    first.spec.restart_policy = Some("Never".into());
    first
        .metadata
        .annotations
        .insert(crate::RUN_DURATION_ANNOTATION.into(), "10m".into());
    sim.create(first);
    sim.advance(1);
    let first_cpus = cpu_ids(&sim.pod("first"));
    // While it runs, its CPUs are taken.
    sim.advance(60);
    sim.create(pod("second", "12", &[]));
    sim.advance(1);
    assert_eq!(phase(&sim.pod("second")), Some("Failed"));
    sim.advance(600);
    let first = sim.pod("first");
    assert_eq!(phase(&first), Some("Succeeded"));
    let status = &first.status.container_statuses.as_ref().unwrap()[0];
    assert_eq!(status["state"]["terminated"]["exitCode"], 0);
    assert_eq!(
        status["state"]["terminated"]["finishedAt"],
        "2026-01-01T00:10:00Z"
    );
    sim.create(pod("third", "12", &[]));
    sim.advance(1);
    let third = sim.pod("third");
    assert_eq!(phase(&third), Some("Running"));
    assert_eq!(cpu_ids(&third), first_cpus);
}

#[test]
fn a_restarting_container_keeps_the_pod_running() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    let mut p = pod("looping", "2", &[]);
    p.metadata
        .annotations
        .insert(crate::RUN_DURATION_ANNOTATION.into(), "1m".into());
    p.metadata
        .annotations
        .insert(crate::EXIT_CODE_ANNOTATION.into(), "1".into());
    p.spec.restart_policy = Some("OnFailure".into());
    sim.create(p);
    sim.advance(150);
    let p = sim.pod("looping");
    assert_eq!(phase(&p), Some("Running"));
    let status = &p.status.container_statuses.as_ref().unwrap()[0];
    assert_eq!(status["restartCount"], 2);
    assert_eq!(status["lastState"]["terminated"]["exitCode"], 1);
}

#[test]
fn pod_waits_until_its_claim_is_allocated_and_reserved() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let mut sim = Sim::new(config(kubelet(json!({}))), store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    let mut unreserved = claim("c", None, false);
    unreserved.status.allocation = None;
    sim.create(unreserved);
    sim.run();
    assert_eq!(
        waiting_message(&sim.pod("p")),
        "ResourceClaim c is not allocated"
    );
    let allocated = claim("c", None, false);
    sim.runtime
        .store
        .modify::<ResourceClaim, _>("default", "c", |c| c.status = allocated.status.clone())
        .expect("allocated");
    sim.run();
    assert_eq!(
        waiting_message(&sim.pod("p")),
        "ResourceClaim c is not reserved for the pod"
    );
    let reserved = claim("c", Some(&p), false);
    sim.runtime
        .store
        .modify::<ResourceClaim, _>("default", "c", |c| c.status = reserved.status.clone())
        .expect("reserved");
    sim.run();
    let p = sim.pod("p");
    assert_eq!(phase(&p), Some("Running"));
    let dynamic = &resources(&p)["containers"][0]["dynamicResources"][0];
    assert_eq!(dynamic["claimName"], "c");
    assert_eq!(dynamic["claimResources"][0]["deviceName"], "gpu-0");
    assert_eq!(
        dynamic["claimResources"][0]["topology"]["nodes"][0]["ID"],
        1
    );
}

fn objects(bytes: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(bytes)
        .into_iter::<Value>()
        .collect::<Result<_, _>>()
        .expect("a stream of JSON objects")
}

#[test]
fn metadata_files_follow_kep_5304_with_generations() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let mut sim = Sim::new(config(kubelet(json!({}))), store);
    let p = sim.create(pod(
        "p",
        "2",
        &[("gpu", "c", false), ("tmpl", "p-tmpl-x7k2p", true)],
    ));
    sim.create(claim("c", Some(&p), false));
    let mut generated = claim("p-tmpl-x7k2p", Some(&p), false);
    generated
        .status
        .allocation
        .as_mut()
        .expect("allocated")
        .devices
        .results[0]
        .device = "gpu-1".into();
    sim.create(generated);
    sim.run();
    assert_eq!(phase(&sim.pod("p")), Some("Running"));
    let files = sim.log.files();
    let paths: Vec<PathBuf> = files.iter().map(|(p, _)| p.clone()).collect();
    assert_eq!(
        paths,
        [
            PathBuf::from("node-1/default/p/resourceclaims/c/gpu/gpu.example.com-metadata.json"),
            PathBuf::from(
                "node-1/default/p/resourceclaimtemplates/tmpl/gpu/gpu.example.com-metadata.json"
            ),
        ]
    );
    let direct = objects(&files[0].1);
    assert_eq!(direct.len(), 2);
    assert_eq!(direct[0]["apiVersion"], "metadata.resource.k8s.io/v1beta1");
    assert_eq!(direct[1]["apiVersion"], "metadata.resource.k8s.io/v1alpha1");
    assert_eq!(direct[0]["kind"], "DeviceMetadata");
    assert_eq!(direct[0]["metadata"]["name"], "c");
    assert_eq!(direct[0]["metadata"]["generation"], 1);
    assert!(direct[0].get("podClaimName").is_none());
    let device = &direct[0]["requests"][0]["devices"][0];
    assert_eq!(direct[0]["requests"][0]["name"], "gpu");
    assert_eq!(device["driver"], DRIVER);
    assert_eq!(device["name"], "gpu-0");
    assert_eq!(device["attributes"]["index"]["int"], 0);
    let templated = objects(&files[1].1);
    assert_eq!(templated[0]["podClaimName"], "tmpl");
    assert_eq!(templated[0]["metadata"]["name"], "p-tmpl-x7k2p");

    // The driver reports network data later: the file gets a new generation.
    sim.runtime
        .store
        .modify::<ResourceClaim, _>("default", "c", |c| {
            c.status.devices[0].network_data = Some(decode(json!({"interfaceName": "net1"})));
        })
        .expect("network data");
    sim.run();
    let files = sim.log.files();
    let direct = objects(&files[0].1);
    assert_eq!(direct[0]["metadata"]["generation"], 2);
    assert_eq!(
        direct[0]["requests"][0]["devices"][0]["networkData"]["interfaceName"],
        "net1"
    );
    assert_eq!(sim.log.versions().len(), 3);
}

#[test]
fn claim_device_status_follows_prepare_and_unprepare() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let mut sim = Sim::new(config(kubelet(json!({}))), store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    sim.create(claim("c", Some(&p), false));
    sim.run();
    let c = sim.claim("c");
    assert_eq!(c.status.devices.len(), 1);
    let entry = &c.status.devices[0];
    assert_eq!(
        (
            entry.driver.as_str(),
            entry.pool.as_str(),
            entry.device.as_str()
        ),
        (DRIVER, NODE, "gpu-0")
    );
    assert_eq!(entry.conditions[0].type_, "Ready");
    assert_eq!(entry.conditions[0].status, "True");
    sim.runtime
        .store
        .delete(&ObjectKey::new(Kind::Pod, "default", "p"))
        .expect("deleted");
    sim.run();
    assert!(sim.claim("c").status.devices.is_empty());
    assert!(sim.log.files().is_empty());
}

#[test]
fn skip_node_operations_needs_the_declared_feature() {
    let setup = |declared: &[&str]| {
        let mut store = Store::new();
        store
            .create(slice(true, json!({"name": "gpu-1"})), "t")
            .expect("slice");
        store.create(node_object(declared), "t").expect("node");
        let mut sim = Sim::new(config(kubelet(json!({}))), store);
        let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
        sim.create(claim("c", Some(&p), true));
        sim.run();
        sim
    };
    let without = setup(&[]);
    let message = waiting_message(&without.pod("p"));
    assert!(message.contains("has no kubelet plugin"), "{message}");
    let with = setup(&["DRAOptionalNodeOperations"]);
    assert_eq!(phase(&with.pod("p")), Some("Running"));
    assert!(
        with.claim("c").status.devices.is_empty(),
        "no driver was called"
    );
    assert!(with.log.files().is_empty(), "no metadata without prepare");
}

fn device_health(pod: &Pod) -> String {
    let statuses = pod.status.container_statuses.clone().expect("statuses");
    let status = &statuses[0]["allocatedResourcesStatus"][0];
    assert_eq!(status["name"], "claim:gpu");
    assert_eq!(
        status["resources"][0]["resourceID"],
        "gpu.example.com/node-1/gpu-0"
    );
    status["resources"][0]["health"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn set_health(sim: &mut Sim, health: &str) {
    sim.runtime
        .store
        .modify::<ResourceSlice, _>("", "node-1-gpus", |s| {
            s.metadata.annotations.insert(
                DEVICE_HEALTH_ANNOTATION.into(),
                json!({"gpu-0": health}).to_string(),
            );
        })
        .expect("health set");
}

#[test]
fn device_health_turns_unknown_after_the_driver_timeout() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let mut cfg = config(kubelet(json!({})));
    cfg.driver_health_timeout.insert(DRIVER.into(), 60);
    let mut sim = Sim::new(cfg, store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    sim.create(claim("c", Some(&p), false));
    sim.run();
    assert_eq!(device_health(&sim.pod("p")), "Healthy");
    set_health(&mut sim, "Unhealthy");
    sim.run();
    assert_eq!(device_health(&sim.pod("p")), "Unhealthy");
    set_health(&mut sim, "Unknown");
    sim.advance(59);
    assert_eq!(
        device_health(&sim.pod("p")),
        "Unhealthy",
        "within the timeout"
    );
    sim.advance(2);
    assert_eq!(device_health(&sim.pod("p")), "Unknown", "after the timeout");
    set_health(&mut sim, "Healthy");
    sim.run();
    assert_eq!(device_health(&sim.pod("p")), "Healthy", "reports resume");
}

#[test]
fn node_allocatable_resources_are_reported_per_claim() {
    let mut store = Store::new();
    let extra = json!({
        "name": "gpu-1",
        "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "8Gi"}}},
    });
    store.create(slice(false, extra), "t").expect("slice");
    let mut sim = Sim::new(config(kubelet(json!({}))), store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    let mut c = claim("c", Some(&p), false);
    c.status
        .allocation
        .as_mut()
        .expect("allocated")
        .devices
        .results[0]
        .device = "gpu-1".into();
    sim.create(c);
    sim.run();
    let p = sim.pod("p");
    assert_eq!(phase(&p), Some("Running"));
    assert_eq!(
        p.status.node_allocatable_resource_claim_statuses,
        Some(json!([{
            "resourceClaimName": "c",
            "containers": ["app"],
            "overhead": [{"name": "memory", "perPod": "8Gi"}],
        }]))
    );
}

/// A node with 9.5Gi allocatable memory, a pod whose claim's device adds 8Gi of memory
/// overhead to its 1Gi, then a second pod asking for 1Gi.
fn memory_overhead_node(gate: bool) -> Sim {
    let mut store = Store::new();
    let extra = json!({
        "name": "gpu-1",
        "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "8Gi"}}},
    });
    store.create(slice(false, extra), "t").expect("slice");
    let node: Node = decode(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
        "status": {"allocatable": {"cpu": "16", "memory": "9728Mi", "pods": "110"}},
    }));
    store.create(node, "t").expect("node");
    let mut cfg = config(kubelet(json!({})));
    cfg.features.node_allocatable_resources = gate;
    let mut sim = Sim::new(cfg, store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    let mut c = claim("c", Some(&p), false);
    c.status
        .allocation
        .as_mut()
        .expect("allocated")
        .devices
        .results[0]
        .device = "gpu-1".into();
    sim.create(c);
    sim.run();
    assert_eq!(phase(&sim.pod("p")), Some("Running"));
    sim.create(pod("q", "2", &[]));
    sim.run();
    sim
}

#[test]
fn admission_counts_the_node_allocatable_resources_of_admitted_pods() {
    let sim = memory_overhead_node(true);
    let q = sim.pod("q");
    assert_eq!(phase(&q), Some("Failed"));
    assert_eq!(q.status.reason.as_deref(), Some("OutOfmemory"));
    assert_eq!(
        q.status.message.as_deref(),
        Some(
            "Pod was rejected: Node didn't have enough resource: memory, requested: 1073741824, \
             used: 9663676416, capacity: 10200547328"
        )
    );
    // The rejected pod holds no CPUs: a pod asking for what is left still fits.
    let mut sim = sim;
    let mut r = pod("r", "13", &[]);
    r.spec.containers[0]
        .resources
        .as_mut()
        .expect("resources")
        .requests
        .remove("memory");
    r.spec.containers[0]
        .resources
        .as_mut()
        .expect("resources")
        .limits
        .remove("memory");
    sim.create(r);
    sim.run();
    assert_eq!(phase(&sim.pod("r")), Some("Running"));
    // Once the first pod is gone, its footprint is too.
    let key = ObjectKey::new(Kind::Pod, "default", "p");
    sim.runtime.store.delete(&key).expect("deleted");
    sim.run();
    sim.runtime
        .store
        .delete(&ObjectKey::new(Kind::Pod, "default", "q"))
        .expect("deleted");
    sim.create(pod("q", "1", &[]));
    sim.run();
    assert_eq!(phase(&sim.pod("q")), Some("Running"));
}

#[test]
fn without_the_gate_admission_counts_only_the_pods_own_requests() {
    let sim = memory_overhead_node(false);
    assert_eq!(phase(&sim.pod("q")), Some("Running"));
}

#[test]
fn pods_of_other_nodes_are_left_alone() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    let mut other = pod("elsewhere", "2", &[]);
    other.spec.node_name = Some("node-2".into());
    sim.create(other);
    sim.run();
    assert_eq!(phase(&sim.pod("elsewhere")), None);
}

#[test]
fn the_optional_node_operations_gate_is_declared_on_the_node() {
    let mut store = Store::new();
    store.create(node_object(&[]), "t").expect("node");
    let mut cfg = config(kubelet(json!({})));
    cfg.features.optional_node_operations = true;
    cfg.declared_features.push("ExampleFeature".into());
    let mut sim = Sim::new(cfg, store);
    sim.run();
    let node = sim.runtime.store.get::<Node>("", NODE).expect("node");
    assert_eq!(
        node.status.declared_features,
        ["DRAOptionalNodeOperations", "ExampleFeature"]
    );
}

#[test]
fn a_claim_reserved_for_the_pod_group_lets_its_pods_run() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let group: allot_api::scheduling::v1beta1::PodGroup = decode(json!({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "default"},
        "spec": {"resourceClaims": [{"name": "shared", "resourceClaimTemplateName": "gpu-template"}]},
        "status": {"resourceClaimStatuses": [{"name": "shared", "resourceClaimName": "g-shared-abcde"}]},
    }));
    let group = store.create(group, "t").expect("group");
    let mut sim = Sim::new(config(kubelet(json!({}))), store);
    let mut member: Pod = decode(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "member", "namespace": "default"},
        "spec": {
            "nodeName": NODE,
            "schedulingGroup": {"podGroupName": "g"},
            "containers": [{"name": "app", "resources": {"claims": [{"name": "shared"}]}}],
            "resourceClaims": [{"name": "shared", "resourceClaimTemplateName": "gpu-template"}],
        },
    }));
    member = sim.create(member);
    let mut shared = claim("g-shared-abcde", None, false);
    sim.create({
        shared.status.reserved_for = vec![decode(json!({
            "apiGroup": "scheduling.k8s.io", "resource": "podgroups",
            "name": "g", "uid": group.metadata.uid,
        }))];
        shared
    });
    sim.run();
    let p = sim.pod(&member.metadata.name);
    assert_eq!(phase(&p), Some("Running"));
    assert_eq!(p.status.qos_class.as_deref(), Some("BestEffort"));
    let paths: Vec<PathBuf> = sim.log.files().into_iter().map(|(p, _)| p).collect();
    assert_eq!(
        paths,
        [PathBuf::from(
            "node-1/default/member/resourceclaimtemplates/shared/gpu/gpu.example.com-metadata.json"
        )]
    );
}

mod properties {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// Whatever pods come and go, no CPU is exclusive to two running pods, and once every
        /// pod is gone all CPUs but the reserved one can be given to a single pod.
        #[test]
        fn exclusive_cpus_never_overlap_and_return_on_deletion(
            steps in proptest::collection::vec((0usize..6, 1u32..7, any::<bool>()), 1..16)
        ) {
            let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
            let mut live: BTreeSet<usize> = BTreeSet::new();
            for (slot, cpus, delete) in steps {
                let name = format!("p{slot}");
                if live.contains(&slot) {
                    if delete {
                        sim.runtime
                            .store
                            .delete(&ObjectKey::new(Kind::Pod, "default", name.as_str()))
                            .expect("deleted");
                        live.remove(&slot);
                    }
                } else {
                    sim.create(pod(&name, &cpus.to_string(), &[]));
                    live.insert(slot);
                }
                sim.run();
                let mut seen = BTreeSet::new();
                for pod in sim.runtime.store.list::<Pod>() {
                    if phase(pod) == Some("Running") {
                        for id in cpu_ids(pod) {
                            prop_assert!(seen.insert(id), "CPU {} exclusive twice", id);
                        }
                    }
                }
            }
            for slot in live {
                let name = format!("p{slot}");
                sim.runtime
                    .store
                    .delete(&ObjectKey::new(Kind::Pod, "default", name.as_str()))
                    .expect("deleted");
            }
            sim.run();
            // CPU 0 is reserved; the other 15 are free again only if every pod gave its back.
            sim.create(pod("everything", "15", &[]));
            sim.run();
            let everything = sim.pod("everything");
            prop_assert_eq!(phase(&everything), Some("Running"));
            prop_assert_eq!(cpu_ids(&everything), (1..16).collect::<Vec<u64>>());
        }
    }
}

#[test]
fn dra_device_numa_comes_from_numa_node_or_numa_attributes() {
    let device = |attrs: Value| -> allot_api::resource::v1::Device {
        decode(json!({"name": "d", "attributes": attrs}))
    };
    use crate::podresources::device_numa;
    assert_eq!(
        device_numa(&device(json!({"numaNode": {"int": 1}}))),
        Some(1)
    );
    assert_eq!(
        device_numa(&device(json!({"gpu.example.com/numa": {"int": 0}}))),
        Some(0)
    );
    assert_eq!(
        device_numa(&device(
            json!({"x.example.com/numa": {"int": 0}, "numaNode": {"int": 3}})
        )),
        Some(3)
    );
    assert_eq!(device_numa(&device(json!({"numa": {"string": "1"}}))), None);
    assert_eq!(device_numa(&device(json!({"index": {"int": 1}}))), None);
}

#[test]
fn resources_annotation_lists_sidecars_but_not_completed_init_containers() {
    let mut sim = Sim::new(config(kubelet(json!({}))), Store::new());
    let mut p = pod("p", "2", &[]);
    let guaranteed =
        json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}});
    p.spec.init_containers = vec![
        decode(json!({"name": "setup", "resources": guaranteed})),
        decode(json!({"name": "proxy", "restartPolicy": "Always", "resources": guaranteed})),
    ];
    sim.create(p);
    sim.run();
    let p = sim.pod("p");
    assert_eq!(phase(&p), Some("Running"));
    let names: Vec<String> = resources(&p)["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .map(|c| c["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(names, ["proxy", "app"]);
    let init = p
        .status
        .init_container_statuses
        .clone()
        .expect("init statuses");
    assert_eq!(init[0]["state"]["terminated"]["reason"], "Completed");
    assert!(init[1]["state"]["running"].is_object());
}

#[test]
fn bad_configurations_are_errors_not_panics() {
    let mut cfg = config(kubelet(json!({})));
    cfg.metadata_versions = vec!["metadata.resource.k8s.io/v2".into()];
    assert!(matches!(
        NodeAgent::new(cfg),
        Err(crate::NodeSimError::MetadataVersion { .. })
    ));
    let cfg = config(kubelet(
        json!({"cpuManagerPolicyOptions": {"no-such-option": "true"}}),
    ));
    assert!(matches!(
        NodeAgent::new(cfg),
        Err(crate::NodeSimError::Start { .. })
    ));
}

#[test]
fn a_single_metadata_version_gives_a_stream_of_one() {
    let mut store = Store::new();
    store
        .create(slice(false, json!({"name": "gpu-1"})), "t")
        .expect("slice");
    let mut cfg = config(kubelet(json!({})));
    cfg.metadata_versions = vec![crate::METADATA_API_V1BETA1.into()];
    let mut sim = Sim::new(cfg, store);
    let p = sim.create(pod("p", "2", &[("gpu", "c", false)]));
    sim.create(claim("c", Some(&p), false));
    sim.run();
    let files = sim.log.files();
    assert_eq!(files.len(), 1);
    let stream = objects(&files[0].1);
    assert_eq!(stream.len(), 1);
    assert_eq!(stream[0]["apiVersion"], crate::METADATA_API_V1BETA1);
}
