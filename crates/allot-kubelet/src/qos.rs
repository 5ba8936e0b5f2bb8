//! Pod QoS classes exactly as upstream's `ComputePodQOS` (pkg/apis/core/v1/helper/qos),
//! including pod-level resources.

use allot_api::core::v1::{Pod, ResourceList};
use allot_quantity::Quantity;
use serde::{Deserialize, Serialize};

/// A pod's QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum QosClass {
    /// Requests equal limits for CPU and memory everywhere.
    Guaranteed,
    /// Some request or limit, but not Guaranteed.
    Burstable,
    /// No CPU or memory request or limit at all.
    BestEffort,
}

impl QosClass {
    /// The name as the API writes it.
    pub fn name(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }
}

const QOS_RESOURCES: [&str; 2] = ["cpu", "memory"];

/// Positive CPU and memory quantities summed, in the order of [`QOS_RESOURCES`]. (Two slots,
/// not a map by name: this runs for every pod a node admits.)
type Sums = [Option<Quantity>; 2];

/// Adds the positive CPU and memory quantities of `list` into `into`; returns how many of the
/// two `list` has.
fn add_list(into: &mut Sums, list: &ResourceList) -> usize {
    let mut present = 0;
    for (sum, name) in into.iter_mut().zip(QOS_RESOURCES) {
        let Some(q) = list.get(name).filter(|q| q.sign() > 0) else {
            continue;
        };
        present += 1;
        *sum = Some(match sum.take() {
            Some(sum) => sum + q,
            None => q.clone(),
        });
    }
    present
}

/// Upstream's `ComputePodQOS`. With `pod_level_resources` (the PodLevelResources gate) on and
/// `.spec.resources` set, only the pod-level requests and limits count.
pub fn compute_pod_qos(pod: &Pod, pod_level_resources: bool) -> QosClass {
    let mut requests: Sums = Default::default();
    let mut limits: Sums = Default::default();
    let mut guaranteed = true;
    match (&pod.spec.resources, pod_level_resources) {
        (Some(res), true) => {
            add_list(&mut requests, &res.requests);
            if !res.limits.is_empty() && add_list(&mut limits, &res.limits) != QOS_RESOURCES.len() {
                guaranteed = false;
            }
        }
        _ => {
            let empty = ResourceList::new();
            for c in pod.spec.containers.iter().chain(&pod.spec.init_containers) {
                let (req, lim) = match &c.resources {
                    Some(r) => (&r.requests, &r.limits),
                    None => (&empty, &empty),
                };
                add_list(&mut requests, req);
                if add_list(&mut limits, lim) != QOS_RESOURCES.len() {
                    guaranteed = false;
                }
            }
        }
    }
    if requests.iter().chain(&limits).all(Option::is_none) {
        return QosClass::BestEffort;
    }
    // The same resources requested and limited, in equal amounts.
    if guaranteed && requests == limits {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(yaml: &str) -> Pod {
        serde_saphyr::from_str(yaml).expect("pod")
    }

    #[test]
    fn container_level_classes() {
        let g = pod(
            "spec:\n  containers:\n  - name: a\n    resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '2', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&g, true), QosClass::Guaranteed);
        // Limits only: requests default to limits in the API server, but here they are absent,
        // so the request map is empty and does not match the limits.
        let b = pod(
            "spec:\n  containers:\n  - name: a\n    resources: {limits: {cpu: '2', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&b, true), QosClass::Burstable);
        let be = pod("spec:\n  containers:\n  - name: a\n");
        assert_eq!(compute_pod_qos(&be, true), QosClass::BestEffort);
        // An init container without limits makes the pod Burstable.
        let mixed = pod(
            "spec:\n  initContainers:\n  - name: i\n    resources: {requests: {cpu: '1'}}\n  containers:\n  - name: a\n    resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '2', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&mixed, true), QosClass::Burstable);
        // Summed requests equal summed limits although one container has no limits: Burstable.
        let uneven = pod(
            "spec:\n  containers:\n  - name: a\n    resources: {requests: {cpu: '1', memory: 1Gi}, limits: {cpu: '2', memory: 2Gi}}\n  - name: b\n    resources: {requests: {cpu: '1', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&uneven, true), QosClass::Burstable);
    }

    #[test]
    fn pod_level_resources() {
        let p = pod(
            "spec:\n  resources: {requests: {cpu: '4', memory: 4Gi}, limits: {cpu: '4', memory: 4Gi}}\n  containers:\n  - name: a\n",
        );
        assert_eq!(compute_pod_qos(&p, true), QosClass::Guaranteed);
        // With the gate off, the containers decide.
        assert_eq!(compute_pod_qos(&p, false), QosClass::BestEffort);
        let only_requests = pod(
            "spec:\n  resources: {requests: {cpu: '4'}}\n  containers:\n  - name: a\n    resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '2', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&only_requests, true), QosClass::Burstable);
        let cpu_limit_only = pod(
            "spec:\n  resources: {requests: {cpu: '4'}, limits: {cpu: '4'}}\n  containers:\n  - name: a\n",
        );
        assert_eq!(compute_pod_qos(&cpu_limit_only, true), QosClass::Burstable);
        let empty = pod(
            "spec:\n  resources: {}\n  containers:\n  - name: a\n    resources: {requests: {cpu: '2', memory: 1Gi}, limits: {cpu: '2', memory: 1Gi}}\n",
        );
        assert_eq!(compute_pod_qos(&empty, true), QosClass::BestEffort);
    }
}
