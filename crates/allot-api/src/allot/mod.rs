//! The `allot.dev` API group: allot's own input kinds.

pub mod v1alpha1;
