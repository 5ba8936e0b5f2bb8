//! NodeUnschedulable (Filter): a `spec.unschedulable` node takes only pods tolerating the
//! `node.kubernetes.io/unschedulable:NoSchedule` taint.

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, FilterPlugin, Plugin, PodInfo,
    Status, SummaryCheck, SummaryPass, queueing,
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
