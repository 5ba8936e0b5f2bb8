//! NodeName (Filter): a pod naming a node in `spec.nodeName` fits only there.

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, FilterPlugin, Plugin, PodInfo,
    Status, SummaryCheck, queueing,
};

/// The plugin's name.
pub const NAME: &str = "NodeName";

/// The NodeName plugin.
#[derive(Debug, Default)]
pub struct NodeName;

impl Plugin for NodeName {
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

impl FilterPlugin for NodeName {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        match filters::node_name(&pod.pod, &node.node) {
            None => Status::success(),
            Some(_) => Status::unresolvable(filters::REASON_NODE_NAME),
        }
    }

    /// Every node passes a pod that names none.
    fn summary_check(&self, _state: &CycleState, pod: &PodInfo) -> SummaryCheck {
        if pod.pod.spec.node_name.as_deref().is_none_or(str::is_empty) {
            SummaryCheck::ALWAYS
        } else {
            SummaryCheck::NONE
        }
    }
}

impl EnqueueExtensions for NodeName {
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    fn requeue_on(&self) -> EventSet {
        queueing::NODE_ADDED
    }
}
