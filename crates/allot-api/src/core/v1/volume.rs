//! core/v1 storage kinds: PersistentVolume and PersistentVolumeClaim with every volume source
//! a PersistentVolume can name, and the topology selector terms StorageClasses use.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;
use crate::meta::v1::{LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

string_enum! {
    /// How a volume may be mounted.
    pub enum PersistentVolumeAccessMode {
        /// `ReadWriteOnce`.
        ReadWriteOnce = "ReadWriteOnce",
        /// `ReadOnlyMany`.
        ReadOnlyMany = "ReadOnlyMany",
        /// `ReadWriteMany`.
        ReadWriteMany = "ReadWriteMany",
        /// `ReadWriteOncePod`.
        ReadWriteOncePod = "ReadWriteOncePod",
    }
}

string_enum! {
    /// Whether a volume is a filesystem or a raw block device.
    pub enum PersistentVolumeMode {
        /// `Block`.
        Block = "Block",
        /// `Filesystem`.
        Filesystem = "Filesystem",
    }
}

string_enum! {
    /// What happens to a volume when its claim is released.
    pub enum PersistentVolumeReclaimPolicy {
        /// `Recycle`.
        Recycle = "Recycle",
        /// `Delete`.
        Delete = "Delete",
        /// `Retain`.
        Retain = "Retain",
    }
}

string_enum! {
    /// The phase of a PersistentVolume.
    pub enum PersistentVolumePhase {
        /// `Pending`.
        Pending = "Pending",
        /// `Available`.
        Available = "Available",
        /// `Bound`.
        Bound = "Bound",
        /// `Released`.
        Released = "Released",
        /// `Failed`.
        Failed = "Failed",
    }
}

string_enum! {
    /// The phase of a PersistentVolumeClaim.
    pub enum PersistentVolumeClaimPhase {
        /// `Pending`.
        Pending = "Pending",
        /// `Bound`.
        Bound = "Bound",
        /// `Lost`.
        Lost = "Lost",
    }
}

/// A piece of storage in the cluster, provisioned by an administrator or dynamically.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolume {
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
    pub spec: PersistentVolumeSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: PersistentVolumeStatus,
}

/// A request for storage by a user.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeClaim {
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
    pub spec: PersistentVolumeClaimSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: PersistentVolumeClaimStatus,
}

/// A topology selector term: the intersection (AND) of its label requirements.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySelectorTerm {
    /// Match label expressions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_label_expressions: Vec<TopologySelectorLabelRequirement>,
}

/// The desired state of a PersistentVolume: its capacity, source (exactly one of the volume sources), access modes and binding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeSpec {
    /// The capacity.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub capacity: ResourceList,
    /// GCE persistent disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gce_persistent_disk: Option<GCEPersistentDiskVolumeSource>,
    /// AWS elastic block store.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aws_elastic_block_store: Option<AWSElasticBlockStoreVolumeSource>,
    /// Host path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_path: Option<HostPathVolumeSource>,
    /// Glusterfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub glusterfs: Option<GlusterfsPersistentVolumeSource>,
    /// NFS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nfs: Option<NFSVolumeSource>,
    /// RBD.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rbd: Option<RBDPersistentVolumeSource>,
    /// ISCSI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<ISCSIPersistentVolumeSource>,
    /// Cinder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cinder: Option<CinderPersistentVolumeSource>,
    /// Cephfs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cephfs: Option<CephFSPersistentVolumeSource>,
    /// FC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fc: Option<FCVolumeSource>,
    /// Flocker.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flocker: Option<FlockerVolumeSource>,
    /// Flex volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub flex_volume: Option<FlexPersistentVolumeSource>,
    /// Azure file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_file: Option<AzureFilePersistentVolumeSource>,
    /// Vsphere volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vsphere_volume: Option<VsphereVirtualDiskVolumeSource>,
    /// Quobyte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quobyte: Option<QuobyteVolumeSource>,
    /// Azure disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub azure_disk: Option<AzureDiskVolumeSource>,
    /// Photon persistent disk.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub photon_persistent_disk: Option<PhotonPersistentDiskVolumeSource>,
    /// Portworx volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub portworx_volume: Option<PortworxVolumeSource>,
    /// Scale IO.
    #[serde(default, rename = "scaleIO", skip_serializing_if = "Option::is_none")]
    pub scale_io: Option<ScaleIOPersistentVolumeSource>,
    /// Local.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<LocalVolumeSource>,
    /// Storageos.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storageos: Option<StorageOSPersistentVolumeSource>,
    /// CSI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csi: Option<CSIPersistentVolumeSource>,
    /// How the volume may be mounted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub access_modes: Vec<PersistentVolumeAccessMode>,
    /// Claim ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_ref: Option<ObjectReference>,
    /// Persistent volume reclaim policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_reclaim_policy: Option<PersistentVolumeReclaimPolicy>,
    /// The StorageClass.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_class_name: String,
    /// Mount options for volumes.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub mount_options: Vec<String>,
    /// Filesystem or raw block device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mode: Option<PersistentVolumeMode>,
    /// Node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<VolumeNodeAffinity>,
    /// The VolumeAttributesClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_attributes_class_name: Option<String>,
}

/// The observed state of a PersistentVolume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeStatus {
    /// Phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PersistentVolumePhase>,
    /// A human-readable message.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub message: String,
    /// A CamelCase reason for the last transition.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub reason: String,
    /// Last phase transition time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_phase_transition_time: Option<Time>,
}

/// The desired state of a PersistentVolumeClaim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeClaimSpec {
    /// How the volume may be mounted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub access_modes: Vec<PersistentVolumeAccessMode>,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Resources.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub resources: VolumeResourceRequirements,
    /// Volume name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_name: String,
    /// The StorageClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Filesystem or raw block device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mode: Option<PersistentVolumeMode>,
    /// Data source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_source: Option<TypedLocalObjectReference>,
    /// Data source ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_source_ref: Option<TypedObjectReference>,
    /// The VolumeAttributesClass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_attributes_class_name: Option<String>,
}

/// The observed state of a PersistentVolumeClaim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeClaimStatus {
    /// Phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<PersistentVolumeClaimPhase>,
    /// How the volume may be mounted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub access_modes: Vec<PersistentVolumeAccessMode>,
    /// The capacity.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub capacity: ResourceList,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<PersistentVolumeClaimCondition>,
    /// Allocated resources.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub allocated_resources: ResourceList,
    /// Allocated resource statuses.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub allocated_resource_statuses: BTreeMap<String, String>,
    /// Current volume attributes class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_volume_attributes_class_name: Option<String>,
    /// Modify volume status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modify_volume_status: Option<ModifyVolumeStatus>,
    /// Health status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_status: Option<VolumeHealthStatus>,
}

/// A topology label and the values it may have.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySelectorLabelRequirement {
    /// Key.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
    /// Values.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub values: Vec<String>,
}

/// A GCE persistent disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GCEPersistentDiskVolumeSource {
    /// Pd name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pd_name: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Partition.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub partition: i32,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// An AWS EBS volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AWSElasticBlockStoreVolumeSource {
    /// Volume ID.
    #[serde(
        default,
        rename = "volumeID",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_id: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Partition.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub partition: i32,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// A path on the node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HostPathVolumeSource {
    /// Path.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub path: String,
    /// The type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
}

/// A Glusterfs volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GlusterfsPersistentVolumeSource {
    /// Endpoints.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub endpoints: String,
    /// Path.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub path: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// Endpoints namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints_namespace: Option<String>,
}

/// An NFS export.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NFSVolumeSource {
    /// Server.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub server: String,
    /// Path.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub path: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// A Ceph RBD volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RBDPersistentVolumeSource {
    /// Monitors.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub monitors: Vec<String>,
    /// Image.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub image: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Pool.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub pool: String,
    /// User.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub user: String,
    /// Keyring.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub keyring: String,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// An iSCSI disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ISCSIPersistentVolumeSource {
    /// Target portal.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub target_portal: String,
    /// IQN.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub iqn: String,
    /// LUN.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub lun: i32,
    /// ISCSI interface.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub iscsi_interface: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// Portals.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub portals: Vec<String>,
    /// CHAP auth discovery.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub chap_auth_discovery: bool,
    /// CHAP auth session.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub chap_auth_session: bool,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Initiator name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initiator_name: Option<String>,
}

/// An OpenStack Cinder volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CinderPersistentVolumeSource {
    /// Volume ID.
    #[serde(
        default,
        rename = "volumeID",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_id: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
}

/// A CephFS mount.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CephFSPersistentVolumeSource {
    /// Monitors.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub monitors: Vec<String>,
    /// Path.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub path: String,
    /// User.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub user: String,
    /// Secret file.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub secret_file: String,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// A Fibre Channel volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FCVolumeSource {
    /// Target WWNs.
    #[serde(
        default,
        rename = "targetWWNs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub target_wwns: Vec<String>,
    /// LUN.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lun: Option<i32>,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// WWIDs.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub wwids: Vec<String>,
}

/// A Flocker volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlockerVolumeSource {
    /// Dataset name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub dataset_name: String,
    /// Dataset UUID.
    #[serde(
        default,
        rename = "datasetUUID",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub dataset_uuid: String,
}

/// A FlexVolume driver's volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FlexPersistentVolumeSource {
    /// Driver.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// Options.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub options: BTreeMap<String, String>,
}

/// An Azure File share.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AzureFilePersistentVolumeSource {
    /// Secret name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub secret_name: String,
    /// Share name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub share_name: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// Secret namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_namespace: Option<String>,
}

/// A vSphere disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VsphereVirtualDiskVolumeSource {
    /// Volume path.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub volume_path: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Storage policy name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_policy_name: String,
    /// Storage policy ID.
    #[serde(
        default,
        rename = "storagePolicyID",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_policy_id: String,
}

/// A Quobyte volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct QuobyteVolumeSource {
    /// Registry.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub registry: String,
    /// Volume.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub volume: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// User.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub user: String,
    /// Group.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub group: String,
    /// Tenant.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub tenant: String,
}

/// An Azure data disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AzureDiskVolumeSource {
    /// Disk name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub disk_name: String,
    /// Disk URI.
    #[serde(
        default,
        rename = "diskURI",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub disk_uri: String,
    /// Caching mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caching_mode: Option<String>,
    /// The filesystem type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
    /// Whether the volume is mounted read-only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// Kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
}

/// A Photon Controller persistent disk.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PhotonPersistentDiskVolumeSource {
    /// Pd ID.
    #[serde(
        default,
        rename = "pdID",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub pd_id: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
}

/// A Portworx volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortworxVolumeSource {
    /// Volume ID.
    #[serde(
        default,
        rename = "volumeID",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_id: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// A ScaleIO volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScaleIOPersistentVolumeSource {
    /// Gateway.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub gateway: String,
    /// System.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub system: String,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<SecretReference>,
    /// SSL enabled.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ssl_enabled: bool,
    /// Protection domain.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub protection_domain: String,
    /// Storage pool.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_pool: String,
    /// Storage mode.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub storage_mode: String,
    /// Volume name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_name: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
}

/// A local disk, partition or directory of one node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LocalVolumeSource {
    /// Path.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub path: String,
    /// The filesystem type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fs_type: Option<String>,
}

/// A StorageOS volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StorageOSPersistentVolumeSource {
    /// Volume name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_name: String,
    /// Volume namespace.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_namespace: String,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// The Secret with credentials.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_ref: Option<ObjectReference>,
}

/// A volume of a CSI driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CSIPersistentVolumeSource {
    /// Driver.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// Volume handle.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub volume_handle: String,
    /// Whether the volume is mounted read-only.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub read_only: bool,
    /// The filesystem type.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fs_type: String,
    /// Volume attributes.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_attributes: BTreeMap<String, String>,
    /// Controller publish secret ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_publish_secret_ref: Option<SecretReference>,
    /// Node stage secret ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_stage_secret_ref: Option<SecretReference>,
    /// Node publish secret ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_publish_secret_ref: Option<SecretReference>,
    /// Controller expand secret ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller_expand_secret_ref: Option<SecretReference>,
    /// Node expand secret ref.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_expand_secret_ref: Option<SecretReference>,
}

/// The nodes a volume can be used from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeNodeAffinity {
    /// Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<NodeSelector>,
}

/// The storage a claim requests and its limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeResourceRequirements {
    /// Limits.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub limits: ResourceList,
    /// Requests.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: ResourceList,
}

/// A reference to an object of a given kind in the same namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypedLocalObjectReference {
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// Kind.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub kind: String,
    /// Name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
}

/// A reference to an object of a given kind, possibly in another namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TypedObjectReference {
    /// API group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_group: Option<String>,
    /// Kind.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub kind: String,
    /// Name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
}

/// One aspect of a claim's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PersistentVolumeClaimCondition {
    /// The condition type.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// A CamelCase reason for the last transition.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub reason: String,
    /// A human-readable message.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub message: String,
}

/// The state of a volume attributes class change.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ModifyVolumeStatus {
    /// Target volume attributes class name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub target_volume_attributes_class_name: String,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
}

/// The health of a claim's volume.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeHealthStatus {
    /// Health conditions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub health_conditions: Vec<VolumeHealthCondition>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
}

/// A reference to a Secret by namespace and name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecretReference {
    /// Name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub name: String,
    /// Namespace.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub namespace: String,
}

/// One condition of a volume's health.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VolumeHealthCondition {
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
}
