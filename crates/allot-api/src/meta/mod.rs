//! `meta.k8s.io`: object metadata shared by every kind.

pub mod v1;
