//! The core API group (`apiVersion: v1`).

pub mod v1;
