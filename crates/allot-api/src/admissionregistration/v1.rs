//! `admissionregistration.k8s.io/v1`: ValidatingAdmissionPolicy and its binding, served and
//! stored but not interpreted (allot runs no admission policies).

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;
use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "admissionregistration.k8s.io/v1";

/// CEL rules that validate requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidatingAdmissionPolicy {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The rules (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
    /// The type checking result (kept opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}

/// Binds a ValidatingAdmissionPolicy to resources and parameters.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ValidatingAdmissionPolicyBinding {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The binding (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
}
