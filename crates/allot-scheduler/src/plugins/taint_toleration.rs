//! TaintToleration (Filter, PreScore, Score): a node's NoSchedule and NoExecute taints must be
//! tolerated; nodes with fewer untolerated PreferNoSchedule taints score higher.

use allot_api::core::v1::{TaintEffect, Toleration};

use crate::cache::{NodeInfo, NodeSummary};
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin,
    MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreScorePlugin, ScorePlugin, Status, SummaryCheck,
    SummaryPass, default_normalize_score, queueing,
};

/// The plugin's name.
pub const NAME: &str = "TaintToleration";

/// The TaintToleration plugin.
#[derive(Debug, Default)]
pub struct TaintToleration;

/// PreScore state: the tolerations that can tolerate PreferNoSchedule taints.
#[derive(Debug, Clone)]
struct PreferNoScheduleTolerations(Vec<Toleration>);

impl Plugin for TaintToleration {
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        NAME
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

/// The Filter reason (upstream `ErrReasonNotMatch`; since 1.35 it names no taint, which
/// allot's explanation does: kubernetes/kubernetes#134740).
pub const REASON: &str = "node(s) had untolerated taint(s)";

impl FilterPlugin for TaintToleration {
    /// The first NoSchedule or NoExecute taint the pod does not tolerate rejects the node.
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        if node.node.spec.taints.is_empty() {
            return Status::success();
        }
        match filters::untolerated_taint(&pod.pod, &node.node) {
            None => Status::success(),
            Some(_) => Status::unresolvable(REASON),
        }
    }

    /// Per rejected node: the first taint the pod does not tolerate.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        Ok(Some(Explanation::grouped(NAME, rejected, |node, _| {
            let taint = filters::untolerated_taint(&pod.pod, &node.node)?;
            Some(format!(
                "taint {{{}: {}}} ({}) not tolerated",
                taint.key, taint.value, taint.effect
            ))
        })))
    }

    /// A plain node has no taints.
    fn summary_check(&self, _state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        SummaryCheck {
            pass: SummaryPass::IfPlain,
            min_free_devices: 0,
        }
    }
}

impl PreScorePlugin for TaintToleration {
    fn pre_score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        let tolerations = pod
            .pod
            .spec
            .tolerations
            .iter()
            .filter(|t| t.effect.is_none() || t.effect == Some(TaintEffect::PreferNoSchedule))
            .cloned()
            .collect();
        state.write(PreferNoScheduleTolerations(tolerations));
        Status::success()
    }
}

impl ScorePlugin for TaintToleration {
    /// How many PreferNoSchedule taints of the node the pod does not tolerate.
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let count = match state.read::<PreferNoScheduleTolerations>() {
            Some(t) => count_intolerable(&t.0, node),
            None => filters::intolerable_prefer_no_schedule(&pod.pod, &node.node),
        };
        Ok(count as i64)
    }

    /// A plain node has no taints: 0.
    fn score_summaries(
        &mut self,
        _state: &CycleState,
        summaries: &[NodeSummary],
        out: &mut [NodeScore],
    ) {
        for o in out {
            if summaries.get(o.slot).is_some_and(|s| s.plain) {
                o.score = 0;
            }
        }
    }

    /// Fewer untolerated taints is better: reversed by the highest count.
    fn normalize(&mut self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) {
        default_normalize_score(MAX_NODE_SCORE, true, scores);
    }

    fn normalize_depends_on_set(&self) -> bool {
        true
    }
}

fn count_intolerable(tolerations: &[Toleration], node: &NodeInfo) -> usize {
    node.node
        .spec
        .taints
        .iter()
        .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
        .filter(|taint| !tolerations.iter().any(|t| filters::tolerates(t, taint)))
        .count()
}

impl EnqueueExtensions for TaintToleration {
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    fn requeue_on(&self) -> EventSet {
        queueing::NODE_ADDED | queueing::NODE_TAINT
    }
}
