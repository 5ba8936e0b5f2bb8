//! The framework runtime: a profile's plugins instantiated, and the code that runs them for a
//! pod (upstream `frameworkImpl` and `schedulePod`).
//!
//! Node choice as upstream: nodes are filtered in a rotating order starting where the previous
//! attempt stopped, until `numFeasibleNodesToFind` feasible nodes are found; those are scored by
//! every Score plugin, normalized, multiplied by the plugins' weights and summed. Upstream
//! breaks ties between equally good nodes at random; here the node whose name sorts first wins,
//! so runs are deterministic.

use std::collections::BTreeSet;

use allot_store::ObjectKey;

use crate::cache::NodeSummary;

use super::cycle_state::CycleState;
use super::diagnosis::{Diagnosis, FitError};
use super::interface::{
    BindCtx, ClusterEvents, Ctx, EventSet, Explanation, FilterHandle, Plugin, PluginSet,
    PreFilterCtx, QueueSortPlugin, SummaryPass, Victim, queueing,
};
use super::profile::{PluginConfig, Profile};
use super::status::{Code, Status};
use super::types::{MAX_NODE_SCORE, NodeScore, PodInfo, PreFilterResult, UNSCORED};

/// Builds a plugin from its configuration (the registry).
pub type PluginBuilder<'a> = dyn FnMut(&PluginConfig) -> Result<Box<dyn Plugin>, String> + 'a;

/// The most plugins a profile can have (plugin sets are 64-bit masks).
const MAX_PLUGINS: usize = 64;

/// One pod's scheduling cycle: the pod and the plugins' state.
#[derive(Debug, Clone)]
pub struct Cycle {
    /// The pod.
    pub pod: PodInfo,
    /// The plugins' state.
    pub state: CycleState,
}

impl Cycle {
    /// A new cycle for a pod.
    pub fn new(pod: PodInfo) -> Self {
        Cycle {
            pod,
            state: CycleState::new(),
        }
    }
}

/// How a scheduling cycle ended.
#[derive(Debug)]
pub enum CycleOutcome {
    /// The pod goes to this node (slot in the cache).
    Scheduled {
        /// The node's slot.
        slot: usize,
        /// How many nodes the first batch looked at.
        processed: usize,
    },
    /// The pod fits nowhere.
    Unschedulable {
        /// Why (the message kube-scheduler writes).
        error: FitError,
        /// allot's explanations, per filter plugin (index in the profile), in plugin order.
        explanations: Vec<(usize, Explanation)>,
        /// The plugins that rejected the pod on some node (or at PreFilter).
        rejected_by: PluginSet,
        /// How many nodes were looked at.
        processed: usize,
    },
    /// A plugin failed; the attempt stops with this message (reason `SchedulerError`).
    Error(String),
}

/// The extension points, as indexes of plugins in the profile.
#[derive(Debug, Default)]
struct Points {
    pre_enqueue: Vec<usize>,
    queue_sort: Option<usize>,
    pre_filter: Vec<usize>,
    filter: Vec<usize>,
    post_filter: Vec<usize>,
    pre_score: Vec<usize>,
    score: Vec<(usize, i64)>,
    reserve: Vec<usize>,
    permit: Vec<usize>,
    pre_bind: Vec<usize>,
    bind: Vec<usize>,
}

/// A profile's plugins, ready to run.
pub struct Framework {
    plugins: Vec<Box<dyn Plugin>>,
    names: Vec<&'static str>,
    points: Points,
    percentage: u32,
    scheduler_name: String,
    /// Where the next attempt starts walking nodes (upstream `nextStartNodeIndex`).
    pub next_start: usize,
    /// Reused buffers of the scoring round (no allocation per pod).
    spare: Vec<Vec<NodeScore>>,
}

impl std::fmt::Debug for Framework {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Framework")
            .field("plugins", &self.names)
            .field("points", &self.points)
            .finish()
    }
}

/// Upstream `numFeasibleNodesToFind`: every node below 100; else `percentage` (0: adaptive,
/// 50% minus 1% per 125 nodes, at least 5%) of them, at least 100.
pub fn nodes_to_find(percentage: u32, all: usize) -> usize {
    const MIN_FEASIBLE: usize = 100;
    const MIN_PERCENT: i64 = 5;
    let percentage = i64::from(percentage);
    if all < MIN_FEASIBLE || percentage >= 100 {
        return all;
    }
    let mut adaptive = percentage;
    if adaptive <= 0 {
        adaptive = (50 - all as i64 / 125).max(MIN_PERCENT);
    }
    (all * adaptive as usize / 100).max(MIN_FEASIBLE)
}

/// The extension points a profile lists plugins for, in the order they run.
const POINTS: [&str; 11] = [
    "PreEnqueue",
    "QueueSort",
    "PreFilter",
    "Filter",
    "PostFilter",
    "PreScore",
    "Score",
    "Reserve",
    "Permit",
    "PreBind",
    "Bind",
];

/// Whether a plugin implements an extension point.
fn implements(plugin: &mut dyn Plugin, point: &str) -> bool {
    match point {
        "PreEnqueue" => plugin.as_pre_enqueue().is_some(),
        "QueueSort" => plugin.as_queue_sort().is_some(),
        "PreFilter" => plugin.as_pre_filter().is_some(),
        "Filter" => plugin.as_filter().is_some(),
        "PostFilter" => plugin.as_post_filter().is_some(),
        "PreScore" => plugin.as_pre_score().is_some(),
        "Score" => plugin.as_score().is_some(),
        "Reserve" => plugin.as_reserve().is_some(),
        "Permit" => plugin.as_permit().is_some(),
        "PreBind" => plugin.as_pre_bind().is_some(),
        "Bind" => plugin.as_bind().is_some(),
        _ => false,
    }
}

/// The plugins (indexes in the profile) at one point, in their order there: the profile's
/// `point_order` for the point when it has one, else every plugin implementing it in profile
/// order except where disabled.
fn point_indexes(
    profile: &Profile,
    plugins: &mut [Box<dyn Plugin>],
    point: &str,
) -> Result<Vec<usize>, String> {
    let mut out = Vec::new();
    let Some((_, entries)) = profile.point_order.iter().find(|(p, _)| p == point) else {
        for (i, config) in profile.plugins.iter().enumerate() {
            if implements(&mut *plugins[i], point)
                && !config.disabled_points.iter().any(|d| d == point)
            {
                out.push(i);
            }
        }
        return Ok(out);
    };
    for entry in entries {
        let Some(i) = profile.plugins.iter().position(|p| p.name == entry.name) else {
            return Err(format!("{point}Plugin {:?} does not exist", entry.name));
        };
        if !implements(&mut *plugins[i], point) {
            if entry.explicit {
                return Err(format!(
                    "plugin {:?} does not extend {point}Plugin plugin",
                    entry.name
                ));
            }
            continue;
        }
        if out.contains(&i) {
            return Err(format!(
                "plugin {:?} already registered as \"{point}Plugin\"",
                entry.name
            ));
        }
        out.push(i);
    }
    Ok(out)
}

/// A candidate node of the scoring round: its slot and its position in name order.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    slot: usize,
    rank: usize,
}

impl Framework {
    /// Instantiates a profile's plugins with `build` (the plugin registry).
    pub fn new(profile: &Profile, build: &mut PluginBuilder<'_>) -> Result<Framework, String> {
        if profile.plugins.len() > MAX_PLUGINS {
            return Err(format!(
                "profile {:?} has {} plugins, more than {MAX_PLUGINS}",
                profile.scheduler_name,
                profile.plugins.len()
            ));
        }
        let mut plugins: Vec<Box<dyn Plugin>> = Vec::new();
        let mut names = Vec::new();
        for (i, config) in profile.plugins.iter().enumerate() {
            if profile.plugins[..i].iter().any(|p| p.name == config.name) {
                return Err(format!(
                    "plugin {:?} already registered as {:?}",
                    config.name, config.name
                ));
            }
            let plugin = build(config)?;
            names.push(plugin.name());
            plugins.push(plugin);
        }
        let mut points = Points::default();
        for point in POINTS {
            let order = point_indexes(profile, &mut plugins, point)?;
            for i in order {
                match point {
                    "PreEnqueue" => points.pre_enqueue.push(i),
                    "QueueSort" => {
                        if points.queue_sort.is_some() {
                            return Err(format!(
                                "only one queue sort plugin required for profile with scheduler name {:?}, but got 2",
                                profile.scheduler_name
                            ));
                        }
                        points.queue_sort = Some(i);
                    }
                    "PreFilter" => points.pre_filter.push(i),
                    "Filter" => points.filter.push(i),
                    "PostFilter" => points.post_filter.push(i),
                    "PreScore" => points.pre_score.push(i),
                    "Score" => {
                        let weight = profile.plugins[i].weight;
                        points.score.push((i, if weight == 0 { 1 } else { weight }));
                    }
                    "Reserve" => points.reserve.push(i),
                    "Permit" => points.permit.push(i),
                    "PreBind" => points.pre_bind.push(i),
                    _ => points.bind.push(i),
                }
            }
        }
        if points.queue_sort.is_none() {
            return Err(format!(
                "only one queue sort plugin required for profile with scheduler name {:?}, but got 0",
                profile.scheduler_name
            ));
        }
        if points.bind.is_empty() {
            return Err(format!(
                "at least one bind plugin is needed for profile with scheduler name {:?}",
                profile.scheduler_name
            ));
        }
        Ok(Framework {
            plugins,
            names,
            points,
            percentage: profile.percentage_of_nodes_to_score,
            scheduler_name: profile.scheduler_name.clone(),
            next_start: 0,
            spare: Vec::new(),
        })
    }

    /// The profile's scheduler name.
    pub fn scheduler_name(&self) -> &str {
        &self.scheduler_name
    }

    /// The name of plugin `index`.
    pub fn plugin_name(&self, index: usize) -> &'static str {
        self.names.get(index).copied().unwrap_or("")
    }

    /// A plugin by index (for the scheduler's own bookkeeping hooks).
    pub fn plugin(&self, index: usize) -> Option<&dyn Plugin> {
        self.plugins.get(index).map(|p| &**p)
    }

    /// The queue sort plugin.
    pub fn queue_sort(&self) -> &dyn QueueSortPlugin {
        let index = self.points.queue_sort.unwrap_or(0);
        self.plugins[index]
            .as_queue_sort()
            .expect("the QueueSort point names a QueueSort plugin")
    }

    /// How many nodes to find feasible among `all`.
    pub fn nodes_to_find(&self, all: usize) -> usize {
        nodes_to_find(self.percentage, all)
    }

    /// Runs PreEnqueue: the first plugin that does not succeed, with its status.
    pub fn run_pre_enqueue(
        &mut self,
        cluster: &crate::cache::Cache,
        pod: &allot_api::core::v1::Pod,
    ) -> Status {
        for &i in &self.points.pre_enqueue {
            let name = self.names[i];
            if let Some(p) = self.plugins[i].as_pre_enqueue() {
                let status = p.pre_enqueue(cluster, pod);
                if !status.is_success() {
                    return status.with_plugin(name);
                }
            }
        }
        Status::success()
    }

    /// The events that may make a pod rejected by `plugins` schedulable.
    pub fn events_for(&self, plugins: PluginSet) -> ClusterEvents {
        let mut out = ClusterEvents::default();
        for (i, plugin) in self.plugins.iter().enumerate() {
            if plugins & (1 << i) == 0 {
                continue;
            }
            if let Some(e) = plugin.as_enqueue_extensions() {
                let events = e.events();
                out.assigned_pod_added_or_relabelled |= events.assigned_pod_added_or_relabelled;
                out.namespace_changed |= events.namespace_changed;
            }
        }
        out
    }

    /// The cluster events after which a pod rejected by `plugins` may fit (upstream
    /// QueueingHints: the union of the plugins' `EventsToRegister`; a plugin without
    /// registration, or no plugin at all, means every event).
    pub fn requeue_events(&self, plugins: PluginSet) -> EventSet {
        if plugins == 0 {
            return queueing::ALL;
        }
        let mut out = 0;
        for (i, plugin) in self.plugins.iter().enumerate() {
            if plugins & (1 << i) == 0 {
                continue;
            }
            out |= match plugin.as_enqueue_extensions() {
                Some(e) => e.requeue_on(),
                None => queueing::ALL,
            };
        }
        out
    }

    /// Objects whose changes should retry the pod of this cycle.
    pub fn wait_for(&self, cycle: &Cycle) -> Vec<ObjectKey> {
        let mut out = Vec::new();
        for plugin in &self.plugins {
            if let Some(e) = plugin.as_enqueue_extensions() {
                out.extend(e.wait_for(&cycle.state));
            }
        }
        out
    }

    /// Runs PreFilter. `Ok` with the merged node restriction, or the outcome that ends the
    /// cycle (a rejection: the pod is unschedulable on every node; an error).
    pub fn run_pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        cycle: &mut Cycle,
    ) -> Result<(PreFilterResult, PluginSet), Box<CycleOutcome>> {
        let mut result = PreFilterResult::all_nodes();
        let mut with_nodes: Vec<&'static str> = Vec::new();
        let mut restricting: PluginSet = 0;
        for &i in &self.points.pre_filter {
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_pre_filter() else {
                continue;
            };
            let (r, status) = p.pre_filter(ctx, &mut cycle.state, &cycle.pod);
            match status.code() {
                Code::Skip => {
                    cycle.state.skip_filter(i);
                    continue;
                }
                Code::Success => {}
                _ if status.is_rejected() => {
                    return Err(Box::new(CycleOutcome::Unschedulable {
                        error: FitError {
                            num_all_nodes: ctx.cluster.node_count(),
                            diagnosis: Diagnosis {
                                pre_filter_msg: Some(status.message()),
                                ..Default::default()
                            },
                        },
                        explanations: Vec::new(),
                        rejected_by: 1 << i,
                        processed: 0,
                    }));
                }
                _ => {
                    return Err(Box::new(CycleOutcome::Error(format!(
                        "running PreFilter plugin {name:?}: {}",
                        status.message()
                    ))));
                }
            }
            if r.node_names.is_some() {
                with_nodes.push(name);
                restricting |= 1 << i;
            }
            result = result.merge(r);
            if result.node_names.as_ref().is_some_and(BTreeSet::is_empty) {
                let message = if with_nodes.len() == 1 {
                    format!("node(s) didn't satisfy plugin {}", with_nodes[0])
                } else {
                    format!(
                        "node(s) didn't satisfy plugin(s) [{}] simultaneously",
                        with_nodes.join(" ")
                    )
                };
                return Err(Box::new(CycleOutcome::Unschedulable {
                    error: FitError {
                        num_all_nodes: ctx.cluster.node_count(),
                        diagnosis: Diagnosis {
                            pre_filter_msg: Some(message),
                            ..Default::default()
                        },
                    },
                    explanations: Vec::new(),
                    rejected_by: restricting,
                    processed: 0,
                }));
            }
        }
        Ok((result, restricting))
    }

    /// The Filter plugins active for the cycle (those the node walk runs and those it defers),
    /// in profile order.
    fn active_filters(&mut self, cycle: &Cycle) -> Vec<usize> {
        let (walk, deferred, _) = self.plan(cycle);
        self.points
            .filter
            .iter()
            .copied()
            .filter(|i| walk.contains(i) || deferred.contains(i))
            .collect()
    }

    /// The active filter plugins of this cycle (not skipped), split into those that run during
    /// the node walk and the deferrable ones, with the merged summary check of the former and
    /// the device bound of all.
    fn plan(&mut self, cycle: &Cycle) -> (Vec<usize>, Vec<usize>, SummaryPlan) {
        let mut walk = Vec::new();
        let mut deferred = Vec::new();
        let mut plan = SummaryPlan {
            usable: true,
            plain: false,
            fits: None,
            min_free: 0,
            own: Vec::new(),
        };
        for &i in &self.points.filter {
            if cycle.state.filter_skipped(i) {
                continue;
            }
            let Some(filter) = self.plugins[i].as_filter() else {
                continue;
            };
            let check = filter.summary_check(&cycle.state, &cycle.pod);
            let deferrable = filter.deferrable(&cycle.state);
            plan.min_free = plan.min_free.max(check.min_free_devices);
            if deferrable {
                deferred.push(i);
                continue;
            }
            walk.push(i);
            match check.pass {
                SummaryPass::Always => {}
                SummaryPass::IfPlain => plan.plain = true,
                SummaryPass::IfFits(r) => {
                    if plan.fits.is_some_and(|f| f != r) {
                        plan.usable = false;
                    }
                    plan.fits = Some(r);
                }
                SummaryPass::IfOwnFilter => plan.own.push(i),
                SummaryPass::Never => plan.usable = false,
            }
        }
        (walk, deferred, plan)
    }

    /// Runs the walk-time filters on one node: `None` when it passes them all.
    fn filter_node(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        filters: &[usize],
        slot: usize,
    ) -> Result<Option<Status>, String> {
        let Some(node) = ctx.cluster.node(slot) else {
            return Ok(Some(Status::unresolvable("node not found")));
        };
        self.filter_node_info(ctx, cycle, filters, node)
    }

    /// [`Framework::filter_node`] on a node's state.
    fn filter_node_info(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        filters: &[usize],
        node: &crate::cache::NodeInfo,
    ) -> Result<Option<Status>, String> {
        self.filter_with_nominated(ctx, &mut cycle.state, &cycle.pod, filters, node)
    }

    /// The filters `filters` on a node's state, pods nominated to the node of higher or equal
    /// priority counting as if they ran there (upstream `RunFilterPluginsWithNominatedPods`,
    /// its first pass).
    fn filter_with_nominated(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod_info: &PodInfo,
        filters: &[usize],
        node: &crate::cache::NodeInfo,
    ) -> Result<Option<Status>, String> {
        if !ctx.cluster.nominated.is_empty() {
            let pod = &pod_info.pod;
            let key = ObjectKey::new(
                allot_store::Kind::Pod,
                pod.metadata.namespace.clone(),
                pod.metadata.name.clone(),
            );
            let nominated =
                ctx.cluster
                    .nominated_for(&node.name, pod.spec.priority.unwrap_or(0), &key);
            if !nominated.is_empty() {
                let mut copy = node.clone();
                for q in &nominated {
                    let requests = crate::resources::pod_requests(&q.pod);
                    let non_zero = crate::resources::pod_non_zero_requests_with(&q.pod, &requests);
                    copy.add_pod(std::sync::Arc::clone(q), &requests, non_zero);
                    let status = self.pre_filter_extension(state, pod_info, q, &copy, true);
                    if !status.is_success() {
                        return Err(status.message());
                    }
                }
                let out = self.filter_with(ctx, state, pod_info, filters, &copy);
                // The cycle state goes back to the node without them.
                for q in &nominated {
                    let status = self.pre_filter_extension(state, pod_info, q, &copy, false);
                    if !status.is_success() {
                        return Err(status.message());
                    }
                }
                return out;
            }
        }
        self.filter_with(ctx, state, pod_info, filters, node)
    }

    /// The filters `filters` on a node's state, with a given cycle state and pod.
    fn filter_with(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        filters: &[usize],
        node: &crate::cache::NodeInfo,
    ) -> Result<Option<Status>, String> {
        for &i in filters {
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_filter() else {
                continue;
            };
            let status = p.filter(ctx, state, pod, node);
            if status.is_success() {
                continue;
            }
            if !status.is_rejected() {
                return Err(format!(
                    "running {name:?} filter plugin: {}",
                    status.message()
                ));
            }
            return Ok(Some(status.with_plugin(name)));
        }
        Ok(None)
    }

    /// Whether the named plugin skipped itself at PreFilter in this cycle.
    pub fn filter_skipped(&self, cycle: &Cycle, plugin: &str) -> bool {
        self.names
            .iter()
            .position(|n| *n == plugin)
            .is_some_and(|i| cycle.state.filter_skipped(i))
    }

    /// Runs every active Filter plugin on a node in order (upstream `RunFilterPlugins`): the
    /// first status that is not Success, with its plugin, or Success.
    pub fn run_filter_plugins(&mut self, ctx: &Ctx<'_>, cycle: &mut Cycle, slot: usize) -> Status {
        let all = self.active_filters(cycle);
        match self.filter_node(ctx, cycle, &all, slot) {
            Ok(None) => Status::success(),
            Ok(Some(status)) => status,
            Err(message) => Status::error(message),
        }
    }

    /// Runs PreScore and Score on the nodes in `slots` (upstream `RunPreScorePlugins` and
    /// `RunScorePlugins`): per node, the weighted sum of the normalized scores (a skipped
    /// plugin adds 0).
    pub fn run_score_plugins(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        slots: &[usize],
    ) -> Result<Vec<NodeScore>, String> {
        self.run_pre_score(ctx, cycle, slots)?;
        let mut totals: Vec<NodeScore> = slots
            .iter()
            .map(|&slot| NodeScore { slot, score: 0 })
            .collect();
        for (i, weight) in self.points.score.clone() {
            if cycle.state.score_skipped(i) {
                continue;
            }
            let mut scores = self.raw_scores(ctx, cycle, i, slots)?;
            if let Some(s) = self.plugins[i].as_score() {
                s.normalize(&cycle.state, &cycle.pod, &mut scores);
            }
            for (t, s) in totals.iter_mut().zip(&scores) {
                t.score += s.score * weight;
            }
        }
        Ok(totals)
    }

    /// Whether the filters of `own` ([`SummaryPass::IfOwnFilter`]), each run alone, pass the
    /// node. A rejection or an error says no: the full filters then run and report it.
    fn own_filters_pass(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        own: &[usize],
        node: &crate::cache::NodeInfo,
    ) -> bool {
        own.iter().all(|&i| {
            self.plugins[i]
                .as_filter()
                .is_some_and(|p| p.filter(ctx, state, pod, node).is_success())
        })
    }

    /// For tests of the fast path: whether the summary passes the node for this cycle, and the
    /// walk-time filters' verdict on its full state.
    #[cfg(test)]
    pub(crate) fn summary_and_filters(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        node: &crate::cache::NodeInfo,
        summary: &NodeSummary,
    ) -> (bool, Result<Option<Status>, String>) {
        let (walk, _, plan) = self.plan(cycle);
        let bound = plan.min_free > 0 && summary.free < plan.min_free;
        let passes = !bound
            && plan.passes(summary)
            && self.own_filters_pass(ctx, &mut cycle.state, &cycle.pod, &plan.own, node);
        (passes, self.filter_node_info(ctx, cycle, &walk, node))
    }

    /// Filters, scores and picks a node for the pod (upstream `schedulePod` after PreFilter).
    /// `avoid`: nodes tried last (where the pod's binding failed before).
    pub fn find_node(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        restriction: (PreFilterResult, PluginSet),
        avoid: &BTreeSet<usize>,
    ) -> CycleOutcome {
        let cluster = ctx.cluster;
        let n_all = cluster.node_count();
        let (pre_result, restricting) = restriction;
        let order = cluster.current_order();
        let restricted: Option<Vec<usize>> = pre_result.node_names.as_ref().map(|names| {
            order
                .iter()
                .copied()
                .filter(|slot| cluster.node(*slot).is_some_and(|n| names.contains(&n.name)))
                .collect()
        });
        let candidates: &[usize] = restricted.as_deref().unwrap_or(&order);
        let total = candidates.len();
        let (walk_filters, deferred, plan) = self.plan(cycle);
        let to_find = self.nodes_to_find(total);
        let start = if total == 0 {
            0
        } else {
            self.next_start % total
        };
        let summaries = cluster.summaries();
        let free_bits = cluster.free_bits();
        let can_jump = restricted.is_none() && plan.min_free > 0;
        let mut statuses: Vec<(usize, Status)> = Vec::new();
        let mut processed = 0usize;
        let mut first_batch = true;
        let mut batch: Vec<Candidate> = Vec::new();
        while processed < total {
            batch.clear();
            while processed < total && batch.len() < to_find {
                // (start + processed) % total, without a division per node.
                let rank = match start + processed {
                    r if r >= total => r - total,
                    r => r,
                };
                if can_jump {
                    let word = free_bits.get(rank / 64).copied().unwrap_or(0) >> (rank % 64);
                    if word & 1 == 0 {
                        // No free device: the bound rejects the node, and the next ones up to
                        // the next node that may have one.
                        let next = if word != 0 {
                            rank + word.trailing_zeros() as usize
                        } else {
                            free_bits
                                .iter()
                                .enumerate()
                                .skip(rank / 64 + 1)
                                .find(|(_, w)| **w != 0)
                                .map_or(total, |(i, w)| i * 64 + w.trailing_zeros() as usize)
                        };
                        processed += (next.min(total) - rank).min(total - processed);
                        continue;
                    }
                }
                let slot = candidates[rank];
                processed += 1;
                let Some(summary) = summaries.get(slot) else {
                    continue;
                };
                if plan.min_free > 0 && summary.free < plan.min_free {
                    // Rejected for sure; which plugin rejects first is worked out only if the
                    // pod fits nowhere.
                    continue;
                }
                if plan.passes(summary)
                    && (cluster.nominated.is_empty()
                        || cluster
                            .node(slot)
                            .is_none_or(|n| !cluster.nominated.contains_key(&n.name)))
                    && (plan.own.is_empty()
                        || cluster.node(slot).is_some_and(|node| {
                            self.own_filters_pass(
                                ctx,
                                &mut cycle.state,
                                &cycle.pod,
                                &plan.own,
                                node,
                            )
                        }))
                {
                    batch.push(Candidate { slot, rank });
                    continue;
                }
                match self.filter_node(ctx, cycle, &walk_filters, slot) {
                    Ok(None) => batch.push(Candidate { slot, rank }),
                    Ok(Some(status)) => statuses.push((slot, status)),
                    Err(message) => return CycleOutcome::Error(message),
                }
            }
            if first_batch {
                // Upstream advances the start index by the nodes it looked at.
                if n_all > 0 {
                    self.next_start = (start + processed) % n_all;
                }
                first_batch = false;
            }
            if batch.is_empty() {
                continue;
            }
            match self.score_and_select(ctx, cycle, &batch, &deferred, avoid, &mut statuses) {
                Ok(Some(slot)) => {
                    return CycleOutcome::Scheduled { slot, processed };
                }
                Ok(None) => {}
                Err(message) => return CycleOutcome::Error(message),
            }
        }
        self.unschedulable(
            ctx,
            cycle,
            candidates,
            (&walk_filters, &deferred, plan),
            statuses,
            (n_all, restricting),
            processed,
        )
    }

    /// PreScore and Score over a batch of nodes that passed the walk, then the pick: the best
    /// total (ties: the first by name), after the deferred filters (run best first when no
    /// score depends on the feasible set, else on every candidate first).
    fn score_and_select(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        batch: &[Candidate],
        deferred: &[usize],
        avoid: &BTreeSet<usize>,
        statuses: &mut Vec<(usize, Status)>,
    ) -> Result<Option<usize>, String> {
        let mut candidates: Vec<Candidate> = batch.to_vec();
        // A single feasible node without deferred filters needs no scores (upstream returns it
        // directly).
        if candidates.len() == 1 && deferred.is_empty() {
            return Ok(Some(candidates[0].slot));
        }
        let mut slots: Vec<usize> = candidates.iter().map(|c| c.slot).collect();
        self.run_pre_score(ctx, cycle, &slots)?;
        let scorers: Vec<(usize, i64)> = self
            .points
            .score
            .iter()
            .copied()
            .filter(|(i, _)| !cycle.state.score_skipped(*i))
            .collect();
        let deferred_scores = |i: usize| deferred.contains(&i);
        // Raw scores of the plugins whose scores do not need the deferred filters.
        let mut raw: Vec<(usize, i64, Vec<NodeScore>)> = Vec::new();
        for &(i, weight) in scorers.iter().filter(|(i, _)| !deferred_scores(*i)) {
            raw.push((i, weight, self.raw_scores(ctx, cycle, i, &slots)?));
        }
        let own_scores = scorers.iter().any(|(i, _)| deferred_scores(*i));
        let mut set_dependent = false;
        for (i, _, scores) in &raw {
            let depends = self.plugins[*i]
                .as_score()
                .is_some_and(|s| s.normalize_depends_on_set());
            set_dependent |= depends && scores.windows(2).any(|w| w[0].score != w[1].score);
        }
        let lazy = !deferred.is_empty() && !own_scores && !set_dependent;
        if !deferred.is_empty() && !lazy {
            // Every candidate through the deferred filters first.
            let mut kept = Vec::with_capacity(candidates.len());
            for c in &candidates {
                match self.filter_node(ctx, cycle, deferred, c.slot)? {
                    None => kept.push(*c),
                    Some(status) => statuses.push((c.slot, status)),
                }
            }
            if kept.is_empty() {
                return Ok(None);
            }
            let keep: BTreeSet<usize> = kept.iter().map(|c| c.slot).collect();
            for (_, _, scores) in &mut raw {
                scores.retain(|s| keep.contains(&s.slot));
            }
            candidates = kept;
            slots = candidates.iter().map(|c| c.slot).collect();
            for &(i, weight) in scorers.iter().filter(|(i, _)| deferred_scores(*i)) {
                raw.push((i, weight, self.raw_scores(ctx, cycle, i, &slots)?));
            }
        }
        // NormalizeScore, weights, totals (in candidate order).
        let mut totals = vec![0i64; candidates.len()];
        for (i, weight, scores) in &mut raw {
            let name = self.names[*i];
            if let Some(s) = self.plugins[*i].as_score() {
                s.normalize(&cycle.state, &cycle.pod, scores);
            }
            for (t, s) in totals.iter_mut().zip(scores.iter()) {
                if s.score < 0 || s.score > MAX_NODE_SCORE {
                    return Err(format!(
                        "plugin {name:?} returns an invalid score {}, it should in the range of [0, {MAX_NODE_SCORE}] after normalizing",
                        s.score
                    ));
                }
                *t += s.score * *weight;
            }
        }
        for (_, _, scores) in raw {
            self.spare.push(scores);
        }
        let key = |k: usize| {
            (
                avoid.contains(&candidates[k].slot),
                -totals[k],
                candidates[k].rank,
            )
        };
        // The best: a plain loop when no node is to be avoided (the common case).
        let first = if avoid.is_empty() {
            let mut best: Option<usize> = None;
            for k in 0..candidates.len() {
                let better = best.is_none_or(|b| {
                    totals[k] > totals[b]
                        || (totals[k] == totals[b] && candidates[k].rank < candidates[b].rank)
                });
                if better {
                    best = Some(k);
                }
            }
            best
        } else {
            (0..candidates.len()).min_by_key(|&k| key(k))
        };
        if !lazy {
            return Ok(first.map(|k| candidates[k].slot));
        }
        // Lazily: the deferred filters on the best node first, then the next best.
        let mut order: Vec<usize> = Vec::new();
        if let Some(k) = first {
            match self.filter_node(ctx, cycle, deferred, candidates[k].slot)? {
                None => return Ok(Some(candidates[k].slot)),
                Some(status) => statuses.push((candidates[k].slot, status)),
            }
            order = (0..candidates.len()).filter(|&o| o != k).collect();
        }
        order.sort_by_key(|&k| key(k));
        for k in order {
            match self.filter_node(ctx, cycle, deferred, candidates[k].slot)? {
                None => return Ok(Some(candidates[k].slot)),
                Some(status) => statuses.push((candidates[k].slot, status)),
            }
        }
        Ok(None)
    }

    fn run_pre_score(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        slots: &[usize],
    ) -> Result<(), String> {
        for &i in &self.points.pre_score {
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_pre_score() else {
                continue;
            };
            let status = p.pre_score(ctx, &mut cycle.state, &cycle.pod, slots);
            match status.code() {
                Code::Success => {}
                Code::Skip => cycle.state.skip_score(i),
                _ => {
                    return Err(format!(
                        "running PreScore plugin {name:?}: {}",
                        status.message()
                    ));
                }
            }
        }
        Ok(())
    }

    /// One plugin's raw scores for the nodes in `slots`.
    fn raw_scores(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &Cycle,
        index: usize,
        slots: &[usize],
    ) -> Result<Vec<NodeScore>, String> {
        let name = self.names[index];
        let summaries = ctx.cluster.summaries();
        let Some(p) = self.plugins[index].as_score() else {
            return Ok(Vec::new());
        };
        let mut out = self.spare.pop().unwrap_or_default();
        out.clear();
        out.extend(slots.iter().map(|&slot| NodeScore {
            slot,
            score: UNSCORED,
        }));
        p.score_summaries(&cycle.state, summaries, &mut out);
        for o in out.iter_mut().filter(|o| o.score == UNSCORED) {
            o.score = match ctx.cluster.node(o.slot) {
                Some(node) => p
                    .score(ctx, &cycle.state, &cycle.pod, node)
                    .map_err(|status| {
                        format!("running Score plugin {name:?}: {}", status.message())
                    })?,
                None => 0,
            };
        }
        Ok(out)
    }

    /// The pod fits nowhere: every node's status (the ones the device bound passed over get
    /// theirs now, from the full filter chain), each plugin's explanation, and the message.
    #[allow(clippy::too_many_arguments)]
    fn unschedulable(
        &mut self,
        ctx: &Ctx<'_>,
        cycle: &mut Cycle,
        candidates: &[usize],
        (walk, deferred, plan): (&[usize], &[usize], SummaryPlan),
        mut statuses: Vec<(usize, Status)>,
        (n_all, restricting): (usize, PluginSet),
        processed: usize,
    ) -> CycleOutcome {
        let cluster = ctx.cluster;
        if plan.min_free > 0 {
            let summaries = cluster.summaries();
            let all: Vec<usize> = walk.iter().chain(deferred).copied().collect();
            for &slot in candidates {
                let bound = summaries.get(slot).is_some_and(|s| s.free < plan.min_free);
                if !bound {
                    continue;
                }
                match self.filter_node(ctx, cycle, &all, slot) {
                    Ok(Some(status)) => statuses.push((slot, status)),
                    Ok(None) => {}
                    Err(message) => return CycleOutcome::Error(message),
                }
            }
        }
        // Name order, for explanations.
        statuses.sort_by(|a, b| {
            let name = |slot: usize| cluster.node(slot).map(|n| n.name.as_str()).unwrap_or("");
            name(a.0).cmp(name(b.0)).then(a.0.cmp(&b.0))
        });
        let mut rejected_by: PluginSet = restricting;
        for (_, status) in &statuses {
            if let Some(i) = self.names.iter().position(|n| *n == status.plugin()) {
                rejected_by |= 1 << i;
            }
        }
        let mut explanations = Vec::new();
        for &i in walk.iter().chain(deferred) {
            let name = self.names[i];
            let rejected: Vec<(&crate::cache::NodeInfo, &Status)> = statuses
                .iter()
                .filter(|(_, s)| s.plugin() == name)
                .filter_map(|(slot, s)| cluster.node(*slot).map(|n| (n, s)))
                .collect();
            if rejected.is_empty() {
                continue;
            }
            let Some(p) = self.plugins[i].as_filter() else {
                continue;
            };
            match p.explain(ctx, &mut cycle.state, &cycle.pod, &rejected) {
                Ok(Some(e)) => explanations.push((i, e)),
                Ok(None) => {}
                Err(message) => return CycleOutcome::Error(message),
            }
        }
        // Explanations in profile order.
        explanations.sort_by_key(|(i, _)| *i);
        let absent = (candidates.len() < n_all && restricting != 0).then(|| {
            let names: Vec<&str> = (0..self.names.len())
                .filter(|i| restricting & (1 << i) != 0)
                .map(|i| self.names[i])
                .collect();
            (
                n_all - candidates.len(),
                Status::unresolvable(format!(
                    "node(s) didn't satisfy plugin(s) [{}]",
                    names.join(" ")
                )),
            )
        });
        CycleOutcome::Unschedulable {
            error: FitError {
                num_all_nodes: n_all,
                diagnosis: Diagnosis {
                    node_statuses: statuses,
                    absent,
                    ..Default::default()
                },
            },
            explanations,
            rejected_by,
            processed,
        }
    }

    /// Whether every active filter plugin's verdicts for this cycle's pod may be reused.
    pub fn cacheable(&mut self, cycle: &Cycle) -> bool {
        for &i in &self.points.filter {
            if cycle.state.filter_skipped(i) {
                continue;
            }
            if let Some(p) = self.plugins[i].as_filter()
                && !p.cacheable(&cycle.state)
            {
                return false;
            }
        }
        true
    }

    /// The active filter plugins' parts of the failure memo's key.
    pub fn signature(&mut self, cycle: &Cycle) -> String {
        let mut out = String::new();
        for &i in &self.points.filter {
            if cycle.state.filter_skipped(i) {
                continue;
            }
            if let Some(p) = self.plugins[i].as_filter() {
                out.push('|');
                out.push_str(&p.signature(&cycle.state));
            }
        }
        out
    }

    /// An earlier explanation of plugin `index`, written for this cycle's pod.
    pub fn rerender(&mut self, index: usize, cycle: &Cycle, explanation: &Explanation) -> String {
        match self.plugins.get_mut(index).and_then(|p| p.as_filter()) {
            Some(p) => p.rerender(&cycle.state, &cycle.pod, explanation),
            None => explanation.text.clone(),
        }
    }

    /// Runs PostFilter plugins until one nominates a node: the nominated node, their messages
    /// joined, and the pods marked for deletion. Each plugin runs with a [`FilterHandle`] over
    /// the rest of the profile (it is taken out of the profile meanwhile).
    pub fn run_post_filter(
        &mut self,
        ctx: &mut BindCtx<'_>,
        cycle: &mut Cycle,
        statuses: &[(usize, Status)],
    ) -> (Option<String>, Option<String>, Vec<Victim>) {
        let mut messages = Vec::new();
        let mut victims = Vec::new();
        let filters = self.active_filters(cycle);
        for k in 0..self.points.post_filter.len() {
            let i = self.points.post_filter[k];
            let mut plugin = std::mem::replace(&mut self.plugins[i], Box::new(Vacant));
            let outcome = match plugin.as_post_filter() {
                Some(p) => {
                    let mut handle = Handle {
                        framework: self,
                        filters: &filters,
                    };
                    Some(p.post_filter(ctx, &mut handle, &mut cycle.state, &cycle.pod, statuses))
                }
                None => None,
            };
            self.plugins[i] = plugin;
            let Some(outcome) = outcome else {
                continue;
            };
            let message = outcome.status.message();
            if !message.is_empty() {
                messages.push(message);
            }
            victims.extend(outcome.victims);
            if outcome.nominated.is_some() {
                return (outcome.nominated, Some(messages.join(" ")), victims);
            }
        }
        (
            None,
            (!messages.is_empty()).then(|| messages.join(" ")),
            victims,
        )
    }

    /// Runs `f` with a [`FilterHandle`] over this profile's filters active for the cycle, as
    /// PostFilter plugins get it (for driving a PostFilter plugin from outside the profile:
    /// upstream's preemption test tables do).
    pub fn with_filter_handle<R>(
        &mut self,
        cycle: &Cycle,
        f: impl FnOnce(&mut dyn FilterHandle) -> R,
    ) -> R {
        let filters = self.active_filters(cycle);
        let mut handle = Handle {
            framework: self,
            filters: &filters,
        };
        f(&mut handle)
    }

    /// The PreFilter extensions of the active PreFilter plugins, `add` or remove.
    fn pre_filter_extension(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        other: &PodInfo,
        node: &crate::cache::NodeInfo,
        add: bool,
    ) -> Status {
        for k in 0..self.points.pre_filter.len() {
            let i = self.points.pre_filter[k];
            if state.filter_skipped(i) {
                continue;
            }
            let Some(p) = self.plugins[i].as_pre_filter() else {
                continue;
            };
            let status = if add {
                p.add_pod(state, pod, other, node)
            } else {
                p.remove_pod(state, pod, other, node)
            };
            if !status.is_success() {
                return Status::error(format!(
                    "running {} on PreFilter plugin {:?}: {}",
                    if add { "AddPod" } else { "RemovePod" },
                    self.names[i],
                    status.message()
                ));
            }
        }
        Status::success()
    }

    /// Runs Reserve; on a failure, Unreserve for every Reserve plugin (in reverse) and the
    /// failure.
    pub fn run_reserve(&mut self, ctx: &mut BindCtx<'_>, cycle: &mut Cycle, node: &str) -> Status {
        for k in 0..self.points.reserve.len() {
            let i = self.points.reserve[k];
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_reserve() else {
                continue;
            };
            let status = p.reserve(ctx, &mut cycle.state, &cycle.pod, node);
            if !status.is_success() {
                self.run_unreserve(ctx, cycle, node);
                return status.with_plugin(name);
            }
        }
        Status::success()
    }

    /// Runs Unreserve in reverse order.
    pub fn run_unreserve(&mut self, ctx: &mut BindCtx<'_>, cycle: &mut Cycle, node: &str) {
        for k in (0..self.points.reserve.len()).rev() {
            let i = self.points.reserve[k];
            if let Some(p) = self.plugins[i].as_reserve() {
                p.unreserve(ctx, &mut cycle.state, &cycle.pod, node);
            }
        }
    }

    /// Runs Permit: the first status that is not Success (a rejection or Wait).
    pub fn run_permit(&mut self, ctx: &mut BindCtx<'_>, cycle: &mut Cycle, node: &str) -> Status {
        for k in 0..self.points.permit.len() {
            let i = self.points.permit[k];
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_permit() else {
                continue;
            };
            let status = p.permit(ctx, &mut cycle.state, &cycle.pod, node);
            if !status.is_success() && !status.is_skip() {
                return status.with_plugin(name);
            }
        }
        Status::success()
    }

    /// Runs PreBind: the first status that is not Success (Wait or a failure).
    pub fn run_pre_bind(&mut self, ctx: &mut BindCtx<'_>, cycle: &mut Cycle, node: &str) -> Status {
        for k in 0..self.points.pre_bind.len() {
            let i = self.points.pre_bind[k];
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_pre_bind() else {
                continue;
            };
            let status = p.pre_bind(ctx, &mut cycle.state, &cycle.pod, node);
            if !status.is_success() && !status.is_skip() {
                return status.with_plugin(name);
            }
        }
        Status::success()
    }

    /// Runs Bind plugins until one does not skip.
    pub fn run_bind(&mut self, ctx: &mut BindCtx<'_>, cycle: &mut Cycle, node: &str) -> Status {
        for k in 0..self.points.bind.len() {
            let i = self.points.bind[k];
            let name = self.names[i];
            let Some(p) = self.plugins[i].as_bind() else {
                continue;
            };
            let status = p.bind(ctx, &mut cycle.state, &cycle.pod, node);
            if !status.is_skip() {
                return status.with_plugin(name);
            }
        }
        Status::error("no bind plugin bound the pod")
    }
}

/// The merged summary verdicts of the walk-time filters (see [`SummaryCheck`]).
#[derive(Debug, Clone)]
struct SummaryPlan {
    /// Every walk-time filter offered a pass condition.
    usable: bool,
    /// The node must be plain.
    plain: bool,
    /// The node must fit this request.
    fits: Option<[i64; 3]>,
    /// Fewer free devices reject the node.
    min_free: usize,
    /// Plugins whose own filter must pass the node ([`SummaryPass::IfOwnFilter`]).
    own: Vec<usize>,
}

impl SummaryPlan {
    #[inline]
    fn passes(&self, summary: &NodeSummary) -> bool {
        self.usable && (!self.plain || summary.plain) && self.fits.is_none_or(|r| summary.fits(&r))
    }
}

/// Stands in the profile for a plugin taken out while it runs.
struct Vacant;

impl Plugin for Vacant {
    fn name(&self) -> &'static str {
        ""
    }
}

/// The rest of the profile, as a PostFilter plugin sees it.
struct Handle<'f> {
    framework: &'f mut Framework,
    filters: &'f [usize],
}

impl FilterHandle for Handle<'_> {
    fn run_filters(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &crate::cache::NodeInfo,
    ) -> Status {
        match self
            .framework
            .filter_with_nominated(ctx, state, pod, self.filters, node)
        {
            Ok(None) => Status::success(),
            Ok(Some(status)) => status,
            Err(message) => Status::error(message),
        }
    }

    fn remove_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &crate::cache::NodeInfo,
    ) -> Status {
        self.framework
            .pre_filter_extension(state, pod, removed, node, false)
    }

    fn add_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &crate::cache::NodeInfo,
    ) -> Status {
        self.framework
            .pre_filter_extension(state, pod, added, node, true)
    }
}
