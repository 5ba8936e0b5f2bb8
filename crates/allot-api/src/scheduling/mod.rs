//! The `scheduling.k8s.io` API group: PriorityClass (v1), PodGroup (v1beta1), and v1alpha2
//! PodGroups of Kubernetes 1.36 read from older dumps.

pub mod v1;
pub mod v1alpha2;
pub mod v1beta1;
