//! The kubelet's Topology Manager as a pure engine: NUMA masks, topology hints, the four
//! policies with their options, the hint merge, and container- or pod-scoped admission.
//!
//! Key design decision: the merge is a function of plain values
//! (`merge(policy, options, numa_info, providers_hints)`), and hint providers are a trait the
//! CPU, memory and device managers implement, generic over the pod and container types, so this
//! crate depends on no object model and does no I/O. NUMA masks are growable bitsets, so there is
//! no 64-node limit; the merge folds resources one at a time instead of enumerating every
//! combination, which keeps it polynomial in the number of resources. The cost: the merge is not
//! a line-by-line port, so a property test checks it against upstream's enumeration.

#![deny(missing_docs)]

pub mod document;
mod error;
mod hint;
mod manager;
mod mask;
mod merge;
mod numa;
mod options;

pub use document::{Decision, DocumentError, MAX_NUMA_NODE_ID, decide};
pub use error::Error;
pub use hint::{ProviderHints, TopologyHint};
pub use manager::{
    Admission, HintProvider, Rejection, TOPOLOGY_AFFINITY_ERROR, TopologyAffinityError,
    TopologyManager,
};
pub use mask::NumaMask;
pub use merge::{filter_providers_hints, merge};
pub use numa::NumaInfo;
pub use options::{
    DEFAULT_MAX_ALLOWABLE_NUMA_NODES, MAX_ALLOWABLE_NUMA_NODES, PREFER_CLOSEST_NUMA_NODES, Policy,
    PolicyOptions, Scope,
};
