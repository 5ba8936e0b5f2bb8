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

use allot_api::core::v1::Pod;
use serde::Deserialize;

use crate::cache::{Cache, NodeInfo};
use crate::framework::{
    AffinityTerm, ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation,
    FilterPlugin, MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin,
    PreFilterResult, PreScorePlugin, ScorePlugin, Status, WeightedAffinityTerm, queueing,
};

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
        Ok(InterPodAffinity { args })
    }
}

/// A topology pair: (key, value).
type Pair = (String, String);

fn pair(node: &NodeInfo, key: &str) -> Option<Pair> {
    node.labels().get(key).map(|v| (key.to_string(), v.clone()))
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
    existing_anti: BTreeMap<Pair, i64>,
    /// Placed pods matching all of the pod's affinity terms, per pair.
    affinity_counts: BTreeMap<Pair, i64>,
    /// Placed pods matching one of the pod's anti-affinity terms, per pair (once per term).
    anti_counts: BTreeMap<Pair, i64>,
}

impl FilterState {
    fn add(map: &mut BTreeMap<Pair, i64>, node: &NodeInfo, key: &str, delta: i64) {
        if let Some(p) = pair(node, key) {
            let entry = map.entry(p.clone()).or_insert(0);
            *entry += delta;
            if *entry == 0 {
                map.remove(&p);
            }
        }
    }

    /// Counts one placed pod on `node` (upstream `updateWithPod`).
    fn update(&mut self, pod: &Pod, other: &PodInfo, node: &NodeInfo, delta: i64) {
        for t in &other.required_anti_affinity_terms {
            if t.matches(pod, &self.namespace_labels) {
                Self::add(&mut self.existing_anti, node, &t.topology_key, delta);
            }
        }
        let empty = BTreeMap::new();
        if matches_all(&self.affinity, &other.pod, &empty) {
            for t in &self.affinity {
                Self::add(&mut self.affinity_counts, node, &t.topology_key, delta);
            }
        }
        for t in &self.anti_affinity {
            if t.matches(&other.pod, &empty) {
                Self::add(&mut self.anti_counts, node, &t.topology_key, delta);
            }
        }
    }

    /// Upstream `satisfyPodAffinity`.
    fn affinity_ok(&self, pod: &Pod, node: &NodeInfo) -> bool {
        let mut pods_exist = true;
        for t in &self.affinity {
            match pair(node, &t.topology_key) {
                Some(p) => {
                    if self.affinity_counts.get(&p).copied().unwrap_or(0) <= 0 {
                        pods_exist = false;
                    }
                }
                // Every topology label must exist on the node.
                None => return false,
            }
        }
        pods_exist
            || (self.affinity_counts.is_empty()
                && matches_all(&self.affinity, pod, &BTreeMap::new()))
    }

    /// The first of the pod's anti-affinity terms placed pods in the node's domain match.
    fn anti_affinity_conflict(&self, node: &NodeInfo) -> Option<&AffinityTerm> {
        if self.anti_counts.is_empty() {
            return None;
        }
        self.anti_affinity.iter().find(|t| {
            pair(node, &t.topology_key)
                .is_some_and(|p| self.anti_counts.get(&p).copied().unwrap_or(0) > 0)
        })
    }

    /// Upstream `satisfyExistingPodsAntiAffinity`: no pair of the node's labels has a placed
    /// pod whose anti-affinity matches the pod.
    fn existing_ok(&self, node: &NodeInfo) -> bool {
        if self.existing_anti.is_empty() {
            return true;
        }
        !node.labels().iter().any(|(k, v)| {
            self.existing_anti
                .get(&(k.clone(), v.clone()))
                .is_some_and(|n| *n > 0)
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
        let mut s = FilterState {
            affinity: resolve(&pod.required_affinity_terms),
            anti_affinity: resolve(&pod.required_anti_affinity_terms),
            namespace_labels: cluster
                .namespace_labels(&incoming.metadata.namespace)
                .clone(),
            existing_anti: BTreeMap::new(),
            affinity_counts: BTreeMap::new(),
            anti_counts: BTreeMap::new(),
        };
        let empty = BTreeMap::new();
        for node in cluster.nodes_in_order() {
            if node.anti_affinity_pods > 0 {
                for other in &node.pods {
                    for t in &other.required_anti_affinity_terms {
                        if t.matches(incoming, &s.namespace_labels) {
                            FilterState::add(&mut s.existing_anti, node, &t.topology_key, 1);
                        }
                    }
                }
            }
            if !has_own {
                continue;
            }
            for other in &node.pods {
                if matches_all(&s.affinity, &other.pod, &empty) {
                    for t in &s.affinity {
                        FilterState::add(&mut s.affinity_counts, node, &t.topology_key, 1);
                    }
                }
                for t in &s.anti_affinity {
                    if t.matches(&other.pod, &empty) {
                        FilterState::add(&mut s.anti_counts, node, &t.topology_key, 1);
                    }
                }
            }
        }
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
        match pair(node, &t.topology_key) {
            None => {
                return format!(
                    "required affinity term {} ({}): the node has no label {}",
                    t.index,
                    t.describe(),
                    t.topology_key
                );
            }
            Some(p) if s.affinity_counts.get(&p).copied().unwrap_or(0) <= 0 => {
                return format!(
                    "required affinity term {} ({}): no pod matching every required affinity term runs in {}={}",
                    t.index,
                    t.describe(),
                    p.0,
                    p.1
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
        let counted = s
            .existing_anti
            .get(&(key.clone(), value.clone()))
            .is_some_and(|n| *n > 0);
        if !counted {
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
    scores: BTreeMap<String, BTreeMap<String, i64>>,
}

impl ScoreState {
    fn add(&mut self, term: &AffinityTerm, weight: i64, node: &NodeInfo) {
        if let Some(value) = node.labels().get(&term.topology_key) {
            *self
                .scores
                .entry(term.topology_key.clone())
                .or_default()
                .entry(value.clone())
                .or_insert(0) += weight;
        }
    }

    fn add_terms(
        &mut self,
        terms: &[WeightedAffinityTerm],
        pod: &Pod,
        ns_labels: &BTreeMap<String, String>,
        node: &NodeInfo,
        sign: i64,
    ) {
        for t in terms {
            if t.term.matches(pod, ns_labels) {
                self.add(&t.term, sign * i64::from(t.weight), node);
            }
        }
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
        let anti = resolve(&pod.preferred_anti_affinity_terms);
        let incoming = &pod.pod;
        let ns_labels = cluster.namespace_labels(&incoming.metadata.namespace);
        let empty = BTreeMap::new();
        let hard = i64::from(self.args.hard_pod_affinity_weight);
        let mut s = ScoreState {
            scores: BTreeMap::new(),
        };
        for node in cluster.nodes_in_order() {
            if node.labels().is_empty() || (!has_own && node.affinity_pods == 0) {
                continue;
            }
            for other in &node.pods {
                if !has_own && !other.has_affinity() {
                    continue;
                }
                s.add_terms(&affinity, &other.pod, &empty, node, 1);
                s.add_terms(&anti, &other.pod, &empty, node, -1);
                if hard > 0 {
                    for t in &other.required_affinity_terms {
                        if t.matches(incoming, ns_labels) {
                            s.add(t, hard, node);
                        }
                    }
                }
                s.add_terms(
                    &other.preferred_affinity_terms,
                    incoming,
                    ns_labels,
                    node,
                    1,
                );
                s.add_terms(
                    &other.preferred_anti_affinity_terms,
                    incoming,
                    ns_labels,
                    node,
                    -1,
                );
            }
        }
        if s.scores.is_empty() {
            return Status::skip();
        }
        state.write(s);
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
