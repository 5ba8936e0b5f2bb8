//! core/v1 and scheduling rules this domain needs: node selectors, taints, tolerations, and the
//! claim references of Pods and PodGroups.

use std::collections::BTreeSet;

use std::collections::BTreeMap;

use allot_api::core::v1::{
    Container, Namespace, Node, NodeInclusionPolicy, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, Pod, PodAffinityTerm, PodResourceClaim, PreemptionPolicy, Protocol,
    TaintEffect, TolerationOperator, TopologySpreadConstraint, UnsatisfiableConstraintAction,
    WeightedPodAffinityTerm,
};
use allot_api::meta::v1::{LabelSelector, LabelSelectorRequirement};
use allot_api::scheduling::v1beta1::PodGroup;

use crate::field::{FieldError, child, index};
use crate::meta::{
    name_is_dns_label, name_is_dns_subdomain, validate_label_selector, validate_object_meta,
};
use crate::names::{
    is_dns1123_label, is_qualified_name, validate_dns1123_label, validate_dns1123_subdomain,
    validate_label_name,
};

/// Upstream's `isNotPositiveErrorMsg`.
const NOT_POSITIVE: &str = "must be greater than zero";

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
            errs.extend(validate_container_ports(container, &child(&path, "ports")));
            if let Some(image) = &container.image
                && image.trim() != image
            {
                errs.push(FieldError::invalid(
                    &child(&path, "image"),
                    image.as_str(),
                    "must not have leading or trailing whitespace",
                ));
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
    // Host ports: init containers one by one (they run one after the other), the others
    // together (upstream `checkHostPortConflicts`).
    for (i, container) in pod.spec.init_containers.iter().enumerate() {
        errs.extend(host_port_conflicts(
            std::slice::from_ref(container),
            i,
            "spec.initContainers",
        ));
    }
    errs.extend(host_port_conflicts(
        &pod.spec.containers,
        0,
        "spec.containers",
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
    if let Some(affinity) = &pod.spec.affinity {
        let labels = &pod.metadata.labels;
        if let Some(a) = &affinity.pod_affinity {
            errs.extend(validate_pod_affinity_terms(
                &a.required_during_scheduling_ignored_during_execution,
                &a.preferred_during_scheduling_ignored_during_execution,
                labels,
                "spec.affinity.podAffinity",
            ));
        }
        if let Some(a) = &affinity.pod_anti_affinity {
            errs.extend(validate_pod_affinity_terms(
                &a.required_during_scheduling_ignored_during_execution,
                &a.preferred_during_scheduling_ignored_during_execution,
                labels,
                "spec.affinity.podAntiAffinity",
            ));
        }
    }
    errs.extend(validate_topology_spread_constraints(
        &pod.spec.topology_spread_constraints,
        &pod.metadata.labels,
        "spec.topologySpreadConstraints",
    ));
    let mut gates = BTreeSet::new();
    for (i, gate) in pod.spec.scheduling_gates.iter().enumerate() {
        let path = index("spec.schedulingGates", i);
        for msg in is_qualified_name(&gate.name) {
            errs.push(FieldError::invalid(&path, gate.name.as_str(), msg));
        }
        if !gates.insert(gate.name.as_str()) {
            errs.push(FieldError::duplicate(&path, gate.name.as_str()));
        }
    }
    match &pod.spec.preemption_policy {
        None | Some(PreemptionPolicy::PreemptLowerPriority | PreemptionPolicy::Never) => {}
        Some(PreemptionPolicy::Other(p)) if p.is_empty() => {
            errs.push(FieldError::required("spec.preemptionPolicy", ""));
        }
        Some(PreemptionPolicy::Other(p)) => errs.push(FieldError::not_supported(
            "spec.preemptionPolicy",
            p.as_str(),
            &["PreemptLowerPriority", "Never"],
        )),
    }
    errs
}

/// Upstream `IsValidPortNum` as an Invalid error.
fn port_number(path: &str, port: i32) -> Option<FieldError> {
    (!(1..=65535).contains(&port)).then(|| {
        FieldError::invalid(
            path,
            i64::from(port),
            "must be between 1 and 65535, inclusive",
        )
    })
}

/// Upstream `IsValidPortName`'s messages (an IANA_SVC_NAME).
fn port_name_problems(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    if name.len() > 15 {
        out.push("must be no more than 15 characters".to_string());
    }
    if !name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        out.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if name.contains("--") {
        out.push("must not contain consecutive hyphens".into());
    }
    if !name.chars().any(|c| c.is_ascii_lowercase()) {
        out.push("must contain at least one letter (a-z)".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        out.push("must not begin or end with a hyphen".into());
    }
    out
}

/// Upstream `validateContainerPorts` (the protocol defaults to TCP, as upstream's defaulting
/// does before validation).
fn validate_container_ports(container: &Container, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut names = BTreeSet::new();
    for (i, port) in container.ports.iter().enumerate() {
        let item = index(path, i);
        if let Some(name) = port.name.as_deref().filter(|n| !n.is_empty()) {
            let problems = port_name_problems(name);
            if !problems.is_empty() {
                for msg in problems {
                    errs.push(FieldError::invalid(&child(&item, "name"), name, msg));
                }
            } else if !names.insert(name) {
                errs.push(FieldError::duplicate(&child(&item, "name"), name));
            }
        }
        if port.container_port == 0 {
            errs.push(FieldError::required(&child(&item, "containerPort"), ""));
        } else {
            errs.extend(port_number(
                &child(&item, "containerPort"),
                port.container_port,
            ));
        }
        if let Some(host) = port.host_port.filter(|p| *p != 0) {
            errs.extend(port_number(&child(&item, "hostPort"), host));
        }
        if let Some(Protocol::Other(p)) = &port.protocol {
            if p.is_empty() {
                errs.push(FieldError::required(&child(&item, "protocol"), ""));
            } else {
                errs.push(FieldError::not_supported(
                    &child(&item, "protocol"),
                    p.as_str(),
                    &["SCTP", "TCP", "UDP"],
                ));
            }
        }
    }
    errs
}

/// Upstream `AccumulateUniqueHostPorts`: a `protocol/hostIP/hostPort` taken twice.
/// `first`: the index of `containers[0]` in its list.
fn host_port_conflicts(containers: &[Container], first: usize, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen = BTreeSet::new();
    for (ci, container) in containers.iter().enumerate() {
        let ports = child(&index(path, first + ci), "ports");
        for (pi, port) in container.ports.iter().enumerate() {
            let Some(host) = port.host_port.filter(|p| *p != 0) else {
                continue;
            };
            let protocol = port.protocol.as_ref().map_or("TCP", |p| p.as_str());
            let key = format!(
                "{protocol}/{}/{host}",
                port.host_ip.as_deref().unwrap_or("")
            );
            if !seen.insert(key.clone()) {
                errs.push(FieldError::duplicate(
                    &child(&index(&ports, pi), "hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

/// Upstream `validatePodAffinity`/`validatePodAntiAffinity`: required terms and weighted
/// preferred terms.
fn validate_pod_affinity_terms(
    required: &[PodAffinityTerm],
    preferred: &[WeightedPodAffinityTerm],
    labels: &BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let required_path = child(path, "requiredDuringSchedulingIgnoredDuringExecution");
    for (i, term) in required.iter().enumerate() {
        errs.extend(validate_pod_affinity_term(
            term,
            labels,
            &index(&required_path, i),
        ));
    }
    let preferred_path = child(path, "preferredDuringSchedulingIgnoredDuringExecution");
    for (j, weighted) in preferred.iter().enumerate() {
        let item = index(&preferred_path, j);
        if weighted.weight <= 0 || weighted.weight > 100 {
            errs.push(FieldError::invalid(
                &child(&item, "weight"),
                i64::from(weighted.weight),
                "must be in the range 1-100",
            ));
        }
        errs.extend(validate_pod_affinity_term(
            &weighted.pod_affinity_term,
            labels,
            &child(&item, "podAffinityTerm"),
        ));
    }
    errs
}

/// Upstream `validatePodAffinityTerm`.
fn validate_pod_affinity_term(
    term: &PodAffinityTerm,
    labels: &BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(selector) = &term.label_selector {
        errs.extend(validate_label_selector(
            selector,
            false,
            &child(path, "labelSelector"),
        ));
    }
    if let Some(selector) = &term.namespace_selector {
        errs.extend(validate_label_selector(
            selector,
            false,
            &child(path, "namespaceSelector"),
        ));
    }
    for name in &term.namespaces {
        for msg in is_dns1123_label(name) {
            // Upstream's path says "namespace".
            errs.push(FieldError::invalid(
                &child(path, "namespace"),
                name.as_str(),
                msg,
            ));
        }
    }
    errs.extend(validate_match_label_keys(
        path,
        &term.match_label_keys,
        &term.mismatch_label_keys,
        term.label_selector.as_ref(),
        labels,
    ));
    if term.topology_key.is_empty() {
        errs.push(FieldError::required(
            &child(path, "topologyKey"),
            "can not be empty",
        ));
    } else {
        errs.extend(validate_label_name(
            &term.topology_key,
            &child(path, "topologyKey"),
        ));
    }
    errs
}

/// Upstream `validateMatchLabelKeysAndMismatchLabelKeys`, on the selector as the API server
/// leaves it: it merges the keys the pod has a label for into the selector before
/// validating (`key in (value)` for matchLabelKeys, `key notin (value)` for
/// mismatchLabelKeys), so a key named in both matchLabelKeys and the user's selector is an
/// error. allot does not rewrite the stored selector (the scheduler merges when it reads the
/// pod); this validates the merged form.
fn validate_match_label_keys(
    path: &str,
    match_keys: &[String],
    mismatch_keys: &[String],
    selector: Option<&LabelSelector>,
    labels: &BTreeMap<String, String>,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (name, keys) in [
        ("matchLabelKeys", match_keys),
        ("mismatchLabelKeys", mismatch_keys),
    ] {
        if keys.is_empty() {
            continue;
        }
        let keys_path = child(path, name);
        if selector.is_none() {
            errs.push(FieldError::forbidden(
                &keys_path,
                "must not be specified when labelSelector is not set",
            ));
            continue;
        }
        for (i, key) in keys.iter().enumerate() {
            errs.extend(validate_label_name(key, &index(&keys_path, i)));
        }
    }
    if let Some(selector) = selector {
        let mut merged: Vec<LabelSelectorRequirement> = selector.match_expressions.clone();
        for (keys, operator) in [(match_keys, "In"), (mismatch_keys, "NotIn")] {
            for key in keys {
                if let Some(value) = labels.get(key) {
                    merged.push(LabelSelectorRequirement {
                        key: key.clone(),
                        operator: operator.into(),
                        values: vec![value.clone()],
                    });
                }
            }
        }
        let positions: BTreeMap<&str, usize> = match_keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.as_str(), i))
            .collect();
        let mut seen: BTreeSet<&str> = selector.match_labels.keys().map(String::as_str).collect();
        for expression in &merged {
            let key = expression.key.as_str();
            if let Some(i) = positions.get(key)
                && seen.contains(key)
            {
                errs.push(FieldError::invalid(
                    &index(path, *i),
                    key,
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            seen.insert(key);
        }
    }
    for (i, key) in match_keys.iter().enumerate() {
        if mismatch_keys.contains(key) {
            errs.push(FieldError::invalid(
                &index(&child(path, "matchLabelKeys"), i),
                key.as_str(),
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    errs
}

/// Upstream `validateTopologySpreadConstraints` (with the label selector merge of
/// `matchLabelKeys`, on since 1.34).
fn validate_topology_spread_constraints(
    constraints: &[TopologySpreadConstraint],
    labels: &BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, c) in constraints.iter().enumerate() {
        let item = index(path, i);
        if c.max_skew <= 0 {
            errs.push(FieldError::invalid(
                &child(&item, "maxSkew"),
                i64::from(c.max_skew),
                NOT_POSITIVE,
            ));
        }
        if c.topology_key.is_empty() {
            errs.push(FieldError::required(
                &child(&item, "topologyKey"),
                "can not be empty",
            ));
        }
        if let UnsatisfiableConstraintAction::Other(action) = &c.when_unsatisfiable {
            errs.push(FieldError::not_supported(
                &child(&item, "whenUnsatisfiable"),
                action.as_str(),
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if constraints[i + 1..].iter().any(|other| {
            other.topology_key == c.topology_key && other.when_unsatisfiable == c.when_unsatisfiable
        }) {
            errs.push(FieldError::duplicate(
                &child(&item, "{topologyKey, whenUnsatisfiable}"),
                format!("{{{}, {}}}", c.topology_key, c.when_unsatisfiable.as_str()),
            ));
        }
        if let Some(min) = c.min_domains {
            let min_path = child(&item, "minDomains");
            if min <= 0 {
                errs.push(FieldError::invalid(&min_path, i64::from(min), NOT_POSITIVE));
            }
            if c.when_unsatisfiable != UnsatisfiableConstraintAction::DoNotSchedule {
                errs.push(FieldError::invalid(
                    &min_path,
                    i64::from(min),
                    format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {}",
                        c.when_unsatisfiable.as_str()
                    ),
                ));
            }
        }
        for (name, policy) in [
            ("nodeAffinityPolicy", &c.node_affinity_policy),
            ("nodeTaintsPolicy", &c.node_taints_policy),
        ] {
            if let Some(NodeInclusionPolicy::Other(p)) = policy {
                errs.push(FieldError::not_supported(
                    &child(&item, name),
                    p.as_str(),
                    &["Honor", "Ignore"],
                ));
            }
        }
        errs.extend(validate_match_label_keys(
            &item,
            &c.match_label_keys,
            &[],
            c.label_selector.as_ref(),
            labels,
        ));
        if let Some(selector) = &c.label_selector {
            errs.extend(validate_label_selector(
                selector,
                false,
                &child(&item, "labelSelector"),
            ));
        }
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
