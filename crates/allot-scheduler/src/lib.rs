//! kube-scheduler as a reconcile loop over allot's store: the scheduling framework of
//! kube-scheduler 1.37 ([`framework`]) running a profile of in-tree plugins ([`plugins`]), its
//! queue, the binding cycle (Reserve, Permit, PreBind with DRA binding conditions, Bind), and
//! `PodScheduled=False` conditions that say why, in kube-scheduler's words plus allot's
//! explanation per plugin.
//!
//! Key design decision: plugins are written as upstream's (one module each, their own state in
//! the cycle state, the framework knowing none by name), and speed comes from the framework,
//! not from special cases: nodes are walked over a compact per-node summary kept from store
//! events, each plugin says when a summary alone proves its verdict, and the expensive device
//! allocator runs after scoring, best node first (see [`framework`]). The cost: a plugin that
//! wants the fast path has to state its summary verdicts, and a property test has to hold them
//! equal to its filter.
//!
//! Node choice is upstream's weighted sum of normalized scores. Where upstream picks among
//! equally good nodes at random, allot takes the node whose name sorts first, so that every run
//! gives the same answer. Pods wait in an active queue ordered by the profile's QueueSort
//! plugin (PrioritySort: higher priority first, then the pod queued earlier, then by namespace
//! and name); gated pods (SchedulingGates) are not tried until their gates are gone.
//!
//! PreBind waiting for binding conditions is kept in memory (pod → node, deadline and cycle
//! state); a reconcile after the deadline, or after a claim reports a binding failure
//! condition, undoes the reservation and allocation and schedules again, preferring other
//! nodes.

#![deny(missing_docs)]

pub mod cache;
mod conditions;
pub mod extended;
pub mod filters;
pub mod framework;
pub mod labels;
pub mod nodealloc;
pub mod plugins;
pub mod resources;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::Pod;
use allot_dra::Features;
use allot_runtime::{Action, Context, Controller, SimTime};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, StoreError, Stored};

pub use cache::{NodeInfo, NodeSummary, is_assigned, is_terminal};
pub use plugins::dynamic_resources::RESERVED_FOR_MAX;

use crate::cache::Cache;
use crate::framework::{
    ActiveQueue, BindCtx, Ctx, Cycle, CycleOutcome, Explanation, Framework, PluginSet, PodInfo,
    PreFilterCtx, Profile, QueuedPodInfo,
};

/// The name pods use in `spec.schedulerName` for this scheduler.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// `PodScheduled` reason of a pod no node fits (upstream's `v1.PodReasonUnschedulable`).
const POD_UNSCHEDULABLE: &str = "Unschedulable";
/// `PodScheduled` reason of a pod whose scheduling attempt failed with an error
/// (upstream's `v1.PodReasonSchedulerError`).
const POD_SCHEDULER_ERROR: &str = "SchedulerError";

/// How the scheduler behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfig {
    /// DRA feature gates.
    pub features: Features,
    /// How long PreBind waits for binding conditions (upstream's DynamicResources
    /// `bindingTimeout`, default 600 seconds).
    pub binding_timeout_seconds: u64,
    /// Percentage of nodes to find feasible before scoring; 0 means upstream's adaptive
    /// default (50% minus 1% per 125 nodes, at least 5%, at least 100 nodes).
    pub percentage_of_nodes_to_score: u32,
    /// The `spec.schedulerName` this scheduler serves (an empty name also matches).
    pub scheduler_name: String,
    /// DRAExtendedResource: extended resources served by DeviceClasses ([`extended`]).
    pub extended_resource: bool,
    /// DRANodeAllocatableResources: devices consuming node resources ([`nodealloc`]).
    pub node_allocatable_resources: bool,
    /// The profile; `None` means kube-scheduler's default profile (see
    /// [`Profile::default_profile`]) with `scheduler_name` and `percentage_of_nodes_to_score`.
    pub profile: Option<Profile>,
    /// The allocator's budget per node and attempt, allot's counterpart of upstream's
    /// DynamicResources `filterTimeout` (counted in search steps, not time).
    pub allocation_budget: allot_dra::Budget,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            features: Features::default(),
            binding_timeout_seconds: 600,
            percentage_of_nodes_to_score: 0,
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
            extended_resource: true,
            node_allocatable_resources: true,
            profile: None,
            allocation_budget: allot_dra::Budget::default(),
        }
    }
}

impl SchedulerConfig {
    /// The profile this configuration runs.
    pub fn profile(&self) -> Profile {
        self.profile.clone().unwrap_or_else(|| {
            let mut profile = Profile::default_profile(&self.scheduler_name);
            profile.percentage_of_nodes_to_score = self.percentage_of_nodes_to_score;
            profile
        })
    }

    fn plugin_features(&self) -> plugins::Features {
        plugins::Features {
            dra: plugins::dynamic_resources::Config {
                features: self.features,
                binding_timeout_seconds: self.binding_timeout_seconds,
                extended_resource: self.extended_resource,
                node_allocatable_resources: self.node_allocatable_resources,
                allocation_budget: self.allocation_budget,
            },
        }
    }
}

/// Why a scheduling step failed for a reason other than "does not fit".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchedulerError {
    /// A store write failed.
    #[error("{action} {key}: {source}")]
    Store {
        /// What the scheduler was doing.
        action: &'static str,
        /// The object.
        key: String,
        /// The store's answer.
        source: Box<StoreError>,
    },
}

/// A pod waiting in PreBind.
struct Waiting {
    node: String,
    cycle: Cycle,
}

/// A remembered scheduling failure (an equivalence class of pods, valid for one cache epoch).
#[derive(Debug, Clone)]
struct Failure {
    epoch: u64,
    message: String,
    explanations: Vec<(usize, Explanation)>,
    processed: usize,
    rejected_by: PluginSet,
}

/// The scheduler controller.
pub struct Scheduler {
    config: SchedulerConfig,
    framework: Framework,
    cache: Cache,
    /// Pods waiting for an attempt.
    active: ActiveQueue,
    /// Pods the last attempt found unschedulable, with the plugins that rejected them.
    unschedulable: BTreeMap<ObjectKey, PluginSet>,
    /// Pods a PreEnqueue plugin keeps out of the queue.
    gated: BTreeSet<ObjectKey>,
    /// Pods in PreBind.
    waiting: BTreeMap<ObjectKey, Waiting>,
    /// Nodes where a pod's binding failed; tried last next time.
    avoid: BTreeMap<ObjectKey, BTreeSet<String>>,
    /// Pods waiting for an object (a claim) to appear or change.
    waiters: BTreeMap<ObjectKey, BTreeSet<ObjectKey>>,
    /// The resourceVersion of the scheduler's own last write of each pod.
    /// (A resourceVersion that is not a number is kept as `None`, which matches no event.)
    own_writes: BTreeMap<ObjectKey, Option<u64>>,
    /// Failures by pod signature.
    failures: BTreeMap<String, Failure>,
    /// The plugins interested in assigned pods appearing or changing labels.
    assigned_pod_interest: PluginSet,
    /// The plugins interested in namespace changes.
    namespace_interest: PluginSet,
    /// The last time formatted by [`Scheduler::stamp`].
    stamp_memo: Option<(SimTime, String)>,
    /// The node PostFilter nominated for the pod being marked not scheduled.
    nominate: Option<String>,
    /// Pods preemption marked for deletion, with the time their grace period ends.
    terminating: BTreeMap<ObjectKey, SimTime>,
    /// A nominated pod was bound or went away: the next pod event wakes every unschedulable pod.
    nomination_ended: std::cell::Cell<bool>,
}

impl Scheduler {
    /// A scheduler running the configured profile.
    ///
    /// # Panics
    ///
    /// When the configuration's profile names an unknown plugin or has invalid arguments
    /// (the default profile always builds; see [`Scheduler::try_new`]).
    pub fn new(config: SchedulerConfig) -> Self {
        match Self::try_new(config) {
            Ok(s) => s,
            Err(e) => panic!("invalid scheduler profile: {e}"),
        }
    }

    /// A scheduler running the configured profile, or why the profile is invalid.
    pub fn try_new(config: SchedulerConfig) -> Result<Self, String> {
        let features = config.plugin_features();
        let framework = Framework::new(&config.profile(), &mut |plugin| {
            plugins::build(plugin, &features)
        })?;
        let mut assigned_pod_interest = 0;
        let mut namespace_interest = 0;
        for i in 0..64 {
            let events = framework.events_for(1 << i);
            if events.assigned_pod_added_or_relabelled {
                assigned_pod_interest |= 1 << i;
            }
            if events.namespace_changed {
                namespace_interest |= 1 << i;
            }
        }
        Ok(Scheduler {
            config,
            framework,
            cache: Cache::default(),
            active: ActiveQueue::new(),
            unschedulable: BTreeMap::new(),
            gated: BTreeSet::new(),
            waiting: BTreeMap::new(),
            avoid: BTreeMap::new(),
            waiters: BTreeMap::new(),
            own_writes: BTreeMap::new(),
            failures: BTreeMap::new(),
            assigned_pod_interest,
            namespace_interest,
            stamp_memo: None,
            nominate: None,
            terminating: BTreeMap::new(),
            nomination_ended: std::cell::Cell::new(false),
        })
    }

    /// `now` in RFC 3339 (formatted once per simulated instant).
    fn stamp(&mut self, now: SimTime) -> String {
        match &self.stamp_memo {
            Some((at, text)) if *at == now => text.clone(),
            _ => {
                let text = now.rfc3339();
                self.stamp_memo = Some((now, text.clone()));
                text
            }
        }
    }

    /// Pods the scheduler currently considers unschedulable.
    pub fn unschedulable_pods(&self) -> impl Iterator<Item = &ObjectKey> {
        self.unschedulable.keys()
    }

    /// The configuration.
    pub fn config(&self) -> &SchedulerConfig {
        &self.config
    }

    /// How many nodes to find feasible among `all` (upstream `numFeasibleNodesToFind`).
    pub fn nodes_to_find(&self, all: usize) -> usize {
        self.framework.nodes_to_find(all)
    }

    fn is_mine(&self, pod: &Pod) -> bool {
        match pod.spec.scheduler_name.as_deref() {
            None | Some("") => true,
            Some(name) => name == self.framework.scheduler_name(),
        }
    }

    fn wants(&self, pod: &Pod) -> bool {
        pod.spec.node_name.as_deref().is_none_or(str::is_empty)
            && !is_terminal(pod)
            && pod.metadata.deletion_timestamp.is_none()
            && self.is_mine(pod)
    }

    fn all_unschedulable(&self) -> Vec<ObjectKey> {
        self.unschedulable.keys().cloned().collect()
    }

    /// Unschedulable pods rejected by one of `plugins`.
    fn unschedulable_by(&self, plugins: PluginSet) -> Vec<ObjectKey> {
        if plugins == 0 {
            return Vec::new();
        }
        self.unschedulable
            .iter()
            .filter(|(_, by)| **by & plugins != 0)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// Records (or, with `None`, drops) the node preemption nominated for a pod.
    fn set_nominated(&mut self, key: &ObjectKey, node: Option<(String, Arc<Pod>)>) {
        let same = |p: &Arc<framework::PodInfo>| {
            p.pod.metadata.namespace == key.namespace && p.pod.metadata.name == key.name
        };
        self.cache.nominated.retain(|_, pods| {
            pods.retain(|p| !same(p));
            !pods.is_empty()
        });
        if let Some((node, pod)) = node {
            self.cache
                .nominated
                .entry(node)
                .or_default()
                .push(Arc::new(PodInfo::new(pod)));
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        if !self.cache.nominated.is_empty() {
            let before: usize = self.cache.nominated.values().map(Vec::len).sum();
            self.set_nominated(key, None);
            let after: usize = self.cache.nominated.values().map(Vec::len).sum();
            if after < before {
                // What was held for it is free for the others now.
                self.nomination_ended.set(true);
            }
        }
        self.unschedulable.remove(key);
        self.own_writes.remove(key);
        self.waiters.retain(|_, pods| {
            pods.remove(key);
            !pods.is_empty()
        });
    }

    /// Writes `PodScheduled=False` with `reason` and `message` and parks the pod until an
    /// event concerning it or the plugins that rejected it. A scheduling attempt a filter
    /// stopped with an error has reason `SchedulerError`: upstream retries such a pod after a
    /// backoff; here it waits as an unschedulable pod does (without a change, a retry would
    /// end the same way).
    fn mark_not_scheduled(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        (reason, message): (&'static str, String),
        wait_for: Vec<ObjectKey>,
        rejected_by: PluginSet,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        self.unschedulable.insert(key.clone(), rejected_by);
        for object in wait_for {
            self.waiters.entry(object).or_default().insert(key.clone());
        }
        let stamp = self.stamp(now);
        let nominated = self.nominate.take();
        match conditions::write_pod_scheduled_nominated(
            store,
            key,
            Err((reason, &message)),
            &stamp,
            nominated.as_deref(),
        ) {
            Ok(Some(rv)) => {
                self.own_writes.insert(key.clone(), rv);
                Ok(Action::Done)
            }
            Ok(None) => Ok(Action::Done),
            Err(source) => Err(SchedulerError::Store {
                action: "update pod",
                key: key.to_string(),
                source: Box::new(source),
            }),
        }
    }

    /// Queues a pod for an attempt (unless a PreEnqueue plugin keeps it out).
    fn enqueue(&mut self, key: ObjectKey, pod: Arc<Pod>, now: SimTime) {
        if !self.framework.run_pre_enqueue(&pod).is_success() {
            self.gated.insert(key.clone());
            self.active.remove(&key);
            return;
        }
        self.gated.remove(&key);
        let info = QueuedPodInfo {
            key,
            pod,
            timestamp: now,
        };
        self.active.push(info, self.framework.queue_sort());
    }

    /// A reconcile of a pod: its binding cycle if it waits in PreBind, else an attempt for it,
    /// after attempts for the queued pods that go before it.
    fn schedule(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            self.forget(key);
            self.active.remove(key);
            self.gated.remove(key);
            self.waiting.remove(key);
            self.avoid.remove(key);
            return Ok(Action::Done);
        };
        if !self.wants(&pod) {
            self.forget(key);
            self.active.remove(key);
            self.gated.remove(key);
            if let Some(mut waiting) = self.waiting.remove(key)
                && pod.metadata.deletion_timestamp.is_some()
            {
                let stamp = self.stamp(now);
                let mut ctx = BindCtx {
                    cluster: &self.cache,
                    store,
                    now,
                    stamp: &stamp,
                };
                self.framework
                    .run_unreserve(&mut ctx, &mut waiting.cycle, &waiting.node);
            }
            return Ok(Action::Done);
        }
        if let Some(waiting) = self.waiting.remove(key) {
            return self.binding_cycle(store, key, waiting.cycle, waiting.node, now);
        }
        if !self.active.contains(key) {
            self.enqueue(key.clone(), pod, now);
        }
        if !self.active.contains(key) {
            // Gated.
            return Ok(Action::Done);
        }
        // The queued pods that go before this one are tried first (they were queued by events
        // that also woke them; their own reconciles find them done or try them again).
        loop {
            let Some(next) = self.active.pop(self.framework.queue_sort()) else {
                return Ok(Action::Done);
            };
            let is_key = next.key == *key;
            let alive = store
                .get_shared::<Pod>(&next.key.namespace, &next.key.name)
                .is_some_and(|p| self.wants(p));
            let action = if alive && !self.waiting.contains_key(&next.key) {
                // The previous attempt may have written (claims allocated, a pod bound):
                // the cache catches up first.
                self.cache.sync(store);
                self.cache.order();
                self.attempt(store, &next.key, now)?
            } else {
                Action::Done
            };
            if is_key {
                return Ok(action);
            }
        }
    }

    /// The signature of a pod for the failure memo: everything filters read of the pod, and
    /// each plugin's part (none when a plugin's verdict cannot be reused).
    fn signature(&mut self, cycle: &Cycle) -> String {
        let pod = &cycle.pod.pod;
        format!(
            "{}|{:?}|{:?}{}",
            pod.metadata.namespace,
            pod.metadata.labels,
            pod.spec,
            self.framework.signature(cycle)
        )
    }

    /// One scheduling cycle for a pod.
    fn attempt(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        let mut cycle = Cycle::new(PodInfo::new(pod));
        let pre = {
            let mut ctx = PreFilterCtx {
                cluster: &self.cache,
                store,
                now,
            };
            self.framework.run_pre_filter(&mut ctx, &mut cycle)
        };
        let restriction = match pre {
            Ok(r) => r,
            Err(outcome) => return self.finish(store, key, cycle, *outcome, None, now),
        };
        let n = self.cache.node_count();
        if n == 0 {
            let wait_for = self.framework.wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_UNSCHEDULABLE, "0/0 nodes are available.".into()),
                wait_for,
                0,
                now,
            );
        }
        // A pod that failed before in the same cluster state fails the same way again.
        let cacheable = !self.avoid.contains_key(key) && self.framework.cacheable(&cycle);
        if self
            .failures
            .first_key_value()
            .is_some_and(|(_, f)| f.epoch != self.cache.epoch)
        {
            self.failures.clear();
        }
        let signature = (cacheable && !self.failures.is_empty()).then(|| self.signature(&cycle));
        if let Some(signature) = &signature
            && let Some(failure) = self.failures.get(signature).cloned()
            && failure.epoch == self.cache.epoch
        {
            let mut message = failure.message.clone();
            for (i, e) in &failure.explanations {
                message.push('\n');
                message.push_str(&self.framework.rerender(*i, &cycle, e));
            }
            self.framework.next_start = (self.framework.next_start + failure.processed) % n;
            let wait_for = self.framework.wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_UNSCHEDULABLE, message),
                wait_for,
                failure.rejected_by,
                now,
            );
        }
        let avoid: BTreeSet<usize> = self
            .avoid
            .get(key)
            .into_iter()
            .flatten()
            .filter_map(|n| self.cache.slot_of(n))
            .collect();
        let outcome = {
            let ctx = Ctx {
                cluster: &self.cache,
                now,
            };
            self.framework
                .find_node(&ctx, &mut cycle, restriction, &avoid)
        };
        let signature = match (&outcome, signature) {
            (CycleOutcome::Unschedulable { .. }, None) if cacheable => Some(self.signature(&cycle)),
            (_, signature) => signature,
        };
        self.finish(store, key, cycle, outcome, signature, now)
    }

    /// Acts on a cycle's outcome: the binding cycle for a node, or the pod's condition.
    fn finish(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        mut cycle: Cycle,
        outcome: CycleOutcome,
        signature: Option<String>,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        match outcome {
            CycleOutcome::Scheduled { slot, .. } => {
                let node = self
                    .cache
                    .node(slot)
                    .map(|s| s.name.clone())
                    .unwrap_or_default();
                let stamp = self.stamp(now);
                let status = {
                    let mut ctx = BindCtx {
                        cluster: &self.cache,
                        store,
                        now,
                        stamp: &stamp,
                    };
                    let reserved = self.framework.run_reserve(&mut ctx, &mut cycle, &node);
                    if reserved.is_success() {
                        let permit = self.framework.run_permit(&mut ctx, &mut cycle, &node);
                        if !permit.is_success() && !permit.is_wait() {
                            self.framework.run_unreserve(&mut ctx, &mut cycle, &node);
                        }
                        permit
                    } else {
                        reserved
                    }
                };
                if !status.is_success() && !status.is_wait() {
                    let wait_for = self.framework.wait_for(&cycle);
                    let reason = if status.is_rejected() {
                        POD_UNSCHEDULABLE
                    } else {
                        POD_SCHEDULER_ERROR
                    };
                    return self.mark_not_scheduled(
                        store,
                        key,
                        (reason, status.message()),
                        wait_for,
                        0,
                        now,
                    );
                }
                self.binding_cycle(store, key, cycle, node, now)
            }
            CycleOutcome::Error(message) => {
                let wait_for = self.framework.wait_for(&cycle);
                self.mark_not_scheduled(
                    store,
                    key,
                    (POD_SCHEDULER_ERROR, message),
                    wait_for,
                    0,
                    now,
                )
            }
            CycleOutcome::Unschedulable {
                mut error,
                explanations,
                rejected_by,
                processed,
            } => {
                let stamp = self.stamp(now);
                // Upstream stops before any plugin when the cluster has no node.
                let (nominated, post, victims) = if self.cache.node_count() == 0 {
                    (None, None, Vec::new())
                } else {
                    let mut ctx = BindCtx {
                        cluster: &self.cache,
                        store,
                        now,
                        stamp: &stamp,
                    };
                    let statuses = error.diagnosis.node_statuses.clone();
                    self.framework
                        .run_post_filter(&mut ctx, &mut cycle, &statuses)
                };
                error.diagnosis.post_filter_msg = post.filter(|m| !m.is_empty());
                let preempted = nominated.is_some();
                if let Some(node) = &nominated {
                    let pod = Arc::clone(&cycle.pod.pod);
                    self.set_nominated(key, Some((node.clone(), pod)));
                }
                self.nominate = nominated;
                let signature = signature.filter(|_| !preempted);
                let wake = self.preempt(store, victims, now)?;
                let head = error.message();
                let mut message = head.clone();
                for (_, e) in &explanations {
                    message.push('\n');
                    message.push_str(&e.text);
                }
                if let Some(signature) = signature {
                    self.failures.insert(
                        signature,
                        Failure {
                            epoch: self.cache.epoch,
                            message: head,
                            explanations,
                            processed,
                            rejected_by,
                        },
                    );
                }
                let wait_for = self.framework.wait_for(&cycle);
                let action = self.mark_not_scheduled(
                    store,
                    key,
                    (POD_UNSCHEDULABLE, message),
                    wait_for,
                    rejected_by,
                    now,
                )?;
                Ok(match wake {
                    Some(at) => Action::RequeueAfterMillis(at.0.saturating_sub(now.0)),
                    None => action,
                })
            }
        }
    }

    /// Deletes at once the victims without a grace period and remembers the others' deadlines;
    /// the earliest deadline, when the preemptor must come back.
    fn preempt(
        &mut self,
        store: &mut Store,
        victims: Vec<framework::Victim>,
        now: SimTime,
    ) -> Result<Option<SimTime>, SchedulerError> {
        let mut wake: Option<SimTime> = None;
        for victim in victims {
            let grace = u64::try_from(victim.grace_seconds).unwrap_or(0);
            if grace == 0 {
                self.delete_victim(store, &victim.key)?;
                continue;
            }
            let at = now.plus_millis(grace.saturating_mul(1000));
            let at = *self.terminating.entry(victim.key).or_insert(at);
            wake = Some(wake.map_or(at, |w| w.min(at)));
        }
        Ok(wake)
    }

    fn delete_victim(&mut self, store: &mut Store, key: &ObjectKey) -> Result<(), SchedulerError> {
        match store.delete(key) {
            Ok(_) | Err(StoreError::NotFound { .. }) => Ok(()),
            Err(source) => Err(SchedulerError::Store {
                action: "delete pod",
                key: key.to_string(),
                source: Box::new(source),
            }),
        }
    }

    /// Deletes the victims whose grace period has ended.
    fn expire_victims(&mut self, store: &mut Store, now: SimTime) -> Result<(), SchedulerError> {
        let due: Vec<ObjectKey> = self
            .terminating
            .iter()
            .filter(|(_, at)| **at <= now)
            .map(|(k, _)| k.clone())
            .collect();
        for key in due {
            self.terminating.remove(&key);
            self.delete_victim(store, &key)?;
        }
        Ok(())
    }

    /// PreBind and Bind for a pod reserved on `node`: bound, waiting (asked again at the wait's
    /// deadline or when an event concerns the pod), or, when PreBind fails, unreserved and
    /// scheduled again preferring other nodes.
    fn binding_cycle(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        mut cycle: Cycle,
        node: String,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let before = pod_rv(store, key);
        let stamp = self.stamp(now);
        let status = {
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.framework.run_pre_bind(&mut ctx, &mut cycle, &node)
        };
        let after = pod_rv(store, key);
        if after != before
            && let Some(rv) = after
        {
            self.own_writes.insert(key.clone(), rv);
        }
        if status.is_wait() {
            let at = status.retry_at().unwrap_or(now);
            self.unschedulable.remove(key);
            for object in self.framework.wait_for(&cycle) {
                self.waiters.entry(object).or_default().insert(key.clone());
            }
            self.waiting.insert(key.clone(), Waiting { node, cycle });
            return Ok(Action::RequeueAfterMillis(at.0.saturating_sub(now.0)));
        }
        if !status.is_success() {
            // Binding failed or timed out: undo and try again, elsewhere if possible.
            self.avoid
                .entry(key.clone())
                .or_default()
                .insert(node.clone());
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.framework.run_unreserve(&mut ctx, &mut cycle, &node);
            return self.attempt(store, key, now);
        }
        self.forget(key);
        self.avoid.remove(key);
        let status = {
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.framework.run_bind(&mut ctx, &mut cycle, &node)
        };
        self.own_writes.remove(key);
        if !status.is_success() {
            let wait_for = self.framework.wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_SCHEDULER_ERROR, status.message()),
                wait_for,
                0,
                now,
            );
        }
        Ok(Action::Done)
    }

    /// Pods to wake for an assigned pod's event: those rejected by a plugin that cares about
    /// assigned pods, when the pod is newly assigned or its labels changed.
    fn assigned_pod_wakes(&self, key: &ObjectKey, pod: &Pod) -> Vec<ObjectKey> {
        if self.assigned_pod_interest == 0 || !is_assigned(pod) {
            return Vec::new();
        }
        let changed = match self.cache.assigned_pod(key) {
            None => true,
            Some(info) => info.pod.metadata.labels != pod.metadata.labels,
        };
        if !changed {
            return Vec::new();
        }
        self.unschedulable_by(self.assigned_pod_interest)
    }
}

/// A pod's resourceVersion as a number.
fn pod_rv(store: &Store, key: &ObjectKey) -> Option<Option<u64>> {
    store
        .get::<Pod>(&key.namespace, &key.name)
        .map(|p| p.metadata.resource_version.parse().ok())
}

impl Controller for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match (&event.object, event.event_type) {
            (Stored::Pod(pod), EventType::Deleted) => {
                let mut keys = Vec::new();
                if self.unschedulable.contains_key(&event.key)
                    || self.waiting.contains_key(&event.key)
                {
                    keys.push(event.key.clone());
                }
                if is_assigned(pod) {
                    keys.extend(self.all_unschedulable());
                }
                keys
            }
            (Stored::Pod(pod), _) => {
                let mut keys = self.assigned_pod_wakes(&event.key, pod);
                if self.terminating.contains_key(&event.key) {
                    keys.push(event.key.clone());
                }
                if self.nomination_ended.replace(false) {
                    keys.extend(self.all_unschedulable());
                }
                if self
                    .own_writes
                    .get(&event.key)
                    .is_some_and(|rv| *rv == Some(event.resource_version))
                {
                    return keys;
                }
                if self.wants(pod) || self.waiting.contains_key(&event.key) {
                    keys.push(event.key.clone());
                } else if is_terminal(pod) && pod.spec.node_name.is_some() {
                    keys.extend(self.all_unschedulable());
                }
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            (Stored::Node(node), EventType::Added) => {
                let _ = node;
                self.all_unschedulable()
            }
            (Stored::Node(node), EventType::Modified) => {
                match self.cache.node_by_name(&node.metadata.name) {
                    Some(state)
                        if state.node.metadata.labels == node.metadata.labels
                            && state.node.spec == node.spec
                            && state.node.status.allocatable == node.status.allocatable
                            && state.node.status.images == node.status.images =>
                    {
                        Vec::new()
                    }
                    _ => self.all_unschedulable(),
                }
            }
            (Stored::ResourceSlice(_), EventType::Added | EventType::Modified) => {
                self.all_unschedulable()
            }
            (Stored::DeviceClass(_) | Stored::DeviceTaintRule(_) | Stored::PodGroup(_), _) => {
                self.all_unschedulable()
            }
            (Stored::Namespace(_), _) => self.unschedulable_by(self.namespace_interest),
            (Stored::ResourceClaim(claim), event_type) => {
                // Only pods waiting here (unschedulable or in PreBind) are requeued.
                if self.unschedulable.is_empty() && self.waiting.is_empty() {
                    return Vec::new();
                }
                let mut keys: Vec<ObjectKey> = Vec::new();
                let ns = claim.metadata.namespace.as_str();
                let freed = (event_type == EventType::Deleted || claim.status.allocation.is_none())
                    && self.cache.claim_allocated(&event.key);
                if freed {
                    keys.extend(self.all_unschedulable());
                }
                if let Some(pods) = self.waiters.get(&event.key) {
                    keys.extend(pods.iter().cloned());
                }
                for owner in claim
                    .metadata
                    .owner_references
                    .iter()
                    .filter(|o| o.kind == "Pod")
                {
                    keys.push(ObjectKey::new(Kind::Pod, ns, owner.name.clone()));
                }
                for consumer in claim
                    .status
                    .reserved_for
                    .iter()
                    .filter(|r| r.resource == "pods")
                {
                    keys.push(ObjectKey::new(Kind::Pod, ns, consumer.name.clone()));
                }
                keys.retain(|k| self.unschedulable.contains_key(k) || self.waiting.contains_key(k));
                // In key order, each once.
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            _ => Vec::new(),
        }
    }

    fn event_log_position(&self) -> Option<u64> {
        Some(self.cache.seen_rv())
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if !self.terminating.is_empty() {
            self.expire_victims(store, ctx.now)
                .map_err(|e| e.to_string())?;
            // A victim's own reconcile comes back when its grace period ends.
            if let Some(at) = self.terminating.get(key) {
                return Ok(Action::RequeueAfterMillis(at.0.saturating_sub(ctx.now.0)));
            }
        }
        self.cache.sync(store);
        self.cache.order();
        for (pending, pod) in self.cache.take_new_pending() {
            if self.wants(&pod) && !self.waiting.contains_key(&pending) {
                self.enqueue(pending, pod, ctx.now);
            }
        }
        if key.kind != Kind::Pod {
            return Ok(Action::Done);
        }
        self.schedule(store, key, ctx.now)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod summary_tests;

#[cfg(test)]
mod properties;

#[cfg(test)]
mod feasible_nodes_tests {
    use super::*;

    fn find(percentage: u32, all: usize) -> usize {
        Scheduler::new(SchedulerConfig {
            percentage_of_nodes_to_score: percentage,
            ..SchedulerConfig::default()
        })
        .nodes_to_find(all)
    }

    /// Upstream `numFeasibleNodesToFind`: all nodes below 100; adaptive 50% minus 1% per 125
    /// nodes, at least 5%, at least 100 nodes; a configured percentage as given.
    #[test]
    fn nodes_to_find_matches_upstream() {
        assert_eq!(find(0, 99), 99);
        assert_eq!(find(0, 100), 100);
        assert_eq!(find(0, 199), 100);
        assert_eq!(find(0, 1000), 420);
        assert_eq!(find(0, 5000), 500);
        assert_eq!(find(0, 6000), 300);
        assert_eq!(find(0, 20_000), 1000);
        assert_eq!(find(30, 1000), 300);
        assert_eq!(find(30, 200), 100);
        assert_eq!(find(100, 5000), 5000);
    }
}
