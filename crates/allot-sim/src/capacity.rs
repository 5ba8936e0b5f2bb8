//! Capacity questions answered by re-simulating: how many nodes of which shape make every pod
//! fit (scale-up), and which nodes can go with every pod rescheduled (consolidation).
//!
//! Every answer comes from whole simulations ([`Session`]): the input runs as `allot simulate`
//! runs it with the added nodes there from the start (the cluster as it would be with them: a
//! pod refused on a crowded node by the kubelet's admission fails for good, as upstream, so
//! adding nodes afterwards could not help it), then a what-if workload is created and the
//! controllers settle again; or the input runs without the removed nodes from the start.
//! Added nodes are named `<shape>-<n>`, numbered past any node of the input already named so. A pod
//! *fits* when it ends placed (running, finished, or bound and waiting on its node, as the
//! table counts it); a pod left pending or failed (an admission refusal on its node, say) does
//! not.
//!
//! ## Scale-up search
//!
//! One shape: the smallest count `n` of added nodes such that every pod fits. The search
//! starts at an estimate: the pods not fitting over how many of them one empty node of the
//! shape takes (a small simulation of just that node and those pods). From there it gallops up
//! (+1, +2, +4, ...) while the count does not fit, or down (-1, -2, -4, ...) while it does,
//! then bisects between the largest count seen failing and the smallest seen fitting: O(log n)
//! simulations instead of n, and two or three when the estimate is right. It relies on
//! monotonicity: if `n` nodes of a shape make every pod fit, `n + 1` do too, since the extra
//! node only adds places (every filter passes on it or not; a pod placed somewhere with `n`
//! nodes still has that place, or a fresh one, with `n + 1`). The scheduler being greedy, a
//! different order of decisions could in principle break this; the answer is therefore
//! checked, not assumed: the bisection ends with `n` simulated as fitting and `n - 1` (or
//! nothing added) simulated as not. The galloping stops at the shape's `maxNodes` and at one
//! node per pod not fitting (a pod that fits on an empty node of the shape needs no more);
//! when that many do not make every pod fit, the answer says which pods still do not and why.
//!
//! Several shapes: each alone first (as above), the cheapest of those is the answer to beat;
//! then mixes of at least two shapes with a cost strictly below it, at most each shape's own
//! count, are tried cheapest first (ties: fewer nodes, then the counts in shape order). A mix
//! that is below (in every count) a mix already seen not to fit is skipped (monotonicity
//! again). At most [`MIX_BUDGET`] mixes are simulated; the answer says when the budget ran out
//! before every cheaper mix was tried.
//!
//! ## Consolidation
//!
//! Nodes are tried one by one in a documented order: fewest pods placed on them first, then
//! fewest allocated devices, then name. A node joins the removed set when the input run
//! without every node of the set and this one places every pod that the plain run placed
//! (pods pinned to a node with `spec.nodeName` therefore keep their node), and no
//! PodDisruptionBudget forbids evicting its pods: a budget whose disruptions allowed are 0
//! (computed from `minAvailable`/`maxUnavailable` over the pods it selects that the plain run
//! placed) blocks every node hosting one of its pods, as `kubectl drain` would wait forever on
//! it. A greedy set is maximal (no other single node can be added to it), not always maximum.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use allot_api::core::v1::Pod;
use allot_api::intstr::IntOrString;
use allot_api::meta::v1::LabelSelector;
use allot_api::policy::v1::PodDisruptionBudget;
use allot_api::resource::v1::ResourceClaim;
use allot_store::{ObjectKey, Store, Stored};
use serde::Serialize;

use crate::SimError;
use crate::input::Input;
use crate::run::Progress;
use crate::run::session::{NewNode, Session, SessionOptions};
use crate::shape::NodeShape;

/// At most this many mixes of several shapes are simulated.
pub const MIX_BUDGET: usize = 48;

/// A pod that does not fit, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Unfit {
    /// `namespace/name`.
    pub pod: String,
    /// The pod's `PodScheduled` message or failure reason.
    pub reason: String,
}

/// A pod and its node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Placement {
    /// `namespace/name`.
    pub pod: String,
    /// The node.
    pub node: String,
}

/// One simulation of the search.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Probe {
    /// Nodes added per shape, in shape order.
    pub counts: Vec<usize>,
    /// Pods that did not fit.
    pub unfit: usize,
}

/// What one simulation showed.
struct Trial {
    unfit: Vec<Unfit>,
    placements: BTreeMap<String, String>,
}

/// The pods of a store that did not fit, and where the others are.
fn judge(store: &Store) -> Trial {
    let mut unfit = Vec::new();
    let mut placements = BTreeMap::new();
    for pod in store.list::<Pod>() {
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        if crate::table::placed(pod) {
            let node = pod.spec.node_name.clone().unwrap_or_default();
            placements.insert(name, node);
        } else {
            unfit.push(Unfit {
                pod: name,
                reason: crate::output::pod_problem(pod),
            });
        }
    }
    Trial { unfit, placements }
}

/// A what-if workload: objects created after the run (and after added nodes appear).
pub type Workload = [Stored];

/// Runs the input with `nodes` there from the start, then creates the workload, and judges the
/// result.
fn trial(
    input: &Input,
    nodes: &[NewNode],
    workload: &Workload,
    progress: &mut dyn FnMut(Progress),
) -> Result<Trial, SimError> {
    let mut session = Session::start(
        input,
        SessionOptions {
            start_nodes: nodes,
            unrecorded: true,
            ..Default::default()
        },
        progress,
    )?;
    if !workload.is_empty() {
        session.create(workload.to_vec())?;
        session.settle(progress)?;
    }
    Ok(judge(session.store()))
}

/// The answer to "how many nodes of which shape make every pod fit".
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ScaleUp {
    /// The shapes, in the order given.
    pub shapes: Vec<String>,
    /// Pods that do not fit without added nodes.
    pub unfit_before: Vec<Unfit>,
    /// Whether some count (or mix) makes every pod fit.
    pub found: bool,
    /// Nodes to add per shape (in shape order) when found.
    pub counts: Vec<usize>,
    /// Their cost (the sum of each shape's cost times its count).
    pub cost: f64,
    /// The nodes to add, by name.
    pub nodes: Vec<String>,
    /// Pods placed on the added nodes, in pod order.
    pub placements: Vec<Placement>,
    /// When not found: the pods that still did not fit with the most nodes tried.
    pub still_unfit: Vec<Unfit>,
    /// Every simulation of the search, in order.
    pub probes: Vec<Probe>,
    /// Whether mixes cheaper than the answer were left untried (the budget ran out).
    pub budget_exhausted: bool,
    /// Per shape, where its search started: the pods not fitting over how many of them one
    /// empty node of the shape takes (none when it takes none).
    pub estimates: Vec<Option<usize>>,
}

/// The shapes with their numbering moved past the input's nodes named `<shape>-<n>`.
fn numbered_past(input: &Input, shapes: &[NodeShape]) -> Vec<NodeShape> {
    let mut names: Vec<&str> = Vec::new();
    for object in &input.objects {
        if let Stored::Node(node) = object {
            names.push(&node.metadata.name);
        }
    }
    for event in &input.events {
        if let crate::input::Action::Create(objects) = &event.action {
            for object in objects {
                if let Stored::Node(node) = object {
                    names.push(&node.metadata.name);
                }
            }
        }
    }
    shapes
        .iter()
        .map(|shape| {
            let prefix = format!("{}-", shape.name);
            let taken = names
                .iter()
                .filter_map(|n| n.strip_prefix(&prefix))
                .filter_map(|n| n.parse::<usize>().ok())
                .max()
                .unwrap_or(0);
            shape.clone().numbered_from(taken)
        })
        .collect()
}

/// The nodes `counts` of `shapes` make.
#[cfg(test)]
fn make_nodes(shapes: &[NodeShape], counts: &[usize]) -> Result<Vec<NewNode>, SimError> {
    let mut nodes = Vec::new();
    for (shape, count) in shapes.iter().zip(counts) {
        for n in 1..=*count {
            nodes.push(shape.node(n)?);
        }
    }
    Ok(nodes)
}

fn cost(shapes: &[NodeShape], counts: &[usize]) -> f64 {
    shapes
        .iter()
        .zip(counts)
        .map(|(s, c)| s.cost * *c as f64)
        .sum()
}

/// The search's state: the simulations so far.
struct Search<'a> {
    input: &'a Input,
    shapes: &'a [NodeShape],
    workload: &'a Workload,
    probes: Vec<Probe>,
    progress: &'a mut dyn FnMut(Progress),
    /// The nodes made so far, by shape and number: a probe makes only those no probe before
    /// it made (each is its shape's templates loaded and checked again with the node's name).
    made: HashMap<(usize, usize), NewNode>,
}

impl Search<'_> {
    /// [`make_nodes`], each node made once per search.
    fn nodes(&mut self, counts: &[usize]) -> Result<Vec<NewNode>, SimError> {
        let mut nodes = Vec::new();
        for (index, (shape, count)) in self.shapes.iter().zip(counts).enumerate() {
            for n in 1..=*count {
                let node = match self.made.entry((index, n)) {
                    Entry::Occupied(made) => made.get().clone(),
                    Entry::Vacant(slot) => slot.insert(shape.node(n)?).clone(),
                };
                nodes.push(node);
            }
        }
        Ok(nodes)
    }

    fn probe(&mut self, counts: &[usize]) -> Result<Trial, SimError> {
        let nodes = self.nodes(counts)?;
        let result = trial(self.input, &nodes, self.workload, self.progress)?;
        self.probes.push(Probe {
            counts: counts.to_vec(),
            unfit: result.unfit.len(),
        });
        Ok(result)
    }

    /// The smallest count of shape `index` alone that fits, with its trial; or the trial of
    /// the largest count tried. The search starts at `estimate` (1 without one): it gallops
    /// up from there (+1, +2, +4, ...) while the count does not fit, or down (-1, -2, -4, ...)
    /// while it does, then bisects between the largest count seen failing and the smallest
    /// seen fitting.
    fn single(
        &mut self,
        index: usize,
        bound: usize,
        estimate: Option<usize>,
    ) -> Result<Result<(usize, Trial), Trial>, SimError> {
        let at = |n: usize| {
            let mut counts = vec![0; self.shapes.len()];
            counts[index] = n;
            counts
        };
        let bound = bound.min(self.shapes[index].max_nodes).max(1);
        let start = estimate.unwrap_or(1).clamp(1, bound);
        // Nothing added is known not to fit.
        let mut low = 0;
        let first = self.probe(&at(start))?;
        let (mut high, mut fitting) = if first.unfit.is_empty() {
            let (mut high, mut fitting) = (start, first);
            let mut step = 1;
            while high - low > 1 {
                let n = high.saturating_sub(step).max(low + 1);
                let result = self.probe(&at(n))?;
                if result.unfit.is_empty() {
                    (high, fitting) = (n, result);
                    step *= 2;
                } else {
                    low = n;
                    break;
                }
            }
            (high, fitting)
        } else {
            low = start;
            let mut step = 1;
            loop {
                if low >= bound {
                    return Ok(Err(first));
                }
                let n = (low + step).min(bound);
                let result = self.probe(&at(n))?;
                if result.unfit.is_empty() {
                    break (n, result);
                }
                if n >= bound {
                    return Ok(Err(result));
                }
                low = n;
                step *= 2;
            }
        };
        while high - low > 1 {
            let mid = low + (high - low) / 2;
            let result = self.probe(&at(mid))?;
            if result.unfit.is_empty() {
                high = mid;
                fitting = result;
            } else {
                low = mid;
            }
        }
        Ok(Ok((high, fitting)))
    }

    /// How many of the pods that do not fit one empty node of shape `index` takes: a small
    /// simulation of the input's objects without its nodes, node-local slices, timeline and
    /// other pods, plus one node of the shape. `ceil(pods / that)` is where the search starts.
    fn estimate(&mut self, index: usize, unfit: &[Unfit]) -> Result<Option<usize>, SimError> {
        let names: BTreeSet<&str> = unfit.iter().map(|u| u.pod.as_str()).collect();
        let mut mini = self.input.clone();
        mini.events.clear();
        mini.objects.retain(|object| match object {
            Stored::Node(_) => false,
            Stored::ResourceSlice(slice) => slice.spec.node_name.is_none(),
            Stored::Pod(_) => {
                let key = crate::input::stored_key(object);
                names.contains(format!("{}/{}", key.namespace, key.name).as_str())
            }
            _ => true,
        });
        let node = self.shapes[index].node(1)?;
        let session = Session::start(
            &mini,
            SessionOptions {
                start_nodes: std::slice::from_ref(&node),
                unrecorded: true,
                ..Default::default()
            },
            self.progress,
        )?;
        let per_node = judge(session.store()).placements.len();
        Ok((per_node > 0).then(|| unfit.len().div_ceil(per_node)))
    }
}

/// Every mix of at least two shapes with counts up to `caps` costing less than `limit`,
/// cheapest first.
fn mixes(shapes: &[NodeShape], caps: &[usize], limit: f64) -> Vec<Vec<usize>> {
    const MAX_ENUMERATED: usize = 200_000;
    let mut out = Vec::new();
    let mut counts = vec![0; shapes.len()];
    fn walk(
        index: usize,
        shapes: &[NodeShape],
        caps: &[usize],
        limit: f64,
        counts: &mut Vec<usize>,
        out: &mut Vec<Vec<usize>>,
    ) {
        if out.len() >= MAX_ENUMERATED {
            return;
        }
        if index == shapes.len() {
            if counts.iter().filter(|c| **c > 0).count() >= 2 {
                out.push(counts.clone());
            }
            return;
        }
        for c in 0..=caps[index] {
            counts[index] = c;
            if cost(shapes, counts) >= limit && c > 0 {
                break;
            }
            walk(index + 1, shapes, caps, limit, counts, out);
        }
        counts[index] = 0;
    }
    walk(0, shapes, caps, limit, &mut counts, &mut out);
    out.sort_by(|a, b| {
        cost(shapes, a)
            .total_cmp(&cost(shapes, b))
            .then(a.iter().sum::<usize>().cmp(&b.iter().sum::<usize>()))
            .then(a.cmp(b))
    });
    out
}

/// Finds the smallest count (one shape) or the cheapest mix (several) of added nodes that makes
/// every pod, and the `workload` created at the end, fit (see the module's documentation).
pub fn scale_up(
    input: &Input,
    shapes: &[NodeShape],
    workload: &Workload,
    progress: &mut dyn FnMut(Progress),
) -> Result<ScaleUp, SimError> {
    let shapes = &numbered_past(input, shapes)[..];
    let mut search = Search {
        input,
        shapes,
        workload,
        probes: Vec::new(),
        progress,
        made: HashMap::new(),
    };
    let before = search.probe(&vec![0; shapes.len()])?;
    let mut answer = ScaleUp {
        shapes: shapes.iter().map(|s| s.name.clone()).collect(),
        unfit_before: before.unfit.clone(),
        found: before.unfit.is_empty(),
        counts: vec![0; shapes.len()],
        cost: 0.0,
        nodes: Vec::new(),
        placements: Vec::new(),
        still_unfit: Vec::new(),
        probes: Vec::new(),
        budget_exhausted: false,
        estimates: Vec::new(),
    };
    if answer.found {
        answer.probes = search.probes;
        return Ok(answer);
    }
    let bound = before.unfit.len();
    let mut best: Option<(Vec<usize>, Trial)> = None;
    let mut caps = Vec::new();
    let mut last_failure = None;
    for index in 0..shapes.len() {
        let estimate = search.estimate(index, &before.unfit)?;
        answer.estimates.push(estimate);
        match search.single(index, bound, estimate)? {
            Ok((count, result)) => {
                caps.push(count);
                let mut counts = vec![0; shapes.len()];
                counts[index] = count;
                let better = best
                    .as_ref()
                    .is_none_or(|(b, _)| cost(shapes, &counts) < cost(shapes, b));
                if better {
                    best = Some((counts, result));
                }
            }
            Err(result) => {
                caps.push(bound.min(shapes[index].max_nodes));
                last_failure = Some(result);
            }
        }
    }
    if shapes.len() >= 2 {
        let limit = best
            .as_ref()
            .map_or(f64::INFINITY, |(b, _)| cost(shapes, b));
        let mut failed: Vec<Vec<usize>> = Vec::new();
        let mut tried = 0;
        for mix in mixes(shapes, &caps, limit) {
            if failed
                .iter()
                .any(|f| mix.iter().zip(f).all(|(m, f)| m <= f))
            {
                continue;
            }
            if tried == MIX_BUDGET {
                answer.budget_exhausted = true;
                break;
            }
            tried += 1;
            let result = search.probe(&mix)?;
            if result.unfit.is_empty() {
                best = Some((mix, result));
                break;
            }
            last_failure = Some(result);
            failed.push(mix);
        }
    }
    match best {
        Some((counts, result)) => {
            let nodes: BTreeSet<String> = shapes
                .iter()
                .zip(&counts)
                .flat_map(|(s, c)| (1..=*c).map(|n| s.node_name(n)))
                .collect();
            answer.found = true;
            answer.cost = cost(shapes, &counts);
            answer.counts = counts;
            answer.placements = result
                .placements
                .iter()
                .filter(|(_, node)| nodes.contains(*node))
                .map(|(pod, node)| Placement {
                    pod: pod.clone(),
                    node: node.clone(),
                })
                .collect();
            answer.nodes = nodes.into_iter().collect();
        }
        None => {
            answer.still_unfit = last_failure.map(|t| t.unfit).unwrap_or_default();
        }
    }
    answer.probes = search.probes;
    Ok(answer)
}

/// The answer to "which nodes can go".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Consolidation {
    /// The nodes that can be removed together, in the order they were accepted.
    pub removable: Vec<String>,
    /// Where the pods of the removed nodes went.
    pub moved: Vec<Placement>,
    /// Every node tried, in order, with whether it joined and why not.
    pub tried: Vec<Candidate>,
    /// Pods that did not fit in the plain run (they need not fit after removal either).
    pub unfit_before: usize,
}

/// One node tried.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Candidate {
    /// The node.
    pub node: String,
    /// Pods the plain run placed on it.
    pub pods: usize,
    /// Whether it joined the removed set.
    pub removable: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|r| {
            let value = labels.get(&r.key);
            match r.operator.as_str() {
                "In" => value.is_some_and(|v| r.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !r.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// A percentage or count of `total`, rounded up (as the disruption controller does).
fn scaled(value: &IntOrString, total: usize) -> usize {
    match value {
        IntOrString::Int(n) => (*n).max(0) as usize,
        IntOrString::String(text) => {
            let percent: usize = text.trim_end_matches('%').parse().unwrap_or(100);
            (percent * total).div_ceil(100)
        }
    }
}

/// The budgets allowing no disruption at all, by name, with the pods they select.
fn blocking_budgets(store: &Store) -> Vec<(String, BTreeSet<String>)> {
    let mut out = Vec::new();
    for budget in store.list::<PodDisruptionBudget>() {
        let Some(selector) = &budget.spec.selector else {
            continue;
        };
        let pods: BTreeSet<String> = store
            .list::<Pod>()
            .filter(|p| p.metadata.namespace == budget.metadata.namespace)
            .filter(|p| crate::table::placed(p))
            .filter(|p| selector_matches(selector, &p.metadata.labels))
            .map(|p| format!("{}/{}", p.metadata.namespace, p.metadata.name))
            .collect();
        let total = pods.len();
        let allowed = match (&budget.spec.max_unavailable, &budget.spec.min_available) {
            (Some(max), _) => scaled(max, total),
            (None, Some(min)) => total.saturating_sub(scaled(min, total)),
            (None, None) => total,
        };
        if allowed == 0 && total > 0 {
            out.push((
                format!("{}/{}", budget.metadata.namespace, budget.metadata.name),
                pods,
            ));
        }
    }
    out
}

/// Devices allocated on each node (from the claims' allocation results).
fn devices_per_node(store: &Store) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for claim in store.list::<ResourceClaim>() {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        let node = allocation
            .node_selector
            .as_ref()
            .and_then(|s| s.node_selector_terms.first())
            .and_then(|t| t.match_fields.first())
            .and_then(|f| f.values.first())
            .cloned()
            .unwrap_or_default();
        *out.entry(node).or_default() += allocation.devices.results.len();
    }
    out
}

/// Finds the largest set of nodes, greedily, whose removal leaves every pod placed (see the
/// module's documentation). At most `limit` nodes are tried.
pub fn consolidate(
    input: &Input,
    limit: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<Consolidation, SimError> {
    let base = Session::start(input, SessionOptions::default(), progress)?;
    let store = base.store();
    let plain = judge(store);
    let mut pods_on: BTreeMap<String, usize> = BTreeMap::new();
    for node in store.list::<allot_api::core::v1::Node>() {
        pods_on.insert(node.metadata.name.clone(), 0);
    }
    for node in plain.placements.values() {
        if let Some(n) = pods_on.get_mut(node) {
            *n += 1;
        }
    }
    let devices = devices_per_node(store);
    let budgets = blocking_budgets(store);
    let mut order: Vec<(usize, usize, String)> = pods_on
        .iter()
        .map(|(node, pods)| (*pods, devices.get(node).copied().unwrap_or(0), node.clone()))
        .collect();
    order.sort();
    drop(base);
    let mut removed: BTreeSet<String> = BTreeSet::new();
    let mut accepted = Vec::new();
    let mut tried = Vec::new();
    let mut last_placements = plain.placements.clone();
    for (pods, _, node) in order.into_iter().take(limit) {
        let hosted: BTreeSet<&String> = plain
            .placements
            .iter()
            .filter(|(_, n)| **n == node)
            .map(|(p, _)| p)
            .collect();
        if let Some((budget, _)) = budgets
            .iter()
            .find(|(_, selected)| hosted.iter().any(|p| selected.contains(*p)))
        {
            tried.push(Candidate {
                node,
                pods,
                removable: false,
                reason: Some(format!("PodDisruptionBudget {budget} allows no disruption")),
            });
            continue;
        }
        let mut without = removed.clone();
        without.insert(node.clone());
        let session = Session::start(
            input,
            SessionOptions {
                without_nodes: Some(&without),
                unrecorded: true,
                ..Default::default()
            },
            progress,
        )?;
        let result = judge(session.store());
        let lost = plain
            .placements
            .keys()
            .find(|pod| !result.placements.contains_key(*pod));
        match lost {
            None => {
                removed = without;
                accepted.push(node.clone());
                last_placements = result.placements;
                tried.push(Candidate {
                    node,
                    pods,
                    removable: true,
                    reason: None,
                });
            }
            Some(pod) => {
                let why = result
                    .unfit
                    .iter()
                    .find(|u| &u.pod == pod)
                    .map_or_else(|| "it was deleted".to_string(), |u| u.reason.clone());
                tried.push(Candidate {
                    node,
                    pods,
                    removable: false,
                    reason: Some(format!("{pod} would not fit: {why}")),
                });
            }
        }
    }
    let moved = plain
        .placements
        .iter()
        .filter(|(_, node)| removed.contains(*node))
        .map(|(pod, _)| Placement {
            pod: pod.clone(),
            node: last_placements.get(pod).cloned().unwrap_or_default(),
        })
        .collect();
    Ok(Consolidation {
        removable: accepted,
        moved,
        tried,
        unfit_before: plain.unfit.len(),
    })
}

/// Pods that did not fit, grouped by cause: the reason's first line (the scheduler's summary,
/// `0/3 nodes are available: 3 cannot allocate all claims.`, or the kubelet's rejection), most
/// pods first, then the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ReasonGroup {
    /// The cause (the first line of the reasons).
    pub reason: String,
    /// The first pod's whole explanation (per node and claim, for the DRA allocator).
    pub example: String,
    /// The pods, in name order.
    pub pods: Vec<String>,
}

/// Groups pods that did not fit by cause.
pub fn group_reasons(unfit: &[Unfit]) -> Vec<ReasonGroup> {
    let mut groups: BTreeMap<&str, (&str, Vec<String>)> = BTreeMap::new();
    for u in unfit {
        let cause = u.reason.lines().next().unwrap_or_default();
        groups
            .entry(cause)
            .or_insert_with(|| (u.reason.as_str(), Vec::new()))
            .1
            .push(u.pod.clone());
    }
    let mut out: Vec<ReasonGroup> = groups
        .into_iter()
        .map(|(reason, (example, pods))| ReasonGroup {
            reason: reason.to_string(),
            example: example.to_string(),
            pods,
        })
        .collect();
    out.sort_by(|a, b| {
        b.pods
            .len()
            .cmp(&a.pods.len())
            .then(a.reason.cmp(&b.reason))
    });
    out
}

/// The pods of a store that did not fit, grouped by reason.
pub fn pending_groups(store: &Store) -> Vec<ReasonGroup> {
    group_reasons(&judge(store).unfit)
}

/// How a workload fits: entirely, partly or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Verdict {
    /// Every pod of the workload is placed.
    Entirely,
    /// Some are.
    Partly,
    /// None is.
    Not,
}

/// The answer to "does this workload fit, and where".
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadFit {
    /// Entirely, partly or not.
    pub verdict: Verdict,
    /// The workload's pods.
    pub pods: usize,
    /// Where the placed ones went, in pod order.
    pub placed: Vec<Placement>,
    /// Why the others did not fit, grouped by reason.
    pub reasons: Vec<ReasonGroup>,
    /// Pods of the cluster itself that the workload pushed out (placed before, not after).
    pub displaced: Vec<String>,
    /// The workload's gangs, each judged as a unit (a gang fits entirely or not at all).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub gangs: Vec<crate::gangs::Gang>,
}

/// Runs the input, creates the workload's objects at the end (all at once, so a gang or a set
/// of pods competes as it would), lets the controllers settle, and says how it fits.
pub fn workload_fit(
    input: &Input,
    workload: &Workload,
    progress: &mut dyn FnMut(Progress),
) -> Result<WorkloadFit, SimError> {
    let mut session = Session::start(input, SessionOptions::default(), progress)?;
    let before = judge(session.store());
    let names = copies::pod_names(session.store());
    session.create(workload.to_vec())?;
    session.settle(progress)?;
    let after = judge(session.store());
    let judged = copies::judge_workload(session.store(), &names, workload);
    let displaced = before
        .placements
        .keys()
        .filter(|pod| !after.placements.contains_key(*pod))
        .cloned()
        .collect();
    // Units: a gang is one (it fits when minCount of its pods are bound), every other pod one.
    let verdict = match (judged.units_fit, judged.units) {
        (f, n) if f == n && n > 0 => Verdict::Entirely,
        (0, _) => Verdict::Not,
        _ => Verdict::Partly,
    };
    Ok(WorkloadFit {
        verdict,
        pods: judged.placed.len() + judged.unfit.len(),
        placed: judged.placed,
        reasons: group_reasons(&judged.unfit),
        displaced,
        gangs: judged.gangs,
    })
}

/// Pods of a what-if workload: the store objects of the documents, with fresh identities.
pub fn workload_objects(objects: Vec<Stored>) -> Vec<Stored> {
    objects
        .into_iter()
        .map(|object| match object {
            Stored::Pod(pod) => {
                let mut pod = (*pod).clone();
                pod.status = Default::default();
                Stored::Pod(Arc::new(pod))
            }
            other => other,
        })
        .collect()
}

/// `namespace/name` keys of a workload's pods.
pub fn workload_pods(objects: &Workload) -> Vec<ObjectKey> {
    objects
        .iter()
        .filter(|o| matches!(o, Stored::Pod(_)))
        .map(crate::input::stored_key)
        .collect()
}

pub mod copies;

#[cfg(test)]
mod tests;
