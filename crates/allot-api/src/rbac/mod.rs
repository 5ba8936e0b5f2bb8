//! The `rbac.authorization.k8s.io` API group: roles and bindings.

pub mod v1;
