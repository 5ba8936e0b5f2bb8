//! The kubelet's CPU Manager: the static policy's topology-aware CPU pick (upstream's
//! `takeByTopologyNUMAPacked` / `takeByTopologyNUMADistributed`) and the static policy itself.
//!
//! Key design decision: the CPU pick works on bitsets (`allot_topology::CpuSet`) against masks
//! precomputed once per machine (`allot_topology::CpuTopology`), reproducing upstream's orderings
//! step by step (including its quirks) so the answers are the same, only faster. The engine does
//! no I/O.
//!
//! Errors: unlike the one-enum-per-crate rule, the crate has three, one per layer, because each
//! layer is used on its own and carries upstream's wording for its layer:
//! [`cpu_assignment::TakeError`] (the CPU pick found no set; what `allot node take-cpus`
//! prints), [`policy_static::PolicyError`] (a policy refused to start or to allocate; it carries a
//! pick failure as its message and gives the kubelet's admission reason and message), and
//! [`checkpoint::CheckpointError`] (a `cpu_manager_state` checkpoint could not be restored).
//! Merging them would change public types other crates match on, so they stay apart.

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
