//! The ReplicaSet controller (upstream `pkg/controller/replicaset`).
//!
//! Per ReplicaSet: claim its pods (adopt orphans its selector matches, release pods it owns that
//! no longer match), create pods from the template when fewer than `spec.replicas` are active
//! (at most [`BURST_REPLICAS`] per sync, named `<rs>-<5 characters>` by the store's
//! `generateName` counter, with a controller reference), delete the surplus in upstream's order
//! ([`deletion_order`]), and write `status` (replicas, fully labeled, ready, available after
//! `minReadySeconds`, terminating, observed generation). Each create and delete is a
//! `SuccessfulCreate`/`SuccessfulDelete` Event on the ReplicaSet. Upstream's expectations are not
//! needed: a reconcile sees its own writes in the store at once.

use std::cell::RefCell;
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use allot_api::apps::v1::ReplicaSet;
use allot_api::core::v1::Pod;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::events::{self, EventKind, Source};
use crate::workload::{
    adopt, available_at, controlled, controlled_shared, controller_key, controller_of, earliest,
    is_active, is_available, is_ready, is_terminating, owned_pod, pods_prefix, reconciled,
    record_pod_created, release_unmatched, requeue_at, selector_matches, selects,
};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "replicaset-controller";
/// The most pods one sync creates or deletes (upstream's `BurstReplicas`).
pub const BURST_REPLICAS: usize = 500;
/// The annotation that ranks pods for deletion (`controller.kubernetes.io/pod-deletion-cost`).
pub const POD_DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The ReplicaSet controller.
#[derive(Debug, Default)]
pub struct ReplicaSetController {
    /// Pods without a controller seen per namespace, which a ReplicaSet may adopt.
    orphans: RefCell<BTreeMap<String, BTreeSet<String>>>,
}

impl ReplicaSetController {
    /// A controller.
    pub fn new() -> Self {
        ReplicaSetController::default()
    }
}

/// The ReplicaSets in `namespace` whose selector matches a pod's labels.
fn matching_sets(store: &Store, pod: &Pod) -> Vec<ObjectKey> {
    store
        .list_in::<ReplicaSet>(&pod.metadata.namespace)
        .filter(|rs| selects(rs.spec.selector.as_ref(), &pod.metadata.labels))
        .map(Store::key_of)
        .collect()
}

impl Controller for ReplicaSetController {
    fn name(&self) -> &'static str {
        "replicaset-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::ReplicaSet(_) => vec![event.key.clone()],
            Stored::Pod(pod) => match controller_of(&pod.metadata) {
                Some(_) => controller_key(&pod.metadata, &event.key.namespace, Kind::ReplicaSet)
                    .into_iter()
                    .collect(),
                None => {
                    let namespace = &event.key.namespace;
                    let mut orphans = self.orphans.borrow_mut();
                    if event.event_type == EventType::Deleted || !is_active(pod) {
                        if let Some(set) = orphans.get_mut(namespace) {
                            set.remove(&event.key.name);
                        }
                        return Vec::new();
                    }
                    let sets = matching_sets(store, pod);
                    if !sets.is_empty() {
                        orphans
                            .entry(namespace.clone())
                            .or_default()
                            .insert(event.key.name.clone());
                    }
                    sets
                }
            },
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::ReplicaSet));
        subscriptions.add(Topic::Kind(Kind::Pod));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(rs) = reconciled::<ReplicaSet>(store, key) else {
            return Ok(Action::Done);
        };
        self.claim_pods(store, &rs)?;
        // The store's shared copies: the pods are read while the store changes.
        let pods = controlled_shared::<Pod>(store, &rs.metadata.uid);
        let active: Vec<&Pod> = pods.iter().map(|p| &**p).filter(|p| is_active(p)).collect();
        let mut failure = None;
        if rs.metadata.deletion_timestamp.is_none() {
            failure = manage_replicas(store, &rs, &active, ctx.now)?;
        }
        let pods = controlled::<Pod>(store, &rs.metadata.uid);
        let (status, next) = calculate_status(&rs, &pods, failure.as_deref(), ctx.now);
        if status != rs.status {
            store
                .modify::<ReplicaSet, _>(&key.namespace, &key.name, |r| r.status = status)
                .map_err(|e| e.to_string())?;
        }
        Ok(requeue_at(next, ctx.now))
    }
}

impl ReplicaSetController {
    /// Adopts orphans the selector matches and releases owned pods it no longer matches
    /// (upstream's `ClaimPods`). A ReplicaSet being deleted adopts nothing.
    fn claim_pods(&mut self, store: &mut Store, rs: &ReplicaSet) -> Result<(), String> {
        let namespace = rs.metadata.namespace.clone();
        let Some(selector) = rs.spec.selector.clone() else {
            return Ok(());
        };
        release_unmatched::<Pod>(store, &rs.metadata, &selector)?;
        if rs.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let candidates: Vec<String> = self
            .orphans
            .get_mut()
            .get(&namespace)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for name in candidates {
            let Some(pod) = store.get::<Pod>(&namespace, &name) else {
                self.forget_orphan(&namespace, &name);
                continue;
            };
            if controller_of(&pod.metadata).is_some() || !is_active(pod) {
                self.forget_orphan(&namespace, &name);
                continue;
            }
            if !selector_matches(&selector, &pod.metadata.labels) {
                continue;
            }
            adopt::<Pod>(store, Kind::ReplicaSet, &rs.metadata, &name)?;
            self.forget_orphan(&namespace, &name);
        }
        Ok(())
    }

    fn forget_orphan(&mut self, namespace: &str, name: &str) {
        if let Some(set) = self.orphans.get_mut().get_mut(namespace) {
            set.remove(name);
        }
    }
}

/// Creates or deletes pods so that `spec.replicas` are active. Returns the message of a
/// failed create, for the `ReplicaFailure` condition.
fn manage_replicas(
    store: &mut Store,
    rs: &ReplicaSet,
    active: &[&Pod],
    now: SimTime,
) -> Result<Option<String>, String> {
    let want = rs.spec.replicas.unwrap_or(1).max(0) as usize;
    let involved = events::reference(rs);
    let source = Source::component(COMPONENT);
    if active.len() < want {
        let count = (want - active.len()).min(BURST_REPLICAS);
        let stamp = now.rfc3339();
        for _ in 0..count {
            let pod = owned_pod(
                Kind::ReplicaSet,
                &rs.metadata,
                &rs.spec.template,
                &pods_prefix(&rs.metadata.name),
            );
            let created = crate::workload::admit_priority(store, pod)
                .and_then(|pod| store.create_shared(pod, &stamp).map_err(|e| e.to_string()));
            match created {
                Ok(created) => record_pod_created(store, now, &involved, source, &created)?,
                Err(err) => {
                    let message = format!("Error creating: {err}");
                    events::record(
                        store,
                        now,
                        &involved,
                        EventKind::Warning,
                        "FailedCreate",
                        &message,
                        source,
                    )?;
                    return Ok(Some(message));
                }
            }
        }
    } else if active.len() > want {
        let count = (active.len() - want).min(BURST_REPLICAS);
        let related = related_pods(store, rs);
        let victims = deletion_order(active, &related, now);
        for pod in victims.into_iter().take(count) {
            let key = Store::key_of(pod);
            crate::workload::delete_object(store, &key, now)?;
            events::record(
                store,
                now,
                &involved,
                EventKind::Normal,
                "SuccessfulDelete",
                &format!("Deleted pod: {}", pod.metadata.name),
                source,
            )?;
        }
    }
    Ok(None)
}

/// The active pods of every ReplicaSet with the same controller as `rs` (a Deployment's
/// ReplicaSets), or of `rs` alone: what ranks pods by how many share their node (upstream's
/// `getIndirectlyRelatedPods`).
fn related_pods(store: &Store, rs: &ReplicaSet) -> Vec<Pod> {
    let sets: Vec<String> = match controller_of(&rs.metadata) {
        Some(owner) => controlled::<ReplicaSet>(store, &owner.uid)
            .into_iter()
            .map(|r| r.metadata.uid.clone())
            .collect(),
        None => vec![rs.metadata.uid.clone()],
    };
    sets.iter()
        .flat_map(|uid| controlled::<Pod>(store, uid))
        .filter(|p| is_active(p))
        .cloned()
        .collect()
}

/// The pods to delete first, as upstream's `ActivePodsWithRanks` sorts them (with
/// `LogarithmicScaleDown`): unassigned before assigned; Pending before Unknown before Running;
/// not ready before ready; lower `pod-deletion-cost` first; more related pods on the same node
/// first; ready for less time first (in powers of two); more container restarts first; newer
/// first (in powers of two); then by uid.
pub fn deletion_order<'a>(pods: &[&'a Pod], related: &[Pod], now: SimTime) -> Vec<&'a Pod> {
    let mut on_node: BTreeMap<&str, usize> = BTreeMap::new();
    for p in related {
        if let Some(node) = p.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            *on_node.entry(node).or_default() += 1;
        }
    }
    let rank = |p: &Pod| {
        p.spec
            .node_name
            .as_deref()
            .and_then(|n| on_node.get(n).copied())
            .unwrap_or(0)
    };
    let mut sorted: Vec<&Pod> = pods.to_vec();
    sorted.sort_by(|a, b| compare_for_deletion(a, b, rank(a), rank(b), now));
    sorted
}

fn phase_rank(pod: &Pod) -> u8 {
    match pod.status.phase.as_deref() {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 3,
    }
}

fn deletion_cost(pod: &Pod) -> i64 {
    pod.metadata
        .annotations
        .get(POD_DELETION_COST)
        .and_then(|v| v.parse::<i32>().ok())
        .map_or(0, i64::from)
}

fn max_restarts(pod: &Pod) -> i64 {
    pod.status
        .container_statuses
        .as_ref()
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.get("restartCount").and_then(|r| r.as_i64()))
        .max()
        .unwrap_or(0)
}

/// `floor(log2(now - t))` with the duration in nanoseconds, -1 for none (upstream's
/// logarithmic ranking).
fn log_rank(t: SimTime, now: SimTime) -> i64 {
    let nanos = now.0.saturating_sub(t.0).saturating_mul(1_000_000);
    if nanos == 0 {
        -1
    } else {
        i64::from(63 - nanos.leading_zeros() as i32)
    }
}

fn creation(pod: &Pod) -> Option<SimTime> {
    pod.metadata
        .creation_timestamp
        .as_deref()
        .and_then(SimTime::parse_rfc3339)
}

fn compare_for_deletion(a: &Pod, b: &Pod, rank_a: usize, rank_b: usize, now: SimTime) -> Ordering {
    let assigned = |p: &Pod| p.spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
    assigned(a)
        .cmp(&assigned(b))
        .then_with(|| phase_rank(a).cmp(&phase_rank(b)))
        .then_with(|| is_ready(a).cmp(&is_ready(b)))
        .then_with(|| deletion_cost(a).cmp(&deletion_cost(b)))
        .then_with(|| rank_b.cmp(&rank_a))
        .then_with(|| {
            match (
                crate::workload::ready_since(a),
                crate::workload::ready_since(b),
            ) {
                (Some(ra), Some(rb)) if ra != rb => log_rank(ra, now)
                    .cmp(&log_rank(rb, now))
                    .then_with(|| a.metadata.uid.cmp(&b.metadata.uid)),
                _ => Ordering::Equal,
            }
        })
        .then_with(|| max_restarts(b).cmp(&max_restarts(a)))
        .then_with(|| match (creation(a), creation(b)) {
            (Some(ca), Some(cb)) if ca != cb => log_rank(ca, now)
                .cmp(&log_rank(cb, now))
                .then_with(|| a.metadata.uid.cmp(&b.metadata.uid)),
            _ => Ordering::Equal,
        })
        .then_with(|| a.metadata.uid.cmp(&b.metadata.uid))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// The status a sync writes (upstream's `calculateStatus`), and when a ready pod turns
/// available.
fn calculate_status(
    rs: &ReplicaSet,
    pods: &[&Pod],
    failure: Option<&str>,
    now: SimTime,
) -> (allot_api::apps::v1::ReplicaSetStatus, Option<SimTime>) {
    let mut status = rs.status.clone();
    let min_ready = rs.spec.min_ready_seconds;
    let template_labels = &rs.spec.template.metadata.labels;
    let active: Vec<&Pod> = pods.iter().copied().filter(|p| is_active(p)).collect();
    status.replicas = active.len() as i32;
    status.fully_labeled_replicas = active
        .iter()
        .filter(|p| {
            template_labels
                .iter()
                .all(|(k, v)| p.metadata.labels.get(k) == Some(v))
        })
        .count() as i32;
    status.ready_replicas = active.iter().filter(|p| is_ready(p)).count() as i32;
    status.available_replicas = active
        .iter()
        .filter(|p| is_available(p, min_ready, now))
        .count() as i32;
    status.terminating_replicas = Some(pods.iter().filter(|p| is_terminating(p)).count() as i32);
    status.observed_generation = rs.metadata.generation.unwrap_or(0);
    let next = active
        .iter()
        .map(|p| available_at(p, min_ready, now))
        .fold(None, earliest);
    let stamp = now.rfc3339();
    match failure {
        Some(message) => {
            if !status
                .conditions
                .iter()
                .any(|c| c.type_ == "ReplicaFailure")
            {
                status
                    .conditions
                    .push(allot_api::apps::v1::ReplicaSetCondition {
                        type_: "ReplicaFailure".into(),
                        status: "True".into(),
                        last_transition_time: Some(stamp),
                        reason: "FailedCreate".into(),
                        message: message.to_string(),
                    });
            }
        }
        None => status.conditions.retain(|c| c.type_ != "ReplicaFailure"),
    }
    (status, next)
}

#[cfg(test)]
mod tests;
