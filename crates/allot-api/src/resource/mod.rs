//! The `resource.k8s.io` API group: v1 (the storage version), and the older versions that
//! convert to and from it (`v1beta1`, `v1beta2`), plus `v1alpha3` (ResourcePoolStatusRequest,
//! and DeviceTaintRule in v1's shape).

pub mod v1;
pub mod v1alpha3;
pub mod v1beta1;
pub mod v1beta2;
