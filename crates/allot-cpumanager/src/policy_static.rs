//! The static CPU Manager policy (upstream `policy_static.go`): exclusive CPUs for Guaranteed
//! containers with integer CPU requests, a shared pool for everyone else, reserved CPUs that are
//! never handed out exclusively, and NUMA topology hints.
//!
//! The policy keeps no state of its own apart from the per-pod set of CPUs that finished init
//! containers left behind for reuse (upstream's `cpusToReuse`); the assignments and the shared
//! pool live in a [`CpuManagerState`] passed to every call, so the caller decides when to persist
//! it. Pods are described by [`PodView`], which carries just what the policy reads, so this
//! crate does not depend on an object model.

use std::collections::BTreeMap;
use std::fmt;

use allot_topology::{CpuSet, CpuTopology};
use allot_topologymanager::{NumaMask, ProviderHints, TopologyHint};
use serde::{Deserialize, Serialize};

use crate::cpu_assignment::{
    CpuSortingStrategy, take_by_topology_numa_distributed, take_by_topology_numa_packed,
};
use crate::state::CpuManagerState;

/// The policy name in configuration and checkpoints.
pub const POLICY_STATIC: &str = "static";

/// The admission reason of an [`SmtAlignmentError`].
pub const SMT_ALIGNMENT_ERROR: &str = "SMTAlignmentError";

/// Options of the static policy, parsed and checked by `allot-kubelet-config`.
pub use allot_kubelet_config::StaticPolicyOptions;

/// A CPU request as the policy reads it: upstream's `Quantity.Value()` (rounded up to a whole
/// number) and `Quantity.MilliValue()` (rounded up to a milli-unit).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuQuantity {
    /// Whole CPUs, rounded up.
    pub value: i64,
    /// Milli-CPUs, rounded up.
    pub milli: i64,
}

impl CpuQuantity {
    /// A whole number of CPUs.
    pub fn whole(cpus: i64) -> Self {
        CpuQuantity {
            value: cpus,
            milli: cpus.saturating_mul(1000),
        }
    }

    /// Milli-CPUs (as written `500m`).
    pub fn millis(milli: i64) -> Self {
        CpuQuantity {
            value: milli.saturating_add(999).div_euclid(1000),
            milli,
        }
    }
}

/// A container as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContainerView {
    /// The container name.
    pub name: String,
    /// `resources.requests.cpu` (as allocated), if set.
    pub cpu_request: Option<CpuQuantity>,
    /// Whether this is an init container with `restartPolicy: Always` (a sidecar).
    pub restartable: bool,
}

/// A pod as the policy sees it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodView {
    /// The pod UID (the key of the state).
    pub uid: String,
    /// Whether the pod's QoS class is Guaranteed.
    pub guaranteed: bool,
    /// Init containers in spec order.
    pub init_containers: Vec<ContainerView>,
    /// App containers in spec order.
    pub containers: Vec<ContainerView>,
}

impl PodView {
    /// Looks a container up by name, init containers first.
    pub fn container(&self, name: &str) -> Option<&ContainerView> {
        self.init_containers
            .iter()
            .chain(&self.containers)
            .find(|c| c.name == name)
    }

    /// Whether `name` is a non-restartable init container.
    fn is_plain_init_container(&self, name: &str) -> Option<bool> {
        self.init_containers
            .iter()
            .find(|c| c.name == name)
            .map(|c| !c.restartable)
    }
}

/// Upstream's `SMTAlignmentError`: a full-pcpus-only request that cannot take whole cores.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase", default)]
pub struct SmtAlignmentError {
    /// CPUs the container asked for.
    #[serde(rename = "RequestedCPUs")]
    pub requested_cpus: usize,
    /// Hardware threads per core.
    pub cpus_per_core: usize,
    /// CPUs on cores that are wholly free (only set when that is the cause).
    #[serde(rename = "AvailablePhysicalCPUs")]
    pub available_physical_cpus: usize,
    /// Whether the cause is the lack of free whole cores (else: the request is not a multiple of
    /// the threads per core).
    #[serde(rename = "CausedByPhysicalCPUs")]
    pub caused_by_physical_cpus: bool,
}

impl fmt::Display for SmtAlignmentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.caused_by_physical_cpus {
            write!(
                f,
                "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = {}, requested CPUs = {}, CPUs per core = {}",
                self.available_physical_cpus, self.requested_cpus, self.cpus_per_core
            )
        } else {
            write!(
                f,
                "SMT Alignment Error: requested {} cpus not multiple cpus per core = {}",
                self.requested_cpus, self.cpus_per_core
            )
        }
    }
}

/// Errors of the CPU Manager policies, worded as upstream words them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PolicyError {
    /// full-pcpus-only could not be honoured.
    #[error("{0}")]
    SmtAlignment(SmtAlignmentError),
    /// The CPU pick failed (for example not enough CPUs).
    #[error("{0}")]
    Take(String),
    /// The reserved CPUs could not be picked in the requested number.
    #[error(
        "[cpumanager] unable to reserve the required amount of CPUs (size of {reserved} did not equal {wanted})"
    )]
    Reservation {
        /// What was reserved.
        reserved: CpuSet,
        /// How many CPUs were asked for.
        wanted: usize,
    },
    /// A reserved CPU does not exist on the machine.
    #[error(
        "[cpumanager] unable to build the reserved physical CPUs from the reserved set: unknown CPU ID: {0}"
    )]
    UnknownReservedCpu(u32),
    /// align-by-socket on a machine with more sockets than NUMA nodes.
    #[error(
        "Align by socket is not compatible with hardware where number of sockets are more than number of NUMA"
    )]
    AlignBySocketHardware,
    /// align-by-socket with the single-numa-node Topology Manager policy.
    #[error(
        "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"
    )]
    AlignBySocketSingleNumaNode,
    /// Start: assignments exist but the shared pool is empty.
    #[error("default cpuset cannot be empty")]
    EmptyDefaultCpuSet,
    /// Start (strict-cpu-reservation): reserved CPUs are in the shared pool.
    #[error(
        "some of strictly reserved cpus: \"{overlap}\" are present in defaultCpuSet: \"{default}\""
    )]
    StrictReservedInDefault {
        /// The reserved CPUs found in the shared pool.
        overlap: CpuSet,
        /// The shared pool.
        default: CpuSet,
    },
    /// Start: reserved CPUs are missing from the shared pool.
    #[error("not all reserved cpus: \"{reserved}\" are present in defaultCpuSet: \"{default}\"")]
    ReservedNotInDefault {
        /// The reserved CPUs.
        reserved: CpuSet,
        /// The shared pool.
        default: CpuSet,
    },
    /// Start: an exclusive assignment overlaps the shared pool.
    #[error(
        "pod: {pod}, container: {container} cpuset: \"{cpus}\" overlaps with default cpuset \"{default}\""
    )]
    AssignmentOverlapsDefault {
        /// The pod UID.
        pod: String,
        /// The container.
        container: String,
        /// Its CPUs.
        cpus: CpuSet,
        /// The shared pool.
        default: CpuSet,
    },
    /// Start: the CPUs in the state are not the machine's CPUs.
    #[error(
        "current set of available CPUs \"{machine}\" doesn't match with CPUs in state \"{state}\""
    )]
    CpusChanged {
        /// The CPUs the policy can use.
        machine: CpuSet,
        /// The CPUs the state knows.
        state: CpuSet,
    },
}

impl PolicyError {
    /// The kubelet's admission reason for an allocation error: `SMTAlignmentError` for SMT
    /// alignment, `UnexpectedAdmissionError` for anything else.
    pub fn admission_reason(&self) -> &'static str {
        match self {
            PolicyError::SmtAlignment(_) => SMT_ALIGNMENT_ERROR,
            _ => "UnexpectedAdmissionError",
        }
    }

    /// The kubelet's admission message for an allocation error.
    pub fn admission_message(&self) -> String {
        match self {
            PolicyError::SmtAlignment(e) => e.to_string(),
            other => format!("Allocate failed due to {other}, which is unexpected"),
        }
    }
}

/// Counters the policy bumps, matching the kubelet's CPU Manager metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyCounters {
    /// `cpu_manager_pinning_requests_total`.
    pub pinning_requests: u64,
    /// `cpu_manager_pinning_errors_total`.
    pub pinning_errors: u64,
}

/// The static policy.
#[derive(Debug, Clone)]
pub struct StaticPolicy {
    topology: CpuTopology,
    reserved: CpuSet,
    reserved_physical: CpuSet,
    options: StaticPolicyOptions,
    cpu_group_size: usize,
    cpus_to_reuse: BTreeMap<String, CpuSet>,
    counters: PolicyCounters,
}

impl StaticPolicy {
    /// Creates the policy as upstream's `NewStaticPolicy`: checks the options against the
    /// hardware, and takes `num_reserved` CPUs by topology (lowest physical cores first) unless an
    /// explicit `reserved` set is given.
    pub fn new(
        topology: CpuTopology,
        num_reserved: usize,
        reserved: &CpuSet,
        options: StaticPolicyOptions,
        topology_manager_single_numa_node: bool,
    ) -> Result<Self, PolicyError> {
        if options.align_by_socket {
            if topology_manager_single_numa_node {
                return Err(PolicyError::AlignBySocketSingleNumaNode);
            }
            let counts = topology.counts();
            if counts.num_sockets > counts.num_numa_nodes {
                return Err(PolicyError::AlignBySocketHardware);
            }
        }
        let cpu_group_size = topology.cpus_per_core();
        let mut policy = StaticPolicy {
            topology,
            reserved: CpuSet::new(),
            reserved_physical: CpuSet::new(),
            options,
            cpu_group_size,
            cpus_to_reuse: BTreeMap::new(),
            counters: PolicyCounters::default(),
        };
        let chosen = if !reserved.is_empty() {
            reserved.clone()
        } else {
            let all = policy.topology.cpus().clone();
            policy
                .take_by_topology(&all, num_reserved)
                .unwrap_or_default()
        };
        if chosen.len() != num_reserved {
            return Err(PolicyError::Reservation {
                reserved: chosen,
                wanted: num_reserved,
            });
        }
        let mut physical = CpuSet::new();
        for cpu in &chosen {
            let info = policy
                .topology
                .cpu_info(cpu)
                .ok_or(PolicyError::UnknownReservedCpu(cpu))?;
            physical.union_with(&policy.topology.cpus_in_cores(&[info.core]));
        }
        policy.reserved = chosen;
        policy.reserved_physical = physical;
        Ok(policy)
    }

    /// The policy name.
    pub fn name(&self) -> &'static str {
        POLICY_STATIC
    }

    /// The topology the policy works on.
    pub fn topology(&self) -> &CpuTopology {
        &self.topology
    }

    /// The options.
    pub fn options(&self) -> StaticPolicyOptions {
        self.options
    }

    /// The reserved CPUs.
    pub fn reserved(&self) -> &CpuSet {
        &self.reserved
    }

    /// The reserved CPUs plus their core siblings.
    pub fn reserved_physical(&self) -> &CpuSet {
        &self.reserved_physical
    }

    /// The pinning counters so far.
    pub fn counters(&self) -> PolicyCounters {
        self.counters
    }

    /// Upstream's `Start`: checks a restored state (or initialises an empty one).
    pub fn start(&self, state: &mut CpuManagerState) -> Result<(), PolicyError> {
        self.validate_state(state)
    }

    fn validate_state(&self, state: &mut CpuManagerState) -> Result<(), PolicyError> {
        let mut all = self.topology.cpus().clone();
        if self.options.strict_cpu_reservation {
            all.difference_with(&self.reserved);
        }
        let default = state.default_cpu_set.clone();
        if default.is_empty() {
            if !state.assignments.is_empty() {
                return Err(PolicyError::EmptyDefaultCpuSet);
            }
            state.default_cpu_set = all;
            return Ok(());
        }
        if self.options.strict_cpu_reservation {
            let overlap = self.reserved.intersection(&default);
            if !overlap.is_empty() {
                return Err(PolicyError::StrictReservedInDefault { overlap, default });
            }
        } else if self.reserved.intersection(&default) != self.reserved {
            return Err(PolicyError::ReservedNotInDefault {
                reserved: self.reserved.clone(),
                default,
            });
        }
        for (pod, containers) in &state.assignments {
            for (container, cpus) in containers {
                if default.intersects(cpus) {
                    return Err(PolicyError::AssignmentOverlapsDefault {
                        pod: pod.clone(),
                        container: container.clone(),
                        cpus: cpus.clone(),
                        default,
                    });
                }
            }
        }
        let mut known = default.clone();
        known.union_with(&state.assigned_cpus());
        for pool in state.pod_pools.values() {
            known.union_with(pool);
        }
        if known != all {
            return Err(PolicyError::CpusChanged {
                machine: all,
                state: known,
            });
        }
        Ok(())
    }

    /// CPUs that can be handed out exclusively, ignoring current assignments.
    pub fn allocatable_cpus(&self) -> CpuSet {
        self.topology.cpus().difference(&self.reserved)
    }

    /// Free CPUs for exclusive assignment: the shared pool minus the reserved CPUs.
    pub fn available_cpus(&self, state: &CpuManagerState) -> CpuSet {
        state.default_cpu_set.difference(&self.reserved)
    }

    /// Free CPUs minus the reserved CPUs' core siblings.
    pub fn available_physical_cpus(&self, state: &CpuManagerState) -> CpuSet {
        state.default_cpu_set.difference(&self.reserved_physical)
    }

    fn update_cpus_to_reuse(&mut self, pod: &PodView, container: &str, cpus: &CpuSet) {
        self.cpus_to_reuse.retain(|uid, _| uid == &pod.uid);
        let reuse = self.cpus_to_reuse.entry(pod.uid.clone()).or_default();
        // A finished init container's CPUs become reusable; a sidecar runs alongside the app
        // containers, so its CPUs, like an app container's, leave the reusable set.
        if pod.is_plain_init_container(container) == Some(true) {
            reuse.union_with(cpus);
        } else {
            reuse.difference_with(cpus);
        }
    }

    /// The CPUs finished init containers of `pod_uid` left for reuse.
    pub fn cpus_to_reuse(&self, pod_uid: &str) -> CpuSet {
        self.cpus_to_reuse.get(pod_uid).cloned().unwrap_or_default()
    }

    /// Upstream's `guaranteedCPUs`: the exclusive CPU count of a container, 0 when it goes to
    /// the shared pool.
    pub fn guaranteed_cpus(&self, pod: &PodView, container: &ContainerView) -> usize {
        guaranteed_cpus(pod, container)
    }

    /// Upstream's `podGuaranteedCPUs`: the exclusive CPUs the whole pod needs at its peak.
    pub fn pod_guaranteed_cpus(&self, pod: &PodView) -> usize {
        pod_guaranteed_cpus(pod)
    }

    /// Upstream's `Allocate`: gives the container exclusive CPUs when it qualifies, aligned to
    /// `numa_affinity` where possible (the Topology Manager's merged hint; `None` = any node).
    ///
    /// Returns the exclusive CPUs, or `None` when the container runs in the shared pool.
    pub fn allocate(
        &mut self,
        state: &mut CpuManagerState,
        pod: &PodView,
        container: &ContainerView,
        numa_affinity: Option<&NumaMask>,
    ) -> Result<Option<CpuSet>, PolicyError> {
        let num_cpus = guaranteed_cpus(pod, container);
        if num_cpus == 0 {
            return Ok(None);
        }
        self.counters.pinning_requests += 1;
        let result = self.allocate_exclusive(state, pod, container, num_cpus, numa_affinity);
        if result.is_err() {
            self.counters.pinning_errors += 1;
        }
        result.map(Some)
    }

    fn allocate_exclusive(
        &mut self,
        state: &mut CpuManagerState,
        pod: &PodView,
        container: &ContainerView,
        num_cpus: usize,
        numa_affinity: Option<&NumaMask>,
    ) -> Result<CpuSet, PolicyError> {
        if self.options.full_physical_cpus_only {
            let group = self.cpu_group_size.max(1);
            if !num_cpus.is_multiple_of(group) {
                return Err(PolicyError::SmtAlignment(SmtAlignmentError {
                    requested_cpus: num_cpus,
                    cpus_per_core: self.cpu_group_size,
                    available_physical_cpus: 0,
                    caused_by_physical_cpus: false,
                }));
            }
            let available_physical = self.available_physical_cpus(state).len();
            if num_cpus > available_physical {
                return Err(PolicyError::SmtAlignment(SmtAlignmentError {
                    requested_cpus: num_cpus,
                    cpus_per_core: self.cpu_group_size,
                    available_physical_cpus: available_physical,
                    caused_by_physical_cpus: true,
                }));
            }
        }
        if let Some(existing) = state.cpu_set(&pod.uid, &container.name).cloned() {
            self.update_cpus_to_reuse(pod, &container.name, &existing);
            return Ok(existing);
        }
        let reusable = self.cpus_to_reuse(&pod.uid);
        let cpus = self.allocate_cpus(state, num_cpus, numa_affinity, &reusable)?;
        state.set_cpu_set(&pod.uid, &container.name, cpus.clone());
        self.update_cpus_to_reuse(pod, &container.name, &cpus);
        Ok(cpus)
    }

    /// Upstream's `allocateCPUs`: aligned CPUs first, then the rest by topology; the result
    /// leaves the shared pool.
    fn allocate_cpus(
        &self,
        state: &mut CpuManagerState,
        num_cpus: usize,
        numa_affinity: Option<&NumaMask>,
        reusable: &CpuSet,
    ) -> Result<CpuSet, PolicyError> {
        let allocatable = self.available_cpus(state).union(reusable);
        let mut result = CpuSet::new();
        if let Some(mask) = numa_affinity {
            let aligned = self.aligned_cpus(mask, &allocatable);
            let n = num_cpus.min(aligned.len());
            let picked = self.take_by_topology(&aligned, n)?;
            result.union_with(&picked);
        }
        // Upstream asks for the remainder even when it is zero, which always yields nothing.
        if result.len() < num_cpus {
            let rest = allocatable.difference(&result);
            let picked = self.take_by_topology(&rest, num_cpus - result.len())?;
            result.union_with(&picked);
        }
        state.default_cpu_set.difference_with(&result);
        Ok(result)
    }

    /// Takes `num_cpus` CPUs out of the shared pool for a pod-level pool (pod-level resource
    /// managers, pod scope), aligned to `numa_affinity` where possible.
    pub fn allocate_pod_pool(
        &mut self,
        state: &mut CpuManagerState,
        pod_uid: &str,
        num_cpus: usize,
        numa_affinity: Option<&NumaMask>,
    ) -> Result<CpuSet, PolicyError> {
        if let Some(pool) = state.pod_pools.get(pod_uid) {
            return Ok(pool.clone());
        }
        self.counters.pinning_requests += 1;
        let result = self.allocate_cpus(state, num_cpus, numa_affinity, &CpuSet::new());
        match &result {
            Ok(pool) => {
                state.pod_pools.insert(pod_uid.to_string(), pool.clone());
            }
            Err(_) => self.counters.pinning_errors += 1,
        }
        result
    }

    /// Gives a container an exclusive slice of its pod's pool: `num_cpus` CPUs of `free` (the
    /// pool minus the slices still held), picked by topology.
    pub fn allocate_pod_slice(
        &mut self,
        state: &mut CpuManagerState,
        pod: &PodView,
        container: &str,
        num_cpus: usize,
        free: &CpuSet,
    ) -> Result<CpuSet, PolicyError> {
        if let Some(existing) = state.cpu_set(&pod.uid, container).cloned() {
            return Ok(existing);
        }
        self.counters.pinning_requests += 1;
        match self.take_by_topology(free, num_cpus) {
            Ok(slice) => {
                state.set_cpu_set(&pod.uid, container, slice.clone());
                Ok(slice)
            }
            Err(e) => {
                self.counters.pinning_errors += 1;
                Err(e)
            }
        }
    }

    /// Returns a pod-level pool and every slice in it to the shared pool.
    pub fn release_pod_pool(&mut self, state: &mut CpuManagerState, pod_uid: &str) {
        if let Some(pool) = state.pod_pools.remove(pod_uid) {
            state.assignments.remove(pod_uid);
            state.default_cpu_set.union_with(&pool);
        }
    }

    fn aligned_cpus(&self, mask: &NumaMask, allocatable: &CpuSet) -> CpuSet {
        let numa_ids: Vec<u32> = mask.ids().filter_map(|i| u32::try_from(i).ok()).collect();
        if self.options.align_by_socket {
            let sockets: Vec<u32> = self
                .topology
                .sockets_in_numa_nodes(&numa_ids)
                .iter()
                .collect();
            return allocatable.intersection(&self.topology.cpus_in_sockets(&sockets));
        }
        allocatable.intersection(&self.topology.cpus_in_numa_nodes(&numa_ids))
    }

    /// The policy's CPU pick: packed or distributed across NUMA nodes, per the options.
    pub fn take_by_topology(
        &self,
        available: &CpuSet,
        num_cpus: usize,
    ) -> Result<CpuSet, PolicyError> {
        let sorting = if self.options.distribute_cpus_across_cores {
            CpuSortingStrategy::Spread
        } else {
            CpuSortingStrategy::Packed
        };
        let result = if self.options.distribute_cpus_across_numa {
            let group = if self.options.full_physical_cpus_only {
                self.cpu_group_size
            } else {
                1
            };
            take_by_topology_numa_distributed(
                &self.topology,
                available,
                num_cpus,
                group,
                sorting,
                self.options.align_by_socket,
            )
        } else {
            take_by_topology_numa_packed(
                &self.topology,
                available,
                num_cpus,
                sorting,
                self.options.prefer_align_by_uncore_cache,
            )
        };
        result.map_err(|e| PolicyError::Take(e.to_string()))
    }

    /// Upstream's `RemoveContainer`: the container's CPUs go back to the shared pool, except
    /// those another container of the same pod still holds.
    pub fn remove_container(
        &mut self,
        state: &mut CpuManagerState,
        pod_uid: &str,
        container: &str,
    ) -> CpuSet {
        let in_use = state.sibling_cpus(pod_uid, container);
        match state.cpu_set(pod_uid, container).cloned() {
            Some(cpus) => {
                state.delete(pod_uid, container);
                let release = cpus.difference(&in_use);
                state.default_cpu_set.union_with(&release);
                release
            }
            None => CpuSet::new(),
        }
    }

    /// Upstream's `GetTopologyHints` for one container.
    pub fn get_topology_hints(
        &self,
        state: &CpuManagerState,
        pod: &PodView,
        container: &ContainerView,
    ) -> ProviderHints {
        let requested = guaranteed_cpus(pod, container);
        if requested == 0 {
            return ProviderHints::new();
        }
        if let Some(allocated) = state.cpu_set(&pod.uid, &container.name) {
            if allocated.len() != requested {
                return cpu_hints(Vec::new());
            }
            return cpu_hints(self.generate_cpu_topology_hints(
                allocated,
                &CpuSet::new(),
                requested,
            ));
        }
        let available = self.available_cpus(state);
        let reusable = self.cpus_to_reuse(&pod.uid);
        cpu_hints(self.generate_cpu_topology_hints(&available, &reusable, requested))
    }

    /// Upstream's `GetPodTopologyHints` for a whole pod.
    pub fn get_pod_topology_hints(&self, state: &CpuManagerState, pod: &PodView) -> ProviderHints {
        let requested = pod_guaranteed_cpus(pod);
        if requested == 0 {
            return ProviderHints::new();
        }
        let mut assigned = CpuSet::new();
        for container in pod.init_containers.iter().chain(&pod.containers) {
            let by_container = guaranteed_cpus(pod, container);
            if let Some(allocated) = state.cpu_set(&pod.uid, &container.name) {
                if allocated.len() != by_container {
                    return cpu_hints(Vec::new());
                }
                assigned.union_with(allocated);
            }
        }
        if assigned.len() == requested {
            return cpu_hints(self.generate_cpu_topology_hints(
                &assigned,
                &CpuSet::new(),
                requested,
            ));
        }
        let available = self.available_cpus(state);
        let reusable = self.cpus_to_reuse(&pod.uid).union(&assigned);
        cpu_hints(self.generate_cpu_topology_hints(&available, &reusable, requested))
    }

    /// Upstream's `generateCPUTopologyHints`: one hint per NUMA node combination with enough
    /// CPUs, preferred when it has as few nodes as the request could possibly use.
    pub fn generate_cpu_topology_hints(
        &self,
        available: &CpuSet,
        reusable: &CpuSet,
        request: usize,
    ) -> Vec<TopologyHint> {
        let nodes: Vec<u32> = self.topology.numa_nodes().iter().collect();
        // Per NUMA node (by index into `nodes`): all its CPUs, and the available ones. NUMA
        // nodes do not share CPUs, so a combination's counts are sums.
        let mut totals = Vec::with_capacity(nodes.len());
        let mut frees = Vec::with_capacity(nodes.len());
        for &n in &nodes {
            let cpus = self.topology.cpus_in_numa_nodes(&[n]);
            totals.push(cpus.len());
            frees.push(cpus.intersection_len(available));
        }
        // Every reusable CPU must lie in the combination; a reusable CPU outside the machine
        // rules out every combination, as upstream's lookup would.
        let mut needed = vec![false; nodes.len()];
        let mut reusable_unknown = false;
        for cpu in reusable {
            match self
                .topology
                .cpu_info(cpu)
                .and_then(|info| nodes.iter().position(|&n| n == info.numa))
            {
                Some(i) => needed[i] = true,
                None => reusable_unknown = true,
            }
        }
        let needed_count = needed.iter().filter(|&&b| b).count();
        let reusable_count = reusable.len();
        let indices: Vec<u32> = (0..nodes.len() as u32).collect();
        let mut min_affinity = nodes.len();
        let mut hints: Vec<TopologyHint> = Vec::new();
        for_each_combination(&indices, |combo| {
            let mut in_mask = 0;
            let mut free = 0;
            let mut covered = 0;
            for &i in combo {
                let i = i as usize;
                in_mask += totals[i];
                free += frees[i];
                covered += usize::from(needed[i]);
            }
            if in_mask >= request && combo.len() < min_affinity {
                min_affinity = combo.len();
            }
            if reusable_unknown || covered != needed_count || reusable_count + free < request {
                return;
            }
            hints.push(TopologyHint::new(
                NumaMask::from_ids(combo.iter().map(|&i| nodes[i as usize] as usize)),
                false,
            ));
        });
        for hint in &mut hints {
            let count = hint.affinity.as_ref().map_or(0, NumaMask::count);
            if self.options.align_by_socket && self.is_hint_socket_aligned(hint, min_affinity) {
                hint.preferred = true;
                continue;
            }
            if count == min_affinity {
                hint.preferred = true;
            }
        }
        hints
    }

    fn is_hint_socket_aligned(&self, hint: &TopologyHint, min_affinity: usize) -> bool {
        let counts = self.topology.counts();
        let per_socket = counts
            .num_numa_nodes
            .checked_div(counts.num_sockets)
            .unwrap_or(0);
        if per_socket == 0 {
            return false;
        }
        let min_sockets = min_affinity.div_ceil(per_socket);
        let ids: Vec<u32> = hint
            .affinity
            .as_ref()
            .map(|m| m.ids().filter_map(|i| u32::try_from(i).ok()).collect())
            .unwrap_or_default();
        self.topology.sockets_in_numa_nodes(&ids).len() == min_sockets
    }
}

fn cpu_hints(hints: Vec<TopologyHint>) -> ProviderHints {
    ProviderHints::from([("cpu".to_string(), Some(hints))])
}

/// Calls `f` with every non-empty combination of `items`: all singletons, then all pairs, and so
/// on, each size in lexicographic order (upstream's `bitmask.IterateBitMasks`).
fn for_each_combination<F: FnMut(&[u32])>(items: &[u32], mut f: F) {
    fn go<F: FnMut(&[u32])>(items: &[u32], accum: &mut Vec<u32>, size: usize, f: &mut F) {
        if accum.len() == size {
            f(accum);
            return;
        }
        for i in 0..items.len() {
            accum.push(items[i]);
            go(&items[i + 1..], accum, size, f);
            accum.pop();
        }
    }
    let mut accum = Vec::new();
    for size in 1..=items.len() {
        go(items, &mut accum, size, &mut f);
    }
}

/// Upstream's `guaranteedCPUs`: a Guaranteed pod's container with an integer CPU request gets
/// that many exclusive CPUs; everyone else 0.
pub fn guaranteed_cpus(pod: &PodView, container: &ContainerView) -> usize {
    if !pod.guaranteed {
        return 0;
    }
    let Some(q) = container.cpu_request else {
        return 0;
    };
    if q.value.saturating_mul(1000) != q.milli || q.value <= 0 {
        return 0;
    }
    usize::try_from(q.value).unwrap_or(0)
}

/// Upstream's `podGuaranteedCPUs`: the larger of the largest init-container need (plus the
/// sidecars started before it) and the app containers plus all sidecars.
pub fn pod_guaranteed_cpus(pod: &PodView) -> usize {
    let mut by_init = 0usize;
    let mut by_restartable = 0usize;
    for c in &pod.init_containers {
        if c.cpu_request.is_none() {
            continue;
        }
        let n = guaranteed_cpus(pod, c);
        if c.restartable {
            by_restartable += n;
        } else if by_restartable + n > by_init {
            by_init = by_restartable + n;
        }
    }
    let by_apps: usize = pod
        .containers
        .iter()
        .filter(|c| c.cpu_request.is_some())
        .map(|c| guaranteed_cpus(pod, c))
        .sum();
    by_init.max(by_apps + by_restartable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn combinations_in_upstream_order() {
        let mut seen = Vec::new();
        for_each_combination(&[0, 1, 2], |c| seen.push(c.to_vec()));
        assert_eq!(
            seen,
            vec![
                vec![0],
                vec![1],
                vec![2],
                vec![0, 1],
                vec![0, 2],
                vec![1, 2],
                vec![0, 1, 2]
            ]
        );
    }

    #[test]
    fn smt_error_messages() {
        let e = SmtAlignmentError {
            requested_cpus: 3,
            cpus_per_core: 2,
            available_physical_cpus: 0,
            caused_by_physical_cpus: false,
        };
        assert_eq!(
            e.to_string(),
            "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
        );
        let e = SmtAlignmentError {
            requested_cpus: 10,
            cpus_per_core: 2,
            available_physical_cpus: 8,
            caused_by_physical_cpus: true,
        };
        assert_eq!(
            e.to_string(),
            "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = 8, requested CPUs = 10, CPUs per core = 2"
        );
    }

    fn c(name: &str, cpu: Option<CpuQuantity>, restartable: bool) -> ContainerView {
        ContainerView {
            name: name.into(),
            cpu_request: cpu,
            restartable,
        }
    }

    fn two_numa_policy() -> StaticPolicy {
        // Two sockets, one NUMA node each, 3 cores of 2 threads per socket.
        let mut node = allot_topology::NodeTopology::new("t");
        for id in 0..12u32 {
            let socket = (id / 3) % 2;
            node.cpus.push(allot_topology::CpuInfo {
                id,
                core: id % 6,
                socket,
                numa: socket,
                uncore_cache: socket,
            });
        }
        let topo = CpuTopology::new(&node).expect("topology");
        StaticPolicy::new(
            topo,
            0,
            &CpuSet::new(),
            StaticPolicyOptions::default(),
            false,
        )
        .expect("policy")
    }

    fn hint(ids: &[usize], preferred: bool) -> TopologyHint {
        TopologyHint::new(NumaMask::from_ids(ids.iter().copied()), preferred)
    }

    #[test]
    fn cpu_topology_hints() {
        let p = two_numa_policy();
        let all = CpuSet::from_range(0, 11);
        let none = CpuSet::new();
        assert_eq!(
            p.generate_cpu_topology_hints(&all, &none, 4),
            vec![hint(&[0], true), hint(&[1], true), hint(&[0, 1], false)]
        );
        assert_eq!(
            p.generate_cpu_topology_hints(&all, &none, 8),
            vec![hint(&[0, 1], true)]
        );
        // Only NUMA node 1 has two free CPUs left, plus a reusable CPU on node 1.
        let free = CpuSet::from_ids([3, 4]);
        let reusable = CpuSet::from_ids([9]);
        assert_eq!(
            p.generate_cpu_topology_hints(&free, &reusable, 3),
            vec![hint(&[1], true), hint(&[0, 1], false)]
        );
        // A reusable CPU the machine does not have rules everything out.
        assert!(
            p.generate_cpu_topology_hints(&all, &CpuSet::from_ids([99]), 1)
                .is_empty()
        );
    }

    #[test]
    fn guaranteed_cpu_counts() {
        let pod = PodView {
            uid: "u".into(),
            guaranteed: true,
            init_containers: vec![
                c("i0", Some(CpuQuantity::whole(4)), false),
                c("s0", Some(CpuQuantity::whole(1)), true),
                c("i1", Some(CpuQuantity::whole(4)), false),
            ],
            containers: vec![
                c("a", Some(CpuQuantity::whole(2)), false),
                c("b", Some(CpuQuantity::millis(500)), false),
            ],
        };
        assert_eq!(guaranteed_cpus(&pod, &pod.containers[0]), 2);
        assert_eq!(guaranteed_cpus(&pod, &pod.containers[1]), 0);
        // max(init peak 1 + 4 = 5, apps 2 + sidecar 1 = 3)
        assert_eq!(pod_guaranteed_cpus(&pod), 5);
        let burstable = PodView {
            guaranteed: false,
            ..pod.clone()
        };
        assert_eq!(pod_guaranteed_cpus(&burstable), 0);
    }
}
