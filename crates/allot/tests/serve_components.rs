//! Real Kubernetes components against `allot serve`, replayed: the request sequences that
//! kube-scheduler 1.36 and kube-controller-manager 1.36 (its resourceclaim controller) sent to
//! `allot serve --controllers=...` when they scheduled a pod with a claim template (recorded
//! with `--request-log`), sent again here with the same verbs, paths, queries, content types,
//! Accept headers and body shapes, in protobuf where they used protobuf. So CI checks the
//! surface those components need without their binaries: WatchList streams (`sendInitialEvents`
//! with bookmarks) of every kind the scheduler caches, the leader Lease, the claim's finalizer
//! and allocation, `pods/binding`, `events.k8s.io/v1` Events, pod status patches, and the claim
//! controller's claim from the template; and that `--controllers` leaves those loops to them.

#[path = "support/kubectl.rs"]
mod kubectl;

#[path = "support/serve.rs"]
mod harness;

#[path = "support/kube.rs"]
mod kube;

use std::time::{Duration, Instant};

use harness::Serve;
use kube::{Client, PROTOBUF, PROTOBUF_ACCEPT};
use serde_json::{Value, json};

const SCHEDULER_AGENT: &str = "kube-scheduler/v1.36.1 (linux/amd64) kubernetes/$Format/scheduler";
const KCM_AGENT: &str =
    "kube-controller-manager/v1.36.1 (linux/amd64) kubernetes/$Format/resource-claim-controller";

/// The node, class, slice and template of the recordings.
const FIXTURE: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/hostname: node-1}
status:
  capacity: {cpu: "8", memory: 32Gi, pods: "110"}
  allocatable: {cpu: "8", memory: 32Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == "gpu.example.com"}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
    attributes: {model: {string: A100}}
  - name: gpu-1
    attributes: {model: {string: A100}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: one-gpu, namespace: default}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {deviceClassName: gpu.example.com}
"#;

const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: real-1, namespace: default}
spec:
  containers:
  - name: app
    image: busybox
    resources:
      claims: [{name: gpu}]
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
"#;

/// The kinds kube-scheduler 1.36 lists and watches (one WatchList stream each), as recorded.
const SCHEDULER_WATCHES: &[&str] = &[
    "/api/v1/persistentvolumeclaims",
    "/apis/resource.k8s.io/v1/resourceclaims",
    "/api/v1/namespaces",
    "/apis/storage.k8s.io/v1/csinodes",
    "/api/v1/nodes",
    "/api/v1/services",
    "/apis/resource.k8s.io/v1/deviceclasses",
    "/apis/resource.k8s.io/v1/resourceslices",
    "/apis/storage.k8s.io/v1/storageclasses",
    "/apis/apps/v1/replicasets",
    "/api/v1/persistentvolumes",
    "/api/v1/pods",
    "/apis/storage.k8s.io/v1/csistoragecapacities",
    "/apis/storage.k8s.io/v1/volumeattachments",
    "/apis/policy/v1/poddisruptionbudgets",
    "/api/v1/replicationcontrollers",
    "/apis/storage.k8s.io/v1/csidrivers",
    "/apis/apps/v1/statefulsets",
];

/// client-go 1.36's WatchList query (the pods' with the scheduler's field selector).
fn watch_list_query(path: &str) -> String {
    let selector = if path == "/api/v1/pods" {
        "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&"
    } else {
        ""
    };
    format!(
        "{path}?allowWatchBookmarks=true&{selector}resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=5m2s&timeoutSeconds=302&watch=true"
    )
}

fn start(kubectl: &std::path::Path, controllers: &str) -> (tempfile::TempDir, Serve) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("data");
    let serve = Serve::start(
        &data_dir,
        kubectl,
        &[format!("--controllers={controllers}")],
    );
    serve.ok(&["apply", "-f", &serve.file("fixture.yaml", FIXTURE)]);
    (dir, serve)
}

fn client(serve: &Serve, user_agent: &str) -> Client {
    let ca = serve.data_dir.join("pki/ca.crt");
    let token = harness::https::kubeconfig_token(&serve.kubeconfig);
    Client::new(&serve.address, &ca, token, user_agent)
}

/// Reads a WatchList stream up to its initial-events-end bookmark; the objects it listed.
fn initial_events(watch: &mut kube::Watch, path: &str) -> Vec<Value> {
    assert_eq!(watch.status, 200, "{path}");
    assert_eq!(
        watch.content_type, "application/vnd.kubernetes.protobuf;stream=watch",
        "{path}"
    );
    let mut objects = Vec::new();
    loop {
        let (kind, object) = watch
            .next(Duration::from_secs(20))
            .unwrap_or_else(|| panic!("{path}: the stream ended before its bookmark"));
        match kind.as_str() {
            "ADDED" => objects.push(object),
            "BOOKMARK" => {
                assert_eq!(
                    object["metadata"]["annotations"]["k8s.io/initial-events-end"], "true",
                    "{path}: {object}"
                );
                assert!(
                    object["metadata"]["resourceVersion"]
                        .as_str()
                        .is_some_and(|rv| !rv.is_empty()),
                    "{path}: a bookmark carries the resourceVersion"
                );
                return objects;
            }
            other => panic!("{path}: unexpected {other} event: {object}"),
        }
    }
}

/// Waits for the first event on `watch` whose object satisfies `wanted`.
fn wait_for(watch: &mut kube::Watch, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Some((_, object)) = watch.next(Duration::from_secs(1))
            && wanted(&object)
        {
            return object;
        }
    }
    panic!("no event brought {what}");
}

/// The leader Lease `name` in kube-system, as a component's leader election reads, creates
/// and renews it, and the LeaderElection Event its recorder sends (core/v1).
fn lease(client: &Client, name: &str, component: &str) {
    let path =
        format!("/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}?timeout=5s");
    assert_eq!(client.get(&path).status, 404);
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": name, "namespace": "kube-system"},
        "spec": {"holderIdentity": "vm_1", "leaseDurationSeconds": 15,
                 "acquireTime": "2026-12-02T11:20:24.000000Z", "renewTime": "2026-12-02T11:20:24.000000Z",
                 "leaseTransitions": 0}});
    let created = client.protobuf(
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?timeout=5s",
        &lease,
    );
    assert_eq!(
        created.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.content_type, PROTOBUF);
    let mut renewed = created.json();
    renewed["spec"]["renewTime"] = json!("2026-12-02T11:20:26.123456Z");
    let answer = client.protobuf("PUT", &path, &renewed);
    assert_eq!(answer.status, 200);
    assert_eq!(
        answer.json()["spec"]["renewTime"],
        "2026-12-02T11:20:26.123456Z",
        "MicroTime keeps microseconds over protobuf"
    );
    let uid = answer.json()["metadata"]["uid"].clone();
    let event = json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.18ed6bdd5f293dc8"), "namespace": "kube-system"},
        "involvedObject": {"kind": "Lease", "namespace": "kube-system", "name": name, "uid": uid,
                           "apiVersion": "coordination.k8s.io/v1"},
        "reason": "LeaderElection", "message": "vm_1 became leader",
        "source": {"component": component},
        "firstTimestamp": "2026-12-02T11:20:24Z", "lastTimestamp": "2026-12-02T11:20:24Z",
        "count": 1, "type": "Normal", "reportingComponent": component, "reportingInstance": ""});
    let answer = client.protobuf("POST", "/api/v1/namespaces/kube-system/events", &event);
    assert_eq!(
        answer.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// What kube-scheduler does with a pod whose claim exists, in the recorded order: nomination,
/// the claim's finalizer, allocation and reservation, binding, the Scheduled Event.
fn schedule(scheduler: &Client, claim: &Value, pod: &Value) {
    let name = claim["metadata"]["name"].as_str().expect("claim name");
    let claim_path = format!("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims/{name}");
    // The nomination, as a strategic merge patch of the pod's status.
    let patched = scheduler.send(
        "PATCH",
        "/api/v1/namespaces/default/pods/real-1/status",
        "application/strategic-merge-patch+json",
        PROTOBUF_ACCEPT,
        br#"{"status":{"nominatedNodeName":"node-1"}}"#,
    );
    assert_eq!(patched.status, 200);
    assert_eq!(patched.json()["status"]["nominatedNodeName"], "node-1");
    // The DRA plugin adds its finalizer with an update of the whole claim.
    let mut with_finalizer = claim.clone();
    with_finalizer["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
    let updated = scheduler.protobuf("PUT", &claim_path, &with_finalizer);
    assert_eq!(
        updated.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&updated.body)
    );
    // Then the allocation and the reservation for the pod, in one status update.
    let mut allocated = updated.json();
    allocated["status"] = json!({
        "allocation": {
            "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                     "pool": "node-1", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
            "allocationTimestamp": "2026-12-02T11:20:33Z"},
        "reservedFor": [{"resource": "pods", "name": "real-1",
                         "uid": pod["metadata"]["uid"].clone()}]});
    let status = scheduler.protobuf("PUT", &format!("{claim_path}/status"), &allocated);
    assert_eq!(
        status.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&status.body)
    );
    assert_eq!(status.content_type, PROTOBUF);
    assert_eq!(
        status.json()["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    // DefaultBinder's Binding.
    let binding = json!({"apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": "real-1", "namespace": "default", "uid": pod["metadata"]["uid"].clone()},
        "target": {"kind": "Node", "name": "node-1"}});
    let bound = scheduler.protobuf(
        "POST",
        "/api/v1/namespaces/default/pods/real-1/binding",
        &binding,
    );
    assert_eq!(
        bound.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&bound.body)
    );
    assert_eq!(bound.json()["status"], "Success");
    // A second binding is refused as upstream refuses it.
    let again = scheduler.protobuf(
        "POST",
        "/api/v1/namespaces/default/pods/real-1/binding",
        &binding,
    );
    assert_eq!(again.status, 409);
    assert_eq!(
        again.json()["message"],
        "Operation cannot be fulfilled on pods/binding \"real-1\": pod real-1 is already assigned to node \"node-1\""
    );
    // The Scheduled Event, through events.k8s.io/v1.
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"name": "real-1.18ed6bdf4f2fd1f0", "namespace": "default"},
        "eventTime": "2026-12-02T11:20:33.241100Z", "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-vm", "action": "Binding", "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "real-1",
                      "uid": pod["metadata"]["uid"].clone(), "apiVersion": "v1"},
        "note": "Successfully assigned default/real-1 to node-1", "type": "Normal",
        "deprecatedSource": {}});
    let recorded = scheduler.protobuf(
        "POST",
        "/apis/events.k8s.io/v1/namespaces/default/events",
        &event,
    );
    assert_eq!(
        recorded.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&recorded.body)
    );
    assert_eq!(
        recorded.json()["note"],
        "Successfully assigned default/real-1 to node-1"
    );
}

/// kube-scheduler's sequence against `--controllers=*,-scheduler`: allot's claim controller
/// makes the claim, the replayed scheduler allocates it and binds the pod.
#[test]
fn kube_scheduler_schedules_a_pod_with_a_claim_template() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*,-scheduler");
    let scheduler = client(&serve, SCHEDULER_AGENT);
    // Discovery of events.k8s.io/v1, as the event broadcaster checks it.
    let discovery = scheduler.send(
        "GET",
        "/apis/events.k8s.io/v1",
        "",
        "application/json, */*",
        &[],
    );
    assert_eq!(discovery.status, 200);
    assert!(
        discovery.json()["resources"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["name"] == "events"))
    );
    let mut watches = Vec::new();
    for path in SCHEDULER_WATCHES {
        let mut watch = scheduler.watch(&watch_list_query(path), PROTOBUF_ACCEPT);
        let listed = initial_events(&mut watch, path);
        if *path == "/api/v1/nodes" {
            assert_eq!(listed.len(), 1);
        }
        watches.push((*path, watch));
    }
    lease(&scheduler, "kube-scheduler", "default-scheduler");
    serve.ok(&["apply", "-f", &serve.file("pod.yaml", POD)]);
    let at = |path: &str| {
        SCHEDULER_WATCHES
            .iter()
            .position(|p| *p == path)
            .expect("watched")
    };
    let pod = wait_for(&mut watches[at("/api/v1/pods")].1, "the pod", |o| {
        o["metadata"]["name"] == "real-1"
    });
    // What the scheduler needs of a new pod: its scheduler name and phase.
    assert_eq!(pod["spec"]["schedulerName"], "default-scheduler");
    assert_eq!(pod["status"]["phase"], "Pending");
    let claim = wait_for(
        &mut watches[at("/apis/resource.k8s.io/v1/resourceclaims")].1,
        "the claim allot's resourceclaim controller makes",
        |o| o["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu",
    );
    schedule(&scheduler, &claim, &pod);
    let bound = serve.json(&["get", "pod", "real-1"]);
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    let scheduled = bound["status"]["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "PodScheduled").cloned())
        .expect("a PodScheduled condition");
    assert_eq!(scheduled["status"], "True");
    assert!(bound["status"].get("nominatedNodeName").is_none());
    let claims = serve.json(&["get", "resourceclaims"]);
    let items = claims["items"].as_array().expect("claims");
    assert_eq!(items.len(), 1, "one claim for one template entry");
    assert_eq!(items[0]["status"]["reservedFor"][0]["name"], "real-1");
    // The Event reads back in both APIs.
    let events = serve.json(&["get", "events", "--field-selector", "reason=Scheduled"]);
    let messages: Vec<&str> = events["items"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["message"].as_str())
        .collect();
    assert_eq!(messages, ["Successfully assigned default/real-1 to node-1"]);
    // The scheduler's pod watch saw the binding, in protobuf.
    let bound_event = wait_for(&mut watches[at("/api/v1/pods")].1, "the binding", |o| {
        o["spec"]["nodeName"] == "node-1"
    });
    assert_eq!(bound_event["metadata"]["name"], "real-1");
}

const KCM_WATCHES: &[&str] = &[
    "/api/v1/pods",
    "/apis/resource.k8s.io/v1/resourceclaims",
    "/apis/resource.k8s.io/v1/resourceclaimtemplates",
];

/// kube-controller-manager 1.36.1 (`--controllers=resourceclaim-controller`) and kube-scheduler
/// 1.36.1 together against `--controllers=*,-resourceclaim,-scheduler`, as recorded: allot makes
/// no claim of its own; the controller makes the claim from the template (protobuf) and names it
/// in the pod's status (server-side apply); the scheduler allocates it and binds the pod.
#[test]
fn kube_controller_manager_makes_the_claim_and_kube_scheduler_places_it() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*,-resourceclaim,-scheduler");
    let scheduler = client(&serve, SCHEDULER_AGENT);
    let kcm = client(&serve, KCM_AGENT);
    let mut scheduler_watches = Vec::new();
    for path in SCHEDULER_WATCHES {
        let mut watch = scheduler.watch(&watch_list_query(path), PROTOBUF_ACCEPT);
        initial_events(&mut watch, path);
        scheduler_watches.push((*path, watch));
    }
    lease(&scheduler, "kube-scheduler", "default-scheduler");
    lease(&kcm, "kube-controller-manager", "kube-controller-manager");
    assert_eq!(kcm.get("/healthz").status, 200);
    let mut kcm_watches = Vec::new();
    let mut templates = Vec::new();
    for path in KCM_WATCHES {
        // The controller's pod informer has no field selector.
        let query = watch_list_query(path).replace(
            "fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed&",
            "",
        );
        let mut watch = kcm.watch(&query, PROTOBUF_ACCEPT);
        let listed = initial_events(&mut watch, path);
        if path.ends_with("resourceclaimtemplates") {
            templates = listed;
        }
        kcm_watches.push(watch);
    }
    assert_eq!(
        templates.len(),
        1,
        "the template, from the WatchList stream"
    );
    serve.ok(&["apply", "-f", &serve.file("pod.yaml", POD)]);
    let pod = wait_for(&mut kcm_watches[0], "the pod", |o| {
        o["metadata"]["name"] == "real-1"
    });
    // allot's own controller is off: no claim appears while the pod waits (the pod's ADDED
    // event came after the server's loops saw the pod; give them a few rounds).
    std::thread::sleep(Duration::from_secs(2));
    let none = kcm.get("/apis/resource.k8s.io/v1/namespaces/default/resourceclaims");
    assert_eq!(none.status, 200);
    assert_eq!(none.content_type, PROTOBUF);
    assert_eq!(
        none.json()["items"].as_array().map_or(0, Vec::len),
        0,
        "allot made a claim although its controller is off"
    );
    // The controller's claim, as recorded: the template's spec (with the server's defaults),
    // an owner reference to the pod, an empty status.
    let claim = json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"generateName": "real-1-gpu-",
            "annotations": {"resource.kubernetes.io/pod-claim-name": "gpu"},
            "ownerReferences": [{"kind": "Pod", "name": "real-1",
                "uid": pod["metadata"]["uid"].clone(), "apiVersion": "v1", "controller": true}]},
        "spec": templates[0]["spec"]["spec"].clone(),
        "status": {}});
    assert_eq!(
        claim["spec"]["devices"]["requests"][0]["exactly"]["allocationMode"],
        "ExactCount"
    );
    let created = kcm.protobuf(
        "POST",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        &claim,
    );
    assert_eq!(
        created.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&created.body)
    );
    assert_eq!(created.content_type, PROTOBUF);
    let name = created.json()["metadata"]["name"]
        .as_str()
        .expect("a generated name")
        .to_string();
    assert!(name.starts_with("real-1-gpu-"), "{name}");
    // The pod's status names its claim: server-side apply, forced, as the controller's field
    // manager (the recorded body, which carries no uid).
    let apply = format!(
        r#"{{"kind":"Pod","apiVersion":"v1","metadata":{{"name":"real-1","namespace":"default"}},"status":{{"resourceClaimStatuses":[{{"name":"gpu","resourceClaimName":"{name}"}}]}}}}"#
    );
    let applied = kcm.send(
        "PATCH",
        "/api/v1/namespaces/default/pods/real-1/status?fieldManager=ResourceClaimController&force=true",
        "application/apply-patch+yaml",
        PROTOBUF_ACCEPT,
        apply.as_bytes(),
    );
    assert_eq!(
        applied.status,
        200,
        "{:?}",
        String::from_utf8_lossy(&applied.body)
    );
    assert_eq!(applied.content_type, PROTOBUF);
    assert_eq!(
        applied.json()["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
        name.as_str()
    );
    wait_for(
        &mut kcm_watches[1],
        "the claim on the controller's watch",
        |o| o["metadata"]["name"] == name.as_str(),
    );
    // The scheduler sees the claim and the pod, and places it.
    let at = |path: &str| {
        SCHEDULER_WATCHES
            .iter()
            .position(|p| *p == path)
            .expect("watched")
    };
    let claim = wait_for(
        &mut scheduler_watches[at("/apis/resource.k8s.io/v1/resourceclaims")].1,
        "the controller's claim on the scheduler's watch",
        |o| o["metadata"]["name"] == name.as_str(),
    );
    schedule(&scheduler, &claim, &pod);
    let bound = serve.json(&["get", "pod", "real-1"]);
    assert_eq!(bound["spec"]["nodeName"], "node-1");
    assert_eq!(
        bound["status"]["resourceClaimStatuses"][0]["resourceClaimName"],
        name.as_str()
    );
    // Exactly one claim for one template entry: the controller's, allocated and reserved.
    std::thread::sleep(Duration::from_secs(1));
    let all = serve.json(&["get", "resourceclaims"]);
    let items = all["items"].as_array().expect("claims");
    assert_eq!(items.len(), 1, "{all}");
    assert_eq!(items[0]["metadata"]["name"], name.as_str());
    assert_eq!(items[0]["status"]["reservedFor"][0]["name"], "real-1");
    assert_eq!(
        items[0]["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
}

/// Negotiation as kube-apiserver: an Accept this server cannot serve is 406 with upstream's
/// message, a Table stays JSON, `*/*` is JSON.
#[test]
fn content_negotiation_answers_as_kube_apiserver() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*");
    let c = client(&serve, "test");
    let refused = c.send("GET", "/api/v1/nodes", "", "application/cbor", &[]);
    assert_eq!(refused.status, 406);
    assert_eq!(
        refused.json()["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    let table = c.send(
        "GET",
        "/api/v1/nodes",
        "",
        "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io, application/json;as=Table;v=v1;g=meta.k8s.io",
        &[],
    );
    assert_eq!(table.content_type, "application/json");
    assert_eq!(table.json()["kind"], "Table");
    let yaml = c.send("GET", "/api/v1/nodes/node-1", "", "application/yaml", &[]);
    assert_eq!(yaml.content_type, "application/yaml");
    assert!(String::from_utf8_lossy(&yaml.body).contains("name: node-1"));
    let any = c.send("GET", "/api/v1/nodes/node-1", "", "*/*", &[]);
    assert_eq!(any.content_type, "application/json");
    let metadata = c.send(
        "GET",
        "/api/v1/nodes",
        "",
        "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
        &[],
    );
    assert_eq!(metadata.content_type, PROTOBUF);
    let list = metadata.json();
    assert_eq!(list["kind"], "PartialObjectMetadataList");
    assert_eq!(list["items"][0]["metadata"]["name"], "node-1");
    // A protobuf body of a kind without a protobuf form is 415.
    let topology = allot_protobuf::encode("v1", "Namespace", &json!({"metadata": {"name": "x"}}))
        .expect("encodes");
    let mut wrong = topology.clone();
    let at = wrong
        .windows(9)
        .position(|w| w == b"Namespace")
        .expect("the kind");
    wrong.splice(at..at + 9, b"Nonesuch!".iter().copied());
    let refused = c.send(
        "POST",
        "/api/v1/namespaces",
        PROTOBUF,
        PROTOBUF_ACCEPT,
        &wrong,
    );
    assert_eq!(
        refused.status,
        415,
        "{:?}",
        String::from_utf8_lossy(&refused.body)
    );
}

/// `pods/eviction` as upstream's EvictionREST: a PodDisruptionBudget that allows no disruption
/// answers 429 with upstream's message and cause; one that allows one takes it, marks the pod
/// with the DisruptionTarget condition and deletes it.
#[test]
fn eviction_honours_pod_disruption_budgets() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*,-scheduler");
    let pdb = r#"
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: keep-one, namespace: default}
spec:
  minAvailable: 1
  selector: {matchLabels: {app: web}}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: default, labels: {app: web}}
spec:
  nodeName: node-1
  containers: [{name: app, image: busybox}]
"#;
    serve.ok(&["apply", "-f", &serve.file("pdb.yaml", pdb)]);
    // The pod runs and is ready (the kubelet's status); the budget as the disruption
    // controller would have written it.
    serve.ok(&[
        "patch",
        "pod",
        "web-1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}"#,
    ]);
    let budget_status = |allowed: u32| {
        format!(
            r#"{{"status":{{"observedGeneration":1,"disruptionsAllowed":{allowed},"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}}}"#
        )
    };
    serve.ok(&[
        "patch",
        "pdb",
        "keep-one",
        "--subresource=status",
        "--type=merge",
        "-p",
        &budget_status(0),
    ]);
    let c = client(&serve, "kubectl/v1.37.1");
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": "web-1", "namespace": "default"}});
    let path = "/api/v1/namespaces/default/pods/web-1/eviction";
    let body = serde_json::to_vec(&eviction).expect("json");
    let refused = c.send("POST", path, "application/json", "application/json", &body);
    assert_eq!(refused.status, 429);
    let status = refused.json();
    assert_eq!(status["reason"], "TooManyRequests");
    assert_eq!(
        status["message"],
        "Cannot evict pod as it would violate the pod's disruption budget."
    );
    assert_eq!(
        status["details"]["causes"][0],
        json!({"reason": "DisruptionBudget",
               "message": "The disruption budget keep-one needs 1 healthy pods and has 1 currently"})
    );
    assert_eq!(
        serve.json(&["get", "pod", "web-1"])["metadata"]["name"],
        "web-1"
    );
    // A budget that allows one disruption: the eviction takes it and the pod goes.
    serve.ok(&[
        "patch",
        "pdb",
        "keep-one",
        "--subresource=status",
        "--type=merge",
        "-p",
        &budget_status(1),
    ]);
    let evicted = c.send("POST", path, "application/json", "application/json", &body);
    assert_eq!(
        evicted.status,
        201,
        "{:?}",
        String::from_utf8_lossy(&evicted.body)
    );
    assert_eq!(evicted.json()["status"], "Success");
    let budget = serve.json(&["get", "pdb", "keep-one"]);
    assert_eq!(budget["status"]["disruptionsAllowed"], 0);
    assert!(
        budget["status"]["disruptedPods"].get("web-1").is_some(),
        "{budget}"
    );
    let gone = serve.fails(&["get", "pod", "web-1"]);
    assert!(gone.contains("pods \"web-1\" not found"), "{gone}");
}

/// An Event written through core/v1 reads through `events.k8s.io/v1` with upstream's field
/// names, and `kubectl apply` of a kind the server does not serve prints kube-apiserver's
/// reason (kubectl's protobuf OpenAPI v2 request is answered, so it gets that far).
#[test]
fn events_read_in_both_apis_and_unserved_kinds_are_named() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*,-scheduler");
    let event = r#"
apiVersion: v1
kind: Event
metadata: {name: node-1.1, namespace: default}
involvedObject: {kind: Node, name: node-1, apiVersion: v1}
reason: Starting
message: Starting kubelet.
source: {component: kubelet, host: node-1}
firstTimestamp: "2026-12-02T11:00:00Z"
lastTimestamp: "2026-12-02T11:00:05Z"
count: 2
type: Normal
"#;
    serve.ok(&["apply", "-f", &serve.file("event.yaml", event)]);
    let v1 = serve.json(&["get", "events.v1.events.k8s.io", "node-1.1"]);
    assert_eq!(v1["apiVersion"], "events.k8s.io/v1");
    assert_eq!(v1["note"], "Starting kubelet.");
    assert_eq!(v1["regarding"]["name"], "node-1");
    assert_eq!(
        v1["deprecatedSource"],
        json!({"component": "kubelet", "host": "node-1"})
    );
    assert_eq!(v1["deprecatedCount"], 2);
    assert_eq!(v1["deprecatedFirstTimestamp"], "2026-12-02T11:00:00Z");
    assert!(v1.get("message").is_none() && v1.get("involvedObject").is_none());
    let widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n";
    let err = serve.fails(&["apply", "-f", &serve.file("widget.yaml", widget)]);
    assert!(
        err.contains(r#"no matches for kind "Widget" in version "example.com/v1""#),
        "{err}"
    );
    let old = "apiVersion: resource.k8s.io/v1alpha1\nkind: ResourceClaim\nmetadata: {name: c}\n";
    let err = serve.fails(&["apply", "-f", &serve.file("old.yaml", old)]);
    assert!(
        err.contains(
            r#"no matches for kind "ResourceClaim" in version "resource.k8s.io/v1alpha1""#
        ),
        "{err}"
    );
}

/// The namespaces the server starts with are created as kube-apiserver creates them (phase
/// `Active`, the `kubernetes` finalizer, the `kubernetes.io/metadata.name` label):
/// kube-controller-manager's serviceaccount controller skips a namespace that is not Active,
/// and namespace selectors find a namespace by that label, which every write keeps.
#[test]
fn namespaces_are_active_and_labelled_with_their_name() {
    let kubectl = kubectl::find();
    let (_dir, serve) = start(&kubectl, "*,-scheduler");
    for name in ["default", "kube-system", "kube-public"] {
        let ns = serve.json(&["get", "namespace", name]);
        assert_eq!(ns["status"]["phase"], "Active", "{ns}");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]), "{ns}");
        assert_eq!(
            ns["metadata"]["labels"]["kubernetes.io/metadata.name"], name,
            "{ns}"
        );
    }
    serve.ok(&["create", "namespace", "team-a"]);
    serve.ok(&[
        "label",
        "namespace",
        "team-a",
        "--overwrite",
        "kubernetes.io/metadata.name=other",
        "tier=gold",
    ]);
    let labels = serve.json(&["get", "namespace", "team-a"])["metadata"]["labels"].clone();
    assert_eq!(
        labels,
        json!({"kubernetes.io/metadata.name": "team-a", "tier": "gold"})
    );
}

/// kube-apiserver keeps the ConfigMap `kube-system/kube-apiserver-legacy-service-account-token-tracking`
/// (key `since`: the UTC date tracking began); kube-controller-manager's legacy token cleaner
/// reads it and logs an error while it is missing. The server creates it at start, answers
/// kube-controller-manager's protobuf list of it, and keeps its date across a restart.
#[test]
fn the_legacy_token_tracking_configmap_exists_from_the_start() {
    const NAME: &str = "kube-apiserver-legacy-service-account-token-tracking";
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("temp dir");
    let data_dir = dir.path().join("data");
    let serve = Serve::start(&data_dir, &kubectl, &[] as &[&str]);
    let map = serve.json(&["get", "configmap", "-n", "kube-system", NAME]);
    let since = map["data"]["since"].as_str().expect("since").to_string();
    let date = since.as_bytes();
    assert!(
        date.len() == 10
            && date[4] == b'-'
            && date[7] == b'-'
            && date
                .iter()
                .enumerate()
                .all(|(i, b)| i == 4 || i == 7 || b.is_ascii_digit()),
        "{map}"
    );
    assert_eq!(map["data"].as_object().map(|d| d.len()), Some(1), "{map}");
    // kube-controller-manager's informer lists it in protobuf, by field selector.
    let kcm = client(&serve, KCM_AGENT);
    let response = kcm.get(&format!(
        "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3D{NAME}&limit=500&resourceVersion=0"
    ));
    assert_eq!(response.status, 200);
    assert!(response.content_type.starts_with(PROTOBUF), "{response:?}");
    let list = response.json();
    assert_eq!(list["items"][0]["data"]["since"], json!(since), "{list}");
    // A restart keeps it as it is.
    let rv = map["metadata"]["resourceVersion"].clone();
    drop(serve);
    let serve = Serve::start(&data_dir, &kubectl, &[] as &[&str]);
    let again = serve.json(&["get", "configmap", "-n", "kube-system", NAME]);
    assert_eq!(again["data"]["since"], json!(since));
    assert_eq!(again["metadata"]["resourceVersion"], rv);
}
