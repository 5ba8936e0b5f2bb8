//! The StatefulSet controller (upstream `pkg/controller/statefulset`).
//!
//! Pods have stable identities: `<set>-<ordinal>` for ordinals `start..start+replicas`, with
//! the labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index` and
//! `controller-revision-hash`, hostname `<set>-<ordinal>` and subdomain `serviceName`. Each
//! `volumeClaimTemplate` gives every pod a PersistentVolumeClaim `<template>-<set>-<ordinal>`
//! (created before the pod, kept by default; binding them is the volume plugins' work) and the
//! pod a volume naming it. `OrderedReady` creates ordinals in order, each only once the ones
//! before it run and are ready, and removes the highest first, one at a time; `Parallel` does
//! both at once. Failed or succeeded pods are deleted and made again. A `RollingUpdate`
//! replaces pods of an older revision from the highest ordinal down to the partition, at most
//! `maxUnavailable` at a time; `OnDelete` leaves that to the user. Templates are kept as
//! ControllerRevisions; the status counts replicas, ready, available, current and updated pods.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::apps::v1::{
    PersistentVolumeClaimRetentionPolicyType, PodManagementPolicyType, StatefulSet,
    StatefulSetStatus, StatefulSetUpdateStrategyType,
};
use allot_api::core::v1::{PersistentVolumeClaim, Pod};
use allot_api::meta::v1::OwnerReference;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, Kind, ObjectKey, Store, Stored};

use crate::events::{self, EventKind, Source};
use crate::history::{REVISION_LABEL, ensure_revision, truncate};
use crate::workload::{
    available_at, controlled, controller_key, earliest, is_available, is_ready, is_terminated,
    is_terminating, owned_pod, reconciled, requeue_at, scaled_value,
};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "statefulset-controller";
/// The label with a pod's name.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// The label with a pod's ordinal.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";

/// The StatefulSet controller.
#[derive(Debug, Default)]
pub struct StatefulSetController;

impl StatefulSetController {
    /// A controller.
    pub fn new() -> Self {
        StatefulSetController
    }
}

impl Controller for StatefulSetController {
    fn name(&self) -> &'static str {
        "statefulset-controller"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::StatefulSet(_) => vec![event.key.clone()],
            Stored::Pod(pod) => {
                controller_key(&pod.metadata, &event.key.namespace, Kind::StatefulSet)
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::StatefulSet));
        subscriptions.add(Topic::Kind(Kind::Pod));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(set) = reconciled::<StatefulSet>(store, key) else {
            return Ok(Action::Done);
        };
        sync(store, &set, ctx.now)
    }
}

/// `<set>-<ordinal>`.
pub fn pod_name(set: &str, ordinal: i32) -> String {
    format!("{set}-{ordinal}")
}

/// `<template>-<set>-<ordinal>`.
pub fn claim_name(template: &str, set: &str, ordinal: i32) -> String {
    format!("{template}-{set}-{ordinal}")
}

/// The ordinal of a pod of the set, from its name.
fn ordinal_of(set: &str, pod: &str) -> Option<i32> {
    pod.strip_prefix(set)?
        .strip_prefix('-')?
        .parse::<i32>()
        .ok()
        .filter(|o| *o >= 0)
}

fn revision_of(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .get(REVISION_LABEL)
        .map_or("", String::as_str)
}

fn healthy(pod: &Pod) -> bool {
    pod.status.phase.as_deref() == Some("Running")
        && is_ready(pod)
        && pod.metadata.deletion_timestamp.is_none()
}

fn sync(store: &mut Store, set: &StatefulSet, now: SimTime) -> Result<Action, String> {
    let selector_labels = set
        .spec
        .selector
        .as_ref()
        .map(|s| s.match_labels.clone())
        .unwrap_or_default();
    let update_revision = ensure_revision(
        store,
        Kind::StatefulSet,
        &set.metadata,
        &set.spec.template,
        &selector_labels,
        set.status.collision_count,
        now,
    )?;
    let current_revision = if set.status.current_revision.is_empty() {
        update_revision.clone()
    } else {
        set.status.current_revision.clone()
    };
    let name = set.metadata.name.clone();
    let start = set.spec.ordinals.as_ref().map_or(0, |o| o.start.max(0));
    let replicas = set.spec.replicas.unwrap_or(1).max(0);
    let pods: BTreeMap<i32, Pod> = controlled::<Pod>(store, &set.metadata.uid)
        .into_iter()
        .filter_map(|p| ordinal_of(&name, &p.metadata.name).map(|o| (o, p.clone())))
        .collect();
    let mut next = None;
    if set.metadata.deletion_timestamp.is_none() {
        next = manage(
            store,
            set,
            &pods,
            start,
            replicas,
            &update_revision,
            &current_revision,
            now,
        )?;
    }
    let pods: Vec<Pod> = controlled::<Pod>(store, &set.metadata.uid)
        .into_iter()
        .cloned()
        .collect();
    let mut status = StatefulSetStatus {
        observed_generation: set.metadata.generation.unwrap_or(0),
        replicas: 0,
        ready_replicas: 0,
        current_replicas: 0,
        updated_replicas: 0,
        current_revision: current_revision.clone(),
        update_revision: update_revision.clone(),
        collision_count: set.status.collision_count,
        conditions: set.status.conditions.clone(),
        available_replicas: 0,
    };
    for pod in pods.iter().filter(|p| !is_terminated(p)) {
        status.replicas += 1;
        if is_ready(pod) {
            status.ready_replicas += 1;
        }
        if is_available(pod, set.spec.min_ready_seconds, now) {
            status.available_replicas += 1;
        }
        next = earliest(next, available_at(pod, set.spec.min_ready_seconds, now));
        if revision_of(pod) == current_revision {
            status.current_replicas += 1;
        }
        if revision_of(pod) == update_revision {
            status.updated_replicas += 1;
        }
    }
    // A finished rollout makes the update revision current.
    if status.updated_replicas == replicas && status.ready_replicas == replicas {
        status.current_revision = update_revision.clone();
        status.current_replicas = status.updated_replicas;
    }
    if status != set.status {
        store
            .modify::<StatefulSet, _>(&set.metadata.namespace, &name, |s| {
                s.status = status.clone()
            })
            .map_err(|e| e.to_string())?;
    }
    let live: BTreeSet<String> = pods
        .iter()
        .map(|p| revision_of(p).to_string())
        .chain([
            status.current_revision.clone(),
            status.update_revision.clone(),
        ])
        .collect();
    truncate(
        store,
        &set.metadata,
        &live,
        set.spec.revision_history_limit.unwrap_or(10),
    )?;
    Ok(requeue_at(next, now))
}

/// Creates, recreates, deletes and updates pods; returns when to come back.
#[allow(clippy::too_many_arguments)]
fn manage(
    store: &mut Store,
    set: &StatefulSet,
    pods: &BTreeMap<i32, Pod>,
    start: i32,
    replicas: i32,
    update_revision: &str,
    current_revision: &str,
    now: SimTime,
) -> Result<Option<SimTime>, String> {
    let parallel = set.spec.pod_management_policy == Some(PodManagementPolicyType::Parallel);
    let end = start + replicas;
    let involved = events::reference(set);
    let source = Source::component(COMPONENT);
    let name = &set.metadata.name;
    let mut next = None;
    // Replicas in ordinal order.
    for ordinal in start..end {
        match pods.get(&ordinal) {
            None => {
                // New pods take the update revision, unless a partition keeps them current.
                let partition = partition(set);
                let revision = if ordinal < partition && !set.status.current_revision.is_empty() {
                    current_revision
                } else {
                    update_revision
                };
                create_pod(store, set, ordinal, revision, now)?;
                if !parallel {
                    return Ok(next);
                }
            }
            Some(pod) if is_terminated(pod) => {
                let (reason, kind, verb) = if pod.status.phase.as_deref() == Some("Failed") {
                    ("RecreatingFailedPod", EventKind::Warning, "failed")
                } else {
                    ("RecreatingTerminatedPod", EventKind::Normal, "terminated")
                };
                events::record(
                    store,
                    now,
                    &involved,
                    kind,
                    reason,
                    &format!(
                        "StatefulSet {}/{name} is recreating {verb} Pod {}",
                        set.metadata.namespace, pod.metadata.name
                    ),
                    source,
                )?;
                delete_pod(store, set, pod, now)?;
                if !parallel {
                    return Ok(next);
                }
            }
            Some(pod) => {
                if !parallel && !healthy(pod) {
                    return Ok(next);
                }
                if !parallel && !is_available(pod, set.spec.min_ready_seconds, now) {
                    return Ok(earliest(
                        next,
                        available_at(pod, set.spec.min_ready_seconds, now),
                    ));
                }
                next = earliest(next, available_at(pod, set.spec.min_ready_seconds, now));
            }
        }
    }
    // Condemned pods, highest ordinal first.
    let condemned: Vec<&Pod> = pods
        .iter()
        .rev()
        .filter(|(o, _)| **o < start || **o >= end)
        .map(|(_, p)| p)
        .collect();
    for pod in &condemned {
        if pod.metadata.deletion_timestamp.is_some() {
            if !parallel {
                return Ok(next);
            }
            continue;
        }
        delete_pod(store, set, pod, now)?;
        retain_or_delete_claims(store, set, pod, now)?;
        if !parallel {
            return Ok(next);
        }
    }
    if set.spec.update_strategy.type_ == Some(StatefulSetUpdateStrategyType::OnDelete) {
        return Ok(next);
    }
    // Rolling update: highest ordinal first, down to the partition.
    let max_unavailable = set
        .spec
        .update_strategy
        .rolling_update
        .as_ref()
        .and_then(|r| r.max_unavailable.as_ref())
        .map_or(1, |m| scaled_value(Some(m), replicas, false).max(1));
    let unavailable = (start..end)
        .filter(|o| {
            pods.get(o)
                .is_none_or(|p| !is_available(p, set.spec.min_ready_seconds, now))
        })
        .count() as i32;
    let mut budget = max_unavailable - unavailable;
    let partition = partition(set);
    for ordinal in (start..end).rev() {
        if ordinal < partition || budget <= 0 {
            break;
        }
        let Some(pod) = pods.get(&ordinal) else {
            continue;
        };
        if revision_of(pod) == update_revision || is_terminating(pod) {
            continue;
        }
        delete_pod(store, set, pod, now)?;
        budget -= 1;
    }
    Ok(next)
}

fn partition(set: &StatefulSet) -> i32 {
    set.spec
        .update_strategy
        .rolling_update
        .as_ref()
        .and_then(|r| r.partition)
        .unwrap_or(0)
}

/// The claims a pod of the set uses, with their names.
fn claims_for(set: &StatefulSet, ordinal: i32) -> Vec<PersistentVolumeClaim> {
    let selector = set
        .spec
        .selector
        .as_ref()
        .map(|s| s.match_labels.clone())
        .unwrap_or_default();
    set.spec
        .volume_claim_templates
        .iter()
        .map(|t| {
            let mut claim = PersistentVolumeClaim {
                metadata: t.metadata.clone(),
                spec: t.spec.clone(),
                ..PersistentVolumeClaim::default()
            };
            claim.metadata.name = claim_name(&t.metadata.name, &set.metadata.name, ordinal);
            claim.metadata.namespace = set.metadata.namespace.clone();
            claim.metadata.uid.clear();
            claim.metadata.resource_version.clear();
            for (k, v) in &selector {
                claim.metadata.labels.insert(k.clone(), v.clone());
            }
            allot_api::defaults::workloads::default_persistent_volume_claim(&mut claim);
            claim
        })
        .collect()
}

fn create_pod(
    store: &mut Store,
    set: &StatefulSet,
    ordinal: i32,
    revision: &str,
    now: SimTime,
) -> Result<(), String> {
    let involved = events::reference(set);
    let source = Source::component(COMPONENT);
    let name = pod_name(&set.metadata.name, ordinal);
    let stamp = now.rfc3339();
    let mut volumes: Vec<serde_json::Value> = match &set.spec.template.spec.volumes {
        Some(serde_json::Value::Array(list)) => list.clone(),
        _ => Vec::new(),
    };
    for claim in claims_for(set, ordinal) {
        let template_name = claim
            .metadata
            .name
            .strip_suffix(&format!("-{name}"))
            .unwrap_or_default()
            .to_string();
        volumes.retain(|v| v.get("name").and_then(|n| n.as_str()) != Some(template_name.as_str()));
        volumes.push(serde_json::json!({
            "name": template_name,
            "persistentVolumeClaim": {"claimName": claim.metadata.name},
        }));
        if store
            .get::<PersistentVolumeClaim>(&claim.metadata.namespace, &claim.metadata.name)
            .is_some()
        {
            continue;
        }
        let mut claim = claim;
        let retention = set.spec.persistent_volume_claim_retention_policy.as_ref();
        if retention.and_then(|r| r.when_deleted.as_ref())
            == Some(&PersistentVolumeClaimRetentionPolicyType::Delete)
        {
            claim.metadata.owner_references.push(OwnerReference {
                api_version: "apps/v1".into(),
                kind: "StatefulSet".into(),
                name: set.metadata.name.clone(),
                uid: set.metadata.uid.clone(),
                controller: None,
                block_owner_deletion: None,
            });
        }
        let claim_name = claim.metadata.name.clone();
        store
            .create_shared(claim, &stamp)
            .map_err(|e| e.to_string())?;
        events::record(
            store,
            now,
            &involved,
            EventKind::Normal,
            "SuccessfulCreate",
            &format!(
                "create Claim {claim_name} Pod {name} in StatefulSet {} success",
                set.metadata.name
            ),
            source,
        )?;
    }
    let mut pod = owned_pod(Kind::StatefulSet, &set.metadata, &set.spec.template, "");
    pod.metadata.name = name.clone();
    let mut pod = crate::workload::admit_priority(store, pod)?;
    let labels = &mut pod.metadata.labels;
    labels.insert(POD_NAME_LABEL.into(), name.clone());
    labels.insert(POD_INDEX_LABEL.into(), ordinal.to_string());
    labels.insert(REVISION_LABEL.into(), revision.to_string());
    pod.spec.hostname = Some(serde_json::Value::String(name.clone()));
    if !set.spec.service_name.is_empty() {
        pod.spec.subdomain = Some(serde_json::Value::String(set.spec.service_name.clone()));
    }
    if !volumes.is_empty() {
        pod.spec.volumes = Some(serde_json::Value::Array(volumes));
    }
    store
        .create_shared(pod, &stamp)
        .map_err(|e| e.to_string())?;
    events::record(
        store,
        now,
        &involved,
        EventKind::Normal,
        "SuccessfulCreate",
        &format!(
            "create Pod {name} in StatefulSet {} successful",
            set.metadata.name
        ),
        source,
    )
}

fn delete_pod(store: &mut Store, set: &StatefulSet, pod: &Pod, now: SimTime) -> Result<(), String> {
    crate::workload::delete_object(store, &Store::key_of(pod), now)?;
    events::record(
        store,
        now,
        &events::reference(set),
        EventKind::Normal,
        "SuccessfulDelete",
        &format!(
            "delete Pod {} in StatefulSet {} successful",
            pod.metadata.name, set.metadata.name
        ),
        Source::component(COMPONENT),
    )
}

/// A scaled-down pod's claims go with it when `whenScaled` is `Delete`.
fn retain_or_delete_claims(
    store: &mut Store,
    set: &StatefulSet,
    pod: &Pod,
    now: SimTime,
) -> Result<(), String> {
    let delete = set
        .spec
        .persistent_volume_claim_retention_policy
        .as_ref()
        .and_then(|r| r.when_scaled.as_ref())
        == Some(&PersistentVolumeClaimRetentionPolicyType::Delete);
    if !delete {
        return Ok(());
    }
    let Some(ordinal) = ordinal_of(&set.metadata.name, &pod.metadata.name) else {
        return Ok(());
    };
    for claim in claims_for(set, ordinal) {
        let key = ObjectKey::new(
            Kind::PersistentVolumeClaim,
            claim.metadata.namespace.as_str(),
            claim.metadata.name.as_str(),
        );
        crate::workload::delete_object(store, &key, now)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
