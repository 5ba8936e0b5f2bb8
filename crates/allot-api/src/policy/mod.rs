//! The `policy` API group: PodDisruptionBudget.

pub mod v1;
