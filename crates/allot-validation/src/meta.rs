//! Object metadata validation (upstream `ValidateObjectMeta`).

use allot_api::meta::v1::{LabelSelector, ObjectMeta};

use crate::field::{FieldError, child, index};
use crate::names::{
    is_dns1123_subdomain, is_qualified_name, validate_dns1123_label, validate_label_name,
    validate_label_value,
};

/// Maximum total size of annotations.
const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// A name validator: the messages for a name (or, with `prefix`, a generateName prefix).
pub type NameValidator = fn(&str, bool) -> Vec<String>;

/// Names that must be DNS subdomains (most kinds).
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    is_dns1123_subdomain(&name)
}

/// Names that must be DNS labels (namespaces).
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    let name = if prefix {
        mask_trailing_dash(name)
    } else {
        name.to_string()
    };
    crate::names::is_dns1123_label(&name)
}

fn mask_trailing_dash(name: &str) -> String {
    match name.strip_suffix('-') {
        Some(stripped) if !stripped.is_empty() => format!("{stripped}a"),
        _ => name.to_string(),
    }
}

/// Validates metadata: name (or generateName), namespace, labels and annotations.
pub fn validate_object_meta(
    meta: &ObjectMeta,
    namespaced: bool,
    name_fn: NameValidator,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !meta.generate_name.is_empty() {
        for msg in name_fn(&meta.generate_name, true) {
            errs.push(FieldError::invalid(
                &child(path, "generateName"),
                &meta.generate_name,
                msg,
            ));
        }
    }
    if meta.name.is_empty() {
        if meta.generate_name.is_empty() {
            errs.push(FieldError::required(
                &child(path, "name"),
                "name or generateName is required",
            ));
        }
    } else {
        for msg in name_fn(&meta.name, false) {
            errs.push(FieldError::invalid(&child(path, "name"), &meta.name, msg));
        }
    }
    if namespaced {
        if !meta.namespace.is_empty() {
            errs.extend(validate_dns1123_label(
                &meta.namespace,
                &child(path, "namespace"),
            ));
        }
    } else if !meta.namespace.is_empty() {
        errs.push(FieldError::forbidden(
            &child(path, "namespace"),
            "not allowed on this type",
        ));
    }
    if let Some(generation) = meta.generation
        && generation < 0
    {
        errs.push(FieldError::invalid(
            &child(path, "generation"),
            generation,
            "must be greater than or equal to 0",
        ));
    }
    errs.extend(validate_labels(meta, &child(path, "labels")));
    errs.extend(validate_annotations(meta, &child(path, "annotations")));
    errs
}

fn validate_labels(meta: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in &meta.labels {
        errs.extend(validate_label_name(key, path));
        errs.extend(validate_label_value(value, path));
    }
    errs
}

fn validate_annotations(meta: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0;
    for (key, value) in &meta.annotations {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid(path, key, msg));
        }
        total += key.len() + value.len();
    }
    if total > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

/// Template metadata (ResourceClaimTemplate `spec.metadata`): only labels and annotations may
/// be set; every other field set is Forbidden, as upstream's `ValidateTemplateObjectMeta`.
pub fn validate_template_object_meta(meta: &ObjectMeta, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    errs.extend(validate_annotations(meta, &child(path, "annotations")));
    errs.extend(validate_labels(meta, &child(path, "labels")));
    let set = [
        ("name", !meta.name.is_empty()),
        ("generateName", !meta.generate_name.is_empty()),
        ("namespace", !meta.namespace.is_empty()),
        ("selfLink", !meta.self_link.is_empty()),
        ("uid", !meta.uid.is_empty()),
        ("resourceVersion", !meta.resource_version.is_empty()),
        ("generation", meta.generation.is_some()),
        ("creationTimestamp", meta.creation_timestamp.is_some()),
        ("deletionTimestamp", meta.deletion_timestamp.is_some()),
        (
            "deletionGracePeriodSeconds",
            meta.deletion_grace_period_seconds.is_some(),
        ),
        ("ownerReferences", !meta.owner_references.is_empty()),
        ("finalizers", !meta.finalizers.is_empty()),
        ("managedFields", !meta.managed_fields.is_empty()),
    ];
    for (field, is_set) in set {
        if is_set {
            errs.push(FieldError::forbidden(
                &child(path, field),
                "cannot be set for a resource claim template",
            ));
        }
    }
    errs
}

/// `ValidateConditions` (meta/v1): type, status, reason, message and time of each condition, and
/// unique types.
pub fn validate_conditions(
    conditions: &[allot_api::meta::v1::Condition],
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut types = std::collections::BTreeSet::new();
    for (i, condition) in conditions.iter().enumerate() {
        let item = crate::field::index(path, i);
        let type_path = child(&item, "type");
        if condition.type_.is_empty() {
            errs.push(FieldError::required(&type_path, "must be specified"));
        } else {
            for msg in is_qualified_name(&condition.type_) {
                errs.push(FieldError::invalid(&type_path, &condition.type_, msg));
            }
            if !types.insert(condition.type_.as_str()) {
                errs.push(FieldError::duplicate(&type_path, &condition.type_));
            }
        }
        if !matches!(condition.status.as_str(), "True" | "False" | "Unknown") {
            errs.push(FieldError::not_supported(
                &child(&item, "status"),
                &condition.status,
                &["False", "True", "Unknown"],
            ));
        }
        if let Some(generation) = condition.observed_generation
            && generation < 0
        {
            errs.push(FieldError::invalid(
                &child(&item, "observedGeneration"),
                generation,
                "must be greater than or equal to zero",
            ));
        }
        if condition.last_transition_time.is_empty() {
            errs.push(FieldError::required(
                &child(&item, "lastTransitionTime"),
                "must be set",
            ));
        }
        let reason_path = child(&item, "reason");
        if condition.reason.is_empty() {
            errs.push(FieldError::required(&reason_path, "must be set"));
        } else {
            let valid = condition.reason.len() <= 1024
                && condition
                    .reason
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic())
                && condition
                    .reason
                    .chars()
                    .last()
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_')
                && condition
                    .reason
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | ',' | ':'));
            if !valid {
                errs.push(FieldError::invalid(
                    &reason_path,
                    &condition.reason,
                    "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_' (e.g. 'my_name',  or 'MY_NAME',  or 'MyName',  or 'ReasonA,ReasonB',  or 'ReasonA:ReasonB', regex used for validation is '[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?')",
                ));
            }
        }
        if condition.message.len() > 32 * 1024 {
            errs.push(FieldError::too_long(&child(&item, "message"), 32 * 1024));
        }
    }
    errs
}

/// Upstream's `ValidateLabelSelector` (apimachinery `metav1validation`): labels as in
/// `matchLabels`, each expression's operator, values and key; with
/// `allow_invalid_label_value` the values are not checked as label values.
pub fn validate_label_selector(
    selector: &LabelSelector,
    allow_invalid_label_value: bool,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let labels = child(path, "matchLabels");
    for (key, value) in &selector.match_labels {
        errs.extend(validate_label_name(key, &labels));
        errs.extend(validate_label_value(value, &labels));
    }
    for (i, requirement) in selector.match_expressions.iter().enumerate() {
        let item = index(&child(path, "matchExpressions"), i);
        let values = child(&item, "values");
        match requirement.operator.as_str() {
            "In" | "NotIn" => {
                if requirement.values.is_empty() {
                    errs.push(FieldError::required(
                        &values,
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if !requirement.values.is_empty() {
                    errs.push(FieldError::forbidden(
                        &values,
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            other => errs.push(FieldError::invalid(
                &child(&item, "operator"),
                other,
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(&requirement.key, &child(&item, "key")));
        if !allow_invalid_label_value {
            for (j, value) in requirement.values.iter().enumerate() {
                errs.extend(validate_label_value(value, &index(&values, j)));
            }
        }
    }
    errs
}
