//! The `resource.k8s.io` API group.

pub mod v1;
pub mod v1alpha3;
