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
pub mod config;
mod config_args;
pub mod extended;
pub mod filters;
pub mod framework;
pub mod labels;
pub mod nodealloc;
pub mod plugins;
pub mod resources;

use std::cell::RefCell;
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
    ActiveQueue, BindCtx, Ctx, Cycle, CycleOutcome, EventSet, Explanation, Framework, PluginSet,
    PodInfo, PreFilterCtx, Profile, QueuedPodInfo, queueing,
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
    /// DynamicResources `filterTimeout` (counted in search steps, not time). A
    /// KubeSchedulerConfiguration's `filterTimeout` adds a wall-clock limit per profile
    /// (`Budget::max_time`); without one there is none: upstream's default of 10 s is left
    /// out, as the step budget (a fraction of a second of search) always ends a search first
    /// and keeps simulations reproducible.
    pub allocation_budget: allot_dra::Budget,
    /// A KubeSchedulerConfiguration: its profiles replace `profile`, and it sets the queue's
    /// backoff.
    pub configuration: Option<config::SchedulerConfiguration>,
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
            configuration: None,
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

    /// The profiles this configuration runs: the KubeSchedulerConfiguration's, else one.
    pub fn profiles(&self) -> Vec<Profile> {
        match &self.configuration {
            Some(c) => c.profiles.clone(),
            None => vec![self.profile()],
        }
    }

    /// The queue's initial and longest backoff, in milliseconds.
    fn backoff_millis(&self) -> (u64, u64) {
        match &self.configuration {
            Some(c) => (
                c.pod_initial_backoff_seconds * 1000,
                c.pod_max_backoff_seconds * 1000,
            ),
            None => (1000, 10_000),
        }
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
    profile: usize,
    node: String,
    cycle: Cycle,
}

/// A pod waiting at Permit (upstream's `waitingPod`): reserved and assumed on `node` until a
/// plugin allows it or `deadline` passes.
struct PermitWaiting {
    /// The profile (framework) that scheduled it.
    profile: usize,
    node: String,
    cycle: Cycle,
    since: SimTime,
    deadline: SimTime,
    plugin: &'static str,
}

/// How long a pod stays among the unschedulable pods before it is tried again without an
/// event for it (upstream `podMaxInUnschedulablePodsDuration`).
const MAX_UNSCHEDULABLE_MILLIS: u64 = 5 * 60 * 1000;

/// A pod the last attempt found unschedulable (upstream's unschedulablePods), or moved out of
/// there and waiting for its backoff to end (backoffQ).
#[derive(Debug, Clone)]
struct Parked {
    /// It waits for a claim that does not exist: upstream's DynamicResources PreEnqueue keeps
    /// such a pod out of the queue, and it skips the backoff when the claim appears.
    gated: bool,
    /// The cluster events that may make it fit (see [`Framework::requeue_events`]).
    requeue_on: EventSet,
    /// When it was parked.
    at: SimTime,
    /// An event its hints do not name happened: it is tried again at `at` + 5 minutes.
    flush: bool,
    /// Moved out (by an event its hints name, or the flush): waits for the backoff's end.
    moved: bool,
}

/// Why a parked pod was woken (recorded by `keys_for`, read by the reconcile).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// An event its hints name, or an update of the pod itself.
    Hinted,
    /// Some other event (arms the flush).
    Unhinted,
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
    /// One framework per profile; pods choose by `spec.schedulerName`.
    frameworks: Vec<Framework>,
    /// Where the next attempt starts walking nodes, shared by the profiles (upstream
    /// `nextStartNodeIndex`).
    next_start: usize,
    cache: Cache,
    /// Pods waiting for an attempt (activeQ).
    active: ActiveQueue,
    /// Pods the last attempt found unschedulable (unschedulablePods and backoffQ).
    unschedulable: BTreeMap<ObjectKey, Parked>,
    /// Failed attempts per pod since it was last bound (the backoff doubles with each).
    attempts: BTreeMap<ObjectKey, u32>,
    /// Parked pods woken by events since their last reconcile.
    wakes: RefCell<BTreeMap<ObjectKey, Wake>>,
    /// Pods a PreEnqueue plugin keeps out of the queue.
    gated: BTreeSet<ObjectKey>,
    /// Pods in PreBind.
    waiting: BTreeMap<ObjectKey, Waiting>,
    /// Pods waiting at Permit.
    permit_waiting: BTreeMap<ObjectKey, PermitWaiting>,
    /// Pods rejected at Permit (a gang that timed out): how often, and until when they back
    /// off before their next attempt (upstream's pod backoff: 1 s, doubling, at most 10 s).
    backoff: BTreeMap<ObjectKey, (u32, SimTime)>,
    /// The resourceVersion of the scheduler's own last status write of each PodGroup.
    own_group_writes: BTreeMap<ObjectKey, u64>,
    /// Nodes where a pod's binding failed; tried last next time.
    avoid: BTreeMap<ObjectKey, BTreeSet<String>>,
    /// Pods waiting for an object (a claim) to appear or change.
    waiters: BTreeMap<ObjectKey, BTreeSet<ObjectKey>>,
    /// The resourceVersion of the scheduler's own last write of each pod.
    /// (A resourceVersion that is not a number is kept as `None`, which matches no event.)
    own_writes: BTreeMap<ObjectKey, Option<u64>>,
    /// Failures by pod signature.
    failures: BTreeMap<String, Failure>,
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
        let mut frameworks = Vec::new();
        for (i, profile) in config.profiles().iter().enumerate() {
            let mut features = config.plugin_features();
            // A profile's DynamicResources `bindingTimeout` is its PreBind wait.
            if let Some(ms) = config
                .configuration
                .as_ref()
                .and_then(|c| c.plugin_args.get(i))
                .and_then(|args| args.get(plugins::dynamic_resources::NAME))
                .and_then(|args| args.get("bindingTimeout"))
                .and_then(serde_json::Value::as_str)
                .and_then(config_args::duration_millis)
            {
                features.dra.binding_timeout_seconds = (ms.max(0) as u64).div_ceil(1000);
            }
            // Its `filterTimeout` bounds each node's allocation search in wall-clock time, as
            // upstream's (0 disables it); the step budget stays.
            if let Some(ns) = config
                .configuration
                .as_ref()
                .and_then(|c| c.plugin_args.get(i))
                .and_then(|args| args.get(plugins::dynamic_resources::NAME))
                .and_then(|args| args.get("filterTimeout"))
                .and_then(serde_json::Value::as_str)
                .and_then(config_args::duration_nanos)
            {
                features.dra.allocation_budget.max_time =
                    (ns > 0).then(|| std::time::Duration::from_nanos(ns as u64));
            }
            let framework = Framework::new(profile, &mut |plugin| {
                plugins::build(plugin, &features)
                    .map_err(|e| format!("initializing plugin {:?}: {e}", plugin.name))
            })
            .map_err(|e| {
                format!(
                    "profiles[{i}]: creating profile for scheduler name {:?}: {e}",
                    profile.scheduler_name
                )
            })?;
            frameworks.push(framework);
        }
        Ok(Scheduler {
            config,
            frameworks,
            next_start: 0,
            cache: Cache::default(),
            active: ActiveQueue::new(),
            unschedulable: BTreeMap::new(),
            attempts: BTreeMap::new(),
            wakes: RefCell::new(BTreeMap::new()),
            gated: BTreeSet::new(),
            waiting: BTreeMap::new(),
            permit_waiting: BTreeMap::new(),
            backoff: BTreeMap::new(),
            own_group_writes: BTreeMap::new(),
            avoid: BTreeMap::new(),
            waiters: BTreeMap::new(),
            own_writes: BTreeMap::new(),
            failures: BTreeMap::new(),
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
        self.frameworks[0].nodes_to_find(all)
    }

    /// The profile of a pod: the one named by `spec.schedulerName` (`default-scheduler` when
    /// empty, as the API server defaults it); `None` for a name no profile has (upstream
    /// leaves such pods to another scheduler).
    fn profile_of(&self, pod: &Pod) -> Option<usize> {
        let name = match pod.spec.scheduler_name.as_deref() {
            None | Some("") => DEFAULT_SCHEDULER_NAME,
            Some(name) => name,
        };
        self.frameworks
            .iter()
            .position(|f| f.scheduler_name() == name)
    }

    fn wants(&self, pod: &Pod) -> bool {
        pod.spec.node_name.as_deref().is_none_or(str::is_empty)
            && !is_terminal(pod)
            && pod.metadata.deletion_timestamp.is_none()
            && self.profile_of(pod).is_some()
    }

    /// Parked pods an event of kinds `events` concerns: woken as hinted when their hints
    /// name one of the events, else (once per parking) as unhinted to arm their flush.
    fn wake_parked(&self, events: EventSet) -> Vec<ObjectKey> {
        let mut wakes = self.wakes.borrow_mut();
        let mut out = Vec::new();
        for (key, parked) in &self.unschedulable {
            if parked.moved {
                continue;
            }
            if parked.requeue_on & events != 0 {
                wakes.insert(key.clone(), Wake::Hinted);
                out.push(key.clone());
            } else if !parked.flush && !wakes.contains_key(key) {
                wakes.insert(key.clone(), Wake::Unhinted);
                out.push(key.clone());
            }
        }
        out
    }

    /// Marks parked pods woken as hinted (an event concerning them directly).
    fn wake_hinted(&self, keys: &[ObjectKey]) {
        let mut wakes = self.wakes.borrow_mut();
        for key in keys {
            if self.unschedulable.contains_key(key) {
                wakes.insert(key.clone(), Wake::Hinted);
            }
        }
    }

    /// Upstream `calculateBackoffDuration`: the initial backoff doubled per earlier failed
    /// attempt, at most the longest.
    fn backoff_millis(&self, attempts: u32) -> u64 {
        let (initial, max) = self.config.backoff_millis();
        let mut d = initial;
        for _ in 1..attempts {
            d = d.saturating_mul(2);
            if d >= max {
                return max;
            }
        }
        d.min(max)
    }

    /// Records (or, with `None`, drops) the node preemption nominated for a pod.
    fn set_nominated(&mut self, key: &ObjectKey, node: Option<(String, Arc<Pod>)>) {
        let same = |p: &Arc<framework::PodInfo>| {
            p.pod.metadata.namespace == key.namespace && p.pod.metadata.name == key.name
        };
        let before: usize = self.cache.nominated.values().map(Vec::len).sum();
        self.cache.nominated.retain(|_, pods| {
            pods.retain(|p| !same(p));
            !pods.is_empty()
        });
        let after: usize = self.cache.nominated.values().map(Vec::len).sum();
        if after != before || node.is_some() {
            // Filters count nominated pods: a failure remembered before holds no more.
            self.cache.epoch += 1;
        }
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
        self.wakes.borrow_mut().remove(key);
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
        (profile, rejected_by): (usize, PluginSet),
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let requeue_on = self.frameworks[profile].requeue_events(rejected_by);
        let gated = wait_for.iter().any(|k| {
            k.kind == Kind::ResourceClaim
                && store
                    .get::<allot_api::resource::v1::ResourceClaim>(&k.namespace, &k.name)
                    .is_none()
        });
        self.unschedulable.insert(
            key.clone(),
            Parked {
                gated,
                requeue_on,
                at: now,
                flush: false,
                moved: false,
            },
        );
        self.wakes.borrow_mut().remove(key);
        for object in wait_for {
            self.waiters.entry(object).or_default().insert(key.clone());
        }
        self.note_gang(store, key, Err((reason, &message)), now)?;
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
        let Some(p) = self.profile_of(&pod) else {
            return;
        };
        if !self.frameworks[p]
            .run_pre_enqueue(&self.cache, &pod)
            .is_success()
        {
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
        self.active.push(info, self.frameworks[0].queue_sort());
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
            self.backoff.remove(key);
            self.reject_permit_waiting(store, key, now);
            return Ok(Action::Done);
        };
        if self.permit_waiting.contains_key(key) {
            if !self.wants(&pod) {
                self.reject_permit_waiting(store, key, now);
                return Ok(Action::Done);
            }
            return self.permit_again(store, key, now);
        }
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
                self.frameworks[waiting.profile].run_unreserve(
                    &mut ctx,
                    &mut waiting.cycle,
                    &waiting.node,
                );
            }
            return Ok(Action::Done);
        }
        if let Some(waiting) = self.waiting.remove(key) {
            return self.binding_cycle(
                store,
                key,
                (waiting.profile, waiting.cycle),
                waiting.node,
                now,
            );
        }
        if let Some(action) = self.parked_gate(key, now) {
            return Ok(action);
        }
        if let Some((_, until)) = self.backoff.get(key)
            && *until > now
        {
            self.active.remove(key);
            return Ok(Action::RequeueAfterMillis(until.0 - now.0));
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
            let Some(next) = self.active.pop(self.frameworks[0].queue_sort()) else {
                return Ok(Action::Done);
            };
            let is_key = next.key == *key;
            let alive = store
                .get_shared::<Pod>(&next.key.namespace, &next.key.name)
                .is_some_and(|p| self.wants(p));
            let busy = self.waiting.contains_key(&next.key)
                || self.permit_waiting.contains_key(&next.key)
                || self
                    .backoff
                    .get(&next.key)
                    .is_some_and(|(_, until)| *until > now);
            let action = if alive && !busy {
                // Earlier attempts of this loop may have written (claims allocated, pods bound
                // or assumed): the cache catches up first.
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

    /// The queue for a parked pod: `None` when it is due for an attempt (it leaves the
    /// unschedulable pods), else what to do now. A hinted wake, or the flush after 5 minutes,
    /// moves it out; it is tried when its backoff (from its parking, doubling per failed
    /// attempt) has passed, as upstream's backoffQ. An unhinted wake arms the flush.
    fn parked_gate(&mut self, key: &ObjectKey, now: SimTime) -> Option<Action> {
        let wake = self.wakes.borrow_mut().remove(key);
        let attempts = self.attempts.get(key).copied().unwrap_or(1);
        let backoff = self.backoff_millis(attempts);
        let parked = self.unschedulable.get_mut(key)?;
        let flush_at = parked.at.plus_millis(MAX_UNSCHEDULABLE_MILLIS);
        if wake == Some(Wake::Hinted) || (parked.flush && now >= flush_at) {
            parked.moved = true;
        } else if wake == Some(Wake::Unhinted) {
            parked.flush = true;
            if now >= flush_at {
                parked.moved = true;
            }
        }
        if parked.moved {
            let expiry = if parked.gated {
                parked.at
            } else {
                parked.at.plus_millis(backoff)
            };
            if now >= expiry {
                self.unschedulable.remove(key);
                return None;
            }
            return Some(Action::RequeueAfterMillis(expiry.0 - now.0));
        }
        if parked.flush {
            return Some(Action::RequeueAfterMillis(flush_at.0 - now.0));
        }
        Some(Action::Done)
    }

    /// The signature of a pod for the failure memo: everything filters read of the pod, and
    /// each plugin's part (none when a plugin's verdict cannot be reused).
    fn signature(&mut self, p: usize, cycle: &Cycle) -> String {
        let pod = &cycle.pod.pod;
        format!(
            "{p}|{}|{:?}|{:?}|{:?}{}",
            pod.metadata.namespace,
            pod.metadata.labels,
            pod.metadata.owner_references,
            pod.spec,
            self.frameworks[p].signature(cycle)
        )
    }

    /// One scheduling cycle for a pod (with its profile; the profiles share where the walk
    /// over nodes starts).
    fn attempt(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        let Some(p) = self.profile_of(&pod) else {
            return Ok(Action::Done);
        };
        *self.attempts.entry(key.clone()).or_insert(0) += 1;
        self.frameworks[p].next_start = self.next_start;
        let result = self.attempt_with(store, key, pod, p, now);
        self.next_start = self.frameworks[p].next_start;
        result
    }

    fn attempt_with(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        pod: Arc<Pod>,
        p: usize,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let mut cycle = Cycle::new(PodInfo::new(pod));
        let pre = {
            let mut ctx = PreFilterCtx {
                cluster: &self.cache,
                store,
                now,
            };
            self.frameworks[p].run_pre_filter(&mut ctx, &mut cycle)
        };
        let restriction = match pre {
            Ok(r) => r,
            Err(outcome) => return self.finish(store, key, (p, cycle), *outcome, None, now),
        };
        let n = self.cache.node_count();
        if n == 0 {
            let wait_for = self.frameworks[p].wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_UNSCHEDULABLE, "0/0 nodes are available.".into()),
                wait_for,
                (p, 0),
                now,
            );
        }
        // A pod that failed before in the same cluster state fails the same way again.
        // A nominated pod sees its node without itself: another pod's failure is not its own.
        let nominated =
            self.cache.nominated.values().flatten().any(|q| {
                q.pod.metadata.namespace == key.namespace && q.pod.metadata.name == key.name
            });
        let cacheable =
            !self.avoid.contains_key(key) && !nominated && self.frameworks[p].cacheable(&cycle);
        if self
            .failures
            .first_key_value()
            .is_some_and(|(_, f)| f.epoch != self.cache.epoch)
        {
            self.failures.clear();
        }
        let signature = (cacheable && !self.failures.is_empty()).then(|| self.signature(p, &cycle));
        if let Some(signature) = &signature
            && let Some(failure) = self.failures.get(signature).cloned()
            && failure.epoch == self.cache.epoch
        {
            let mut message = failure.message.clone();
            for (i, e) in &failure.explanations {
                message.push('\n');
                message.push_str(&self.frameworks[p].rerender(*i, &cycle, e));
            }
            self.frameworks[p].next_start = (self.frameworks[p].next_start + failure.processed) % n;
            let wait_for = self.frameworks[p].wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_UNSCHEDULABLE, message),
                wait_for,
                (p, failure.rejected_by),
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
            self.frameworks[p].find_node(&ctx, &mut cycle, restriction, &avoid)
        };
        let signature = match (&outcome, signature) {
            (CycleOutcome::Unschedulable { .. }, None) if cacheable => {
                Some(self.signature(p, &cycle))
            }
            (_, signature) => signature,
        };
        self.finish(store, key, (p, cycle), outcome, signature, now)
    }

    /// Acts on a cycle's outcome: the binding cycle for a node, or the pod's condition.
    fn finish(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        (p, mut cycle): (usize, Cycle),
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
                    let reserved = self.frameworks[p].run_reserve(&mut ctx, &mut cycle, &node);
                    if reserved.is_success() {
                        let permit = self.frameworks[p].run_permit(&mut ctx, &mut cycle, &node);
                        if !permit.is_success() && !permit.is_wait() {
                            self.frameworks[p].run_unreserve(&mut ctx, &mut cycle, &node);
                        }
                        permit
                    } else {
                        reserved
                    }
                };
                if status.is_wait() {
                    return Ok(self.wait_on_permit(key, (p, cycle), node, &status, now));
                }
                if !status.is_success() && !status.is_wait() {
                    let wait_for = self.frameworks[p].wait_for(&cycle);
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
                        (p, 0),
                        now,
                    );
                }
                let action = self.binding_cycle(store, key, (p, cycle), node, now)?;
                self.allow_waiting(store, now)?;
                Ok(action)
            }
            CycleOutcome::Error(message) => {
                let wait_for = self.frameworks[p].wait_for(&cycle);
                self.mark_not_scheduled(
                    store,
                    key,
                    (POD_SCHEDULER_ERROR, message),
                    wait_for,
                    (p, 0),
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
                    self.frameworks[p].run_post_filter(&mut ctx, &mut cycle, &statuses)
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
                let wait_for = self.frameworks[p].wait_for(&cycle);
                let action = self.mark_not_scheduled(
                    store,
                    key,
                    (POD_UNSCHEDULABLE, message),
                    wait_for,
                    (p, rejected_by),
                    now,
                )?;
                Ok(match wake {
                    Some(at) => Action::RequeueAfterMillis(at.0.saturating_sub(now.0)),
                    None => action,
                })
            }
        }
    }

    /// Parks a pod a Permit plugin asked to wait: assumed on its node (its resources held)
    /// until it is allowed or its deadline passes.
    fn wait_on_permit(
        &mut self,
        key: &ObjectKey,
        (profile, cycle): (usize, Cycle),
        node: String,
        status: &framework::Status,
        now: SimTime,
    ) -> Action {
        let deadline = status.retry_at().unwrap_or(now);
        self.unschedulable.remove(key);
        self.cache.assume(key, &cycle.pod.pod, &node);
        self.permit_waiting.insert(
            key.clone(),
            PermitWaiting {
                profile,
                node,
                cycle,
                since: now,
                deadline,
                plugin: status.plugin(),
            },
        );
        Action::RequeueAfterMillis(deadline.0.saturating_sub(now.0))
    }

    /// Asks the Permit plugins again for every pod waiting at Permit (another pod passed
    /// Permit and may have completed their quorum): those allowed go on to binding.
    fn allow_waiting(&mut self, store: &mut Store, now: SimTime) -> Result<(), SchedulerError> {
        if self.permit_waiting.is_empty() {
            return Ok(());
        }
        let keys: Vec<ObjectKey> = self.permit_waiting.keys().cloned().collect();
        for key in keys {
            if self.permit_waiting.contains_key(&key) {
                self.permit_again(store, &key, now)?;
            }
        }
        Ok(())
    }

    /// A pod waiting at Permit: Permit again; allowed → binding; still waiting past its
    /// deadline → rejected (upstream's "rejected due to timeout after waiting ... at plugin
    /// ..."), unreserved and back to the queue as unschedulable.
    fn permit_again(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let Some(mut waiting) = self.permit_waiting.remove(key) else {
            return Ok(Action::Done);
        };
        let stamp = self.stamp(now);
        let status = {
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.frameworks[waiting.profile].run_permit(&mut ctx, &mut waiting.cycle, &waiting.node)
        };
        if status.is_success() {
            let action = self.binding_cycle(
                store,
                key,
                (waiting.profile, waiting.cycle),
                waiting.node,
                now,
            )?;
            self.allow_waiting(store, now)?;
            return Ok(action);
        }
        if status.is_wait() && now < waiting.deadline {
            let at = waiting.deadline;
            self.permit_waiting.insert(key.clone(), waiting);
            return Ok(Action::RequeueAfterMillis(at.0.saturating_sub(now.0)));
        }
        let message = if status.is_wait() {
            format!(
                "rejected due to timeout after waiting {} at plugin {}",
                plugins::gang_scheduling::go_duration(
                    waiting.deadline.0.saturating_sub(waiting.since.0)
                ),
                waiting.plugin
            )
        } else {
            status.message()
        };
        self.cache.forget(key);
        {
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.frameworks[waiting.profile].run_unreserve(
                &mut ctx,
                &mut waiting.cycle,
                &waiting.node,
            );
        }
        let attempts = self.backoff.get(key).map_or(0, |(n, _)| *n) + 1;
        let backoff_ms = (1000u64 << (attempts - 1).min(4)).min(10_000);
        self.backoff
            .insert(key.clone(), (attempts, now.plus_millis(backoff_ms)));
        let wait_for = self.frameworks[waiting.profile].wait_for(&waiting.cycle);
        let reason = if status.is_wait() || status.is_rejected() {
            POD_UNSCHEDULABLE
        } else {
            POD_SCHEDULER_ERROR
        };
        self.mark_not_scheduled(
            store,
            key,
            (reason, message),
            wait_for,
            (waiting.profile, 0),
            now,
        )
    }

    /// Keeps the `PodGroupScheduled` condition of a gang pod's PodGroup: False with the pod's
    /// reason and message when it was not scheduled; True once `minCount` of the group's pods
    /// are bound.
    fn note_gang(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        verdict: Result<(), (&str, &str)>,
        now: SimTime,
    ) -> Result<(), SchedulerError> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(());
        };
        let Some(min_count) = plugins::gang_scheduling::gang_min_count(&self.cache, &pod) else {
            return Ok(());
        };
        let Some((ns, name)) = cache::pod_group_key(&pod) else {
            return Ok(());
        };
        if verdict.is_ok() {
            let bound = self
                .cache
                .group_members(&ns, &name)
                .into_iter()
                .flatten()
                .filter(|k| {
                    store
                        .get::<Pod>(&k.namespace, &k.name)
                        .is_some_and(is_assigned)
                })
                .count();
            if bound < min_count {
                return Ok(());
            }
        }
        let stamp = self.stamp(now);
        conditions::write_pod_group_scheduled(store, &ns, &name, verdict, &stamp).map_err(
            |source| SchedulerError::Store {
                action: "update pod group",
                key: format!("{ns}/{name}"),
                source: Box::new(source),
            },
        )?;
        if let Some(rv) = store
            .get::<allot_api::scheduling::v1beta1::PodGroup>(&ns, &name)
            .and_then(|g| g.metadata.resource_version.parse().ok())
        {
            self.own_group_writes.insert(
                ObjectKey::new(Kind::PodGroup, ns.as_str(), name.as_str()),
                rv,
            );
        }
        Ok(())
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

    /// A pod waiting at Permit that was deleted or no longer wants scheduling: unreserved.
    fn reject_permit_waiting(&mut self, store: &mut Store, key: &ObjectKey, now: SimTime) {
        let Some(mut waiting) = self.permit_waiting.remove(key) else {
            return;
        };
        self.cache.forget(key);
        let stamp = self.stamp(now);
        let mut ctx = BindCtx {
            cluster: &self.cache,
            store,
            now,
            stamp: &stamp,
        };
        self.frameworks[waiting.profile].run_unreserve(&mut ctx, &mut waiting.cycle, &waiting.node);
    }

    /// PreBind and Bind for a pod reserved on `node`: bound, waiting (asked again at the wait's
    /// deadline or when an event concerns the pod), or, when PreBind fails, unreserved and
    /// scheduled again preferring other nodes.
    fn binding_cycle(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        (p, mut cycle): (usize, Cycle),
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
            self.frameworks[p].run_pre_bind(&mut ctx, &mut cycle, &node)
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
            for object in self.frameworks[p].wait_for(&cycle) {
                self.waiters.entry(object).or_default().insert(key.clone());
            }
            self.waiting.insert(
                key.clone(),
                Waiting {
                    profile: p,
                    node,
                    cycle,
                },
            );
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
            self.frameworks[p].run_unreserve(&mut ctx, &mut cycle, &node);
            return self.attempt(store, key, now);
        }
        self.forget(key);
        self.avoid.remove(key);
        self.backoff.remove(key);
        let status = {
            let mut ctx = BindCtx {
                cluster: &self.cache,
                store,
                now,
                stamp: &stamp,
            };
            self.frameworks[p].run_bind(&mut ctx, &mut cycle, &node)
        };
        self.own_writes.remove(key);
        if !status.is_success() {
            let wait_for = self.frameworks[p].wait_for(&cycle);
            return self.mark_not_scheduled(
                store,
                key,
                (POD_SCHEDULER_ERROR, status.message()),
                wait_for,
                (p, 0),
                now,
            );
        }
        self.note_gang(store, key, Ok(()), now)?;
        Ok(Action::Done)
    }

    /// Pods kept out of the queue by PreEnqueue that belong to `group`: a new pod or a change
    /// of the PodGroup may let them in.
    fn gated_in_group(&self, store: &Store, group: Option<(String, String)>) -> Vec<ObjectKey> {
        let Some(group) = group else {
            return Vec::new();
        };
        self.gated
            .iter()
            .filter(|k| {
                store
                    .get::<Pod>(&k.namespace, &k.name)
                    .is_some_and(|p| cache::pod_group_key(p).as_ref() == Some(&group))
            })
            .cloned()
            .collect()
    }

    /// The events an assigned pod's add or update is: bound now, or its labels changed.
    fn assigned_pod_events(&self, key: &ObjectKey, pod: &Pod) -> EventSet {
        if !is_assigned(pod) {
            return 0;
        }
        match self.cache.assigned_pod(key) {
            None => queueing::ASSIGNED_POD_ADDED,
            Some(info) if info.pod.metadata.labels != pod.metadata.labels => {
                queueing::ASSIGNED_POD_LABEL
            }
            Some(_) => 0,
        }
    }

    /// The events a node's update is, against the cache's copy.
    fn node_events(&self, node: &allot_api::core::v1::Node) -> EventSet {
        let Some(state) = self.cache.node_by_name(&node.metadata.name) else {
            return queueing::NODE_ADDED;
        };
        let old = &state.node;
        let mut events = 0;
        if old.metadata.labels != node.metadata.labels {
            events |= queueing::NODE_LABEL;
        }
        if old.spec.taints != node.spec.taints || old.spec.unschedulable != node.spec.unschedulable
        {
            events |= queueing::NODE_TAINT;
        }
        if old.status.allocatable != node.status.allocatable {
            events |= queueing::NODE_ALLOCATABLE;
        }
        if old.status.images != node.status.images {
            events |= queueing::NODE_IMAGES;
        }
        events
    }

    /// The pods an event wakes, and what it is: pods it concerns directly (itself, a claim's
    /// consumers, pods waiting for that object, gang members PreEnqueue let in), and the
    /// cluster events it is for the queueing hints.
    fn classify(&self, event: &Event, store: &Store) -> (Vec<ObjectKey>, EventSet) {
        match (&event.object, event.event_type) {
            (Stored::Pod(pod), EventType::Deleted) => {
                let mut keys = Vec::new();
                if self.unschedulable.contains_key(&event.key)
                    || self.waiting.contains_key(&event.key)
                    || self.permit_waiting.contains_key(&event.key)
                {
                    keys.push(event.key.clone());
                }
                let events = if is_assigned(pod) {
                    queueing::ASSIGNED_POD_DELETED
                } else {
                    0
                };
                (keys, events)
            }
            (Stored::Pod(pod), event_type) => {
                let mut events = self.assigned_pod_events(&event.key, pod);
                let mut keys = Vec::new();
                if self.terminating.contains_key(&event.key) {
                    keys.push(event.key.clone());
                }
                if self.nomination_ended.replace(false) {
                    // The room held for a nominated pod is free again.
                    events |= queueing::ALL;
                }
                if event_type == EventType::Added {
                    keys.extend(self.gated_in_group(store, cache::pod_group_key(pod)));
                }
                if self
                    .own_writes
                    .get(&event.key)
                    .is_some_and(|rv| *rv == Some(event.resource_version))
                {
                    return (keys, events);
                }
                if self.wants(pod)
                    || self.waiting.contains_key(&event.key)
                    || self.permit_waiting.contains_key(&event.key)
                {
                    keys.push(event.key.clone());
                } else if is_terminal(pod) && pod.spec.node_name.is_some() {
                    events |= queueing::ASSIGNED_POD_DELETED;
                }
                (keys, events)
            }
            (Stored::Node(_), EventType::Added) => (Vec::new(), queueing::NODE_ADDED),
            (Stored::Node(_), EventType::Deleted) => (Vec::new(), queueing::NODE_DELETED),
            (Stored::Node(node), _) => (Vec::new(), self.node_events(node)),
            (Stored::ResourceSlice(_), EventType::Added | EventType::Modified) => {
                (Vec::new(), queueing::DRA)
            }
            (Stored::DeviceClass(_) | Stored::DeviceTaintRule(_), _) => (Vec::new(), queueing::DRA),
            (Stored::PodGroup(_), _) => {
                if self.own_group_writes.get(&event.key) == Some(&event.resource_version) {
                    return (Vec::new(), 0);
                }
                let group = (event.key.namespace.to_string(), event.key.name.to_string());
                (self.gated_in_group(store, Some(group)), queueing::POD_GROUP)
            }
            (Stored::Namespace(_), _) => (Vec::new(), queueing::NAMESPACE),
            (Stored::ResourceClaim(claim), event_type) => {
                if self.unschedulable.is_empty() && self.waiting.is_empty() {
                    return (Vec::new(), 0);
                }
                let mut keys: Vec<ObjectKey> = Vec::new();
                let ns = claim.metadata.namespace.as_str();
                let freed = (event_type == EventType::Deleted || claim.status.allocation.is_none())
                    && self.cache.claim_allocated(&event.key);
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
                (keys, if freed { queueing::DRA } else { 0 })
            }
            _ => match event.key.kind {
                Kind::PersistentVolumeClaim
                | Kind::PersistentVolume
                | Kind::StorageClass
                | Kind::CSINode
                | Kind::CSIDriver
                | Kind::CSIStorageCapacity
                | Kind::VolumeAttachment => (Vec::new(), queueing::STORAGE),
                _ => (Vec::new(), 0),
            },
        }
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

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        let (mut keys, events) = self.classify(event, store);
        self.wake_hinted(&keys);
        if events != 0 && !self.unschedulable.is_empty() {
            keys.extend(self.wake_parked(events));
        }
        // In key order, each once.
        keys.sort_unstable();
        keys.dedup();
        keys
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
mod queue_tests;

#[cfg(test)]
mod explain_tests;

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

#[cfg(test)]
mod volume_properties;
