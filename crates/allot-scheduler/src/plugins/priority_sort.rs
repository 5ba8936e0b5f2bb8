//! PrioritySort (QueueSort): higher `spec.priority` first, then the pod queued earlier.
//!
//! The priority is the pod's `spec.priority` (0 when absent); resolving `priorityClassName`
//! into it is the admission side's job (PriorityClass objects).

use crate::framework::{Plugin, QueueSortPlugin, QueuedPodInfo};

/// The plugin's name.
pub const NAME: &str = "PrioritySort";

/// The PrioritySort plugin.
#[derive(Debug, Default)]
pub struct PrioritySort;

impl Plugin for PrioritySort {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_queue_sort(&self) -> Option<&dyn QueueSortPlugin> {
        Some(self)
    }
}

impl QueueSortPlugin for PrioritySort {
    fn less(&self, a: &QueuedPodInfo, b: &QueuedPodInfo) -> bool {
        let (pa, pb) = (
            a.pod.spec.priority.unwrap_or(0),
            b.pod.spec.priority.unwrap_or(0),
        );
        pa > pb || (pa == pb && a.timestamp < b.timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::Pod;
    use allot_runtime::SimTime;
    use allot_store::{Kind, ObjectKey};
    use std::sync::Arc;

    fn info(priority: Option<i32>, at: u64) -> QueuedPodInfo {
        let mut pod = Pod::default();
        pod.spec.priority = priority;
        QueuedPodInfo {
            key: ObjectKey::new(Kind::Pod, "ns", "p"),
            pod: Arc::new(pod),
            timestamp: SimTime(at),
        }
    }

    #[test]
    fn priority_then_timestamp() {
        let s = PrioritySort;
        assert!(s.less(&info(Some(10), 5), &info(None, 1)));
        assert!(!s.less(&info(None, 1), &info(Some(10), 5)));
        assert!(s.less(&info(Some(1), 1), &info(Some(1), 2)));
        assert!(!s.less(&info(Some(1), 2), &info(Some(1), 2)));
    }
}
