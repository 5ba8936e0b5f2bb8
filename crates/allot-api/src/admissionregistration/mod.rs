//! The `admissionregistration.k8s.io` API group: ValidatingAdmissionPolicy and its binding.

pub mod v1;
