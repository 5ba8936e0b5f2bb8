//! Namespace lifecycle, as kube-apiserver's namespace registry and NamespaceLifecycle admission
//! and kube-controller-manager's namespace controller do it:
//! - a created namespace gets the `kubernetes` finalizer in `spec.finalizers` and phase `Active`;
//! - deleting it sets `deletionTimestamp` and phase `Terminating` and keeps it;
//! - nothing new may be created in a terminating namespace (403 Forbidden);
//! - the [`NamespaceController`] deletes every namespaced object in it (objects with finalizers
//!   get a `deletionTimestamp` and stay until their finalizers are gone), reports what remains in
//!   the upstream status conditions, and when the namespace is empty removes the `kubernetes`
//!   finalizer and deletes the namespace.

use std::collections::BTreeMap;

use allot_runtime::{Action, Context, Controller};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};
use serde_json::{Value, json};

use crate::storage;

/// The finalizer the namespace controller owns.
pub const FINALIZER: &str = "kubernetes";

/// How often a terminating namespace with content left is looked at again (milliseconds).
const RECHECK_MILLIS: u64 = 1000;

/// The label upstream's Namespace defaulting and registry keep equal to the name, on create
/// and on every update (so namespace selectors can name a namespace).
pub const NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// Sets the [`NAME_LABEL`] to the namespace's name, as upstream's defaulting and the registry's
/// `Canonicalize` do on every write.
pub fn label_name(value: &mut Value) {
    let Some(name) = value.pointer("/metadata/name").and_then(Value::as_str) else {
        return;
    };
    let name = Value::String(name.to_string());
    let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let labels = metadata.entry("labels").or_insert_with(|| json!({}));
    if !labels.is_object() {
        *labels = json!({});
    }
    if let Some(labels) = labels.as_object_mut() {
        labels.insert(NAME_LABEL.into(), name);
    }
}

/// Fills in what the namespace registry sets on create: the `kubernetes` finalizer, phase
/// `Active`, the name label.
pub fn prepare_create(value: &mut Value) {
    label_name(value);
    let Some(map) = value.as_object_mut() else {
        return;
    };
    let spec = map.entry("spec").or_insert_with(|| json!({}));
    if let Some(spec) = spec.as_object_mut() {
        let finalizers = spec.entry("finalizers").or_insert_with(|| json!([]));
        if let Some(list) = finalizers.as_array_mut()
            && !list.iter().any(|f| f == FINALIZER)
        {
            list.push(Value::String(FINALIZER.into()));
        }
    }
    map.insert("status".into(), json!({"phase": "Active"}));
}

/// The namespaces upstream's NamespaceLifecycle admission never lets go.
pub fn is_protected(name: &str) -> bool {
    matches!(name, "default" | "kube-system" | "kube-public")
}

/// Whether the namespace is being deleted.
pub fn is_terminating(store: &Store, name: &str) -> bool {
    store
        .get_stored(&ObjectKey::new(Kind::Namespace, "", name))
        .is_some_and(|ns| ns.meta().deletion_timestamp.is_some())
}

fn has_spec_finalizers(object: &Value) -> bool {
    object
        .pointer("/spec/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| !f.is_empty())
}

/// An update of a namespace keeps `spec.finalizers` (upstream changes them only through the
/// `finalize` subresource, which the namespace controller stands in for here).
pub fn keep_spec_finalizers(current: &Value, new: &mut Value) {
    let kept = current.pointer("/spec/finalizers").cloned();
    let Some(map) = new.as_object_mut() else {
        return;
    };
    match kept {
        Some(finalizers) => {
            let spec = map.entry("spec").or_insert_with(|| json!({}));
            if let Some(spec) = spec.as_object_mut() {
                spec.insert("finalizers".into(), finalizers);
            }
        }
        None => {
            if let Some(spec) = map.get_mut("spec").and_then(Value::as_object_mut) {
                spec.shift_remove("finalizers");
            }
        }
    }
}

/// A `DELETE` of a namespace: when it has finalizers, the namespace marked `Terminating` to
/// store instead of deleting it.
pub fn mark_terminating(namespace: &Stored, now: &str) -> Result<Option<Stored>, String> {
    let mut value = namespace.to_json();
    if !has_spec_finalizers(&value) && namespace.meta().finalizers.is_empty() {
        return Ok(None);
    }
    if value.pointer("/metadata/deletionTimestamp").is_none() {
        value["metadata"]["deletionTimestamp"] = Value::String(now.to_string());
    }
    value["status"]["phase"] = Value::String("Terminating".into());
    storage::stored_from_json(&value).map(Some)
}

/// Whether an object whose deletion was asked for may go now: no finalizers left (for a
/// namespace, none in `spec.finalizers` either), and no grace period running (a pod marked
/// with `deletionGracePeriodSeconds`, as the scheduler marks a preemption victim, stays until
/// whoever marked it deletes it: upstream's registry deletes on update only at grace 0).
pub fn ready_to_delete(object: &Stored) -> bool {
    object.meta().deletion_timestamp.is_some()
        && object.meta().finalizers.is_empty()
        && object
            .meta()
            .deletion_grace_period_seconds
            .is_none_or(|g| g <= 0)
        && !(object.kind() == Kind::Namespace && has_spec_finalizers(&object.to_json()))
}

/// kube-controller-manager's namespace controller.
#[derive(Debug, Default)]
pub struct NamespaceController;

impl NamespaceController {
    /// A controller.
    pub fn new() -> Self {
        NamespaceController
    }
}

fn resource_name(kind: Kind) -> String {
    match crate::resources::info_of(kind) {
        Some(info) if info.group.is_empty() => info.plural.to_string(),
        Some(info) => format!("{}.{}", info.plural, info.group),
        None => kind.name().to_lowercase(),
    }
}

fn condition(type_: &str, status: bool, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": type_,
        "status": if status { "True" } else { "False" },
        "lastTransitionTime": now,
        "reason": reason,
        "message": message,
    })
}

impl Controller for NamespaceController {
    fn name(&self) -> &'static str {
        "namespace-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        // The controllers in this process write to the store directly, not through the API:
        // when one of them removes the last finalizer of an object being deleted, the object
        // goes here, as an API update would make it go.
        if event.key.kind != Kind::Namespace
            && event.event_type != EventType::Deleted
            && ready_to_delete(&event.object)
        {
            return vec![event.key.clone()];
        }
        if event.key.kind == Kind::Namespace {
            let wanted = event.event_type != EventType::Deleted
                && event.object.meta().deletion_timestamp.is_some();
            return if wanted {
                vec![event.key.clone()]
            } else {
                Vec::new()
            };
        }
        if event.key.kind.namespaced() && is_terminating(store, &event.key.namespace) {
            return vec![ObjectKey::new(
                Kind::Namespace,
                "",
                event.key.namespace.as_str(),
            )];
        }
        Vec::new()
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        _ctx: &Context,
    ) -> Result<Action, String> {
        let Some(namespace) = store.get_stored(key).cloned() else {
            return Ok(Action::Done);
        };
        if key.kind != Kind::Namespace {
            if ready_to_delete(&namespace) {
                store
                    .delete(key)
                    .map_err(|e| format!("deleting finalized {key:?}: {e}"))?;
            }
            return Ok(Action::Done);
        }
        if namespace.meta().deletion_timestamp.is_none() {
            return Ok(Action::Done);
        }
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
        let name = key.name.clone();
        let content: Vec<ObjectKey> = store
            .iter()
            .filter(|(k, _)| k.kind.namespaced() && k.namespace == name)
            .map(|(k, _)| k.clone())
            .collect();
        let mut remaining: BTreeMap<String, usize> = BTreeMap::new();
        let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
        for object_key in content {
            let Some(object) = store.get_stored(&object_key).cloned() else {
                continue;
            };
            if object.meta().finalizers.is_empty() {
                store
                    .delete(&object_key)
                    .map_err(|e| format!("deleting {object_key:?}: {e}"))?;
                continue;
            }
            *remaining.entry(resource_name(object_key.kind)).or_default() += 1;
            for f in &object.meta().finalizers {
                *finalizers.entry(f.clone()).or_default() += 1;
            }
            if object.meta().deletion_timestamp.is_none() {
                let mut marked = object;
                marked.meta_mut().deletion_timestamp = Some(now.clone());
                storage::update_stored(store, marked)
                    .map_err(|e| format!("marking {object_key:?} deleted: {e}"))?;
            }
        }
        let mut value = namespace.to_json();
        if remaining.is_empty() {
            if let Some(list) = value
                .pointer_mut("/spec/finalizers")
                .and_then(Value::as_array_mut)
            {
                list.retain(|f| f != FINALIZER);
            }
            let done = storage::stored_from_json(&value)?;
            if ready_to_delete(&done) {
                store
                    .delete(key)
                    .map_err(|e| format!("deleting namespace {name}: {e}"))?;
            } else if done != namespace {
                storage::update_stored(store, done)
                    .map_err(|e| format!("finalizing namespace {name}: {e}"))?;
            }
            return Ok(Action::Done);
        }
        let content_message = format!(
            "Some resources are remaining: {}",
            remaining
                .iter()
                .map(|(r, n)| format!("{r} has {n} resource instances"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let finalizer_message = format!(
            "Some content in the namespace has finalizers remaining: {}",
            finalizers
                .iter()
                .map(|(f, n)| format!("{f} in {n} resource instances"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let wanted = vec![
            condition(
                "NamespaceDeletionDiscoveryFailure",
                false,
                "ResourcesDiscovered",
                "All resources successfully discovered",
                &now,
            ),
            condition(
                "NamespaceDeletionGroupVersionParsingFailure",
                false,
                "ParsedGroupVersions",
                "All legacy kube types successfully parsed",
                &now,
            ),
            condition(
                "NamespaceDeletionContentFailure",
                false,
                "ContentDeleted",
                "All content successfully deleted, may be waiting on finalization",
                &now,
            ),
            condition(
                "NamespaceContentRemaining",
                true,
                "SomeResourcesRemain",
                &content_message,
                &now,
            ),
            condition(
                "NamespaceFinalizersRemaining",
                true,
                "SomeFinalizersRemain",
                &finalizer_message,
                &now,
            ),
        ];
        // Keep the transition time of conditions that did not change.
        let old: Vec<Value> = value
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let conditions: Vec<Value> = wanted
            .into_iter()
            .map(|mut c| {
                if let Some(prev) = old.iter().find(|o| o["type"] == c["type"])
                    && prev["status"] == c["status"]
                    && prev["message"] == c["message"]
                {
                    c["lastTransitionTime"] = prev["lastTransitionTime"].clone();
                }
                c
            })
            .collect();
        if conditions != old {
            value["status"]["conditions"] = Value::Array(conditions);
            let updated = storage::stored_from_json(&value)?;
            storage::update_stored(store, updated)
                .map_err(|e| format!("updating namespace {name}: {e}"))?;
        }
        Ok(Action::RequeueAfterMillis(RECHECK_MILLIS))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_runtime::SimTime;

    fn create(store: &mut Store, value: Value) {
        let object = storage::stored_from_json(&value).expect("decodes");
        store
            .create_stored(object, "2026-11-30T00:00:00Z")
            .expect("creates");
    }

    #[test]
    fn created_namespaces_are_active_and_labelled_with_their_name() {
        let mut ns =
            json!({"metadata": {"name": "team", "labels": {NAME_LABEL: "other", "a": "b"}}});
        prepare_create(&mut ns);
        assert_eq!(ns["status"]["phase"], "Active");
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(
            ns["metadata"]["labels"],
            json!({"a": "b", NAME_LABEL: "team"})
        );
        let mut bare = json!({"metadata": {"name": "x"}});
        label_name(&mut bare);
        assert_eq!(bare["metadata"]["labels"], json!({NAME_LABEL: "x"}));
    }

    #[test]
    fn updates_keep_spec_finalizers() {
        let current = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}});
        let mut dropped = json!({"metadata": {"name": "a"}});
        keep_spec_finalizers(&current, &mut dropped);
        assert_eq!(dropped["spec"]["finalizers"], json!(["kubernetes"]));
        let mut added = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["x"]}});
        keep_spec_finalizers(&json!({"metadata": {"name": "a"}}), &mut added);
        assert_eq!(added["spec"], json!({}));
    }

    #[test]
    fn terminating_namespace_empties_then_goes() {
        let mut store = Store::new();
        let mut ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}});
        prepare_create(&mut ns);
        assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
        create(&mut store, ns);
        create(
            &mut store,
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "team"}, "spec": {"containers": [{"name": "c", "image": "i"}]}}),
        );
        create(
            &mut store,
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "c", "namespace": "team", "finalizers": ["example.com/keep"]}, "spec": {}}),
        );
        let key = ObjectKey::new(Kind::Namespace, "", "team");
        let current = store.get_stored(&key).cloned().expect("namespace");
        let marked = mark_terminating(&current, "2026-11-30T00:00:01Z")
            .expect("marks")
            .expect("has finalizers");
        assert_eq!(marked.to_json()["status"]["phase"], "Terminating");
        storage::update_stored(&mut store, marked).expect("updates");
        let mut controller = NamespaceController::new();
        let ctx = Context { now: SimTime(0) };
        let action = controller
            .reconcile(&mut store, &key, &ctx)
            .expect("reconciles");
        assert_eq!(action, Action::RequeueAfterMillis(RECHECK_MILLIS));
        assert!(
            store
                .get_stored(&ObjectKey::new(Kind::Pod, "team", "p"))
                .is_none()
        );
        let claim_key = ObjectKey::new(Kind::ResourceClaim, "team", "c");
        let claim = store.get_stored(&claim_key).cloned().expect("claim stays");
        assert!(claim.meta().deletion_timestamp.is_some());
        let ns = store.get_stored(&key).expect("namespace stays").to_json();
        let conditions = ns["status"]["conditions"].as_array().expect("conditions");
        assert!(conditions.iter().any(|c| c["type"] == "NamespaceFinalizersRemaining"
            && c["message"]
                == "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"));
        assert!(conditions.iter().any(|c| c["type"] == "NamespaceContentRemaining"
            && c["message"]
                == "Some resources are remaining: resourceclaims.resource.k8s.io has 1 resource instances"));
        // Another controller removes the finalizer in the store: the claim goes, then the
        // namespace.
        let mut released = claim;
        released.meta_mut().finalizers.clear();
        storage::update_stored(&mut store, released).expect("updates");
        let event = store.events_since(0).last().cloned().expect("an event");
        assert_eq!(
            controller.keys_for(&event, &store),
            std::slice::from_ref(&claim_key)
        );
        controller
            .reconcile(&mut store, &claim_key, &ctx)
            .expect("reconciles");
        assert!(store.get_stored(&claim_key).is_none());
        controller
            .reconcile(&mut store, &key, &ctx)
            .expect("reconciles");
        assert!(store.get_stored(&key).is_none());
    }
}
