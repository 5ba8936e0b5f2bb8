//! The Memory Manager's state: per-NUMA-node memory tables and per-container memory blocks, in
//! the shapes (and JSON field names) of the kubelet's `memory_manager_state`.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

/// The resource name of regular memory.
pub const MEMORY: &str = "memory";
/// The prefix of hugepages resource names (`hugepages-2Mi`, `hugepages-1Gi`).
pub const HUGEPAGES_PREFIX: &str = "hugepages-";

/// Whether `name` is memory or a hugepages size: the resources the Memory Manager manages.
pub fn is_managed_resource(name: &str) -> bool {
    name == MEMORY || name.starts_with(HUGEPAGES_PREFIX)
}

/// Memory of one kind on one NUMA node, in bytes (upstream `MemoryTable`). Missing fields
/// decode as zero, as Go's `encoding/json` leaves them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct MemoryTable {
    /// Everything the node has (`total`).
    #[serde(rename = "total")]
    pub total: u64,
    /// Reserved for the system through `reservedMemory`.
    pub system_reserved: u64,
    /// `total - systemReserved` (for memory, also minus hugepages).
    pub allocatable: u64,
    /// Given to containers.
    pub reserved: u64,
    /// Still available: `allocatable - reserved`.
    pub free: u64,
}

/// One NUMA node's state (upstream `NUMANodeState`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NumaNodeState {
    /// Memory blocks placed on this node; a container with memory and hugepages counts twice.
    /// Signed as upstream's `int`, which a removal of unknown blocks can drive below zero.
    #[serde(default)]
    pub number_of_assignments: i64,
    /// Resource name to memory table.
    #[serde(default, deserialize_with = "null_as_default")]
    pub memory_map: BTreeMap<String, MemoryTable>,
    /// The group of nodes this node is allocated with: just itself for single-node allocations,
    /// all of them for a cross-NUMA allocation.
    #[serde(default, deserialize_with = "null_as_default")]
    pub cells: Vec<usize>,
}

impl NumaNodeState {
    /// The table for `resource`, or an all-zero one when the node does not have it.
    pub fn table(&self, resource: &str) -> MemoryTable {
        self.memory_map.get(resource).copied().unwrap_or_default()
    }
}

/// NUMA node id to state (upstream `NUMANodeMap`).
pub type NumaNodeMap = BTreeMap<usize, NumaNodeState>;

/// An amount of one memory kind given to a container on a set of NUMA nodes (upstream `Block`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Block {
    /// The NUMA nodes, ascending.
    #[serde(default, deserialize_with = "null_as_default")]
    pub numa_affinity: Vec<usize>,
    /// `memory` or `hugepages-<size>`.
    #[serde(rename = "type", default, deserialize_with = "null_as_default")]
    pub resource: String,
    /// Bytes.
    #[serde(default)]
    pub size: u64,
}

/// Pod UID to container name to blocks (upstream `ContainerMemoryAssignments`).
pub type ContainerMemoryAssignments = BTreeMap<String, BTreeMap<String, Vec<Block>>>;

/// The memory a pod holds as a whole (pod-level resource managers): its NUMA-aligned budget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodEntry {
    /// The pod's blocks, one per memory kind.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub memory_blocks: Vec<Block>,
}

/// The whole state a policy reads and updates: the machine and the assignments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryState {
    /// Per-NUMA-node memory.
    #[serde(default, deserialize_with = "null_as_default")]
    pub machine_state: NumaNodeMap,
    /// Per-container blocks.
    #[serde(default, deserialize_with = "null_as_default")]
    pub entries: ContainerMemoryAssignments,
    /// Pod-level assignments (PodLevelResourceManagers), pod UID to entry.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub pod_entries: BTreeMap<String, PodEntry>,
}

impl MemoryState {
    /// The blocks of a container, if it has an assignment.
    pub fn blocks(&self, pod_uid: &str, container: &str) -> Option<&Vec<Block>> {
        self.entries.get(pod_uid).and_then(|c| c.get(container))
    }

    /// Records the blocks of a container.
    pub fn set_blocks(&mut self, pod_uid: &str, container: &str, blocks: Vec<Block>) {
        self.entries
            .entry(pod_uid.to_string())
            .or_default()
            .insert(container.to_string(), blocks);
    }

    /// Forgets a container's blocks, and the pod once it has none left.
    pub fn delete(&mut self, pod_uid: &str, container: &str) {
        if let Some(containers) = self.entries.get_mut(pod_uid) {
            containers.remove(container);
            if containers.is_empty() {
                self.entries.remove(pod_uid);
            }
        }
    }
}

/// Go's `encoding/json` decodes `null` into a zero value; so does this.
pub(crate) fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Upstream's `areGroupsEqual`: the same node ids, in any order.
pub fn groups_equal(a: &[usize], b: &[usize]) -> bool {
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    a.sort_unstable();
    b.sort_unstable();
    a == b
}

/// Upstream's `areMachineStatesEqual`: the same nodes, assignment counts, groups and resources;
/// equal total, systemReserved and allocatable per node; and free and reserved equal as sums
/// over each node's group (so any split of a cross-NUMA allocation inside its group is equal).
pub fn machine_states_equal(a: &NumaNodeMap, b: &NumaNodeMap) -> bool {
    if a.len() != b.len() {
        return false;
    }
    for (id, node_a) in a {
        let Some(node_b) = b.get(id) else {
            return false;
        };
        if node_a.number_of_assignments != node_b.number_of_assignments
            || !groups_equal(&node_a.cells, &node_b.cells)
            || node_a.memory_map.len() != node_b.memory_map.len()
        {
            return false;
        }
        for (resource, table_a) in &node_a.memory_map {
            let Some(table_b) = node_b.memory_map.get(resource) else {
                return false;
            };
            if table_a.total != table_b.total
                || table_a.system_reserved != table_b.system_reserved
                || table_a.allocatable != table_b.allocatable
            {
                return false;
            }
            let sums = |map: &NumaNodeMap| {
                node_a
                    .cells
                    .iter()
                    .fold((0u128, 0u128), |(free, reserved), cell| {
                        let t = map.get(cell).map(|n| n.table(resource)).unwrap_or_default();
                        (free + u128::from(t.free), reserved + u128::from(t.reserved))
                    })
            };
            if sums(a) != sums(b) {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(cells: Vec<usize>, free: u64, reserved: u64) -> NumaNodeState {
        NumaNodeState {
            number_of_assignments: 1,
            memory_map: BTreeMap::from([(
                MEMORY.to_string(),
                MemoryTable {
                    total: 10,
                    system_reserved: 0,
                    allocatable: 10,
                    reserved,
                    free,
                },
            )]),
            cells,
        }
    }

    #[test]
    fn machine_states_compare_free_and_reserved_per_group() {
        let a = NumaNodeMap::from([(0, node(vec![0, 1], 0, 10)), (1, node(vec![1, 0], 8, 2))]);
        let b = NumaNodeMap::from([(0, node(vec![0, 1], 4, 6)), (1, node(vec![0, 1], 4, 6))]);
        assert!(machine_states_equal(&a, &b));
        let c = NumaNodeMap::from([(0, node(vec![0, 1], 4, 6)), (1, node(vec![0, 1], 5, 5))]);
        assert!(!machine_states_equal(&a, &c));
    }

    #[test]
    fn delete_drops_empty_pods() {
        let mut state = MemoryState::default();
        state.set_blocks("pod", "a", vec![]);
        state.set_blocks("pod", "b", vec![]);
        state.delete("pod", "a");
        assert!(state.blocks("pod", "b").is_some());
        state.delete("pod", "b");
        assert!(state.entries.is_empty());
    }

    #[test]
    fn decodes_go_nulls() {
        let node: NumaNodeState =
            serde_json::from_str(r#"{"numberOfAssignments":0,"memoryMap":null,"cells":null}"#)
                .expect("valid");
        assert!(node.cells.is_empty() && node.memory_map.is_empty());
    }
}
