//! Kubernetes object types for resource management, as plain data.
//!
//! Key design decision: we own the wire types instead of using `k8s-openapi`, because this
//! domain needs (a) strict decoding that rejects unknown fields with a field path, as kubectl's
//! strict validation does, (b) the newest alpha fields of Kubernetes 1.37, and (c) exact
//! quantities (`allot_quantity::Quantity`). The cost is keeping the types in step with upstream
//! by hand. Types are named like upstream's Go types, fields are the snake_case of the JSON
//! names, every struct denies unknown fields, and serialising omits what Kubernetes omits.
//! Required Go strings decode as empty when missing, so validation (not decoding) reports them,
//! as the API server does.

#![deny(missing_docs)]

mod serde_util;
mod strenum;

pub mod admissionregistration;
pub mod allot;
pub mod apps;
pub mod autoscaling;
pub mod batch;
pub mod certificates;
pub mod coordination;
pub mod core;
pub mod defaults;
pub mod discovery;
pub mod intstr;
pub mod kubescheduler;
pub mod load;
pub mod meta;
pub mod networking;
pub mod policy;
pub mod rbac;
pub mod resource;
pub mod scheduling;
pub mod storage;
pub mod versions;

pub use allot_quantity::Quantity;
