//! The `coordination.k8s.io` API group: Leases.

pub mod v1;
