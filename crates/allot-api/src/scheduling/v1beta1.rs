//! `scheduling.k8s.io/v1beta1`: PodGroup, the runtime instance of a group of pods, with the
//! `spec.resourceClaims` of the spec's "Workload ResourceClaims".

use serde::{Deserialize, Serialize};

use crate::meta::v1::{Condition, ObjectMeta};

/// The API version of this module's kinds.
pub const API_VERSION: &str = "scheduling.k8s.io/v1beta1";

/// A group of pods scheduled and reserved together.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroup {
    /// `scheduling.k8s.io/v1beta1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `PodGroup`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Desired state.
    #[serde(default)]
    pub spec: PodGroupSpec,
    /// Observed state.
    #[serde(default)]
    pub status: PodGroupStatus,
}

/// Desired state of a PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSpec {
    /// The template this group was created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group_template_ref: Option<PodGroupTemplateReference>,
    /// Basic or gang scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_policy: Option<PodGroupSchedulingPolicy>,
    /// Topology constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_constraints: Option<PodGroupSchedulingConstraints>,
    /// Claims shared by the pods of the group.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_claims: Vec<PodGroupResourceClaim>,
    /// How the group may be disrupted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disruption_mode: Option<DisruptionMode>,
    /// Priority class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Preemption policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
}

/// Reference to the template a PodGroup was created from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupTemplateReference {
    /// A template in a Workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<WorkloadPodGroupTemplateReference>,
}

/// A pod group template in a Workload.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadPodGroupTemplateReference {
    /// The Workload.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub workload_name: String,
    /// The template within the Workload.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pod_group_template_name: String,
}

/// The scheduling policy: exactly one field is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSchedulingPolicy {
    /// Standard scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicSchedulingPolicy>,
    /// All-or-nothing scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangSchedulingPolicy>,
}

/// Standard scheduling (no fields).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BasicSchedulingPolicy {}

/// Gang scheduling.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GangSchedulingPolicy {
    /// Pods that must be schedulable together.
    #[serde(default)]
    pub min_count: i32,
}

/// Topology constraints of a PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSchedulingConstraints {
    /// Topology constraints (at most one).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub topology: Vec<TopologyConstraint>,
}

/// All pods of the group in one topology domain.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologyConstraint {
    /// The node label naming the domain.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
}

/// A claim of a PodGroup: exactly one of the two names is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupResourceClaim {
    /// The name, unique in the group (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// A ResourceClaim reserved for the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A template from which one claim is generated for the group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// How a group may be disrupted: exactly one field is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DisruptionMode {
    /// Members independently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub single: Option<BasicSchedulingPolicy>,
    /// All members together.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all: Option<BasicSchedulingPolicy>,
}

/// Observed state of a PodGroup.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupStatus {
    /// Conditions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Condition>,
    /// Names of the claims generated for the group.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_claim_statuses: Vec<PodGroupResourceClaimStatus>,
}

/// The claim generated for one of the group's claim entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupResourceClaimStatus {
    /// The entry of `spec.resourceClaims`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The generated claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}
