//! `scheduling.k8s.io/v1alpha2`: PodGroup as Kubernetes 1.36 served it (alpha, removed in
//! 1.37), read from older dumps and converted to allot's [`v1beta1`](super::v1beta1) PodGroup.
//!
//! The shapes differ in three places: `schedulingPolicy` is required here (optional in
//! v1beta1), `priorityClassName` is a plain string (empty means unset), and `disruptionMode`
//! is a string, `Pod` (members disrupted one by one: v1beta1's `single`) or `PodGroup` (the
//! group as a whole: v1beta1's `all`). Kubernetes 1.37 no longer serves this version, so the
//! conversion goes one way only; a disruption mode other than the two is an error naming the
//! field, as upstream's validation of v1alpha2 rejected it.

use serde::{Deserialize, Serialize};

use crate::meta::v1::ObjectMeta;
use crate::scheduling::v1beta1::{
    self, BasicSchedulingPolicy, PodGroupResourceClaim, PodGroupSchedulingConstraints,
    PodGroupSchedulingPolicy, PodGroupStatus, PodGroupTemplateReference,
};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "scheduling.k8s.io/v1alpha2";

/// A group of pods scheduled and reserved together (v1alpha2 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroup {
    /// `scheduling.k8s.io/v1alpha2`.
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
    /// Observed state (v1beta1's shape).
    #[serde(default)]
    pub status: PodGroupStatus,
}

/// Desired state of a PodGroup (v1alpha2 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodGroupSpec {
    /// The template this group was created from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group_template_ref: Option<PodGroupTemplateReference>,
    /// Basic or gang scheduling (required).
    #[serde(default)]
    pub scheduling_policy: PodGroupSchedulingPolicy,
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
    /// Priority class name; empty means unset.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub priority_class_name: String,
    /// Priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
}

string_enum! {
    /// How a group may be disrupted, as a string.
    pub enum DisruptionMode {
        /// Members are disrupted independently.
        Pod = "Pod",
        /// The group is disrupted as a whole.
        PodGroup = "PodGroup",
    }
}

/// A PodGroup that cannot be expressed in v1beta1: the field and upstream's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {message}")]
pub struct ConversionError {
    /// The field path, e.g. `spec.disruptionMode`.
    pub field: String,
    /// What is wrong with it.
    pub message: String,
}

impl TryFrom<PodGroup> for v1beta1::PodGroup {
    type Error = ConversionError;

    fn try_from(group: PodGroup) -> Result<Self, Self::Error> {
        let spec = group.spec;
        let disruption_mode = match spec.disruption_mode {
            None => None,
            Some(DisruptionMode::Pod) => Some(v1beta1::DisruptionMode {
                single: Some(BasicSchedulingPolicy {}),
                all: None,
            }),
            Some(DisruptionMode::PodGroup) => Some(v1beta1::DisruptionMode {
                single: None,
                all: Some(BasicSchedulingPolicy {}),
            }),
            Some(DisruptionMode::Other(value)) => {
                return Err(ConversionError {
                    field: "spec.disruptionMode".into(),
                    message: format!(
                        "Unsupported value: {value:?}: supported values: \"Pod\", \"PodGroup\""
                    ),
                });
            }
        };
        Ok(v1beta1::PodGroup {
            api_version: if group.api_version.is_empty() {
                String::new()
            } else {
                v1beta1::API_VERSION.to_string()
            },
            kind: group.kind,
            metadata: group.metadata,
            spec: v1beta1::PodGroupSpec {
                pod_group_template_ref: spec.pod_group_template_ref,
                scheduling_policy: Some(spec.scheduling_policy),
                scheduling_constraints: spec.scheduling_constraints,
                resource_claims: spec.resource_claims,
                disruption_mode,
                priority_class_name: (!spec.priority_class_name.is_empty())
                    .then_some(spec.priority_class_name),
                priority: spec.priority,
                preemption_policy: None,
            },
            status: group.status,
        })
    }
}
