//! `discovery.k8s.io/v1`: EndpointSlice, served and stored but not interpreted.

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;
use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "discovery.k8s.io/v1";

/// A set of endpoints of a service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointSlice {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The type of the addresses: `IPv4`, `IPv6` or `FQDN`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub address_type: String,
    /// The endpoints (kept opaque).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub endpoints: Vec<Opaque>,
    /// The ports (kept opaque).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ports: Vec<Opaque>,
}
