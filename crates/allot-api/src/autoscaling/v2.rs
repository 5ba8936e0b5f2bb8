//! `autoscaling/v2`: HorizontalPodAutoscaler, served and stored but not interpreted.

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;
use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "autoscaling/v2";

/// Scales a workload by observed metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HorizontalPodAutoscaler {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The target and its metrics (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
    /// The observed state (kept opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}
