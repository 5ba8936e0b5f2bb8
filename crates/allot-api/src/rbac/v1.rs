//! `rbac.authorization.k8s.io/v1`: Role, ClusterRole, RoleBinding and ClusterRoleBinding.

use serde::{Deserialize, Serialize};

use crate::meta::v1::{LabelSelector, ObjectMeta};

/// The API version of this module's kinds.
pub const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

/// One set of permissions: verbs on resources of API groups (or on non-resource URLs).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyRule {
    /// Verbs the rule allows, `*` for all.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub verbs: Vec<String>,
    /// API groups of the resources, `*` for all, "" for the core group.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_groups: Vec<String>,
    /// Resources (`pods`, `pods/status`, `*`, `*/status`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resources: Vec<String>,
    /// Object names the rule is limited to; empty means every object.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_names: Vec<String>,
    /// Non-resource URLs (`/healthz`, `/api/*`); ClusterRoles only.
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub non_resource_urls: Vec<String>,
}

/// Who a binding grants its role to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, "" for service accounts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The user, group or service account name.
    #[serde(default)]
    pub name: String,
    /// The namespace of a service account.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The role a binding grants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleRef {
    /// `rbac.authorization.k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// The role's name.
    #[serde(default)]
    pub name: String,
}

/// How a ClusterRole's rules are made from other ClusterRoles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AggregationRule {
    /// ClusterRoles whose labels match any of these selectors give their rules to this one.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub cluster_role_selectors: Vec<LabelSelector>,
}

/// Namespaced permissions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Role {
    /// `rbac.authorization.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Role`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The permissions.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub rules: Vec<PolicyRule>,
}

/// Cluster-wide permissions, possibly aggregated from other ClusterRoles.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRole {
    /// `rbac.authorization.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ClusterRole`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The permissions (controller-managed when `aggregationRule` is set).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub rules: Vec<PolicyRule>,
    /// Which ClusterRoles' rules make up this one's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation_rule: Option<AggregationRule>,
}

/// Grants a Role or ClusterRole in one namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleBinding {
    /// `rbac.authorization.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `RoleBinding`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Who gets the role.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub subjects: Vec<Subject>,
    /// The role granted; it cannot change.
    #[serde(default)]
    pub role_ref: RoleRef,
}

/// Grants a ClusterRole everywhere.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterRoleBinding {
    /// `rbac.authorization.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `ClusterRoleBinding`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Who gets the role.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub subjects: Vec<Subject>,
    /// The ClusterRole granted; it cannot change.
    #[serde(default)]
    pub role_ref: RoleRef,
}
