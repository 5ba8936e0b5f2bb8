//! A pod's ResourceClaims as the kubelet resolves them, whether they are ready for the pod,
//! and what they mean for node-allocatable resources.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{Pod, PodResourceClaim};
use allot_api::resource::v1::{
    Device, DeviceRequestAllocationResult, ResourceClaim, SkipNodeOperation,
};
use allot_api::scheduling::v1beta1::PodGroup;
use allot_quantity::Quantity;
use allot_store::Store;

/// One of the pod's claims, resolved.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct PodClaim {
    /// `pod.spec.resourceClaims[].name`.
    pub pod_claim_name: String,
    /// Whether the claim comes from a template (its metadata path is then under
    /// `resourceclaimtemplates/<podClaimName>`).
    pub from_template: bool,
    /// The ResourceClaim (shared with the store).
    pub claim: Arc<ResourceClaim>,
}

/// Why a pod cannot start yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Waiting {
    /// The claim for a template entry was not generated yet.
    NotGenerated(String),
    /// The claim does not exist.
    Missing(String),
    /// The claim is not allocated.
    NotAllocated(String),
    /// The claim is not reserved for the pod or its PodGroup.
    NotReserved(String),
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Waiting::NotGenerated(c) => {
                write!(f, "the claim for pod claim {c} was not created yet")
            }
            Waiting::Missing(c) => write!(f, "ResourceClaim {c} does not exist"),
            Waiting::NotAllocated(c) => write!(f, "ResourceClaim {c} is not allocated"),
            Waiting::NotReserved(c) => write!(f, "ResourceClaim {c} is not reserved for the pod"),
        }
    }
}

/// The PodGroup whose claim entry matches a pod claim entry (DRAWorkloadResourceClaims).
fn group_of<'a>(store: &'a Store, pod: &Pod, entry: &PodResourceClaim) -> Option<&'a PodGroup> {
    let name = &pod.spec.scheduling_group.as_ref()?.pod_group_name;
    let group = store.get::<PodGroup>(&pod.metadata.namespace, name)?;
    group
        .spec
        .resource_claims
        .iter()
        .any(|g| {
            g.name == entry.name
                && g.resource_claim_name == entry.resource_claim_name
                && g.resource_claim_template_name == entry.resource_claim_template_name
        })
        .then_some(group)
}

/// Resolves every claim of the pod and checks that each is allocated and reserved for the
/// pod or its PodGroup (upstream `resourceclaim.Name` and `IsReservedForPod`). Entries whose
/// status says no claim was needed are skipped.
pub(crate) fn ready_claims(store: &Store, pod: &Pod) -> Result<Vec<PodClaim>, Waiting> {
    let ns = &pod.metadata.namespace;
    let mut out = Vec::new();
    for entry in &pod.spec.resource_claims {
        let group = group_of(store, pod, entry);
        let (name, from_template) = match (
            &entry.resource_claim_name,
            &entry.resource_claim_template_name,
        ) {
            (Some(name), _) => (name.clone(), false),
            (None, Some(_)) => {
                let from_pod = pod
                    .status
                    .resource_claim_statuses
                    .iter()
                    .find(|s| s.name == entry.name)
                    .map(|s| s.resource_claim_name.clone());
                let from_group = || {
                    group.and_then(|g| {
                        g.status
                            .resource_claim_statuses
                            .iter()
                            .find(|s| s.name == entry.name)
                            .map(|s| s.resource_claim_name.clone())
                    })
                };
                match from_pod.or_else(from_group) {
                    Some(Some(name)) => (name, true),
                    Some(None) => continue,
                    None => return Err(Waiting::NotGenerated(entry.name.clone())),
                }
            }
            (None, None) => continue,
        };
        let Some(claim) = store.get_shared::<ResourceClaim>(ns, &name) else {
            return Err(Waiting::Missing(name));
        };
        if claim.status.allocation.is_none() {
            return Err(Waiting::NotAllocated(name));
        }
        let reserved = claim.status.reserved_for.iter().any(|r| {
            (r.resource == "pods" && r.name == pod.metadata.name && r.uid == pod.metadata.uid)
                || group.is_some_and(|g| r.resource == "podgroups" && r.uid == g.metadata.uid)
        });
        if !reserved {
            return Err(Waiting::NotReserved(name));
        }
        out.push(PodClaim {
            pod_claim_name: entry.name.clone(),
            from_template,
            claim: claim.clone(),
        });
    }
    // The claim the scheduler made for extended resources backed by DRA (DRAExtendedResource),
    // named in the pod's status; no container references it by name.
    if let Some(name) = pod
        .status
        .extended_resource_claim_status
        .as_ref()
        .and_then(|s| s.get("resourceClaimName"))
        .and_then(|n| n.as_str())
        .filter(|n| !n.is_empty())
    {
        let Some(claim) = store.get_shared::<ResourceClaim>(ns, name) else {
            return Err(Waiting::Missing(name.to_string()));
        };
        if claim.status.allocation.is_none() {
            return Err(Waiting::NotAllocated(name.to_string()));
        }
        if !claim
            .status
            .reserved_for
            .iter()
            .any(|r| r.resource == "pods" && r.uid == pod.metadata.uid)
        {
            return Err(Waiting::NotReserved(name.to_string()));
        }
        out.push(PodClaim {
            pod_claim_name: name.to_string(),
            from_template: false,
            claim: claim.clone(),
        });
    }
    Ok(out)
}

/// The containers (init containers first) that reference a pod claim, with the request
/// they name, if any.
pub(crate) fn containers_using(pod: &Pod, pod_claim: &str) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
        if let Some(res) = &c.resources {
            for r in res.claims.iter().filter(|r| r.name == pod_claim) {
                out.push((c.name.clone(), r.request.clone()));
            }
        }
    }
    out
}

/// Whether a result skips an operation.
pub(crate) fn skips(result: &DeviceRequestAllocationResult, op: SkipNodeOperation) -> bool {
    result
        .skip_node_operations
        .iter()
        .any(|s| *s == SkipNodeOperation::All || *s == op)
}

/// Drivers of a claim, each with whether every one of its devices skips NodePrepareResources
/// (the kubelet then does not call that driver for the claim).
pub(crate) fn drivers(claim: &ResourceClaim) -> BTreeMap<String, bool> {
    let mut out: BTreeMap<String, bool> = BTreeMap::new();
    if let Some(allocation) = &claim.status.allocation {
        for r in &allocation.devices.results {
            let skip = skips(r, SkipNodeOperation::NodePrepareResources);
            out.entry(r.driver.to_string())
                .and_modify(|all| *all &= skip)
                .or_insert(skip);
        }
    }
    out
}

/// Product of two quantities, exact as long as it fits.
fn multiply(a: &Quantity, b: &Quantity) -> Option<Quantity> {
    let (ma, sa) = a.to_parts();
    let (mb, sb) = b.to_parts();
    let m = i64::try_from(ma.checked_mul(mb)?).ok()?;
    Some(Quantity::from_scaled(m, sa + sb, a.format()))
}

/// `status.nodeAllocatableResourceClaimStatuses` of a pod: for each claim whose devices
/// declare `nodeAllocatableResources`, the referencing containers, the mapped quantities
/// (consumed capacity or device count times the multiplier) and the overheads.
pub(crate) fn node_allocatable_statuses<'d>(
    pod: &Pod,
    claims: &[PodClaim],
    device_of: &dyn Fn(&str, &str, &str) -> Option<&'d Device>,
) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for pc in claims {
        let Some(allocation) = &pc.claim.status.allocation else {
            continue;
        };
        let mut mapping: BTreeMap<String, Quantity> = BTreeMap::new();
        let mut overhead: BTreeMap<String, (Option<Quantity>, Option<Quantity>)> = BTreeMap::new();
        for r in &allocation.devices.results {
            let Some(device) = device_of(&r.driver, &r.pool, &r.device) else {
                continue;
            };
            for (resource, how) in &device.node_allocatable_resources {
                if let Some(m) = &how.mapping {
                    let amount = match (
                        &m.capacity_key,
                        &m.capacity_multiplier,
                        &m.device_multiplier,
                    ) {
                        (Some(key), multiplier, _) => {
                            let base = r
                                .consumed_capacity
                                .get(key)
                                .cloned()
                                .or_else(|| device.capacity.get(key).map(|c| c.value.clone()));
                            match (base, multiplier) {
                                (Some(base), Some(mult)) => multiply(&base, mult),
                                (Some(base), None) => Some(base),
                                _ => None,
                            }
                        }
                        (None, _, Some(mult)) => Some(mult.clone()),
                        (None, _, None) => None,
                    };
                    if let Some(amount) = amount {
                        let slot = mapping.entry(resource.clone()).or_default();
                        *slot += &amount;
                    }
                }
                if let Some(o) = &how.overhead {
                    let slot = overhead.entry(resource.clone()).or_default();
                    let add = |acc: &mut Option<Quantity>, q: &Option<Quantity>| {
                        if let Some(q) = q {
                            let mut sum = acc.clone().unwrap_or_default();
                            sum += q;
                            *acc = Some(sum);
                        }
                    };
                    add(&mut slot.0, &o.per_pod);
                    add(&mut slot.1, &o.per_container);
                }
            }
        }
        if mapping.is_empty() && overhead.is_empty() {
            continue;
        }
        let containers: BTreeSet<String> = containers_using(pod, &pc.pod_claim_name)
            .into_iter()
            .map(|(c, _)| c)
            .collect();
        let mut entry = serde_json::Map::new();
        entry.insert(
            "resourceClaimName".into(),
            pc.claim.metadata.name.clone().into(),
        );
        if !containers.is_empty() {
            entry.insert(
                "containers".into(),
                containers
                    .into_iter()
                    .map(serde_json::Value::from)
                    .collect(),
            );
        }
        if !mapping.is_empty() {
            entry.insert(
                "mapping".into(),
                mapping
                    .into_iter()
                    .map(|(name, q)| serde_json::json!({"name": name, "quantity": q.to_string()}))
                    .collect(),
            );
        }
        if !overhead.is_empty() {
            entry.insert(
                "overhead".into(),
                overhead
                    .into_iter()
                    .map(|(name, (per_pod, per_container))| {
                        let mut o = serde_json::Map::new();
                        o.insert("name".into(), name.into());
                        if let Some(q) = per_pod {
                            o.insert("perPod".into(), q.to_string().into());
                        }
                        if let Some(q) = per_container {
                            o.insert("perContainer".into(), q.to_string().into());
                        }
                        serde_json::Value::Object(o)
                    })
                    .collect(),
            );
        }
        out.push(serde_json::Value::Object(entry));
    }
    out
}
