//! `certificates.k8s.io/v1`: CertificateSigningRequest, served and stored but not interpreted.

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;
use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "certificates.k8s.io/v1";

/// A request to sign a certificate.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CertificateSigningRequest {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The request (kept opaque: allot does not interpret it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<Opaque>,
    /// Its approval and the issued certificate (kept opaque).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Opaque>,
}
