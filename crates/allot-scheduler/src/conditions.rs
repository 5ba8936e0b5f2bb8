//! The pod's `PodScheduled` condition, as the scheduler writes it (and, with a node, the
//! binding: `spec.nodeName`).

use allot_api::core::v1::{Pod, PodCondition};
use allot_store::{ObjectKey, Store, StoreError};

/// Writes `PodScheduled`: bound to `Ok(node)` (setting `spec.nodeName`), or not scheduled with
/// `Err((reason, message))`. A condition whose status does not change keeps its
/// `lastTransitionTime`. `Ok(Some(rv))`: the pod's resourceVersion after the write; `Ok(None)`:
/// the pod is gone.
pub fn write_pod_scheduled(
    store: &mut Store,
    key: &ObjectKey,
    verdict: Result<&str, (&str, &str)>,
    stamp: &str,
) -> Result<Option<Option<u64>>, StoreError> {
    write_pod_scheduled_nominated(store, key, verdict, stamp, None)
}

/// [`write_pod_scheduled`], also setting `status.nominatedNodeName` when `nominated` is given
/// (in the same write).
pub fn write_pod_scheduled_nominated(
    store: &mut Store,
    key: &ObjectKey,
    verdict: Result<&str, (&str, &str)>,
    stamp: &str,
    nominated: Option<&str>,
) -> Result<Option<Option<u64>>, StoreError> {
    let (status, reason, message, node) = match verdict {
        Ok(node) => ("True", None, None, Some(node)),
        Err((reason, message)) => ("False", Some(reason), Some(message), None),
    };
    let result = store.modify::<Pod, _>(&key.namespace, &key.name, |pod| {
        if let Some(node) = node {
            pod.spec.node_name = Some(node.to_string());
        }
        let condition = PodCondition {
            type_: "PodScheduled".into(),
            status: status.into(),
            observed_generation: None,
            last_probe_time: None,
            last_transition_time: Some(stamp.to_string()),
            reason: reason.map(str::to_string),
            message: message.map(str::to_string),
        };
        match pod
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == "PodScheduled")
        {
            Some(existing) => {
                if existing.status == condition.status {
                    let since = existing.last_transition_time.clone();
                    *existing = condition;
                    existing.last_transition_time = since;
                } else {
                    *existing = condition;
                }
            }
            None => pod.status.conditions.push(condition),
        }
        if let Some(node) = nominated {
            pod.status.nominated_node_name = Some(node.to_string());
        }
        if pod.status.phase.is_none() {
            pod.status.phase = Some("Pending".into());
        }
    });
    match result {
        Ok(()) => Ok(Some(
            store
                .get::<Pod>(&key.namespace, &key.name)
                .and_then(|p| p.metadata.resource_version.parse().ok()),
        )),
        Err(StoreError::NotFound { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}
