//! The kubelet's resource fit admission (upstream `lifecycle.PredicateAdmitHandler`, whose
//! `generalFilter` runs the scheduler's `AdmissionCheck`): the pod's effective requests must fit
//! in what the Node reports as allocatable minus what the pods already admitted on the node
//! request. As with `DRANodeAllocatableResources`, both sides count the node-allocatable
//! resources the pods' DRA devices consume, read from
//! `status.nodeAllocatableResourceClaimStatuses` (upstream `PodRequests` with
//! `UseDRANodeAllocatableResourceClaimStatus`).
//!
//! Only resources the Node object lists are checked: upstream drops extended resources the
//! node does not report (`removeMissingExtendedResources`, which is also what lets extended
//! resources backed by DRA through), and a real kubelet always reports cpu, memory,
//! ephemeral-storage and pods; a simulated Node that reports none of them is not checked.

use allot_api::core::v1::{Node, Pod};
use allot_scheduler::resources::{DraFootprint, Resources, pod_requests_with};

/// A pod's footprint on the node: its effective requests, with the DRA node-allocatable
/// resources of `statuses` when the gate is on.
pub(crate) fn pod_footprint(pod: &Pod, statuses: Option<&[serde_json::Value]>) -> Resources {
    let dra = match statuses {
        Some(list) => DraFootprint::from_statuses(pod, list),
        None => DraFootprint::default(),
    };
    pod_requests_with(pod, &dra, false)
}

/// Why the pod does not fit: the first shortage in upstream's order (pods, cpu, memory,
/// ephemeral storage, then other resources by name), as the kubelet's reason
/// (`OutOf<resource>`) and message.
pub(crate) fn check(
    node: &Node,
    request: &Resources,
    used: &Resources,
    pods_on_node: usize,
) -> Option<(String, String)> {
    let list = if node.status.allocatable.is_empty() {
        &node.status.capacity
    } else {
        &node.status.allocatable
    };
    if list.is_empty() {
        return None;
    }
    let allocatable = Resources::from_list(list);
    let shortage = |name: &str, requested: i64, used: i64, capacity: i64| {
        Some((
            format!("OutOf{name}"),
            format!(
                "Node didn't have enough resource: {name}, requested: {requested}, used: {used}, capacity: {capacity}"
            ),
        ))
    };
    let pods = i64::try_from(pods_on_node).unwrap_or(i64::MAX);
    if list.contains_key("pods") && pods.saturating_add(1) > allocatable.pods {
        return shortage("pods", 1, pods, allocatable.pods);
    }
    let mut names: Vec<&str> = vec!["cpu", "memory", "ephemeral-storage"];
    names.extend(request.scalar.keys().map(String::as_str));
    for name in names {
        let want = request.get(name);
        if want <= 0 || !list.contains_key(name) {
            continue;
        }
        let (have, taken) = (allocatable.get(name), used.get(name));
        if want > have.saturating_sub(taken) {
            return shortage(name, want, taken, have);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::Quantity;

    fn node(cpu: &str, memory: &str, pods: &str) -> Node {
        let mut node = Node::default();
        for (name, value) in [("cpu", cpu), ("memory", memory), ("pods", pods)] {
            node.status
                .allocatable
                .insert(name.into(), Quantity::parse(value).unwrap());
        }
        node
    }

    fn requests(cpu: i64, memory: i64) -> Resources {
        Resources {
            milli_cpu: cpu,
            memory,
            ..Default::default()
        }
    }

    #[test]
    fn shortages_are_reported_as_the_kubelet_words_them() {
        let n = node("4", "1Gi", "2");
        assert_eq!(check(&n, &requests(1000, 1), &requests(3000, 0), 1), None);
        assert_eq!(
            check(&n, &requests(1500, 1), &requests(3000, 0), 1),
            Some((
                "OutOfcpu".into(),
                "Node didn't have enough resource: cpu, requested: 1500, used: 3000, capacity: 4000"
                    .into()
            ))
        );
        // Pods first, as upstream orders them.
        assert_eq!(
            check(&n, &requests(1500, 1), &requests(3000, 0), 2).map(|r| r.0),
            Some("OutOfpods".into())
        );
        assert_eq!(
            check(&n, &requests(0, 2 << 30), &Resources::default(), 0).map(|r| r.0),
            Some("OutOfmemory".into())
        );
    }

    #[test]
    fn unreported_resources_are_not_checked() {
        let mut n = node("4", "1Gi", "2");
        let mut want = requests(0, 0);
        want.scalar.insert("example.com/gpu".into(), 1);
        assert_eq!(check(&n, &want, &Resources::default(), 0), None);
        n.status
            .allocatable
            .insert("example.com/gpu".into(), Quantity::parse("1").unwrap());
        assert_eq!(
            check(&n, &want, &want, 0).map(|r| r.0),
            Some("OutOfexample.com/gpu".into())
        );
        assert_eq!(
            check(
                &Node::default(),
                &requests(100_000, 0),
                &Resources::default(),
                500
            ),
            None
        );
    }

    #[test]
    fn the_footprint_counts_dra_statuses_only_when_given() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![allot_api::core::v1::Container {
            name: "main".into(),
            resources: Some(allot_api::core::v1::ResourceRequirements {
                requests: [("cpu".to_string(), Quantity::parse("1").unwrap())].into(),
                ..Default::default()
            }),
            ..Default::default()
        }];
        let statuses = vec![serde_json::json!({
            "resourceClaimName": "cpus",
            "containers": ["main"],
            "mapping": [{"name": "cpu", "quantity": "4"}],
            "overhead": [{"name": "memory", "perPod": "1Gi"}],
        })];
        assert_eq!(pod_footprint(&pod, None), requests(1000, 0));
        assert_eq!(
            pod_footprint(&pod, Some(&statuses)),
            requests(5000, 1 << 30)
        );
    }
}
