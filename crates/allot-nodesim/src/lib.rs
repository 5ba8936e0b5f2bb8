//! The kubelet side of allot's simulation: one [`NodeAgent`] per Node, an
//! `allot_runtime::Controller` over the shared store.
//!
//! Key design decision: the agent owns a started `allot_kubelet::Node` (the CPU, Memory, Device
//! and Topology Managers with their state) and keeps it across pods, exactly as a kubelet keeps
//! its managers' state, while everything other loops must see (pod phase and conditions, the
//! `allot.dev/resources` annotation, claim `status.devices`, container
//! `allocatedResourcesStatus`) is written to the store. A pod bound to the node is admitted only
//! once every ResourceClaim it uses is allocated and reserved for it (or its PodGroup); DRA
//! drivers are modelled as always present and always succeeding, except where the allocation
//! says their node operations are skipped. The cost: manager state, prepared claims, device
//! health report times and the device metadata files live only in the agent; they are
//! rebuilt by replaying the run, never from the store alone.

#![deny(missing_docs)]

mod agent;
mod claims;
mod fit;
mod health;
pub mod lifecycle;
mod metadata;
mod podresources;

#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

pub use agent::{MetadataLog, NodeAgent};
pub use health::DEVICE_HEALTH_ANNOTATION;
pub use lifecycle::{EXIT_CODE_ANNOTATION, RUN_DURATION_ANNOTATION};
pub use metadata::{CONTAINER_DIR, METADATA_API_V1ALPHA1, METADATA_API_V1BETA1};
pub use podresources::RESOURCES_ANNOTATION;

use allot_kubelet_config::KubeletConfiguration;
use allot_topology::NodeTopology;

/// The declared node feature that lets the kubelet skip DRA node operations.
pub const DRA_OPTIONAL_NODE_OPERATIONS: &str = "DRAOptionalNodeOperations";

/// The kubelet's health timeout when a driver does not set one (upstream's 30 seconds).
pub const DEFAULT_HEALTH_TIMEOUT_SECONDS: u64 = 30;

/// The kubelet's DRA feature gates the agent honours.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeFeatures {
    /// `ResourceHealthStatus` (beta, on): `allocatedResourcesStatus` in container statuses.
    pub resource_health_status: bool,
    /// `DRAResourceClaimDeviceStatus` (on): drivers write `status.devices` of claims.
    pub resource_claim_device_status: bool,
    /// `DRANodeAllocatableResources`: pods get `status.nodeAllocatableResourceClaimStatuses`.
    /// On by default because the API server only keeps `nodeAllocatableResources` in
    /// ResourceSlices when the gate is on, so a slice that has the field implies the gate.
    pub node_allocatable_resources: bool,
    /// `DRAOptionalNodeOperations` (alpha, off): the kubelet honours `skipNodeOperations`
    /// and declares the feature in the Node's `status.declaredFeatures`.
    pub optional_node_operations: bool,
}

impl Default for NodeFeatures {
    fn default() -> Self {
        NodeFeatures {
            resource_health_status: true,
            resource_claim_device_status: true,
            node_allocatable_resources: true,
            optional_node_operations: false,
        }
    }
}

/// Everything a node agent is built from.
#[derive(Debug, Clone)]
pub struct NodeAgentConfig {
    /// The Node's name.
    pub node_name: String,
    /// The machine.
    pub topology: NodeTopology,
    /// The kubelet configuration.
    pub kubelet_config: KubeletConfiguration,
    /// Feature gates.
    pub features: NodeFeatures,
    /// Features the node declares besides those its gates imply (the Node object's
    /// `status.declaredFeatures` counts as well).
    pub declared_features: Vec<String>,
    /// Health timeout per driver name, in seconds; drivers not listed use
    /// [`DEFAULT_HEALTH_TIMEOUT_SECONDS`].
    pub driver_health_timeout: BTreeMap<String, u64>,
    /// The DeviceMetadata API versions written into each metadata file, in stream order
    /// (default: v1beta1, then v1alpha1).
    pub metadata_versions: Vec<String>,
    /// The kubelet's checkpoints to restore at start (`cpu_manager_state`,
    /// `memory_manager_state`), as a restarted kubelet reads them; empty by default.
    pub checkpoints: allot_kubelet::Checkpoints,
}

impl NodeAgentConfig {
    /// A configuration with default features, no extra declared features, default health
    /// timeouts and both metadata versions.
    pub fn new(
        node_name: impl Into<String>,
        topology: NodeTopology,
        kubelet_config: KubeletConfiguration,
    ) -> Self {
        NodeAgentConfig {
            node_name: node_name.into(),
            topology,
            kubelet_config,
            features: NodeFeatures::default(),
            declared_features: Vec::new(),
            driver_health_timeout: BTreeMap::new(),
            metadata_versions: vec![
                METADATA_API_V1BETA1.to_string(),
                METADATA_API_V1ALPHA1.to_string(),
            ],
            checkpoints: allot_kubelet::Checkpoints::default(),
        }
    }
}

/// Why a node agent could not be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NodeSimError {
    /// The kubelet's managers refused to start on this machine and configuration.
    #[error("node {node}: kubelet cannot start: {message}")]
    Start {
        /// The node.
        node: String,
        /// The kubelet's error.
        message: String,
    },
    /// A metadata API version that the agent does not know.
    #[error("node {node}: unknown DeviceMetadata API version {version:?}")]
    MetadataVersion {
        /// The node.
        node: String,
        /// The version.
        version: String,
    },
}
