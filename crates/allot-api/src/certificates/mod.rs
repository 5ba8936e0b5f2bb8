//! The `certificates.k8s.io` API group: CertificateSigningRequest.

pub mod v1;
