//! `networking.k8s.io/v1`: ServiceCIDR and IPAddress, served and stored but not interpreted.

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;
use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "networking.k8s.io/v1";

/// A range of IP addresses for service cluster IPs.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceCIDR {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The CIDRs (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
    /// The conditions (kept opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}

/// One allocated IP address.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IPAddress {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object it belongs to (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
}
