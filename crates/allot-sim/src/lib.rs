//! The control plane in one process: load a cluster and its workloads, run allot's controllers
//! over one in-memory store on a simulated clock, and report what Kubernetes would have done.
//!
//! Key design decision: the simulator owns no placement logic. It validates the input, fills an
//! [`allot_store::Store`], registers the controllers of the other crates (ResourceClaim
//! controller, scheduler, one node agent per node, device-taint eviction, pool status) in an
//! [`allot_runtime::Runtime`] in a fixed order, and plays the [`timeline::Timeline`] on the
//! simulated clock. Everything it reports is read back from the store, so the output is exactly
//! the objects' final state, and the same input gives the same bytes. The cost: whatever a
//! controller does not write into the store cannot be shown.

#![deny(missing_docs)]

pub mod answers;
pub mod capacity;
pub mod example;
pub mod fragmentation;
pub mod gangs;
pub mod generate;
pub mod input;
pub mod invariants;
pub mod memory;
pub mod output;
mod priority;
pub mod progress;
pub mod record;
pub mod report;
pub mod run;
pub(crate) mod scheduler_config;
pub mod scheduler_perf;
pub mod shape;
pub mod table;
pub mod timeline;
pub mod trace;
pub mod usage;
pub mod workloads;

pub use input::{Input, load_paths, load_texts};
pub use invariants::{Violation, check_invariants};
pub use run::{Outcome, Progress, run, run_moving, what_if};

/// One problem with the input, located in its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file.
    pub file: String,
    /// The line (0 when unknown).
    pub line: u32,
    /// The document's kind (empty when the document could not be read).
    pub kind: String,
    /// The object, `namespace/name` or `name`.
    pub object: String,
    /// The field path (empty when the problem is the whole document).
    pub field: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // An error about a whole file (it cannot be read) has no line.
        if self.line == 0 {
            write!(f, "{}:", self.file)?;
        } else {
            write!(f, "{}:{}:", self.file, self.line)?;
        }
        if !self.kind.is_empty() {
            write!(f, " {}", self.kind)?;
            if !self.object.is_empty() {
                write!(f, " {}", self.object)?;
            }
            f.write_str(":")?;
        }
        if !self.field.is_empty() {
            write!(f, " {}:", self.field)?;
        }
        let message: Vec<&str> = self.message.lines().map(str::trim_end).collect();
        write!(f, " {}", message.join(" "))
    }
}

/// Why a simulation could not run or finish.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SimError {
    /// The input is invalid; nothing ran.
    #[error("invalid input:\n{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Input(Vec<InputError>),
    /// An object of the input could not be stored.
    #[error("cannot create {key}: {message}")]
    Store {
        /// The object.
        key: String,
        /// The store's message.
        message: String,
    },
    /// A node agent could not start (its kubelet configuration does not fit its machine).
    #[error("node {node}: {message}")]
    Node {
        /// The node.
        node: String,
        /// Why.
        message: String,
    },
    /// The controllers kept waking each other without the clock moving.
    #[error(transparent)]
    Runtime(#[from] allot_runtime::RuntimeError),
}
