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

/// The condition the scheduler keeps on a gang's PodGroup (`status.conditions`).
pub const POD_GROUP_SCHEDULED: &str = "PodGroupScheduled";

/// Writes a PodGroup's `PodGroupScheduled` condition: `Ok(())` is True with reason
/// `Scheduled` (the gang's first minCount pods passed Permit together), `Err((reason,
/// message))` False. The condition tells the scheduler's initial decision: once True it is not
/// set back to False. Nothing is written when nothing changes (or the group is gone).
pub fn write_pod_group_scheduled(
    store: &mut Store,
    namespace: &str,
    name: &str,
    verdict: Result<(), (&str, &str)>,
    stamp: &str,
) -> Result<(), StoreError> {
    use allot_api::meta::v1::Condition;
    use allot_api::scheduling::v1beta1::PodGroup;
    let Some(group) = store.get::<PodGroup>(namespace, name) else {
        return Ok(());
    };
    let (status, reason, message) = match verdict {
        Ok(()) => ("True", "Scheduled", ""),
        Err((reason, message)) => ("False", reason, message),
    };
    let existing = group
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == POD_GROUP_SCHEDULED);
    if let Some(c) = existing
        && (c.status == "True"
            || (c.status == status && c.reason == reason && c.message == message))
    {
        return Ok(());
    }
    let generation = group.metadata.generation;
    store.modify::<PodGroup, _>(namespace, name, |group| {
        let condition = Condition {
            type_: POD_GROUP_SCHEDULED.into(),
            status: status.into(),
            observed_generation: generation,
            last_transition_time: stamp.to_string(),
            reason: reason.into(),
            message: message.into(),
        };
        match group
            .status
            .conditions
            .iter_mut()
            .find(|c| c.type_ == POD_GROUP_SCHEDULED)
        {
            Some(c) if c.status == condition.status => {
                let since = std::mem::take(&mut c.last_transition_time);
                *c = condition;
                c.last_transition_time = since;
            }
            Some(c) => *c = condition,
            None => group.status.conditions.push(condition),
        }
    })
}
