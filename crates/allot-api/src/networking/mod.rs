//! The `networking.k8s.io` API group: ServiceCIDR and IPAddress.

pub mod v1;
