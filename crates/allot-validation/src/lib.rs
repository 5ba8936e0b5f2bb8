//! The Kubernetes API server's validation rules for the resource management kinds, with
//! upstream's limits and messages.
//!
//! Key design decision: validation is a pure function from a decoded object to a list of
//! [`FieldError`]s (path, kind, value, detail) rendered exactly like upstream's `field.Error`,
//! so messages can be compared with the API server's. CEL compilation is reached through the
//! [`CelCompiler`] trait, which keeps this crate independent of the CEL engine. Rules that need
//! other objects (the admin-access namespace check) are separate admission functions.

#![deny(missing_docs)]

pub mod apps;
pub mod batch;
pub mod cel;
pub mod core;
pub mod core_more;
pub mod cron;
pub mod field;
#[doc(hidden)]
pub mod fuzzing;
pub mod kinds;
pub mod meta;
pub mod names;
pub mod policy;
pub mod priority;
pub mod rbac;
pub mod resource;
pub mod resources;
pub mod storage;
pub mod uninterpreted;
pub mod update;

use std::collections::BTreeMap;

use allot_api::core::v1::Namespace;
use allot_api::load::Object;
use allot_api::resource::v1::{DRA_ADMIN_NAMESPACE_LABEL_KEY, ResourceClaimSpec};

pub use cel::{CelCompileError, CelCompiler, CelErrorKind, DraCel, ExpressionKind};
pub use field::{BadValue, ErrorType, FieldError};
pub use update::{Subresource, validate_object_update};

/// Validates one decoded (and defaulted) object. Kinds without rules (AllocationOptions,
/// extensions) validate as empty.
pub fn validate_object(object: &Object, cel: &dyn CelCompiler) -> Vec<FieldError> {
    match object {
        Object::DeviceClass(o) => resource::validate_device_class(o, cel),
        Object::ResourceClaim(o) => resource::validate_resource_claim(o, cel),
        Object::ResourceClaimTemplate(o) => resource::validate_resource_claim_template(o, cel),
        Object::ResourceSlice(o) => resource::validate_resource_slice(o),
        Object::DeviceTaintRule(o) => resource::validate_device_taint_rule(o, cel),
        Object::ResourcePoolStatusRequest(o) => resource::validate_resource_pool_status_request(o),
        Object::Node(o) => core::validate_node(o),
        Object::Pod(o) => core::validate_pod(o),
        Object::Namespace(o) => core::validate_namespace(o),
        Object::PodGroup(o) => core::validate_pod_group(o),
        Object::Role(o) => rbac::validate_role(o),
        Object::ClusterRole(o) => rbac::validate_cluster_role(o),
        Object::RoleBinding(o) => rbac::validate_role_binding(o),
        Object::ClusterRoleBinding(o) => rbac::validate_cluster_role_binding(o),
        // Their names, as upstream's (DNS subdomains: `ValidateEvent`, `ValidateLease`; a
        // NodeTopology is named after its node). A NodeTopology's body is checked by whoever
        // decodes it with allot-topology; upstream checks nothing else of an Event or a Lease
        // that allot relies on.
        Object::Event(o) => {
            meta::validate_object_meta(&o.metadata, true, meta::name_is_dns_subdomain, "metadata")
        }
        Object::Lease(o) => {
            meta::validate_object_meta(&o.metadata, true, meta::name_is_dns_subdomain, "metadata")
        }
        Object::NodeTopology(o) => {
            meta::validate_object_meta(&o.metadata, false, meta::name_is_dns_subdomain, "metadata")
        }
        Object::AllocationOptions(_)
        | Object::KubeSchedulerConfiguration(_)
        | Object::Extension => Vec::new(),
        other => kinds::validate_object(other),
    }
}

/// Admission check for admin access: a claim (or template) whose requests ask for
/// `adminAccess: true` is only allowed in a namespace labelled
/// `resource.kubernetes.io/admin-access: "true"`.
///
/// `namespaces` holds the Namespace objects known to the caller; when the claim's namespace is
/// not among them, nothing can be checked and no error is reported. `spec_path` is `spec` for a
/// claim and `spec.spec` for a template.
pub fn admit_admin_access(
    spec: &ResourceClaimSpec,
    namespace: &str,
    spec_path: &str,
    namespaces: &BTreeMap<String, Namespace>,
) -> Vec<FieldError> {
    let Some(index) = spec.devices.requests.iter().position(|r| {
        r.exactly
            .as_ref()
            .is_some_and(|e| e.admin_access == Some(true))
    }) else {
        return Vec::new();
    };
    let Some(ns) = namespaces.get(namespace) else {
        return Vec::new();
    };
    if ns
        .metadata
        .labels
        .get(DRA_ADMIN_NAMESPACE_LABEL_KEY)
        .is_some_and(|v| v == "true")
    {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        &format!("{spec_path}.devices.requests[{index}].exactly.adminAccess"),
        format!(
            "admin access to devices requires the `{DRA_ADMIN_NAMESPACE_LABEL_KEY}: true` label on the containing namespace"
        ),
    )]
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::load::{LoadOptions, decode_object, parse_str};

    /// The errors of one YAML document, as `path: message` lines.
    fn errors(yaml: &str) -> Vec<String> {
        let docs = parse_str("case.yaml", yaml).expect("parses");
        let object = decode_object(&docs[0], &LoadOptions::default()).expect("decodes");
        validate_object(&object, &DraCel)
            .into_iter()
            .map(|e| e.to_string())
            .collect()
    }

    /// Issue 15: a NodeTopology named `../../etc` was accepted. Every kind's name is checked
    /// as upstream checks it (here the kinds that had no rules).
    #[test]
    fn names_of_every_kind_are_validated() {
        let topology = errors(
            "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: ../../etc\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n",
        );
        assert!(
            topology.iter().any(|e| e.starts_with(
                "metadata.name: Invalid value: \"../../etc\": a lowercase RFC 1123 subdomain"
            )),
            "{topology:?}"
        );
        let lease = errors(
            "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: a/b\n  namespace: default\n",
        );
        assert!(
            lease
                .iter()
                .any(|e| e.starts_with("metadata.name: Invalid value: \"a/b\"")),
            "{lease:?}"
        );
        let event = errors(
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: Bad_Name\n  namespace: default\ninvolvedObject: {kind: Pod, name: p}\n",
        );
        assert!(
            event
                .iter()
                .any(|e| e.starts_with("metadata.name: Invalid value: \"Bad_Name\"")),
            "{event:?}"
        );
        assert_eq!(
            errors(
                "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: gpu-node-1\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n"
            ),
            Vec::<String>::new()
        );
    }
}
