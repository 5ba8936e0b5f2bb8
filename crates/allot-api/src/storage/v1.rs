//! `storage.k8s.io/v1`: StorageClass, CSINode, CSIDriver, CSIStorageCapacity,
//! VolumeAttachment and VolumeAttributesClass.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Quantity;
use crate::core::v1::*;
use crate::meta::v1::{LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "storage.k8s.io/v1";

string_enum! {
    /// When claims of a StorageClass are bound and provisioned.
    pub enum VolumeBindingMode {
        /// `Immediate`.
        Immediate = "Immediate",
        /// `WaitForFirstConsumer`.
        WaitForFirstConsumer = "WaitForFirstConsumer",
    }
}

string_enum! {
    /// A mode in which a CSI driver's volumes may be used.
    pub enum VolumeLifecycleMode {
        /// `Persistent`.
        Persistent = "Persistent",
        /// `Ephemeral`.
        Ephemeral = "Ephemeral",
    }
}

string_enum! {
    /// Whether a CSI driver's volumes support ownership changes by fsGroup.
    pub enum FSGroupPolicy {
        /// `ReadWriteOnceWithFSType`.
        ReadWriteOnceWithFSType = "ReadWriteOnceWithFSType",
        /// `File`.
        File = "File",
        /// `None`.
        None = "None",
    }
}

/// A class of dynamically provisioned volumes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageClass {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Provisioner.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub provisioner: String,
    /// Parameters for the provisioner or driver.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub parameters: BTreeMap<String, String>,
    /// Reclaim policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reclaim_policy: Option<PersistentVolumeReclaimPolicy>,
    /// Mount options for volumes.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub mount_options: Vec<String>,
    /// Allow volume expansion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_volume_expansion: Option<bool>,
    /// Volume binding mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_binding_mode: Option<VolumeBindingMode>,
    /// Allowed topologies.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}

/// The CSI drivers installed on a node (named like the node).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSINode {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: CSINodeSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: CSINodeStatus,
}

/// A CSI volume driver deployed in the cluster and how Kubernetes talks to it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSIDriver {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: CSIDriverSpec,
}

/// Storage a StorageClass can still provision in a topology segment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSIStorageCapacity {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Node topology.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_topology: Option<LabelSelector>,
    /// The StorageClass.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub storage_class_name: String,
    /// The capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Quantity>,
    /// Maximum volume size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub maximum_volume_size: Option<Quantity>,
}

/// A request to attach a volume to a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeAttachment {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: VolumeAttachmentSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: VolumeAttachmentStatus,
}

/// Mutable parameters of a class of CSI volumes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeAttributesClass {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Driver name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver_name: String,
    /// Parameters for the provisioner or driver.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub parameters: BTreeMap<String, String>,
}

/// The CSI drivers of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSINodeSpec {
    /// Drivers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub drivers: Vec<CSINodeDriver>,
}

/// The observed state of a CSINode.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSINodeStatus {
    /// Storage health.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_health: Vec<StorageHealth>,
}

/// How Kubernetes uses a CSI driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSIDriverSpec {
    /// Attach required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_required: Option<bool>,
    /// Pod info on mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_info_on_mount: Option<bool>,
    /// Volume lifecycle modes.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_lifecycle_modes: Vec<VolumeLifecycleMode>,
    /// Storage capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_capacity: Option<bool>,
    /// Fs group policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_group_policy: Option<FSGroupPolicy>,
    /// Token requests.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub token_requests: Vec<TokenRequest>,
    /// Requires republish.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requires_republish: Option<bool>,
    /// Se linux mount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub se_linux_mount: Option<bool>,
    /// Node allocatable update period seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_allocatable_update_period_seconds: Option<i64>,
    /// Service account token in secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_token_in_secrets: Option<bool>,
    /// Prevent pod scheduling if missing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prevent_pod_scheduling_if_missing: Option<bool>,
}

/// What to attach, where.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeAttachmentSpec {
    /// Attacher.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub attacher: String,
    /// Source.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub source: VolumeAttachmentSource,
    /// Node name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub node_name: String,
}

/// The attach or detach outcome.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeAttachmentStatus {
    /// Attached.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub attached: bool,
    /// Attachment metadata.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub attachment_metadata: BTreeMap<String, String>,
    /// Attach error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attach_error: Option<VolumeError>,
    /// Detach error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detach_error: Option<VolumeError>,
}

/// One CSI driver on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSINodeDriver {
    /// Name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Node ID.
    #[serde(
        default,
        rename = "nodeID",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub node_id: String,
    /// Topology keys.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub topology_keys: Vec<String>,
    /// Allocatable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocatable: Option<VolumeNodeResources>,
}

/// Health of a node's storage for a driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageHealth {
    /// Name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Health conditions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub health_conditions: Vec<StorageHealthCondition>,
}

/// A service account token a CSI driver asks for.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TokenRequest {
    /// Audience.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub audience: String,
    /// Expiration seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expiration_seconds: Option<i64>,
}

/// The volume to attach: a PersistentVolume or an inline spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeAttachmentSource {
    /// Persistent volume name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_name: Option<String>,
    /// Inline volume spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inline_volume_spec: Option<PersistentVolumeSpec>,
}

/// An error while attaching or detaching.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeError {
    /// Time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<Time>,
    /// A human-readable message.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub message: String,
    /// Error code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_code: Option<i32>,
}

/// Volume limits of a CSI driver on a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeNodeResources {
    /// Count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
}

/// One condition of a node's storage health.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageHealthCondition {
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
    /// A CamelCase reason for the last transition.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub reason: String,
    /// A human-readable message.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub message: String,
    /// Access mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_mode: Option<PersistentVolumeAccessMode>,
    /// Filesystem or raw block device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mode: Option<PersistentVolumeMode>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}
