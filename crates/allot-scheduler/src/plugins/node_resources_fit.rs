//! NodeResourcesFit (PreFilter, Filter, PreScore, Score): the pod's requests must fit the
//! node's allocatable resources beside the pods already there; nodes are scored by one of
//! three strategies: LeastAllocated (the default), MostAllocated, RequestedToCapacityRatio.
//!
//! Extended resources a DeviceClass serves on nodes without a device plugin for them are left
//! to DynamicResources (DRAExtendedResource), as upstream's `shouldDelegateResourceToDRA`.
//! Scoring such resources by their DRA devices (upstream's DRA extended resource scoring) is
//! not done: they score as resources the node does not have.

use std::collections::BTreeSet;

use serde::Deserialize;

use crate::cache::{NodeInfo, NodeSummary};
use crate::extended::ExtendedPlan;
use crate::filters;
use crate::framework::{
    ClusterEvents, Code, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin,
    MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Status, SummaryCheck, SummaryPass, queueing,
};
use crate::resources::{Resources, pod_non_zero_requests_with, pod_requests};

/// The plugin's name.
pub const NAME: &str = "NodeResourcesFit";

/// A resource and its weight in a score.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSpec {
    /// The resource name.
    pub name: String,
    /// Its weight (default 1).
    #[serde(default = "one")]
    pub weight: i64,
}

fn one() -> i64 {
    1
}

/// One point of a RequestedToCapacityRatio shape: utilization 0..=100 maps to score 0..=10.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UtilizationShapePoint {
    /// Utilization in percent.
    pub utilization: i64,
    /// Score, 0..=10.
    pub score: i64,
}

/// `RequestedToCapacityRatioParam`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RequestedToCapacityRatio {
    /// The shape, by increasing utilization.
    #[serde(default)]
    pub shape: Vec<UtilizationShapePoint>,
}

/// `ScoringStrategy`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScoringStrategy {
    /// `LeastAllocated`, `MostAllocated` or `RequestedToCapacityRatio`.
    #[serde(rename = "type", default = "least_allocated")]
    pub type_: String,
    /// The resources scored, with weights.
    #[serde(default = "default_resources")]
    pub resources: Vec<ResourceSpec>,
    /// The shape of `RequestedToCapacityRatio`.
    #[serde(default)]
    pub requested_to_capacity_ratio: Option<RequestedToCapacityRatio>,
}

fn least_allocated() -> String {
    "LeastAllocated".into()
}

/// CPU and memory, weight 1 each.
pub fn default_resources() -> Vec<ResourceSpec> {
    vec![
        ResourceSpec {
            name: "cpu".into(),
            weight: 1,
        },
        ResourceSpec {
            name: "memory".into(),
            weight: 1,
        },
    ]
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            type_: least_allocated(),
            resources: default_resources(),
            requested_to_capacity_ratio: None,
        }
    }
}

/// `NodeResourcesFitArgs`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Extended resources the filter ignores.
    #[serde(default)]
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) the filter ignores.
    #[serde(default)]
    pub ignored_resource_groups: Vec<String>,
    /// How nodes are scored.
    #[serde(default)]
    pub scoring_strategy: Option<ScoringStrategy>,
}

/// The scoring function of a strategy: per resource (requested with the pod, allocatable),
/// the node's score.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scorer {
    /// Upstream `leastResourceScorer`.
    Least(Vec<i64>),
    /// Upstream `mostResourceScorer`.
    Most(Vec<i64>),
    /// Upstream `requestedToCapacityRatioScorer`: weights and the shape scaled to 0..=100.
    Ratio(Vec<i64>, Vec<(i64, i64)>),
}

impl Scorer {
    /// The score for per-resource `requested` (with the pod) and `allocatable`; resources
    /// with no allocatable amount are left out.
    pub fn score(&self, requested: &[i64], allocatable: &[i64]) -> i64 {
        match self {
            Scorer::Least(weights) => weighted(requested, allocatable, weights, |r, c| {
                if r > c {
                    0
                } else {
                    (c - r) * MAX_NODE_SCORE / c
                }
            }),
            Scorer::Most(weights) => weighted(requested, allocatable, weights, |r, c| {
                r.min(c) * MAX_NODE_SCORE / c
            }),
            Scorer::Ratio(weights, shape) => {
                let (mut total, mut weight_sum) = (0i64, 0i64);
                for i in 0..requested.len() {
                    let c = allocatable[i];
                    if c == 0 {
                        continue;
                    }
                    let r = requested[i];
                    let utilization = if r > c { 100 } else { scaled_utilization(r, c) };
                    let s = broken_linear(shape, utilization);
                    if s > 0 {
                        total += s * weights[i];
                        weight_sum += weights[i];
                    }
                }
                if weight_sum == 0 {
                    0
                } else {
                    (total as f64 / weight_sum as f64).round() as i64
                }
            }
        }
    }
}

/// Upstream `scaledUtilization`: `requested * 100 / capacity` in integers, clamped to 0..=100,
/// exact for large values.
fn scaled_utilization(requested: i64, capacity: i64) -> i64 {
    if capacity <= 0 || requested <= 0 {
        return 0;
    }
    if requested >= capacity {
        return 100;
    }
    ((requested as i128 * 100) / capacity as i128) as i64
}

/// Upstream `BuildBrokenLinearFunction`.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for i in 0..shape.len() {
        if p <= shape[i].0 {
            if i == 0 {
                return shape[0].1;
            }
            let (u0, s0) = shape[i - 1];
            let (u1, s1) = shape[i];
            return s0 + (s1 - s0) * (p - u0) / (u1 - u0);
        }
    }
    shape.last().map_or(0, |s| s.1)
}

fn weighted(
    requested: &[i64],
    allocatable: &[i64],
    weights: &[i64],
    score: impl Fn(i64, i64) -> i64,
) -> i64 {
    let (mut total, mut weight_sum) = (0i64, 0i64);
    for i in 0..requested.len() {
        if allocatable[i] == 0 {
            continue;
        }
        total += score(requested[i], allocatable[i]) * weights[i];
        weight_sum += weights[i];
    }
    if weight_sum == 0 {
        0
    } else {
        total / weight_sum
    }
}

/// What a node has and has handed out of a resource, with the pod's request added (upstream
/// `calculateResourceAllocatableRequest`): `(allocatable, requested)`; `(0, 0)` for an
/// extended resource the pod does not request or the node does not have. `use_requested`
/// takes the pods' actual CPU and memory requests instead of their non-zero scoring ones.
pub fn allocatable_requested(
    node: &NodeInfo,
    resource: &str,
    pod_request: i64,
    use_requested: bool,
) -> (i64, i64) {
    match resource {
        "cpu" => {
            let used = if use_requested {
                node.requested.milli_cpu
            } else {
                node.non_zero.0
            };
            (node.allocatable.milli_cpu, used + pod_request)
        }
        "memory" => {
            let used = if use_requested {
                node.requested.memory
            } else {
                node.non_zero.1
            };
            (node.allocatable.memory, used + pod_request)
        }
        "ephemeral-storage" => (
            node.allocatable.ephemeral_storage,
            node.requested.ephemeral_storage + pod_request,
        ),
        other => {
            if pod_request == 0 {
                return (0, 0);
            }
            match node.allocatable.scalar.get(other) {
                Some(a) => (*a, node.requested.get(other) + pod_request),
                None => (0, 0),
            }
        }
    }
}

/// The pod's requests of the scored resources: non-zero CPU and memory (defaults for
/// containers that request none) unless `use_requested`.
pub fn pod_score_requests(
    pod: &allot_api::core::v1::Pod,
    resources: &[ResourceSpec],
    use_requested: bool,
) -> Vec<i64> {
    let request = pod_requests(pod);
    let non_zero = pod_non_zero_requests_with(pod, &request);
    resources
        .iter()
        .map(|r| match r.name.as_str() {
            "cpu" if !use_requested => non_zero.0,
            "memory" if !use_requested => non_zero.1,
            name => request.get(name),
        })
        .collect()
}

/// The NodeResourcesFit plugin.
#[derive(Debug)]
pub struct NodeResourcesFit {
    ignored: BTreeSet<String>,
    ignored_groups: BTreeSet<String>,
    resources: Vec<ResourceSpec>,
    scorer: Scorer,
    /// Whether extended resources may be served by DRA (DRAExtendedResource).
    extended_resource: bool,
    /// Per node slot, the last score computed from a summary: (inputs, score).
    memo: Vec<([i64; 4], i64)>,
    /// The scorer is LeastAllocated over CPU and memory (the summary fast path).
    cpu_memory: bool,
}

/// PreFilter state: the pod's requests and which extended resources DRA may serve.
#[derive(Debug, Clone)]
struct Request {
    request: Resources,
    extended: Option<ExtendedPlan>,
}

/// PreScore state: the pod's requests of the scored resources.
#[derive(Debug, Clone)]
struct ScoreRequests(Vec<i64>);

impl NodeResourcesFit {
    /// The plugin with its arguments; `Err` for an invalid scoring strategy.
    pub fn new(args: Args, extended_resource: bool) -> Result<Self, String> {
        let strategy = args.scoring_strategy.unwrap_or_default();
        let weights: Vec<i64> = strategy.resources.iter().map(|r| r.weight).collect();
        let scorer = match strategy.type_.as_str() {
            "LeastAllocated" => Scorer::Least(weights),
            "MostAllocated" => Scorer::Most(weights),
            "RequestedToCapacityRatio" => {
                let shape = strategy
                    .requested_to_capacity_ratio
                    .map(|r| r.shape)
                    .unwrap_or_default();
                if shape.is_empty() {
                    return Err("scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified".into());
                }
                Scorer::Ratio(
                    weights,
                    shape
                        .iter()
                        .map(|p| (p.utilization, p.score * (MAX_NODE_SCORE / 10)))
                        .collect(),
                )
            }
            other => {
                return Err(format!(
                    "scoringStrategy.type: Unsupported value: {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
                ));
            }
        };
        let cpu_memory = matches!(scorer, Scorer::Least(_))
            && strategy.resources.len() == 2
            && strategy.resources[0].name == "cpu"
            && strategy.resources[1].name == "memory";
        Ok(NodeResourcesFit {
            ignored: args.ignored_resources.into_iter().collect(),
            ignored_groups: args.ignored_resource_groups.into_iter().collect(),
            resources: strategy.resources,
            scorer,
            extended_resource,
            memo: Vec::new(),
            cpu_memory,
        })
    }

    fn ignored(&self, resource: &str) -> bool {
        crate::extended::is_extended_resource_name(resource)
            && (self.ignored.contains(resource)
                || resource
                    .split('/')
                    .next()
                    .is_some_and(|g| self.ignored_groups.contains(g)))
    }
}

impl Plugin for NodeResourcesFit {
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }

    fn as_pre_score(&mut self) -> Option<&mut dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&mut self) -> Option<&mut dyn ScorePlugin> {
        Some(self)
    }
}

impl PreFilterPlugin for NodeResourcesFit {
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let request = pod_requests(&pod.pod);
        let extended = if self.extended_resource {
            ExtendedPlan::for_pod(&request, &ctx.cluster.classes)
        } else {
            None
        };
        state.write(Request { request, extended });
        (PreFilterResult::all_nodes(), Status::success())
    }
}

impl FilterPlugin for NodeResourcesFit {
    /// Every shortage, in upstream's order (pods, cpu, memory, ephemeral storage, then
    /// extended resources); `UnschedulableAndUnresolvable` when a request exceeds the node's
    /// allocatable amount itself.
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let owned;
        let (request, extended) = match state.read::<Request>() {
            Some(r) => (&r.request, r.extended.as_ref()),
            None => {
                owned = pod_requests(&pod.pod);
                (&owned, None)
            }
        };
        if request.scalar.is_empty()
            && filters::fits_plain(request, &node.allocatable, &node.requested, node.pod_count)
        {
            return Status::success();
        }
        let delegated = |name: &str| {
            self.ignored(name) || extended.is_some_and(|p| p.delegated(&node.allocatable, name))
        };
        let reasons = filters::resources_fit(
            request,
            &node.allocatable,
            &node.requested,
            node.pod_count,
            &delegated,
        );
        if reasons.is_empty() {
            return Status::success();
        }
        let unresolvable = ["cpu", "memory", "ephemeral-storage"]
            .iter()
            .map(|r| r.to_string())
            .chain(request.scalar.keys().cloned())
            .any(|r| {
                let want = request.get(&r);
                want > 0 && !delegated(&r) && want > node.allocatable.get(&r)
            });
        let code = if unresolvable {
            Code::UnschedulableAndUnresolvable
        } else {
            Code::Unschedulable
        };
        Status::with_reasons(code, reasons.into_iter().map(Into::into).collect())
    }

    /// Per reason, per node: what the pod requests, what is free, the node's allocatable
    /// amount and how much its pods already request (the largest of them named); for "Too many
    /// pods" the pod count and the limit. At most [`MAX_NODES_EXPLAINED`] nodes per reason
    /// are listed, then how many more and the most any of them has free.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let owned;
        let request = match state.read::<Request>() {
            Some(r) => &r.request,
            None => {
                owned = pod_requests(&pod.pod);
                &owned
            }
        };
        Ok(Some(Explanation {
            text: explain_fit(request, rejected),
            data: None,
        }))
    }

    /// Without extended resources, a node with room for the CPU, memory and ephemeral
    /// storage requests and one more pod passes.
    fn summary_check(&self, state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        match state.read::<Request>() {
            Some(r) if r.request.scalar.is_empty() => SummaryCheck {
                pass: SummaryPass::IfFits([
                    r.request.milli_cpu,
                    r.request.memory,
                    r.request.ephemeral_storage,
                ]),
                min_free_devices: 0,
            },
            _ => SummaryCheck::NONE,
        }
    }
}

/// The most nodes an explanation lists per reason.
pub const MAX_NODES_EXPLAINED: usize = 10;
/// The most pods named as a node's consumers of a resource.
const MAX_CONSUMERS: usize = 3;

/// An amount of a resource as a quantity (`500m`, `2`, `1536Mi`).
pub fn amount(resource: &str, value: i64) -> String {
    use allot_quantity::{Format, Quantity};
    let q = match resource {
        "cpu" => Quantity::from_milli(value, Format::DecimalSI),
        "memory" | "ephemeral-storage" => Quantity::from_i64(value, Format::BinarySI),
        r if r.starts_with("hugepages-") => Quantity::from_i64(value, Format::BinarySI),
        _ => Quantity::from_i64(value, Format::DecimalSI),
    };
    q.canonical_string()
}

/// The resource a reason names (`pods` for "Too many pods").
fn reason_resource(reason: &str) -> Option<&str> {
    if reason == filters::REASON_TOO_MANY_PODS {
        return Some("pods");
    }
    reason.strip_prefix("Insufficient ")
}

/// One node's line for a resource.
fn fit_detail(request: &Resources, node: &NodeInfo, resource: &str) -> String {
    use std::fmt::Write as _;
    if resource == "pods" {
        return format!(
            "{} pod(s) already, {} allowed",
            node.pod_count, node.allocatable.pods
        );
    }
    let want = request.get(resource);
    let allocatable = node.allocatable.get(resource);
    let used = node.requested.get(resource);
    let a = |v| amount(resource, v);
    if allocatable <= 0 {
        return format!("wants {}, the node has none", a(want));
    }
    if want > allocatable {
        return format!(
            "wants {}, more than the node's {} allocatable",
            a(want),
            a(allocatable)
        );
    }
    let mut consumers: Vec<(i64, String)> = node
        .pods
        .iter()
        .map(|p| (pod_requests(&p.pod).get(resource), p.key()))
        .filter(|(v, _)| *v > 0)
        .collect();
    consumers.sort_by_key(|c| std::cmp::Reverse(c.0));
    let mut line = format!(
        "wants {}, {} free: {} allocatable, {} requested by ",
        a(want),
        a((allocatable - used).max(0)),
        a(allocatable),
        a(used)
    );
    let named: Vec<String> = consumers
        .iter()
        .take(MAX_CONSUMERS)
        .map(|(v, k)| format!("{k} {}", a(*v)))
        .collect();
    if consumers.len() > MAX_CONSUMERS {
        let _ = write!(
            line,
            "{} pods, most by {}",
            consumers.len(),
            named.join(", ")
        );
    } else if named.is_empty() {
        line.push_str("no pod");
    } else {
        line.push_str(&named.join(", "));
    }
    line
}

/// The explanation of NodeResourcesFit's rejections of a pod with `request`.
pub fn explain_fit(request: &Resources, rejected: &[(&NodeInfo, &Status)]) -> String {
    use std::fmt::Write as _;
    let mut text = format!("{NAME}:");
    for (reason, nodes) in Explanation::by_reason(rejected) {
        let _ = write!(text, "\n  {} {reason}:", nodes.len());
        let Some(resource) = reason_resource(reason) else {
            continue;
        };
        for node in nodes.iter().take(MAX_NODES_EXPLAINED) {
            let _ = write!(
                text,
                "\n    {}: {}",
                node.name,
                fit_detail(request, node, resource)
            );
        }
        if nodes.len() > MAX_NODES_EXPLAINED {
            let more = nodes.len() - MAX_NODES_EXPLAINED;
            let free = |n: &NodeInfo| {
                if resource == "pods" {
                    n.allocatable.pods - n.pod_count
                } else {
                    n.allocatable.get(resource) - n.requested.get(resource)
                }
            };
            // The first node by name among those with the most free.
            let best = nodes
                .iter()
                .copied()
                .fold(None::<&NodeInfo>, |best, n| match best {
                    Some(b) if free(b) >= free(n) => Some(b),
                    _ => Some(n),
                });
            let _ = write!(text, "\n    and {more} more node(s)");
            if let Some(b) = best {
                let most = free(b).max(0);
                let most = if resource == "pods" {
                    format!("{most} pod(s)")
                } else {
                    amount(resource, most)
                };
                let _ = write!(
                    text,
                    "; the most free of all {}: {most} on {}",
                    nodes.len(),
                    b.name
                );
            }
        }
    }
    text
}

impl PreScorePlugin for NodeResourcesFit {
    fn pre_score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        state.write(ScoreRequests(pod_score_requests(
            &pod.pod,
            &self.resources,
            false,
        )));
        Status::success()
    }
}

impl ScorePlugin for NodeResourcesFit {
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let owned;
        let requests = match state.read::<ScoreRequests>() {
            Some(r) => &r.0,
            None => {
                owned = pod_score_requests(&pod.pod, &self.resources, false);
                &owned
            }
        };
        let mut requested = Vec::with_capacity(requests.len());
        let mut allocatable = Vec::with_capacity(requests.len());
        for (spec, want) in self.resources.iter().zip(requests) {
            let (a, r) = allocatable_requested(node, &spec.name, *want, false);
            allocatable.push(a);
            requested.push(if a == 0 { 0 } else { r });
        }
        Ok(self.scorer.score(&requested, &allocatable))
    }

    /// LeastAllocated over CPU and memory reads only the summary (memoized per node: nodes
    /// change little between pods, and pods of one workload ask for the same).
    fn score_summaries(
        &mut self,
        state: &CycleState,
        summaries: &[NodeSummary],
        out: &mut [NodeScore],
    ) {
        if !self.cpu_memory {
            return;
        }
        let Some(requests) = state.read::<ScoreRequests>() else {
            return;
        };
        let (cpu, memory) = (requests.0[0], requests.0[1]);
        if self.memo.len() < summaries.len() {
            self.memo.resize(summaries.len(), ([-1; 4], 0));
        }
        for o in out {
            let (Some(summary), Some(memo)) = (summaries.get(o.slot), self.memo.get_mut(o.slot))
            else {
                continue;
            };
            let inputs = [
                summary.allocatable[0],
                summary.non_zero.0 + cpu,
                summary.allocatable[1],
                summary.non_zero.1 + memory,
            ];
            if memo.0 != inputs {
                let score = self
                    .scorer
                    .score(&[inputs[1], inputs[3]], &[inputs[0], inputs[2]]);
                *memo = (inputs, score);
            }
            o.score = memo.1;
        }
    }
}

impl EnqueueExtensions for NodeResourcesFit {
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    fn requeue_on(&self) -> EventSet {
        queueing::ASSIGNED_POD_DELETED
            | queueing::NODE_ADDED
            | queueing::NODE_ALLOCATABLE
            | if self.extended_resource {
                queueing::DRA
            } else {
                0
            }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_and_most_skip_resources_the_node_lacks() {
        let least = Scorer::Least(vec![1, 1]);
        assert_eq!(least.score(&[1000, 0], &[4000, 0]), 75);
        assert_eq!(least.score(&[5000, 2], &[4000, 10]), 40);
        let most = Scorer::Most(vec![1, 1]);
        assert_eq!(most.score(&[5000, 2], &[4000, 10]), 60);
        assert_eq!(most.score(&[0, 0], &[0, 0]), 0);
    }

    #[test]
    fn ratio_follows_the_shape() {
        // Shape 0% -> 10, 100% -> 0 (scaled by 10).
        let ratio = Scorer::Ratio(vec![1, 1], vec![(0, 100), (100, 0)]);
        assert_eq!(ratio.score(&[0, 0], &[4000, 10000]), 100);
        assert_eq!(ratio.score(&[3000, 5000], &[4000, 10000]), 38);
        assert_eq!(broken_linear(&[(10, 20), (50, 60)], 5), 20);
        assert_eq!(broken_linear(&[(10, 20), (50, 60)], 30), 40);
        assert_eq!(broken_linear(&[(10, 20), (50, 60)], 90), 60);
    }
}
