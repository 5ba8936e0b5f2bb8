//! The `discovery.k8s.io` API group: EndpointSlice.

pub mod v1;
