//! core/v1 and scheduling rules this domain needs: node selectors, taints, tolerations, and the
//! claim references of Pods and PodGroups.

use std::collections::BTreeSet;

use allot_api::core::v1::{
    Namespace, Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, Pod,
    PodResourceClaim, TaintEffect, TolerationOperator,
};
use allot_api::scheduling::v1beta1::PodGroup;

use crate::field::{FieldError, child, index};
use crate::meta::{name_is_dns_label, name_is_dns_subdomain, validate_object_meta};
use crate::names::{validate_dns1123_label, validate_dns1123_subdomain, validate_label_name};

/// `ValidateNodeSelector`: at least one term, each requirement well-formed.
pub fn validate_node_selector(selector: &NodeSelector, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let terms_path = child(path, "nodeSelectorTerms");
    if selector.node_selector_terms.is_empty() {
        errs.push(FieldError::required(
            &terms_path,
            "must have at least one node selector term",
        ));
    }
    for (i, term) in selector.node_selector_terms.iter().enumerate() {
        let term_path = index(&terms_path, i);
        for (j, req) in term.match_expressions.iter().enumerate() {
            errs.extend(validate_node_selector_requirement(
                req,
                &index(&child(&term_path, "matchExpressions"), j),
            ));
        }
        for (j, req) in term.match_fields.iter().enumerate() {
            errs.extend(validate_node_field_selector_requirement(
                req,
                &index(&child(&term_path, "matchFields"), j),
            ));
        }
    }
    errs
}

fn validate_node_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let values = child(path, "values");
    match req.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn => {
            if req.values.is_empty() {
                errs.push(FieldError::required(
                    &values,
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist => {
            if !req.values.is_empty() {
                errs.push(FieldError::forbidden(
                    &values,
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            if req.values.len() != 1 {
                errs.push(FieldError::required(
                    &values,
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        NodeSelectorOperator::Other(ref op) => errs.push(FieldError::not_supported(
            &child(path, "operator"),
            op.as_str(),
            &["DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"],
        )),
    }
    errs.extend(validate_label_name(&req.key, &child(path, "key")));
    errs
}

fn validate_node_field_selector_requirement(
    req: &NodeSelectorRequirement,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match req.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn => {
            if req.values.len() != 1 {
                errs.push(FieldError::required(
                    &child(path, "values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        _ => errs.push(FieldError::invalid(
            &child(path, "operator"),
            req.operator.as_str(),
            "not a valid selector operator",
        )),
    }
    if req.key != "metadata.name" {
        errs.push(FieldError::not_supported(
            &child(path, "key"),
            req.key.as_str(),
            &["metadata.name"],
        ));
    }
    errs
}

/// Validates a Node: metadata, taints.
pub fn validate_node(node: &Node) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&node.metadata, false, name_is_dns_subdomain, "metadata");
    let mut seen = BTreeSet::new();
    for (i, taint) in node.spec.taints.iter().enumerate() {
        let path = index("spec.taints", i);
        errs.extend(validate_label_name(&taint.key, &child(&path, "key")));
        errs.extend(crate::names::validate_label_value(
            &taint.value,
            &child(&path, "value"),
        ));
        if let TaintEffect::Other(effect) = &taint.effect {
            if effect.is_empty() {
                errs.push(FieldError::required(&child(&path, "effect"), ""));
            } else {
                errs.push(FieldError::not_supported(
                    &child(&path, "effect"),
                    effect.as_str(),
                    &["NoExecute", "NoSchedule", "PreferNoSchedule"],
                ));
            }
        }
        if !seen.insert((taint.key.clone(), taint.effect.as_str().to_string())) {
            errs.push(FieldError::duplicate(
                &path,
                format!("{}:{}", taint.key, taint.effect),
            ));
        }
    }
    errs
}

/// Validates a Namespace: metadata (a DNS label name).
pub fn validate_namespace(namespace: &Namespace) -> Vec<FieldError> {
    validate_object_meta(&namespace.metadata, false, name_is_dns_label, "metadata")
}

fn validate_pod_claims(claims: &[PodResourceClaim], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, claim) in claims.iter().enumerate() {
        let item = index(path, i);
        errs.extend(validate_dns1123_label(&claim.name, &child(&item, "name")));
        if !names.insert(claim.name.as_str()) {
            errs.push(FieldError::duplicate(
                &child(&item, "name"),
                claim.name.as_str(),
            ));
        }
        match (
            &claim.resource_claim_name,
            &claim.resource_claim_template_name,
        ) {
            (Some(name), None) => errs.extend(validate_dns1123_subdomain(
                name,
                &child(&item, "resourceClaimName"),
            )),
            (None, Some(name)) => errs.extend(validate_dns1123_subdomain(
                name,
                &child(&item, "resourceClaimTemplateName"),
            )),
            (None, None) => errs.push(FieldError::invalid(
                &item,
                claim.name.as_str(),
                "at least one of `resourceClaimName` or `resourceClaimTemplateName` must be set",
            )),
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                &item,
                claim.name.as_str(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be set",
            )),
        }
    }
    errs
}

/// Validates a Pod: metadata, containers' claim references and resource requirements, resource
/// claims, tolerations.
pub fn validate_pod(pod: &Pod) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&pod.metadata, true, name_is_dns_subdomain, "metadata");
    let claim_names: BTreeSet<&str> = pod
        .spec
        .resource_claims
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    errs.extend(validate_pod_claims(
        &pod.spec.resource_claims,
        "spec.resourceClaims",
    ));
    if pod.spec.containers.is_empty() {
        errs.push(FieldError::required("spec.containers", ""));
    }
    let mut container_names = BTreeSet::new();
    for (list, containers) in [
        ("spec.initContainers", &pod.spec.init_containers),
        ("spec.containers", &pod.spec.containers),
    ] {
        for (i, container) in containers.iter().enumerate() {
            let path = index(list, i);
            if container.name.is_empty() {
                errs.push(FieldError::required(&child(&path, "name"), ""));
            } else {
                errs.extend(validate_dns1123_label(
                    &container.name,
                    &child(&path, "name"),
                ));
                if !container_names.insert(container.name.as_str()) {
                    errs.push(FieldError::duplicate(
                        &child(&path, "name"),
                        container.name.as_str(),
                    ));
                }
            }
            if let Some(resources) = &container.resources {
                for (j, claim) in resources.claims.iter().enumerate() {
                    let claim_path = index(&child(&path, "resources.claims"), j);
                    if !claim_names.contains(claim.name.as_str()) {
                        errs.push(FieldError::not_found(
                            &child(&claim_path, "name"),
                            claim.name.as_str(),
                        ));
                    }
                }
            }
        }
    }
    errs.extend(crate::resources::validate_pod_spec_resources(
        &pod.spec, "spec",
    ));
    for (i, toleration) in pod.spec.tolerations.iter().enumerate() {
        let path = index("spec.tolerations", i);
        if !toleration.key.is_empty() {
            errs.extend(validate_label_name(&toleration.key, &child(&path, "key")));
        }
        if let Some(TolerationOperator::Other(op)) = &toleration.operator {
            errs.push(FieldError::not_supported(
                &child(&path, "operator"),
                op.as_str(),
                &["Equal", "Exists", "Gt", "Lt"],
            ));
        }
        if let Some(TaintEffect::Other(effect)) = &toleration.effect {
            errs.push(FieldError::not_supported(
                &child(&path, "effect"),
                effect.as_str(),
                &["NoExecute", "NoSchedule", "PreferNoSchedule"],
            ));
        }
    }
    if let Some(affinity) = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        && let Some(required) = &affinity.required_during_scheduling_ignored_during_execution
    {
        errs.extend(validate_node_selector(
            required,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution",
        ));
    }
    errs
}

/// Validates a PodGroup: metadata, the scheduling policy union and resource claims.
pub fn validate_pod_group(group: &PodGroup) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&group.metadata, true, name_is_dns_subdomain, "metadata");
    if let Some(policy) = &group.spec.scheduling_policy {
        match (&policy.basic, &policy.gang) {
            (Some(_), Some(_)) => errs.push(FieldError::invalid(
                "spec.schedulingPolicy",
                "{basic, gang}",
                "exactly one of `basic`, `gang` is required, but multiple fields are set",
            )),
            (None, None) => errs.push(FieldError::required(
                "spec.schedulingPolicy",
                "exactly one of `basic`, `gang` is required",
            )),
            (None, Some(gang)) if gang.min_count <= 0 => errs.push(FieldError::invalid(
                "spec.schedulingPolicy.gang.minCount",
                i64::from(gang.min_count),
                "must be greater than zero",
            )),
            _ => {}
        }
    }
    let claims: Vec<PodResourceClaim> = group
        .spec
        .resource_claims
        .iter()
        .map(|c| PodResourceClaim {
            name: c.name.clone(),
            resource_claim_name: c.resource_claim_name.clone(),
            resource_claim_template_name: c.resource_claim_template_name.clone(),
        })
        .collect();
    errs.extend(validate_pod_claims(&claims, "spec.resourceClaims"));
    errs
}
