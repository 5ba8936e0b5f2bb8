//! NodeName (Filter): a pod naming a node in `spec.nodeName` fits only there.

use crate::cache::NodeInfo;
use crate::filters;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin, Plugin,
    PodInfo, Status, SummaryCheck, queueing,
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

    /// The node the pod names, once for all the nodes rejected (they all fail for the same
    /// reason), and whether the cluster has it.
    fn explain(
        &mut self,
        ctx: &Ctx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let wanted = pod.pod.spec.node_name.as_deref().unwrap_or_default();
        let whereabouts = if ctx.cluster.node_by_name(wanted).is_some() {
            "the only node it may run on"
        } else {
            "no node has that name"
        };
        Ok(Some(Explanation {
            text: format!(
                "{NAME}:\n  {} {}:\n    the pod's spec.nodeName is {wanted:?}: {whereabouts}",
                rejected.len(),
                filters::REASON_NODE_NAME
            ),
            data: None,
        }))
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
