//! DRA node allocatable resources (DRANodeAllocatableResources) in the scheduler: devices whose
//! ResourceSlice entry declares `nodeAllocatableResources` consume the node's cpu, memory,
//! hugepages or ephemeral storage when allocated. After the allocator picks devices on a node,
//! the pod's demand is its own requests plus those quantities (mapped per claim, overheads per
//! pod or per referencing container), checked against what the node has left, as upstream's
//! DynamicResources Filter does; bound pods carry the quantities in
//! `status.nodeAllocatableResourceClaimStatuses`, which NodeResourcesFit counts for them.

use std::collections::BTreeMap;

use allot_api::Quantity;
use allot_api::core::v1::{Node, Pod};
use allot_api::resource::v1::{
    AllocationResult, Device, DeviceRequestAllocationResult, ResourceSlice,
};

use crate::filters::selector_matches;
use crate::resources::{
    DraFootprint, Resources, aggregate_hugepage_limits, pod_level_supported, pod_requests_with,
};

/// One claim of the pod as `status.nodeAllocatableResourceClaimStatuses` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClaimStatus {
    /// The claim.
    pub claim: String,
    /// Containers referencing the claim (init containers first, as upstream lists them).
    pub containers: Vec<String>,
    /// Mapped quantities by resource.
    pub mapping: BTreeMap<String, Quantity>,
    /// Overheads by resource: (per pod, per container).
    pub overhead: BTreeMap<String, (Option<Quantity>, Option<Quantity>)>,
}

/// One claim of the pod with its allocation: the pod's claim entry name (none for the
/// extended-resource claim), the claim's name, and the allocation.
pub struct AllocatedClaim<'a> {
    /// `pod.spec.resourceClaims[].name`, when the pod lists the claim.
    pub entry: Option<&'a str>,
    /// The claim's name.
    pub name: &'a str,
    /// Its allocation (existing or just chosen).
    pub allocation: &'a AllocationResult,
}

/// A capacity in `consumedCapacity` by a qualified name, with or without the driver's domain
/// (upstream `LookupByQualifiedName`).
fn lookup<'a>(
    map: &'a BTreeMap<String, Quantity>,
    key: &str,
    driver: &str,
) -> Option<&'a Quantity> {
    if let Some(q) = map.get(key) {
        return Some(q);
    }
    match key.split_once('/') {
        Some((domain, name)) if domain == driver => map.get(name),
        Some(_) => None,
        None => map.get(&format!("{driver}/{key}")),
    }
}

/// Exact product of two quantities, when it fits.
fn multiply(a: &Quantity, b: &Quantity) -> Option<Quantity> {
    let (ma, sa) = a.to_parts();
    let (mb, sb) = b.to_parts();
    let m = i64::try_from(ma.checked_mul(mb)?).ok()?;
    Some(Quantity::from_scaled(m, sa + sb, a.format()))
}

/// Whether a slice (and, for per-device node selection, the device) is visible on the node.
fn device_matches_node(slice: &ResourceSlice, device: &Device, node: &Node) -> bool {
    if slice.spec.per_device_node_selection != Some(true) {
        return true;
    }
    device.node_name.as_deref() == Some(node.metadata.name.as_str())
        || device.all_nodes == Some(true)
        || device
            .node_selector
            .as_ref()
            .is_some_and(|s| selector_matches(node, s))
}

/// The device an allocation result names, among the slices the node sees.
pub fn find_device<'a, S: std::borrow::Borrow<ResourceSlice>>(
    slices: &'a [S],
    result: &DeviceRequestAllocationResult,
    node: &Node,
) -> Result<&'a Device, String> {
    for slice in slices {
        let slice: &ResourceSlice = slice.borrow();
        if slice.spec.driver != result.driver || slice.spec.pool.name != result.pool {
            continue;
        }
        if let Some(device) = slice.spec.devices.iter().find(|d| d.name == result.device) {
            if !device_matches_node(slice, device, node) {
                return Err(format!("device {} does not match node", result.device));
            }
            return Ok(device);
        }
    }
    Err(format!(
        "device {} not found in pool {} for driver {}",
        result.device, result.pool, result.driver
    ))
}

/// Whether any device of the allocation declares node allocatable resources with a mapping.
pub fn has_mapped_device<S: std::borrow::Borrow<ResourceSlice>>(
    allocation: &AllocationResult,
    slices: &[S],
    node: &Node,
) -> bool {
    allocation.devices.results.iter().any(|r| {
        find_device(slices, r, node).is_ok_and(|d| {
            d.node_allocatable_resources
                .values()
                .any(|n| n.mapping.is_some())
        })
    })
}

/// The pod's claim statuses (upstream `buildNodeAllocatableDRAInfo`), sorted by claim name;
/// claims whose devices declare nothing are left out. An error is a scheduling error (a device
/// that cannot be found, or a capacity mapping without consumed capacity).
pub fn claim_statuses<S: std::borrow::Borrow<ResourceSlice>>(
    pod: &Pod,
    claims: &[AllocatedClaim<'_>],
    slices: &[S],
    node: &Node,
) -> Result<Vec<ClaimStatus>, String> {
    let declares = |a: &AllocationResult| {
        a.devices.results.iter().any(|r| {
            find_device(slices, r, node).is_ok_and(|d| !d.node_allocatable_resources.is_empty())
        })
    };
    let mut out = Vec::new();
    for claim in claims {
        if claim.allocation.devices.results.is_empty() || !declares(claim.allocation) {
            continue;
        }
        let mut status = ClaimStatus {
            claim: claim.name.to_string(),
            ..Default::default()
        };
        for result in &claim.allocation.devices.results {
            let device = find_device(slices, result, node).map_err(|e| {
                format!(
                    "claim {}/{}, device {}, driver {}: {e}",
                    pod.metadata.namespace, claim.name, result.device, result.driver
                )
            })?;
            for (resource, how) in &device.node_allocatable_resources {
                if let Some(mapping) = &how.mapping {
                    if let Some(key) = mapping.capacity_key.as_deref().filter(|k| !k.is_empty()) {
                        if result.consumed_capacity.is_empty() {
                            return Err(format!(
                                "claim {}/{}, device {}: ConsumedCapacity is nil, but Capacity key '{key}' is set in NodeAllocatableResources for resource {resource}",
                                pod.metadata.namespace, claim.name, result.device
                            ));
                        }
                        if let Some(consumed) =
                            lookup(&result.consumed_capacity, key, &result.driver)
                        {
                            let one = Quantity::from_scaled(1, 0, consumed.format());
                            let amount = match &mapping.capacity_multiplier {
                                Some(m) if m.cmp(&one) != std::cmp::Ordering::Equal => {
                                    multiply(consumed, m).ok_or_else(|| {
                                        format!(
                                            "claim {}: {resource} mapping overflows",
                                            claim.name
                                        )
                                    })?
                                }
                                _ => consumed.clone(),
                            };
                            *status.mapping.entry(resource.clone()).or_default() += &amount;
                        }
                    } else if let Some(m) = &mapping.device_multiplier {
                        *status.mapping.entry(resource.clone()).or_default() += m;
                    }
                }
                if let Some(overhead) = &how.overhead {
                    if overhead.per_pod.is_none() && overhead.per_container.is_none() {
                        continue;
                    }
                    let slot = status.overhead.entry(resource.clone()).or_default();
                    for (acc, add) in [
                        (&mut slot.0, &overhead.per_pod),
                        (&mut slot.1, &overhead.per_container),
                    ] {
                        if let Some(q) = add {
                            *acc.get_or_insert_with(Quantity::default) += q;
                        }
                    }
                }
            }
        }
        if status.mapping.is_empty() && status.overhead.is_empty() {
            continue;
        }
        if let Some(entry) = claim.entry {
            for container in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
                if let Some(resources) = &container.resources {
                    for _ in resources.claims.iter().filter(|c| c.name == entry) {
                        status.containers.push(container.name.clone());
                    }
                }
            }
        }
        out.push(status);
    }
    out.sort_by(|a, b| a.claim.cmp(&b.claim));
    Ok(out)
}

/// `status.nodeAllocatableResourceClaimStatuses` as JSON.
pub fn statuses_json(statuses: &[ClaimStatus]) -> serde_json::Value {
    let list = statuses
        .iter()
        .map(|s| {
            let mut entry = serde_json::Map::new();
            entry.insert("resourceClaimName".into(), s.claim.clone().into());
            if !s.containers.is_empty() {
                entry.insert("containers".into(), s.containers.clone().into());
            }
            if !s.mapping.is_empty() {
                let mapping: Vec<serde_json::Value> = s
                    .mapping
                    .iter()
                    .map(|(name, q)| serde_json::json!({"name": name, "quantity": q.to_string()}))
                    .collect();
                entry.insert("mapping".into(), mapping.into());
            }
            if !s.overhead.is_empty() {
                let overhead: Vec<serde_json::Value> = s
                    .overhead
                    .iter()
                    .map(|(name, (per_pod, per_container))| {
                        let mut o = serde_json::Map::new();
                        o.insert("name".into(), name.clone().into());
                        if let Some(q) = per_pod {
                            o.insert("perPod".into(), q.to_string().into());
                        }
                        if let Some(q) = per_container {
                            o.insert("perContainer".into(), q.to_string().into());
                        }
                        serde_json::Value::Object(o)
                    })
                    .collect();
                entry.insert("overhead".into(), overhead.into());
            }
            serde_json::Value::Object(entry)
        })
        .collect();
    serde_json::Value::Array(list)
}

/// The resources a container's DRA claims add to its limits (upstream
/// `GetContainerDRAAllocations`).
fn container_dra(statuses: &[ClaimStatus], container: &str) -> Resources {
    let mut list = allot_api::core::v1::ResourceList::new();
    for status in statuses
        .iter()
        .filter(|s| s.containers.iter().any(|c| c == container))
    {
        for (name, q) in &status.mapping {
            *list.entry(name.clone()).or_default() += q;
        }
        for (name, (per_pod, per_container)) in &status.overhead {
            for q in [per_pod, per_container].into_iter().flatten() {
                *list.entry(name.clone()).or_default() += q;
            }
        }
    }
    Resources::from_list(&list)
}

/// Pod-level requests and limits must cover what the claims add (upstream
/// `validatePodLevelResourcesCoverDRA`); the first shortfall, as upstream words it.
fn pod_level_shortfall(pod: &Pod, statuses: &[ClaimStatus], dra: &DraFootprint) -> Option<String> {
    let pod_level = pod.spec.resources.as_ref()?;
    if statuses.is_empty() {
        return None;
    }
    if !pod_level.requests.is_empty() {
        let mut without = pod_requests_with(pod, dra, true);
        without.sub(&Resources::from_list(&pod.spec.overhead));
        for (name, quantity) in &pod_level.requests {
            if !pod_level_supported(name) {
                continue;
            }
            let want = Resources::from_list(&[(name.clone(), quantity.clone())].into());
            if without.get(name) > want.get(name) {
                return Some(format!(
                    "pod level request for {name} is insufficient to cover the aggregated container and node-allocatable DRA requests"
                ));
            }
        }
    }
    if !pod_level.limits.is_empty() {
        let hugepages = aggregate_hugepage_limits(pod, dra);
        for (name, aggregated) in &hugepages.scalar {
            let Some(pod_limit) = pod_level.limits.get(name) else {
                continue;
            };
            if *aggregated > pod_limit.value() {
                return Some(format!(
                    "pod level limit for {name} is insufficient to cover the aggregated container and node-allocatable DRA limits"
                ));
            }
        }
        for container in &pod.spec.containers {
            let Some(resources) = &container.resources else {
                continue;
            };
            let dra = container_dra(statuses, &container.name);
            for (name, limit) in &resources.limits {
                if name.starts_with("hugepages-") {
                    continue;
                }
                let Some(pod_limit) = pod_level.limits.get(name) else {
                    continue;
                };
                let mut effective = Resources::from_list(&[(name.clone(), limit.clone())].into());
                effective.add(&dra);
                let cap = Resources::from_list(&[(name.clone(), pod_limit.clone())].into());
                if effective.get(name) > cap.get(name) {
                    return Some(format!(
                        "pod level limit for {name} is insufficient to cover the limit and DRA overhead for container {}",
                        container.name
                    ));
                }
            }
        }
    }
    None
}

/// What the node still has to check for the pod's node-allocatable footprint: the reasons it
/// does not fit (upstream `nodeFitsResources`: cpu, memory, ephemeral storage and hugepages),
/// or a pod-level shortfall.
pub fn fit_reasons(
    pod: &Pod,
    statuses: &[ClaimStatus],
    allocatable: &Resources,
    requested: &Resources,
) -> Vec<String> {
    if statuses.is_empty() {
        return Vec::new();
    }
    let dra = DraFootprint::from_statuses(
        pod,
        statuses_json(statuses)
            .as_array()
            .map_or(&[][..], Vec::as_slice),
    );
    if let Some(reason) = pod_level_shortfall(pod, statuses, &dra) {
        return vec![reason];
    }
    let demand = pod_requests_with(pod, &dra, false);
    let mut reasons = Vec::new();
    let mut check = |name: &str, want: i64| {
        if want > 0 && want > allocatable.get(name) - requested.get(name) {
            reasons.push(format!("Insufficient {name}"));
        }
    };
    check("cpu", demand.milli_cpu);
    check("memory", demand.memory);
    check("ephemeral-storage", demand.ephemeral_storage);
    for (name, want) in &demand.scalar {
        if name.starts_with("hugepages-") {
            check(name, *want);
        }
    }
    reasons
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::load::{LoadOptions, Object, load_str};

    fn objects(text: &str) -> Vec<Object> {
        let loaded = load_str("t.yaml", text, &LoadOptions::default());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        loaded.documents.into_iter().map(|d| d.object).collect()
    }

    const SLICE: &str = r#"
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: cpu.example.com
  nodeName: n
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: socket0
    allowMultipleAllocations: true
    capacity: {cpu.example.com/cpu: "128"}
    nodeAllocatableResources:
      cpu: {mapping: {capacityKey: cpu.example.com/cpu, capacityMultiplier: "1"}}
  - name: xpu
    nodeAllocatableResources:
      memory: {overhead: {perPod: 8Gi, perContainer: 1Gi}}
      cpu: {mapping: {deviceMultiplier: "2"}}
  - name: plain
"#;

    const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  initContainers:
  - name: init
    resources: {requests: {cpu: "1"}, claims: [{name: x}]}
  containers:
  - name: a
    resources: {requests: {cpu: "1", memory: 1Gi}, claims: [{name: x}, {name: c}]}
  - name: b
    resources: {requests: {cpu: "1"}}
"#;

    fn setup() -> (Vec<ResourceSlice>, Pod, Node) {
        let mut slices = Vec::new();
        for o in objects(SLICE) {
            if let Object::ResourceSlice(s) = o {
                slices.push(s);
            }
        }
        let pod = match objects(POD).remove(0) {
            Object::Pod(p) => p,
            _ => unreachable!(),
        };
        let mut node = Node::default();
        node.metadata.name = "n".into();
        (slices, pod, node)
    }

    fn allocation(results: &[(&str, Option<&str>)]) -> AllocationResult {
        let mut a = AllocationResult::default();
        for (device, cpu) in results {
            let mut r = DeviceRequestAllocationResult {
                request: "r".into(),
                driver: "cpu.example.com".into(),
                pool: "p".into(),
                device: (*device).into(),
                ..Default::default()
            };
            if let Some(cpu) = cpu {
                r.consumed_capacity
                    .insert("cpu.example.com/cpu".into(), Quantity::parse(cpu).unwrap());
            }
            a.devices.results.push(r);
        }
        a
    }

    #[test]
    fn statuses_map_capacity_devices_and_overheads() {
        let (slices, pod, node) = setup();
        let cpus = allocation(&[("socket0", Some("4"))]);
        let xpu = allocation(&[("xpu", None), ("plain", None)]);
        let plain = allocation(&[("plain", None)]);
        let claims = [
            AllocatedClaim {
                entry: Some("x"),
                name: "xpu-claim",
                allocation: &xpu,
            },
            AllocatedClaim {
                entry: Some("c"),
                name: "cpu-claim",
                allocation: &cpus,
            },
            AllocatedClaim {
                entry: None,
                name: "plain-claim",
                allocation: &plain,
            },
        ];
        let statuses = claim_statuses(&pod, &claims, &slices, &node).expect("statuses");
        assert_eq!(
            statuses_json(&statuses),
            serde_json::json!([
                {"resourceClaimName": "cpu-claim", "containers": ["a"],
                 "mapping": [{"name": "cpu", "quantity": "4"}]},
                {"resourceClaimName": "xpu-claim", "containers": ["init", "a"],
                 "mapping": [{"name": "cpu", "quantity": "2"}],
                 "overhead": [{"name": "memory", "perPod": "8Gi", "perContainer": "1Gi"}]},
            ])
        );
        // cpu: containers 2 + mapped 6 (the init phase, 1 + 1Gi overhead, is smaller);
        // memory: 1Gi + 1Gi (a's per-container overhead) + 8Gi per pod.
        let dra = DraFootprint::from_statuses(&pod, statuses_json(&statuses).as_array().unwrap());
        let demand = pod_requests_with(&pod, &dra, false);
        assert_eq!(demand.milli_cpu, 8000);
        assert_eq!(demand.memory, 10 << 30);
        let mut allocatable = Resources {
            milli_cpu: 8000,
            memory: 16 << 30,
            ..Default::default()
        };
        let requested = Resources {
            milli_cpu: 500,
            ..Default::default()
        };
        assert_eq!(
            fit_reasons(&pod, &statuses, &allocatable, &requested),
            vec!["Insufficient cpu"]
        );
        allocatable.milli_cpu = 9000;
        assert!(fit_reasons(&pod, &statuses, &allocatable, &requested).is_empty());
        assert!(has_mapped_device(&cpus, &slices, &node));
        assert!(!has_mapped_device(&plain, &slices, &node));
    }

    #[test]
    fn capacity_mapping_needs_consumed_capacity_and_devices_must_exist() {
        let (slices, pod, node) = setup();
        let cpus = allocation(&[("socket0", None)]);
        let claims = [AllocatedClaim {
            entry: Some("c"),
            name: "k",
            allocation: &cpus,
        }];
        let err = claim_statuses(&pod, &claims, &slices, &node).unwrap_err();
        assert!(err.contains("ConsumedCapacity is nil"), "{err}");
        let missing = allocation(&[("socket0", Some("1")), ("gone", None)]);
        let claims = [AllocatedClaim {
            entry: Some("c"),
            name: "k",
            allocation: &missing,
        }];
        let err = claim_statuses(&pod, &claims, &slices, &node).unwrap_err();
        assert!(err.contains("device gone not found in pool p"), "{err}");
    }

    #[test]
    fn pod_level_resources_must_cover_the_claims() {
        let (slices, mut pod, node) = setup();
        let cpus = allocation(&[("socket0", Some("4"))]);
        let claims = [AllocatedClaim {
            entry: Some("c"),
            name: "k",
            allocation: &cpus,
        }];
        let statuses = claim_statuses(&pod, &claims, &slices, &node).unwrap();
        pod.spec.resources = Some(allot_api::core::v1::ResourceRequirements {
            requests: [("cpu".to_string(), Quantity::parse("5").unwrap())].into(),
            ..Default::default()
        });
        let big = Resources {
            milli_cpu: 100_000,
            memory: 100 << 30,
            ..Default::default()
        };
        assert_eq!(
            fit_reasons(&pod, &statuses, &big, &Resources::default()),
            vec![
                "pod level request for cpu is insufficient to cover the aggregated container and node-allocatable DRA requests"
            ]
        );
        pod.spec.resources.as_mut().unwrap().requests =
            [("cpu".to_string(), Quantity::parse("6").unwrap())].into();
        assert!(fit_reasons(&pod, &statuses, &big, &Resources::default()).is_empty());
        pod.spec.resources.as_mut().unwrap().limits =
            [("cpu".to_string(), Quantity::parse("4").unwrap())].into();
        pod.spec.containers[0].resources.as_mut().unwrap().limits =
            [("cpu".to_string(), Quantity::parse("1").unwrap())].into();
        assert_eq!(
            fit_reasons(&pod, &statuses, &big, &Resources::default()),
            vec![
                "pod level limit for cpu is insufficient to cover the limit and DRA overhead for container a"
            ]
        );
    }

    #[test]
    fn pod_level_hugepage_limits_must_cover_the_claims_hugepages() {
        let (mut slices, mut pod, node) = setup();
        let device = &mut slices[0].spec.devices[1];
        device.node_allocatable_resources.remove("cpu");
        let mut hugepages = device.node_allocatable_resources["memory"].clone();
        hugepages.overhead = Some(allot_api::resource::v1::NodeAllocatableOverhead {
            per_pod: Some(Quantity::parse("2Mi").unwrap()),
            per_container: None,
        });
        device
            .node_allocatable_resources
            .insert("hugepages-2Mi".into(), hugepages);
        device.node_allocatable_resources.remove("memory");
        let xpu = allocation(&[("xpu", None)]);
        let claims = [AllocatedClaim {
            entry: Some("x"),
            name: "x",
            allocation: &xpu,
        }];
        let statuses = claim_statuses(&pod, &claims, &slices, &node).unwrap();
        pod.spec.containers[0].resources.as_mut().unwrap().limits =
            [("hugepages-2Mi".to_string(), Quantity::parse("4Mi").unwrap())].into();
        pod.spec.resources = Some(allot_api::core::v1::ResourceRequirements {
            limits: [("hugepages-2Mi".to_string(), Quantity::parse("4Mi").unwrap())].into(),
            ..Default::default()
        });
        let big = Resources {
            milli_cpu: 100_000,
            memory: 100 << 30,
            scalar: [("hugepages-2Mi".to_string(), 1 << 30)].into(),
            ..Default::default()
        };
        assert_eq!(
            fit_reasons(&pod, &statuses, &big, &Resources::default()),
            vec![
                "pod level limit for hugepages-2Mi is insufficient to cover the aggregated container and node-allocatable DRA limits"
            ]
        );
        pod.spec.resources.as_mut().unwrap().limits =
            [("hugepages-2Mi".to_string(), Quantity::parse("6Mi").unwrap())].into();
        assert!(fit_reasons(&pod, &statuses, &big, &Resources::default()).is_empty());
    }
}
