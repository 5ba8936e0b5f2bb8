//! core/v1 pod templates and ReplicationController, and the PriorityClass preemption policy.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::*;
use crate::meta::v1::{ObjectMeta, Time};
use crate::strenum::string_enum;

string_enum! {
    /// Whether a pod (or the pods of a PriorityClass) may preempt lower-priority pods.
    pub enum PreemptionPolicy {
        /// `Never`.
        Never = "Never",
        /// `PreemptLowerPriority` (the default).
        PreemptLowerPriority = "PreemptLowerPriority",
    }
}

/// Keeps a number of identical pods running (the older form of ReplicaSet).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicationController {
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
    pub spec: ReplicationControllerSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ReplicationControllerStatus,
}

/// A stored pod template.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTemplate {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: PodTemplateSpec,
}

/// The desired state of a ReplicationController.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicationControllerSpec {
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
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selector: BTreeMap<String, String>,
    /// The pods to create.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template: Option<PodTemplateSpec>,
}

/// The observed state of a ReplicationController.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicationControllerStatus {
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
    pub conditions: Vec<ReplicationControllerCondition>,
}

/// The pods a workload creates: their metadata and spec.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodTemplateSpec {
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: PodSpec,
}

/// One aspect of a ReplicationController's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplicationControllerCondition {
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
