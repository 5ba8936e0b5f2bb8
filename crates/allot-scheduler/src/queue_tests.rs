//! Profiles chosen by `spec.schedulerName`, the scheduling queue (backoff on the simulated
//! clock, QueueingHints, the 5-minute flush), and PodTopologySpread's system default
//! constraints through the workload objects that select a pod.

use super::*;
use allot_api::load::{LoadOptions, load_str};
use allot_runtime::Runtime;
use serde_json::json;

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: node-a, labels: {kubernetes.io/hostname: node-a}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Node
metadata: {name: node-b, labels: {kubernetes.io/hostname: node-b}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
"#;

fn pod(name: &str, cpu: &str, extra: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: \"{cpu}\"}}}}\n{extra}"
    )
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

fn configured(value: serde_json::Value) -> SchedulerConfig {
    let configuration =
        config::SchedulerConfiguration::from_value(&value, &plugins::exists).unwrap();
    SchedulerConfig {
        configuration: Some(configuration),
        ..SchedulerConfig::default()
    }
}

fn node_of(store: &Store, pod: &str) -> Option<String> {
    store
        .get::<Pod>("default", pod)
        .and_then(|p| p.spec.node_name.clone())
}

fn key(name: &str) -> ObjectKey {
    ObjectKey::new(Kind::Pod, "default", name)
}

/// Two profiles: the default one spreads (LeastAllocated), a bin-packing one (MostAllocated)
/// fills the busier node; a pod naming no profile is left alone, as upstream leaves it to
/// another scheduler.
#[test]
fn pods_choose_their_profile_by_scheduler_name() {
    let docs = vec![
        NODES.to_string(),
        pod("busy", "2", "  nodeName: node-b\n"),
        pod("spread", "1", ""),
        pod("packed", "1", "  schedulerName: bin-packing\n"),
        pod("elsewhere", "1", "  schedulerName: someone-else\n"),
    ];
    let config = configured(json!({
        "profiles": [
            {"schedulerName": "default-scheduler"},
            {
                "schedulerName": "bin-packing",
                "pluginConfig": [{
                    "name": "NodeResourcesFit",
                    "args": {"scoringStrategy": {"type": "MostAllocated"}}
                }]
            }
        ]
    }));
    let mut rt = Runtime::new(
        store_of(&docs),
        vec![Box::new(Scheduler::new(config))],
        SimTime::ZERO,
    );
    rt.run_due(10_000).unwrap();
    assert_eq!(node_of(&rt.store, "spread").as_deref(), Some("node-a"));
    assert_eq!(node_of(&rt.store, "packed").as_deref(), Some("node-b"));
    let elsewhere = rt.store.get::<Pod>("default", "elsewhere").unwrap();
    assert_eq!(elsewhere.spec.node_name, None);
    assert!(elsewhere.status.conditions.is_empty(), "never attempted");
}

/// A pod that fits once another is deleted is scheduled when the deletion happens, or, when
/// that comes before its backoff ends, when the backoff (1 s after its first failure) ends.
#[test]
fn a_pod_freed_by_a_deletion_is_scheduled_at_the_right_time() {
    for (delete_at, scheduled_at) in [(30_000, 30_000), (400, 1_000)] {
        let docs = vec![
            NODES.to_string(),
            pod("a-big", "3", "  nodeName: node-a\n"),
            pod("b-big", "3", "  nodeName: node-b\n"),
            pod("waiting", "2", ""),
        ];
        let mut rt = Runtime::new(
            store_of(&docs),
            vec![Box::new(Scheduler::new(SchedulerConfig::default()))],
            SimTime::ZERO,
        );
        rt.run_due(10_000).unwrap();
        assert_eq!(node_of(&rt.store, "waiting"), None);
        rt.advance_to(SimTime(delete_at), 10_000).unwrap();
        assert_eq!(node_of(&rt.store, "waiting"), None);
        rt.store.delete(&key("b-big")).unwrap();
        if scheduled_at > delete_at {
            rt.advance_to(SimTime(scheduled_at - 1), 10_000).unwrap();
            assert_eq!(
                node_of(&rt.store, "waiting"),
                None,
                "deleted at {delete_at} ms: not yet at {} ms",
                scheduled_at - 1
            );
        }
        rt.advance_to(SimTime(scheduled_at), 10_000).unwrap();
        assert_eq!(
            node_of(&rt.store, "waiting").as_deref(),
            Some("node-b"),
            "deleted at {delete_at} ms: scheduled at {scheduled_at} ms"
        );
    }
}

/// Upstream `calculateBackoffDuration`: 1 s, doubled per earlier failed attempt, at most 10 s
/// (or the configured initial and longest backoff).
#[test]
fn backoff_doubles_up_to_the_maximum() {
    let s = Scheduler::new(SchedulerConfig::default());
    let got: Vec<u64> = (1..=6).map(|a| s.backoff_millis(a)).collect();
    assert_eq!(got, [1_000, 2_000, 4_000, 8_000, 10_000, 10_000]);
    let s = Scheduler::new(configured(
        json!({"podInitialBackoffSeconds": 3, "podMaxBackoffSeconds": 20}),
    ));
    let got: Vec<u64> = (1..=4).map(|a| s.backoff_millis(a)).collect();
    assert_eq!(got, [3_000, 6_000, 12_000, 20_000]);
}

/// QueueingHints, driving the scheduler by hand: a pod NodeResourcesFit rejected is not moved
/// by a node's label change (NodeResourcesFit does not register it) but arms the 5-minute
/// flush; a bound pod's deletion (registered) moves it, and it waits for its backoff.
#[test]
fn only_registered_events_move_a_pod_and_others_arm_the_flush() {
    let docs = vec![
        NODES.to_string(),
        pod("a-big", "3", "  nodeName: node-a\n"),
        pod("b-big", "3", "  nodeName: node-b\n"),
        pod("waiting", "2", ""),
    ];
    let mut store = store_of(&docs);
    let mut s = Scheduler::new(SchedulerConfig::default());
    let at = |ms| Context { now: SimTime(ms) };
    assert_eq!(
        s.reconcile(&mut store, &key("waiting"), &at(0)).unwrap(),
        Action::Done
    );
    assert!(s.unschedulable.contains_key(&key("waiting")));
    let rv = store.events_since(0).last().unwrap().resource_version;

    // A label change of a node: not a NodeResourcesFit event.
    store
        .modify::<allot_api::core::v1::Node, _>("", "node-a", |n| {
            n.metadata.labels.insert("team".into(), "x".into());
        })
        .unwrap();
    let event = store.events_since(rv).last().unwrap().clone();
    assert_eq!(s.keys_for(&event, &store), vec![key("waiting")]);
    assert_eq!(s.wakes.borrow().get(&key("waiting")), Some(&Wake::Unhinted));
    // The flush is armed for 5 minutes after the pod was parked.
    assert_eq!(
        s.reconcile(&mut store, &key("waiting"), &at(2_000))
            .unwrap(),
        Action::RequeueAfterMillis(MAX_UNSCHEDULABLE_MILLIS - 2_000)
    );
    assert!(!s.unschedulable[&key("waiting")].moved);
    // Another unregistered event does not wake it again.
    let rv = event.resource_version;
    store
        .modify::<allot_api::core::v1::Node, _>("", "node-a", |n| {
            n.metadata.labels.insert("team".into(), "y".into());
        })
        .unwrap();
    let event = store.events_since(rv).last().unwrap().clone();
    assert!(s.keys_for(&event, &store).is_empty());

    // A bound pod's deletion: registered by NodeResourcesFit.
    let rv = event.resource_version;
    store.delete(&key("b-big")).unwrap();
    let event = store.events_since(rv).last().unwrap().clone();
    assert_eq!(s.keys_for(&event, &store), vec![key("waiting")]);
    assert_eq!(s.wakes.borrow().get(&key("waiting")), Some(&Wake::Hinted));
    // Moved at 500 ms: it waits until its backoff ends, 1 s after its parking.
    assert_eq!(
        s.reconcile(&mut store, &key("waiting"), &at(500)).unwrap(),
        Action::RequeueAfterMillis(500)
    );
    s.reconcile(&mut store, &key("waiting"), &at(1_000))
        .unwrap();
    assert_eq!(node_of(&store, "waiting").as_deref(), Some("node-b"));
}

/// The flush: a pod whose hints miss the change that makes it fit is tried again 5 minutes
/// after it was parked (upstream `podMaxInUnschedulablePodsDuration`).
#[test]
fn the_flush_retries_after_five_minutes() {
    let docs = vec![
        NODES.to_string(),
        pod("p", "1", "  nodeSelector: {disk: ssd}\n"),
    ];
    let mut rt = Runtime::new(
        store_of(&docs),
        vec![Box::new(Scheduler::new(SchedulerConfig::default()))],
        SimTime::ZERO,
    );
    rt.run_due(10_000).unwrap();
    assert_eq!(node_of(&rt.store, "p"), None);
    // A namespace appears: not a NodeAffinity event. The pod is tried again at 5 minutes.
    let ns = store_of(&["apiVersion: v1\nkind: Namespace\nmetadata: {name: other}".into()])
        .get::<allot_api::core::v1::Namespace>("", "other")
        .unwrap()
        .clone();
    let mut ns = ns;
    ns.metadata.resource_version.clear();
    rt.store.create(ns, &SimTime::ZERO.rfc3339()).unwrap();
    let at = rt.advance_to(SimTime(MAX_UNSCHEDULABLE_MILLIS - 1), 10_000);
    at.unwrap();
    assert_eq!(node_of(&rt.store, "p"), None);
    assert!(rt.next_due().is_some(), "the flush is queued");
    let end = rt.run_until_idle(SimTime(3_600_000), 10_000).unwrap();
    assert_eq!(node_of(&rt.store, "p"), None, "still does not fit");
    assert!(
        end <= SimTime(MAX_UNSCHEDULABLE_MILLIS),
        "{end:?}: no endless retries"
    );
}

/// System default constraints (hostname maxSkew 3, ScheduleAnyway) spread the pods of a
/// ReplicaSet when PodTopologySpread is the only score; pods no workload selects are not
/// spread (the name tie-break puts them on the first node).
#[test]
fn system_default_spread_applies_to_pods_of_a_workload() {
    let rs = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default, uid: rs-uid}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: x}]}
"#;
    let owned = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\n  labels: {{app: web}}\n  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: web, uid: rs-uid, controller: true}}]\nspec:\n  containers: [{{name: c, image: x}}]\n"
        )
    };
    let loose = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default, labels: {{app: db}}}}\nspec:\n  containers: [{{name: c, image: x}}]\n"
        )
    };
    let only_spread = json!({"profiles": [{"plugins": {"score": {
        "disabled": [{"name": "*"}],
        "enabled": [{"name": "PodTopologySpread"}]
    }}}]});
    let mut docs = vec![NODES.to_string(), rs.to_string()];
    docs.extend(["web-1", "web-2", "web-3"].map(owned));
    docs.extend(["db-1", "db-2"].map(loose));
    let mut rt = Runtime::new(
        store_of(&docs),
        vec![Box::new(Scheduler::new(configured(only_spread)))],
        SimTime::ZERO,
    );
    rt.run_due(10_000).unwrap();
    let nodes: Vec<Option<String>> = ["web-1", "web-2", "web-3", "db-1", "db-2"]
        .iter()
        .map(|p| node_of(&rt.store, p))
        .collect();
    let on = |n: &str| Some(n.to_string());
    assert_eq!(
        nodes,
        [
            on("node-a"),
            on("node-b"),
            on("node-a"),
            on("node-a"),
            on("node-a")
        ]
    );
}

/// The volume plugins' QueueingHints: a pod VolumeZone rejected (its volume is in zone z9, the
/// nodes in z1) is not moved by a node's allocatable change, which VolumeZone does not
/// register, but is moved by a node's relabelling into z9 and then scheduled there.
#[test]
fn volume_zone_rejections_wait_for_zone_label_changes() {
    let docs = vec![
        NODES.replace(
            "labels: {kubernetes.io/hostname: node-a}",
            "labels: {kubernetes.io/hostname: node-a, topology.kubernetes.io/zone: z1}",
        )
        .replace(
            "labels: {kubernetes.io/hostname: node-b}",
            "labels: {kubernetes.io/hostname: node-b, topology.kubernetes.io/zone: z1}",
        ),
        "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv-z9, labels: {topology.kubernetes.io/zone: z9}}\nspec:\n  capacity: {storage: 1Gi}\n  accessModes: [ReadWriteOnce]\n  hostPath: {path: /data}\n  claimRef: {namespace: default, name: data}\nstatus: {phase: Bound}\n".into(),
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data, namespace: default}\nspec:\n  accessModes: [ReadWriteOnce]\n  resources: {requests: {storage: 1Gi}}\n  volumeName: pv-z9\nstatus: {phase: Bound}\n".into(),
        pod(
            "zonal",
            "1",
            "  volumes: [{name: d, persistentVolumeClaim: {claimName: data}}]\n",
        ),
    ];
    let mut store = store_of(&docs);
    let mut s = Scheduler::new(SchedulerConfig::default());
    let at = |ms| Context { now: SimTime(ms) };
    s.reconcile(&mut store, &key("zonal"), &at(0)).unwrap();
    assert!(s.unschedulable.contains_key(&key("zonal")));
    let message = store
        .get::<Pod>("default", "zonal")
        .and_then(|p| p.status.conditions.first().and_then(|c| c.message.clone()))
        .unwrap_or_default();
    assert!(
        message.starts_with("0/2 nodes are available: 2 node(s) had no available volume zone."),
        "{message}"
    );
    let rv = store.events_since(0).last().unwrap().resource_version;

    // More CPU on node-a: not a VolumeZone event (only arms the flush).
    store
        .modify::<allot_api::core::v1::Node, _>("", "node-a", |n| {
            n.status
                .allocatable
                .insert("cpu".into(), allot_api::Quantity::parse("8").unwrap());
        })
        .unwrap();
    let event = store.events_since(rv).last().unwrap().clone();
    assert_eq!(s.keys_for(&event, &store), vec![key("zonal")]);
    assert_eq!(s.wakes.borrow().get(&key("zonal")), Some(&Wake::Unhinted));
    s.reconcile(&mut store, &key("zonal"), &at(500)).unwrap();
    assert!(!s.unschedulable[&key("zonal")].moved);

    // node-b moves to z9: registered by VolumeZone.
    let rv = event.resource_version;
    store
        .modify::<allot_api::core::v1::Node, _>("", "node-b", |n| {
            n.metadata
                .labels
                .insert("topology.kubernetes.io/zone".into(), "z9".into());
        })
        .unwrap();
    let event = store.events_since(rv).last().unwrap().clone();
    assert_eq!(s.keys_for(&event, &store), vec![key("zonal")]);
    assert_eq!(s.wakes.borrow().get(&key("zonal")), Some(&Wake::Hinted));
    s.reconcile(&mut store, &key("zonal"), &at(1_000)).unwrap();
    assert_eq!(node_of(&store, "zonal").as_deref(), Some("node-b"));
}

/// Each volume plugin registers upstream's events (with queueing hints on), not every event.
#[test]
fn volume_plugins_register_upstreams_events() {
    use crate::framework::{EnqueueExtensions, Plugin};
    let features = plugins::Features {
        dra: plugins::dynamic_resources::Config {
            features: allot_dra::Features::default(),
            binding_timeout_seconds: 600,
            extended_resource: true,
            node_allocatable_resources: true,
            allocation_budget: allot_dra::Budget::default(),
        },
    };
    let q = |name: &str| {
        let plugin: Box<dyn Plugin> =
            plugins::build(&crate::framework::PluginConfig::new(name), &features).unwrap();
        plugin
            .as_enqueue_extensions()
            .map(EnqueueExtensions::requeue_on)
            .unwrap()
    };
    use queueing::*;
    assert_eq!(q("VolumeBinding"), STORAGE | NODE_ADDED | NODE_LABEL);
    assert_eq!(
        q("VolumeRestrictions"),
        ASSIGNED_POD_DELETED | NODE_ADDED | STORAGE
    );
    assert_eq!(q("VolumeZone"), STORAGE | NODE_ADDED | NODE_LABEL);
    assert_eq!(q("NodeVolumeLimits"), STORAGE | ASSIGNED_POD_DELETED);
}
