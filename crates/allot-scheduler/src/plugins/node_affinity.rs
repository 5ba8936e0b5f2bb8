//! NodeAffinity (PreFilter, Filter, PreScore, Score): `spec.nodeSelector` and the required node
//! affinity must match the node; matching preferred terms add their weights to its score. The
//! profile's `addedAffinity` argument applies to every pod on top of its own.

use std::collections::BTreeSet;

use allot_api::core::v1::{NodeAffinity as NodeAffinityTerms, NodeSelectorOperator, Pod};
use serde::Deserialize;

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, FilterPlugin, MAX_NODE_SCORE,
    NodeScore, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, PreScorePlugin,
    ScorePlugin, Status, SummaryCheck, default_normalize_score, queueing,
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
