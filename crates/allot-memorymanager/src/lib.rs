//! The kubelet's Memory Manager as a pure engine: the Static policy's NUMA hints, allocation,
//! removal and start-up validation, and the `memory_manager_state` checkpoint.
//!
//! Key design decision: state in, decision out. Every call takes the [`MemoryState`] it reads
//! and updates (the machine's per-NUMA memory tables and the per-container blocks, in the
//! checkpoint's own shape) and a [`PodResources`] value the caller derives from the object
//! model (QoS class included), so the engine depends on no object model and does no I/O. The
//! cost: callers convert pods themselves, and the policy keeps upstream's one piece of hidden
//! memory (the current pod's reusable init-container memory) inside [`StaticPolicy`].

#![deny(missing_docs)]

mod checkpoint;
mod error;
mod manager;
mod pod;
mod policy;
mod reserved;
mod state;

pub use checkpoint::{
    CHECKPOINT_FILE, Checkpoint, CheckpointData, ReadOptions, checksum_v1, checksum_v2,
    data_checksum, decode_with,
};
pub use error::Error;
pub use manager::MemoryManager;
pub use pod::{ContainerResources, PodResources};
pub use policy::{
    HugePages, NumaNodeInfo, Policy, StaticPolicy, SystemReserved, hugepages_resource_name,
    pod_budget, validate_pod_scope_resources,
};
pub use reserved::{MemoryReservation, system_reserved_memory};
pub use state::{
    Block, ContainerMemoryAssignments, HUGEPAGES_PREFIX, MEMORY, MemoryState, MemoryTable,
    NumaNodeMap, NumaNodeState, PodEntry, groups_equal, is_managed_resource, machine_states_equal,
};
