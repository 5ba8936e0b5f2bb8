//! The `scheduling.k8s.io` API group: PriorityClass (v1) and PodGroup (v1beta1).

pub mod v1;
pub mod v1beta1;
