//! The extension points (upstream `framework/interface.go`): one trait per point; a plugin
//! implements the ones it needs and hands them out through [`Plugin`].

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::Arc;

use allot_api::core::v1::Pod;
use allot_runtime::SimTime;
use allot_store::{Event, ObjectKey, Store};

use crate::cache::{Cache, NodeInfo, NodeSummary};

use super::cycle_state::{CycleState, StateData};
use super::status::Status;
use super::types::{NodeScore, PodInfo, PreFilterResult};

/// What plugins read during a scheduling cycle: the scheduler's view of the cluster.
pub struct Ctx<'a> {
    /// The cluster (nodes with their pods, slices, claims, classes, namespaces).
    pub cluster: &'a Cache,
    /// The simulated time.
    pub now: SimTime,
}

/// What PreFilter plugins get: the cluster view, and the store for the few that must write
/// before filtering (DynamicResources deallocates claims whose binding failed).
pub struct PreFilterCtx<'a> {
    /// The cluster view.
    pub cluster: &'a Cache,
    /// The store.
    pub store: &'a mut Store,
    /// The simulated time.
    pub now: SimTime,
}

/// What the binding cycle's points (Reserve, Permit, PreBind, Bind, PostFilter) get.
pub struct BindCtx<'a> {
    /// The cluster view (as of the scheduling cycle).
    pub cluster: &'a Cache,
    /// The store the plugins write to.
    pub store: &'a mut Store,
    /// The simulated time.
    pub now: SimTime,
    /// `now` in RFC 3339.
    pub stamp: &'a str,
}

/// A plugin: a name, and the extension points it implements.
pub trait Plugin {
    /// The name profiles use (`NodeResourcesFit`, ...).
    fn name(&self) -> &'static str;
    /// PreEnqueue.
    fn as_pre_enqueue(&mut self) -> Option<&mut dyn PreEnqueuePlugin> {
        None
    }
    /// QueueSort.
    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        None
    }
    /// PreFilter (with its AddPod/RemovePod extensions).
    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        None
    }
    /// Filter.
    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        None
    }
    /// PostFilter.
    fn as_post_filter(&mut self) -> Option<&mut dyn PostFilterPlugin> {
        None
    }
    /// PreScore.
    fn as_pre_score(&mut self) -> Option<&mut dyn PreScorePlugin> {
        None
    }
    /// Score and NormalizeScore.
    fn as_score(&mut self) -> Option<&mut dyn ScorePlugin> {
        None
    }
    /// Reserve and Unreserve.
    fn as_reserve(&mut self) -> Option<&mut dyn ReservePlugin> {
        None
    }
    /// Permit.
    fn as_permit(&mut self) -> Option<&mut dyn PermitPlugin> {
        None
    }
    /// PreBind.
    fn as_pre_bind(&mut self) -> Option<&mut dyn PreBindPlugin> {
        None
    }
    /// Bind.
    fn as_bind(&mut self) -> Option<&mut dyn BindPlugin> {
        None
    }
    /// The cluster events that may make a pod this plugin rejected schedulable.
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        None
    }
}

/// Decides whether a pod may enter the scheduling queue at all.
pub trait PreEnqueuePlugin {
    /// Success lets the pod in; a rejection keeps it out (no attempt, no condition written).
    /// `cluster` is the scheduler's view (PodGroups and their pods, for GangScheduling).
    fn pre_enqueue(&mut self, cluster: &Cache, pod: &Pod) -> Status;
}

/// A pod waiting in the scheduling queue.
#[derive(Debug, Clone)]
pub struct QueuedPodInfo {
    /// The pod's key.
    pub key: ObjectKey,
    /// The pod.
    pub pod: Arc<Pod>,
    /// When it was (last) added to the queue.
    pub timestamp: SimTime,
}

/// Orders the scheduling queue (only one per profile).
pub trait QueueSortPlugin {
    /// Whether `a` goes before `b`. The queue breaks remaining ties by the pods' keys
    /// (namespace, then name).
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool;
}

/// Runs once per scheduling cycle before filtering.
pub trait PreFilterPlugin {
    /// Computes the plugin's cycle state. `Skip` skips its Filter; a rejection makes the pod
    /// unschedulable on every node with this message; a result may narrow the nodes.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status);

    /// Updates the cycle state as if `added` ran on `node` (for preemption's what-ifs).
    fn add_pod(
        &mut self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _added: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }

    /// Updates the cycle state as if `removed` no longer ran on `node`.
    fn remove_pod(
        &mut self,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _removed: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        Status::success()
    }
}

/// When a node passes a plugin's filter for sure, judged from its [`NodeSummary`] alone (the
/// framework's fast node walk): a plugin may offer this; correctness never depends on it, since
/// a node for which any active plugin is unsure runs the full filters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryPass {
    /// Every node passes this plugin's filter for this pod.
    Always,
    /// Nodes whose summary is plain (schedulable, untainted) pass.
    IfPlain,
    /// Nodes with room for `[cpu, memory, ephemeral storage]` and one more pod pass (the
    /// request has no scalar resources).
    IfFits([i64; 3]),
    /// Nodes pass when this plugin's own filter passes them, run alone (the other plugins
    /// passing on the summary): for a filter that is cheap on its own, so the others need not
    /// run on every node.
    IfOwnFilter,
    /// The summary says nothing: run the filter.
    Never,
}

/// A plugin's cheap verdicts for this cycle (see [`SummaryPass`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SummaryCheck {
    /// When a node passes.
    pub pass: SummaryPass,
    /// A node with fewer free devices than this fails the filter for sure (a proof the
    /// framework uses to pass over it; its status is worked out only if the pod fits nowhere).
    pub min_free_devices: usize,
}

impl SummaryCheck {
    /// No cheap verdict.
    pub const NONE: SummaryCheck = SummaryCheck {
        pass: SummaryPass::Never,
        min_free_devices: 0,
    };

    /// Passes every node.
    pub const ALWAYS: SummaryCheck = SummaryCheck {
        pass: SummaryPass::Always,
        min_free_devices: 0,
    };
}

/// An explanation a filter plugin gives of its rejections, beyond its reasons.
pub struct Explanation {
    /// The text appended to the pod's message.
    pub text: String,
    /// What the plugin needs to write it again for an equivalent pod (see
    /// [`FilterPlugin::rerender`]); `None` when the text does not depend on the pod.
    pub data: Option<Box<dyn StateData>>,
}

impl Explanation {
    /// The reasons of `rejected`, each once in the order first given, with the nodes that gave
    /// each (in `rejected`'s order).
    pub fn by_reason<'a>(
        rejected: &'a [(&'a NodeInfo, &'a Status)],
    ) -> Vec<(&'a str, Vec<&'a NodeInfo>)> {
        let mut groups: Vec<(&str, Vec<&NodeInfo>)> = Vec::new();
        for (node, status) in rejected {
            for reason in status.reasons() {
                let reason = reason.as_ref();
                match groups.iter_mut().find(|(r, _)| *r == reason) {
                    Some((_, nodes)) => {
                        if nodes.last().is_none_or(|last| !std::ptr::eq(*last, *node)) {
                            nodes.push(node)
                        }
                    }
                    None => groups.push((reason, vec![*node])),
                }
            }
        }
        groups
    }

    /// The usual layout, the plugin's name, then per reason (in order of first appearance)
    /// the number of nodes and one line per node:
    ///
    /// ```text
    /// NodePorts:
    ///   2 node(s) didn't have free ports for the requested pod ports:
    ///     n1: 8080/TCP by default/web-0
    ///     n2: 8080/TCP by default/web-1
    /// ```
    ///
    /// `detail` gives a node's line for one of its reasons (`None`: no line).
    pub fn grouped(
        plugin: &str,
        rejected: &[(&NodeInfo, &Status)],
        mut detail: impl FnMut(&NodeInfo, &str) -> Option<String>,
    ) -> Explanation {
        use std::fmt::Write as _;
        let mut text = format!("{plugin}:");
        for (reason, nodes) in Self::by_reason(rejected) {
            let _ = write!(text, "\n  {} {reason}:", nodes.len());
            for node in nodes {
                if let Some(d) = detail(node, reason) {
                    let _ = write!(text, "\n    {}: {d}", node.name);
                }
            }
        }
        Explanation { text, data: None }
    }
}

impl Clone for Explanation {
    fn clone(&self) -> Self {
        Explanation {
            text: self.text.clone(),
            data: self.data.as_ref().map(|d| (**d).clone_data()),
        }
    }
}

impl std::fmt::Debug for Explanation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Explanation")
            .field("text", &self.text)
            .finish()
    }
}

/// Decides whether the pod fits on one node.
pub trait FilterPlugin {
    /// The node passes (Success), or why not.
    fn filter(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status;

    /// What this plugin's filter decides from node summaries for this cycle.
    fn summary_check(&self, _state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        SummaryCheck::NONE
    }

    /// Whether this (expensive) filter may run after scoring, best node first, instead of on
    /// every node: the framework does so only when no other score depends on which nodes are
    /// feasible.
    fn deferrable(&self, _state: &CycleState) -> bool {
        false
    }

    /// allot's explanation of this plugin's rejections (`rejected`: every node it rejected,
    /// in name order, with its status), appended to the pod's message. `Err` stops the
    /// attempt with that error (a filter error found while explaining).
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        Ok(None)
    }

    /// Whether this plugin's verdicts for the pod may be reused for an equivalent pod in the
    /// same cluster state (the scheduler's failure memo).
    fn cacheable(&self, _state: &CycleState) -> bool {
        true
    }

    /// What, besides the pod itself, this plugin's verdicts depend on (part of the failure
    /// memo's key).
    fn signature(&self, _state: &CycleState) -> String {
        String::new()
    }

    /// The explanation of an earlier, equivalent pod's failure, written for this pod.
    fn rerender(&self, _state: &CycleState, _pod: &PodInfo, explanation: &Explanation) -> String {
        explanation.text.clone()
    }
}

/// Per rejected node, its status; nodes not listed were not rejected (or not looked at).
pub type NodeStatuses = [(usize, Status)];

/// What a PostFilter plugin may ask of the rest of the profile (upstream's framework handle,
/// as preemption uses it): the other plugins' Filters and PreFilter extensions, run on a node
/// state and a cycle state the caller changed.
pub trait FilterHandle {
    /// Every active Filter plugin on `node`, in profile order (upstream
    /// `RunFilterPluginsWithNominatedPods`: pods nominated to the node with a priority at
    /// least the pod's count as placed there): the first rejection,
    /// with its plugin, or Success.
    fn run_filters(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
    /// Every active PreFilter plugin's `remove_pod` (upstream `RunPreFilterExtensionRemovePod`).
    fn remove_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
    /// Every active PreFilter plugin's `add_pod` (upstream `RunPreFilterExtensionAddPod`).
    fn add_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
    ) -> Status;
}

/// A pod a PostFilter plugin marked for deletion: the scheduler deletes it once its grace
/// period has passed on the clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Victim {
    /// The pod.
    pub key: ObjectKey,
    /// Its grace period in seconds (`terminationGracePeriodSeconds`).
    pub grace_seconds: i64,
}

/// What a PostFilter plugin decided (upstream `PostFilterResult` and status).
#[derive(Debug, Clone)]
pub struct PostFilterOutcome {
    /// The node nominated for the pod, if any.
    pub nominated: Option<String>,
    /// A status whose message is appended to the pod's message.
    pub status: Status,
    /// Pods marked for deletion to make room.
    pub victims: Vec<Victim>,
}

/// Runs when no node fits (preemption).
pub trait PostFilterPlugin {
    /// The plugin's decision; `handle` runs the other plugins for what-ifs.
    fn post_filter(
        &mut self,
        ctx: &mut BindCtx<'_>,
        handle: &mut dyn FilterHandle,
        state: &mut CycleState,
        pod: &PodInfo,
        statuses: &NodeStatuses,
    ) -> PostFilterOutcome;
}

/// Runs once per scoring round before Score.
pub trait PreScorePlugin {
    /// Computes the plugin's cycle state for the feasible nodes (`nodes`: their slots, in name
    /// order); `Skip` skips its Score.
    fn pre_score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[usize],
    ) -> Status;
}

/// Scores feasible nodes (0..=100 after NormalizeScore; the framework multiplies by the
/// plugin's weight and sums).
pub trait ScorePlugin {
    /// The node's raw score.
    fn score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status>;

    /// Raw scores from the node summaries alone where the plugin can tell (the framework's
    /// fast path; must equal [`ScorePlugin::score`]): `out[i].score` for node `out[i].slot`,
    /// left at [`UNSCORED`] where the plugin needs the full node. A plugin reads its cycle
    /// state once for the whole batch.
    fn score_summaries(
        &mut self,
        _state: &CycleState,
        _summaries: &[NodeSummary],
        _out: &mut [NodeScore],
    ) {
    }

    /// NormalizeScore over every scored node.
    fn normalize(&mut self, _state: &CycleState, _pod: &PodInfo, _scores: &mut [NodeScore]) {}

    /// Whether NormalizeScore reads other nodes' scores (a maximum, a minimum), so that a
    /// node's normalized score depends on which nodes are feasible.
    fn normalize_depends_on_set(&self) -> bool {
        false
    }
}

/// Reserves (in memory or in the store) what the pod needs on the chosen node.
pub trait ReservePlugin {
    /// Reserves; a failure undoes the reservations made so far.
    fn reserve(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status;
    /// Undoes `reserve` (called in reverse order; must tolerate a reserve that did not run).
    fn unreserve(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    );
}

/// Approves, denies or delays the binding.
pub trait PermitPlugin {
    /// Success, a rejection, or `Wait`.
    fn permit(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status;
}

/// Prepares the binding (writes what the pod needs; may wait for other components).
pub trait PreBindPlugin {
    /// Success, `Wait` (asked again at the status's retry time or when an event concerns the
    /// pod), or a failure (the framework then unreserves and the pod is scheduled again).
    fn pre_bind(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status;
}

/// Binds the pod to the node.
pub trait BindPlugin {
    /// Success when bound, `Skip` to leave it to the next bind plugin.
    fn bind(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status;
}

/// Which cluster events may make a pod a plugin rejected schedulable (upstream
/// `EventsToRegister`, without per-pod hints).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClusterEvents {
    /// A pod was bound, or a bound pod's labels changed.
    pub assigned_pod_added_or_relabelled: bool,
    /// A namespace's labels changed.
    pub namespace_changed: bool,
}

/// Registration of the events that may make pods this plugin rejected schedulable, and of
/// objects whose changes concern a pod it rejected.
pub trait EnqueueExtensions {
    /// The events.
    fn events(&self) -> ClusterEvents;

    /// Objects whose every change should retry the pod (claims it waits for).
    fn wait_for(&self, _state: &CycleState) -> Vec<ObjectKey> {
        Vec::new()
    }

    /// The cluster events after which a pod this plugin rejected may fit (upstream
    /// `EventsToRegister`), as [`queueing`] bits. The default, every event, is always safe.
    fn requeue_on(&self) -> EventSet {
        queueing::ALL
    }

    /// Whether a store event concerns this plugin's interest (beyond [`EnqueueExtensions::events`]).
    fn concerns(&self, _event: &Event) -> bool {
        false
    }
}

/// Cluster events, as bits of [`queueing`].
pub type EventSet = u32;

/// The cluster events the scheduling queue tells apart (upstream `ClusterEvent`s: a resource
/// and an action), as bits.
pub mod queueing {
    use super::EventSet;
    /// A pod was bound to a node.
    pub const ASSIGNED_POD_ADDED: EventSet = 1;
    /// A bound pod's labels changed.
    pub const ASSIGNED_POD_LABEL: EventSet = 1 << 1;
    /// A bound pod was deleted or ended (its resources, ports and terms are gone).
    pub const ASSIGNED_POD_DELETED: EventSet = 1 << 2;
    /// A node was added.
    pub const NODE_ADDED: EventSet = 1 << 3;
    /// A node's labels changed.
    pub const NODE_LABEL: EventSet = 1 << 4;
    /// A node's taints or `spec.unschedulable` changed.
    pub const NODE_TAINT: EventSet = 1 << 5;
    /// A node's allocatable resources changed.
    pub const NODE_ALLOCATABLE: EventSet = 1 << 6;
    /// A node was deleted.
    pub const NODE_DELETED: EventSet = 1 << 7;
    /// A namespace was added or its labels changed.
    pub const NAMESPACE: EventSet = 1 << 8;
    /// A ResourceClaim, ResourceSlice, DeviceClass or DeviceTaintRule changed.
    pub const DRA: EventSet = 1 << 9;
    /// A PodGroup changed.
    pub const POD_GROUP: EventSet = 1 << 10;
    /// A storage object changed (PersistentVolume(Claim), StorageClass, CSINode, CSIDriver,
    /// CSIStorageCapacity, VolumeAttachment).
    pub const STORAGE: EventSet = 1 << 11;
    /// A node's images changed.
    pub const NODE_IMAGES: EventSet = 1 << 12;
    /// Every event.
    pub const ALL: EventSet = EventSet::MAX;
}

/// A pod's plugins that rejected it, as bits of their index in the profile.
pub type PluginSet = u64;

/// Downcasting helper for [`Explanation::data`].
pub fn explanation_data<T: Any>(explanation: &Explanation) -> Option<&T> {
    explanation
        .data
        .as_ref()
        .and_then(|d| (**d).as_any().downcast_ref())
}

/// Node names as a set (for PreFilter results).
pub fn node_names<I: IntoIterator<Item = S>, S: Into<String>>(names: I) -> BTreeSet<String> {
    names.into_iter().map(Into::into).collect()
}
