//! Extended resources backed by DRA (DRAExtendedResource): a container's request for an
//! extended resource such as `example.com/gpu: 2`, or the implicit
//! `deviceclass.resource.kubernetes.io/<class>`, is served on nodes without a device plugin for
//! it (no allocatable of that name) by the DeviceClass naming that resource, through one special
//! ResourceClaim per pod that the scheduler builds, allocates, creates and reserves.
//!
//! As upstream: the claim's requests are `container-<i>-request-<j>` (i: the container's index
//! in init containers then containers, j: the resource's index among the container's sorted
//! request names), ExactCount of the requested number; init containers that do not keep running
//! reuse the devices of containers started after them and share the largest of their own
//! requests; the claim is named `<pod>-extended-resources-<5 chars>`, carries the
//! `resource.kubernetes.io/extended-resource-claim: "true"` annotation and the pod as
//! controlling owner; the pod's `status.extendedResourceClaimStatus` maps each container and
//! resource to its request. Nodes with a device plugin for the resource keep NodeResourcesFit.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Container, Pod};
use allot_api::meta::v1::OwnerReference;
use allot_api::resource::v1::{
    DeviceAllocationMode, DeviceClass, DeviceRequest, EXTENDED_RESOURCE_CLAIM_ANNOTATION,
    ExactDeviceRequest, FINALIZER, RESOURCE_DEVICE_CLASS_PREFIX, ResourceClaim,
};
use allot_store::{Kind, ObjectKey, Store, StoreError};

use crate::resources::Resources;

/// The name of the special claim while it exists only in the scheduler (not a valid name, so
/// it cannot clash with a real claim).
pub const IN_MEMORY_NAME: &str = "<extended-resources>";
/// Longest `generateName` base the API server keeps (63 minus five random characters).
const MAX_GENERATE_NAME_BASE: usize = 58;

/// Upstream `IsExtendedResourceName`: a domain-qualified name outside `kubernetes.io` that is
/// not a quota `requests.` name.
pub fn is_extended_resource_name(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Upstream `IsDRAExtendedResourceName`: an extended resource name or an implicit
/// `deviceclass.resource.kubernetes.io/<class>` name.
pub fn is_dra_extended_name(name: &str) -> bool {
    is_extended_resource_name(name) || name.starts_with(RESOURCE_DEVICE_CLASS_PREFIX)
}

/// The DeviceClass serving an extended resource name: the class named by the implicit
/// `deviceclass.resource.kubernetes.io/<class>`, else the class whose `extendedResourceName`
/// it is (the newest when several claim it, then the lowest name, as upstream's cache picks).
pub fn class_for<'a>(classes: &'a [DeviceClass], resource: &str) -> Option<&'a DeviceClass> {
    if let Some(class) = resource.strip_prefix(RESOURCE_DEVICE_CLASS_PREFIX)
        && let Some(found) = classes.iter().find(|c| c.metadata.name == class)
    {
        return Some(found);
    }
    classes
        .iter()
        .filter(|c| c.spec.extended_resource_name.as_deref() == Some(resource))
        .min_by(|a, b| {
            b.metadata
                .creation_timestamp
                .cmp(&a.metadata.creation_timestamp)
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        })
}

/// One entry of `status.extendedResourceClaimStatus.requestMappings`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestMapping {
    /// The container.
    pub container: String,
    /// The extended resource.
    pub resource: String,
    /// The claim's request serving it.
    pub request: String,
}

/// A pod's extended resources that a DeviceClass can serve.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExtendedPlan {
    /// Resource name → device class name, for resources the pod requests (non-zero).
    pub classes: BTreeMap<String, String>,
}

impl ExtendedPlan {
    /// The plan for a pod with effective requests `request`; `None` when no requested
    /// resource maps to a DeviceClass.
    pub fn for_pod(request: &Resources, classes: &[DeviceClass]) -> Option<ExtendedPlan> {
        let mapped: BTreeMap<String, String> = request
            .scalar
            .iter()
            .filter(|(name, amount)| **amount > 0 && is_dra_extended_name(name))
            .filter_map(|(name, _)| {
                class_for(classes, name).map(|c| (name.clone(), c.metadata.name.clone()))
            })
            .collect();
        (!mapped.is_empty()).then_some(ExtendedPlan { classes: mapped })
    }

    /// Whether the node leaves `resource` to DRA: it has a class and the node has no
    /// allocatable amount of it (no device plugin). NodeResourcesFit skips such resources.
    pub fn delegated(&self, allocatable: &Resources, resource: &str) -> bool {
        self.classes.contains_key(resource) && allocatable.get(resource) == 0
    }

    /// The special claim for a node with `allocatable`, with the request mappings, or `None`
    /// when the node's device plugins serve every resource.
    pub fn claim_for_node(
        &self,
        pod: &Pod,
        allocatable: &Resources,
    ) -> Option<(ResourceClaim, Vec<RequestMapping>)> {
        let needed: BTreeMap<&str, &str> = self
            .classes
            .iter()
            .filter(|(resource, _)| self.delegated(allocatable, resource))
            .map(|(r, c)| (r.as_str(), c.as_str()))
            .collect();
        if needed.is_empty() {
            return None;
        }
        let (requests, mappings) = requests_and_mappings(pod, &needed);
        let mut claim = ResourceClaim::default();
        claim.metadata.name = IN_MEMORY_NAME.into();
        claim.metadata.namespace = pod.metadata.namespace.clone();
        claim.metadata.generate_name = generate_name(&pod.metadata.name);
        claim.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            controller: Some(true),
            block_owner_deletion: None,
        }];
        claim
            .metadata
            .annotations
            .insert(EXTENDED_RESOURCE_CLAIM_ANNOTATION.into(), "true".into());
        claim.spec.devices.requests = requests;
        Some((claim, mappings))
    }
}

/// `<pod>-extended-resources-`, cut as the API server cuts a long `generateName`.
fn generate_name(pod: &str) -> String {
    let mut base = format!("{pod}-extended-resources-");
    if base.len() > MAX_GENERATE_NAME_BASE {
        let mut cut = MAX_GENERATE_NAME_BASE;
        while !base.is_char_boundary(cut) {
            cut -= 1;
        }
        base.truncate(cut);
    }
    base
}

/// A container's requests with limits standing in for missing requests (API defaulting).
fn container_request_list(container: &Container) -> BTreeMap<String, allot_api::Quantity> {
    let mut out = BTreeMap::new();
    if let Some(resources) = &container.resources {
        for (name, q) in &resources.limits {
            out.insert(name.clone(), q.clone());
        }
        for (name, q) in &resources.requests {
            out.insert(name.clone(), q.clone());
        }
    }
    out
}

/// One container's request for one resource (upstream `createResourceRequestAndMappings`):
/// `reusable` are requests of containers started after this one that it may use first.
fn container_request(
    index: usize,
    container: &Container,
    resource: &str,
    class: &str,
    reusable: &[Option<DeviceRequest>],
) -> (Option<DeviceRequest>, Vec<RequestMapping>) {
    let requests = container_request_list(container);
    let Some(quantity) = requests.get(resource) else {
        return (None, Vec::new());
    };
    let (mantissa, scale) = quantity.to_parts();
    // Only whole numbers of devices (upstream `AsInt64`).
    let Some(wanted) = (if scale >= 0 {
        10i128
            .checked_pow(scale as u32)
            .and_then(|f| mantissa.checked_mul(f))
    } else {
        let f = 10i128.checked_pow(scale.unsigned_abs());
        f.filter(|f| mantissa % f == 0).map(|f| mantissa / f)
    })
    .and_then(|v| i64::try_from(v).ok())
    .filter(|v| *v > 0) else {
        return (None, Vec::new());
    };
    let mut mappings = Vec::new();
    let mut sum = 0i64;
    for request in reusable.iter().flatten() {
        sum += request.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
        mappings.push(RequestMapping {
            container: container.name.clone(),
            resource: resource.to_string(),
            request: request.name.clone(),
        });
        if sum >= wanted {
            return (None, mappings);
        }
    }
    // BTreeMap keys are sorted, so the position is the index among sorted names.
    let position = requests.keys().position(|k| k == resource).unwrap_or(0);
    let name = format!("container-{index}-request-{position}");
    let request = DeviceRequest {
        name: name.clone(),
        exactly: Some(ExactDeviceRequest {
            device_class_name: class.to_string(),
            allocation_mode: Some(DeviceAllocationMode::ExactCount),
            count: Some(wanted - sum),
            ..Default::default()
        }),
        ..Default::default()
    };
    mappings.push(RequestMapping {
        container: container.name.clone(),
        resource: resource.to_string(),
        request: name,
    });
    (Some(request), mappings)
}

/// The special claim's requests and the request mappings (upstream
/// `createRequestsAndMappings`), for resources → class names.
fn requests_and_mappings(
    pod: &Pod,
    needed: &BTreeMap<&str, &str>,
) -> (Vec<DeviceRequest>, Vec<RequestMapping>) {
    let inits = pod.spec.init_containers.len();
    let containers: Vec<&Container> = pod
        .spec
        .init_containers
        .iter()
        .chain(&pod.spec.containers)
        .collect();
    let short_lived =
        |i: usize| i < inits && containers[i].restart_policy.as_deref() != Some("Always");
    let mut requests = Vec::new();
    let mut mappings = Vec::new();
    for (resource, class) in needed {
        let mut long_requests: Vec<Option<DeviceRequest>> = vec![None; containers.len()];
        let mut long_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if short_lived(i) {
                continue;
            }
            let (request, m) = container_request(i, container, resource, class, &[]);
            long_requests[i] = request;
            long_mappings.extend(m);
        }
        let mut short_max: Option<DeviceRequest> = None;
        let mut short_names: BTreeSet<String> = BTreeSet::new();
        let mut short_mappings = Vec::new();
        for (i, container) in containers.iter().enumerate() {
            if !short_lived(i) {
                continue;
            }
            let (request, m) =
                container_request(i, container, resource, class, &long_requests[i..]);
            if let Some(request) = request {
                short_names.insert(request.name.clone());
                let count =
                    |r: &DeviceRequest| r.exactly.as_ref().and_then(|e| e.count).unwrap_or(0);
                if short_max
                    .as_ref()
                    .is_none_or(|max| count(max) < count(&request))
                {
                    short_max = Some(request);
                }
            }
            short_mappings.extend(m);
        }
        if let Some(max) = &short_max
            && short_names.len() > 1
        {
            short_names.remove(&max.name);
            for m in &mut short_mappings {
                if short_names.contains(&m.request) {
                    m.request = max.name.clone();
                }
            }
        }
        requests.extend(short_max);
        requests.extend(long_requests.into_iter().flatten());
        mappings.extend(long_mappings);
        mappings.extend(short_mappings);
    }
    requests.sort_by(|a, b| a.name.cmp(&b.name));
    (requests, mappings)
}

/// `status.extendedResourceClaimStatus` as JSON.
pub fn status_json(claim_name: &str, mappings: &[RequestMapping]) -> serde_json::Value {
    serde_json::json!({
        "requestMappings": mappings
            .iter()
            .map(|m| serde_json::json!({
                "containerName": m.container,
                "resourceName": m.resource,
                "requestName": m.request,
            }))
            .collect::<Vec<_>>(),
        "resourceClaimName": claim_name,
    })
}

/// The name of the pod's special claim, from `status.extendedResourceClaimStatus`.
pub fn claim_name(pod: &Pod) -> Option<String> {
    pod.status
        .extended_resource_claim_status
        .as_ref()
        .and_then(|s| s.get("resourceClaimName"))
        .and_then(serde_json::Value::as_str)
        .filter(|n| !n.is_empty())
        .map(str::to_string)
}

/// Undoes the DRA extras of a failed binding (upstream Unreserve): deletes the special claim
/// (finalizer first) and clears the pod's `extendedResourceClaimStatus` and
/// `nodeAllocatableResourceClaimStatuses`.
pub fn release(store: &mut Store, namespace: &str, pod: &str) -> Result<(), StoreError> {
    let Some(current) = store.get::<Pod>(namespace, pod) else {
        return Ok(());
    };
    let had_status = current.status.extended_resource_claim_status.is_some()
        || current
            .status
            .node_allocatable_resource_claim_statuses
            .is_some();
    if let Some(name) = claim_name(current) {
        match store.modify::<ResourceClaim, _>(namespace, &name, |c| {
            c.metadata.finalizers.retain(|f| f != FINALIZER);
        }) {
            Ok(()) => match store.delete(&ObjectKey::new(Kind::ResourceClaim, namespace, &name)) {
                Ok(_) | Err(StoreError::NotFound { .. }) => {}
                Err(e) => return Err(e),
            },
            Err(StoreError::NotFound { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    if !had_status {
        return Ok(());
    }
    match store.modify::<Pod, _>(namespace, pod, |p| {
        p.status.extended_resource_claim_status = None;
        p.status.node_allocatable_resource_claim_statuses = None;
    }) {
        Ok(()) | Err(StoreError::NotFound { .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::ResourceRequirements;

    fn class(name: &str, extended: Option<&str>, created: &str) -> DeviceClass {
        let mut c = DeviceClass::default();
        c.metadata.name = name.into();
        c.metadata.creation_timestamp = Some(created.into());
        c.spec.extended_resource_name = extended.map(str::to_string);
        c
    }

    fn container(name: &str, requests: &[(&str, &str)], sidecar: bool) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: requests
                    .iter()
                    .map(|(n, q)| (n.to_string(), allot_api::Quantity::parse(q).unwrap()))
                    .collect(),
                ..Default::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_string()),
            ..Default::default()
        }
    }

    fn gpu_plan() -> ExtendedPlan {
        ExtendedPlan {
            classes: [("example.com/gpu".to_string(), "gpu".to_string())].into(),
        }
    }

    #[test]
    fn names_and_classes() {
        assert!(is_dra_extended_name("example.com/gpu"));
        assert!(is_dra_extended_name(
            "deviceclass.resource.kubernetes.io/gpu"
        ));
        assert!(!is_dra_extended_name("cpu"));
        assert!(!is_dra_extended_name("hugepages-2Mi"));
        assert!(!is_dra_extended_name("kubernetes.io/foo"));
        let classes = vec![
            class("a", Some("example.com/gpu"), "2026-01-01T00:00:00Z"),
            class("b", Some("example.com/gpu"), "2026-01-02T00:00:00Z"),
            class("c", Some("example.com/gpu"), "2026-01-02T00:00:00Z"),
        ];
        // The newest wins; equal times: the lower name.
        assert_eq!(
            class_for(&classes, "example.com/gpu").map(|c| c.metadata.name.as_str()),
            Some("b")
        );
        assert_eq!(
            class_for(&classes, "deviceclass.resource.kubernetes.io/a")
                .map(|c| c.metadata.name.as_str()),
            Some("a")
        );
        assert!(class_for(&classes, "deviceclass.resource.kubernetes.io/zz").is_none());
        let mut request = Resources::default();
        request.scalar.insert("example.com/gpu".into(), 2);
        request.scalar.insert("example.com/nic".into(), 1);
        let plan = ExtendedPlan::for_pod(&request, &classes).expect("plan");
        assert_eq!(plan.classes.len(), 1);
        let mut allocatable = Resources::default();
        assert!(plan.delegated(&allocatable, "example.com/gpu"));
        allocatable.scalar.insert("example.com/gpu".into(), 4);
        assert!(!plan.delegated(&allocatable, "example.com/gpu"));
    }

    #[test]
    fn claim_requests_and_mappings_follow_upstream() {
        let mut pod = Pod::default();
        pod.metadata.name = "p".into();
        pod.metadata.namespace = "ns".into();
        pod.metadata.uid = "u1".into();
        pod.spec.init_containers = vec![
            container("init-big", &[("example.com/gpu", "3")], false),
            container("side", &[("cpu", "1"), ("example.com/gpu", "1")], true),
            container("init-small", &[("example.com/gpu", "1")], false),
        ];
        pod.spec.containers = vec![
            container(
                "main",
                &[("example.com/gpu", "2"), ("memory", "1Gi")],
                false,
            ),
            container("none", &[("cpu", "1")], false),
        ];
        let (claim, mappings) = gpu_plan()
            .claim_for_node(&pod, &Resources::default())
            .expect("claim");
        assert_eq!(claim.metadata.name, IN_MEMORY_NAME);
        assert_eq!(claim.metadata.generate_name, "p-extended-resources-");
        assert_eq!(
            claim.metadata.annotations[EXTENDED_RESOURCE_CLAIM_ANNOTATION],
            "true"
        );
        assert_eq!(claim.metadata.owner_references[0].uid, "u1");
        assert_eq!(claim.metadata.owner_references[0].controller, Some(true));
        let requests: Vec<(String, i64)> = claim
            .spec
            .devices
            .requests
            .iter()
            .map(|r| (r.name.clone(), r.exactly.as_ref().unwrap().count.unwrap()))
            .collect();
        // init-big (3) is covered by side (1) and main (2), containers started after it;
        // init-small (1) by main.
        assert_eq!(
            requests,
            vec![
                ("container-1-request-1".to_string(), 1),
                ("container-3-request-0".to_string(), 2),
            ]
        );
        let m: Vec<(&str, &str)> = mappings
            .iter()
            .map(|m| (m.container.as_str(), m.request.as_str()))
            .collect();
        assert_eq!(
            m,
            vec![
                ("side", "container-1-request-1"),
                ("main", "container-3-request-0"),
                ("init-big", "container-1-request-1"),
                ("init-big", "container-3-request-0"),
                ("init-small", "container-3-request-0"),
            ]
        );
    }

    #[test]
    fn short_lived_init_containers_share_the_largest_request() {
        let mut pod = Pod::default();
        pod.metadata.name = "a".repeat(50);
        pod.spec.init_containers = vec![
            container("i0", &[("example.com/gpu", "2")], false),
            container("i1", &[("example.com/gpu", "5")], false),
        ];
        pod.spec.containers = vec![container("main", &[("example.com/gpu", "1")], false)];
        let (claim, mappings) = gpu_plan()
            .claim_for_node(&pod, &Resources::default())
            .expect("claim");
        assert_eq!(claim.metadata.generate_name.len(), MAX_GENERATE_NAME_BASE);
        let requests: Vec<(String, i64)> = claim
            .spec
            .devices
            .requests
            .iter()
            .map(|r| (r.name.clone(), r.exactly.as_ref().unwrap().count.unwrap()))
            .collect();
        assert_eq!(
            requests,
            vec![
                ("container-1-request-0".to_string(), 4),
                ("container-2-request-0".to_string(), 1),
            ]
        );
        let m: Vec<(&str, &str)> = mappings
            .iter()
            .map(|m| (m.container.as_str(), m.request.as_str()))
            .collect();
        assert_eq!(
            m,
            vec![
                ("main", "container-2-request-0"),
                ("i0", "container-2-request-0"),
                ("i0", "container-1-request-0"),
                ("i1", "container-2-request-0"),
                ("i1", "container-1-request-0"),
            ]
        );
        // A node with a device plugin for the resource needs no claim.
        let mut allocatable = Resources::default();
        allocatable.scalar.insert("example.com/gpu".into(), 8);
        assert!(gpu_plan().claim_for_node(&pod, &allocatable).is_none());
        let status = status_json("x-extended-resources-abcde", &mappings[..1]);
        assert_eq!(
            status,
            serde_json::json!({
                "requestMappings": [{"containerName": "main", "resourceName": "example.com/gpu", "requestName": "container-2-request-0"}],
                "resourceClaimName": "x-extended-resources-abcde"
            })
        );
    }

    /// The scheduler end to end: claim made, allocated, reserved; binding conditions waited
    /// for; a failed binding deletes the claim and tries elsewhere.
    mod scheduling {
        use crate::{Scheduler, SchedulerConfig};
        use allot_api::load::{LoadOptions, load_str};
        use allot_api::meta::v1::Condition;
        use allot_api::resource::v1::{AllocatedDeviceStatus, ResourceClaim};
        use allot_runtime::{Runtime, SimTime};
        use allot_store::{Store, Stored};

        fn docs(binding: bool) -> String {
            let mut out = String::from(
                "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n  extendedResourceName: example.com/gpu\n",
            );
            for node in ["node-a", "node-b"] {
                out.push_str(&format!(
                    "---\napiVersion: v1\nkind: Node\nmetadata: {{name: {node}}}\nstatus: {{allocatable: {{cpu: '4', memory: 8Gi, pods: '110'}}}}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {node}}}\nspec:\n  driver: gpu.example.com\n  nodeName: {node}\n  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}\n  devices:\n  - name: gpu-0\n"
                ));
                if binding {
                    out.push_str("    bindingConditions: [Attached]\n    bindingFailureConditions: [Failed]\n    bindsToNode: true\n");
                }
            }
            out.push_str("---\napiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: default}\nspec:\n  containers:\n  - name: c\n    resources: {limits: {example.com/gpu: '1'}}\n");
            out
        }

        fn runtime(text: &str) -> Runtime {
            let loaded = load_str("t.yaml", text, &LoadOptions::default());
            assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
            let mut store = Store::new();
            for doc in loaded.documents {
                let mut object = doc.object;
                allot_api::defaults::default_object(&mut object);
                if let Some(stored) = Stored::from_object(object) {
                    store
                        .create_stored(stored, &SimTime::ZERO.rfc3339())
                        .unwrap();
                }
            }
            let scheduler = Scheduler::new(SchedulerConfig::default());
            Runtime::new(store, vec![Box::new(scheduler)], SimTime::ZERO)
        }

        fn settle(rt: &mut Runtime) {
            rt.run_due(100_000).unwrap();
            assert!(rt.errors().is_empty(), "{:?}", rt.errors());
        }

        fn pod(rt: &Runtime) -> allot_api::core::v1::Pod {
            rt.store
                .get::<allot_api::core::v1::Pod>("default", "p")
                .unwrap()
                .clone()
        }

        fn special(rt: &Runtime) -> Option<ResourceClaim> {
            super::claim_name(&pod(rt))
                .and_then(|n| rt.store.get::<ResourceClaim>("default", &n).cloned())
        }

        fn set_condition(rt: &mut Runtime, condition: &str) {
            let name = special(rt).unwrap().metadata.name;
            rt.store
                .modify::<ResourceClaim, _>("default", &name, |c| {
                    let r = c.status.allocation.as_ref().unwrap().devices.results[0].clone();
                    c.status.devices = vec![AllocatedDeviceStatus {
                        driver: r.driver.to_string(),
                        pool: r.pool.to_string(),
                        device: r.device.to_string(),
                        share_id: None,
                        conditions: vec![Condition {
                            type_: condition.into(),
                            status: "True".into(),
                            observed_generation: None,
                            last_transition_time: SimTime::ZERO.rfc3339(),
                            reason: "Test".into(),
                            message: String::new(),
                        }],
                        data: None,
                        network_data: None,
                    }];
                })
                .unwrap();
        }

        fn pool(claim: &ResourceClaim) -> String {
            claim.status.allocation.as_ref().unwrap().devices.results[0]
                .pool
                .to_string()
        }

        #[test]
        fn the_special_claim_is_created_allocated_and_reserved_at_bind() {
            let mut rt = runtime(&docs(false));
            settle(&mut rt);
            let pod = pod(&rt);
            assert_eq!(pod.spec.node_name.as_deref(), Some("node-a"));
            let claim = special(&rt).expect("special claim");
            assert_eq!(pool(&claim), "node-a");
            assert_eq!(claim.status.reserved_for[0].uid, pod.metadata.uid);
            assert!(
                claim
                    .metadata
                    .finalizers
                    .iter()
                    .any(|f| f == super::FINALIZER)
            );
        }

        #[test]
        fn binding_conditions_of_the_special_claim_are_waited_for() {
            let mut rt = runtime(&docs(true));
            settle(&mut rt);
            assert_eq!(pod(&rt).spec.node_name, None, "PreBind waits");
            assert_eq!(pool(&special(&rt).unwrap()), "node-a");
            set_condition(&mut rt, "Attached");
            settle(&mut rt);
            assert_eq!(pod(&rt).spec.node_name.as_deref(), Some("node-a"));
        }

        #[test]
        fn a_failed_binding_deletes_the_special_claim_and_tries_elsewhere() {
            let mut rt = runtime(&docs(true));
            settle(&mut rt);
            let first = special(&rt).unwrap().metadata.name;
            set_condition(&mut rt, "Failed");
            settle(&mut rt);
            assert!(rt.store.get::<ResourceClaim>("default", &first).is_none());
            let second = special(&rt).expect("a new special claim");
            assert_ne!(second.metadata.name, first);
            assert_eq!(pool(&second), "node-b");
            assert_eq!(rt.store.list::<ResourceClaim>().count(), 1);
            set_condition(&mut rt, "Attached");
            settle(&mut rt);
            assert_eq!(pod(&rt).spec.node_name.as_deref(), Some("node-b"));
        }
    }
}
