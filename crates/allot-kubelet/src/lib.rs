//! Kubelet node admission: QoS classes, the CPU, Memory, Device and Topology Managers driven
//! together as the kubelet drives them, pod-level resource managers, the managers' checkpoints
//! on disk, and their metrics.
//!
//! Key design decision: [`Node`] is a value holding the managers and their state; admitting a pod
//! is a method call that returns a decision (rejections are answers with the kubelet's reason and
//! message plus an explanation, not errors). Disk I/O is confined to [`store`] and [`run`], which
//! read checkpoints before start-up and write them atomically after admission, so everything
//! else is testable without files. The cost is that checkpoints are written once per run rather
//! than after every state change as the kubelet does; a crash mid-run loses the run, never a file.

#![deny(missing_docs)]

pub mod admission;
pub mod devices;
pub mod metrics;
pub mod picture;
pub mod qos;
pub mod scenario;
pub mod store;

use std::path::{Path, PathBuf};

pub use admission::{Checkpoints, ContainerResult, CpuPolicy, Node, PodAdmission};
pub use qos::{QosClass, compute_pod_qos};
pub use scenario::{NodeState, Scenario};

use allot_kubelet_config::ValidateOptions;
use serde::Serialize;

/// Errors of node admission: bad input or a node that cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KubeletError {
    /// The scenario could not be read.
    #[error("{0}")]
    Scenario(String),
    /// The kubelet configuration is invalid.
    #[error("invalid kubelet configuration: {0}")]
    Config(#[from] allot_kubelet_config::ConfigError),
    /// A manager refused to start (a corrupt or mismatched checkpoint, an impossible
    /// reservation); `action` says what to do.
    #[error("start {manager} manager error: {message}; {action}")]
    Start {
        /// Which manager.
        manager: &'static str,
        /// What is wrong.
        message: String,
        /// What to do about it.
        action: String,
    },
    /// Reading or writing a checkpoint file failed.
    #[error("{}: {message}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The operating system's message.
        message: String,
    },
}

impl KubeletError {
    /// Whether this is a start-up refusal (as opposed to bad input or I/O).
    pub fn is_start_error(&self) -> bool {
        matches!(self, KubeletError::Start { .. })
    }
}

/// The managers' state after admission, in the checkpoint shapes.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StateReport {
    /// `cpu_manager_state`.
    pub cpu_manager: serde_json::Value,
    /// `memory_manager_state`.
    pub memory_manager: serde_json::Value,
}

/// The result of admitting a scenario's pods.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// One decision per pod, in document order.
    pub pods: Vec<PodAdmission>,
    /// The state afterwards.
    pub state: StateReport,
}

/// Starts a node from a scenario (checkpoints from `state_dir` when given, else from the
/// scenario's `NodeState`), admits every pod in order, and, with `state_dir`, writes the
/// checkpoints back atomically.
pub fn run(
    scenario: &Scenario,
    state_dir: Option<&Path>,
    relax: ValidateOptions,
) -> Result<(Node, Report), KubeletError> {
    let mut checkpoints = Checkpoints::default();
    match state_dir {
        Some(dir) => {
            checkpoints.cpu = store::read(dir, store::CPU_MANAGER_STATE)?;
            checkpoints.cpu_origin = dir.join(store::CPU_MANAGER_STATE).display().to_string();
            checkpoints.memory = store::read(dir, store::MEMORY_MANAGER_STATE)?;
            checkpoints.memory_origin = dir.join(store::MEMORY_MANAGER_STATE).display().to_string();
        }
        None => {
            let state = scenario.node_state.as_ref();
            checkpoints.cpu = state
                .and_then(|s| s.cpu_manager.as_ref())
                .map(|v| serde_json::to_vec(v).unwrap_or_default());
            checkpoints.cpu_origin = "NodeState.cpuManager".into();
            checkpoints.memory = state
                .and_then(|s| s.memory_manager.as_ref())
                .map(|v| serde_json::to_vec(v).unwrap_or_default());
            checkpoints.memory_origin = "NodeState.memoryManager".into();
        }
    }
    let mut node = Node::start(
        scenario.topology.clone(),
        &scenario.config,
        relax,
        &checkpoints,
    )?;
    let pods = scenario.pods.iter().map(|p| node.admit(p)).collect();
    let cpu = node.cpu_checkpoint();
    let mem = node.memory_checkpoint();
    if let Some(dir) = state_dir {
        store::write_atomic(dir, store::CPU_MANAGER_STATE, &cpu.to_json())?;
        store::write_atomic(dir, store::MEMORY_MANAGER_STATE, mem.to_json().as_bytes())?;
    }
    let report = Report {
        pods,
        state: StateReport {
            cpu_manager: serde_json::to_value(&cpu).unwrap_or_default(),
            memory_manager: serde_json::to_value(&mem).unwrap_or_default(),
        },
    };
    Ok((node, report))
}
