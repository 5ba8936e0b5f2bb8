//! The kubelet's CPU Manager: the static policy's topology-aware CPU pick (upstream's
//! `takeByTopologyNUMAPacked` / `takeByTopologyNUMADistributed`) and the static policy itself.
//!
//! Key design decision: the CPU pick works on bitsets (`allot_topology::CpuSet`) against masks
//! precomputed once per machine (`allot_topology::CpuTopology`), reproducing upstream's orderings
//! step by step (including its quirks) so the answers are the same, only faster. The engine does
//! no I/O.

#![deny(missing_docs)]

pub mod checkpoint;
pub mod cpu_assignment;
pub mod policy_none;
pub mod policy_static;
pub mod state;

pub use cpu_assignment::{
    CpuAccumulator, CpuSortingStrategy, TakeError, take_by_topology_numa_distributed,
    take_by_topology_numa_packed,
};
