//! `policy/v1`: PodDisruptionBudget.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::intstr::IntOrString;
use crate::meta::v1::{Condition, LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "policy/v1";

string_enum! {
    /// When unhealthy pods of a budget may be evicted.
    pub enum UnhealthyPodEvictionPolicyType {
        /// `IfHealthyBudget`.
        IfHealthyBudget = "IfHealthyBudget",
        /// `AlwaysAllow`.
        AlwaysAllow = "AlwaysAllow",
    }
}

/// Limits how many pods of a set voluntary disruptions may take down at once.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudget {
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
    pub spec: PodDisruptionBudgetSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: PodDisruptionBudgetStatus,
}

/// The desired state of a PodDisruptionBudget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudgetSpec {
    /// Min available.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_available: Option<IntOrString>,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// How many pods (or what percentage) may be unavailable during the update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Unhealthy pod eviction policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unhealthy_pod_eviction_policy: Option<UnhealthyPodEvictionPolicyType>,
}

/// The observed state of a PodDisruptionBudget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodDisruptionBudgetStatus {
    /// The generation of the spec the status was written for.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub observed_generation: i64,
    /// Disrupted pods.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub disrupted_pods: BTreeMap<String, Time>,
    /// Disruptions allowed.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub disruptions_allowed: i32,
    /// Current healthy.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub current_healthy: i32,
    /// Desired healthy.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub desired_healthy: i32,
    /// Expected pods.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub expected_pods: i32,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Condition>,
}
