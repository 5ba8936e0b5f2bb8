//! `apps/v1` rules (upstream `pkg/apis/apps/validation`): Deployment, ReplicaSet,
//! StatefulSet, DaemonSet and ControllerRevision, on create and on update.

use allot_api::apps::v1::{
    ControllerRevision, DaemonSet, DaemonSetSpec, DaemonSetUpdateStrategyType, Deployment,
    DeploymentSpec, DeploymentStrategyType, PersistentVolumeClaimRetentionPolicyType,
    PodManagementPolicyType, ReplicaSet, ReplicaSetSpec, StatefulSet, StatefulSetSpec,
    StatefulSetUpdateStrategyType,
};
use allot_api::core::v1::PodTemplateSpec;
use allot_api::intstr::IntOrString;

use crate::field::{BadValue, FieldError, child};
use crate::kinds::{
    Selection, go_int_or_string, go_label_selector, immutable, immutable_struct,
    int_or_percent_value, nonnegative, not_more_than_100_percent, restart_policy,
    selector_converts, template_mismatch, validate_annotations, validate_labels,
    validate_object_meta_update, validate_pod_template_spec, validate_positive_int_or_percent,
    validate_workload_selector,
};
use crate::meta::{name_is_dns_label, name_is_dns_subdomain, validate_object_meta};

/// `ValidatePodTemplateSpecForReplicaSet`: the selector matches the template's labels, the
/// template is a valid pod template that restarts `Always` and has no active deadline. `kind`
/// names the workload in the active deadline message.
pub(crate) fn validate_template_for_replicas(
    template: &PodTemplateSpec,
    selection: &Selection<'_>,
    kind: &str,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if !matches!(selection, Selection::Everything) && !selection.matches(&template.metadata.labels)
    {
        errs.push(template_mismatch(
            &child(path, "metadata.labels"),
            &template.metadata.labels,
        ));
    }
    errs.extend(validate_pod_template_spec(template, path));
    errs.extend(validate_always_restarts(template, kind, path));
    errs
}

/// A long-running workload's pods restart `Always` and have no active deadline.
fn validate_always_restarts(template: &PodTemplateSpec, kind: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy = restart_policy(template);
    if policy != "Always" {
        errs.push(FieldError::not_supported(
            &child(path, "spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if template.spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            &child(path, "spec.activeDeadlineSeconds"),
            format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// A Go pointer field as `%#v` prints it: `(*T)(nil)`, or an address upstream prints and
/// allot does not have.
fn go_pointer(type_name: &str, set: bool) -> String {
    if set {
        format!("(*{type_name})(...)")
    } else {
        format!("(*{type_name})(nil)")
    }
}

/// The selector of a Deployment or ReplicaSet spec (`<path>.selector`), then its template
/// against that selector as a ReplicaSet's (`<path>.template`). Upstream names the kind
/// "deployment" in the selector messages of both.
fn validate_replicas_selector_and_template(
    selector: Option<&allot_api::meta::v1::LabelSelector>,
    template: &PodTemplateSpec,
    path: &str,
) -> Vec<FieldError> {
    let selector_path = child(path, "selector");
    let mut errs = validate_workload_selector(selector, "deployment", &selector_path);
    match selection_of(selector) {
        None => errs.push(FieldError::invalid(
            &selector_path,
            go_label_selector(selector),
            "invalid label selector",
        )),
        Some(selection) => errs.extend(validate_template_for_replicas(
            template,
            &selection,
            "ReplicaSet",
            &child(path, "template"),
        )),
    }
    errs
}

/// The selector's rules for the template check, or Nothing when it does not convert.
fn selection_of(selector: Option<&allot_api::meta::v1::LabelSelector>) -> Option<Selection<'_>> {
    match selector {
        Some(s) if !selector_converts(s) => None,
        other => Some(Selection::of(other)),
    }
}

/// Validates a Deployment on create.
pub fn validate_deployment(deployment: &Deployment) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &deployment.metadata,
        true,
        name_is_dns_subdomain,
        "metadata",
    );
    errs.extend(validate_deployment_spec(&deployment.spec, "spec"));
    errs
}

/// `ValidateDeploymentSpec`.
fn validate_deployment_spec(spec: &DeploymentSpec, path: &str) -> Vec<FieldError> {
    let mut errs = nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        &child(path, "replicas"),
    );
    errs.extend(validate_replicas_selector_and_template(
        spec.selector.as_ref(),
        &spec.template,
        path,
    ));
    errs.extend(validate_deployment_strategy(spec, &child(path, "strategy")));
    errs.extend(nonnegative(
        i64::from(spec.min_ready_seconds),
        &child(path, "minReadySeconds"),
    ));
    if let Some(limit) = spec.revision_history_limit {
        errs.extend(nonnegative(
            i64::from(limit),
            &child(path, "revisionHistoryLimit"),
        ));
    }
    if let Some(deadline) = spec.progress_deadline_seconds {
        let deadline_path = child(path, "progressDeadlineSeconds");
        errs.extend(nonnegative(i64::from(deadline), &deadline_path));
        if deadline <= spec.min_ready_seconds {
            errs.push(FieldError::invalid(
                &deadline_path,
                i64::from(deadline),
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

/// `ValidateDeploymentStrategy` and `ValidateRollingUpdateDeployment`.
fn validate_deployment_strategy(spec: &DeploymentSpec, path: &str) -> Vec<FieldError> {
    let strategy = &spec.strategy;
    let mut errs = Vec::new();
    let rolling_path = child(path, "rollingUpdate");
    match &strategy.type_ {
        Some(DeploymentStrategyType::Recreate) => {
            if strategy.rolling_update.is_some() {
                errs.push(FieldError::forbidden(
                    &rolling_path,
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        Some(DeploymentStrategyType::RollingUpdate) => match &strategy.rolling_update {
            None => errs.push(FieldError::required(
                &rolling_path,
                "this should be defaulted and never be nil",
            )),
            Some(rolling) => {
                let zero = IntOrString::Int(0);
                let unavailable = rolling.max_unavailable.as_ref().unwrap_or(&zero);
                let surge = rolling.max_surge.as_ref().unwrap_or(&zero);
                let unavailable_path = child(&rolling_path, "maxUnavailable");
                errs.extend(validate_positive_int_or_percent(
                    unavailable,
                    &unavailable_path,
                ));
                errs.extend(validate_positive_int_or_percent(
                    surge,
                    &child(&rolling_path, "maxSurge"),
                ));
                if int_or_percent_value(unavailable) == 0 && int_or_percent_value(surge) == 0 {
                    errs.push(FieldError::invalid(
                        &unavailable_path,
                        go_int_or_string(unavailable),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(not_more_than_100_percent(unavailable, &unavailable_path));
            }
        },
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::Raw(format!(
                "apps.DeploymentStrategy{{Type:{:?}, RollingUpdate:{}}}",
                other.as_ref().map_or("", |t| t.as_str()),
                go_pointer(
                    "apps.RollingUpdateDeployment",
                    strategy.rolling_update.is_some()
                )
            )),
            &["Recreate", "RollingUpdate"],
        )),
    }
    errs
}

/// What a Deployment update may not change (the create rules run on the new object too): its
/// metadata's identity and the selector, which apps/v1 makes immutable.
pub fn validate_deployment_update(new: &Deployment, old: &Deployment) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable(
        &new.spec.selector,
        &old.spec.selector,
        "spec.selector",
        |s| go_label_selector(s.as_ref()),
    ));
    errs
}

/// Validates a ReplicaSet on create.
pub fn validate_replica_set(set: &ReplicaSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&set.metadata, true, name_is_dns_subdomain, "metadata");
    errs.extend(validate_replica_set_spec(&set.spec, "spec"));
    errs
}

/// `ValidateReplicaSetSpec`.
fn validate_replica_set_spec(spec: &ReplicaSetSpec, path: &str) -> Vec<FieldError> {
    let mut errs = nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        &child(path, "replicas"),
    );
    errs.extend(nonnegative(
        i64::from(spec.min_ready_seconds),
        &child(path, "minReadySeconds"),
    ));
    errs.extend(validate_replicas_selector_and_template(
        spec.selector.as_ref(),
        &spec.template,
        path,
    ));
    errs
}

/// What a ReplicaSet update may not change: the selector (immutable in apps/v1).
pub fn validate_replica_set_update(new: &ReplicaSet, old: &ReplicaSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable(
        &new.spec.selector,
        &old.spec.selector,
        "spec.selector",
        |s| go_label_selector(s.as_ref()),
    ));
    errs
}

/// Validates a StatefulSet on create (its name must be a DNS label: pods are named after it).
pub fn validate_stateful_set(set: &StatefulSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&set.metadata, true, name_is_dns_label, "metadata");
    errs.extend(validate_stateful_set_spec(&set.spec, "spec"));
    errs
}

/// `ValidateStatefulSetSpec`.
fn validate_stateful_set_spec(spec: &StatefulSetSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let policy_path = child(path, "podManagementPolicy");
    match &spec.pod_management_policy {
        None => errs.push(FieldError::required(&policy_path, "")),
        Some(PodManagementPolicyType::Other(other)) => errs.push(FieldError::invalid(
            &policy_path,
            other.as_str(),
            "must be 'OrderedReady' or 'Parallel'",
        )),
        Some(_) => {}
    }
    errs.extend(validate_stateful_set_update_strategy(spec, path));
    if let Some(policy) = &spec.persistent_volume_claim_retention_policy {
        let policy_path = child(path, "persistentVolumeClaimRetentionPolicy");
        for (field, value) in [
            ("whenDeleted", &policy.when_deleted),
            ("whenScaled", &policy.when_scaled),
        ] {
            let known = matches!(
                value,
                Some(
                    PersistentVolumeClaimRetentionPolicyType::Retain
                        | PersistentVolumeClaimRetentionPolicyType::Delete
                )
            );
            if !known {
                errs.push(FieldError::not_supported(
                    &child(&policy_path, field),
                    value.as_ref().map_or("", |v| v.as_str()),
                    &["Retain", "Delete"],
                ));
            }
        }
    }
    errs.extend(nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        &child(path, "replicas"),
    ));
    errs.extend(nonnegative(
        i64::from(spec.min_ready_seconds),
        &child(path, "minReadySeconds"),
    ));
    if let Some(ordinals) = &spec.ordinals {
        errs.extend(nonnegative(
            i64::from(ordinals.start),
            &child(path, "ordinals.start"),
        ));
    }
    let selector_path = child(path, "selector");
    errs.extend(validate_workload_selector(
        spec.selector.as_ref(),
        "statefulset",
        &selector_path,
    ));
    let template_path = child(path, "template");
    match selection_of(spec.selector.as_ref()) {
        None => errs.push(FieldError::invalid(
            &selector_path,
            go_label_selector(spec.selector.as_ref()),
            "",
        )),
        Some(selection) => {
            let labels = &spec.template.metadata.labels;
            if !matches!(selection, Selection::Everything) && !selection.matches(labels) {
                errs.push(template_mismatch(
                    &child(&template_path, "metadata.labels"),
                    labels,
                ));
            }
            // Upstream checks only the template's labels and annotations here, not its spec.
            errs.extend(validate_labels(labels, &child(&template_path, "labels")));
            errs.extend(validate_annotations(
                &spec.template.metadata.annotations,
                &child(&template_path, "annotations"),
            ));
        }
    }
    errs.extend(validate_always_restarts(
        &spec.template,
        "StatefulSet",
        &template_path,
    ));
    errs
}

fn validate_stateful_set_update_strategy(spec: &StatefulSetSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let strategy = &spec.update_strategy;
    let strategy_path = child(path, "updateStrategy");
    let rolling_path = child(&strategy_path, "rollingUpdate");
    match &strategy.type_ {
        None => errs.push(FieldError::required(&strategy_path, "")),
        Some(StatefulSetUpdateStrategyType::OnDelete) => {
            if strategy.rolling_update.is_some() {
                errs.push(FieldError::invalid(
                    &rolling_path,
                    BadValue::Raw("{...}".into()),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        Some(StatefulSetUpdateStrategyType::RollingUpdate) => {
            if let Some(rolling) = &strategy.rolling_update {
                errs.extend(nonnegative(
                    i64::from(rolling.partition.unwrap_or(0)),
                    &child(&rolling_path, "partition"),
                ));
                if let Some(max) = &rolling.max_unavailable {
                    let max_path = child(&rolling_path, "maxUnavailable");
                    errs.extend(validate_positive_int_or_percent(max, &max_path));
                    if int_or_percent_value(max) == 0 {
                        errs.push(FieldError::invalid(
                            &max_path,
                            go_int_or_string(max),
                            "cannot be 0",
                        ));
                    }
                    errs.extend(not_more_than_100_percent(max, &max_path));
                }
            }
        }
        Some(other) => errs.push(FieldError::invalid(
            &strategy_path,
            BadValue::Raw(format!(
                "apps.StatefulSetUpdateStrategy{{Type:{:?}, RollingUpdate:{}}}",
                other.as_str(),
                go_pointer(
                    "apps.RollingUpdateStatefulSetStrategy",
                    strategy.rolling_update.is_some()
                )
            )),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    errs
}

/// What a StatefulSet update may not change: anything but `replicas`, `ordinals`,
/// `template`, `updateStrategy`, `persistentVolumeClaimRetentionPolicy` and `minReadySeconds`.
pub fn validate_stateful_set_update(new: &StatefulSet, old: &StatefulSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    let mut clone = new.spec.clone();
    clone.replicas = old.spec.replicas;
    clone.template = old.spec.template.clone();
    clone.update_strategy = old.spec.update_strategy.clone();
    clone.min_ready_seconds = old.spec.min_ready_seconds;
    clone.ordinals = old.spec.ordinals.clone();
    clone.persistent_volume_claim_retention_policy =
        old.spec.persistent_volume_claim_retention_policy.clone();
    if clone != old.spec {
        errs.push(FieldError::forbidden(
            "spec",
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

/// Validates a DaemonSet on create.
pub fn validate_daemon_set(set: &DaemonSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&set.metadata, true, name_is_dns_subdomain, "metadata");
    errs.extend(validate_daemon_set_spec(&set.spec, "spec"));
    errs
}

/// `ValidateDaemonSetSpec`.
fn validate_daemon_set_spec(spec: &DaemonSetSpec, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let selector_path = child(path, "selector");
    let template_path = child(path, "template");
    if let Some(selector) = &spec.selector {
        errs.extend(crate::rbac::validate_label_selector(
            selector,
            &selector_path,
        ));
    }
    if let Some(selection) = selection_of(spec.selector.as_ref())
        && !selection.matches(&spec.template.metadata.labels)
    {
        errs.push(template_mismatch(
            &child(&template_path, "metadata.labels"),
            &spec.template.metadata.labels,
        ));
    }
    if let Some(selector) = &spec.selector
        && selector.match_labels.is_empty()
        && selector.match_expressions.is_empty()
    {
        errs.push(FieldError::invalid(
            &selector_path,
            go_label_selector(Some(selector)),
            "empty selector is invalid for daemonset",
        ));
    }
    errs.extend(validate_pod_template_spec(&spec.template, &template_path));
    errs.extend(validate_always_restarts(
        &spec.template,
        "DaemonSet",
        &template_path,
    ));
    errs.extend(nonnegative(
        i64::from(spec.min_ready_seconds),
        &child(path, "minReadySeconds"),
    ));
    errs.extend(validate_daemon_set_update_strategy(
        spec,
        &child(path, "updateStrategy"),
    ));
    if let Some(limit) = spec.revision_history_limit {
        errs.extend(nonnegative(
            i64::from(limit),
            &child(path, "revisionHistoryLimit"),
        ));
    }
    errs
}

/// `ValidateDaemonSetUpdateStrategy` and `ValidateRollingUpdateDaemonSet`.
fn validate_daemon_set_update_strategy(spec: &DaemonSetSpec, path: &str) -> Vec<FieldError> {
    let strategy = &spec.update_strategy;
    let mut errs = Vec::new();
    match &strategy.type_ {
        Some(DaemonSetUpdateStrategyType::OnDelete) => {}
        Some(DaemonSetUpdateStrategyType::RollingUpdate) => {
            let rolling_path = child(path, "rollingUpdate");
            let Some(rolling) = &strategy.rolling_update else {
                errs.push(FieldError::required(&rolling_path, ""));
                return errs;
            };
            let zero = IntOrString::Int(0);
            let unavailable = rolling.max_unavailable.as_ref().unwrap_or(&zero);
            let surge = rolling.max_surge.as_ref().unwrap_or(&zero);
            let unavailable_path = child(&rolling_path, "maxUnavailable");
            let surge_path = child(&rolling_path, "maxSurge");
            errs.extend(validate_positive_int_or_percent(
                unavailable,
                &unavailable_path,
            ));
            errs.extend(validate_positive_int_or_percent(surge, &surge_path));
            errs.extend(not_more_than_100_percent(unavailable, &unavailable_path));
            errs.extend(not_more_than_100_percent(surge, &surge_path));
            let has_unavailable = int_or_percent_value(unavailable) != 0;
            let has_surge = int_or_percent_value(surge) != 0;
            if has_unavailable && has_surge {
                errs.push(FieldError::invalid(
                    &surge_path,
                    go_int_or_string(surge),
                    "may not be set when maxUnavailable is non-zero",
                ));
            } else if !has_unavailable && !has_surge {
                errs.push(FieldError::required(
                    &unavailable_path,
                    "cannot be 0 when maxSurge is 0",
                ));
            }
        }
        other => errs.push(FieldError::not_supported(
            path,
            BadValue::Raw(format!(
                "apps.DaemonSetUpdateStrategy{{Type:{:?}, RollingUpdate:{}}}",
                other.as_ref().map_or("", |t| t.as_str()),
                go_pointer(
                    "apps.RollingUpdateDaemonSet",
                    strategy.rolling_update.is_some()
                )
            )),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs
}

/// What a DaemonSet update may not change: the selector (immutable in apps/v1).
pub fn validate_daemon_set_update(new: &DaemonSet, old: &DaemonSet) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable(
        &new.spec.selector,
        &old.spec.selector,
        "spec.selector",
        |s| go_label_selector(s.as_ref()),
    ));
    errs
}

/// Validates a ControllerRevision on create: data is mandatory, the revision non-negative.
pub fn validate_controller_revision(revision: &ControllerRevision) -> Vec<FieldError> {
    let mut errs =
        validate_object_meta(&revision.metadata, true, name_is_dns_subdomain, "metadata");
    if revision.data.is_none() {
        errs.push(FieldError::required("data", "data is mandatory"));
    }
    errs.extend(nonnegative(revision.revision, "revision"));
    errs
}

/// What a ControllerRevision update may not change: its data.
pub fn validate_controller_revision_update(
    new: &ControllerRevision,
    old: &ControllerRevision,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable_struct(&new.data, &old.data, "data"));
    errs
}

/// Status counters that may not be negative (`status.<field>`), in upstream's order.
fn nonnegative_counters(counters: &[(&str, i64)]) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (field, value) in counters {
        errs.extend(nonnegative(*value, &child("status", field)));
    }
    errs
}

/// Status counters that may not exceed `limit` (`cannot be greater than <limit_name>`).
fn not_above(limit_name: &str, limit: i32, counters: &[(&str, i32)]) -> Vec<FieldError> {
    counters
        .iter()
        .filter(|(_, value)| *value > limit)
        .map(|(field, value)| {
            FieldError::invalid(
                &child("status", field),
                i64::from(*value),
                format!("cannot be greater than {limit_name}"),
            )
        })
        .collect()
}

/// `IsDecremented` of a collision count.
fn collision_count_decremented(new: Option<i32>, old: Option<i32>) -> Vec<FieldError> {
    match (new, old) {
        (new, Some(old)) if new.unwrap_or(0) < old => vec![FieldError::invalid(
            "status.collisionCount",
            i64::from(new.unwrap_or(0)),
            "cannot be decremented",
        )],
        _ => Vec::new(),
    }
}

/// `ValidateDeploymentStatusUpdate`: counters not negative, none above `replicas`, available
/// not above ready, the collision count never decremented.
pub fn validate_deployment_status_update(new: &Deployment, old: &Deployment) -> Vec<FieldError> {
    let s = &new.status;
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(nonnegative_counters(&[
        ("observedGeneration", s.observed_generation),
        ("replicas", i64::from(s.replicas)),
        ("updatedReplicas", i64::from(s.updated_replicas)),
        ("readyReplicas", i64::from(s.ready_replicas)),
        ("availableReplicas", i64::from(s.available_replicas)),
        ("unavailableReplicas", i64::from(s.unavailable_replicas)),
        ("collisionCount", i64::from(s.collision_count.unwrap_or(0))),
    ]));
    errs.extend(not_above(
        "status.replicas",
        s.replicas,
        &[
            ("updatedReplicas", s.updated_replicas),
            ("readyReplicas", s.ready_replicas),
            ("availableReplicas", s.available_replicas),
        ],
    ));
    errs.extend(not_above(
        "readyReplicas",
        s.ready_replicas,
        &[("availableReplicas", s.available_replicas)],
    ));
    errs.extend(collision_count_decremented(
        s.collision_count,
        old.status.collision_count,
    ));
    errs
}

/// `ValidateReplicaSetStatusUpdate`.
pub fn validate_replica_set_status_update(new: &ReplicaSet, old: &ReplicaSet) -> Vec<FieldError> {
    let s = &new.status;
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(nonnegative_counters(&[
        ("replicas", i64::from(s.replicas)),
        ("fullyLabeledReplicas", i64::from(s.fully_labeled_replicas)),
        ("readyReplicas", i64::from(s.ready_replicas)),
        ("availableReplicas", i64::from(s.available_replicas)),
        ("observedGeneration", s.observed_generation),
    ]));
    errs.extend(not_above(
        "status.replicas",
        s.replicas,
        &[
            ("fullyLabeledReplicas", s.fully_labeled_replicas),
            ("readyReplicas", s.ready_replicas),
            ("availableReplicas", s.available_replicas),
        ],
    ));
    errs.extend(not_above(
        "readyReplicas",
        s.ready_replicas,
        &[("availableReplicas", s.available_replicas)],
    ));
    errs
}

/// `ValidateStatefulSetStatusUpdate`.
pub fn validate_stateful_set_status_update(
    new: &StatefulSet,
    old: &StatefulSet,
) -> Vec<FieldError> {
    let s = &new.status;
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(nonnegative_counters(&[
        ("replicas", i64::from(s.replicas)),
        ("readyReplicas", i64::from(s.ready_replicas)),
        ("currentReplicas", i64::from(s.current_replicas)),
        ("updatedReplicas", i64::from(s.updated_replicas)),
        ("availableReplicas", i64::from(s.available_replicas)),
        ("observedGeneration", s.observed_generation),
        ("collisionCount", i64::from(s.collision_count.unwrap_or(0))),
    ]));
    errs.extend(not_above(
        "status.replicas",
        s.replicas,
        &[
            ("readyReplicas", s.ready_replicas),
            ("currentReplicas", s.current_replicas),
            ("updatedReplicas", s.updated_replicas),
            ("availableReplicas", s.available_replicas),
        ],
    ));
    errs.extend(not_above(
        "status.readyReplicas",
        s.ready_replicas,
        &[("availableReplicas", s.available_replicas)],
    ));
    errs.extend(collision_count_decremented(
        s.collision_count,
        old.status.collision_count,
    ));
    errs
}

/// `ValidateDaemonSetStatusUpdate`.
pub fn validate_daemon_set_status_update(new: &DaemonSet, old: &DaemonSet) -> Vec<FieldError> {
    let s = &new.status;
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(nonnegative_counters(&[
        (
            "currentNumberScheduled",
            i64::from(s.current_number_scheduled),
        ),
        ("numberMisscheduled", i64::from(s.number_misscheduled)),
        (
            "desiredNumberScheduled",
            i64::from(s.desired_number_scheduled),
        ),
        ("numberReady", i64::from(s.number_ready)),
        ("observedGeneration", s.observed_generation),
        (
            "updatedNumberScheduled",
            i64::from(s.updated_number_scheduled),
        ),
        ("numberAvailable", i64::from(s.number_available)),
        ("numberUnavailable", i64::from(s.number_unavailable)),
        ("collisionCount", i64::from(s.collision_count.unwrap_or(0))),
    ]));
    errs.extend(collision_count_decremented(
        s.collision_count,
        old.status.collision_count,
    ));
    errs
}
