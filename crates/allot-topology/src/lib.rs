//! Machine topology for the kubelet's resource managers: CPU sets, the `NodeTopology` document,
//! a precomputed query view (`CpuTopology`), and Linux sysfs discovery.
//!
//! Key design decision: every set of CPUs (and of core, socket, NUMA ids) is a `CpuSet`, a bitset
//! over `u64` words with no size limit, and `CpuTopology` precomputes one mask per core, socket,
//! NUMA node and uncore cache. Topology questions become word-wise AND and popcount, which is
//! what makes the CPU-assignment engine fast. The cost is that ids must stay small
//! (`MAX_CPU_ID`); real machines number CPUs densely, so this holds. The pure types do no I/O;
//! only the `sysfs` module reads files.

#![deny(missing_docs)]

mod bytesize;
mod cpu_topology;
mod cpuset;
mod node;
pub mod sysfs;

pub use bytesize::ByteSize;
pub use cpu_topology::{Counts, CpuLocation, CpuTopology, Level, Relation};
pub use cpuset::{CpuSet, Iter, MAX_CPU_ID};
pub use node::{
    API_VERSION, CpuInfo, DeclaredCounts, Device, KIND, MachineInfoHugePages, MachineInfoNode,
    Metadata, NodeTopology, NumaDistance, NumaNode,
};
pub use sysfs::{DiscoverError, discover};

/// Errors from parsing and validating topology data.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// A CPU list (Linux list format) could not be parsed.
    #[error("invalid CPU list {input:?}: {reason}")]
    CpuList {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A byte quantity could not be parsed.
    #[error("invalid byte quantity {input:?}: {reason}")]
    ByteSize {
        /// The text given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The document is not a `NodeTopology`.
    #[error(
        "expected apiVersion {API_VERSION} kind {KIND}, got apiVersion {api_version:?} kind {kind:?}"
    )]
    WrongKind {
        /// The apiVersion found.
        api_version: String,
        /// The kind found.
        kind: String,
    },
    /// An id appears twice.
    #[error("duplicate {what} id {id}")]
    Duplicate {
        /// What kind of object (cpu, NUMA node, device).
        what: &'static str,
        /// The repeated id.
        id: String,
    },
    /// An id is beyond what a `CpuSet` holds.
    #[error("{what} id {id} exceeds the maximum {MAX_CPU_ID}")]
    IdTooLarge {
        /// What kind of object.
        what: &'static str,
        /// The id.
        id: u32,
    },
    /// The YAML/JSON text could not be decoded.
    #[error("cannot decode NodeTopology: {0}")]
    Decode(String),
    /// The value could not be encoded.
    #[error("cannot encode NodeTopology: {0}")]
    Encode(String),
    /// A sysfs file or directory could not be read.
    #[error("cannot read {path}: {message}")]
    Io {
        /// The path.
        path: String,
        /// The operating system's message.
        message: String,
    },
    /// A sysfs file holds something unexpected.
    #[error("unexpected content in {path}: {content:?} ({reason})")]
    Sysfs {
        /// The path.
        path: String,
        /// What the file holds (trimmed).
        content: String,
        /// What was expected.
        reason: String,
    },
    /// Discovery found no online CPU.
    #[error("no online CPUs found under {path}")]
    NoCpus {
        /// The CPU directory searched.
        path: String,
    },
}
