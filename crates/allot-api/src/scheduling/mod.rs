//! The `scheduling.k8s.io` API group: PodGroup.

pub mod v1beta1;
