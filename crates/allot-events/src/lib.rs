//! core/v1 Events: the one way allot's components build and record them (the workload
//! controllers, the EventRecorder loop of allot-controllers, the scheduler's preemption).
//!
//! Key design decision: an Event is named `<object>.<hash of uid, reason and message>`, so a
//! repeat (the same thing happening to the same object again) updates that Event as client-go's
//! EventCorrelator does for events without a series: one more `count`, `lastTimestamp` now, and
//! `kubectl describe` shows `(x3 over 10s)`. Recording through the store makes Events ordinary
//! objects: `kubectl get events` lists them in `serve`, `-o yaml` prints them in `simulate`. The
//! cost: repeats with different messages are separate Events (upstream's aggregation of ten
//! similar events into one is not done).
//!
//! A crate of its own so that the scheduler, which cannot depend on the controllers, records
//! its Events (upstream's `Eventf(regarding, related, type, reason, action, note)`) where it
//! decides, with the same names and correlation as every other component.

#![deny(missing_docs)]

use allot_api::core::v1::{Event as CoreEvent, EventSource, ObjectReference};
use allot_api::meta::v1::ObjectMeta;
use allot_runtime::SimTime;
use allot_store::{Kind, Resource, Store};

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

/// The reference an Event's `involvedObject` (or `related`) holds for an object.
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
    let mut add = |byte: u8| {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    };
    for part in parts {
        for &byte in part.as_bytes() {
            add(byte);
        }
        add(0);
    }
    hash
}

/// One thing that happened, as an Event says it: upstream's `Eventf(regarding, related,
/// eventtype, reason, action, note)` plus who reports it.
#[derive(Debug, Clone, Copy)]
pub struct Occurrence<'a> {
    /// The object the Event is about (`involvedObject`).
    pub involved: &'a ObjectReference,
    /// A second object it concerns (`related`: the preemptor of a preemption victim).
    pub related: Option<&'a ObjectReference>,
    /// `Normal` or `Warning`.
    pub kind: EventKind,
    /// The reason.
    pub reason: &'a str,
    /// What was done (`action`, e.g. `Preempting`).
    pub action: Option<&'a str>,
    /// The message.
    pub message: &'a str,
    /// Who reports it.
    pub source: Source<'a>,
}

impl<'a> Occurrence<'a> {
    /// An occurrence with neither `related` nor `action`.
    pub fn new(
        involved: &'a ObjectReference,
        kind: EventKind,
        reason: &'a str,
        message: &'a str,
        source: Source<'a>,
    ) -> Self {
        Occurrence {
            involved,
            related: None,
            kind,
            reason,
            action: None,
            message,
            source,
        }
    }

    /// With `related` set.
    pub fn related(mut self, related: &'a ObjectReference) -> Self {
        self.related = Some(related);
        self
    }

    /// With `action` set.
    pub fn action(mut self, action: &'a str) -> Self {
        self.action = Some(action);
        self
    }

    /// The Event object for this occurrence at `now` (RFC 3339).
    pub fn to_event(&self, now: &str) -> CoreEvent {
        let involved = self.involved;
        let name = involved.name.as_deref().unwrap_or_default();
        let uid = involved.uid.as_deref().unwrap_or_default();
        let hash = fnv64(&[uid, self.reason, self.message]);
        // Names are at most 253 characters: the object's name is cut to leave room for the hash.
        const ROOM: usize = 253 - 17;
        // A name of at most ROOM bytes has at most ROOM characters.
        let cut = (name.len() > ROOM)
            .then(|| name.char_indices().nth(ROOM))
            .flatten();
        let prefix = cut.map_or(name, |(end, _)| &name[..end]);
        let mut event_name = String::with_capacity(prefix.len() + 17);
        event_name.push_str(prefix);
        event_name.push('.');
        for shift in (0..16).rev() {
            let digit = ((hash >> (4 * shift)) & 0xf) as u8;
            event_name.push(char::from(if digit < 10 {
                b'0' + digit
            } else {
                b'a' + digit - 10
            }));
        }
        // Events about cluster-scoped objects live in `default`, as client-go records them.
        let namespace = involved
            .namespace
            .clone()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".into());
        let source = self.source;
        CoreEvent {
            api_version: "v1".into(),
            kind: "Event".into(),
            metadata: ObjectMeta {
                name: event_name,
                namespace,
                ..ObjectMeta::default()
            },
            involved_object: involved.clone(),
            reason: Some(self.reason.into()),
            message: Some(self.message.into()),
            source: Some(EventSource {
                component: Some(source.component.into()),
                host: source.host.map(str::to_string),
            }),
            first_timestamp: Some(now.to_string()),
            last_timestamp: Some(now.to_string()),
            count: Some(1),
            type_: Some(self.kind.as_str().into()),
            event_time: None,
            series: None,
            action: self.action.map(str::to_string),
            related: self.related.cloned(),
            reporting_component: Some(source.component.into()),
            reporting_instance: Some(source.host.unwrap_or_default().to_string()),
        }
    }

    /// Records this occurrence at `now`: a new Event, or one more `count` on the Event that
    /// already says the same thing about the same object.
    pub fn record(&self, store: &mut Store, now: SimTime) -> Result<(), String> {
        let stamp = now.rfc3339();
        let object = self.to_event(&stamp);
        match store.get::<CoreEvent>(&object.metadata.namespace, &object.metadata.name) {
            None => store
                .create_shared(object, &stamp)
                .map(drop)
                .map_err(|e| e.to_string()),
            Some(existing) => {
                let mut updated = existing.clone();
                updated.count = Some(updated.count.unwrap_or(1).saturating_add(1));
                updated.last_timestamp = Some(stamp);
                updated.involved_object.resource_version = self.involved.resource_version.clone();
                store
                    .update_shared(updated)
                    .map(drop)
                    .map_err(|e| e.to_string())
            }
        }
    }
}

/// The Event object for one occurrence at `now` (RFC 3339), without `related` or `action`.
pub fn event_object(
    involved: &ObjectReference,
    kind: EventKind,
    reason: &str,
    message: &str,
    source: Source<'_>,
    now: &str,
) -> CoreEvent {
    Occurrence::new(involved, kind, reason, message, source).to_event(now)
}

/// Records one occurrence of an Event about `involved` at `now` (without `related` or
/// `action`; [`Occurrence::record`] sets them).
pub fn record(
    store: &mut Store,
    now: SimTime,
    involved: &ObjectReference,
    kind: EventKind,
    reason: &str,
    message: &str,
    source: Source<'_>,
) -> Result<(), String> {
    Occurrence::new(involved, kind, reason, message, source).record(store, now)
}

#[cfg(test)]
mod tests;
