//! SchedulingGates (PreEnqueue): a pod with `spec.schedulingGates` is not tried until every
//! gate is removed.

use allot_api::core::v1::Pod;

use crate::cache::Cache;
use crate::framework::{Plugin, PreEnqueuePlugin, Status};

/// The plugin's name.
pub const NAME: &str = "SchedulingGates";

/// The SchedulingGates plugin.
#[derive(Debug, Default)]
pub struct SchedulingGates;

impl Plugin for SchedulingGates {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_enqueue(&mut self) -> Option<&mut dyn PreEnqueuePlugin> {
        Some(self)
    }
}

impl PreEnqueuePlugin for SchedulingGates {
    /// Upstream's message lists the gates as Go prints a string slice: `[a b]`.
    fn pre_enqueue(&mut self, _cluster: &Cache, pod: &Pod) -> Status {
        if pod.spec.scheduling_gates.is_empty() {
            return Status::success();
        }
        let gates: Vec<&str> = pod
            .spec
            .scheduling_gates
            .iter()
            .map(|g| g.name.as_str())
            .collect();
        Status::unresolvable(format!(
            "waiting for scheduling gates: [{}]",
            gates.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::PodSchedulingGate;

    #[test]
    fn gated_pods_wait() {
        let mut pod = Pod::default();
        assert!(
            SchedulingGates
                .pre_enqueue(&Cache::default(), &pod)
                .is_success()
        );
        pod.spec.scheduling_gates = vec![
            PodSchedulingGate {
                name: "a.io/one".into(),
            },
            PodSchedulingGate { name: "two".into() },
        ];
        let status = SchedulingGates.pre_enqueue(&Cache::default(), &pod);
        assert_eq!(
            status.code(),
            crate::framework::Code::UnschedulableAndUnresolvable
        );
        assert_eq!(
            status.message(),
            "waiting for scheduling gates: [a.io/one two]"
        );
    }
}
