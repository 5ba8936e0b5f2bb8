//! Update validation: what a write may change in an object that already exists, as upstream's
//! `Validate*Update` functions and registry strategies decide it.
//!
//! The API server calls [`validate_object_update`] on every update path (PUT, each PATCH type,
//! server-side apply; main resource and `/status`) with the object as it would be stored and
//! the stored one, after it reset what the endpoint may not touch (the status on the main
//! resource, everything but the status on `/status`, as upstream's `PrepareForUpdate`). The
//! create rules ([`crate::validate_object`]) still run on the new object; these functions add
//! what only a comparison with the old object can tell.
//!
//! Rules per kind (upstream's function in parentheses):
//! - every kind: `metadata` as `ValidateObjectMetaUpdate` (no new finalizers once deleting, a
//!   generation never decremented, name, namespace, uid, creation and deletion timestamps,
//!   deletion grace period immutable).
//! - Pod (`ValidatePodUpdate`): only images, `activeDeadlineSeconds` (set or lowered),
//!   tolerations (additions; `tolerationSeconds` of existing ones), scheduling gates
//!   (removals), `terminationGracePeriodSeconds` (to 1 from a negative value) and, while the
//!   pod is gated, additions to `nodeSelector` and to required node affinity terms may change;
//!   anything else (`nodeName` included: that is the `pods/binding` subresource's job, and
//!   resources: `pods/resize`'s) is refused with upstream's "pod updates may not change fields
//!   other than ..." on `spec`, followed by the changed fields. Mirror-pod and AppArmor
//!   annotations may not be added, changed or removed. Status (`ValidatePodStatusUpdate`):
//!   `status.qosClass` is immutable, `status.resourceClaimStatuses` must name claims of the
//!   spec, once each, condition types must be qualified names.
//! - ResourceClaim (`ValidateResourceClaimUpdate`): `spec` immutable. Status
//!   (`ValidateResourceClaimStatusUpdate`): an allocation, once set, may only be removed, never
//!   changed; no new `reservedFor` entries while the claim is being deleted.
//! - ResourceClaimTemplate (`ValidateResourceClaimTemplateUpdate`): `spec` immutable.
//! - ResourceSlice (`ValidateResourceSliceUpdate`): `spec.driver`, `spec.pool.name` and
//!   `spec.nodeName` immutable.
//! - ResourcePoolStatusRequest: `spec` immutable; its status, once `observationTime` is set.
//! - PodGroup (`ValidatePodGroupUpdate` and the `+k8s:immutable` fields of its spec): every
//!   spec field is immutable.
//! - Namespace (`ValidateNamespaceStatusUpdate`): `status.phase` is `Active` unless the
//!   namespace is being deleted, then `Terminating` (its spec finalizers are kept by the server,
//!   as upstream's strategy keeps them).
//! - Node (`ValidateNodeUpdate`): `spec.podCIDRs` and `spec.providerID` only from unset,
//!   `spec.externalID` never.
//! - RoleBinding, ClusterRoleBinding (`ValidateRoleBindingUpdate`): `roleRef` immutable.
//! - DeviceClass, DeviceTaintRule, Role, ClusterRole, Lease, Event (core/v1, where upstream
//!   checks no immutable field): metadata only; the create rules still apply.
//! - The workload, storage, service, policy and scheduling kinds (`crate::kinds`): see
//!   [`crate::kinds::validate_object_update`] and the functions it calls (selectors of apps/v1
//!   workloads, a Job's template and policies, a PVC's spec but for growing requests, a
//!   StorageClass's provisioner, parameters, reclaim policy and binding mode, a PriorityClass's
//!   value and policy, a PV's source, ...).
//! - NodeTopology (allot's own kind): metadata only. Its body describes the simulated
//!   machine; an edit is a hardware change, which `allot serve` answers as a kubelet restart
//!   does (the node's agent restarts from the new machine, checkpoints of the old one are
//!   dropped), and the body is checked as on create.
//!
//! Where a whole structure is immutable (a claim's or template's spec, a pool status request's
//! spec, a PodGroup spec field) the error is the declarative validator's (`+k8s:immutable`)
//! `Forbidden: field is immutable`: upstream's handwritten twin prints the Go structure with
//! `%#v` (pointer addresses included), which no other implementation can reproduce. Scalars
//! keep the handwritten `Invalid value: "x": field is immutable`.
//!
//! Deliberate differences: a container without an image stays valid on update (allot accepts
//! image-less pods, a simulation needs no image), and an update without a resourceVersion is
//! an unconditional update as the server treats it, not an error.

mod pod;

#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use allot_api::allot::v1alpha1::NodeTopology;
use allot_api::core::v1::{Namespace, Node};
use allot_api::load::Object;
use allot_api::meta::v1::ObjectMeta;
use allot_api::rbac::v1::{ClusterRoleBinding, RoleBinding, RoleRef};
use allot_api::resource::v1::{ResourceClaim, ResourceClaimTemplate, ResourceSlice};
use allot_api::resource::v1alpha3::ResourcePoolStatusRequest;
use allot_api::scheduling::v1beta1::PodGroup;

use crate::field::{BadValue, FieldError, child};

pub use pod::{validate_pod_status_update, validate_pod_update};

/// The message of an immutable field.
pub const FIELD_IMMUTABLE: &str = "field is immutable";

/// Which endpoint the write came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subresource {
    /// The object itself (its status is kept as stored).
    Main,
    /// `/status` (everything but the status is kept as stored).
    Status,
}

/// The update rules for `new` replacing `old` through `subresource`. Objects of different
/// kinds, and kinds without update rules, validate as empty.
pub fn validate_object_update(
    new: &Object,
    old: &Object,
    subresource: Subresource,
) -> Vec<FieldError> {
    use Subresource::{Main, Status};
    match (new, old, subresource) {
        (Object::Pod(n), Object::Pod(o), Main) => validate_pod_update(n, o),
        (Object::Pod(n), Object::Pod(o), Status) => validate_pod_status_update(n, o),
        (Object::ResourceClaim(n), Object::ResourceClaim(o), Main) => {
            validate_resource_claim_update(n, o)
        }
        (Object::ResourceClaim(n), Object::ResourceClaim(o), Status) => {
            validate_resource_claim_status_update(n, o)
        }
        (Object::ResourceClaimTemplate(n), Object::ResourceClaimTemplate(o), _) => {
            validate_resource_claim_template_update(n, o)
        }
        (Object::ResourceSlice(n), Object::ResourceSlice(o), _) => {
            validate_resource_slice_update(n, o)
        }
        (Object::ResourcePoolStatusRequest(n), Object::ResourcePoolStatusRequest(o), Main) => {
            validate_resource_pool_status_request_update(n, o)
        }
        (Object::ResourcePoolStatusRequest(n), Object::ResourcePoolStatusRequest(o), Status) => {
            validate_resource_pool_status_request_status_update(n, o)
        }
        (Object::PodGroup(n), Object::PodGroup(o), Main) => validate_pod_group_update(n, o),
        (Object::Namespace(n), Object::Namespace(o), Main) => validate_namespace_update(n, o),
        (Object::Namespace(n), Object::Namespace(o), Status) => {
            validate_namespace_status_update(n, o)
        }
        (Object::Node(n), Object::Node(o), _) => validate_node_update(n, o),
        (Object::RoleBinding(n), Object::RoleBinding(o), _) => validate_role_binding_update(n, o),
        (Object::ClusterRoleBinding(n), Object::ClusterRoleBinding(o), _) => {
            validate_cluster_role_binding_update(n, o)
        }
        (Object::NodeTopology(n), Object::NodeTopology(o), _) => {
            validate_node_topology_update(n, o)
        }
        (Object::DeviceClass(n), Object::DeviceClass(o), _) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        (Object::DeviceTaintRule(n), Object::DeviceTaintRule(o), _) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        (Object::PodGroup(n), Object::PodGroup(o), Status) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        (Object::Role(n), Object::Role(o), _) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        (Object::ClusterRole(n), Object::ClusterRole(o), _) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        (Object::Lease(n), Object::Lease(o), _) => {
            validate_object_meta_update(&n.metadata, &o.metadata, "metadata")
        }
        // core/v1 Events: upstream checks nothing on update for requests of that version.
        (Object::Event(_), Object::Event(_), _) => Vec::new(),
        // The workload, storage, service, policy and scheduling kinds.
        (n, o, subresource) => crate::kinds::validate_object_update(n, o, subresource),
    }
}

/// `ValidateObjectMetaUpdate` (apimachinery): no new finalizers once the object is being
/// deleted, a generation that never goes down, and the identity fields immutable.
pub fn validate_object_meta_update(
    new: &ObjectMeta,
    old: &ObjectMeta,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if old.deletion_timestamp.is_some() {
        let old_finalizers: BTreeSet<&str> = old.finalizers.iter().map(String::as_str).collect();
        let extra: BTreeSet<&str> = new
            .finalizers
            .iter()
            .map(String::as_str)
            .filter(|f| !old_finalizers.contains(f))
            .collect();
        if !extra.is_empty() {
            errs.push(FieldError::forbidden(
                &child(path, "finalizers"),
                format!(
                    "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                    go_string_slice(extra)
                ),
            ));
        }
    }
    if new.generation.unwrap_or(0) < old.generation.unwrap_or(0) {
        errs.push(FieldError::invalid(
            &child(path, "generation"),
            new.generation.unwrap_or(0),
            "must not be decremented",
        ));
    }
    let strings = [
        ("name", &new.name, &old.name),
        ("namespace", &new.namespace, &old.namespace),
        ("uid", &new.uid, &old.uid),
    ];
    for (field, new_value, old_value) in strings {
        if new_value != old_value {
            errs.push(immutable_str(&child(path, field), new_value));
        }
    }
    let times = [
        (
            "creationTimestamp",
            &new.creation_timestamp,
            &old.creation_timestamp,
        ),
        (
            "deletionTimestamp",
            &new.deletion_timestamp,
            &old.deletion_timestamp,
        ),
    ];
    for (field, new_value, old_value) in times {
        if new_value != old_value {
            errs.push(FieldError::invalid(
                &child(path, field),
                new_value.as_ref().map_or(BadValue::Null, BadValue::from),
                FIELD_IMMUTABLE,
            ));
        }
    }
    if new.deletion_grace_period_seconds != old.deletion_grace_period_seconds {
        errs.push(FieldError::invalid(
            &child(path, "deletionGracePeriodSeconds"),
            new.deletion_grace_period_seconds
                .map_or(BadValue::Null, BadValue::Int),
            FIELD_IMMUTABLE,
        ));
    }
    errs
}

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`.
pub(crate) fn go_string_slice<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    let quoted: Vec<String> = items.into_iter().map(|s| format!("{s:?}")).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// `Invalid value: "new": field is immutable` for a string field.
fn immutable_str(path: &str, new: &str) -> FieldError {
    FieldError::invalid(path, new, FIELD_IMMUTABLE)
}

/// `Invalid value: "new": field is immutable` (or `null`) for an optional string field.
fn immutable_opt_str(path: &str, new: Option<&String>) -> FieldError {
    FieldError::invalid(
        path,
        new.map_or(BadValue::Null, BadValue::from),
        FIELD_IMMUTABLE,
    )
}

/// The declarative `+k8s:immutable` error of a structure.
fn immutable(path: &str) -> FieldError {
    FieldError::forbidden(path, FIELD_IMMUTABLE)
}

/// `ValidateResourceClaimUpdate`: the spec is immutable.
pub fn validate_resource_claim_update(new: &ResourceClaim, old: &ResourceClaim) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.spec != old.spec {
        errs.push(immutable("spec"));
    }
    errs
}

/// `ValidateResourceClaimStatusUpdate`: an allocation is set once (it may be removed to
/// deallocate, not changed), and a claim being deleted takes no new consumers.
pub fn validate_resource_claim_status_update(
    new: &ResourceClaim,
    old: &ResourceClaim,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.metadata.deletion_timestamp.is_some()
        && new.status.allocation.is_some()
        && !new.status.reserved_for.is_empty()
    {
        let added = new
            .status
            .reserved_for
            .iter()
            .any(|r| !old.status.reserved_for.contains(r));
        if added {
            errs.push(FieldError::forbidden(
                "status.reservedFor",
                "new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
            ));
        }
    }
    if let (Some(new_allocation), Some(old_allocation)) =
        (&new.status.allocation, &old.status.allocation)
        && new_allocation != old_allocation
    {
        // The declarative `+k8s:update=NoModify` rule upstream's error is covered by.
        errs.push(FieldError::invalid(
            "status.allocation",
            BadValue::Null,
            "field cannot be modified once set",
        ));
    }
    errs
}

/// `ValidateResourceClaimTemplateUpdate`: the spec is immutable.
pub fn validate_resource_claim_template_update(
    new: &ResourceClaimTemplate,
    old: &ResourceClaimTemplate,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.spec != old.spec {
        errs.push(immutable("spec"));
    }
    errs
}

/// `ValidateResourceSliceUpdate`: driver, pool name and node name are immutable.
pub fn validate_resource_slice_update(new: &ResourceSlice, old: &ResourceSlice) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.spec.pool.name != old.spec.pool.name {
        errs.push(immutable_str("spec.pool.name", &new.spec.pool.name));
    }
    if new.spec.driver != old.spec.driver {
        errs.push(immutable_str("spec.driver", &new.spec.driver));
    }
    if new.spec.node_name != old.spec.node_name {
        errs.push(immutable_opt_str(
            "spec.nodeName",
            new.spec.node_name.as_ref(),
        ));
    }
    errs
}

/// `ValidateResourcePoolStatusRequestUpdate`: the spec is immutable.
pub fn validate_resource_pool_status_request_update(
    new: &ResourcePoolStatusRequest,
    old: &ResourcePoolStatusRequest,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.spec != old.spec {
        errs.push(immutable("spec"));
    }
    errs
}

/// `ValidateResourcePoolStatusRequestStatusUpdate`: an answered request (with an
/// `observationTime`) keeps its status.
pub fn validate_resource_pool_status_request_status_update(
    new: &ResourcePoolStatusRequest,
    old: &ResourcePoolStatusRequest,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if old.status.observation_time.is_some() && new.status != old.status {
        errs.push(immutable("status"));
    }
    errs
}

/// `ValidatePodGroupUpdate` with the spec fields upstream marks `+k8s:immutable`: every spec
/// field.
pub fn validate_pod_group_update(new: &PodGroup, old: &PodGroup) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    let (n, o) = (&new.spec, &old.spec);
    let changed = [
        (
            "podGroupTemplateRef",
            n.pod_group_template_ref != o.pod_group_template_ref,
        ),
        (
            "schedulingPolicy",
            n.scheduling_policy != o.scheduling_policy,
        ),
        (
            "schedulingConstraints",
            n.scheduling_constraints != o.scheduling_constraints,
        ),
        ("resourceClaims", n.resource_claims != o.resource_claims),
        ("disruptionMode", n.disruption_mode != o.disruption_mode),
        (
            "priorityClassName",
            n.priority_class_name != o.priority_class_name,
        ),
        ("priority", n.priority != o.priority),
        (
            "preemptionPolicy",
            n.preemption_policy != o.preemption_policy,
        ),
    ];
    for (field, differs) in changed {
        if differs {
            errs.push(immutable(&child("spec", field)));
        }
    }
    errs
}

/// `ValidateNamespaceUpdate`: metadata only (the server keeps the spec's finalizers).
pub fn validate_namespace_update(new: &Namespace, old: &Namespace) -> Vec<FieldError> {
    validate_object_meta_update(&new.metadata, &old.metadata, "metadata")
}

/// `ValidateNamespaceStatusUpdate`: the phase follows the deletion timestamp.
pub fn validate_namespace_status_update(new: &Namespace, old: &Namespace) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    let phase = new
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or_default();
    if new.metadata.deletion_timestamp.is_none() {
        if phase != "Active" {
            errs.push(FieldError::invalid(
                "status.Phase",
                phase,
                "may only be 'Active' if `deletionTimestamp` is empty",
            ));
        }
    } else if phase != "Terminating" {
        errs.push(FieldError::invalid(
            "status.Phase",
            phase,
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        ));
    }
    errs
}

/// `ValidateNodeUpdate`: pod CIDRs and provider ID are set once, the external ID never
/// changes.
pub fn validate_node_update(new: &Node, old: &Node) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    let cidrs = |node: &Node| -> Vec<String> {
        if node.spec.pod_cidrs.is_empty() {
            node.spec.pod_cidr.iter().cloned().collect()
        } else {
            node.spec.pod_cidrs.clone()
        }
    };
    let (new_cidrs, old_cidrs) = (cidrs(new), cidrs(old));
    if !old_cidrs.is_empty() {
        let message = "node updates may not change podCIDR except from \"\" to valid";
        if new_cidrs.len() != old_cidrs.len() {
            errs.push(FieldError::forbidden("spec.podCIDRs", message));
        } else {
            for (new_cidr, old_cidr) in new_cidrs.iter().zip(&old_cidrs) {
                if new_cidr != old_cidr {
                    errs.push(FieldError::forbidden("spec.podCIDRs", message));
                }
            }
        }
    }
    let old_provider = old.spec.provider_id.as_deref().unwrap_or_default();
    if !old_provider.is_empty()
        && new.spec.provider_id.as_deref().unwrap_or_default() != old_provider
    {
        errs.push(FieldError::forbidden(
            "spec.providerID",
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if new.spec.external_id.as_deref().unwrap_or_default()
        != old.spec.external_id.as_deref().unwrap_or_default()
    {
        errs.push(FieldError::forbidden(
            "spec.externalID",
            "may not be updated",
        ));
    }
    errs
}

/// The error of a changed `roleRef`, with Go's rendering of the new value.
fn role_ref_changed(new: &RoleRef) -> FieldError {
    FieldError::invalid(
        "roleRef",
        BadValue::Raw(format!(
            "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
            new.api_group, new.kind, new.name
        )),
        "cannot change roleRef",
    )
}

/// `ValidateRoleBindingUpdate`: the role reference is immutable.
pub fn validate_role_binding_update(new: &RoleBinding, old: &RoleBinding) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.role_ref != old.role_ref {
        errs.push(role_ref_changed(&new.role_ref));
    }
    errs
}

/// `ValidateClusterRoleBindingUpdate`: the role reference is immutable.
pub fn validate_cluster_role_binding_update(
    new: &ClusterRoleBinding,
    old: &ClusterRoleBinding,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    if new.role_ref != old.role_ref {
        errs.push(role_ref_changed(&new.role_ref));
    }
    errs
}

/// NodeTopology (allot's own kind): metadata only, see the module notes.
pub fn validate_node_topology_update(new: &NodeTopology, old: &NodeTopology) -> Vec<FieldError> {
    validate_object_meta_update(&new.metadata, &old.metadata, "metadata")
}
