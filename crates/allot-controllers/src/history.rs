//! ControllerRevisions of StatefulSets and DaemonSets (upstream `pkg/controller/history`): one
//! per distinct pod template, named `<owner>-<hash>`, numbered in the order the templates
//! were used, old ones deleted beyond `revisionHistoryLimit` unless a pod still runs them.

use allot_api::apps::v1::ControllerRevision;
use allot_api::core::v1::PodTemplateSpec;
use allot_api::meta::v1::ObjectMeta;
use allot_runtime::SimTime;
use allot_store::{Kind, Store};

use crate::workload::{controlled, controller_ref, template_hash};

/// The label a revision carries with its hash.
pub const HASH_LABEL: &str = "controller.kubernetes.io/hash";
/// The label pods carry with the name of the revision they were made from.
pub const REVISION_LABEL: &str = "controller-revision-hash";

/// The revision's data: the owner's template as a strategic merge patch that replaces it
/// (upstream's `getPatch`).
fn revision_data(template: &PodTemplateSpec) -> serde_json::Value {
    let mut value = serde_json::to_value(template).unwrap_or_default();
    if let serde_json::Value::Object(map) = &mut value {
        map.insert("$patch".into(), serde_json::Value::String("replace".into()));
    }
    serde_json::json!({"spec": {"template": value}})
}

/// The owner's revisions, lowest number first.
pub fn revisions<'a>(store: &'a Store, owner: &ObjectMeta) -> Vec<&'a ControllerRevision> {
    let mut list = controlled::<ControllerRevision>(store, &owner.uid);
    list.sort_by(|a, b| {
        a.revision
            .cmp(&b.revision)
            .then_with(|| a.metadata.name.cmp(&b.metadata.name))
    });
    list
}

/// The revision of the owner's current template: an existing one with the same template
/// (renumbered to be the newest when it is not), or a new one. Returns its name.
pub fn ensure_revision(
    store: &mut Store,
    kind: Kind,
    owner: &ObjectMeta,
    template: &PodTemplateSpec,
    selector_labels: &std::collections::BTreeMap<String, String>,
    collision_count: Option<i32>,
    now: SimTime,
) -> Result<String, String> {
    let data = revision_data(template);
    let existing = revisions(store, owner);
    let newest = existing.last().map_or(0, |r| r.revision);
    if let Some(same) = existing.iter().find(|r| r.data.as_ref() == Some(&data)) {
        let name = same.metadata.name.clone();
        if same.revision != newest {
            let mut renumbered = (*same).clone();
            renumbered.revision = newest + 1;
            store.update_shared(renumbered).map_err(|e| e.to_string())?;
        }
        return Ok(name);
    }
    let hash = template_hash(template, collision_count);
    let mut revision = ControllerRevision::default();
    revision.metadata.name = format!("{}-{hash}", owner.name);
    revision.metadata.namespace = owner.namespace.clone();
    revision.metadata.labels = selector_labels.clone();
    revision.metadata.labels.insert(HASH_LABEL.into(), hash);
    revision.metadata.owner_references = vec![controller_ref(kind, owner)];
    revision.data = Some(data);
    revision.revision = newest + 1;
    let name = revision.metadata.name.clone();
    match store.create(revision, &now.rfc3339()) {
        Ok(_) => Ok(name),
        Err(allot_store::StoreError::AlreadyExists { .. }) => {
            // A namesake with another template: upstream counts a collision and hashes again;
            // the caller's next sync does so with the count it keeps.
            Err(format!(
                "ControllerRevision {name} exists with another template"
            ))
        }
        Err(e) => Err(e.to_string()),
    }
}

/// Deletes the owner's oldest revisions beyond `limit`, except those named in `live`.
pub fn truncate(
    store: &mut Store,
    owner: &ObjectMeta,
    live: &std::collections::BTreeSet<String>,
    limit: i32,
) -> Result<(), String> {
    let dead: Vec<_> = revisions(store, owner)
        .into_iter()
        .filter(|r| !live.contains(&r.metadata.name))
        .map(Store::key_of)
        .collect();
    let surplus = dead.len().saturating_sub(limit.max(0) as usize);
    for key in dead.into_iter().take(surplus) {
        let _ = store.delete(&key);
    }
    Ok(())
}
