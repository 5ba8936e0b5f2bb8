//! `policy/v1` rules (upstream `pkg/apis/policy/validation`): PodDisruptionBudget.

use allot_api::policy::v1::{PodDisruptionBudget, PodDisruptionBudgetSpec};

use crate::field::{BadValue, FieldError, child};
use crate::kinds::{
    not_more_than_100_percent, validate_object_meta_update, validate_positive_int_or_percent,
};
use crate::meta::validate_object_meta;
use crate::rbac::name_is_path_segment;

/// Validates a PodDisruptionBudget on create (and, as upstream allows any change of the spec,
/// on update).
pub fn validate_pod_disruption_budget(budget: &PodDisruptionBudget) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&budget.metadata, true, name_is_path_segment, "metadata");
    errs.extend(validate_spec(&budget.spec, "spec"));
    errs
}

fn validate_spec(spec: &PodDisruptionBudgetSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if spec.min_available.is_some() && spec.max_unavailable.is_some() {
        errs.push(FieldError::invalid(
            path,
            BadValue::Raw("{...}".into()),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (field, value) in [
        ("minAvailable", &spec.min_available),
        ("maxUnavailable", &spec.max_unavailable),
    ] {
        if let Some(value) = value {
            let field_path = child(path, field);
            errs.extend(validate_positive_int_or_percent(value, &field_path));
            errs.extend(not_more_than_100_percent(value, &field_path));
        }
    }
    if let Some(selector) = &spec.selector {
        errs.extend(crate::rbac::validate_label_selector(
            selector,
            &child(path, "selector"),
        ));
    }
    if let Some(policy) = &spec.unhealthy_pod_eviction_policy
        && !policy.is_known()
    {
        errs.push(FieldError::not_supported(
            &child(path, "unhealthyPodEvictionPolicy"),
            policy.as_str(),
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    errs
}

/// What a PodDisruptionBudget update may not change: only its metadata's identity (policy/v1
/// allows any change of the spec; the create rules run on the new object).
pub fn validate_pod_disruption_budget_update(
    new: &PodDisruptionBudget,
    old: &PodDisruptionBudget,
) -> Vec<FieldError> {
    validate_object_meta_update(&new.metadata, &old.metadata)
}
