//! Validation of `rbac.authorization.k8s.io/v1` objects as upstream's
//! `pkg/apis/rbac/validation` does it (names are path segments, rules need verbs, resource
//! rules need groups and resources, bindings name a role of the right kind and valid subjects,
//! aggregation rules need at least one valid selector).

use allot_api::meta::v1::LabelSelector;
use allot_api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::field::{BadValue, FieldError, child, index};
use crate::meta::validate_object_meta;
use crate::names::{validate_label_name, validate_label_value};

/// The API group.
const GROUP: &str = "rbac.authorization.k8s.io";

/// Upstream's `ValidateRBACName`: any path segment name.
pub fn name_is_path_segment(name: &str, prefix: bool) -> Vec<String> {
    let mut out = Vec::new();
    if !prefix && (name == "." || name == "..") {
        out.push(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            out.push(format!("may not contain '{bad}'"));
        }
    }
    out
}

fn raw_list(items: &[String]) -> BadValue {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    BadValue::Raw(format!("[]string{{{}}}", quoted.join(", ")))
}

/// Upstream's `ValidatePolicyRule`.
pub fn validate_policy_rule(rule: &PolicyRule, namespaced: bool, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if rule.verbs.is_empty() {
        errors.push(FieldError::required(
            &child(path, "verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        if namespaced {
            errors.push(FieldError::invalid(
                &child(path, "nonResourceURLs"),
                raw_list(&rule.non_resource_urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty()
            || !rule.resources.is_empty()
            || !rule.resource_names.is_empty()
        {
            errors.push(FieldError::invalid(
                &child(path, "nonResourceURLs"),
                raw_list(&rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errors;
    }
    if rule.api_groups.is_empty() {
        errors.push(FieldError::required(
            &child(path, "apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        errors.push(FieldError::required(
            &child(path, "resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errors
}

fn validate_rules(rules: &[PolicyRule], namespaced: bool) -> Vec<FieldError> {
    rules
        .iter()
        .enumerate()
        .flat_map(|(i, rule)| validate_policy_rule(rule, namespaced, &index("rules", i)))
        .collect()
}

/// A label selector's keys, operators and values (upstream's `ValidateLabelSelector`).
pub fn validate_label_selector(selector: &LabelSelector, path: &str) -> Vec<FieldError> {
    let mut errors = Vec::new();
    for (key, value) in &selector.match_labels {
        let labels = child(path, "matchLabels");
        errors.extend(validate_label_name(key, &labels));
        errors.extend(validate_label_value(value, &labels));
    }
    for (i, requirement) in selector.match_expressions.iter().enumerate() {
        let item = index(&child(path, "matchExpressions"), i);
        let operator = requirement.operator.as_str();
        match operator {
            "In" | "NotIn" if requirement.values.is_empty() => errors.push(FieldError::required(
                &child(&item, "values"),
                "must be specified when `operator` is 'In' or 'NotIn'",
            )),
            "Exists" | "DoesNotExist" if !requirement.values.is_empty() => {
                errors.push(FieldError::forbidden(
                    &child(&item, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
            "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
            other => errors.push(FieldError::not_supported(
                &child(&item, "operator"),
                other,
                &["In", "NotIn", "Exists", "DoesNotExist"],
            )),
        }
        errors.extend(validate_label_name(&requirement.key, &child(&item, "key")));
    }
    errors
}

/// Upstream's `ValidateRole`.
pub fn validate_role(role: &Role) -> Vec<FieldError> {
    let mut errors = validate_object_meta(&role.metadata, true, name_is_path_segment, "metadata");
    errors.extend(validate_rules(&role.rules, true));
    errors
}

/// Upstream's `ValidateClusterRole`.
pub fn validate_cluster_role(role: &ClusterRole) -> Vec<FieldError> {
    let mut errors = validate_object_meta(&role.metadata, false, name_is_path_segment, "metadata");
    errors.extend(validate_rules(&role.rules, false));
    if let Some(rule) = &role.aggregation_rule {
        if rule.cluster_role_selectors.is_empty() {
            errors.push(FieldError::required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, selector) in rule.cluster_role_selectors.iter().enumerate() {
            errors.extend(validate_label_selector(
                selector,
                &index("aggregationRule.clusterRoleSelectors", i),
            ));
        }
    }
    errors
}

fn validate_binding(cluster: bool, role_ref: &RoleRef, subjects: &[Subject]) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if role_ref.api_group != GROUP {
        errors.push(FieldError::not_supported(
            "roleRef.apiGroup",
            role_ref.api_group.as_str(),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if cluster {
        &["ClusterRole"]
    } else {
        &["Role", "ClusterRole"]
    };
    if !kinds.contains(&role_ref.kind.as_str()) {
        errors.push(FieldError::not_supported(
            "roleRef.kind",
            role_ref.kind.as_str(),
            kinds,
        ));
    }
    if role_ref.name.is_empty() {
        errors.push(FieldError::required("roleRef.name", ""));
    } else {
        for message in name_is_path_segment(&role_ref.name, false) {
            errors.push(FieldError::invalid(
                "roleRef.name",
                role_ref.name.as_str(),
                message,
            ));
        }
    }
    for (i, subject) in subjects.iter().enumerate() {
        let path = index("subjects", i);
        if subject.name.is_empty() {
            errors.push(FieldError::required(&child(&path, "name"), ""));
        }
        match subject.kind.as_str() {
            "ServiceAccount" => {
                if !subject.api_group.is_empty() {
                    errors.push(FieldError::not_supported(
                        &child(&path, "apiGroup"),
                        subject.api_group.as_str(),
                        &[""],
                    ));
                }
                if cluster && subject.namespace.is_empty() {
                    errors.push(FieldError::required(&child(&path, "namespace"), ""));
                }
            }
            "User" | "Group" => {
                if subject.api_group != GROUP {
                    errors.push(FieldError::not_supported(
                        &child(&path, "apiGroup"),
                        subject.api_group.as_str(),
                        &[GROUP],
                    ));
                }
            }
            other => errors.push(FieldError::not_supported(
                &child(&path, "kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errors
}

/// Upstream's `ValidateRoleBinding`.
pub fn validate_role_binding(binding: &RoleBinding) -> Vec<FieldError> {
    let mut errors =
        validate_object_meta(&binding.metadata, true, name_is_path_segment, "metadata");
    errors.extend(validate_binding(
        false,
        &binding.role_ref,
        &binding.subjects,
    ));
    errors
}

/// Upstream's `ValidateClusterRoleBinding`.
pub fn validate_cluster_role_binding(binding: &ClusterRoleBinding) -> Vec<FieldError> {
    let mut errors =
        validate_object_meta(&binding.metadata, false, name_is_path_segment, "metadata");
    errors.extend(validate_binding(true, &binding.role_ref, &binding.subjects));
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_bindings_and_selectors_are_checked_as_upstream() {
        let mut role = Role::default();
        role.metadata.name = "a/b".into();
        role.metadata.namespace = "ns".into();
        role.rules.push(PolicyRule {
            non_resource_urls: vec!["/x".into()],
            ..PolicyRule::default()
        });
        let errors: Vec<String> = validate_role(&role)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("metadata.name") && e.contains("may not contain '/'")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("rules[0].verbs")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.contains("namespaced rules cannot apply to non-resource URLs")),
            "{errors:?}"
        );

        let mut binding = ClusterRoleBinding::default();
        binding.metadata.name = "b".into();
        binding.role_ref = RoleRef {
            api_group: GROUP.into(),
            kind: "Role".into(),
            name: "r".into(),
        };
        binding.subjects.push(Subject {
            kind: "ServiceAccount".into(),
            name: "sa".into(),
            ..Subject::default()
        });
        let errors: Vec<String> = validate_cluster_role_binding(&binding)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errors.iter().any(|e| e.contains("roleRef.kind")),
            "{errors:?}"
        );
        assert!(
            errors.iter().any(|e| e.contains("subjects[0].namespace")),
            "{errors:?}"
        );

        let mut aggregated = ClusterRole::default();
        aggregated.metadata.name = "agg".into();
        aggregated.aggregation_rule = Some(Default::default());
        let errors: Vec<String> = validate_cluster_role(&aggregated)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            errors
                .iter()
                .any(|e| e.contains("at least one clusterRoleSelector")),
            "{errors:?}"
        );
        let mut selector = LabelSelector::default();
        selector.match_labels.insert(
            "rbac.authorization.k8s.io/aggregate-to-view".into(),
            "true".into(),
        );
        aggregated.aggregation_rule = Some(allot_api::rbac::v1::AggregationRule {
            cluster_role_selectors: vec![selector],
        });
        assert!(validate_cluster_role(&aggregated).is_empty());
    }
}
