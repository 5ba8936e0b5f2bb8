//! core/v1 Events: one way to record them, shared by every loop of `allot simulate` and
//! `allot serve`.
//!
//! Two sources, one format (the Event objects themselves are built by the allot-events crate,
//! re-exported here: [`record`], [`event_object`], [`Occurrence`], [`reference`]):
//! - a component that decides something records it where it decides, as upstream's
//!   `record.EventRecorder` does ([`record`]: the workload controllers' `SuccessfulCreate`,
//!   `ScalingReplicaSet`, `BackoffLimitExceeded`, ...; the scheduler's `Preempted`, recorded by
//!   DefaultPreemption with the preemptor as `related`);
//! - what the scheduler, the node agents and device-taint eviction write into pods is turned
//!   into the Events their upstream components record at the same transition by the
//!   [`EventRecorder`] loop (`FailedScheduling`, `Scheduled`, the kubelet's `Pulled`, `Created`,
//!   `Started`, `Killing` and admission rejections, `DeviceTaintManagerEviction`, and allot's own
//!   DRA Events: a device of the pod turning `Unhealthy` or `Unknown`, binding conditions waited
//!   on, a binding that timed out or failed). Those loops stay free of event plumbing.
//!
//! Naming and correlation (allot-events): an Event is named `<object>.<hash of uid, reason and
//! message>`, so a repeat updates that Event (one more `count`, `lastTimestamp` now) as
//! client-go's EventCorrelator does for events without a series.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use allot_api::core::v1::{Event as CoreEvent, ObjectReference, Pod};
use allot_api::resource::v1::ResourceClaim;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

pub use allot_events::{
    DRA, EventKind, KUBELET, Occurrence, SCHEDULER, Source, TAINT_EVICTION, event_object, record,
    reference, reference_of,
};

/// One Event derived from a pod state.
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

impl PodEvent {
    fn new(type_: EventKind, reason: &str, message: String, component: &'static str) -> Self {
        PodEvent {
            type_: type_.as_str(),
            reason: reason.into(),
            message,
            component,
            host: None,
        }
    }

    fn on(mut self, node: &str) -> Self {
        self.host = Some(node.to_string());
        self
    }
}

fn image_of(container: &allot_api::core::v1::Container) -> Option<&str> {
    container.image.as_deref().filter(|i| !i.is_empty())
}

/// The Events upstream components record for one observed pod state. `prebound` says the pod
/// was created with `spec.nodeName` (the scheduler never placed it, so no `Scheduled`);
/// `deleted` that this state is the pod's last (it was deleted).
pub fn pod_events(pod: &Pod, prebound: bool, deleted: bool) -> Vec<PodEvent> {
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
        out.push(PodEvent::new(
            EventKind::Warning,
            "FailedScheduling",
            c.message.clone().unwrap_or_default(),
            SCHEDULER,
        ));
    }
    if let Some(node) = &node
        && !prebound
        && condition("PodScheduled").is_some_and(|c| c.status == "True")
    {
        out.push(PodEvent::new(
            EventKind::Normal,
            "Scheduled",
            format!(
                "Successfully assigned {}/{} to {node}",
                meta.namespace, meta.name
            ),
            SCHEDULER,
        ));
    }
    let disruption = condition("DisruptionTarget").filter(|c| c.status == "True");
    let evicted = disruption
        .is_some_and(|c| c.reason.as_deref() == Some(crate::devicetainteviction::EVICTION_REASON));
    if evicted {
        out.push(PodEvent::new(
            EventKind::Normal,
            "DeviceTaintManagerEviction",
            "Marking for deletion".into(),
            TAINT_EVICTION,
        ));
    }
    // A victim of preemption (DisruptionTarget with reason PreemptionByScheduler) gets no Event
    // here: the scheduler's DefaultPreemption records upstream's `Preempted` where it decides,
    // with the preemptor as `related` (allot-scheduler's `plugins::default_preemption`).
    let Some(node) = node else {
        return out;
    };
    let phase = pod.status.phase.as_deref();
    // The kubelet's admission rejection: phase Failed with its reason, before any container ran.
    if phase == Some("Failed")
        && !evicted
        && pod.status.start_time.is_none()
        && let Some(reason) = pod.status.reason.as_ref().filter(|r| !r.is_empty())
    {
        let message = pod.status.message.clone().unwrap_or_default();
        let message = message
            .strip_prefix("Pod was rejected: ")
            .map_or(message.clone(), str::to_string);
        out.push(PodEvent::new(EventKind::Warning, reason, message, KUBELET).on(&node));
    }
    // Containers started: the kubelet's Pulled, Created and Started for each.
    if pod.status.start_time.is_some() {
        for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
            if let Some(image) = image_of(c) {
                out.push(
                    PodEvent::new(
                        EventKind::Normal,
                        "Pulled",
                        format!("Container image \"{image}\" already present on machine"),
                        KUBELET,
                    )
                    .on(&node),
                );
            }
            out.push(
                PodEvent::new(
                    EventKind::Normal,
                    "Created",
                    format!("Created container: {}", c.name),
                    KUBELET,
                )
                .on(&node),
            );
            out.push(
                PodEvent::new(
                    EventKind::Normal,
                    "Started",
                    format!("Started container {}", c.name),
                    KUBELET,
                )
                .on(&node),
            );
        }
    }
    // A running pod deleted: the kubelet stops its containers.
    if deleted && phase == Some("Running") {
        for c in &pod.spec.containers {
            out.push(
                PodEvent::new(
                    EventKind::Normal,
                    "Killing",
                    format!("Stopping container {}", c.name),
                    KUBELET,
                )
                .on(&node),
            );
        }
    }
    if phase == Some("Running") {
        out.extend(device_health_events(pod, &node));
    }
    out
}

/// allot's Events for devices of a running pod that the kubelet reports `Unhealthy` or
/// `Unknown` (its containers' `allocatedResourcesStatus`), one per device and health.
fn device_health_events(pod: &Pod, node: &str) -> Vec<PodEvent> {
    let mut out: BTreeSet<(String, String, String)> = BTreeSet::new();
    let statuses = pod
        .status
        .container_statuses
        .iter()
        .chain(pod.status.init_container_statuses.iter())
        .filter_map(|s| s.as_array())
        .flatten();
    for status in statuses {
        let Some(list) = status
            .get("allocatedResourcesStatus")
            .and_then(|l| l.as_array())
        else {
            continue;
        };
        for entry in list {
            let name = entry.get("name").and_then(|n| n.as_str()).unwrap_or("");
            for resource in entry
                .get("resources")
                .and_then(|r| r.as_array())
                .into_iter()
                .flatten()
            {
                let health = resource.get("health").and_then(|h| h.as_str());
                let id = resource
                    .get("resourceID")
                    .and_then(|h| h.as_str())
                    .unwrap_or("");
                let reason = match health {
                    Some("Unhealthy") => "DeviceUnhealthy",
                    Some("Unknown") => "DeviceHealthUnknown",
                    _ => continue,
                };
                out.insert((
                    reason.to_string(),
                    id.to_string(),
                    name.trim_start_matches("claim:").to_string(),
                ));
            }
        }
    }
    out.into_iter()
        .map(|(reason, id, claim)| {
            let health = if reason == "DeviceUnhealthy" {
                "Unhealthy"
            } else {
                "Unknown"
            };
            PodEvent::new(
                EventKind::Warning,
                &reason,
                format!("device {id} of claim {claim} is {health}"),
                KUBELET,
            )
            .on(node)
        })
        .collect()
}

/// Whether resourceVersion `a` is newer than `b` (both decimal, as the store's are).
fn newer(a: &str, b: &str) -> bool {
    match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(a), Ok(b)) => a > b,
        (Ok(_), Err(_)) => true,
        _ => false,
    }
}

/// The Events a pod state yields, as Event objects at `now`, for [`EventRecorder`].
fn pod_event_object(
    involved: &ObjectReference,
    scheduler_name: Option<&str>,
    event: &PodEvent,
    now: &str,
) -> CoreEvent {
    event_object(
        involved,
        if event.type_ == "Warning" {
            EventKind::Warning
        } else {
            EventKind::Normal
        },
        &event.reason,
        &event.message,
        Source {
            // The scheduler reports as the pod's profile (upstream: one recorder per
            // profile, named after its schedulerName).
            component: match scheduler_name {
                Some(name) if event.component == SCHEDULER && !name.is_empty() => name,
                _ => event.component,
            },
            host: event.host.as_deref(),
        },
        now,
    )
}

/// A claim's DRA binding state, as the recorder last saw it: per pod it is reserved for and
/// not bound yet, the devices whose binding conditions are not all True; and the binding
/// failure condition that is True, if one is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Binding {
    waiting: BTreeMap<String, Vec<String>>,
    failure: Option<String>,
}

/// A pod state offered to the recorder, reduced when it is offered to what its Events need. The
/// recorder reconciles after the other loops due at the same instant, so holding the store's
/// copies would keep every state of every pod of a big run alive until then.
#[derive(Debug)]
struct PodState {
    /// The Events the state yields (those of silenced components left out).
    events: Vec<PodEvent>,
    /// The pod at this state, as its Events refer to it.
    involved: ObjectReference,
    scheduler_name: Option<String>,
    /// Whether the state was the pod's deletion.
    deleted: bool,
}

/// A fixed hasher for the recorder's per-pod tables: looked up by key for every pod event,
/// never iterated.
type Fixed = foldhash::fast::FixedState;

/// The loop that turns pod (and claim) states into Events.
///
/// It keeps every pod state it was offered (not only the latest), so a short-lived state
/// (unschedulable, then scheduled a moment later; marked for eviction, then deleted) still gets
/// its Event. Recording is idempotent: the Event's `involvedObject.resourceVersion` is the pod
/// state last counted, and a state no newer than that (replaying the log after a restart)
/// counts nothing; an Event is only counted again on a transition between two states this
/// recorder saw, so a restart that offers only the current state never counts it twice.
#[derive(Debug, Default)]
pub struct EventRecorder {
    /// Pod states offered since the pod's last reconcile, oldest first, and whether each was
    /// the pod's deletion.
    seen: RefCell<HashMap<ObjectKey, Vec<PodState>, Fixed>>,
    /// The Events of each pod's latest state already reconciled, by pod uid.
    last: HashMap<String, Vec<PodEvent>, Fixed>,
    /// Uids of pods created already bound to a node.
    prebound: RefCell<HashSet<String, Fixed>>,
    /// Claim states offered since the claim's last reconcile.
    claims: RefCell<BTreeMap<ObjectKey, Vec<ResourceClaim>>>,
    /// Per claim uid, the binding state last seen.
    bindings: BTreeMap<String, Binding>,
    /// Components whose Events are not recorded here (the real component runs and records
    /// its own: a real kube-scheduler with `--controllers=*,-scheduler`).
    silent: BTreeSet<&'static str>,
}

impl EventRecorder {
    /// The controller's name.
    pub const NAME: &'static str = "event-recorder";

    /// A recorder.
    pub fn new() -> Self {
        EventRecorder::default()
    }

    /// A recorder that leaves out the pod Events of `component` (one of [`SCHEDULER`],
    /// [`KUBELET`], [`TAINT_EVICTION`]).
    pub fn without(mut self, component: &'static str) -> Self {
        self.silent.insert(component);
        self
    }

    fn reconcile_pod(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: &str,
    ) -> Result<(), String> {
        let states = self.seen.get_mut().remove(key).unwrap_or_default();
        for state in states {
            let uid = state.involved.uid.as_deref().unwrap_or_default();
            let resource_version = state
                .involved
                .resource_version
                .as_deref()
                .unwrap_or_default();
            let previous = self.last.get(uid);
            for event in &state.events {
                // Recorded for the previous state already: upstream records on transitions,
                // so not again (nor again after the Event object was deleted).
                if previous.is_some_and(|p| p.contains(event)) {
                    continue;
                }
                let object =
                    pod_event_object(&state.involved, state.scheduler_name.as_deref(), event, now);
                let Some(existing) =
                    store.get::<CoreEvent>(&object.metadata.namespace, &object.metadata.name)
                else {
                    store
                        .create_shared(object, now)
                        .map_err(|e| e.to_string())?;
                    continue;
                };
                // A repeat is an Event the previous state seen did not yield, from a state
                // newer than the one the Event last counted.
                let repeated = previous.is_some()
                    && newer(
                        resource_version,
                        existing
                            .involved_object
                            .resource_version
                            .as_deref()
                            .unwrap_or_default(),
                    );
                if repeated {
                    let mut updated = existing.clone();
                    updated.count = Some(updated.count.unwrap_or(1).saturating_add(1));
                    updated.last_timestamp = Some(now.to_string());
                    updated.involved_object.resource_version = Some(resource_version.to_string());
                    store.update_shared(updated).map_err(|e| e.to_string())?;
                }
            }
            if state.deleted {
                self.last.remove(uid);
                self.prebound.get_mut().remove(uid);
            } else {
                self.last.insert(uid.to_string(), state.events);
            }
        }
        Ok(())
    }

    /// allot's binding-condition Events, from claim states: a pod starts waiting on a
    /// device's binding conditions, or stops being reserved without being bound (a binding
    /// failure condition, or the binding timeout).
    fn reconcile_claim(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<(), String> {
        let states = self.claims.get_mut().remove(key).unwrap_or_default();
        for claim in &states {
            let uid = claim.metadata.uid.clone();
            let before = self.bindings.get(&uid).cloned().unwrap_or_default();
            let mut after = binding_state(store, claim);
            if after.failure.is_none() {
                after.failure = before.failure.clone();
            }
            for (pod_name, devices) in &after.waiting {
                if before.waiting.get(pod_name) == Some(devices) || devices.is_empty() {
                    continue;
                }
                let Some(pod) = store.get::<Pod>(&key.namespace, pod_name) else {
                    continue;
                };
                let message = format!(
                    "waiting for the binding conditions of claim {}: {}",
                    claim.metadata.name,
                    devices.join(", ")
                );
                let involved = reference_of(Kind::Pod, &pod.metadata);
                record(
                    store,
                    now,
                    &involved,
                    EventKind::Normal,
                    "BindingConditionsPending",
                    &message,
                    Source::component(SCHEDULER),
                )?;
            }
            for (pod_name, devices) in &before.waiting {
                if after.waiting.contains_key(pod_name) || devices.is_empty() {
                    continue;
                }
                let Some(pod) = store.get::<Pod>(&key.namespace, pod_name) else {
                    continue;
                };
                if pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
                    continue;
                }
                let (reason, message) = match &after.failure {
                    Some(what) => (
                        "BindingFailed",
                        format!(
                            "binding of claim {} failed: {what}; the scheduler tries again",
                            claim.metadata.name
                        ),
                    ),
                    None => (
                        "BindingTimeout",
                        format!(
                            "the binding conditions of claim {} were not met in time ({}); the scheduler tries again",
                            claim.metadata.name,
                            devices.join(", ")
                        ),
                    ),
                };
                let involved = reference_of(Kind::Pod, &pod.metadata);
                record(
                    store,
                    now,
                    &involved,
                    EventKind::Warning,
                    reason,
                    &message,
                    Source::component(SCHEDULER),
                )?;
            }
            if after.waiting.is_empty() {
                self.bindings.remove(&uid);
            } else {
                self.bindings.insert(uid, after);
            }
        }
        Ok(())
    }
}

/// Per pod a claim is reserved for and that is not bound, the devices of the claim whose
/// binding conditions are not all True (`device driver/pool/name [cond ...]`; empty once they
/// all are); and the first binding failure condition that is True.
fn binding_state(store: &Store, claim: &ResourceClaim) -> Binding {
    let mut out = Binding::default();
    let Some(allocation) = &claim.status.allocation else {
        return out;
    };
    let mut pending = Vec::new();
    let mut any = false;
    for r in &allocation.devices.results {
        if r.binding_conditions.is_empty() {
            continue;
        }
        any = true;
        let status = claim
            .status
            .devices
            .iter()
            .find(|d| d.driver == r.driver && d.pool == r.pool && d.device == r.device);
        let is_true = |c: &String| {
            status.is_some_and(|s| {
                s.conditions
                    .iter()
                    .any(|sc| &sc.type_ == c && sc.status == "True")
            })
        };
        if out.failure.is_none()
            && let Some(failed) = r.binding_failure_conditions.iter().find(|c| is_true(c))
        {
            out.failure = Some(format!(
                "device {}/{}/{} has condition {failed}=True",
                r.driver, r.pool, r.device
            ));
        }
        let missing: Vec<&str> = r
            .binding_conditions
            .iter()
            .filter(|c| !is_true(c))
            .map(String::as_str)
            .collect();
        if !missing.is_empty() {
            pending.push(format!(
                "device {}/{}/{} [{}]",
                r.driver,
                r.pool,
                r.device,
                missing.join(" ")
            ));
        }
    }
    if !any {
        return out;
    }
    for consumer in &claim.status.reserved_for {
        if consumer.resource != "pods" {
            continue;
        }
        let unbound = store
            .get::<Pod>(&claim.metadata.namespace, &consumer.name)
            .is_some_and(|p| p.spec.node_name.as_deref().is_none_or(str::is_empty));
        if unbound {
            out.waiting.insert(consumer.name.clone(), pending.clone());
        }
    }
    out
}

impl Controller for EventRecorder {
    fn name(&self) -> &'static str {
        Self::NAME
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::Pod(pod) => {
                if event.event_type == EventType::Added
                    && pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
                {
                    self.prebound.borrow_mut().insert(pod.metadata.uid.clone());
                }
                let deleted = event.event_type == EventType::Deleted;
                let prebound = self.prebound.borrow().contains(&pod.metadata.uid);
                let mut events = pod_events(pod, prebound, deleted);
                events.retain(|e| !self.silent.contains(e.component));
                let state = PodState {
                    events,
                    involved: reference_of(Kind::Pod, &pod.metadata),
                    scheduler_name: pod.spec.scheduler_name.clone(),
                    deleted,
                };
                self.seen
                    .borrow_mut()
                    .entry(event.key.clone())
                    .or_default()
                    .push(state);
                vec![event.key.clone()]
            }
            Stored::ResourceClaim(claim) => {
                let interesting = claim.status.allocation.as_ref().is_some_and(|a| {
                    a.devices
                        .results
                        .iter()
                        .any(|r| !r.binding_conditions.is_empty())
                });
                let was_binding = self.claims.borrow().contains_key(&event.key);
                if !interesting && !was_binding && !self.watching_claim(&claim.metadata.uid) {
                    return Vec::new();
                }
                let mut claim = ResourceClaim::clone(claim);
                if event.event_type == EventType::Deleted {
                    claim.status.allocation = None;
                }
                self.claims
                    .borrow_mut()
                    .entry(event.key.clone())
                    .or_default()
                    .push(claim);
                vec![event.key.clone()]
            }
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::Pod));
        subscriptions.add(Topic::Kind(Kind::ResourceClaim));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        match key.kind {
            Kind::Pod => self.reconcile_pod(store, key, &ctx.now.rfc3339())?,
            Kind::ResourceClaim => self.reconcile_claim(store, key, ctx.now)?,
            _ => {}
        }
        Ok(Action::Done)
    }
}

impl EventRecorder {
    fn watching_claim(&self, uid: &str) -> bool {
        self.bindings.contains_key(uid)
    }
}

#[cfg(test)]
mod tests;
