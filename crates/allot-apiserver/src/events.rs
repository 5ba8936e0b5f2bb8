//! core/v1 Events for what happens to pods, so `kubectl describe pod` tells the story:
//! `FailedScheduling` and `Scheduled` as kube-scheduler reports them, the kubelet's admission
//! rejections (`Warning` with the kubelet's reason, e.g. `UnexpectedAdmissionError`,
//! `OutOfcpu`), and `DeviceTaintManagerEviction` when a device taint evicts a pod.
//!
//! Key design decision: the scheduler, the node agents and the eviction controller stay free of
//! event plumbing (they are shared with `allot simulate`, which has no Events); an
//! [`EventRecorder`] loop watches the pod states those loops write and records the Events the
//! upstream component records at the same transition. It keeps every pod state it was offered
//! (not only the latest), so a short-lived state (unschedulable, then scheduled a moment later;
//! marked for eviction, then deleted) still gets its Event. Events are named
//! `<pod>.<hash of uid, reason and message>`: a repeat (the pod enters a state that yields an
//! Event it already has, e.g. unschedulable with the same message again after another failure)
//! updates that Event as client-go's EventCorrelator does for events without a series: one more
//! `count` and `lastTimestamp` now, so `kubectl describe` shows `(x3 over 10s)`. Recording is
//! idempotent: the Event's `involvedObject.resourceVersion` is the pod state last counted, and a
//! state no newer than that (replaying the log after a restart) counts nothing; an Event is only
//! counted on a transition between two states this recorder saw, so a restart that offers only
//! the current state never counts it again. The cost: repeats are transitions between written
//! states, so a failure the scheduler retries without writing the pod counts once; upstream's
//! aggregation of ten similar events with different messages into one is not done.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Event as CoreEvent, EventSource, ObjectReference, Pod};
use allot_api::meta::v1::ObjectMeta;
use allot_runtime::{Action, Context, Controller};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

/// The component kube-scheduler reports as.
pub const SCHEDULER: &str = "default-scheduler";
/// The component the kubelet reports as.
pub const KUBELET: &str = "kubelet";
/// The component device-taint eviction reports as.
pub const TAINT_EVICTION: &str = "device-taint-eviction-controller";

/// One Event to record about a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodEvent {
    /// `Normal` or `Warning`.
    pub type_: &'static str,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
    /// The reporting component.
    pub component: &'static str,
    /// The node, for the kubelet.
    pub host: Option<String>,
}

/// The Events upstream components record for one observed pod state. `prebound` says the pod
/// was created with `spec.nodeName` (the scheduler never placed it, so no `Scheduled`).
pub fn pod_events(pod: &Pod, prebound: bool) -> Vec<PodEvent> {
    let mut out = Vec::new();
    let meta = &pod.metadata;
    let node = pod.spec.node_name.clone().filter(|n| !n.is_empty());
    let condition = |t: &str| pod.status.conditions.iter().find(|c| c.type_ == t);
    if let Some(c) = condition("PodScheduled")
        && c.status == "False"
        && matches!(
            c.reason.as_deref(),
            Some("Unschedulable" | "SchedulerError")
        )
    {
        // Upstream records FailedScheduling for a pod no node fits and for an attempt that
        // failed with an error alike.
        out.push(PodEvent {
            type_: "Warning",
            reason: "FailedScheduling".into(),
            message: c.message.clone().unwrap_or_default(),
            component: SCHEDULER,
            host: None,
        });
    }
    if let Some(node) = &node
        && !prebound
        && condition("PodScheduled").is_some_and(|c| c.status == "True")
    {
        out.push(PodEvent {
            type_: "Normal",
            reason: "Scheduled".into(),
            message: format!(
                "Successfully assigned {}/{} to {node}",
                meta.namespace, meta.name
            ),
            component: SCHEDULER,
            host: None,
        });
    }
    let evicted = condition("DisruptionTarget").is_some_and(|c| {
        c.status == "True"
            && c.reason.as_deref() == Some(allot_controllers::devicetainteviction::EVICTION_REASON)
    });
    if evicted {
        out.push(PodEvent {
            type_: "Normal",
            reason: "DeviceTaintManagerEviction".into(),
            message: "Marking for deletion".into(),
            component: TAINT_EVICTION,
            host: None,
        });
    }
    // The kubelet's admission rejection: phase Failed with its reason, on a node, before any
    // container ran.
    if pod.status.phase.as_deref() == Some("Failed")
        && !evicted
        && let (Some(node), Some(reason)) = (&node, &pod.status.reason)
        && !reason.is_empty()
    {
        let message = pod.status.message.clone().unwrap_or_default();
        let message = message
            .strip_prefix("Pod was rejected: ")
            .map_or(message.clone(), str::to_string);
        out.push(PodEvent {
            type_: "Warning",
            reason: reason.clone(),
            message,
            component: KUBELET,
            host: Some(node.clone()),
        });
    }
    out
}

/// FNV-1a, 64 bits: a stable hash for Event names (the standard library's is randomised).
fn fnv64(parts: &[&str]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0)) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    hash
}

/// The Event object for `event` about `pod` at `now`.
pub fn event_object(pod: &Pod, event: &PodEvent, now: &str) -> CoreEvent {
    let meta = &pod.metadata;
    let hash = fnv64(&[&meta.uid, &event.reason, &event.message]);
    // Names are at most 253 characters: the pod's name is cut to leave room for the hash.
    let prefix: String = meta.name.chars().take(253 - 17).collect();
    CoreEvent {
        api_version: "v1".into(),
        kind: "Event".into(),
        metadata: ObjectMeta {
            name: format!("{prefix}.{hash:016x}"),
            namespace: meta.namespace.clone(),
            ..ObjectMeta::default()
        },
        involved_object: ObjectReference {
            kind: Some("Pod".into()),
            namespace: Some(meta.namespace.clone()),
            name: Some(meta.name.clone()),
            uid: Some(meta.uid.clone()),
            api_version: Some("v1".into()),
            resource_version: Some(meta.resource_version.clone()),
            field_path: None,
        },
        reason: Some(event.reason.clone()),
        message: Some(event.message.clone()),
        source: Some(EventSource {
            component: Some(event.component.into()),
            host: event.host.clone(),
        }),
        first_timestamp: Some(now.to_string()),
        last_timestamp: Some(now.to_string()),
        count: Some(1),
        type_: Some(event.type_.into()),
        event_time: None,
        series: None,
        action: None,
        related: None,
        reporting_component: Some(event.component.into()),
        reporting_instance: Some(event.host.clone().unwrap_or_default()),
    }
}

/// Whether resourceVersion `a` is newer than `b` (both decimal, as this server's are).
fn newer(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

/// The loop that records pod Events.
#[derive(Debug, Default)]
pub struct EventRecorder {
    /// Pod states offered since the pod's last reconcile, oldest first, and whether each was
    /// the pod's deletion.
    seen: RefCell<BTreeMap<ObjectKey, Vec<(Pod, bool)>>>,
    /// The Events of each pod's latest state already reconciled, by pod uid.
    last: BTreeMap<String, Vec<PodEvent>>,
    /// Uids of pods created already bound to a node.
    prebound: RefCell<BTreeSet<String>>,
    /// Components whose Events are not recorded here (the real component runs and records
    /// its own: a real kube-scheduler with `--controllers=*,-scheduler`).
    silent: BTreeSet<&'static str>,
}

impl EventRecorder {
    /// A recorder.
    pub fn new() -> Self {
        EventRecorder::default()
    }

    /// A recorder that leaves out the Events of `component` (one of [`SCHEDULER`],
    /// [`KUBELET`], [`TAINT_EVICTION`]).
    pub fn without(mut self, component: &'static str) -> Self {
        self.silent.insert(component);
        self
    }
}

impl Controller for EventRecorder {
    fn name(&self) -> &'static str {
        "event-recorder"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        let Stored::Pod(pod) = &event.object else {
            return Vec::new();
        };
        match event.event_type {
            EventType::Added => {
                if pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
                    self.prebound.borrow_mut().insert(pod.metadata.uid.clone());
                }
            }
            EventType::Modified => {}
            EventType::Deleted => {
                // The state before deletion may carry an eviction; the uid is done afterwards.
                self.prebound.borrow_mut().remove(&pod.metadata.uid);
            }
        }
        self.seen
            .borrow_mut()
            .entry(event.key.clone())
            .or_default()
            .push((Pod::clone(pod), event.event_type == EventType::Deleted));
        vec![event.key.clone()]
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if key.kind != Kind::Pod {
            return Ok(Action::Done);
        }
        let states = self.seen.get_mut().remove(key).unwrap_or_default();
        let now = ctx.now.rfc3339();
        for (pod, deleted) in &states {
            let uid = &pod.metadata.uid;
            let prebound = self.prebound.get_mut().contains(uid);
            let mut events = pod_events(pod, prebound);
            events.retain(|e| !self.silent.contains(e.component));
            let previous = self.last.get(uid);
            for event in &events {
                let object = event_object(pod, event, &now);
                let Some(existing) = store
                    .get::<CoreEvent>(&object.metadata.namespace, &object.metadata.name)
                    .cloned()
                else {
                    store.create(object, &now).map_err(|e| e.to_string())?;
                    continue;
                };
                // A repeat is an Event the previous state seen did not yield, from a state
                // newer than the one the Event last counted.
                let repeated = previous.is_some_and(|p| !p.contains(event))
                    && newer(
                        &pod.metadata.resource_version,
                        existing
                            .involved_object
                            .resource_version
                            .as_deref()
                            .unwrap_or_default(),
                    );
                if repeated {
                    let mut updated = existing;
                    updated.count = Some(updated.count.unwrap_or(1).saturating_add(1));
                    updated.last_timestamp = Some(now.clone());
                    updated.involved_object.resource_version =
                        Some(pod.metadata.resource_version.clone());
                    store.update(updated).map_err(|e| e.to_string())?;
                }
            }
            if *deleted {
                self.last.remove(uid);
            } else {
                self.last.insert(uid.clone(), events);
            }
        }
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::PodCondition;

    fn pod(name: &str) -> Pod {
        let mut pod = Pod::default();
        pod.metadata.name = name.into();
        pod.metadata.namespace = "ns".into();
        pod.metadata.uid = format!("uid-{name}");
        pod
    }

    fn condition(type_: &str, status: &str, reason: &str, message: &str) -> PodCondition {
        PodCondition {
            type_: type_.into(),
            status: status.into(),
            observed_generation: None,
            last_probe_time: None,
            last_transition_time: None,
            reason: Some(reason.into()),
            message: Some(message.into()),
        }
    }

    fn reasons(events: &[PodEvent]) -> Vec<String> {
        events.iter().map(|e| e.reason.clone()).collect()
    }

    #[test]
    fn scheduler_kubelet_and_eviction_states_map_to_upstream_reasons() {
        let mut p = pod("a");
        p.status.conditions.push(condition(
            "PodScheduled",
            "False",
            "Unschedulable",
            "0/1 nodes are available: 1 cannot allocate all claims.",
        ));
        let events = pod_events(&p, false);
        assert_eq!(reasons(&events), ["FailedScheduling"]);
        assert_eq!(events[0].type_, "Warning");
        assert!(events[0].message.starts_with("0/1 nodes"));
        let message = "running \"DynamicResources\" filter plugin: claim ns/c: selector #0: \
                       CEL runtime error: no such key: profile";
        p.status.conditions[0] = condition("PodScheduled", "False", "SchedulerError", message);
        let events = pod_events(&p, false);
        assert_eq!(reasons(&events), ["FailedScheduling"]);
        assert_eq!(events[0].message, message);

        let mut p = pod("b");
        p.spec.node_name = Some("n1".into());
        p.status
            .conditions
            .push(condition("PodScheduled", "True", "", ""));
        let events = pod_events(&p, false);
        assert_eq!(reasons(&events), ["Scheduled"]);
        assert_eq!(events[0].message, "Successfully assigned ns/b to n1");
        assert!(
            pod_events(&p, true).is_empty(),
            "pre-bound pods were never scheduled"
        );

        p.status.phase = Some("Failed".into());
        p.status.reason = Some("UnexpectedAdmissionError".into());
        p.status.message = Some("Pod was rejected: Allocate failed due to x".into());
        let events = pod_events(&p, true);
        assert_eq!(reasons(&events), ["UnexpectedAdmissionError"]);
        assert_eq!(events[0].message, "Allocate failed due to x");
        assert_eq!(events[0].component, KUBELET);
        assert_eq!(events[0].host.as_deref(), Some("n1"));

        let mut p = pod("c");
        p.spec.node_name = Some("n1".into());
        p.status.conditions.push(condition(
            "DisruptionTarget",
            "True",
            allot_controllers::devicetainteviction::EVICTION_REASON,
            "Device Taint manager: deleting due to NoExecute taint",
        ));
        p.status.phase = Some("Failed".into());
        p.status.reason = Some(allot_controllers::devicetainteviction::EVICTION_REASON.into());
        assert_eq!(
            reasons(&pod_events(&p, true)),
            ["DeviceTaintManagerEviction"]
        );
    }

    #[test]
    fn short_lived_states_are_recorded_once_each() {
        let mut store = Store::new();
        let now = "2026-01-01T00:00:00Z";
        let mut p = pod("a");
        p.metadata.namespace = "ns".into();
        let mut p = store.create(p, now).expect("creates");
        p.status.conditions.push(condition(
            "PodScheduled",
            "False",
            "Unschedulable",
            "no nodes",
        ));
        let mut p = store.update(p).expect("updates");
        p.spec.node_name = Some("n1".into());
        p.status.conditions = vec![condition("PodScheduled", "True", "", "")];
        store.update(p).expect("updates");
        let mut rt = allot_runtime::Runtime::new(
            store,
            vec![Box::new(EventRecorder::new())],
            allot_runtime::SimTime(5000),
        );
        rt.run_due(100).expect("runs");
        let mut got: Vec<(String, String)> = rt
            .store
            .list::<CoreEvent>()
            .map(|e| {
                (
                    e.reason.clone().unwrap_or_default(),
                    e.involved_object.uid.clone().unwrap_or_default(),
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("FailedScheduling".to_string(), "uid-a".to_string()),
                ("Scheduled".to_string(), "uid-a".to_string())
            ]
        );
        // Replaying the same states records nothing new.
        let before = rt.store.resource_version();
        let pod_key = ObjectKey::new(Kind::Pod, "ns", "a");
        let mut recorder = EventRecorder::new();
        for e in rt.store.events_since(0).to_vec() {
            recorder.keys_for(&e, &rt.store);
        }
        let ctx = Context {
            now: allot_runtime::SimTime(9000),
        };
        recorder
            .reconcile(&mut rt.store, &pod_key, &ctx)
            .expect("reconciles");
        assert_eq!(rt.store.resource_version(), before);
    }

    #[test]
    fn repeats_count_on_one_event_and_replays_count_nothing() {
        let mut store = Store::new();
        let mut recorder = EventRecorder::new();
        let key = ObjectKey::new(Kind::Pod, "ns", "a");
        let mut offered = 0;
        let mut step = |store: &mut Store, recorder: &mut EventRecorder, ms: u64| {
            for e in store.events_since(offered).to_vec() {
                recorder.keys_for(&e, store);
            }
            offered = store.resource_version();
            let ctx = Context {
                now: allot_runtime::SimTime(ms),
            };
            recorder.reconcile(store, &key, &ctx).expect("reconciles");
        };
        let unschedulable =
            |message: &str| condition("PodScheduled", "False", "Unschedulable", message);
        let mut p = store.create(pod("a"), "t").expect("creates");
        step(&mut store, &mut recorder, 1_000);
        // Fails, fails differently, fails as the first time again, in separate reconciles.
        for (message, ms) in [("no cpu", 2_000), ("no memory", 3_000), ("no cpu", 12_000)] {
            p.status.conditions = vec![unschedulable(message)];
            p = store.update(p).expect("updates");
            step(&mut store, &mut recorder, ms);
        }
        // A write that does not change what the pod's state says counts nothing.
        p.metadata.labels.insert("x".into(), "y".into());
        p = store.update(p).expect("updates");
        step(&mut store, &mut recorder, 13_000);
        // Two repeats within one reconcile both count.
        for message in ["no memory", "no cpu"] {
            p.status.conditions = vec![unschedulable(message)];
            p = store.update(p).expect("updates");
        }
        step(&mut store, &mut recorder, 20_000);
        let counts = |store: &Store| {
            let mut got: Vec<(String, i32, String, String)> = store
                .list::<CoreEvent>()
                .map(|e| {
                    (
                        e.message.clone().unwrap_or_default(),
                        e.count.unwrap_or_default(),
                        e.first_timestamp.clone().unwrap_or_default(),
                        e.last_timestamp.clone().unwrap_or_default(),
                    )
                })
                .collect();
            got.sort();
            got
        };
        let expected = vec![
            (
                "no cpu".to_string(),
                3,
                "2026-01-01T00:00:02Z".to_string(),
                "2026-01-01T00:00:20Z".to_string(),
            ),
            (
                "no memory".to_string(),
                2,
                "2026-01-01T00:00:03Z".to_string(),
                "2026-01-01T00:00:20Z".to_string(),
            ),
        ];
        assert_eq!(counts(&store), expected);

        // A fresh recorder offered the whole history again (a restart's replay) counts nothing.
        let before = store.resource_version();
        let mut replay = EventRecorder::new();
        for e in store.events_since(0).to_vec() {
            replay.keys_for(&e, &store);
        }
        let ctx = Context {
            now: allot_runtime::SimTime(99_000),
        };
        replay
            .reconcile(&mut store, &key, &ctx)
            .expect("reconciles");
        assert_eq!(store.resource_version(), before);
        // Nor does one offered only the current state.
        let mut fresh = EventRecorder::new();
        let current = store.get_stored(&key).expect("pod").clone();
        let added = Event {
            event_type: EventType::Added,
            key: key.clone(),
            object: current,
            resource_version: before,
        };
        fresh.keys_for(&added, &store);
        fresh.reconcile(&mut store, &key, &ctx).expect("reconciles");
        assert_eq!(store.resource_version(), before);
        assert_eq!(counts(&store), expected);
    }

    #[test]
    fn event_names_are_stable_and_bounded() {
        let long = "p".repeat(253);
        let p = pod(&long);
        let e = PodEvent {
            type_: "Normal",
            reason: "Scheduled".into(),
            message: "m".into(),
            component: SCHEDULER,
            host: None,
        };
        let a = event_object(&p, &e, "t");
        let b = event_object(&p, &e, "u");
        assert_eq!(a.metadata.name, b.metadata.name);
        assert!(a.metadata.name.len() <= 253);
        assert_ne!(fnv64(&["a", "bc"]), fnv64(&["ab", "c"]));
    }
}
