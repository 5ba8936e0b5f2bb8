//! core/v1 Events: one way to record them, shared by every loop of `allot simulate` and
//! `allot serve`.
//!
//! Two sources, one format:
//! - a controller that decides something records it where it decides, as upstream's
//!   `record.EventRecorder` does ([`record`]: the workload controllers' `SuccessfulCreate`,
//!   `ScalingReplicaSet`, `BackoffLimitExceeded`, ...);
//! - what the scheduler, the node agents and device-taint eviction write into pods is turned
//!   into the Events their upstream components record at the same transition by the
//!   [`EventRecorder`] loop (`FailedScheduling`, `Scheduled`, the kubelet's `Pulled`, `Created`,
//!   `Started`, `Killing` and admission rejections, `DeviceTaintManagerEviction`, and allot's own
//!   DRA Events: a device of the pod turning `Unhealthy` or `Unknown`, binding conditions waited
//!   on, a binding that timed out or failed). Those loops stay free of event plumbing.
//!
//! Key design decision: an Event is named `<object>.<hash of uid, reason and message>`, so a
//! repeat (the same thing happening to the same object again) updates that Event as client-go's
//! EventCorrelator does for events without a series: one more `count`, `lastTimestamp` now, and
//! `kubectl describe` shows `(x3 over 10s)`. Recording through the store makes Events ordinary
//! objects: `kubectl get events` lists them in `serve`, `-o yaml` prints them in `simulate`. The
//! cost: repeats with different messages are separate Events (upstream's aggregation of ten
//! similar events into one is not done).

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{Event as CoreEvent, EventSource, ObjectReference, Pod};
use allot_api::meta::v1::ObjectMeta;
use allot_api::resource::v1::ResourceClaim;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Resource, Store, Stored};

/// The component kube-scheduler reports as.
pub const SCHEDULER: &str = "default-scheduler";
/// The component the kubelet reports as.
pub const KUBELET: &str = "kubelet";
/// The component device-taint eviction reports as.
pub const TAINT_EVICTION: &str = "device-taint-eviction-controller";
/// The component allot's DRA reports (binding conditions, device health) come from.
pub const DRA: &str = "allot-dra";

/// `Normal` or `Warning`, as core/v1 Events type them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum EventKind {
    /// `Normal`.
    Normal,
    /// `Warning`.
    Warning,
}

impl EventKind {
    /// The API's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            EventKind::Normal => "Normal",
            EventKind::Warning => "Warning",
        }
    }
}

/// Who records an Event: the component and, for the kubelet, its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Source<'a> {
    /// The component (`replicaset-controller`, `kubelet`, ...).
    pub component: &'a str,
    /// The node, for the kubelet.
    pub host: Option<&'a str>,
}

impl<'a> Source<'a> {
    /// A controller-manager loop or the scheduler.
    pub const fn component(component: &'a str) -> Self {
        Source {
            component,
            host: None,
        }
    }
}

/// The reference an Event's `involvedObject` holds for an object.
pub fn reference<R: Resource>(object: &R) -> ObjectReference {
    reference_of(R::KIND, object.meta())
}

/// [`reference`] from a kind and metadata.
pub fn reference_of(kind: Kind, meta: &ObjectMeta) -> ObjectReference {
    ObjectReference {
        kind: Some(kind.name().into()),
        namespace: kind.namespaced().then(|| meta.namespace.clone()),
        name: Some(meta.name.clone()),
        uid: Some(meta.uid.clone()),
        api_version: Some(kind.api_version().into()),
        resource_version: Some(meta.resource_version.clone()),
        field_path: None,
    }
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

/// The Event object for one occurrence at `now` (RFC 3339).
pub fn event_object(
    involved: &ObjectReference,
    kind: EventKind,
    reason: &str,
    message: &str,
    source: Source<'_>,
    now: &str,
) -> CoreEvent {
    let name = involved.name.as_deref().unwrap_or_default();
    let uid = involved.uid.as_deref().unwrap_or_default();
    let hash = fnv64(&[uid, reason, message]);
    // Names are at most 253 characters: the object's name is cut to leave room for the hash.
    let prefix: String = name.chars().take(253 - 17).collect();
    // Events about cluster-scoped objects live in `default`, as client-go records them.
    let namespace = involved
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "default".into());
    CoreEvent {
        api_version: "v1".into(),
        kind: "Event".into(),
        metadata: ObjectMeta {
            name: format!("{prefix}.{hash:016x}"),
            namespace,
            ..ObjectMeta::default()
        },
        involved_object: involved.clone(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        source: Some(EventSource {
            component: Some(source.component.into()),
            host: source.host.map(str::to_string),
        }),
        first_timestamp: Some(now.to_string()),
        last_timestamp: Some(now.to_string()),
        count: Some(1),
        type_: Some(kind.as_str().into()),
        event_time: None,
        series: None,
        action: None,
        related: None,
        reporting_component: Some(source.component.into()),
        reporting_instance: Some(source.host.unwrap_or_default().to_string()),
    }
}

/// Records one occurrence of an Event about `involved` at `now`: a new Event, or one more
/// `count` on the Event that already says the same thing about the same object.
pub fn record(
    store: &mut Store,
    now: SimTime,
    involved: &ObjectReference,
    kind: EventKind,
    reason: &str,
    message: &str,
    source: Source<'_>,
) -> Result<(), String> {
    let stamp = now.rfc3339();
    let object = event_object(involved, kind, reason, message, source, &stamp);
    match store.get::<CoreEvent>(&object.metadata.namespace, &object.metadata.name) {
        None => store
            .create(object, &stamp)
            .map(drop)
            .map_err(|e| e.to_string()),
        Some(existing) => {
            let mut updated = existing.clone();
            updated.count = Some(updated.count.unwrap_or(1).saturating_add(1));
            updated.last_timestamp = Some(stamp);
            updated.involved_object.resource_version = involved.resource_version.clone();
            store.update(updated).map(drop).map_err(|e| e.to_string())
        }
    }
}

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
    if disruption.is_some_and(|c| c.reason.as_deref() == Some("PreemptionByScheduler")) {
        let message = disruption
            .and_then(|c| c.message.clone())
            .unwrap_or_default();
        out.push(PodEvent::new(
            EventKind::Normal,
            "Preempted",
            message,
            SCHEDULER,
        ));
    }
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
fn pod_event_object(pod: &Pod, event: &PodEvent, now: &str) -> CoreEvent {
    event_object(
        &reference_of(Kind::Pod, &pod.metadata),
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
            component: match pod.spec.scheduler_name.as_deref() {
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

/// A pod state offered to the recorder (the store's shared copy) and whether it was the pod's
/// deletion.
type PodState = (Arc<Pod>, bool);

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
    seen: RefCell<BTreeMap<ObjectKey, Vec<PodState>>>,
    /// The Events of each pod's latest state already reconciled, by pod uid.
    last: BTreeMap<String, Vec<PodEvent>>,
    /// Uids of pods created already bound to a node.
    prebound: RefCell<BTreeSet<String>>,
    /// Claim states offered since the claim's last reconcile.
    claims: RefCell<BTreeMap<ObjectKey, Vec<ResourceClaim>>>,
    /// Per claim uid, the binding state last seen.
    bindings: BTreeMap<String, Binding>,
    /// Components whose Events are not recorded here (the real component runs and records
    /// its own: a real kube-scheduler with `--controllers=*,-scheduler`).
    silent: BTreeSet<&'static str>,
}

impl EventRecorder {
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
        for (pod, deleted) in &states {
            let uid = &pod.metadata.uid;
            let prebound = self.prebound.get_mut().contains(uid);
            let mut events = pod_events(pod, prebound, *deleted);
            events.retain(|e| !self.silent.contains(e.component));
            let previous = self.last.get(uid);
            for event in &events {
                let object = pod_event_object(pod, event, now);
                let Some(existing) = store
                    .get::<CoreEvent>(&object.metadata.namespace, &object.metadata.name)
                    .cloned()
                else {
                    store.create(object, now).map_err(|e| e.to_string())?;
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
                    updated.last_timestamp = Some(now.to_string());
                    updated.involved_object.resource_version =
                        Some(pod.metadata.resource_version.clone());
                    store.update(updated).map_err(|e| e.to_string())?;
                }
            }
            if *deleted {
                self.last.remove(uid);
                self.prebound.get_mut().remove(uid);
            } else {
                self.last.insert(uid.clone(), events);
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
        "event-recorder"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::Pod(pod) => {
                if event.event_type == EventType::Added
                    && pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty())
                {
                    self.prebound.borrow_mut().insert(pod.metadata.uid.clone());
                }
                self.seen
                    .borrow_mut()
                    .entry(event.key.clone())
                    .or_default()
                    .push((Arc::clone(pod), event.event_type == EventType::Deleted));
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
