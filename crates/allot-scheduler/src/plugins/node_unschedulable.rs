//! NodeUnschedulable (Filter): a `spec.unschedulable` node takes only pods tolerating the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin, Plugin,
    PodInfo, Status, SummaryCheck, SummaryPass, queueing,
};

/// The plugin's name.
pub const NAME: &str = "NodeUnschedulable";

/// The NodeUnschedulable plugin.
#[derive(Debug, Default)]
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }

    fn name(&self) -> &'static str {
        NAME
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }
}

impl FilterPlugin for NodeUnschedulable {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match filters::node_unschedulable(&pod.pod, &node.node) {
            None => Status::success(),
            Some(_) => Status::unresolvable(filters::REASON_UNSCHEDULABLE),
        }
    }

    /// Each node is cordoned, and the pod lacks the toleration that would let it in.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        _pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        Ok(Some(Explanation::grouped(NAME, rejected, |_, _| {
            Some(
                "cordoned (spec.unschedulable: true) and the pod does not tolerate \
                 node.kubernetes.io/unschedulable:NoSchedule"
                    .into(),
            )
        })))
    }

    /// A plain node (schedulable, untainted) passes.
    fn summary_check(&self, _state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        SummaryCheck {
            pass: SummaryPass::IfPlain,
            min_free_devices: 0,
        }
    }
}

impl EnqueueExtensions for NodeUnschedulable {
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    fn requeue_on(&self) -> EventSet {
        queueing::NODE_ADDED | queueing::NODE_TAINT
    }
}
