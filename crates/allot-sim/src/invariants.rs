//! Checks that must hold in any final state, whatever the input: no device over-allocated, every
//! placed pod's claims allocated and reserved for it, no CPU exclusive to two pods of a node.

use std::collections::BTreeMap;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::{ResourceClaim, ResourceSlice};
use allot_quantity::Quantity;
use allot_store::Store;
use allot_topology::CpuSet;

use crate::output::{pod_claims, pod_cpus_and_numa};

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Violation {
    /// A device that does not allow multiple allocations is allocated to more than one claim.
    #[error("device {device} is allocated to {claims:?} but allows one allocation")]
    DeviceShared {
        /// `driver/pool/device`.
        device: String,
        /// The claims (`namespace/name`), sorted.
        claims: Vec<String>,
    },
    /// The shares of a device consume more of a capacity than it has.
    #[error(
        "device {device}: claims {claims:?} consume {consumed} of {capacity}, which has {available}"
    )]
    CapacityExceeded {
        /// `driver/pool/device`.
        device: String,
        /// The capacity's name.
        capacity: String,
        /// What the shares consume in total.
        consumed: String,
        /// What the device has.
        available: String,
        /// The claims (`namespace/name`), sorted.
        claims: Vec<String>,
    },
    /// A placed pod uses a claim that does not exist, is not allocated, or is not reserved for
    /// the pod (or its PodGroup).
    #[error("pod {pod} on node {node}: claim {claim}: {problem}")]
    PodClaimNotReady {
        /// `namespace/name`.
        pod: String,
        /// The node.
        node: String,
        /// The pod's claim entry name, with the ResourceClaim name when known.
        claim: String,
        /// What is wrong.
        problem: String,
    },
    /// Two pods of one node hold the same exclusive CPUs.
    #[error("node {node}: CPUs {cpus} are exclusive to both {first} and {second}")]
    CpuShared {
        /// The node.
        node: String,
        /// The CPUs held twice.
        cpus: String,
        /// One pod (`namespace/name`).
        first: String,
        /// The other pod.
        second: String,
    },
}

fn terminal(pod: &Pod) -> bool {
    matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"))
}

/// A pod the control plane has placed: bound by the scheduler (`PodScheduled=True`) or admitted
/// by its node (`Running`), and not finished.
fn placed(pod: &Pod) -> Option<&str> {
    let node = pod.spec.node_name.as_deref().filter(|n| !n.is_empty())?;
    if terminal(pod) {
        return None;
    }
    let scheduled = pod
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == "PodScheduled" && c.status == "True");
    let running = pod.status.phase.as_deref() == Some("Running");
    (scheduled || running).then_some(node)
}

/// Checks every invariant over a store; an empty list means all hold.
pub fn check_invariants(store: &Store) -> Vec<Violation> {
    let mut violations = Vec::new();
    check_devices(store, &mut violations);
    check_pod_claims(store, &mut violations);
    check_cpus(store, &mut violations);
    violations
}

/// Checks every invariant over the objects of a printed `v1 List` (JSON or YAML), as
/// `allot simulate -o json` writes it. Errors when the text does not load.
pub fn check_list(text: &str) -> Result<Vec<Violation>, String> {
    let loaded = allot_api::load::load_str("list", text, &crate::input::load_options());
    if let Some(err) = loaded.errors.first() {
        return Err(err.to_string());
    }
    let mut store = Store::new();
    for document in loaded.documents {
        if let Some(stored) = allot_store::Stored::from_object(document.object) {
            let now = stored.meta().creation_timestamp.clone().unwrap_or_default();
            store
                .create_stored(stored, &now)
                .map_err(|err| err.to_string())?;
        }
    }
    Ok(check_invariants(&store))
}

/// A device: driver, pool, name.
type DeviceKey = (String, String, String);

#[derive(Default)]
struct Usage {
    claims: Vec<String>,
    consumed: BTreeMap<String, Quantity>,
}

fn check_devices(store: &Store, violations: &mut Vec<Violation>) {
    // (driver, pool, device) -> (allows multiple allocations, capacities).
    let mut devices: BTreeMap<DeviceKey, (bool, BTreeMap<String, Quantity>)> = BTreeMap::new();
    for slice in store.list::<ResourceSlice>() {
        for device in &slice.spec.devices {
            let capacity = device
                .capacity
                .iter()
                .map(|(name, c)| (name.to_string(), c.value.clone()))
                .collect();
            devices
                .entry((
                    slice.spec.driver.clone(),
                    slice.spec.pool.name.clone(),
                    device.name.clone(),
                ))
                .or_insert((device.allow_multiple_allocations == Some(true), capacity));
        }
    }
    let mut usage: BTreeMap<DeviceKey, Usage> = BTreeMap::new();
    for claim in store.list::<ResourceClaim>() {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        let name = format!("{}/{}", claim.metadata.namespace, claim.metadata.name);
        for result in &allocation.devices.results {
            if result.admin_access == Some(true) {
                continue;
            }
            let entry = usage
                .entry((
                    result.driver.to_string(),
                    result.pool.to_string(),
                    result.device.to_string(),
                ))
                .or_default();
            entry.claims.push(name.clone());
            for (capacity, quantity) in &result.consumed_capacity {
                let total = entry.consumed.entry(capacity.to_string()).or_default();
                *total += quantity;
            }
        }
    }
    for (key, mut used) in usage {
        let Some((multiple, capacity)) = devices.get(&key) else {
            continue;
        };
        used.claims.sort();
        let device = format!("{}/{}/{}", key.0, key.1, key.2);
        if !multiple {
            if used.claims.len() > 1 {
                violations.push(Violation::DeviceShared {
                    device,
                    claims: used.claims,
                });
            }
            continue;
        }
        for (name, consumed) in &used.consumed {
            if let Some(available) = capacity.get(name)
                && consumed > available
            {
                violations.push(Violation::CapacityExceeded {
                    device: device.clone(),
                    capacity: name.clone(),
                    consumed: consumed.to_string(),
                    available: available.to_string(),
                    claims: used.claims.clone(),
                });
            }
        }
    }
}

fn check_pod_claims(store: &Store, violations: &mut Vec<Violation>) {
    for pod in store.list::<Pod>() {
        let Some(node) = placed(pod) else { continue };
        let pod_name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let group = pod
            .spec
            .scheduling_group
            .as_ref()
            .map(|g| g.pod_group_name.clone())
            .or_else(|| pod.spec.workload_ref.as_ref().map(|w| w.pod_group.clone()));
        for (pod_claim, claim_name) in pod_claims(pod) {
            let mut problem = |claim: String, text: &str| {
                violations.push(Violation::PodClaimNotReady {
                    pod: pod_name.clone(),
                    node: node.to_string(),
                    claim,
                    problem: text.to_string(),
                })
            };
            if claim_name.is_empty() {
                problem(pod_claim, "the claim was never created");
                continue;
            }
            let label = format!("{pod_claim} ({claim_name})");
            let Some(claim) = store.get::<ResourceClaim>(&pod.metadata.namespace, &claim_name)
            else {
                problem(label, "the ResourceClaim does not exist");
                continue;
            };
            if claim.status.allocation.is_none() {
                problem(label, "the ResourceClaim is not allocated");
                continue;
            }
            let reserved = claim.status.reserved_for.iter().any(|r| {
                (r.resource == "pods"
                    && r.name == pod.metadata.name
                    && (r.uid.is_empty() || r.uid == pod.metadata.uid))
                    || (r.resource == "podgroups" && group.as_deref() == Some(r.name.as_str()))
            });
            if !reserved {
                problem(label, "the ResourceClaim is not reserved for the pod");
            }
        }
    }
}

fn check_cpus(store: &Store, violations: &mut Vec<Violation>) {
    let mut by_node: BTreeMap<String, Vec<(String, CpuSet)>> = BTreeMap::new();
    for pod in store.list::<Pod>() {
        let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        if terminal(pod) {
            continue;
        }
        let (cpus, _) = pod_cpus_and_numa(pod);
        if cpus.is_empty() {
            continue;
        }
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        by_node
            .entry(node.to_string())
            .or_default()
            .push((name, cpus));
    }
    for (node, pods) in by_node {
        for (i, (first, a)) in pods.iter().enumerate() {
            for (second, b) in &pods[i + 1..] {
                if a.intersects(b) {
                    violations.push(Violation::CpuShared {
                        node: node.clone(),
                        cpus: a.intersection(b).to_string(),
                        first: first.clone(),
                        second: second.clone(),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
