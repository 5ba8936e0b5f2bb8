//! `meta/v1`: `ObjectMeta`, `Condition`, `Time` and friends.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A timestamp as Kubernetes writes it (RFC 3339, e.g. `2026-01-02T03:04:05Z`).
///
/// Kept as text: the engines never do arithmetic on it, and the text round-trips exactly.
pub type Time = String;

/// A UID as Kubernetes writes it.
pub type Uid = String;

/// `apiVersion` and `kind` of a document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TypeMeta {
    /// The versioned schema of this representation, e.g. `resource.k8s.io/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// The kind, e.g. `ResourceSlice`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
}

/// Standard object metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    /// The object's name, unique within its namespace (or the cluster).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub name: String,
    /// A prefix from which the server generates a unique name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub generate_name: String,
    /// The namespace; empty for cluster-scoped kinds.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub namespace: String,
    /// Deprecated self link.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub self_link: String,
    /// The unique id of this incarnation of the object.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub uid: Uid,
    /// Opaque version for optimistic concurrency.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_version: String,
    /// Sequence number of the desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the object was created.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<Time>,
    /// When the object will be (or was asked to be) deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<Time>,
    /// Grace period before deletion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_grace_period_seconds: Option<i64>,
    /// Labels.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Objects this one depends on.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub owner_references: Vec<OwnerReference>,
    /// Finalizers that must be removed before deletion.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub finalizers: Vec<String>,
    /// Server-side apply bookkeeping, kept opaque.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub managed_fields: Vec<serde_json::Value>,
}

/// A reference to an owning object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OwnerReference {
    /// API version of the owner.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub api_version: String,
    /// Kind of the owner.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub kind: String,
    /// Name of the owner.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// UID of the owner.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub uid: Uid,
    /// Whether the owner is the managing controller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
    /// Whether deletion of the owner is blocked until this object is gone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_owner_deletion: Option<bool>,
}

/// One aspect of an object's current state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    /// Condition type in CamelCase or `foo.example.com/CamelCase`.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
    /// The generation the condition was set for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// When the condition last changed status.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub last_transition_time: Time,
    /// A CamelCase reason for the last transition.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub reason: String,
    /// A human-readable message.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub message: String,
}

/// A label selector (`matchLabels` and `matchExpressions`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelector {
    /// Labels that must all match exactly.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Requirements that must all hold.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One requirement of a [`LabelSelector`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub operator: String,
    /// Values for `In` and `NotIn`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub values: Vec<String>,
}
