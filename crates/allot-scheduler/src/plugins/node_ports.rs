//! NodePorts (PreFilter, Filter): a pod's host ports must be free on the node (same protocol
//! and port on the same host IP, or on either side `0.0.0.0`, conflict).

use crate::cache::NodeInfo;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin,
    HostPort, Plugin, PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, Status, host_ports,
    queueing,
};

/// The plugin's name.
pub const NAME: &str = "NodePorts";
/// The node's ports are taken.
pub const REASON: &str = "node(s) didn't have free ports for the requested pod ports";

/// The NodePorts plugin.
#[derive(Debug, Default)]
pub struct NodePorts;

/// PreFilter state: the pod's host ports.
#[derive(Debug, Clone)]
struct Wanted(Vec<HostPort>);

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }

    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl EnqueueExtensions for NodePorts {
    fn requeue_on(&self) -> EventSet {
        queueing::ASSIGNED_POD_DELETED | queueing::NODE_ADDED
    }

    /// Ports are freed by pod deletions, which retry every unschedulable pod anyway.
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }
}

impl PreFilterPlugin for NodePorts {
    /// Skip for a pod without host ports.
    fn pre_filter(
        &mut self,
        _ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let ports = host_ports(&pod.pod);
        if ports.is_empty() {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        state.write(Wanted(ports));
        (PreFilterResult::all_nodes(), Status::success())
    }
}

impl FilterPlugin for NodePorts {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let wanted = match state.read::<Wanted>() {
            Some(w) => w.0.clone(),
            None => host_ports(&pod.pod),
        };
        let taken = wanted
            .iter()
            .any(|w| node.host_ports.iter().any(|p| p.conflicts(w)));
        if taken {
            Status::unschedulable(REASON)
        } else {
            Status::success()
        }
    }

    /// Per rejected node: the pod's ports taken there and the pods holding them.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let wanted = match state.read::<Wanted>() {
            Some(w) => w.0.clone(),
            None => host_ports(&pod.pod),
        };
        Ok(Some(Explanation::grouped(NAME, rejected, |node, _| {
            let mut holders: Vec<String> = Vec::new();
            for w in &wanted {
                for other in &node.pods {
                    if host_ports(&other.pod).iter().any(|p| p.conflicts(w)) {
                        holders.push(format!("{}/{} by {}", w.port, w.protocol, other.key()));
                    }
                }
            }
            Some(holders.join(", "))
        })))
    }
}
