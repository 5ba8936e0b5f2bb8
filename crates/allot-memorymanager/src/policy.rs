//! The Static policy (upstream `policy_static.go`) and the None policy.

use std::collections::BTreeMap;

use allot_topologymanager::{NumaMask, ProviderHints, TopologyHint};

use crate::Error;
use crate::pod::{ContainerResources, PodResources};
use crate::state::{
    Block, MEMORY, MemoryState, MemoryTable, NumaNodeMap, NumaNodeState, groups_equal,
    machine_states_equal,
};

/// Hugepages of one size on a NUMA node, as cadvisor reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HugePages {
    /// The page size in KiB.
    pub page_size_kib: u64,
    /// The number of pages.
    pub num_pages: u64,
}

/// One NUMA node of the machine, as cadvisor reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaNodeInfo {
    /// The node id.
    pub id: usize,
    /// Memory in bytes (hugepages included).
    pub memory: u64,
    /// Hugepages per size.
    pub hugepages: Vec<HugePages>,
}

/// Memory reserved for the system: NUMA node to resource name to bytes (`reservedMemory`).
pub type SystemReserved = BTreeMap<usize, BTreeMap<String, u64>>;

/// The hugepages resource name for a page size in KiB (`hugepages-2Mi`, `hugepages-1Gi`):
/// upstream formats the size in bytes as a binary-SI quantity.
pub fn hugepages_resource_name(page_size_kib: u64) -> String {
    let bytes = page_size_kib.saturating_mul(1024);
    let suffixes = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    let mut value = bytes;
    let mut suffix = "";
    for s in suffixes {
        if value == 0 || !value.is_multiple_of(1024) {
            break;
        }
        value /= 1024;
        suffix = s;
    }
    format!("hugepages-{value}{suffix}")
}

/// Memory an init container held that later containers of the same pod may reuse: pod UID to
/// NUMA mask to resource to bytes. Upstream keeps only the pod being admitted.
type ReusableMemory = BTreeMap<String, BTreeMap<NumaMask, BTreeMap<String, u64>>>;

/// The Static policy: exclusive, NUMA-aligned memory and hugepages for Guaranteed pods.
///
/// The policy holds the machine description, the reservation and, as upstream, the memory of
/// the current pod's init containers that app containers may reuse. Every call takes the state
/// it reads and updates; nothing else is touched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StaticPolicy {
    machine: Vec<NumaNodeInfo>,
    system_reserved: SystemReserved,
    reusable: ReusableMemory,
}

impl StaticPolicy {
    /// The policy name in the checkpoint.
    pub const NAME: &'static str = "Static";

    /// Creates the policy (upstream `NewPolicyStatic`): some memory must be reserved for the
    /// system on at least one NUMA node.
    pub fn new(machine: Vec<NumaNodeInfo>, system_reserved: SystemReserved) -> Result<Self, Error> {
        let total: u128 = system_reserved
            .values()
            .filter_map(|node| node.get(MEMORY))
            .map(|&v| u128::from(v))
            .sum();
        if total == 0 {
            return Err(Error::NoSystemReservedMemory);
        }
        Ok(Self {
            machine,
            system_reserved,
            reusable: BTreeMap::new(),
        })
    }

    /// The machine state of a machine with no assignments (upstream `getDefaultMachineState`).
    pub fn default_machine_state(&self) -> NumaNodeMap {
        let mut state = NumaNodeMap::new();
        for node in &self.machine {
            let mut memory_map = BTreeMap::new();
            let mut hugepages_total = 0u64;
            for pages in &node.hugepages {
                let resource = hugepages_resource_name(pages.page_size_kib);
                let reserved = self.reserved(node.id, &resource);
                let total = pages
                    .num_pages
                    .wrapping_mul(pages.page_size_kib)
                    .wrapping_mul(1024);
                let allocatable = total.wrapping_sub(reserved);
                memory_map.insert(
                    resource,
                    MemoryTable {
                        total,
                        system_reserved: reserved,
                        allocatable,
                        reserved: 0,
                        free: allocatable,
                    },
                );
                hugepages_total = hugepages_total.wrapping_add(total);
            }
            let reserved = self.reserved(node.id, MEMORY);
            let allocatable = node
                .memory
                .wrapping_sub(reserved)
                .wrapping_sub(hugepages_total);
            memory_map.insert(
                MEMORY.to_string(),
                MemoryTable {
                    total: node.memory,
                    system_reserved: reserved,
                    allocatable,
                    reserved: 0,
                    free: allocatable,
                },
            );
            state.insert(
                node.id,
                NumaNodeState {
                    number_of_assignments: 0,
                    memory_map,
                    cells: vec![node.id],
                },
            );
        }
        state
    }

    fn reserved(&self, node: usize, resource: &str) -> u64 {
        self.system_reserved
            .get(&node)
            .and_then(|r| r.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// Validates a restored state at start-up (upstream `Start`/`validateState`): an empty
    /// machine state is filled with the default one (unless assignments exist); otherwise it
    /// must equal the default state with every assignment applied.
    pub fn start(&self, state: &mut MemoryState) -> Result<(), Error> {
        if state.machine_state.is_empty() {
            if !state.entries.is_empty() {
                return Err(Error::EmptyMachineStateWithAssignments);
            }
            state.machine_state = self.default_machine_state();
            return Ok(());
        }
        let mut expected = self.default_machine_state();
        for (pod, containers) in &state.entries {
            // A pod with pod-level memory holds its budget; its containers' blocks are
            // partitions of it and are not counted again.
            if let Some(entry) = state
                .pod_entries
                .get(pod)
                .filter(|e| !e.memory_blocks.is_empty())
            {
                apply_expected(&mut expected, &entry.memory_blocks, pod, "")?;
                continue;
            }
            for (container, blocks) in containers {
                apply_expected(&mut expected, blocks, pod, container)?;
            }
        }
        if machine_states_equal(&state.machine_state, &expected) {
            Ok(())
        } else {
            Err(Error::MachineStateMismatch)
        }
    }

    /// Hints for one container (upstream `GetTopologyHints`). `None` is upstream's nil map:
    /// the pod is not Guaranteed, uses pod-level resources, or its existing assignment does not
    /// match its requests. A container that already has memory gets its assignment back as the
    /// only, preferred hint.
    pub fn get_topology_hints(
        &self,
        state: &MemoryState,
        pod: &PodResources,
        container: &ContainerResources,
    ) -> Option<ProviderHints> {
        if !pod.guaranteed || pod.pod_level_resources {
            return None;
        }
        if let Some(blocks) = state.blocks(&pod.uid, &container.name) {
            return regenerate_hints(blocks, &container.requests);
        }
        Some(self.calculate_hints(&state.machine_state, pod, &container.requests))
    }

    /// Hints for the whole pod (upstream `GetPodTopologyHints`), from the pod's effective
    /// requests.
    pub fn get_pod_topology_hints(
        &self,
        state: &MemoryState,
        pod: &PodResources,
    ) -> Option<ProviderHints> {
        if !pod.guaranteed || pod.pod_level_resources {
            return None;
        }
        let requested = pod.requested();
        for container in pod.all_containers() {
            if let Some(blocks) = state.blocks(&pod.uid, &container.name) {
                return regenerate_hints(blocks, &requested);
            }
        }
        Some(self.calculate_hints(&state.machine_state, pod, &requested))
    }

    /// Every NUMA node set (fewest nodes first, then in lexicographic order) that can hold the
    /// request, as a hint per requested resource; preferred when it uses the fewest nodes any
    /// set with enough allocatable memory uses (upstream `calculateHints`).
    fn calculate_hints(
        &self,
        machine: &NumaNodeMap,
        pod: &PodResources,
        requested: &BTreeMap<String, u64>,
    ) -> ProviderHints {
        // Per node (ascending id), per requested resource: free and allocatable; and the
        // node's group, sorted, for the group checks.
        let nodes: Vec<usize> = machine.keys().copied().collect();
        let resources: Vec<(&str, u128)> = requested
            .iter()
            .map(|(r, &size)| (r.as_str(), u128::from(size)))
            .collect();
        let tables: Vec<Vec<(u128, u128)>> = machine
            .values()
            .map(|node| {
                resources
                    .iter()
                    .map(|(r, _)| {
                        let t = node.table(r);
                        (u128::from(t.free), u128::from(t.allocatable))
                    })
                    .collect()
            })
            .collect();
        let groups: Vec<Vec<usize>> = machine
            .values()
            .map(|node| {
                let mut cells = node.cells.clone();
                cells.sort_unstable();
                cells
            })
            .collect();
        let assigned: Vec<bool> = machine
            .values()
            .map(|n| n.number_of_assignments > 0)
            .collect();
        let has_reusable = self.reusable.contains_key(&pod.uid);
        let positions: Vec<usize> = (0..nodes.len()).collect();
        let mut min_affinity = nodes.len();
        let mut found: Vec<NumaMask> = Vec::new();
        let mut free = vec![0u128; resources.len()];
        let mut allocatable = vec![0u128; resources.len()];
        let mut ids: Vec<usize> = Vec::with_capacity(nodes.len());
        for_each_subset(&positions, |subset| {
            free.iter_mut().for_each(|v| *v = 0);
            allocatable.iter_mut().for_each(|v| *v = 0);
            for &i in subset {
                for (r, &(f, a)) in tables[i].iter().enumerate() {
                    free[r] += f;
                    allocatable[r] += a;
                }
            }
            if resources
                .iter()
                .zip(&allocatable)
                .any(|((_, size), a)| a < size)
            {
                return;
            }
            min_affinity = min_affinity.min(subset.len());
            let single = subset.len() == 1;
            if single && groups[subset[0]].len() > 1 {
                return;
            }
            ids.clear();
            ids.extend(subset.iter().map(|&i| nodes[i]));
            if !single
                && subset
                    .iter()
                    .any(|&i| assigned[i] && (groups[i].len() == 1 || groups[i] != ids))
            {
                return;
            }
            let mask = NumaMask::from_ids(ids.iter().copied());
            for (r, (resource, size)) in resources.iter().enumerate() {
                let reusable = if has_reusable {
                    u128::from(self.pod_reusable(&pod.uid, &mask, resource))
                } else {
                    0
                };
                if free[r] + reusable < *size {
                    return;
                }
            }
            found.push(mask);
        });
        let mut hints = ProviderHints::new();
        if found.is_empty() {
            return hints;
        }
        for resource in requested.keys() {
            let list = found
                .iter()
                .map(|mask| TopologyHint::new(mask.clone(), mask.count() == min_affinity))
                .collect();
            hints.insert(resource.clone(), Some(list));
        }
        hints
    }

    fn pod_reusable(&self, pod_uid: &str, mask: &NumaMask, resource: &str) -> u64 {
        self.reusable
            .get(pod_uid)
            .and_then(|m| m.get(mask))
            .and_then(|r| r.get(resource))
            .copied()
            .unwrap_or(0)
    }

    /// Allocates a container's memory on the NUMA nodes of `hint` (upstream `Allocate`),
    /// extending or defaulting the affinity when it cannot hold the request. Idempotent: a
    /// container that already has blocks keeps them. Non-Guaranteed pods and pods with
    /// pod-level resources get nothing.
    pub fn allocate(
        &mut self,
        state: &mut MemoryState,
        pod: &PodResources,
        container: &ContainerResources,
        hint: &TopologyHint,
    ) -> Result<(), Error> {
        if !pod.guaranteed || pod.pod_level_resources {
            return Ok(());
        }
        if let Some(blocks) = state.blocks(&pod.uid, &container.name).cloned() {
            self.update_pod_reusable(pod, container, &blocks);
            return Ok(());
        }
        let requested = &container.requests;
        let machine = &state.machine_state;
        let mut best = hint.clone();
        if best.affinity.is_none() {
            let default = self.default_hint(machine, pod, requested)?;
            if !default.preferred && best.preferred {
                return Err(Error::DefaultHintNotPreferred);
            }
            best = default;
        }
        let Some(mut mask) = best.affinity.clone() else {
            return Err(Error::NoDefaultAffinity);
        };
        if let Some(node) = mask.ids().find(|id| !machine.contains_key(id)) {
            return Err(Error::UnknownAffinityNode { node });
        }
        if !affinity_satisfies(machine, &mask, requested) {
            let extended = self.extend_hint(machine, pod, requested, &mask)?;
            if !extended.preferred && best.preferred {
                return Err(Error::ExtendedHintNotPreferred);
            }
            mask = extended.affinity.clone().ok_or(Error::NoExtendedAffinity)?;
        }
        if violates_numa_allocations(machine, &mask) {
            return Err(Error::ViolatesNumaAllocation);
        }
        let bits: Vec<usize> = mask.ids().collect();
        let mut blocks = Vec::new();
        let mut machine = state.machine_state.clone();
        for (resource, &size) in requested {
            blocks.push(Block {
                numa_affinity: bits.clone(),
                resource: resource.clone(),
                size,
            });
            let reusable = self.pod_reusable(&pod.uid, &mask, resource);
            let remaining = size.saturating_sub(reusable);
            update_machine_state(&mut machine, &bits, resource, remaining);
        }
        self.update_pod_reusable(pod, container, &blocks);
        state.machine_state = machine;
        state.set_blocks(&pod.uid, &container.name, blocks.clone());
        update_init_containers_blocks(state, pod, container, &blocks);
        Ok(())
    }

    /// The best hint for the request when the Topology Manager gave no affinity (upstream
    /// `getDefaultHint`).
    fn default_hint(
        &self,
        machine: &NumaNodeMap,
        pod: &PodResources,
        requested: &BTreeMap<String, u64>,
    ) -> Result<TopologyHint, Error> {
        let hints = self.calculate_hints(machine, pod, requested);
        if hints.is_empty() {
            return Err(Error::NoDefaultAffinity);
        }
        let memory: Vec<TopologyHint> = hints.get(MEMORY).cloned().flatten().unwrap_or_default();
        Ok(find_best_hint(&memory))
    }

    /// The best hint containing `mask` that can hold the request (upstream
    /// `extendTopologyManagerHint`).
    fn extend_hint(
        &self,
        machine: &NumaNodeMap,
        pod: &PodResources,
        requested: &BTreeMap<String, u64>,
        mask: &NumaMask,
    ) -> Result<TopologyHint, Error> {
        let hints = self.calculate_hints(machine, pod, requested);
        let filtered: Vec<TopologyHint> = hints
            .get(MEMORY)
            .cloned()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .filter(|h| h.affinity.as_ref().is_some_and(|a| mask.is_subset_of(a)))
            .collect();
        if filtered.is_empty() {
            return Err(Error::NoExtendedAffinity);
        }
        Ok(find_best_hint(&filtered))
    }

    /// Returns a container's memory to its NUMA nodes (upstream `RemoveContainer`); a
    /// container without blocks is ignored. For a pod with pod-level memory, the pod's budget is
    /// released only with its last container.
    pub fn remove_container(&mut self, state: &mut MemoryState, pod_uid: &str, container: &str) {
        if let Some(entry) = state.pod_entries.get(pod_uid).cloned() {
            state.delete(pod_uid, container);
            if !state.entries.contains_key(pod_uid) {
                release(&mut state.machine_state, &entry.memory_blocks);
                state.pod_entries.remove(pod_uid);
            }
            return;
        }
        let Some(blocks) = state.blocks(pod_uid, container).cloned() else {
            return;
        };
        state.delete(pod_uid, container);
        release(&mut state.machine_state, &blocks);
    }

    /// Allocatable memory per NUMA node and resource (upstream `GetAllocatableMemory`), in node
    /// then resource order.
    pub fn allocatable_memory(&self, state: &MemoryState) -> Vec<Block> {
        let mut out = Vec::new();
        for (id, node) in &state.machine_state {
            for (resource, table) in &node.memory_map {
                if table.allocatable == 0 {
                    continue;
                }
                out.push(Block {
                    numa_affinity: vec![*id],
                    resource: resource.clone(),
                    size: table.allocatable,
                });
            }
        }
        out
    }

    /// Pod-level hints (PodLevelResourceManagers, pod scope; upstream `GetPodTopologyHints` for
    /// a pod that sets `.spec.resources`): from the pod's budget (see [`pod_budget`]). A budget
    /// the exclusive containers use up yields an empty hint list per memory kind, which the
    /// Topology Manager rejects.
    pub fn get_pod_level_topology_hints(
        &self,
        state: &MemoryState,
        pod: &PodResources,
        budget: &BTreeMap<String, u64>,
    ) -> Option<ProviderHints> {
        if !pod.guaranteed {
            return None;
        }
        if validate_pod_scope_resources(pod, budget).is_err() {
            return Some(
                budget
                    .keys()
                    .map(|r| (r.clone(), Some(Vec::new())))
                    .collect(),
            );
        }
        if budget.is_empty() {
            return None;
        }
        for container in pod.all_containers() {
            if let Some(blocks) = state.blocks(&pod.uid, &container.name) {
                return regenerate_hints(blocks, budget);
            }
        }
        Some(self.calculate_hints(&state.machine_state, pod, budget))
    }

    /// Allocates a pod's whole memory budget on one NUMA-aligned set of nodes and partitions it
    /// (PodLevelResourceManagers, pod scope; upstream `AllocatePod`): init and app containers
    /// that request memory get exclusive slices of the budget; sidecars keep theirs for the pod's
    /// life; a regular init container without requests may use everything not held by sidecars
    /// before it; the rest is the pod shared pool, given to every other container. The budget is
    /// recorded as the pod's entry and taken from the machine once.
    ///
    /// `budget` is the pod's `.spec.resources` memory and hugepages requests in bytes; the
    /// caller passes empty requests for containers that are not Guaranteed on their own.
    pub fn allocate_pod(
        &mut self,
        state: &mut MemoryState,
        pod: &PodResources,
        budget: &BTreeMap<String, u64>,
        hint: &TopologyHint,
    ) -> Result<(), Error> {
        if !pod.guaranteed {
            return Ok(());
        }
        validate_pod_scope_resources(pod, budget)?;
        let machine = &state.machine_state;
        let mut best = hint.clone();
        if best.affinity.is_none() {
            let default = self.default_hint(machine, pod, budget)?;
            if !default.preferred && best.preferred {
                return Err(Error::DefaultHintNotPreferred);
            }
            best = default;
        }
        let Some(mut mask) = best.affinity.clone() else {
            return Err(Error::NoDefaultAffinity);
        };
        if let Some(node) = mask.ids().find(|id| !machine.contains_key(id)) {
            return Err(Error::UnknownAffinityNode { node });
        }
        if !affinity_satisfies(machine, &mask, budget) {
            let extended = self.extend_hint(machine, pod, budget, &mask)?;
            if !extended.preferred && best.preferred {
                return Err(Error::ExtendedHintNotPreferred);
            }
            mask = extended.affinity.clone().ok_or(Error::NoExtendedAffinity)?;
        }
        if violates_numa_allocations(machine, &mask) {
            return Err(Error::ViolatesNumaAllocation);
        }
        let bits: Vec<usize> = mask.ids().collect();
        let blocks_of = |amounts: &BTreeMap<String, u64>| -> Vec<Block> {
            amounts
                .iter()
                .filter(|(_, size)| **size > 0)
                .map(|(resource, &size)| Block {
                    numa_affinity: bits.clone(),
                    resource: resource.clone(),
                    size,
                })
                .collect()
        };
        let mut exclusive: BTreeMap<&str, Vec<Block>> = BTreeMap::new();
        let mut sidecars: BTreeMap<String, u64> = BTreeMap::new();
        let remaining_after = |taken: &BTreeMap<String, u64>| -> BTreeMap<String, u64> {
            budget
                .iter()
                .map(|(r, &total)| {
                    (
                        r.clone(),
                        total.wrapping_sub(taken.get(r).copied().unwrap_or(0)),
                    )
                })
                .collect()
        };
        for c in &pod.init_containers {
            if c.requests.is_empty() {
                if !c.restartable {
                    exclusive.insert(&c.name, blocks_of(&remaining_after(&sidecars)));
                }
                continue;
            }
            exclusive.insert(&c.name, blocks_of(&c.requests));
            if c.restartable {
                for (r, &v) in &c.requests {
                    let slot = sidecars.entry(r.clone()).or_insert(0);
                    *slot = slot.wrapping_add(v);
                }
            }
        }
        let mut pool = remaining_after(&sidecars);
        for c in &pod.containers {
            if c.requests.is_empty() {
                continue;
            }
            for (r, &v) in &c.requests {
                if v > 0 {
                    let slot = pool.entry(r.clone()).or_insert(0);
                    *slot = slot.wrapping_sub(v);
                }
            }
            exclusive.insert(&c.name, blocks_of(&c.requests));
        }
        let shared = blocks_of(&pool);
        let mut machine = state.machine_state.clone();
        for (resource, &size) in budget {
            update_machine_state(&mut machine, &bits, resource, size);
        }
        state.pod_entries.insert(
            pod.uid.clone(),
            crate::state::PodEntry {
                memory_blocks: budget
                    .iter()
                    .map(|(resource, &size)| Block {
                        numa_affinity: bits.clone(),
                        resource: resource.clone(),
                        size,
                    })
                    .collect(),
            },
        );
        for c in pod.all_containers() {
            let blocks = exclusive
                .get(c.name.as_str())
                .cloned()
                .unwrap_or_else(|| shared.clone());
            state.set_blocks(&pod.uid, &c.name, blocks);
        }
        state.machine_state = machine;
        Ok(())
    }

    /// Upstream `updatePodReusableMemory`: forget other pods; an init container's blocks become
    /// reusable; an app container's blocks use reusable memory up.
    fn update_pod_reusable(
        &mut self,
        pod: &PodResources,
        container: &ContainerResources,
        blocks: &[Block],
    ) {
        self.reusable.retain(|uid, _| uid == &pod.uid);
        if pod.is_regular_init_container(&container.name) {
            let per_pod = self.reusable.entry(pod.uid.clone()).or_default();
            for block in blocks {
                let mask = NumaMask::from_ids(block.numa_affinity.iter().copied());
                let slot = per_pod
                    .entry(mask)
                    .or_default()
                    .entry(block.resource.clone())
                    .or_insert(0);
                if block.size > *slot {
                    *slot = block.size;
                }
            }
            return;
        }
        for block in blocks {
            let mask = NumaMask::from_ids(block.numa_affinity.iter().copied());
            if let Some(slot) = self
                .reusable
                .get_mut(&pod.uid)
                .and_then(|m| m.get_mut(&mask))
                .and_then(|r| r.get_mut(&block.resource))
                && *slot != 0
            {
                *slot = slot.saturating_sub(block.size);
            }
        }
    }
}

/// A pod's memory budget from its `.spec.resources` requests: memory and hugepages in bytes,
/// positive amounts only (upstream `getPodRequestedResources` with pod-level resources).
pub fn pod_budget(
    requests: &BTreeMap<String, allot_quantity::Quantity>,
) -> Result<BTreeMap<String, u64>, Error> {
    let mut budget = BTreeMap::new();
    for (resource, quantity) in requests {
        if !crate::state::is_managed_resource(resource) {
            continue;
        }
        let value = quantity.as_i64().ok_or_else(|| Error::QuantityNotInt64 {
            resource: resource.clone(),
        })?;
        if value > 0 {
            budget.insert(resource.clone(), value as u64);
        }
    }
    Ok(budget)
}

/// Upstream `validatePodScopeResources`: the exclusive requests must leave a non-empty pod shared
/// pool whenever some container needs it, and every exclusive regular init container must fit
/// in what the sidecars started before it leave. Memory kinds are checked in name order.
pub fn validate_pod_scope_resources(
    pod: &PodResources,
    budget: &BTreeMap<String, u64>,
) -> Result<(), Error> {
    let fail = |message: String| Err(Error::EmptyPodSharedPool { message });
    let mut long_running: BTreeMap<&str, u64> = BTreeMap::new();
    let mut has_shared = false;
    for c in &pod.init_containers {
        if !c.restartable {
            if !c.requests.is_empty() {
                for (resource, &total) in budget {
                    let pool = total
                        .wrapping_sub(long_running.get(resource.as_str()).copied().unwrap_or(0));
                    let wanted = c.requests.get(resource).copied().unwrap_or(0);
                    if wanted > pool {
                        return fail(format!(
                            "pod rejected, largest exclusive init container requests {wanted} of {resource}, but only {pool} available"
                        ));
                    }
                }
            } else {
                for (resource, &total) in budget {
                    if long_running.get(resource.as_str()).copied().unwrap_or(0) >= total {
                        return fail(format!(
                            "pod rejected, pod has shared init containers but no {resource} available for them"
                        ));
                    }
                }
            }
            continue;
        }
        if c.requests.is_empty() {
            has_shared = true;
            continue;
        }
        for (resource, &v) in &c.requests {
            let slot = long_running.entry(resource).or_insert(0);
            *slot = slot.wrapping_add(v);
        }
    }
    for c in &pod.containers {
        if c.requests.is_empty() {
            has_shared = true;
            continue;
        }
        for (resource, &v) in &c.requests {
            let slot = long_running.entry(resource).or_insert(0);
            *slot = slot.wrapping_add(v);
        }
    }
    if has_shared {
        for (resource, &total) in budget {
            if long_running.get(resource.as_str()).copied().unwrap_or(0) >= total {
                return fail(format!(
                    "pod rejected, sum of exclusive container {resource} requests equals pod budget, leaving no memory for shared containers"
                ));
            }
        }
    }
    Ok(())
}

/// Applies an assignment's blocks to the expected machine state at start-up (upstream
/// `updateExpectedMachineState`).
fn apply_expected(
    expected: &mut NumaNodeMap,
    blocks: &[Block],
    pod: &str,
    container: &str,
) -> Result<(), Error> {
    for block in blocks {
        let mut remaining = block.size;
        for node_id in &block.numa_affinity {
            let Some(node) = expected.get_mut(node_id) else {
                return Err(Error::AssignmentUnknownNuma {
                    pod: pod.to_string(),
                    container: container.to_string(),
                });
            };
            node.number_of_assignments += 1;
            node.cells = block.numa_affinity.clone();
            let Some(table) = node.memory_map.get_mut(&block.resource) else {
                return Err(Error::AssignmentUnknownResource {
                    pod: pod.to_string(),
                    container: container.to_string(),
                });
            };
            take(table, &mut remaining);
        }
    }
    Ok(())
}

/// Returns blocks to their NUMA nodes (upstream `releaseMemory`).
fn release(machine: &mut NumaNodeMap, blocks: &[Block]) {
    for block in blocks {
        let mut released = block.size;
        for id in &block.numa_affinity {
            let Some(node) = machine.get_mut(id) else {
                continue;
            };
            node.number_of_assignments -= 1;
            if node.number_of_assignments == 0 {
                node.cells = vec![*id];
            }
            if released == 0 {
                continue;
            }
            let Some(table) = node.memory_map.get_mut(&block.resource) else {
                continue;
            };
            if table.reserved == 0 {
                continue;
            }
            let give = table.reserved.min(released);
            table.reserved -= give;
            table.free = table.free.wrapping_add(give);
            released -= give;
        }
    }
}

/// Takes up to `remaining` bytes from a node's free memory (the walk upstream repeats in
/// `updateMachineState` and `validateState`).
fn take(table: &mut MemoryTable, remaining: &mut u64) {
    if *remaining == 0 || table.free == 0 {
        return;
    }
    let used = table.free.min(*remaining);
    table.reserved = table.reserved.wrapping_add(used);
    table.free -= used;
    *remaining -= used;
}

/// Upstream `updateMachineState`: every node of the group counts the assignment and joins the
/// group; memory is taken from the nodes in ascending order.
fn update_machine_state(machine: &mut NumaNodeMap, bits: &[usize], resource: &str, size: u64) {
    let mut remaining = size;
    for id in bits {
        let Some(node) = machine.get_mut(id) else {
            continue;
        };
        node.number_of_assignments += 1;
        node.cells = bits.to_vec();
        if remaining == 0 {
            continue;
        }
        if let Some(table) = node.memory_map.get_mut(resource) {
            take(table, &mut remaining);
        }
    }
}

/// Upstream `updateInitContainersMemoryBlocks`: the memory a later container reused is taken
/// off the earlier regular init containers' blocks (which can drop to size 0), so the sizes of
/// all containers add up to what the pod holds.
fn update_init_containers_blocks(
    state: &mut MemoryState,
    pod: &PodResources,
    container: &ContainerResources,
    blocks: &[Block],
) {
    for block in blocks {
        let mut size = block.size;
        for init in &pod.init_containers {
            if init.name == container.name || size == 0 {
                break;
            }
            if init.restartable {
                continue;
            }
            let Some(mut init_blocks) = state.blocks(&pod.uid, &init.name).cloned() else {
                continue;
            };
            if init_blocks.is_empty() {
                continue;
            }
            for init_block in init_blocks.iter_mut() {
                if init_block.size == 0
                    || init_block.resource != block.resource
                    || NumaMask::from_ids(init_block.numa_affinity.iter().copied())
                        != NumaMask::from_ids(block.numa_affinity.iter().copied())
                {
                    continue;
                }
                if init_block.size > size {
                    init_block.size -= size;
                    size = 0;
                } else {
                    size -= init_block.size;
                    init_block.size = 0;
                }
            }
            state.set_blocks(&pod.uid, &init.name, init_blocks);
        }
    }
}

/// Upstream `isAffinitySatisfyRequest`: the free memory of the mask's nodes covers every request.
fn affinity_satisfies(
    machine: &NumaNodeMap,
    mask: &NumaMask,
    requested: &BTreeMap<String, u64>,
) -> bool {
    requested.iter().all(|(resource, &size)| {
        let free: u128 = mask
            .ids()
            .map(|id| {
                machine
                    .get(&id)
                    .map(|n| u128::from(n.table(resource).free))
                    .unwrap_or(0)
            })
            .sum();
        free >= u128::from(size)
    })
}

/// Upstream `isAffinityViolatingNUMAAllocations`: a multi-node mask may not use a node that
/// holds a single-node allocation or belongs to a different group.
fn violates_numa_allocations(machine: &NumaNodeMap, mask: &NumaMask) -> bool {
    let bits: Vec<usize> = mask.ids().collect();
    if bits.len() == 1 {
        return false;
    }
    bits.iter().any(|id| {
        machine.get(id).is_some_and(|node| {
            node.number_of_assignments != 0
                && (node.cells.len() == 1 || !groups_equal(&node.cells, &bits))
        })
    })
}

/// Upstream `findBestHint`: preferred over not preferred, then narrower; the first wins ties.
fn find_best_hint(hints: &[TopologyHint]) -> TopologyHint {
    let mut best = TopologyHint::default();
    for hint in hints {
        let Some(best_mask) = best.affinity.as_ref() else {
            best = hint.clone();
            continue;
        };
        if hint.preferred && !best.preferred {
            best = hint.clone();
            continue;
        }
        if hint.preferred == best.preferred
            && hint
                .affinity
                .as_ref()
                .is_some_and(|m| m.is_narrower_than(best_mask))
        {
            best = hint.clone();
        }
    }
    best
}

/// Upstream `regenerateHints`: a container that already has blocks gets them back as its only,
/// preferred hints, unless they no longer match its requests (then `None`).
fn regenerate_hints(blocks: &[Block], requested: &BTreeMap<String, u64>) -> Option<ProviderHints> {
    let mut hints: BTreeMap<String, Vec<TopologyHint>> =
        requested.keys().map(|r| (r.clone(), Vec::new())).collect();
    if blocks.len() != requested.len() {
        return None;
    }
    for block in blocks {
        let wanted = requested.get(&block.resource)?;
        if block.size != *wanted {
            return None;
        }
        let mask = NumaMask::from_ids(block.numa_affinity.iter().copied());
        hints
            .entry(block.resource.clone())
            .or_default()
            .push(TopologyHint::new(mask, true));
    }
    Some(hints.into_iter().map(|(k, v)| (k, Some(v))).collect())
}

/// Calls `f` with every non-empty subset of `ids`: by size, then in lexicographic order of
/// positions (upstream `bitmask.IterateBitMasks`).
fn for_each_subset(ids: &[usize], mut f: impl FnMut(&[usize])) {
    fn go(
        ids: &[usize],
        start: usize,
        size: usize,
        acc: &mut Vec<usize>,
        f: &mut dyn FnMut(&[usize]),
    ) {
        if acc.len() == size {
            f(acc);
            return;
        }
        for i in start..ids.len() {
            acc.push(ids[i]);
            go(ids, i + 1, size, acc, f);
            acc.pop();
        }
    }
    let mut acc = Vec::new();
    for size in 1..=ids.len() {
        go(ids, 0, size, &mut acc, &mut f);
    }
}

/// The Memory Manager policy (`memoryManagerPolicy`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Policy {
    /// `None`: no hints, no allocation.
    None,
    /// `Static`.
    Static(StaticPolicy),
}

impl Policy {
    /// The name in the kubelet configuration and the checkpoint.
    pub fn name(&self) -> &'static str {
        match self {
            Policy::None => "None",
            Policy::Static(_) => StaticPolicy::NAME,
        }
    }

    /// See [`StaticPolicy::start`]; None accepts any state.
    pub fn start(&self, state: &mut MemoryState) -> Result<(), Error> {
        match self {
            Policy::None => Ok(()),
            Policy::Static(p) => p.start(state),
        }
    }

    /// See [`StaticPolicy::get_topology_hints`]; None has no preference.
    pub fn get_topology_hints(
        &self,
        state: &MemoryState,
        pod: &PodResources,
        container: &ContainerResources,
    ) -> Option<ProviderHints> {
        match self {
            Policy::None => None,
            Policy::Static(p) => p.get_topology_hints(state, pod, container),
        }
    }

    /// See [`StaticPolicy::get_pod_topology_hints`]; None has no preference.
    pub fn get_pod_topology_hints(
        &self,
        state: &MemoryState,
        pod: &PodResources,
    ) -> Option<ProviderHints> {
        match self {
            Policy::None => None,
            Policy::Static(p) => p.get_pod_topology_hints(state, pod),
        }
    }

    /// See [`StaticPolicy::allocate`]; None allocates nothing.
    pub fn allocate(
        &mut self,
        state: &mut MemoryState,
        pod: &PodResources,
        container: &ContainerResources,
        hint: &TopologyHint,
    ) -> Result<(), Error> {
        match self {
            Policy::None => Ok(()),
            Policy::Static(p) => p.allocate(state, pod, container, hint),
        }
    }

    /// See [`StaticPolicy::remove_container`].
    pub fn remove_container(&mut self, state: &mut MemoryState, pod_uid: &str, container: &str) {
        if let Policy::Static(p) = self {
            p.remove_container(state, pod_uid, container);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hugepages_names_are_binary_si() {
        assert_eq!(hugepages_resource_name(2048), "hugepages-2Mi");
        assert_eq!(hugepages_resource_name(1048576), "hugepages-1Gi");
        assert_eq!(hugepages_resource_name(64), "hugepages-64Ki");
    }

    #[test]
    fn subsets_in_upstream_order() {
        let mut seen = Vec::new();
        for_each_subset(&[0, 1, 2], |s| seen.push(s.to_vec()));
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
    fn new_requires_reserved_memory() {
        assert_eq!(
            StaticPolicy::new(vec![], SystemReserved::new()),
            Err(Error::NoSystemReservedMemory)
        );
        let reserved = SystemReserved::from([(0, BTreeMap::from([(MEMORY.to_string(), 1)]))]);
        assert!(StaticPolicy::new(vec![], reserved).is_ok());
    }
}
