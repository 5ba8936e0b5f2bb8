//! `ValidatePodUpdate` and `ValidatePodStatusUpdate`.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{
    Affinity, Container, NodeAffinity, NodeSelectorTerm, Pod, PodSchedulingGate, PodSpec,
    Toleration,
};
use serde_json::Value;

use super::{FIELD_IMMUTABLE, validate_object_meta_update};
use crate::field::{BadValue, FieldError, child, index};
use crate::meta::name_is_dns_subdomain;

/// The annotation that marks a mirror pod.
const MIRROR_POD_ANNOTATION: &str = "kubernetes.io/config.mirror";
/// The prefix of the deprecated per-container AppArmor annotations.
const APPARMOR_ANNOTATION_PREFIX: &str = "container.apparmor.security.beta.kubernetes.io/";

/// What a pod update may change, as upstream lists it in its refusal.
const UPDATABLE_POD_SPEC_FIELDS: [&str; 5] = [
    "`spec.containers[*].image`",
    "`spec.initContainers[*].image`",
    "`spec.activeDeadlineSeconds`",
    "`spec.tolerations` (only additions to existing tolerations)",
    "`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
];

/// At most this many changed fields are listed after the refusal (a hostile update must not
/// make the answer as large as itself).
const MAX_DIFF_LINES: usize = 24;
/// Values in the list of changed fields are cut at this many characters.
const MAX_DIFF_VALUE: usize = 160;

/// `ValidatePodUpdate`: the fields a pod update may change, see the module notes.
pub fn validate_pod_update(new: &Pod, old: &Pod) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    errs.extend(annotation_updates(new, old));
    for (path, new_list, old_list) in [
        (
            "spec.containers",
            &new.spec.containers,
            &old.spec.containers,
        ),
        (
            "spec.initContainers",
            &new.spec.init_containers,
            &old.spec.init_containers,
        ),
    ] {
        if new_list.len() != old_list.len() {
            errs.push(FieldError::forbidden(
                path,
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        errs.extend(image_whitespace(new_list, path));
    }
    if let Some((err, stop)) = active_deadline_update(&new.spec, &old.spec) {
        errs.push(err);
        if stop {
            return errs;
        }
    }
    errs.extend(only_added_tolerations(
        &new.spec.tolerations,
        &old.spec.tolerations,
        "spec.tolerations",
    ));
    errs.extend(only_deleted_scheduling_gates(
        &new.spec.scheduling_gates,
        &old.spec.scheduling_gates,
        "spec.schedulingGates",
    ));
    let old_spec = normalized_spec(&old.spec);
    if normalized_spec(&new.spec) == old_spec {
        return errs;
    }
    let mut munged = new.spec.clone();
    munge_images(&mut munged.containers, &old.spec.containers);
    munge_images(&mut munged.init_containers, &old.spec.init_containers);
    munged
        .active_deadline_seconds
        .clone_from(&old.spec.active_deadline_seconds);
    munged
        .scheduling_gates
        .clone_from(&old.spec.scheduling_gates);
    munged.tolerations.clone_from(&old.spec.tolerations);
    let old_grace = old
        .spec
        .termination_grace_period_seconds
        .as_ref()
        .and_then(Value::as_i64);
    let new_grace = munged
        .termination_grace_period_seconds
        .as_ref()
        .and_then(Value::as_i64);
    if old_grace.is_some_and(|g| g < 0) && new_grace == Some(1) {
        munged
            .termination_grace_period_seconds
            .clone_from(&old.spec.termination_grace_period_seconds);
    }
    if !old.spec.scheduling_gates.is_empty() {
        errs.extend(munge_gated(&mut munged, &old.spec));
    }
    let munged = normalized_spec(&munged);
    if munged != old_spec {
        let mut lines = Vec::new();
        diff("spec", old_spec.as_ref(), munged.as_ref(), &mut lines);
        if lines.len() > MAX_DIFF_LINES {
            let more = lines.len() - MAX_DIFF_LINES;
            lines.truncate(MAX_DIFF_LINES);
            lines.push(format!("  ... and {more} more"));
        }
        errs.push(FieldError::forbidden(
            "spec",
            format!(
                "pod updates may not change fields other than {}\n{}",
                UPDATABLE_POD_SPEC_FIELDS.join(","),
                lines.join("\n")
            ),
        ));
    }
    errs
}

/// `ValidatePodStatusUpdate`: the node is not the status's to change, a QoS class once set
/// stays, claim statuses name the spec's claims, condition types are qualified names.
pub fn validate_pod_status_update(new: &Pod, old: &Pod) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, "metadata");
    errs.extend(annotation_updates(new, old));
    for (i, condition) in new.status.conditions.iter().enumerate() {
        if matches!(
            condition.type_.as_str(),
            "PodScheduled" | "Ready" | "Initialized"
        ) {
            continue;
        }
        // Upstream names these under `metadata` (its path starts there).
        let path = child(&index("metadata.conditions", i), "Type");
        for msg in crate::names::is_qualified_name(&condition.type_) {
            errs.push(FieldError::invalid(&path, condition.type_.as_str(), msg));
        }
    }
    if new.spec.node_name != old.spec.node_name {
        errs.push(FieldError::forbidden(
            "status.nodeName",
            "may not be changed directly",
        ));
    }
    if let Some(nominated) = new.status.nominated_node_name.as_deref()
        && !nominated.is_empty()
        && new.status.nominated_node_name != old.status.nominated_node_name
    {
        for msg in name_is_dns_subdomain(nominated, false) {
            errs.push(FieldError::invalid(
                "status.nominatedNodeName",
                nominated,
                msg,
            ));
        }
    }
    // allot computes the QoS class when a node admits the pod, not on create: immutable
    // once set.
    if let Some(old_qos) = &old.status.qos_class
        && new.status.qos_class.as_ref() != Some(old_qos)
    {
        errs.push(FieldError::invalid(
            "status.qosClass",
            new.status
                .qos_class
                .as_ref()
                .map_or(BadValue::Str(String::new()), BadValue::from),
            FIELD_IMMUTABLE,
        ));
    }
    let claims: BTreeSet<&str> = new
        .spec
        .resource_claims
        .iter()
        .map(|c| c.name.as_str())
        .collect();
    let mut seen = BTreeSet::new();
    for (i, status) in new.status.resource_claim_statuses.iter().enumerate() {
        let path = child(&index("status.resourceClaimStatuses", i), "name");
        if !claims.contains(status.name.as_str()) {
            errs.push(FieldError::invalid(
                &path,
                status.name.as_str(),
                "must match the name of an entry in `spec.resourceClaims`",
            ));
        }
        if !seen.insert(status.name.as_str()) {
            errs.push(FieldError::duplicate(&path, status.name.as_str()));
        }
        if let Some(name) = &status.resource_claim_name {
            for msg in name_is_dns_subdomain(name, false) {
                errs.push(FieldError::invalid(&path, name, msg));
            }
        }
    }
    errs
}

/// `ValidatePodSpecificAnnotationUpdates`: mirror-pod and AppArmor annotations are fixed.
fn annotation_updates(new: &Pod, old: &Pod) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let (new_annotations, old_annotations) = (&new.metadata.annotations, &old.metadata.annotations);
    for (key, old_value) in old_annotations {
        if new_annotations.get(key) == Some(old_value) {
            continue;
        }
        let path = format!("metadata.annotations[{key}]");
        if key.starts_with(APPARMOR_ANNOTATION_PREFIX) {
            errs.push(FieldError::forbidden(
                &path,
                "may not remove or update AppArmor annotations",
            ));
        }
        if key == MIRROR_POD_ANNOTATION {
            errs.push(FieldError::forbidden(
                &path,
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for key in new_annotations.keys() {
        if old_annotations.contains_key(key) {
            continue;
        }
        let path = format!("metadata.annotations[{key}]");
        if key.starts_with(APPARMOR_ANNOTATION_PREFIX) {
            errs.push(FieldError::forbidden(
                &path,
                "may not add AppArmor annotations",
            ));
        }
        if key == MIRROR_POD_ANNOTATION {
            errs.push(FieldError::forbidden(
                &path,
                "may not add mirror pod annotation",
            ));
        }
    }
    errs
}

/// `ValidateContainerUpdates`' image check. An image-less container stays valid (allot
/// accepts pods without images); an image with surrounding blanks does not.
fn image_whitespace(containers: &[Container], path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, container) in containers.iter().enumerate() {
        if let Some(image) = &container.image
            && image.trim() != image
        {
            errs.push(FieldError::invalid(
                &child(&index(path, i), "image"),
                image.as_str(),
                "must not have leading or trailing whitespace",
            ));
        }
    }
    errs
}

/// The `activeDeadlineSeconds` rules: set from none, or lowered, never removed. The error
/// comes with whether upstream stops validating there.
fn active_deadline_update(new: &PodSpec, old: &PodSpec) -> Option<(FieldError, bool)> {
    let path = "spec.activeDeadlineSeconds";
    let old_value = old.active_deadline_seconds.as_ref().and_then(Value::as_i64);
    match new.active_deadline_seconds.as_ref() {
        Some(value) => {
            let new_value = value.as_i64()?;
            if !(0..=i64::from(i32::MAX)).contains(&new_value) {
                return Some((
                    FieldError::invalid(
                        path,
                        new_value,
                        format!("must be between 0 and {}, inclusive", i32::MAX),
                    ),
                    true,
                ));
            }
            match old_value {
                Some(old_value) if old_value < new_value => Some((
                    FieldError::invalid(
                        path,
                        new_value,
                        "must be less than or equal to previous value",
                    ),
                    true,
                )),
                _ => None,
            }
        }
        None if old.active_deadline_seconds.is_some() => Some((
            FieldError::invalid(
                path,
                BadValue::Null,
                "must not update from a positive integer to nil value",
            ),
            false,
        )),
        None => None,
    }
}

/// `validateOnlyAddedTolerations`: every old toleration is still there (its
/// `tolerationSeconds` may change).
fn only_added_tolerations(new: &[Toleration], old: &[Toleration], path: &str) -> Vec<FieldError> {
    for old_toleration in old {
        let found = new.iter().any(|candidate| {
            let mut clone = old_toleration.clone();
            clone.toleration_seconds = candidate.toleration_seconds;
            &clone == candidate
        });
        if !found {
            return vec![FieldError::forbidden(
                path,
                "existing toleration can not be modified except its tolerationSeconds",
            )];
        }
    }
    Vec::new()
}

/// The name of a scheduling gate (`{name: ...}`).
fn gate_name(gate: &PodSchedulingGate) -> &str {
    gate.name.as_str()
}

/// `validateOnlyDeletedSchedulingGates`: no gate may be added.
fn only_deleted_scheduling_gates(
    new: &[PodSchedulingGate],
    old: &[PodSchedulingGate],
    path: &str,
) -> Vec<FieldError> {
    let old_names: BTreeSet<&str> = old.iter().map(gate_name).collect();
    let mut added: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, gate) in new.iter().enumerate() {
        added.insert(gate_name(gate), i);
    }
    let mut errs: Vec<(usize, FieldError)> = added
        .into_iter()
        .filter(|(name, _)| !old_names.contains(name))
        .map(|(name, i)| {
            (
                i,
                FieldError::forbidden(
                    &child(&index(path, i), "name"),
                    format!("only deletion is allowed, but found new scheduling gate '{name}'"),
                ),
            )
        })
        .collect();
    errs.sort_by_key(|(i, _)| *i);
    errs.into_iter().map(|(_, e)| e).collect()
}

/// Puts the old images into the munged containers (same number of containers, checked
/// before).
fn munge_images(munged: &mut [Container], old: &[Container]) {
    for (container, old_container) in munged.iter_mut().zip(old) {
        container.image.clone_from(&old_container.image);
    }
}

/// Go's `%#v` of a `map[string]string` (keys sorted, as Go prints maps).
fn go_string_map(map: &BTreeMap<String, String>) -> String {
    let entries: Vec<String> = map.iter().map(|(k, v)| format!("{k:?}:{v:?}")).collect();
    format!("map[string]string{{{}}}", entries.join(", "))
}

/// Gated pods may gain node selector entries and node affinity requirements: checks those
/// changes and puts the old values into `munged`.
fn munge_gated(munged: &mut PodSpec, old: &PodSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if munged.node_selector != old.node_selector {
        let kept = old
            .node_selector
            .iter()
            .all(|(k, v)| munged.node_selector.get(k) == Some(v));
        if !kept {
            errs.push(FieldError::invalid(
                "spec.nodeSelector",
                BadValue::Raw(go_string_map(&munged.node_selector)),
                "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
            ));
        }
        munged.node_selector.clone_from(&old.node_selector);
    }
    let old_affinity = old.affinity.as_ref().and_then(|a| a.node_affinity.as_ref());
    let new_affinity = munged
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref());
    if old_affinity != new_affinity {
        errs.extend(node_affinity_mutation(new_affinity, old_affinity));
        let old_affinity = old_affinity.cloned();
        match munged.affinity.as_mut() {
            None if old_affinity.is_none() => {}
            None => {
                munged.affinity = Some(Affinity {
                    node_affinity: old_affinity,
                    ..Affinity::default()
                });
            }
            Some(affinity)
                if old.affinity.is_none()
                    && affinity.pod_affinity.is_none()
                    && affinity.pod_anti_affinity.is_none() =>
            {
                munged.affinity = None;
            }
            Some(affinity) => affinity.node_affinity = old_affinity,
        }
    }
    errs
}

/// `validateNodeAffinityMutation`: a non-empty list of required terms keeps its length, and
/// each term only gains requirements.
fn node_affinity_mutation(
    new: Option<&NodeAffinity>,
    old: Option<&NodeAffinity>,
) -> Vec<FieldError> {
    let path = "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms";
    let Some(old_terms) = old
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map(|s| &s.node_selector_terms)
    else {
        return Vec::new();
    };
    let no_terms = Vec::new();
    let new_terms = new
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        })
        .map_or(&no_terms, |s| &s.node_selector_terms);
    if !old_terms.is_empty() && old_terms.len() != new_terms.len() {
        return vec![FieldError::invalid(
            path,
            BadValue::Raw(serde_json::to_string(new_terms).unwrap_or_default()),
            "no additions/deletions to non-empty NodeSelectorTerms list are allowed",
        )];
    }
    let mut errs = Vec::new();
    for (i, (new_term, old_term)) in new_terms.iter().zip(old_terms).enumerate() {
        if !term_only_adds(new_term, old_term) {
            errs.push(FieldError::invalid(
                &index(path, i),
                BadValue::Raw(serde_json::to_string(new_term).unwrap_or_default()),
                "only additions are allowed (no mutations or deletions)",
            ));
        }
    }
    errs
}

/// Whether `new` holds every requirement of `old` (in any order).
fn term_only_adds(new: &NodeSelectorTerm, old: &NodeSelectorTerm) -> bool {
    old.match_expressions
        .iter()
        .all(|r| new.match_expressions.contains(r))
        && old
            .match_fields
            .iter()
            .all(|r| new.match_fields.contains(r))
}

/// A pod spec as JSON with absent, `null` and empty values dropped, so that comparisons treat
/// them alike (as upstream's semantic equality treats nil and empty alike).
fn normalized_spec(spec: &PodSpec) -> Option<Value> {
    serde_json::to_value(spec).ok().and_then(normalize)
}

fn normalize(value: Value) -> Option<Value> {
    match value {
        Value::Null => None,
        Value::Array(items) if items.is_empty() => None,
        Value::Array(items) => Some(Value::Array(
            items
                .into_iter()
                .map(|v| normalize(v).unwrap_or(Value::Null))
                .collect(),
        )),
        Value::Object(map) => {
            let map: serde_json::Map<String, Value> = map
                .into_iter()
                .filter_map(|(k, v)| normalize(v).map(|v| (k, v)))
                .collect();
            (!map.is_empty()).then_some(Value::Object(map))
        }
        other => Some(other),
    }
}

/// The changed fields between two normalised values, one `-`/`+` pair per changed leaf.
fn diff(path: &str, old: Option<&Value>, new: Option<&Value>, out: &mut Vec<String>) {
    if old == new || out.len() > MAX_DIFF_LINES {
        return;
    }
    match (old, new) {
        (Some(Value::Object(a)), Some(Value::Object(b))) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            for key in keys {
                diff(&child(path, key), a.get(key), b.get(key), out);
            }
        }
        (Some(Value::Array(a)), Some(Value::Array(b))) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&index(path, i), Some(x), Some(y), out);
            }
        }
        _ => {
            if let Some(old) = old {
                out.push(format!("- {path}: {}", shown(old)));
            }
            if let Some(new) = new {
                out.push(format!("+ {path}: {}", shown(new)));
            }
        }
    }
}

/// A value as JSON, cut short when long.
fn shown(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= MAX_DIFF_VALUE {
        return text;
    }
    let cut: String = text.chars().take(MAX_DIFF_VALUE).collect();
    format!("{cut}...")
}
