//! The Deployment controller (upstream `pkg/controller/deployment`).
//!
//! Per Deployment: claim its ReplicaSets, find the new one (the one whose template is the
//! Deployment's, ignoring `pod-template-hash`), create it when needed
//! (`<deployment>-<pod-template-hash>`, with the hash in its selector, labels and template),
//! and move replicas from the old ReplicaSets to the new one by the strategy:
//! - `RollingUpdate`: scale the new one up as far as `maxSurge` allows, then the old ones down
//!   as far as `maxUnavailable` allows (unhealthy replicas first), as upstream's
//!   `reconcileNewReplicaSet` and `reconcileOldReplicaSets`;
//! - `Recreate`: scale every old one to zero, wait until none of their pods runs, then scale
//!   the new one up.
//!
//! A change of `spec.replicas` alone (a scaling event: some active ReplicaSet's
//! `desired-replicas` annotation differs) is spread over the active ReplicaSets in proportion
//! to their sizes (upstream's `scale` with `max-replicas`). Old ReplicaSets beyond
//! `revisionHistoryLimit` are deleted once empty. The status (replicas, updated, ready,
//! available, unavailable, terminating) and the `Available` and `Progressing` conditions follow
//! upstream's messages and reasons, including `ProgressDeadlineExceeded` after
//! `progressDeadlineSeconds` without progress. Every scale is a `ScalingReplicaSet` Event.

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::apps::v1::{
    Deployment, DeploymentCondition, DeploymentStatus, DeploymentStrategyType, ReplicaSet,
};
use allot_api::core::v1::{Pod, PodTemplateSpec};
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::events::{self, EventKind, Source};
use crate::workload::{
    controlled, controlled_shared, controller_of, controller_ref, reconciled_shared,
    release_unmatched, requeue_at, scaled_value, selector_matches, selects, template_hash,
};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "deployment-controller";
/// The label a ReplicaSet's pods and selector get: the hash of its template.
pub const POD_TEMPLATE_HASH: &str = "pod-template-hash";
/// The revision of a ReplicaSet (and of its Deployment's newest).
pub const REVISION: &str = "deployment.kubernetes.io/revision";
/// Earlier revisions a ReplicaSet had.
pub const REVISION_HISTORY: &str = "deployment.kubernetes.io/revision-history";
/// The Deployment's `spec.replicas` when the ReplicaSet was last scaled.
pub const DESIRED_REPLICAS: &str = "deployment.kubernetes.io/desired-replicas";
/// `spec.replicas` plus `maxSurge` when the ReplicaSet was last scaled.
pub const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";
/// Annotations a Deployment does not hand to its ReplicaSets.
const SKIPPED_ANNOTATIONS: [&str; 6] = [
    "kubectl.kubernetes.io/last-applied-configuration",
    REVISION,
    REVISION_HISTORY,
    DESIRED_REPLICAS,
    MAX_REPLICAS,
    "deprecated.deployment.rollback.to",
];

/// The Deployment controller.
#[derive(Debug, Default)]
pub struct DeploymentController {
    /// ReplicaSets without a controller seen per namespace, which a Deployment may adopt.
    orphans: RefCell<BTreeMap<String, BTreeSet<String>>>,
}

impl DeploymentController {
    /// A controller.
    pub fn new() -> Self {
        DeploymentController::default()
    }
}

fn deployment_of(meta: &allot_api::meta::v1::ObjectMeta, namespace: &str) -> Option<ObjectKey> {
    let owner = controller_of(meta)?;
    (owner.kind == "Deployment" && owner.api_version == "apps/v1")
        .then(|| ObjectKey::new(Kind::Deployment, namespace, owner.name.as_str()))
}

impl Controller for DeploymentController {
    fn name(&self) -> &'static str {
        "deployment-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let namespace = event.key.namespace.as_str();
        match &event.object {
            Stored::Deployment(_) => vec![event.key.clone()],
            Stored::ReplicaSet(rs) => {
                if let Some(key) = deployment_of(&rs.metadata, namespace) {
                    return vec![key];
                }
                if controller_of(&rs.metadata).is_some() {
                    return Vec::new();
                }
                let mut orphans = self.orphans.borrow_mut();
                if event.event_type == EventType::Deleted {
                    if let Some(set) = orphans.get_mut(namespace) {
                        set.remove(&event.key.name);
                    }
                    return Vec::new();
                }
                let keys: Vec<ObjectKey> = store
                    .list_in::<Deployment>(namespace)
                    .filter(|d| selects(d.spec.selector.as_ref(), &rs.metadata.labels))
                    .map(Store::key_of)
                    .collect();
                if !keys.is_empty() {
                    orphans
                        .entry(namespace.to_string())
                        .or_default()
                        .insert(event.key.name.clone());
                }
                keys
            }
            // A Recreate rollout waits for the old pods to go (upstream's deletePod handler).
            Stored::Pod(pod) if event.event_type == EventType::Deleted => {
                let Some(owner) = controller_of(&pod.metadata) else {
                    return Vec::new();
                };
                if owner.kind != "ReplicaSet" {
                    return Vec::new();
                }
                store
                    .get::<ReplicaSet>(namespace, &owner.name)
                    .and_then(|rs| deployment_of(&rs.metadata, namespace))
                    .into_iter()
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::Deployment));
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
        let Some(d) = reconciled_shared::<Deployment>(store, key) else {
            return Ok(Action::Done);
        };
        self.claim_replica_sets(store, &d)?;
        let mut sync = Sync {
            store,
            now: ctx.now,
            d,
            sets: Vec::new(),
        };
        sync.load_sets();
        sync.run()
    }
}

impl DeploymentController {
    /// Adopts orphan ReplicaSets the selector matches and releases owned ones it no longer
    /// matches (upstream's `ClaimReplicaSets`).
    fn claim_replica_sets(&mut self, store: &mut Store, d: &Deployment) -> Result<(), String> {
        let namespace = d.metadata.namespace.clone();
        let Some(selector) = d.spec.selector.clone() else {
            return Ok(());
        };
        release_unmatched::<ReplicaSet>(store, &d.metadata, &selector)?;
        if d.metadata.deletion_timestamp.is_some() {
            return Ok(());
        }
        let candidates: Vec<String> = self
            .orphans
            .get_mut()
            .get(&namespace)
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default();
        for name in candidates {
            let adopt = store
                .get::<ReplicaSet>(&namespace, &name)
                .is_some_and(|rs| {
                    controller_of(&rs.metadata).is_none()
                        && rs.metadata.deletion_timestamp.is_none()
                        && selector_matches(&selector, &rs.metadata.labels)
                });
            let gone = store
                .get::<ReplicaSet>(&namespace, &name)
                .is_none_or(|rs| controller_of(&rs.metadata).is_some());
            if adopt {
                crate::workload::adopt::<ReplicaSet>(store, Kind::Deployment, &d.metadata, &name)?;
            }
            if (adopt || gone)
                && let Some(set) = self.orphans.get_mut().get_mut(&namespace)
            {
                set.remove(&name);
            }
        }
        Ok(())
    }
}

/// `maxSurge` and `maxUnavailable` resolved against the replicas (upstream's
/// `ResolveFenceposts`): surge rounds up, unavailability down, and both zero makes one pod
/// unavailable.
pub fn fenceposts(d: &Deployment) -> (i32, i32) {
    let replicas = d.spec.replicas.unwrap_or(1);
    let rolling = d.spec.strategy.rolling_update.as_ref();
    let surge = scaled_value(rolling.and_then(|r| r.max_surge.as_ref()), replicas, true);
    let unavailable = scaled_value(
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        replicas,
        false,
    );
    if surge == 0 && unavailable == 0 {
        (0, 1)
    } else {
        (surge, unavailable)
    }
}

fn is_rolling(d: &Deployment) -> bool {
    d.spec.strategy.type_ != Some(DeploymentStrategyType::Recreate)
}

/// Upstream's `MaxSurge`.
pub fn max_surge(d: &Deployment) -> i32 {
    if !is_rolling(d) {
        return 0;
    }
    fenceposts(d).0
}

/// Upstream's `MaxUnavailable`.
pub fn max_unavailable(d: &Deployment) -> i32 {
    let replicas = d.spec.replicas.unwrap_or(1);
    if !is_rolling(d) || replicas == 0 {
        return 0;
    }
    fenceposts(d).1.min(replicas)
}

fn replicas(rs: &ReplicaSet) -> i32 {
    rs.spec.replicas.unwrap_or(1)
}

fn revision(rs: &ReplicaSet) -> i64 {
    rs.metadata
        .annotations
        .get(REVISION)
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn annotation_i32(rs: &ReplicaSet, key: &str) -> Option<i32> {
    rs.metadata
        .annotations
        .get(key)
        .and_then(|v| v.parse().ok())
}

/// Upstream's `EqualIgnoreHash`. The specs are compared in place (only the metadata is copied
/// to drop the hash label): a Deployment's sync compares its template with every ReplicaSet's.
pub fn equal_ignore_hash(a: &PodTemplateSpec, b: &PodTemplateSpec) -> bool {
    let without_hash = |meta: &allot_api::meta::v1::ObjectMeta| {
        let mut meta = meta.clone();
        meta.labels.remove(POD_TEMPLATE_HASH);
        meta
    };
    a.spec == b.spec && without_hash(&a.metadata) == without_hash(&b.metadata)
}

fn creation(rs: &ReplicaSet) -> (SimTime, String) {
    (
        rs.metadata
            .creation_timestamp
            .as_deref()
            .and_then(SimTime::parse_rfc3339)
            .unwrap_or(SimTime::ZERO),
        rs.metadata.name.clone(),
    )
}

/// Sets a condition as upstream's `SetDeploymentCondition`: no change when status and reason
/// are the same; the transition time kept when only the reason changes.
fn set_condition(status: &mut DeploymentStatus, mut condition: DeploymentCondition) {
    if let Some(current) = status
        .conditions
        .iter()
        .find(|c| c.type_ == condition.type_)
    {
        if current.status == condition.status && current.reason == condition.reason {
            return;
        }
        if current.status == condition.status {
            condition
                .last_transition_time
                .clone_from(&current.last_transition_time);
        }
    }
    status.conditions.retain(|c| c.type_ != condition.type_);
    status.conditions.push(condition);
}

fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: String,
    now: SimTime,
) -> DeploymentCondition {
    let stamp = now.rfc3339();
    DeploymentCondition {
        type_: type_.into(),
        status: status.into(),
        last_update_time: Some(stamp.clone()),
        last_transition_time: Some(stamp),
        reason: reason.into(),
        message,
    }
}

fn progressing(status: &DeploymentStatus) -> Option<&DeploymentCondition> {
    status.conditions.iter().find(|c| c.type_ == "Progressing")
}

/// Upstream's `DeploymentComplete`.
fn complete(d: &Deployment, status: &DeploymentStatus) -> bool {
    let want = d.spec.replicas.unwrap_or(1);
    status.updated_replicas == want
        && status.replicas == want
        && status.available_replicas == want
        && status.observed_generation >= d.metadata.generation.unwrap_or(0)
}

/// Upstream's `DeploymentProgressing`.
fn made_progress(d: &Deployment, status: &DeploymentStatus) -> bool {
    let old = &d.status;
    let old_old = old.replicas - old.updated_replicas;
    let new_old = status.replicas - status.updated_replicas;
    status.updated_replicas > old.updated_replicas
        || new_old < old_old
        || status.ready_replicas > old.ready_replicas
        || status.available_replicas > old.available_replicas
}

/// One sync of one Deployment.
struct Sync<'s> {
    store: &'s mut Store,
    now: SimTime,
    d: Arc<Deployment>,
    /// The Deployment's ReplicaSets, kept current with every write.
    sets: Vec<Arc<ReplicaSet>>,
}

impl Sync<'_> {
    fn load_sets(&mut self) {
        let mut sets: Vec<Arc<ReplicaSet>> =
            controlled_shared::<ReplicaSet>(self.store, &self.d.metadata.uid);
        sets.sort_by_key(|rs| creation(rs));
        self.sets = sets;
    }

    fn run(&mut self) -> Result<Action, String> {
        if self.d.metadata.deletion_timestamp.is_some() {
            let new = self.find_new();
            self.sync_status(new, false)?;
            return Ok(Action::Done);
        }
        self.paused_conditions()?;
        if self.d.spec.paused || self.is_scaling_event() {
            return self.sync_scaling();
        }
        if is_rolling(&self.d) {
            self.rollout_rolling()
        } else {
            self.rollout_recreate()
        }
    }

    fn want(&self) -> i32 {
        self.d.spec.replicas.unwrap_or(1)
    }

    /// The index of the new ReplicaSet (oldest first among equals, as upstream's
    /// `FindNewReplicaSet` sorts by creation).
    fn find_new(&self) -> Option<usize> {
        self.sets
            .iter()
            .position(|rs| equal_ignore_hash(&rs.spec.template, &self.d.spec.template))
    }

    fn old(&self, new: Option<usize>) -> Vec<usize> {
        (0..self.sets.len()).filter(|i| Some(*i) != new).collect()
    }

    fn active(&self, indexes: &[usize]) -> Vec<usize> {
        indexes
            .iter()
            .copied()
            .filter(|&i| replicas(&self.sets[i]) > 0)
            .collect()
    }

    fn sum(&self, indexes: &[usize], f: impl Fn(&ReplicaSet) -> i32) -> i32 {
        indexes.iter().map(|&i| f(&self.sets[i])).sum()
    }

    fn all(&self) -> Vec<usize> {
        (0..self.sets.len()).collect()
    }

    /// Upstream's `checkPausedConditions`.
    fn paused_conditions(&mut self) -> Result<(), String> {
        if self.d.spec.progress_deadline_seconds.is_none() {
            return Ok(());
        }
        let reason = progressing(&self.d.status).map(|c| c.reason.clone());
        let paused = self.d.spec.paused;
        let update = if paused && reason.as_deref() != Some("DeploymentPaused") {
            Some(("DeploymentPaused", "Deployment is paused"))
        } else if !paused && reason.as_deref() == Some("DeploymentPaused") {
            Some(("DeploymentResumed", "Deployment is resumed"))
        } else {
            None
        };
        if let Some((reason, message)) = update {
            let c = condition("Progressing", "Unknown", reason, message.into(), self.now);
            let mut status = self.d.status.clone();
            set_condition(&mut status, c);
            self.write_status(status)?;
        }
        Ok(())
    }

    /// Whether some active ReplicaSet was last scaled for another `spec.replicas` (upstream's
    /// `isScalingEvent`).
    fn is_scaling_event(&self) -> bool {
        let new = self.find_new();
        let mut candidates = self.active(&self.old(new));
        candidates.extend(new);
        let want = self.want();
        candidates
            .iter()
            .any(|&i| annotation_i32(&self.sets[i], DESIRED_REPLICAS).is_some_and(|d| d != want))
    }

    fn sync_scaling(&mut self) -> Result<Action, String> {
        let new = self.sync_revision(false)?;
        self.scale(new)?;
        if self.d.spec.paused {
            self.cleanup(new)?;
        }
        self.sync_status(new, false)
    }

    /// Upstream's `scale`: the replica change spread over the active ReplicaSets.
    fn scale(&mut self, new: Option<usize>) -> Result<(), String> {
        let want = self.want();
        let old = self.old(new);
        let mut with_new = old.clone();
        with_new.extend(new);
        let active = self.active(&with_new);
        // FindActiveOrLatest.
        let only = match active.len() {
            0 => new.or_else(|| old.last().copied()),
            1 => Some(active[0]),
            _ => None,
        };
        if let Some(i) = only {
            if replicas(&self.sets[i]) != want {
                self.scale_set(i, want)?;
            }
            return Ok(());
        }
        if let Some(i) = new
            && self.saturated(i)
        {
            for i in self.active(&old) {
                self.scale_set(i, 0)?;
            }
            return Ok(());
        }
        if !is_rolling(&self.d) {
            return Ok(());
        }
        let total: i32 = self.sum(&active, replicas);
        let allowed = if want > 0 {
            want + max_surge(&self.d)
        } else {
            0
        };
        let to_add = allowed - total;
        let mut order = active.clone();
        if to_add > 0 {
            // Larger first; the newer among equals.
            order.sort_by(|&a, &b| {
                replicas(&self.sets[b])
                    .cmp(&replicas(&self.sets[a]))
                    .then_with(|| creation(&self.sets[b]).cmp(&creation(&self.sets[a])))
            });
        } else {
            // Larger first; the older among equals.
            order.sort_by(|&a, &b| {
                replicas(&self.sets[b])
                    .cmp(&replicas(&self.sets[a]))
                    .then_with(|| creation(&self.sets[a]).cmp(&creation(&self.sets[b])))
            });
        }
        let mut added = 0;
        let mut sizes: Vec<(usize, i32)> = Vec::new();
        for &i in &order {
            let size = replicas(&self.sets[i]);
            if to_add != 0 {
                let p = self.proportion(i, to_add, added);
                sizes.push((i, size + p));
                added += p;
            } else {
                sizes.push((i, size));
            }
        }
        if to_add != 0 && !sizes.is_empty() {
            let leftover = to_add - added;
            sizes[0].1 = (sizes[0].1 + leftover).max(0);
        }
        for (i, size) in sizes {
            self.scale_set(i, size)?;
        }
        Ok(())
    }

    /// Upstream's `IsSaturated`.
    fn saturated(&self, i: usize) -> bool {
        let rs = &self.sets[i];
        let want = self.want();
        annotation_i32(rs, DESIRED_REPLICAS) == Some(want)
            && rs.status.available_replicas == want
            && replicas(rs) == want
    }

    /// Upstream's `GetProportion` and `getReplicaSetFraction`.
    fn proportion(&self, i: usize, to_add: i32, added: i32) -> i32 {
        let rs = &self.sets[i];
        if replicas(rs) == 0 || to_add == 0 || to_add == added {
            return 0;
        }
        let fraction = if self.want() == 0 {
            -replicas(rs)
        } else {
            let deployment_replicas = self.want() + max_surge(&self.d);
            let annotated = annotation_i32(rs, MAX_REPLICAS).unwrap_or(self.d.status.replicas);
            if annotated == 0 {
                0
            } else {
                let size =
                    f64::from(replicas(rs)) * f64::from(deployment_replicas) / f64::from(annotated);
                size.round() as i32 - replicas(rs)
            }
        };
        let allowed = to_add - added;
        if to_add > 0 {
            fraction.min(allowed)
        } else {
            fraction.max(allowed)
        }
    }

    /// Upstream's `scaleReplicaSet`: the size and the replica annotations, with a
    /// `ScalingReplicaSet` Event when the size changes.
    fn scale_set(&mut self, i: usize, size: i32) -> Result<bool, String> {
        let want = self.want();
        let max = want + max_surge(&self.d);
        let rs = &self.sets[i];
        let old = replicas(rs);
        let resize = old != size;
        let annotate = annotation_i32(rs, DESIRED_REPLICAS) != Some(want)
            || annotation_i32(rs, MAX_REPLICAS) != Some(max);
        if !resize && !annotate {
            return Ok(false);
        }
        let mut copy = ReplicaSet::clone(rs);
        copy.spec.replicas = Some(size);
        copy.metadata
            .annotations
            .insert(DESIRED_REPLICAS.into(), want.to_string());
        copy.metadata
            .annotations
            .insert(MAX_REPLICAS.into(), max.to_string());
        let updated = self.store.update_shared(copy).map_err(|e| e.to_string())?;
        let name = updated.metadata.name.clone();
        self.sets[i] = updated;
        if resize {
            let direction = if old < size { "up" } else { "down" };
            let involved = events::reference(&*self.d);
            events::record(
                self.store,
                self.now,
                &involved,
                EventKind::Normal,
                "ScalingReplicaSet",
                &format!("Scaled {direction} replica set {name} from {old} to {size}"),
                Source::component(COMPONENT),
            )?;
        }
        Ok(resize)
    }

    /// Upstream's `getAllReplicaSetsAndSyncRevision`: the new ReplicaSet's revision and
    /// annotations brought up to date, or (with `create`) the new ReplicaSet created.
    fn sync_revision(&mut self, create: bool) -> Result<Option<usize>, String> {
        let new = self.find_new();
        let max_old = self
            .old(new)
            .iter()
            .map(|&i| revision(&self.sets[i]))
            .max()
            .unwrap_or(0);
        let new_revision = max_old + 1;
        match new {
            Some(i) => {
                // Copies are made only for what is written.
                let rs = &self.sets[i];
                let mut annotations = rs.metadata.annotations.clone();
                self.new_set_annotations(&mut annotations, new_revision, true);
                if annotations != rs.metadata.annotations
                    || rs.spec.min_ready_seconds != self.d.spec.min_ready_seconds
                {
                    let mut copy = ReplicaSet::clone(rs);
                    copy.metadata.annotations = annotations;
                    copy.spec.min_ready_seconds = self.d.spec.min_ready_seconds;
                    self.sets[i] = self.store.update_shared(copy).map_err(|e| e.to_string())?;
                }
                let rev = self.sets[i]
                    .metadata
                    .annotations
                    .get(REVISION)
                    .cloned()
                    .unwrap_or_default();
                let revised = self.d.metadata.annotations.get(REVISION) != Some(&rev);
                let found = self.d.spec.progress_deadline_seconds.is_some()
                    && progressing(&self.d.status).is_none();
                if revised || found {
                    let mut d = Deployment::clone(&self.d);
                    set_revision(&mut d, &rev);
                    if found {
                        let message =
                            format!("Found new replica set \"{}\"", self.sets[i].metadata.name);
                        set_condition(
                            &mut d.status,
                            condition(
                                "Progressing",
                                "True",
                                "FoundNewReplicaSet",
                                message,
                                self.now,
                            ),
                        );
                    }
                    self.d = self.store.update_shared(d).map_err(|e| e.to_string())?;
                }
                Ok(Some(i))
            }
            None if create => self.create_new(new_revision).map(Some),
            None => Ok(None),
        }
    }

    /// Upstream's `SetNewReplicaSetAnnotations`.
    fn new_set_annotations(
        &self,
        annotations: &mut BTreeMap<String, String>,
        new_revision: i64,
        exists: bool,
    ) {
        for (k, v) in &self.d.metadata.annotations {
            if SKIPPED_ANNOTATIONS.contains(&k.as_str()) {
                continue;
            }
            annotations.insert(k.clone(), v.clone());
        }
        let old_revision = annotations.get(REVISION).cloned();
        let old_number: i64 = old_revision
            .as_deref()
            .and_then(|r| r.parse().ok())
            .unwrap_or(0);
        if old_number < new_revision {
            annotations.insert(REVISION.into(), new_revision.to_string());
            if let Some(old) = old_revision.filter(|o| !o.is_empty()) {
                let history = match annotations.get(REVISION_HISTORY) {
                    Some(h) if !h.is_empty() => format!("{h},{old}"),
                    _ => old,
                };
                annotations.insert(REVISION_HISTORY.into(), history);
            }
        }
        if !exists {
            let want = self.want();
            annotations.insert(DESIRED_REPLICAS.into(), want.to_string());
            annotations.insert(MAX_REPLICAS.into(), (want + max_surge(&self.d)).to_string());
        }
    }

    /// Creates the new ReplicaSet, its size from `NewRSNewReplicas`.
    fn create_new(&mut self, new_revision: i64) -> Result<usize, String> {
        loop {
            let collisions = self.d.status.collision_count;
            let hash = template_hash(&self.d.spec.template, collisions);
            let mut template = self.d.spec.template.clone();
            template
                .metadata
                .labels
                .insert(POD_TEMPLATE_HASH.into(), hash.clone());
            let mut selector = self.d.spec.selector.clone().unwrap_or_default();
            selector
                .match_labels
                .insert(POD_TEMPLATE_HASH.into(), hash.clone());
            let mut rs = ReplicaSet::default();
            rs.metadata.name = format!("{}-{hash}", self.d.metadata.name);
            rs.metadata.namespace = self.d.metadata.namespace.clone();
            rs.metadata.owner_references = vec![controller_ref(Kind::Deployment, &self.d.metadata)];
            rs.metadata.labels = template.metadata.labels.clone();
            rs.spec.min_ready_seconds = self.d.spec.min_ready_seconds;
            rs.spec.selector = Some(selector);
            rs.spec.template = template;
            rs.spec.replicas = Some(0);
            let size = self.new_set_replicas(&rs);
            rs.spec.replicas = Some(size);
            self.new_set_annotations(&mut rs.metadata.annotations, new_revision, false);
            let stamp = self.now.rfc3339();
            match self.store.create_shared(rs.clone(), &stamp) {
                Ok(created) => {
                    let name = created.metadata.name.clone();
                    self.sets.push(created);
                    let index = self.sets.len() - 1;
                    if size > 0 {
                        let involved = events::reference(&*self.d);
                        events::record(
                            self.store,
                            self.now,
                            &involved,
                            EventKind::Normal,
                            "ScalingReplicaSet",
                            &format!("Scaled up replica set {name} from 0 to {size}"),
                            Source::component(COMPONENT),
                        )?;
                    }
                    let mut d = Deployment::clone(&self.d);
                    set_revision(&mut d, &new_revision.to_string());
                    if d.spec.progress_deadline_seconds.is_some() {
                        let message = format!("Created new replica set \"{name}\"");
                        set_condition(
                            &mut d.status,
                            condition(
                                "Progressing",
                                "True",
                                "NewReplicaSetCreated",
                                message,
                                self.now,
                            ),
                        );
                    }
                    self.d = self.store.update_shared(d).map_err(|e| e.to_string())?;
                    return Ok(index);
                }
                Err(allot_store::StoreError::AlreadyExists { .. }) => {
                    // A hash collision: the name is taken by a ReplicaSet that is not ours
                    // or has another template; count it and hash again.
                    let existing = self
                        .store
                        .get_shared::<ReplicaSet>(&rs.metadata.namespace, &rs.metadata.name)
                        .cloned();
                    if let Some(existing) = existing
                        && crate::workload::controlled_by(&existing.metadata, &self.d.metadata.uid)
                        && equal_ignore_hash(&existing.spec.template, &self.d.spec.template)
                    {
                        self.sets.push(existing);
                        return Ok(self.sets.len() - 1);
                    }
                    let mut d = Deployment::clone(&self.d);
                    d.status.collision_count = Some(collisions.unwrap_or(0).saturating_add(1));
                    self.d = self.store.update_shared(d).map_err(|e| e.to_string())?;
                }
                Err(e) => return Err(e.to_string()),
            }
        }
    }

    /// Upstream's `NewRSNewReplicas` for a ReplicaSet not in `self.sets` yet.
    fn new_set_replicas(&self, new: &ReplicaSet) -> i32 {
        let want = self.want();
        if !is_rolling(&self.d) {
            return want;
        }
        let current: i32 = self.sum(&self.all(), replicas) + replicas(new);
        let max_total = want + max_surge(&self.d);
        if current >= max_total {
            return replicas(new);
        }
        let up = (max_total - current).min(want - replicas(new));
        replicas(new) + up
    }

    fn rollout_rolling(&mut self) -> Result<Action, String> {
        let new = self
            .sync_revision(true)?
            .ok_or("the new ReplicaSet was not created")?;
        if self.reconcile_new(new)? {
            return self.sync_status(Some(new), true);
        }
        if self.reconcile_old(new)? {
            return self.sync_status(Some(new), true);
        }
        self.cleanup(Some(new))?;
        self.sync_status(Some(new), true)
    }

    fn reconcile_new(&mut self, new: usize) -> Result<bool, String> {
        let want = self.want();
        let size = replicas(&self.sets[new]);
        if size == want {
            return Ok(false);
        }
        if size > want {
            return self.scale_set(new, want);
        }
        let current: i32 = self.sum(&self.all(), replicas);
        let max_total = want + max_surge(&self.d);
        if current >= max_total {
            return Ok(false);
        }
        let up = (max_total - current).min(want - size);
        self.scale_set(new, size + up)
    }

    fn reconcile_old(&mut self, new: usize) -> Result<bool, String> {
        let old = self.active(&self.old(Some(new)));
        if self.sum(&old, replicas) == 0 {
            return Ok(false);
        }
        let all_pods = self.sum(&self.all(), replicas);
        let min_available = self.want() - max_unavailable(&self.d);
        let new_rs = &self.sets[new];
        let new_unavailable = replicas(new_rs) - new_rs.status.available_replicas;
        let max_scaled_down = all_pods - min_available - new_unavailable;
        if max_scaled_down <= 0 {
            return Ok(false);
        }
        // Unhealthy replicas of old ReplicaSets first, oldest ReplicaSet first.
        let mut cleaned = 0;
        for &i in &old {
            if cleaned >= max_scaled_down {
                break;
            }
            let rs = &self.sets[i];
            let (size, available) = (replicas(rs), rs.status.available_replicas);
            if size == 0 || size == available {
                continue;
            }
            let down = (max_scaled_down - cleaned).min(size - available);
            self.scale_set(i, size - down)?;
            cleaned += down;
        }
        // Then as far as availability allows.
        let available: i32 = self.sum(&self.all(), |rs| rs.status.available_replicas);
        let mut scaled = 0;
        if available > min_available {
            let total = available - min_available;
            for &i in &old {
                if scaled >= total {
                    break;
                }
                let size = replicas(&self.sets[i]);
                if size == 0 {
                    continue;
                }
                let down = size.min(total - scaled);
                self.scale_set(i, size - down)?;
                scaled += down;
            }
        }
        Ok(cleaned + scaled > 0)
    }

    fn rollout_recreate(&mut self) -> Result<Action, String> {
        let mut new = self.sync_revision(false)?;
        let old = self.old(new);
        let mut scaled = false;
        for i in self.active(&old) {
            scaled |= self.scale_set(i, 0)?;
        }
        if scaled {
            return self.sync_status(new, true);
        }
        if self.old_pods_running(new) {
            return self.sync_status(new, true);
        }
        if new.is_none() {
            new = self.sync_revision(true)?;
        }
        if let Some(i) = new {
            let want = self.want();
            if replicas(&self.sets[i]) != want {
                self.scale_set(i, want)?;
            }
        }
        if complete(&self.d, &self.d.status) {
            self.cleanup(new)?;
        }
        self.sync_status(new, true)
    }

    /// Upstream's `oldPodsRunning`: an old ReplicaSet still counts replicas, or owns a pod
    /// that has not finished.
    fn old_pods_running(&self, new: Option<usize>) -> bool {
        self.old(new).iter().any(|&i| {
            let rs = &self.sets[i];
            rs.status.replicas > 0
                || controlled::<Pod>(self.store, &rs.metadata.uid)
                    .iter()
                    .any(|p| !crate::workload::is_terminated(p))
        })
    }

    /// Deletes old, empty ReplicaSets beyond `revisionHistoryLimit`, lowest revision first.
    fn cleanup(&mut self, new: Option<usize>) -> Result<(), String> {
        let Some(limit) = self.d.spec.revision_history_limit else {
            return Ok(());
        };
        let mut cleanable: Vec<usize> = self
            .old(new)
            .into_iter()
            .filter(|&i| self.sets[i].metadata.deletion_timestamp.is_none())
            .collect();
        let diff = cleanable.len() as i64 - i64::from(limit);
        if diff <= 0 {
            return Ok(());
        }
        cleanable.sort_by(|&a, &b| {
            revision(&self.sets[a])
                .cmp(&revision(&self.sets[b]))
                .then_with(|| creation(&self.sets[a]).cmp(&creation(&self.sets[b])))
        });
        let mut gone = Vec::new();
        for &i in cleanable.iter().take(diff as usize) {
            let rs = &self.sets[i];
            if rs.status.replicas != 0
                || replicas(rs) != 0
                || rs.metadata.generation.unwrap_or(0) > rs.status.observed_generation
            {
                continue;
            }
            let key = Store::key_of(&**rs);
            crate::workload::delete_object(self.store, &key, self.now)?;
            gone.push(i);
        }
        // Indexes above stay valid only if nothing is removed; reload instead.
        if !gone.is_empty() {
            self.load_sets();
        }
        Ok(())
    }

    /// Upstream's `calculateStatus`.
    fn calculate_status(&self, new: Option<usize>) -> DeploymentStatus {
        let all = self.all();
        let available = self.sum(&all, |rs| rs.status.available_replicas);
        let total = self.sum(&all, replicas);
        let mut status = DeploymentStatus {
            observed_generation: self.d.metadata.generation.unwrap_or(0),
            replicas: self.sum(&all, |rs| rs.status.replicas),
            updated_replicas: new.map_or(0, |i| self.sets[i].status.replicas),
            ready_replicas: self.sum(&all, |rs| rs.status.ready_replicas),
            available_replicas: available,
            unavailable_replicas: (total - available).max(0),
            terminating_replicas: Some(
                self.sum(&all, |rs| rs.status.terminating_replicas.unwrap_or(0)),
            ),
            conditions: self.d.status.conditions.clone(),
            collision_count: self.d.status.collision_count,
        };
        let (kind, reason, message) = if available >= self.want() - max_unavailable(&self.d) {
            (
                "True",
                "MinimumReplicasAvailable",
                "Deployment has minimum availability.",
            )
        } else {
            (
                "False",
                "MinimumReplicasUnavailable",
                "Deployment does not have minimum availability.",
            )
        };
        set_condition(
            &mut status,
            condition("Available", kind, reason, message.into(), self.now),
        );
        status
    }

    /// Writes the status (upstream's `syncDeploymentStatus`, or with `rollout` its
    /// `syncRolloutStatus` with the Progressing condition) and asks to come back when the
    /// progress deadline would pass.
    fn sync_status(&mut self, new: Option<usize>, rollout: bool) -> Result<Action, String> {
        // A ReplicaSet the sync deleted may have shifted the indexes: find the new one again.
        let new = new.and_then(|_| self.find_new());
        let mut status = self.calculate_status(new);
        let mut next = None;
        if rollout {
            let deadline = self.d.spec.progress_deadline_seconds;
            if deadline.is_none() {
                status.conditions.retain(|c| c.type_ != "Progressing");
            }
            let current = progressing(&self.d.status).cloned();
            let finished = status.replicas == status.updated_replicas
                && current
                    .as_ref()
                    .is_some_and(|c| c.reason == "NewReplicaSetAvailable");
            let name = new.map(|i| self.sets[i].metadata.name.clone());
            if let Some(seconds) = deadline
                && !finished
            {
                if complete(&self.d, &status) {
                    let message = match &name {
                        Some(n) => format!("ReplicaSet \"{n}\" has successfully progressed."),
                        None => "Deployment has successfully progressed.".into(),
                    };
                    set_condition(
                        &mut status,
                        condition(
                            "Progressing",
                            "True",
                            "NewReplicaSetAvailable",
                            message,
                            self.now,
                        ),
                    );
                } else if made_progress(&self.d, &status) {
                    let message = match &name {
                        Some(n) => format!("ReplicaSet \"{n}\" is progressing."),
                        None => format!("Deployment \"{}\" is progressing.", self.d.metadata.name),
                    };
                    let mut c = condition(
                        "Progressing",
                        "True",
                        "ReplicaSetUpdated",
                        message,
                        self.now,
                    );
                    if let Some(current) = &current
                        && current.status == "True"
                    {
                        c.last_transition_time
                            .clone_from(&current.last_transition_time);
                    }
                    status.conditions.retain(|c| c.type_ != "Progressing");
                    status.conditions.push(c);
                } else if let Some(current) = &current
                    && current.reason != "NewReplicaSetAvailable"
                {
                    let from = current
                        .last_update_time
                        .as_deref()
                        .and_then(SimTime::parse_rfc3339)
                        .unwrap_or(SimTime::ZERO);
                    let due = from.plus_seconds(u64::try_from(seconds).unwrap_or(0));
                    if current.reason == "ProgressDeadlineExceeded" {
                    } else if due < self.now {
                        let message = match &name {
                            Some(n) => format!("ReplicaSet \"{n}\" has timed out progressing."),
                            None => format!(
                                "Deployment \"{}\" has timed out progressing.",
                                self.d.metadata.name
                            ),
                        };
                        set_condition(
                            &mut status,
                            condition(
                                "Progressing",
                                "False",
                                "ProgressDeadlineExceeded",
                                message,
                                self.now,
                            ),
                        );
                    } else {
                        // Come back just after the deadline to see whether it passed.
                        next = Some(due.plus_seconds(1));
                    }
                }
            }
            self.replica_failures(&mut status, new);
        }
        if status != self.d.status {
            let mut d = Deployment::clone(&self.d);
            d.status = status;
            self.d = self.store.update_shared(d).map_err(|e| e.to_string())?;
        }
        Ok(requeue_at(next, self.now))
    }

    /// Moves a ReplicaFailure condition of the ReplicaSets into the Deployment's.
    fn replica_failures(&self, status: &mut DeploymentStatus, new: Option<usize>) {
        let mut order: Vec<usize> = new.into_iter().collect();
        order.extend(self.old(new));
        let failure = order.iter().find_map(|&i| {
            self.sets[i]
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == "ReplicaFailure")
                .cloned()
        });
        match failure {
            Some(f) => set_condition(
                status,
                DeploymentCondition {
                    type_: "ReplicaFailure".into(),
                    status: f.status,
                    last_update_time: f.last_transition_time.clone(),
                    last_transition_time: f.last_transition_time,
                    reason: f.reason,
                    message: f.message,
                },
            ),
            None => status.conditions.retain(|c| c.type_ != "ReplicaFailure"),
        }
    }

    fn write_status(&mut self, status: DeploymentStatus) -> Result<(), String> {
        if status != self.d.status {
            let mut d = Deployment::clone(&self.d);
            d.status = status;
            self.d = self.store.update_shared(d).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

/// Sets the Deployment's revision annotation; whether it changed.
fn set_revision(d: &mut Deployment, revision: &str) -> bool {
    if d.metadata.annotations.get(REVISION).map(String::as_str) == Some(revision) {
        return false;
    }
    d.metadata
        .annotations
        .insert(REVISION.into(), revision.to_string());
    true
}

#[cfg(test)]
mod tests;
