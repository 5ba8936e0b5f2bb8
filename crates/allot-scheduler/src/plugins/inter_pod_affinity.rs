//! InterPodAffinity (PreFilter, Filter, PreScore, Score): required pod affinity and
//! anti-affinity, in both directions (the pod's terms against the pods already placed, and
//! their required anti-affinity terms against the pod), and preferred terms as scores.
//!
//! As upstream: PreFilter counts, per topology pair (key, value), the placed pods matching each
//! of the pod's required terms and the placed pods whose required anti-affinity terms match the
//! pod, so that Filter looks up the node's pairs only. A pod whose affinity terms match no pod
//! anywhere may still go where its own labels would satisfy them (the first pod of a group with
//! affinity to itself). Terms' `namespaceSelector` is matched against namespace labels
//! (the pod's own terms: resolved to the matching namespaces up front).
//!
//! Upstream 1.37 also has a hostname fast path (InterPodAffinityHostnameFastPath) that checks
//! `kubernetes.io/hostname` terms against the node's own pods instead of every node with the
//! same hostname label; it agrees with the counts whenever each node's hostname label is unique
//! and present, which is what is implemented here in the general form.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Arc;

use allot_api::core::v1::Pod;
use serde::Deserialize;

use crate::cache::{Cache, NodeInfo};
use crate::framework::{
    AffinityTerm, ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation,
    FilterPlugin, MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, ScorePlugin, Status, WeightedAffinityTerm, queueing,
};

use super::pair_counts::{Counter, PairCounts, Tallies};

/// The plugin's name.
pub const NAME: &str = "InterPodAffinity";
/// The pod's required affinity is not satisfied.
pub const REASON_AFFINITY: &str = "node(s) didn't match pod affinity rules";
/// The pod's required anti-affinity is not satisfied.
pub const REASON_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
/// A placed pod's required anti-affinity matches the pod.
pub const REASON_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// `InterPodAffinityArgs`.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// The score weight of placed pods' required affinity terms the pod matches (0..=100,
    /// default 1).
    #[serde(default = "one")]
    pub hard_pod_affinity_weight: i32,
    /// Ignore placed pods' preferred terms when the pod has no affinity of its own.
    #[serde(default)]
    pub ignore_preferred_terms_of_existing_pods: bool,
}

fn one() -> i32 {
    1
}

impl Default for Args {
    fn default() -> Self {
        Args {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

/// The InterPodAffinity plugin.
#[derive(Debug)]
pub struct InterPodAffinity {
    args: Args,
    /// Counts kept across cycles.
    tallies: Tallies,
}

impl InterPodAffinity {
    /// The plugin with its arguments.
    pub fn new(args: Args) -> Result<Self, String> {
        if !(0..=100).contains(&args.hard_pod_affinity_weight) {
            return Err(format!(
                "hardPodAffinityWeight: Invalid value: {}: not in valid range [0-100]",
                args.hard_pod_affinity_weight
            ));
        }
        Ok(InterPodAffinity {
            args,
            tallies: Tallies::default(),
        })
    }
}

/// The cluster's namespaces with their labels (for namespace selectors).
fn namespaces(cluster: &Cache) -> Vec<(String, BTreeMap<String, String>)> {
    cluster
        .namespaces
        .iter()
        .map(|n| (n.metadata.name.clone(), n.metadata.labels.clone()))
        .collect()
}

/// Whether a pod matches every term (and there is at least one).
fn matches_all(terms: &[AffinityTerm], pod: &Pod, ns_labels: &BTreeMap<String, String>) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(pod, ns_labels))
}

/// The labels of a placed pod's namespace as the pod's own terms see them: none (their
/// namespace selectors are resolved to names up front).
static NO_LABELS: BTreeMap<String, String> = BTreeMap::new();

/// Placed pods matching all of the pod's required affinity terms, once under each term's key.
struct AffinityCounter<'a>(&'a [AffinityTerm]);

impl Counter for AffinityCounter<'_> {
    fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
        if matches_all(self.0, &other.pod, &NO_LABELS) {
            for t in self.0 {
                add(&t.topology_key, 1);
            }
        }
    }
}

/// Placed pods matching each of the pod's required anti-affinity terms, under its key.
struct AntiAffinityCounter<'a>(&'a [AffinityTerm]);

impl Counter for AntiAffinityCounter<'_> {
    fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
        for t in self.0 {
            if t.matches(&other.pod, &NO_LABELS) {
                add(&t.topology_key, 1);
            }
        }
    }
}

/// Placed pods' required anti-affinity terms matching the incoming pod, under their keys.
struct ExistingAntiAffinityCounter<'a> {
    pod: &'a Pod,
    namespace_labels: &'a BTreeMap<String, String>,
}

impl Counter for ExistingAntiAffinityCounter<'_> {
    fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
        for t in &other.required_anti_affinity_terms {
            if t.matches(self.pod, self.namespace_labels) {
                add(&t.topology_key, 1);
            }
        }
    }
}

/// PreFilter state (upstream `preFilterState`).
#[derive(Debug, Clone)]
struct FilterState {
    /// The pod's required affinity terms (namespace selectors resolved).
    affinity: Vec<AffinityTerm>,
    /// The pod's required anti-affinity terms (namespace selectors resolved).
    anti_affinity: Vec<AffinityTerm>,
    /// The labels of the pod's namespace.
    namespace_labels: BTreeMap<String, String>,
    /// Placed pods whose required anti-affinity terms match the pod, per pair.
    existing_anti: Arc<PairCounts>,
    /// Placed pods matching all of the pod's affinity terms, per pair.
    affinity_counts: Arc<PairCounts>,
    /// Placed pods matching one of the pod's anti-affinity terms, per pair (once per term).
    anti_counts: Arc<PairCounts>,
}

impl FilterState {
    /// Counts one placed pod on `node` (upstream `updateWithPod`).
    fn update(&mut self, pod: &Pod, other: &PodInfo, node: &NodeInfo, delta: i64) {
        let existing = ExistingAntiAffinityCounter {
            pod,
            namespace_labels: &self.namespace_labels,
        };
        Arc::make_mut(&mut self.existing_anti).apply(&existing, other, node, delta);
        let affinity = AffinityCounter(&self.affinity);
        Arc::make_mut(&mut self.affinity_counts).apply(&affinity, other, node, delta);
        let anti = AntiAffinityCounter(&self.anti_affinity);
        Arc::make_mut(&mut self.anti_counts).apply(&anti, other, node, delta);
    }

    /// Upstream `satisfyPodAffinity`.
    fn affinity_ok(&self, pod: &Pod, node: &NodeInfo) -> bool {
        let mut pods_exist = true;
        for t in &self.affinity {
            match node.labels().get(&t.topology_key) {
                Some(value) => {
                    if self.affinity_counts.get(&t.topology_key, value) <= 0 {
                        pods_exist = false;
                    }
                }
                // Every topology label must exist on the node.
                None => return false,
            }
        }
        pods_exist
            || (self.affinity_counts.is_empty() && matches_all(&self.affinity, pod, &NO_LABELS))
    }

    /// The first of the pod's anti-affinity terms placed pods in the node's domain match.
    fn anti_affinity_conflict(&self, node: &NodeInfo) -> Option<&AffinityTerm> {
        if self.anti_counts.is_empty() {
            return None;
        }
        self.anti_affinity.iter().find(|t| {
            node.labels()
                .get(&t.topology_key)
                .is_some_and(|v| self.anti_counts.get(&t.topology_key, v) > 0)
        })
    }

    /// Upstream `satisfyExistingPodsAntiAffinity`: no pair of the node's labels has a placed
    /// pod whose anti-affinity matches the pod.
    fn existing_ok(&self, node: &NodeInfo) -> bool {
        !self.existing_anti.iter().any(|(key, values)| {
            node.labels()
                .get(key)
                .and_then(|v| values.get(v))
                .is_some_and(|c| c.sum > 0)
        })
    }
}

impl Plugin for InterPodAffinity {
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

    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl EnqueueExtensions for InterPodAffinity {
    fn requeue_on(&self) -> EventSet {
        queueing::ASSIGNED_POD_ADDED
            | queueing::ASSIGNED_POD_LABEL
            | queueing::ASSIGNED_POD_DELETED
            | queueing::NODE_ADDED
            | queueing::NODE_LABEL
            | queueing::NAMESPACE
    }

    fn events(&self) -> ClusterEvents {
        ClusterEvents {
            assigned_pod_added_or_relabelled: true,
            namespace_changed: true,
        }
    }
}

impl PreFilterPlugin for InterPodAffinity {
    /// Skip when the pod has no required terms and no placed pod has required anti-affinity
    /// terms matching it.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        if let Some(error) = &pod.parse_error {
            return (
                PreFilterResult::all_nodes(),
                Status::unresolvable(format!("parsing pod: {error}")),
            );
        }
        let cluster = ctx.cluster;
        let has_own =
            !pod.required_affinity_terms.is_empty() || !pod.required_anti_affinity_terms.is_empty();
        if !has_own && cluster.anti_affinity_pod_count() == 0 {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        let all_namespaces = namespaces(cluster);
        let resolve = |terms: &[AffinityTerm]| -> Vec<AffinityTerm> {
            terms
                .iter()
                .cloned()
                .map(|mut t| {
                    t.merge_namespaces(&all_namespaces);
                    t
                })
                .collect()
        };
        let incoming = &pod.pod;
        let affinity = resolve(&pod.required_affinity_terms);
        let anti_affinity = resolve(&pod.required_anti_affinity_terms);
        let namespace_labels = cluster.namespace_labels(&incoming.metadata.namespace);
        let empty = || Arc::new(PairCounts::default());
        let existing_anti = if cluster.anti_affinity_pod_count() == 0 {
            empty()
        } else {
            let id = format!(
                "existing-anti {} {:?} {:?}",
                incoming.metadata.namespace, incoming.metadata.labels, namespace_labels
            );
            let counter = ExistingAntiAffinityCounter {
                pod: incoming,
                namespace_labels,
            };
            self.tallies.counts(cluster, id, &counter)
        };
        let affinity_counts = if affinity.is_empty() {
            empty()
        } else {
            let id = format!("affinity {affinity:?}");
            self.tallies
                .counts(cluster, id, &AffinityCounter(&affinity))
        };
        let anti_counts = if anti_affinity.is_empty() {
            empty()
        } else {
            let id = format!("anti-affinity {anti_affinity:?}");
            self.tallies
                .counts(cluster, id, &AntiAffinityCounter(&anti_affinity))
        };
        let s = FilterState {
            affinity,
            anti_affinity,
            namespace_labels: namespace_labels.clone(),
            existing_anti,
            affinity_counts,
            anti_counts,
        };
        if s.existing_anti.is_empty() && !has_own {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        state.write(s);
        (PreFilterResult::all_nodes(), Status::success())
    }

    fn add_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        added: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<FilterState>() {
            s.update(&pod.pod, added, node, 1);
        }
        Status::success()
    }

    fn remove_pod(
        &mut self,
        state: &mut CycleState,
        pod: &PodInfo,
        removed: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<FilterState>() {
            s.update(&pod.pod, removed, node, -1);
        }
        Status::success()
    }
}

impl FilterPlugin for InterPodAffinity {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read::<FilterState>() else {
            return Status::error(
                "reading \"PreFilterInterPodAffinity\" from cycleState: not found",
            );
        };
        if !s.affinity_ok(&pod.pod, node) {
            return Status::unresolvable(REASON_AFFINITY);
        }
        if s.anti_affinity_conflict(node).is_some() {
            return Status::unschedulable(REASON_ANTI_AFFINITY);
        }
        if !s.existing_ok(node) {
            return Status::unschedulable(REASON_EXISTING_ANTI_AFFINITY);
        }
        Status::success()
    }

    /// Grouped by reason, per node: which term and which placed pods.
    fn explain(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let Some(s) = state.read::<FilterState>() else {
            return Ok(None);
        };
        let cluster = ctx.cluster;
        let mut text = String::from("InterPodAffinity:");
        for reason in [
            REASON_AFFINITY,
            REASON_ANTI_AFFINITY,
            REASON_EXISTING_ANTI_AFFINITY,
        ] {
            let nodes: Vec<&NodeInfo> = rejected
                .iter()
                .filter(|(_, st)| st.reasons().iter().any(|r| r == reason))
                .map(|(n, _)| *n)
                .collect();
            if nodes.is_empty() {
                continue;
            }
            let _ = write!(text, "\n  {} {reason}:", nodes.len());
            for node in nodes {
                let detail = match reason {
                    REASON_AFFINITY => explain_affinity(s, node),
                    REASON_ANTI_AFFINITY => explain_anti(cluster, s, node),
                    _ => explain_existing(cluster, &pod.pod, s, node),
                };
                let _ = write!(text, "\n    {}: {detail}", node.name);
            }
        }
        Ok(Some(Explanation { text, data: None }))
    }
}

/// Placed pods in the node's domain of `key` matching `matches` (at most five named).
fn domain_pods(
    cluster: &Cache,
    node: &NodeInfo,
    key: &str,
    matches: &dyn Fn(&PodInfo) -> bool,
) -> Vec<String> {
    let Some(value) = node.labels().get(key) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for other in cluster.nodes_in_order() {
        if other.labels().get(key) != Some(value) {
            continue;
        }
        for p in &other.pods {
            if matches(p) {
                out.push(format!("{} on {}", p.key(), other.name));
            }
        }
    }
    if out.len() > 5 {
        let more = out.len() - 5;
        out.truncate(5);
        out.push(format!("and {more} more"));
    }
    out
}

fn explain_affinity(s: &FilterState, node: &NodeInfo) -> String {
    for t in &s.affinity {
        match node.labels().get(&t.topology_key) {
            None => {
                return format!(
                    "required affinity term {} ({}): the node has no label {}",
                    t.index,
                    t.describe(),
                    t.topology_key
                );
            }
            Some(value) if s.affinity_counts.get(&t.topology_key, value) <= 0 => {
                return format!(
                    "required affinity term {} ({}): no pod matching every required affinity term runs in {}={value}",
                    t.index,
                    t.describe(),
                    t.topology_key,
                );
            }
            Some(_) => {}
        }
    }
    "the pod's required affinity terms are not satisfied".into()
}

fn explain_anti(cluster: &Cache, s: &FilterState, node: &NodeInfo) -> String {
    let Some(t) = s.anti_affinity_conflict(node) else {
        return "a placed pod matches the pod's required anti-affinity".into();
    };
    let empty = BTreeMap::new();
    let pods = domain_pods(cluster, node, &t.topology_key, &|p| {
        t.matches(&p.pod, &empty)
    });
    format!(
        "required anti-affinity term {} ({}) matches {} in {}={}",
        t.index,
        t.describe(),
        pods.join(", "),
        t.topology_key,
        node.labels()
            .get(&t.topology_key)
            .map_or("", String::as_str)
    )
}

fn explain_existing(cluster: &Cache, pod: &Pod, s: &FilterState, node: &NodeInfo) -> String {
    let mut parts = Vec::new();
    for (key, value) in node.labels() {
        if s.existing_anti.get(key, value) <= 0 {
            continue;
        }
        let pods = domain_pods(cluster, node, key, &|p| {
            p.required_anti_affinity_terms
                .iter()
                .any(|t| t.topology_key == *key && t.matches(pod, &s.namespace_labels))
        });
        parts.push(format!(
            "the required anti-affinity of {} matches the pod in {key}={value}",
            pods.join(", ")
        ));
    }
    parts.join("; ")
}

/// PreScore state: per topology key and value, the summed weights.
#[derive(Debug, Clone)]
struct ScoreState {
    scores: Arc<PairCounts>,
}

/// What a placed pod adds to the incoming pod's scores (upstream `processExistingPod`): the
/// weights of the incoming pod's preferred terms it matches, and of its own terms matching
/// the incoming pod (required affinity with the hard pod affinity weight).
struct ScoreCounter<'a> {
    affinity: &'a [WeightedAffinityTerm],
    anti_affinity: &'a [WeightedAffinityTerm],
    pod: &'a Pod,
    namespace_labels: &'a BTreeMap<String, String>,
    hard: i64,
}

fn add_terms(
    terms: &[WeightedAffinityTerm],
    pod: &Pod,
    ns_labels: &BTreeMap<String, String>,
    sign: i64,
    add: &mut dyn FnMut(&str, i64),
) {
    for t in terms {
        if t.term.matches(pod, ns_labels) {
            add(&t.term.topology_key, sign * i64::from(t.weight));
        }
    }
}

impl Counter for ScoreCounter<'_> {
    fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
        add_terms(self.affinity, &other.pod, &NO_LABELS, 1, add);
        add_terms(self.anti_affinity, &other.pod, &NO_LABELS, -1, add);
        if self.hard > 0 {
            for t in &other.required_affinity_terms {
                if t.matches(self.pod, self.namespace_labels) {
                    add(&t.topology_key, self.hard);
                }
            }
        }
        add_terms(
            &other.preferred_affinity_terms,
            self.pod,
            self.namespace_labels,
            1,
            add,
        );
        add_terms(
            &other.preferred_anti_affinity_terms,
            self.pod,
            self.namespace_labels,
            -1,
            add,
        );
    }
}

impl PreScorePlugin for InterPodAffinity {
    /// Sums, per topology pair, the weights of the pod's preferred terms matching placed pods
    /// and of placed pods' terms matching the pod (required affinity with the hard pod
    /// affinity weight); Skip when there is nothing to sum.
    fn pre_score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        let cluster = ctx.cluster;
        let has_own = !pod.preferred_affinity_terms.is_empty()
            || !pod.preferred_anti_affinity_terms.is_empty();
        if !has_own
            && (self.args.ignore_preferred_terms_of_existing_pods
                || cluster.affinity_pod_count() == 0)
        {
            return Status::skip();
        }
        let all_namespaces = namespaces(cluster);
        let resolve = |terms: &[WeightedAffinityTerm]| -> Vec<WeightedAffinityTerm> {
            terms
                .iter()
                .cloned()
                .map(|mut t| {
                    t.term.merge_namespaces(&all_namespaces);
                    t
                })
                .collect()
        };
        let affinity = resolve(&pod.preferred_affinity_terms);
        let anti_affinity = resolve(&pod.preferred_anti_affinity_terms);
        let incoming = &pod.pod;
        let namespace_labels = cluster.namespace_labels(&incoming.metadata.namespace);
        let hard = i64::from(self.args.hard_pod_affinity_weight);
        let id = format!(
            "score {hard} {affinity:?} {anti_affinity:?} {} {:?} {namespace_labels:?}",
            incoming.metadata.namespace, incoming.metadata.labels
        );
        let counter = ScoreCounter {
            affinity: &affinity,
            anti_affinity: &anti_affinity,
            pod: incoming,
            namespace_labels,
            hard,
        };
        let scores = self.tallies.counts(cluster, id, &counter);
        if scores.is_empty() {
            return Status::skip();
        }
        state.write(ScoreState { scores });
        Status::success()
    }
}

impl ScorePlugin for InterPodAffinity {
    /// The summed weights of the node's topology pairs.
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let Some(s) = state.read::<ScoreState>() else {
            return Ok(0);
        };
        Ok(s.scores
            .iter()
            .filter_map(|(key, values)| node.labels().get(key).and_then(|v| values.get(v)))
            .map(|c| c.sum)
            .sum())
    }

    /// Scaled between the lowest and the highest score: `100 * (s - min) / (max - min)`
    /// (truncated), all 0 when they are equal.
    fn normalize(&mut self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) {
        if state.read::<ScoreState>().is_none() {
            return;
        }
        let min = scores.iter().map(|s| s.score).min().unwrap_or(0);
        let max = scores.iter().map(|s| s.score).max().unwrap_or(0);
        let diff = max - min;
        for s in scores.iter_mut() {
            s.score = if diff > 0 {
                (MAX_NODE_SCORE as f64 * ((s.score - min) as f64 / diff as f64)) as i64
            } else {
                0
            };
        }
    }

    fn normalize_depends_on_set(&self) -> bool {
        true
    }
}
