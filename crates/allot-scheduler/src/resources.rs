//! Resource arithmetic of NodeResourcesFit: a pod's effective requests as upstream's
//! `resource.PodRequests` computes them (including, as with DRANodeAllocatableResources, the
//! node-allocatable resources its claims' devices consume, from
//! `status.nodeAllocatableResourceClaimStatuses`), and node allocatable.

use std::collections::BTreeMap;

use allot_api::core::v1::{Container, Node, Pod, ResourceList};

/// CPU assumed for a container without a CPU request when scoring (upstream
/// `DefaultMilliCPURequest`).
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
/// Memory assumed for a container without a memory request when scoring (upstream
/// `DefaultMemoryRequest`, 200 MiB).
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// Amounts of the resources NodeResourcesFit checks. CPU in millicores, everything else in
/// units (bytes for memory and ephemeral storage).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources {
    /// CPU in millicores.
    pub milli_cpu: i64,
    /// Memory in bytes.
    pub memory: i64,
    /// Ephemeral storage in bytes.
    pub ephemeral_storage: i64,
    /// Pods (only meaningful for node allocatable).
    pub pods: i64,
    /// Extended and hugepages resources, by name.
    pub scalar: BTreeMap<String, i64>,
}

impl Resources {
    /// Reads a resource list.
    pub fn from_list(list: &ResourceList) -> Self {
        let mut out = Resources::default();
        for (name, quantity) in list {
            out.set(name, quantity_value(name, quantity));
        }
        out
    }

    /// The amount of one resource.
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            other => self.scalar.get(other).copied().unwrap_or(0),
        }
    }

    /// Sets one resource.
    pub fn set(&mut self, name: &str, value: i64) {
        match name {
            "cpu" => self.milli_cpu = value,
            "memory" => self.memory = value,
            "ephemeral-storage" => self.ephemeral_storage = value,
            "pods" => self.pods = value,
            other => {
                self.scalar.insert(other.to_string(), value);
            }
        }
    }

    /// Adds `other` into this.
    pub fn add(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_add(other.milli_cpu);
        self.memory = self.memory.saturating_add(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_add(other.ephemeral_storage);
        self.pods = self.pods.saturating_add(other.pods);
        for (name, value) in &other.scalar {
            let slot = self.scalar.entry(name.clone()).or_insert(0);
            *slot = slot.saturating_add(*value);
        }
    }

    /// Subtracts `other` from this.
    pub fn sub(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.saturating_sub(other.milli_cpu);
        self.memory = self.memory.saturating_sub(other.memory);
        self.ephemeral_storage = self
            .ephemeral_storage
            .saturating_sub(other.ephemeral_storage);
        self.pods = self.pods.saturating_sub(other.pods);
        for (name, value) in &other.scalar {
            let slot = self.scalar.entry(name.clone()).or_insert(0);
            *slot = slot.saturating_sub(*value);
        }
        self.scalar.retain(|_, v| *v != 0);
    }

    /// Raises each resource to at least `other`'s amount.
    pub fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        self.pods = self.pods.max(other.pods);
        for (name, value) in &other.scalar {
            let slot = self.scalar.entry(name.clone()).or_insert(0);
            *slot = (*slot).max(*value);
        }
    }
}

fn quantity_value(name: &str, quantity: &allot_api::Quantity) -> i64 {
    if name == "cpu" {
        quantity.milli_value()
    } else {
        quantity.value()
    }
}

/// A container's requests, with limits standing in for missing requests as API defaulting does.
fn container_requests(container: &Container) -> Resources {
    let Some(resources) = &container.resources else {
        return Resources::default();
    };
    let mut out = Resources::from_list(&resources.requests);
    for (name, quantity) in &resources.limits {
        if !resources.requests.contains_key(name) {
            out.set(name, quantity_value(name, quantity));
        }
    }
    out
}

/// Whether a resource may be set at pod level (upstream `IsSupportedPodLevelResource`).
pub fn pod_level_supported(name: &str) -> bool {
    name == "cpu" || name == "memory" || name.starts_with("hugepages-")
}

/// The node-allocatable resources a pod's claims consume (upstream
/// `draNodeAllocatableResources`): mapped quantities and per-pod overheads for the pod's whole
/// life, per-container overheads with the containers that reference the claim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DraFootprint {
    /// Charged for the pod's whole life.
    pub pod_fixed: Resources,
    /// Charged while each container runs, by container name.
    pub per_container: BTreeMap<String, Resources>,
}

impl DraFootprint {
    /// Reads `status.nodeAllocatableResourceClaimStatuses` (empty when absent or unreadable).
    pub fn from_status(pod: &Pod) -> Self {
        match pod
            .status
            .node_allocatable_resource_claim_statuses
            .as_ref()
            .and_then(serde_json::Value::as_array)
        {
            Some(statuses) => Self::from_statuses(pod, statuses),
            None => DraFootprint::default(),
        }
    }

    /// Reads statuses in the JSON shape of `status.nodeAllocatableResourceClaimStatuses`.
    pub fn from_statuses(pod: &Pod, statuses: &[serde_json::Value]) -> Self {
        let mut out = DraFootprint::default();
        let quantity = |v: Option<&serde_json::Value>| {
            v.and_then(serde_json::Value::as_str)
                .and_then(|t| allot_api::Quantity::parse(t).ok())
        };
        let name_of = |v: &serde_json::Value| {
            v.get("name")
                .and_then(serde_json::Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let list = |status: &serde_json::Value, field: &str| {
            status
                .get(field)
                .and_then(serde_json::Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        for status in statuses {
            let mut fixed = ResourceList::new();
            for mapping in list(status, "mapping") {
                if let Some(q) = quantity(mapping.get("quantity")) {
                    *fixed.entry(name_of(&mapping)).or_default() += &q;
                }
            }
            let overheads = list(status, "overhead");
            let mut per_container = ResourceList::new();
            for overhead in &overheads {
                if let Some(q) = quantity(overhead.get("perPod")) {
                    *fixed.entry(name_of(overhead)).or_default() += &q;
                }
                if let Some(q) = quantity(overhead.get("perContainer")) {
                    *per_container.entry(name_of(overhead)).or_default() += &q;
                }
            }
            out.pod_fixed.add(&Resources::from_list(&fixed));
            if per_container.is_empty() {
                continue;
            }
            let per_container = Resources::from_list(&per_container);
            let referencing: Vec<String> = list(status, "containers")
                .iter()
                .filter_map(serde_json::Value::as_str)
                .map(str::to_string)
                .collect();
            let mut known = 0usize;
            for container in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
                if referencing.contains(&container.name) {
                    known += 1;
                    out.per_container
                        .entry(container.name.clone())
                        .or_default()
                        .add(&per_container);
                }
            }
            // References to containers the pod does not have are charged for its whole life.
            for _ in known..referencing.len() {
                out.pod_fixed.add(&per_container);
            }
        }
        out
    }

    /// Whether nothing is charged.
    pub fn is_empty(&self) -> bool {
        self.pod_fixed == Resources::default() && self.per_container.is_empty()
    }
}

/// A pod's effective requests as the scheduler sees them (upstream `PodRequests`): the larger
/// of the regular containers plus sidecars and the largest init phase (an init container plus
/// the sidecars started before it), plus the node-allocatable resources its claims consume
/// (from its status), replaced by pod-level requests where set, plus overhead.
pub fn pod_requests(pod: &Pod) -> Resources {
    pod_requests_with(pod, &DraFootprint::from_status(pod), false)
}

/// [`pod_requests`] with a given DRA footprint; `skip_pod_level` leaves pod-level requests out.
pub fn pod_requests_with(pod: &Pod, dra: &DraFootprint, skip_pod_level: bool) -> Resources {
    let mut requests = aggregate_container_requests(pod, dra);
    if !skip_pod_level && let Some(pod_level) = &pod.spec.resources {
        for (name, quantity) in &pod_level.requests {
            if pod_level_supported(name) {
                requests.set(name, quantity_value(name, quantity));
            }
        }
    }
    requests.add(&Resources::from_list(&pod.spec.overhead));
    requests
}

/// Upstream `AggregateContainerRequests`: containers, sidecars and init phases with their DRA
/// per-container charges, plus the pod-fixed DRA charge.
fn aggregate_container_requests(pod: &Pod, dra: &DraFootprint) -> Resources {
    aggregate(pod, dra, &container_requests)
}

/// Upstream `AggregateContainerLimits` for hugepages, the one kind of resource whose DRA
/// charges always count as limits: the containers' hugepage limits aggregated like requests,
/// plus the claims' hugepages.
pub fn aggregate_hugepage_limits(pod: &Pod, dra: &DraFootprint) -> Resources {
    let hugepages = |r: &Resources| {
        let mut out = Resources::default();
        for (name, value) in r.scalar.iter().filter(|(n, _)| n.starts_with("hugepages-")) {
            out.scalar.insert(name.clone(), *value);
        }
        out
    };
    let dra = DraFootprint {
        pod_fixed: hugepages(&dra.pod_fixed),
        per_container: dra
            .per_container
            .iter()
            .map(|(c, r)| (c.clone(), hugepages(r)))
            .collect(),
    };
    let limits = |container: &Container| {
        container
            .resources
            .as_ref()
            .map(|r| hugepages(&Resources::from_list(&r.limits)))
            .unwrap_or_default()
    };
    aggregate(pod, &dra, &limits)
}

/// Sums what `read` gives per container as the sidecar KEP says (regular containers and
/// sidecars together, the largest init phase), with DRA charges.
fn aggregate(pod: &Pod, dra: &DraFootprint, read: &dyn Fn(&Container) -> Resources) -> Resources {
    let with_dra = |container: &Container| {
        let mut r = read(container);
        if let Some(extra) = dra.per_container.get(&container.name) {
            r.add(extra);
        }
        r
    };
    let mut requests = Resources::default();
    for container in &pod.spec.containers {
        requests.add(&with_dra(container));
    }
    let mut sidecars = Resources::default();
    let mut init_max = Resources::default();
    for container in &pod.spec.init_containers {
        let mut phase = with_dra(container);
        if container.restart_policy.as_deref() == Some("Always") {
            requests.add(&phase);
            sidecars.add(&phase);
            phase = sidecars.clone();
        } else {
            phase.add(&sidecars);
        }
        init_max.max_with(&phase);
    }
    requests.max_with(&init_max);
    requests.add(&dra.pod_fixed);
    requests
}

/// CPU and memory for scoring, with upstream's defaults for containers that request none.
pub fn pod_non_zero_requests(pod: &Pod) -> (i64, i64) {
    pod_non_zero_requests_with(pod, &pod_requests(pod))
}

/// [`pod_non_zero_requests`] given the pod's [`pod_requests`] (`total`). As upstream's
/// `NonMissingContainerRequests`, the defaults replace a request the container does not state
/// (in requests or limits), not one explicitly set to zero.
pub fn pod_non_zero_requests_with(pod: &Pod, total: &Resources) -> (i64, i64) {
    let mut cpu = 0i64;
    let mut memory = 0i64;
    for container in &pod.spec.containers {
        let r = container_requests(container);
        cpu += if states_request(container, "cpu") {
            r.milli_cpu
        } else {
            DEFAULT_MILLI_CPU_REQUEST
        };
        memory += if states_request(container, "memory") {
            r.memory
        } else {
            DEFAULT_MEMORY_REQUEST
        };
    }
    (cpu.max(total.milli_cpu), memory.max(total.memory))
}

/// Whether the container states a request for `name` (a limit alone is its request).
fn states_request(container: &Container, name: &str) -> bool {
    container
        .resources
        .as_ref()
        .is_some_and(|r| r.requests.contains_key(name) || r.limits.contains_key(name))
}

/// A node's allocatable resources (capacity where allocatable is not reported).
pub fn node_allocatable(node: &Node) -> Resources {
    if node.status.allocatable.is_empty() {
        Resources::from_list(&node.status.capacity)
    } else {
        Resources::from_list(&node.status.allocatable)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::ResourceRequirements;

    fn container(name: &str, cpu: &str, memory: &str, sidecar: bool) -> Container {
        let mut requests = ResourceList::new();
        requests.insert("cpu".into(), allot_api::Quantity::parse(cpu).unwrap());
        requests.insert("memory".into(), allot_api::Quantity::parse(memory).unwrap());
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests,
                ..Default::default()
            }),
            restart_policy: sidecar.then(|| "Always".to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn init_containers_and_sidecars_follow_upstream() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container("a", "1", "1Gi", false)];
        pod.spec.init_containers = vec![
            container("side", "500m", "100Mi", true),
            container("init", "3", "10Mi", false),
        ];
        let r = pod_requests(&pod);
        // The init phase needs 3 + 0.5 CPUs; the running phase 1 + 0.5.
        assert_eq!(r.milli_cpu, 3500);
        assert_eq!(r.memory, 1024 * 1024 * 1024 + 100 * 1024 * 1024);
    }

    #[test]
    fn pod_level_requests_and_overhead() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container("a", "1", "1Gi", false)];
        let mut requests = ResourceList::new();
        requests.insert("cpu".into(), allot_api::Quantity::parse("2").unwrap());
        pod.spec.resources = Some(ResourceRequirements {
            requests,
            ..Default::default()
        });
        pod.spec
            .overhead
            .insert("cpu".into(), allot_api::Quantity::parse("250m").unwrap());
        let r = pod_requests(&pod);
        assert_eq!(r.milli_cpu, 2250);
        assert_eq!(r.memory, 1024 * 1024 * 1024);
    }

    #[test]
    fn limits_stand_in_for_missing_requests() {
        let mut pod = Pod::default();
        let mut limits = ResourceList::new();
        limits.insert(
            "example.com/foo".into(),
            allot_api::Quantity::parse("2").unwrap(),
        );
        pod.spec.containers = vec![Container {
            name: "a".into(),
            resources: Some(ResourceRequirements {
                limits,
                ..Default::default()
            }),
            ..Default::default()
        }];
        assert_eq!(pod_requests(&pod).get("example.com/foo"), 2);
        assert_eq!(pod_non_zero_requests(&pod), (100, DEFAULT_MEMORY_REQUEST));
    }

    /// Upstream's defaults replace missing requests only: an explicit zero stays zero
    /// (NodeResourcesFit's LeastAllocated table, "requested resources exceed node capacity").
    #[test]
    fn an_explicit_zero_request_is_not_defaulted_for_scoring() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![container("a", "3", "0", false), Container::default()];
        assert_eq!(
            pod_non_zero_requests(&pod),
            (3000 + DEFAULT_MILLI_CPU_REQUEST, DEFAULT_MEMORY_REQUEST)
        );
    }
}
