//! kube-scheduler's scheduling framework: extension points, plugin state, statuses, profiles,
//! and the runtime that runs a profile's plugins for a pod.
//!
//! As upstream: a plugin implements only the points it needs (see [`Plugin`]) and keeps its
//! per-cycle state in the [`CycleState`] under a type private to its module; a profile is data
//! (which plugins at which points, their weights and arguments); the framework runs the points
//! in order and knows no plugin by name.
//!
//! Beyond upstream, for speed: a Filter plugin may say when a node passes for sure from the
//! node's compact [`crate::cache::NodeSummary`] ([`SummaryCheck`]), and a Score plugin may score
//! from it ([`ScorePlugin::score_summaries`]); the framework then walks nodes without touching
//! their full state. Whenever any active plugin is unsure about a node, every filter runs on it,
//! so a result never depends on the fast path. An expensive filter (DynamicResources, which runs
//! the device allocator) may be deferred until after scoring and run best node first, when no
//! other score depends on which nodes are feasible ([`FilterPlugin::deferrable`]).

mod cycle_state;
mod diagnosis;
mod interface;
mod profile;
mod queue;
mod runtime;
mod status;
mod types;

pub use cycle_state::{CycleState, StateData};
pub use diagnosis::{Diagnosis, FitError};
pub use interface::{
    BindCtx, BindPlugin, ClusterEvents, Ctx, EnqueueExtensions, EventSet, Explanation,
    FilterHandle, FilterPlugin, NodeStatuses, PermitPlugin, Plugin, PluginSet, PostFilterOutcome,
    PostFilterPlugin, PreBindPlugin, PreEnqueuePlugin, PreFilterCtx, PreFilterPlugin,
    PreScorePlugin, QueueSortPlugin, QueuedPodInfo, ReservePlugin, ScorePlugin, SummaryCheck,
    SummaryPass, Victim, explanation_data, node_names, queueing,
};
pub use profile::{PluginConfig, PointEntry, Profile};
pub use queue::ActiveQueue;
pub use runtime::{Cycle, CycleOutcome, Framework, PluginBuilder, nodes_to_find};
pub use status::{Code, Reason, Status};
pub use types::{
    AffinityTerm, BIND_ALL, HostPort, MAX_NODE_SCORE, NodeScore, PodInfo, PreFilterResult,
    UNSCORED, WeightedAffinityTerm, default_normalize_score, host_ports,
};
