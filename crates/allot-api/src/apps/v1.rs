//! `apps/v1`: Deployment, ReplicaSet, StatefulSet, DaemonSet and ControllerRevision.

use serde::{Deserialize, Serialize};

use crate::core::v1::*;
use crate::intstr::IntOrString;
use crate::meta::v1::{LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "apps/v1";

string_enum! {
    /// How a StatefulSet creates and deletes its pods.
    pub enum PodManagementPolicyType {
        /// `OrderedReady`.
        OrderedReady = "OrderedReady",
        /// `Parallel`.
        Parallel = "Parallel",
    }
}

string_enum! {
    /// How a Deployment replaces old pods with new ones.
    pub enum DeploymentStrategyType {
        /// `Recreate`.
        Recreate = "Recreate",
        /// `RollingUpdate`.
        RollingUpdate = "RollingUpdate",
    }
}

string_enum! {
    /// How a StatefulSet updates its pods.
    pub enum StatefulSetUpdateStrategyType {
        /// `RollingUpdate`.
        RollingUpdate = "RollingUpdate",
        /// `OnDelete`.
        OnDelete = "OnDelete",
        /// `Recreate`.
        Recreate = "Recreate",
    }
}

string_enum! {
    /// What happens to a StatefulSet's claims when it is deleted or scaled down.
    pub enum PersistentVolumeClaimRetentionPolicyType {
        /// `Retain`.
        Retain = "Retain",
        /// `Delete`.
        Delete = "Delete",
    }
}

string_enum! {
    /// How a DaemonSet updates its pods.
    pub enum DaemonSetUpdateStrategyType {
        /// `RollingUpdate`.
        RollingUpdate = "RollingUpdate",
        /// `OnDelete`.
        OnDelete = "OnDelete",
    }
}

/// Declarative updates of a set of identical pods, through ReplicaSets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Deployment {
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
    pub spec: DeploymentSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: DeploymentStatus,
}

/// Keeps a number of identical pods running.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSet {
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
    pub spec: ReplicaSetSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ReplicaSetStatus,
}

/// Pods with stable identities (ordinal names) and per-pod claims.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSet {
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
    pub spec: StatefulSetSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: StatefulSetStatus,
}

/// One pod on every eligible node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSet {
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
    pub spec: DaemonSetSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: DaemonSetStatus,
}

/// An immutable snapshot of a controller's pod template, for rollbacks.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ControllerRevision {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Opaque>,
    /// Revision.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub revision: i64,
}

/// The desired state of a Deployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentSpec {
    /// The desired number of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: PodTemplateSpec,
    /// Strategy.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub strategy: DeploymentStrategy,
    /// How long a new pod must be ready before it counts as available.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub min_ready_seconds: i32,
    /// How many old revisions to keep for rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// Paused.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub paused: bool,
    /// Progress deadline seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

/// The observed state of a Deployment.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentStatus {
    /// The generation of the spec the status was written for.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub observed_generation: i64,
    /// The number of pods the controller observed.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub replicas: i32,
    /// Pods with the current template.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub updated_replicas: i32,
    /// Pods that are ready.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ready_replicas: i32,
    /// Pods that have been ready for at least minReadySeconds.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub available_replicas: i32,
    /// Unavailable replicas.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub unavailable_replicas: i32,
    /// Terminating replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating_replicas: Option<i32>,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<DeploymentCondition>,
    /// The count of hash collisions, used to name new revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
}

/// The desired state of a ReplicaSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSetSpec {
    /// The desired number of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// How long a new pod must be ready before it counts as available.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub min_ready_seconds: i32,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: PodTemplateSpec,
}

/// The observed state of a ReplicaSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSetStatus {
    /// The number of pods the controller observed.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub replicas: i32,
    /// Fully labeled replicas.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub fully_labeled_replicas: i32,
    /// Pods that are ready.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ready_replicas: i32,
    /// Pods that have been ready for at least minReadySeconds.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub available_replicas: i32,
    /// Terminating replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating_replicas: Option<i32>,
    /// The generation of the spec the status was written for.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub observed_generation: i64,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<ReplicaSetCondition>,
}

/// The desired state of a StatefulSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetSpec {
    /// The desired number of pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: PodTemplateSpec,
    /// Volume claim templates.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volume_claim_templates: Vec<PersistentVolumeClaim>,
    /// Service name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub service_name: String,
    /// Pod management policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_management_policy: Option<PodManagementPolicyType>,
    /// Update strategy.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub update_strategy: StatefulSetUpdateStrategy,
    /// How many old revisions to keep for rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
    /// How long a new pod must be ready before it counts as available.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub min_ready_seconds: i32,
    /// Persistent volume claim retention policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim_retention_policy:
        Option<StatefulSetPersistentVolumeClaimRetentionPolicy>,
    /// Ordinals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinals: Option<StatefulSetOrdinals>,
}

/// The observed state of a StatefulSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetStatus {
    /// The generation of the spec the status was written for.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub observed_generation: i64,
    /// The number of pods the controller observed.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub replicas: i32,
    /// Pods that are ready.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ready_replicas: i32,
    /// Current replicas.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub current_replicas: i32,
    /// Pods with the current template.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub updated_replicas: i32,
    /// Current revision.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub current_revision: String,
    /// Update revision.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub update_revision: String,
    /// The count of hash collisions, used to name new revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<StatefulSetCondition>,
    /// Pods that have been ready for at least minReadySeconds.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub available_replicas: i32,
}

/// The desired state of a DaemonSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetSpec {
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: PodTemplateSpec,
    /// Update strategy.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub update_strategy: DaemonSetUpdateStrategy,
    /// How long a new pod must be ready before it counts as available.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub min_ready_seconds: i32,
    /// How many old revisions to keep for rollback.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision_history_limit: Option<i32>,
}

/// The observed state of a DaemonSet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetStatus {
    /// Current number scheduled.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub current_number_scheduled: i32,
    /// Number misscheduled.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub number_misscheduled: i32,
    /// Desired number scheduled.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub desired_number_scheduled: i32,
    /// Number ready.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub number_ready: i32,
    /// The generation of the spec the status was written for.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub observed_generation: i64,
    /// Updated number scheduled.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub updated_number_scheduled: i32,
    /// Number available.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub number_available: i32,
    /// Number unavailable.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub number_unavailable: i32,
    /// The count of hash collisions, used to name new revisions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collision_count: Option<i32>,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<DaemonSetCondition>,
}

/// How a Deployment replaces pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentStrategy {
    /// The type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<DeploymentStrategyType>,
    /// Rolling update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDeployment>,
}

/// One aspect of a Deployment's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeploymentCondition {
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
    /// When the condition was last updated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_update_time: Option<Time>,
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

/// One aspect of a ReplicaSet's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicaSetCondition {
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

/// How a StatefulSet updates pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetUpdateStrategy {
    /// The type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<StatefulSetUpdateStrategyType>,
    /// Rolling update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateStatefulSetStrategy>,
}

/// Whether a StatefulSet's claims are kept or deleted.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetPersistentVolumeClaimRetentionPolicy {
    /// When deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_deleted: Option<PersistentVolumeClaimRetentionPolicyType>,
    /// When scaled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub when_scaled: Option<PersistentVolumeClaimRetentionPolicyType>,
}

/// The ordinals a StatefulSet numbers its replicas from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetOrdinals {
    /// Start.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub start: i32,
}

/// One aspect of a StatefulSet's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StatefulSetCondition {
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

/// How a DaemonSet updates pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetUpdateStrategy {
    /// The type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<DaemonSetUpdateStrategyType>,
    /// Rolling update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateDaemonSet>,
}

/// One aspect of a DaemonSet's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DaemonSetCondition {
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

/// How far a Deployment's rolling update may go above and below the desired replicas.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollingUpdateDeployment {
    /// How many pods (or what percentage) may be unavailable during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// How many pods (or what percentage) may be created above the desired number during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}

/// A StatefulSet's rolling update: partition and availability.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollingUpdateStatefulSetStrategy {
    /// Partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    /// How many pods (or what percentage) may be unavailable during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
}

/// How many nodes a DaemonSet's rolling update may disrupt or double up at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RollingUpdateDaemonSet {
    /// How many pods (or what percentage) may be unavailable during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// How many pods (or what percentage) may be created above the desired number during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
}
