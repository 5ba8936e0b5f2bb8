//! `resource.k8s.io/v1beta2`: the DRA kinds as Kubernetes 1.33–1.37 serve them at this version.
//!
//! In Kubernetes 1.37 every type of v1beta2 has exactly v1's fields and JSON shape (v1 was made
//! from v1beta2; upstream's generated conversions between them copy field by field), so the
//! kinds of this version decode into [`v1`](super::v1)'s types and convert by their
//! `apiVersion` alone, losslessly in both directions. v1beta2 dumps of 1.33–1.35 clusters lack
//! fields added since; absent fields are absent in v1 too.

/// The API version of this module's kinds.
pub const API_VERSION: &str = "resource.k8s.io/v1beta2";

/// The kinds served at this version.
pub const KINDS: &[&str] = &[
    "DeviceClass",
    "DeviceTaintRule",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
];
