//! NodeAffinity (PreFilter, Filter, PreScore, Score): `spec.nodeSelector` and the required node
//! affinity must match the node; matching preferred terms add their weights to its score. The
//! profile's `addedAffinity` argument applies to every pod on top of its own.

use std::collections::BTreeSet;

use allot_api::core::v1::{
    NodeAffinity as NodeAffinityTerms, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, Pod,
};
use serde::Deserialize;

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin,
    MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult,
    PreScorePlugin, ScorePlugin, Status, SummaryCheck, default_normalize_score, queueing,
};

/// The plugin's name.
pub const NAME: &str = "NodeAffinity";
/// The pod's node selector or required affinity does not match.
pub const REASON_POD: &str = "node(s) didn't match Pod's node affinity/selector";
/// The profile's added affinity does not match.
pub const REASON_ENFORCED: &str = "node(s) didn't match scheduler-enforced node affinity";
/// The required terms name node names with no node in common.
pub const REASON_CONFLICT: &str = "pod affinity terms conflict";

/// `NodeAffinityArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Affinity added to every pod of the profile.
    #[serde(default)]
    pub added_affinity: Option<NodeAffinityTerms>,
}

/// The NodeAffinity plugin.
#[derive(Debug, Default)]
pub struct NodeAffinity {
    added: NodeAffinityTerms,
}

impl NodeAffinity {
    /// The plugin with its arguments.
    pub fn new(args: Args) -> Self {
        NodeAffinity {
            added: args.added_affinity.unwrap_or_default(),
        }
    }

    /// Whether the pod's node selector and required affinity match the node (upstream
    /// `GetRequiredNodeAffinity(pod).Match`).
    pub fn required_matches(pod: &Pod, node: &NodeInfo) -> bool {
        filters::node_affinity(pod, &node.node).is_none()
    }
}

/// PreFilter state: the pod's requirements are read from the pod itself; this marks that the
/// plugin is active.
#[derive(Debug, Clone)]
struct Active;

/// PreScore state: the plugin scores this pod.
#[derive(Debug, Clone)]
struct Preferred;

impl Plugin for NodeAffinity {
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

impl PreFilterPlugin for NodeAffinity {
    /// Skip when neither the pod nor the profile requires anything; a result naming nodes
    /// when every required term names nodes by `metadata.name In`.
    fn pre_filter(
        &mut self,
        _ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let required = pod
            .pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|a| {
                a.required_during_scheduling_ignored_during_execution
                    .as_ref()
            });
        let added = self
            .added
            .required_during_scheduling_ignored_during_execution
            .is_some();
        if required.is_none() && !added && pod.pod.spec.node_selector.is_empty() {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        state.write(Active);
        let Some(required) = required.filter(|r| !r.node_selector_terms.is_empty()) else {
            return (PreFilterResult::all_nodes(), Status::success());
        };
        let mut names: Option<BTreeSet<String>> = Some(BTreeSet::new());
        for term in &required.node_selector_terms {
            let mut term_names: Option<BTreeSet<String>> = None;
            for r in &term.match_fields {
                if r.key == "metadata.name" && r.operator == NodeSelectorOperator::In {
                    let set: BTreeSet<String> = r.values.iter().cloned().collect();
                    term_names = Some(match term_names {
                        None => set,
                        Some(t) => t.intersection(&set).cloned().collect(),
                    });
                }
            }
            match term_names {
                // A term without node names: every node may match (terms are ORed).
                None => {
                    names = None;
                    break;
                }
                Some(t) => {
                    if let Some(n) = names.as_mut() {
                        n.extend(t);
                    }
                }
            }
        }
        match names {
            Some(n) if n.is_empty() => (
                PreFilterResult::all_nodes(),
                Status::unresolvable(REASON_CONFLICT),
            ),
            Some(n) => (
                PreFilterResult {
                    node_names: Some(n),
                },
                Status::success(),
            ),
            None => (PreFilterResult::all_nodes(), Status::success()),
        }
    }
}

impl FilterPlugin for NodeAffinity {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if let Some(added) = &self
            .added
            .required_during_scheduling_ignored_during_execution
            && !filters::selector_matches(&node.node, added)
        {
            return Status::unresolvable(REASON_ENFORCED);
        }
        if Self::required_matches(&pod.pod, node) {
            Status::success()
        } else {
            Status::unresolvable(REASON_POD)
        }
    }

    fn summary_check(&self, _state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        SummaryCheck::NONE
    }

    /// Per node, what failed: the profile's `addedAffinity` term, the `nodeSelector` key, or
    /// the required term and expression, with the node's own label value.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let added = self
            .added
            .required_during_scheduling_ignored_during_execution
            .as_ref();
        Ok(Some(Explanation::grouped(
            NAME,
            rejected,
            |node, reason| match reason {
                REASON_ENFORCED => added.map(|a| {
                    format!(
                        "the profile's addedAffinity: {}",
                        selector_mismatch(a, node)
                    )
                }),
                _ => Some(pod_mismatch(&pod.pod, node)),
            },
        )))
    }
}

/// A label's value on the node as the explanations write it.
fn label_on(node: &NodeInfo, key: &str) -> String {
    match node.labels().get(key) {
        Some(v) => format!("the node has {key}={v}"),
        None => format!("the node has no label {key}"),
    }
}

/// A requirement as written in the pod (`zone In [a, b]`).
fn describe_requirement(r: &NodeSelectorRequirement) -> String {
    let op = r.operator.as_str();
    if r.values.is_empty() {
        format!("{} {op}", r.key)
    } else {
        format!("{} {op} [{}]", r.key, r.values.join(", "))
    }
}

/// Why one term does not match the node: its first failing requirement.
fn term_mismatch(term: &NodeSelectorTerm, node: &NodeInfo) -> String {
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        return "the term is empty and matches no node".into();
    }
    if !filters::term_valid(term) {
        return "the term has an invalid requirement and matches no node".into();
    }
    for r in &term.match_expressions {
        let value = node.labels().get(&r.key).map(String::as_str);
        if !filters::requirement_matches(r, value) {
            return format!(
                "{} fails: {}",
                describe_requirement(r),
                label_on(node, &r.key)
            );
        }
    }
    for r in &term.match_fields {
        if r.key != "metadata.name" || !filters::requirement_matches(r, Some(node.name.as_str())) {
            return format!(
                "field {} fails: the node's metadata.name is {}",
                describe_requirement(r),
                node.name
            );
        }
    }
    "the term does not match".into()
}

/// Why a selector (terms ORed) does not match the node: each term's first failure.
fn selector_mismatch(selector: &NodeSelector, node: &NodeInfo) -> String {
    match selector.node_selector_terms.as_slice() {
        [] => "no required terms, which matches no node".into(),
        [term] => term_mismatch(term, node),
        terms => {
            let parts: Vec<String> = terms
                .iter()
                .enumerate()
                .map(|(i, t)| format!("term {i}: {}", term_mismatch(t, node)))
                .collect();
            format!(
                "none of the {} required terms matches ({})",
                terms.len(),
                parts.join("; ")
            )
        }
    }
}

/// Why the pod's `nodeSelector` or required node affinity rejects the node.
fn pod_mismatch(pod: &Pod, node: &NodeInfo) -> String {
    for (key, value) in &pod.spec.node_selector {
        if node.labels().get(key) != Some(value) {
            return format!("nodeSelector {key}={value}: {}", label_on(node, key));
        }
    }
    let required = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    match required {
        Some(selector) => format!(
            "required node affinity: {}",
            selector_mismatch(selector, node)
        ),
        None => "the pod's node selector does not match".into(),
    }
}

impl PreScorePlugin for NodeAffinity {
    /// Skip when neither the pod nor the profile prefers anything.
    fn pre_score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        let own = pod
            .pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some_and(|a| {
                !a.preferred_during_scheduling_ignored_during_execution
                    .is_empty()
            });
        if !own
            && self
                .added
                .preferred_during_scheduling_ignored_during_execution
                .is_empty()
        {
            return Status::skip();
        }
        state.write(Preferred);
        Status::success()
    }
}

impl ScorePlugin for NodeAffinity {
    /// The sum of the weights of the preferred terms (the profile's, then the pod's) that
    /// match the node.
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let added: i64 = self
            .added
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .filter(|p| p.weight != 0 && filters::term_matches(&node.node, &p.preference))
            .map(|p| i64::from(p.weight))
            .sum();
        Ok(added + filters::preferred_affinity_weight(&pod.pod, &node.node))
    }

    fn normalize(&mut self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
    }

    fn normalize_depends_on_set(&self) -> bool {
        true
    }
}

impl EnqueueExtensions for NodeAffinity {
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    fn requeue_on(&self) -> EventSet {
        queueing::NODE_ADDED | queueing::NODE_LABEL
    }
}
