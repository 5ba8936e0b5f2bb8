//! PodTopologySpread (PreFilter, Filter, PreScore, Score): a pod's `DoNotSchedule` spread
//! constraints must hold on the node (the matching pods of the node's domain, plus the pod
//! itself if it matches, minus the global minimum, is at most `maxSkew`); `ScheduleAnyway`
//! constraints score nodes with fewer matching pods higher.
//!
//! As upstream: only nodes with every constraint's topology key count; per constraint, nodes
//! the pod's node affinity excludes are not counted unless `nodeAffinityPolicy: Ignore`, and
//! nodes with taints the pod does not tolerate are counted unless `nodeTaintsPolicy: Honor`;
//! terminating pods and pods of other namespaces are not counted; with fewer eligible domains
//! than `minDomains`, the global minimum is 0; `matchLabelKeys` add `key in (value)` for the
//! pod's own values to the selector.
//!
//! System default constraints (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) apply to
//! pods without constraints of their own through the selectors of the Services selecting the
//! pod and of the ReplicationController, ReplicaSet or StatefulSet that controls it
//! ([`WorkloadSelector`], upstream `helper.DefaultSelector`); a pod none selects gets no
//! default constraint.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use allot_api::core::v1::{
    NodeInclusionPolicy, Pod, TopologySpreadConstraint, UnsatisfiableConstraintAction,
};
use serde::Deserialize;

use crate::cache::{Cache, NodeInfo, NodeSummary};
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin,
    MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Status, SummaryCheck, SummaryPass, queueing,
};
use crate::labels::{Operator, Requirement, Selector};

use super::node_affinity::NodeAffinity;
use super::pair_counts::{Counter, PairCounts, Tallies};

/// The plugin's name.
pub const NAME: &str = "PodTopologySpread";
/// A constraint's skew would exceed `maxSkew`.
pub const REASON_CONSTRAINTS: &str = "node(s) didn't match pod topology spread constraints";
/// The node lacks a constraint's topology key.
pub const REASON_NODE_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
/// The hostname label.
const HOSTNAME: &str = "kubernetes.io/hostname";
/// The zone label.
const ZONE: &str = "topology.kubernetes.io/zone";

/// `PodTopologySpreadArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Constraints for pods without their own (used with `defaultingType: List`).
    #[serde(default)]
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// `System` (default: the built-in constraints) or `List`.
    #[serde(default)]
    pub defaulting_type: Option<String>,
}

/// Where a pod's default spreading selector comes from (upstream `helper.DefaultSelector`):
/// the selectors of the Services, ReplicationControllers, ReplicaSets and StatefulSets that
/// select the pod, combined.
pub trait DefaultSelector: std::fmt::Debug {
    /// The selector, or `None` when nothing selects the pod.
    fn default_selector(&self, cluster: &Cache, pod: &Pod) -> Option<Selector>;
}

/// The default selector from the cache's workload objects (upstream `DefaultSelector`): the
/// merged selectors of the pod's namespace's Services that match it, plus the selector of its
/// controller when that is a ReplicationController (merged as labels), a ReplicaSet or a
/// StatefulSet (added as requirements). `None` when that selects everything.
#[derive(Debug, Clone, Copy, Default)]
pub struct WorkloadSelector;

impl DefaultSelector for WorkloadSelector {
    fn default_selector(&self, cluster: &Cache, pod: &Pod) -> Option<Selector> {
        let workloads = &cluster.workloads;
        let ns = &pod.metadata.namespace;
        let labels = &pod.metadata.labels;
        let mut set: BTreeMap<String, String> = BTreeMap::new();
        let matches =
            |sel: &BTreeMap<String, String>| sel.iter().all(|(k, v)| labels.get(k) == Some(v));
        for selector in workloads.services.get(ns).into_iter().flatten() {
            if matches(selector) {
                set.extend(selector.iter().map(|(k, v)| (k.clone(), v.clone())));
            }
        }
        let as_selector = |set: &BTreeMap<String, String>| {
            let mut s = Selector::everything();
            for (k, v) in set {
                s.add(Requirement::new(k.clone(), Operator::In, vec![v.clone()]));
            }
            s
        };
        let mut selector = as_selector(&set);
        let owner = pod
            .metadata
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true));
        if let Some(owner) = owner {
            let key = (ns.clone(), owner.name.clone());
            let group = owner.api_version.split('/').next().unwrap_or("");
            match (owner.api_version.as_str(), owner.kind.as_str()) {
                ("v1", "ReplicationController") => {
                    if let Some(rc) = workloads.replication_controllers.get(&key) {
                        set.extend(rc.iter().map(|(k, v)| (k.clone(), v.clone())));
                        selector = as_selector(&set);
                    }
                }
                (_, "ReplicaSet" | "StatefulSet") if group == "apps" => {
                    let found = if owner.kind == "ReplicaSet" {
                        workloads.replica_sets.get(&key)
                    } else {
                        workloads.stateful_sets.get(&key)
                    };
                    if let Some(Ok(Selector::All(requirements))) =
                        found.map(|s| Selector::from_api(s.as_ref()))
                    {
                        for r in requirements {
                            selector.add(r);
                        }
                    }
                }
                _ => {}
            }
        }
        (!selector.is_everything()).then_some(selector)
    }
}

/// No workload objects: no default selector.
#[derive(Debug, Default)]
pub struct NoDefaultSelector;

impl DefaultSelector for NoDefaultSelector {
    fn default_selector(&self, _cluster: &Cache, _pod: &Pod) -> Option<Selector> {
        None
    }
}

/// A parsed constraint (upstream `topologySpreadConstraint`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Constraint {
    /// Its position in the pod's `topologySpreadConstraints` (`None`: a default).
    index: Option<usize>,
    max_skew: i32,
    topology_key: String,
    selector: Selector,
    min_domains: i32,
    honor_affinity: bool,
    honor_taints: bool,
}

impl Constraint {
    /// Upstream `matchNodeInclusionPolicies`.
    fn includes(&self, pod: &Pod, node: &NodeInfo) -> bool {
        if self.honor_affinity && !NodeAffinity::required_matches(pod, node) {
            return false;
        }
        !(self.honor_taints && filters::untolerated_taint(pod, &node.node).is_some())
    }

    fn describe(&self) -> String {
        let which = match self.index {
            Some(i) => format!("constraint {i}"),
            None => "default constraint".to_string(),
        };
        format!(
            "{which} (topologyKey {}, maxSkew {}, selector {})",
            self.topology_key, self.max_skew, self.selector
        )
    }
}

/// The PodTopologySpread plugin.
#[derive(Debug)]
pub struct PodTopologySpread {
    defaults: Vec<TopologySpreadConstraint>,
    system_defaulted: bool,
    default_selector: Box<dyn DefaultSelector>,
    /// Counts kept across cycles.
    tallies: Tallies,
    /// Each node's value of the topology keys PreScore looked at, kept while the nodes and
    /// their labels are the same (every pod of a large cluster would otherwise look up each
    /// node's labels, string by string).
    columns: Columns,
}

/// Not looked up yet.
const UNSET: u32 = u32::MAX;
/// The node lacks the key.
const ABSENT: u32 = u32::MAX - 1;

/// Per topology key, each node slot's value, interned, for one cache at one
/// `topology_version`.
#[derive(Debug, Default)]
struct Columns {
    instance: u64,
    topology: u64,
    keys: HashMap<String, Column>,
}

#[derive(Debug, Default)]
struct Column {
    /// Per slot: a value's number, [`ABSENT`] or [`UNSET`].
    values: Vec<u32>,
    names: Vec<String>,
    numbers: HashMap<String, u32>,
    /// `values` with every slot looked up, shared with the cycles' Filter states until a
    /// slot is looked up anew.
    shared: Option<Arc<[u32]>>,
}

impl Column {
    /// The number of `slot`'s value ([`ABSENT`] without the key).
    fn value(&mut self, cluster: &Cache, key: &str, slot: usize) -> u32 {
        if slot >= self.values.len() {
            self.values.resize(slot + 1, UNSET);
        }
        if self.values[slot] == UNSET {
            let label = cluster.node(slot).and_then(|n| n.labels().get(key));
            self.values[slot] = match label {
                None => ABSENT,
                Some(value) => match self.numbers.get(value) {
                    Some(&n) => n,
                    None => {
                        self.shared = None;
                        let n = self.names.len() as u32;
                        self.names.push(value.clone());
                        self.numbers.insert(value.clone(), n);
                        n
                    }
                },
            };
        }
        self.values[slot]
    }

    /// `counts` (per value name) per value number; a value no node showed yet has none.
    fn by_number<'a>(&self, counts: impl IntoIterator<Item = (&'a String, i64)>) -> Vec<i64> {
        let mut out = vec![0; self.names.len()];
        for (value, count) in counts {
            if let Some(&n) = self.numbers.get(value) {
                out[n as usize] = count;
            }
        }
        out
    }

    /// Every one of the first `slots` slots' value numbers (looked up where not yet).
    fn all(&mut self, cluster: &Cache, key: &str, slots: usize) -> Arc<[u32]> {
        if let Some(shared) = &self.shared
            && shared.len() == slots
        {
            return Arc::clone(shared);
        }
        for slot in 0..slots {
            self.value(cluster, key, slot);
        }
        let shared: Arc<[u32]> = self.values[..slots].into();
        self.shared = Some(Arc::clone(&shared));
        shared
    }
}

impl Columns {
    /// The columns of `keys`, forgetting everything when the nodes or their labels changed.
    fn refresh(&mut self, cluster: &Cache) {
        if self.instance != cluster.instance() || self.topology != cluster.topology_version() {
            *self = Columns {
                instance: cluster.instance(),
                topology: cluster.topology_version(),
                keys: HashMap::new(),
            };
        }
    }
}

impl PodTopologySpread {
    /// PreScore's domains over `nodes`: per constraint, the values of the nodes that count
    /// (each at 0; a node without the key counts as the value ""), and the nodes ignored for
    /// lacking a key when every key is required.
    fn domains(
        &mut self,
        cluster: &Cache,
        nodes: &[usize],
        constraints: &[Constraint],
        require_all: bool,
    ) -> (Vec<BTreeMap<String, i64>>, Vec<usize>) {
        let mut columns = self.take_columns(cluster, constraints);
        let mut seen: Vec<Vec<bool>> = vec![Vec::new(); constraints.len()];
        let mut absent_seen = vec![false; constraints.len()];
        let mut ignored = Vec::new();
        for &slot in nodes {
            if cluster.node(slot).is_none() {
                continue;
            }
            if require_all
                && constraints
                    .iter()
                    .zip(columns.iter_mut())
                    .any(|(c, col)| col.value(cluster, &c.topology_key, slot) == ABSENT)
            {
                ignored.push(slot);
                continue;
            }
            for (i, c) in constraints.iter().enumerate() {
                if c.topology_key == HOSTNAME {
                    continue;
                }
                match columns[i].value(cluster, &c.topology_key, slot) {
                    ABSENT => absent_seen[i] = true,
                    n => {
                        let n = n as usize;
                        if n >= seen[i].len() {
                            seen[i].resize(n + 1, false);
                        }
                        seen[i][n] = true;
                    }
                }
            }
        }
        let counts = (0..constraints.len())
            .map(|i| {
                let mut out: BTreeMap<String, i64> = seen[i]
                    .iter()
                    .enumerate()
                    .filter(|(_, s)| **s)
                    .map(|(n, _)| (columns[i].names[n].clone(), 0))
                    .collect();
                if absent_seen[i] {
                    out.insert(String::new(), 0);
                }
                out
            })
            .collect();
        self.put_columns(constraints, columns);
        ignored.sort_unstable();
        (counts, ignored)
    }

    /// Score's raw score of each node of `nodes` (see [`ScorePlugin::score`]), per node slot
    /// ([`UNSCORED`] for the slots not among them): computed here from the interned node
    /// values, instead of looking up each node's labels and each domain's count by name.
    fn raw_scores(
        &mut self,
        cluster: &Cache,
        nodes: &[usize],
        s: &ScoreState,
        namespace: &str,
    ) -> Vec<i64> {
        let mut columns = self.take_columns(cluster, &s.constraints);
        // Per constraint, the count of each value number (hostname constraints count per node,
        // and have none).
        let by_number: Vec<Vec<i64>> = s
            .counts
            .iter()
            .zip(&columns)
            .map(|(counts, column)| {
                if counts.is_empty() {
                    return Vec::new();
                }
                column.by_number(counts.iter().map(|(value, count)| (value, *count)))
            })
            .collect();
        let end = nodes.iter().max().map_or(0, |m| m + 1);
        let mut raw = vec![UNSCORED; end];
        for &slot in nodes {
            let Some(node) = cluster.node(slot) else {
                continue;
            };
            if s.is_ignored(slot) {
                raw[slot] = 0;
                continue;
            }
            let mut score = 0f64;
            for (i, c) in s.constraints.iter().enumerate() {
                let n = columns[i].value(cluster, &c.topology_key, slot);
                if n == ABSENT {
                    continue;
                }
                let count = if let Some(per_node) = &s.host_counts[i] {
                    per_node
                        .binary_search_by_key(&slot, |&(slot, _)| slot)
                        .map_or(0, |at| per_node[at].1)
                } else if c.topology_key == HOSTNAME {
                    count_matching(node, &c.selector, namespace) as i64
                } else {
                    // A value first seen after the counts were made has none.
                    by_number[i].get(n as usize).copied().unwrap_or(0)
                };
                score += count as f64 * s.weights[i] + f64::from(c.max_skew - 1);
            }
            raw[slot] = score.round() as i64;
        }
        self.put_columns(&s.constraints, columns);
        raw
    }

    /// Gives a Filter state every node's value number and the counts per number (see
    /// [`FilterState::violation`]).
    fn number_domains(&mut self, cluster: &Cache, s: &mut FilterState) {
        let slots = cluster.summaries().len();
        let mut columns = self.take_columns(cluster, &s.constraints);
        for ((c, column), counts) in s.constraints.iter().zip(&mut columns).zip(&s.counts) {
            s.numbers.push(column.all(cluster, &c.topology_key, slots));
            let domains = counts.domains(&c.topology_key).into_iter().flatten();
            s.by_number
                .push(column.by_number(domains.map(|(value, count)| (value, count.sum))));
        }
        self.put_columns(&s.constraints, columns);
    }

    /// The columns of the constraints' keys, taken out of the kept ones (current for the
    /// cluster) while a cycle fills them in; [`PodTopologySpread::put_columns`] returns them.
    fn take_columns(&mut self, cluster: &Cache, constraints: &[Constraint]) -> Vec<Column> {
        self.columns.refresh(cluster);
        constraints
            .iter()
            .map(|c| {
                self.columns
                    .keys
                    .remove(&c.topology_key)
                    .unwrap_or_default()
            })
            .collect()
    }

    /// Keeps the columns taken by [`PodTopologySpread::take_columns`]. Two constraints may share
    /// a key: the last one's column is kept, the others only lose what they learnt this cycle.
    fn put_columns(&mut self, constraints: &[Constraint], columns: Vec<Column>) {
        for (c, column) in constraints.iter().zip(columns) {
            self.columns.keys.insert(c.topology_key.clone(), column);
        }
    }

    /// The plugin with its arguments.
    pub fn new(args: Args) -> Result<Self, String> {
        let system = args
            .defaulting_type
            .as_deref()
            .is_none_or(|t| t == "System");
        if !system && args.defaulting_type.as_deref() != Some("List") {
            return Err(format!(
                "defaultingType: Unsupported value: {:?}: supported values: \"List\", \"System\"",
                args.defaulting_type.unwrap_or_default()
            ));
        }
        if system && !args.default_constraints.is_empty() {
            return Err(
                "defaultConstraints: Invalid value: when .defaultingType is \"System\"".into(),
            );
        }
        let defaults = if system {
            let c = |key: &str, skew: i32| TopologySpreadConstraint {
                max_skew: skew,
                topology_key: key.into(),
                when_unsatisfiable: UnsatisfiableConstraintAction::ScheduleAnyway,
                ..Default::default()
            };
            vec![c(HOSTNAME, 3), c(ZONE, 5)]
        } else {
            args.default_constraints
        };
        Ok(PodTopologySpread {
            defaults,
            system_defaulted: system,
            default_selector: Box::new(WorkloadSelector),
            tallies: Tallies::default(),
            columns: Columns::default(),
        })
    }

    /// Parses the constraints of one action: the pod's own, or, when it has none, the
    /// defaults with the default selector.
    fn constraints(
        &self,
        cluster: &Cache,
        pod: &Pod,
        action: &UnsatisfiableConstraintAction,
    ) -> Result<Vec<Constraint>, String> {
        if !pod.spec.topology_spread_constraints.is_empty() {
            return parse(&pod.spec.topology_spread_constraints, pod, action, true);
        }
        if !self
            .defaults
            .iter()
            .any(|c| &c.when_unsatisfiable == action)
        {
            return Ok(Vec::new());
        }
        // Nothing selects the pod (always, until allot has the workload kinds): no defaults,
        // without parsing them for every pod.
        let Some(selector) = self.default_selector.default_selector(cluster, pod) else {
            return Ok(Vec::new());
        };
        let mut constraints = parse(&self.defaults, pod, action, false)?;
        for c in &mut constraints {
            c.selector = selector.clone();
        }
        Ok(constraints)
    }
}

/// Parses constraints of one action (upstream `filterTopologySpreadConstraints`).
fn parse(
    constraints: &[TopologySpreadConstraint],
    pod: &Pod,
    action: &UnsatisfiableConstraintAction,
    own: bool,
) -> Result<Vec<Constraint>, String> {
    let mut out = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        if &c.when_unsatisfiable != action {
            continue;
        }
        let mut selector = Selector::from_api(c.label_selector.as_ref())?;
        for key in &c.match_label_keys {
            if let Some(value) = pod.metadata.labels.get(key) {
                selector.add(Requirement::new(
                    key.clone(),
                    Operator::In,
                    vec![value.clone()],
                ));
            }
        }
        out.push(Constraint {
            index: own.then_some(i),
            max_skew: c.max_skew,
            topology_key: c.topology_key.clone(),
            selector,
            min_domains: c.min_domains.unwrap_or(1),
            honor_affinity: c.node_affinity_policy != Some(NodeInclusionPolicy::Ignore),
            honor_taints: c.node_taints_policy == Some(NodeInclusionPolicy::Honor),
        });
    }
    Ok(out)
}

/// Whether a node has every constraint's topology key.
fn has_all_keys(node: &NodeInfo, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| node.labels().contains_key(&c.topology_key))
}

/// Upstream `countPodsMatchSelector`: non-terminating pods of the namespace matching.
fn count_matching(node: &NodeInfo, selector: &Selector, namespace: &str) -> usize {
    node.pods
        .iter()
        .filter(|p| counted(&p.pod, selector, namespace))
        .count()
}

/// Whether a placed pod counts for a constraint: not terminating, in the namespace, matching.
fn counted(other: &Pod, selector: &Selector, namespace: &str) -> bool {
    other.metadata.deletion_timestamp.is_none()
        && other.metadata.namespace == namespace
        && selector.matches(&other.metadata.labels)
}

/// One constraint's matching pods per domain of the eligible nodes (those with every
/// constraint's key that the constraint includes for the pod), every such domain present.
struct ConstraintCounter<'a> {
    pod: &'a Pod,
    constraint: &'a Constraint,
    all: &'a [Constraint],
    /// Only nodes with every constraint's key count (always for filtering; for scoring
    /// unless the constraints are the system defaults).
    require_all: bool,
}

impl ConstraintCounter<'_> {
    fn eligible(&self, node: &NodeInfo) -> bool {
        (!self.require_all || has_all_keys(node, self.all))
            && self.constraint.includes(self.pod, node)
    }

    /// Names everything the counts depend on.
    fn id(&self) -> String {
        let c = self.constraint;
        format!(
            "spread {} {} {}",
            self.pod.metadata.namespace,
            c.selector,
            self.eligibility()
        )
    }

    /// Names everything [`ConstraintCounter::eligible`] depends on besides the node: which
    /// domains exist for the constraint.
    fn eligibility(&self) -> String {
        let c = self.constraint;
        let keys: Vec<&str> = self.all.iter().map(|c| c.topology_key.as_str()).collect();
        let spec = &self.pod.spec;
        let affinity = c.honor_affinity.then(|| {
            let required = spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref());
            format!("{:?} {required:?}", spec.node_selector)
        });
        let taints = c.honor_taints.then(|| format!("{:?}", spec.tolerations));
        format!(
            "{} {keys:?} {} {affinity:?} {taints:?}",
            c.topology_key, self.require_all
        )
    }
}

impl Counter for ConstraintCounter<'_> {
    fn contribute(&self, other: &PodInfo, node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
        let c = self.constraint;
        if self.eligible(node) && counted(&other.pod, &c.selector, &self.pod.metadata.namespace) {
            add(&c.topology_key, 1);
        }
    }

    fn seeds(&self, node: &NodeInfo, seed: &mut dyn FnMut(&str)) {
        if self.eligible(node) {
            seed(&self.constraint.topology_key);
        }
    }

    fn keep_empty(&self) -> bool {
        true
    }

    fn candidates(&self) -> Option<(&str, &str, &str)> {
        let (label, value) = self.constraint.selector.equality()?;
        Some((&self.pod.metadata.namespace, label, value))
    }

    fn seeds_id(&self) -> Option<String> {
        Some(format!("spread domains {}", self.eligibility()))
    }
}

/// PreFilter state (upstream `preFilterState`): per constraint, the matching pods per domain
/// and the smallest count.
#[derive(Debug, Clone)]
struct FilterState {
    constraints: Vec<Constraint>,
    /// Per constraint, matching pods per topology value (under the constraint's key).
    counts: Vec<Arc<PairCounts>>,
    /// Per constraint, the global minimum (see [`FilterState::min_match`]), kept with the
    /// counts.
    mins: Vec<i64>,
    /// Per constraint, 1 when the pod itself matches its selector.
    self_match: Vec<i64>,
    /// Per constraint, each node slot's value number under its key (see [`Column`]; empty
    /// when not computed), and `counts` per value number: Filter's lookups without strings.
    numbers: Vec<Arc<[u32]>>,
    by_number: Vec<Vec<i64>>,
}

impl FilterState {
    /// Constraint `i`'s matching pods per domain.
    fn domains(&self, i: usize) -> impl Iterator<Item = (&String, i64)> {
        self.counts[i]
            .domains(&self.constraints[i].topology_key)
            .into_iter()
            .flatten()
            .map(|(value, c)| (value, c.sum))
    }

    fn new(pod: &Pod, constraints: Vec<Constraint>, counts: Vec<Arc<PairCounts>>) -> Self {
        let self_match = constraints
            .iter()
            .map(|c| i64::from(c.selector.matches(&pod.metadata.labels)))
            .collect();
        let mut s = FilterState {
            constraints,
            counts,
            mins: Vec::new(),
            self_match,
            numbers: Vec::new(),
            by_number: Vec::new(),
        };
        s.mins = (0..s.constraints.len()).map(|i| s.min_match(i)).collect();
        s
    }

    /// The global minimum for a constraint (0 when fewer domains than `minDomains`).
    fn min_match(&self, i: usize) -> i64 {
        let domains = self.counts[i]
            .domains(&self.constraints[i].topology_key)
            .map_or(0, BTreeMap::len);
        if (domains as i64) < i64::from(self.constraints[i].min_domains) {
            return 0;
        }
        self.domains(i)
            .map(|(_, n)| n)
            .min()
            .unwrap_or(i64::from(i32::MAX))
    }

    /// The first constraint the node violates: (index, skew or `None` for a missing label).
    fn violation(&self, node: &NodeInfo) -> Option<(usize, Option<i64>)> {
        for (i, c) in self.constraints.iter().enumerate() {
            let number = self
                .numbers
                .get(i)
                .and_then(|numbers| numbers.get(node.slot))
                .copied()
                .unwrap_or(UNSET);
            let matching = match number {
                ABSENT => return Some((i, None)),
                UNSET => {
                    let Some(value) = node.labels().get(&c.topology_key) else {
                        return Some((i, None));
                    };
                    self.counts[i].get(&c.topology_key, value)
                }
                n => self.by_number[i].get(n as usize).copied().unwrap_or(0),
            };
            let skew = matching + self.self_match[i] - self.mins[i];
            if skew > i64::from(c.max_skew) {
                return Some((i, Some(skew)));
            }
        }
        None
    }

    fn update(&mut self, pod: &Pod, other: &Pod, node: &NodeInfo, delta: i64) {
        if other.metadata.namespace != pod.metadata.namespace
            || !has_all_keys(node, &self.constraints)
        {
            return;
        }
        for (i, c) in self.constraints.iter().enumerate() {
            if !c.selector.matches(&other.metadata.labels) || !c.includes(pod, node) {
                continue;
            }
            let value = &node.labels()[&c.topology_key];
            Arc::make_mut(&mut self.counts[i]).add(&c.topology_key, value, 1, delta);
            let number = self.numbers.get(i).and_then(|n| n.get(node.slot)).copied();
            if let Some(n) = number.filter(|&n| n < ABSENT)
                && let Some(count) = self.by_number[i].get_mut(n as usize)
            {
                *count = self.counts[i].get(&c.topology_key, value);
            }
        }
        self.mins = (0..self.constraints.len())
            .map(|i| self.min_match(i))
            .collect();
    }
}

/// PreScore state (upstream `preScoreState`).
#[derive(Debug, Clone)]
struct ScoreState {
    constraints: Vec<Constraint>,
    /// Scored nodes without every topology key (by slot).
    ignored: Vec<usize>,
    /// Per constraint, matching pods per topology value of the scored nodes (not hostname).
    counts: Vec<BTreeMap<String, i64>>,
    /// Per constraint, `ln(domains + 2)`.
    weights: Vec<f64>,
    /// Per hostname constraint whose selector names a label value: the matching pods per
    /// node slot (sorted by slot), from the cache's label index (nodes absent have none).
    /// `None`: counted on each scored node's pods.
    host_counts: Vec<Option<Vec<(usize, i64)>>>,
    /// Per node slot, the raw score of the nodes PreScore was given ([`UNSCORED`] for others).
    raw: Vec<i64>,
}

/// A slot PreScore did not score.
const UNSCORED: i64 = i64::MIN;

impl ScoreState {
    /// Whether the node at `slot` lacks a topology key (`ignored` is sorted).
    fn is_ignored(&self, slot: usize) -> bool {
        self.ignored.binary_search(&slot).is_ok()
    }
}

impl Plugin for PodTopologySpread {
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

impl EnqueueExtensions for PodTopologySpread {
    fn requeue_on(&self) -> EventSet {
        queueing::ASSIGNED_POD_ADDED
            | queueing::ASSIGNED_POD_LABEL
            | queueing::ASSIGNED_POD_DELETED
            | queueing::NODE_ADDED
            | queueing::NODE_LABEL
            | queueing::NODE_TAINT
            | queueing::NODE_DELETED
    }

    fn events(&self) -> ClusterEvents {
        ClusterEvents {
            assigned_pod_added_or_relabelled: true,
            namespace_changed: false,
        }
    }
}

impl PreFilterPlugin for PodTopologySpread {
    /// Counts, per `DoNotSchedule` constraint, the matching pods of every eligible domain;
    /// Skip without such constraints.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let pod = &pod.pod;
        let constraints = match self.constraints(
            ctx.cluster,
            pod,
            &UnsatisfiableConstraintAction::DoNotSchedule,
        ) {
            Ok(c) => c,
            Err(e) => {
                return (
                    PreFilterResult::all_nodes(),
                    Status::error(format!("get constraints from pod: {e}")),
                );
            }
        };
        if constraints.is_empty() {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        let counts = constraints
            .iter()
            .map(|constraint| {
                let counter = ConstraintCounter {
                    pod,
                    constraint,
                    all: &constraints,
                    require_all: true,
                };
                self.tallies.counts(ctx.cluster, counter.id(), &counter)
            })
            .collect();
        let mut s = FilterState::new(pod, constraints, counts);
        self.number_domains(ctx.cluster, &mut s);
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
            s.update(&pod.pod, &added.pod, node, 1);
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
            s.update(&pod.pod, &removed.pod, node, -1);
        }
        Status::success()
    }
}

impl FilterPlugin for PodTopologySpread {
    /// The filter is a few lookups per node: run alone, it spares the node walk the others.
    fn summary_check(&self, _state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        SummaryCheck {
            pass: SummaryPass::IfOwnFilter,
            min_free_devices: 0,
        }
    }

    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read::<FilterState>() else {
            return Status::error(
                "reading \"PreFilterPodTopologySpread\" from cycleState: not found",
            );
        };
        match s.violation(node) {
            None => Status::success(),
            Some((_, None)) => Status::unresolvable(REASON_NODE_LABEL),
            Some((_, Some(_))) => Status::unschedulable(REASON_CONSTRAINTS),
        }
    }

    /// Per rejected node: the constraint, the node's domain with its matching pods, the global
    /// minimum and the skew.
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
        let pod = &pod.pod;
        Ok(Some(Explanation::grouped(NAME, rejected, |node, _| {
            let (i, skew) = s.violation(node)?;
            let c = &s.constraints[i];
            let Some(skew) = skew else {
                return Some(format!(
                    "{}: the node has no label {}",
                    c.describe(),
                    c.topology_key
                ));
            };
            let value = &node.labels()[&c.topology_key];
            let matching = s.counts[i].get(&c.topology_key, value);
            let min = s.min_match(i);
            let minimum = s
                .domains(i)
                .filter(|(_, n)| *n == min)
                .map(|(v, _)| format!("{}={v}", c.topology_key))
                .next()
                .unwrap_or_else(|| format!("fewer than minDomains {}", c.min_domains));
            let pods = domain_pods(ctx.cluster, pod, c, value);
            Some(format!(
                "{}: {}={value} has {matching} matching pod(s){}, the global minimum is {min} ({minimum}): skew {skew} > maxSkew {}",
                c.describe(),
                c.topology_key,
                if pods.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", pods.join(", "))
                },
                c.max_skew
            ))
        })))
    }
}

/// The counted pods of a domain (at most ten named).
fn domain_pods(cluster: &Cache, pod: &Pod, c: &Constraint, value: &str) -> Vec<String> {
    let mut out = Vec::new();
    for node in cluster.nodes_in_order() {
        if node.labels().get(&c.topology_key).map(String::as_str) != Some(value)
            || !c.includes(pod, node)
        {
            continue;
        }
        for p in &node.pods {
            if counted(&p.pod, &c.selector, &pod.metadata.namespace) {
                out.push(p.key());
            }
        }
    }
    out.sort();
    if out.len() > 10 {
        let more = out.len() - 10;
        out.truncate(10);
        out.push(format!("and {more} more"));
    }
    out
}

impl PreScorePlugin for PodTopologySpread {
    /// Counts, per `ScheduleAnyway` constraint, the matching pods of the domains of the
    /// scored nodes; Skip without such constraints.
    fn pre_score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        nodes: &[usize],
    ) -> Status {
        let cluster = ctx.cluster;
        if cluster.node_count() == 0 {
            return Status::skip();
        }
        let pod = &pod.pod;
        let constraints = match self.constraints(
            cluster,
            pod,
            &UnsatisfiableConstraintAction::ScheduleAnyway,
        ) {
            Ok(c) => c,
            Err(e) => {
                return Status::error(format!(
                    "calculating preScoreState: obtaining pod's soft topology spread constraints: {e}"
                ));
            }
        };
        if constraints.is_empty() {
            return Status::skip();
        }
        let require_all =
            !pod.spec.topology_spread_constraints.is_empty() || !self.system_defaulted;
        let (counts, ignored) = self.domains(cluster, nodes, &constraints, require_all);
        let mut counts = counts;
        let weights = constraints
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let size = if c.topology_key == HOSTNAME {
                    nodes.len() - ignored.len()
                } else {
                    counts[i].len()
                };
                ((size + 2) as f64).ln()
            })
            .collect();
        for (i, constraint) in constraints.iter().enumerate() {
            // Hostname domains are counted per node when scoring.
            if constraint.topology_key == HOSTNAME {
                continue;
            }
            let counter = ConstraintCounter {
                pod,
                constraint,
                all: &constraints,
                require_all,
            };
            let totals = self.tallies.counts(cluster, counter.id(), &counter);
            for (value, count) in counts[i].iter_mut() {
                *count += totals.get(&constraint.topology_key, value);
            }
        }
        let host_counts = constraints
            .iter()
            .map(|c| {
                let (label, value) = c
                    .selector
                    .equality()
                    .filter(|_| c.topology_key == HOSTNAME)?;
                let namespace = pod.metadata.namespace.as_str();
                let mut slots: Vec<usize> = cluster
                    .assigned_labelled(namespace, label, value)
                    .filter(|(_, other)| counted(&other.pod, &c.selector, namespace))
                    .map(|(node, _)| node.slot)
                    .collect();
                slots.sort_unstable();
                let mut per_node: Vec<(usize, i64)> = Vec::new();
                for slot in slots {
                    match per_node.last_mut() {
                        Some((last, count)) if *last == slot => *count += 1,
                        _ => per_node.push((slot, 1)),
                    }
                }
                Some(per_node)
            })
            .collect();
        let mut s = ScoreState {
            constraints,
            ignored,
            counts,
            weights,
            host_counts,
            raw: Vec::new(),
        };
        s.raw = self.raw_scores(cluster, nodes, &s, &pod.metadata.namespace);
        state.write(s);
        Status::success()
    }
}

impl ScorePlugin for PodTopologySpread {
    /// Per constraint whose key the node has: the domain's matching pods times the
    /// constraint's weight, plus `maxSkew - 1`; summed and rounded.
    fn score(
        &mut self,
        ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let Some(s) = state.read::<ScoreState>() else {
            return Ok(0);
        };
        if let Some(&raw) = s.raw.get(node.slot)
            && raw != UNSCORED
        {
            return Ok(raw);
        }
        // A node PreScore was not given (the framework gives it every node it scores).
        let raw = self.raw_scores(ctx.cluster, &[node.slot], s, &pod.pod.metadata.namespace);
        Ok(raw
            .get(node.slot)
            .copied()
            .filter(|&r| r != UNSCORED)
            .unwrap_or(0))
    }

    /// The raw scores PreScore computed, for the nodes it was given.
    fn score_summaries(
        &mut self,
        state: &CycleState,
        _summaries: &[NodeSummary],
        out: &mut [NodeScore],
    ) {
        let Some(s) = state.read::<ScoreState>() else {
            return;
        };
        for o in out.iter_mut() {
            if let Some(&raw) = s.raw.get(o.slot) {
                o.score = raw;
            }
        }
    }

    /// Fewer matching pods is better: `100 * (max + min - score) / max`; ignored nodes 0.
    fn normalize(&mut self, state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) {
        let Some(s) = state.read::<ScoreState>() else {
            return;
        };
        let ignored = |slot: usize| s.is_ignored(slot);
        let (mut min, mut max) = (i64::MAX, 0i64);
        for sc in scores.iter() {
            if ignored(sc.slot) {
                continue;
            }
            min = min.min(sc.score);
            max = max.max(sc.score);
        }
        for sc in scores.iter_mut() {
            if ignored(sc.slot) {
                sc.score = 0;
            } else if max == 0 {
                sc.score = MAX_NODE_SCORE;
            } else {
                sc.score = MAX_NODE_SCORE * (max + min - sc.score) / max;
            }
        }
    }

    fn normalize_depends_on_set(&self) -> bool {
        true
    }
}
