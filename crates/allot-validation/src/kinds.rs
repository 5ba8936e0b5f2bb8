//! Dispatch of the workload, storage, service, policy and scheduling kinds to their rules
//! (`apps`, `batch`, `storage`, `policy`, `core_more`), and of their updates.

use allot_api::load::Object;

use crate::field::FieldError;
use crate::{apps, batch, core_more, policy, storage};

/// Create validation of the kinds this module dispatches; empty for any other kind.
pub fn validate_object(object: &Object) -> Vec<FieldError> {
    match object {
        Object::PriorityClass(o) => core_more::validate_priority_class(o),
        Object::PersistentVolume(o) => core_more::validate_persistent_volume(o),
        Object::PersistentVolumeClaim(o) => core_more::validate_persistent_volume_claim(o),
        Object::Service(o) => core_more::validate_service(o),
        Object::ReplicationController(o) => core_more::validate_replication_controller(o),
        Object::StorageClass(o) => storage::validate_storage_class(o),
        Object::CSIDriver(o) => storage::validate_csi_driver(o),
        Object::CSINode(o) => storage::validate_csi_node(o),
        Object::CSIStorageCapacity(o) => storage::validate_csi_storage_capacity(o),
        Object::VolumeAttachment(o) => storage::validate_volume_attachment(o),
        Object::PodDisruptionBudget(o) => policy::validate_pod_disruption_budget(o),
        Object::Deployment(o) => apps::validate_deployment(o),
        Object::ReplicaSet(o) => apps::validate_replica_set(o),
        Object::StatefulSet(o) => apps::validate_stateful_set(o),
        Object::DaemonSet(o) => apps::validate_daemon_set(o),
        Object::ControllerRevision(o) => apps::validate_controller_revision(o),
        Object::Job(o) => batch::validate_job(o),
        Object::CronJob(o) => batch::validate_cron_job(o),
        Object::VolumeAttributesClass(o) => storage::validate_volume_attributes_class(o),
        other => crate::uninterpreted::validate_object(other),
    }
}

/// Update validation of the kinds this module dispatches (the create rules run on the new
/// object too): through the main resource, what each kind's update may not change; through
/// `/status`, the metadata's identity and, for the apps/v1 workloads and Jobs, upstream's
/// status rules (counters). Objects of different kinds, or of other kinds, validate
/// as empty.
pub fn validate_object_update(
    new: &Object,
    old: &Object,
    subresource: crate::update::Subresource,
) -> Vec<FieldError> {
    if subresource == crate::update::Subresource::Status {
        return match (new, old) {
            (Object::Deployment(n), Object::Deployment(o)) => {
                apps::validate_deployment_status_update(n, o)
            }
            (Object::ReplicaSet(n), Object::ReplicaSet(o)) => {
                apps::validate_replica_set_status_update(n, o)
            }
            (Object::StatefulSet(n), Object::StatefulSet(o)) => {
                apps::validate_stateful_set_status_update(n, o)
            }
            (Object::DaemonSet(n), Object::DaemonSet(o)) => {
                apps::validate_daemon_set_status_update(n, o)
            }
            (Object::Job(n), Object::Job(o)) => batch::validate_job_status_update(n, o),
            _ => match (meta_of(new), meta_of(old)) {
                (Some(n), Some(o)) if new.kind() == old.kind() => validate_object_meta_update(n, o),
                _ => Vec::new(),
            },
        };
    }
    match (new, old) {
        (Object::PriorityClass(n), Object::PriorityClass(o)) => {
            core_more::validate_priority_class_update(n, o)
        }
        (Object::PersistentVolume(n), Object::PersistentVolume(o)) => {
            core_more::validate_persistent_volume_update(n, o)
        }
        (Object::PersistentVolumeClaim(n), Object::PersistentVolumeClaim(o)) => {
            core_more::validate_persistent_volume_claim_update(n, o)
        }
        (Object::Service(n), Object::Service(o)) => core_more::validate_service_update(n, o),
        (Object::ReplicationController(n), Object::ReplicationController(o)) => {
            core_more::validate_replication_controller_update(n, o)
        }
        (Object::StorageClass(n), Object::StorageClass(o)) => {
            storage::validate_storage_class_update(n, o)
        }
        (Object::CSIDriver(n), Object::CSIDriver(o)) => storage::validate_csi_driver_update(n, o),
        (Object::CSINode(n), Object::CSINode(o)) => storage::validate_csi_node_update(n, o),
        (Object::CSIStorageCapacity(n), Object::CSIStorageCapacity(o)) => {
            storage::validate_csi_storage_capacity_update(n, o)
        }
        (Object::VolumeAttachment(n), Object::VolumeAttachment(o)) => {
            storage::validate_volume_attachment_update(n, o)
        }
        (Object::VolumeAttributesClass(n), Object::VolumeAttributesClass(o)) => {
            storage::validate_volume_attributes_class_update(n, o)
        }
        (Object::PodDisruptionBudget(n), Object::PodDisruptionBudget(o)) => {
            policy::validate_pod_disruption_budget_update(n, o)
        }
        (Object::Deployment(n), Object::Deployment(o)) => apps::validate_deployment_update(n, o),
        (Object::ReplicaSet(n), Object::ReplicaSet(o)) => apps::validate_replica_set_update(n, o),
        (Object::StatefulSet(n), Object::StatefulSet(o)) => {
            apps::validate_stateful_set_update(n, o)
        }
        (Object::DaemonSet(n), Object::DaemonSet(o)) => apps::validate_daemon_set_update(n, o),
        (Object::ControllerRevision(n), Object::ControllerRevision(o)) => {
            apps::validate_controller_revision_update(n, o)
        }
        (Object::Job(n), Object::Job(o)) => batch::validate_job_update(n, o),
        (Object::CronJob(n), Object::CronJob(o)) => batch::validate_cron_job_update(n, o),
        _ => match (meta_of(new), meta_of(old)) {
            (Some(n), Some(o)) if new.kind() == old.kind() => validate_object_meta_update(n, o),
            _ => Vec::new(),
        },
    }
}

/// The metadata of an object of a kind this module dispatches.
fn meta_of(object: &Object) -> Option<&ObjectMeta> {
    let meta = match object {
        Object::PriorityClass(o) => &o.metadata,
        Object::PersistentVolume(o) => &o.metadata,
        Object::PersistentVolumeClaim(o) => &o.metadata,
        Object::Service(o) => &o.metadata,
        Object::ReplicationController(o) => &o.metadata,
        Object::StorageClass(o) => &o.metadata,
        Object::CSIDriver(o) => &o.metadata,
        Object::CSINode(o) => &o.metadata,
        Object::CSIStorageCapacity(o) => &o.metadata,
        Object::VolumeAttachment(o) => &o.metadata,
        Object::VolumeAttributesClass(o) => &o.metadata,
        Object::PodDisruptionBudget(o) => &o.metadata,
        Object::Deployment(o) => &o.metadata,
        Object::ReplicaSet(o) => &o.metadata,
        Object::StatefulSet(o) => &o.metadata,
        Object::DaemonSet(o) => &o.metadata,
        Object::ControllerRevision(o) => &o.metadata,
        Object::Job(o) => &o.metadata,
        Object::CronJob(o) => &o.metadata,
        Object::ServiceAccount(o) => &o.metadata,
        Object::Secret(o) => &o.metadata,
        Object::ConfigMap(o) => &o.metadata,
        Object::Endpoints(o) => &o.metadata,
        Object::ResourceQuota(o) => &o.metadata,
        Object::LimitRange(o) => &o.metadata,
        Object::PodTemplate(o) => &o.metadata,
        Object::EndpointSlice(o) => &o.metadata,
        Object::HorizontalPodAutoscaler(o) => &o.metadata,
        Object::CertificateSigningRequest(o) => &o.metadata,
        Object::ValidatingAdmissionPolicy(o) => &o.metadata,
        Object::ValidatingAdmissionPolicyBinding(o) => &o.metadata,
        Object::ServiceCIDR(o) => &o.metadata,
        Object::IPAddress(o) => &o.metadata,
        _ => return None,
    };
    Some(meta)
}

use std::collections::BTreeMap;

use allot_api::core::v1::{Pod, PodTemplateSpec};
use allot_api::intstr::IntOrString;
use allot_api::meta::v1::{LabelSelector, ObjectMeta};

use crate::field::{BadValue, child};
use crate::names::{is_qualified_name, validate_label_name, validate_label_value};

/// Upstream's `isNegativeErrorMsg`.
pub(crate) const NEGATIVE: &str = "must be greater than or equal to 0";

/// `ValidateNonnegativeField`.
pub(crate) fn nonnegative(value: i64, path: &str) -> Vec<FieldError> {
    if value < 0 {
        vec![FieldError::invalid(path, value, NEGATIVE)]
    } else {
        Vec::new()
    }
}

/// A Go string as `%#v` prints it.
fn go_quote(text: &str) -> String {
    format!("{text:?}")
}

/// A `map[string]string` as Go's `%#v` prints it (keys in order; `(nil)` when empty).
pub(crate) fn go_map(map: &BTreeMap<String, String>) -> BadValue {
    if map.is_empty() {
        return BadValue::Raw("map[string]string(nil)".into());
    }
    let pairs: Vec<String> = map
        .iter()
        .map(|(k, v)| format!("{}:{}", go_quote(k), go_quote(v)))
        .collect();
    BadValue::Raw(format!("map[string]string{{{}}}", pairs.join(", ")))
}

/// A label selector as Go's `%#v` prints the dereferenced `*metav1.LabelSelector`.
pub(crate) fn go_label_selector(selector: Option<&LabelSelector>) -> BadValue {
    let Some(selector) = selector else {
        return BadValue::Null;
    };
    let labels = match go_map(&selector.match_labels) {
        BadValue::Raw(text) => text,
        _ => String::new(),
    };
    let expressions = if selector.match_expressions.is_empty() {
        "[]v1.LabelSelectorRequirement(nil)".to_string()
    } else {
        let items: Vec<String> = selector
            .match_expressions
            .iter()
            .map(|e| {
                let values = if e.values.is_empty() {
                    "[]string(nil)".to_string()
                } else {
                    let quoted: Vec<String> = e.values.iter().map(|v| go_quote(v)).collect();
                    format!("[]string{{{}}}", quoted.join(", "))
                };
                format!(
                    "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                    go_quote(&e.key),
                    go_quote(&e.operator)
                )
            })
            .collect();
        format!("[]v1.LabelSelectorRequirement{{{}}}", items.join(", "))
    };
    BadValue::Raw(format!(
        "v1.LabelSelector{{MatchLabels:{labels}, MatchExpressions:{expressions}}}"
    ))
}

/// An `intstr.IntOrString` as Go's `%#v` prints it.
pub(crate) fn go_int_or_string(value: &IntOrString) -> BadValue {
    BadValue::Raw(match value {
        IntOrString::Int(n) => format!("intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}"),
        IntOrString::String(s) => {
            format!(
                "intstr.IntOrString{{Type:1, IntVal:0, StrVal:{}}}",
                go_quote(s)
            )
        }
    })
}

/// Whether a label selector selects `labels` (`matchLabels` and every expression).
pub(crate) fn selector_matches(
    selector: &LabelSelector,
    labels: &BTreeMap<String, String>,
) -> bool {
    selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
        && selector.match_expressions.iter().all(|e| {
            let value = labels.get(&e.key);
            match e.operator.as_str() {
                "In" => value.is_some_and(|v| e.values.contains(v)),
                "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
                "Exists" => value.is_some(),
                "DoesNotExist" => value.is_none(),
                _ => false,
            }
        })
}

/// Whether upstream's `LabelSelectorAsSelector` accepts the selector.
pub(crate) fn selector_converts(selector: &LabelSelector) -> bool {
    crate::rbac::validate_label_selector(selector, "").is_empty()
}

/// Whether a selector matches nothing, everything, or by its rules: upstream's
/// `LabelSelectorAsSelector(nil)` is Nothing (matches no labels), an empty selector Everything.
pub(crate) enum Selection<'a> {
    /// A nil selector.
    Nothing,
    /// An empty selector.
    Everything,
    /// A selector with requirements.
    Rules(&'a LabelSelector),
}

impl<'a> Selection<'a> {
    pub(crate) fn of(selector: Option<&'a LabelSelector>) -> Self {
        match selector {
            None => Selection::Nothing,
            Some(s) if s.match_labels.is_empty() && s.match_expressions.is_empty() => {
                Selection::Everything
            }
            Some(s) => Selection::Rules(s),
        }
    }

    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Selection::Nothing => false,
            Selection::Everything => true,
            Selection::Rules(s) => selector_matches(s, labels),
        }
    }
}

/// `selector` does not match template `labels`, at `path` (the template's metadata labels).
pub(crate) fn template_mismatch(path: &str, labels: &BTreeMap<String, String>) -> FieldError {
    FieldError::invalid(
        path,
        go_map(labels),
        "`selector` does not match template `labels`",
    )
}

/// A workload's selector: required, valid and not empty (`kind` names the workload in the
/// message as upstream words it).
pub(crate) fn validate_workload_selector(
    selector: Option<&LabelSelector>,
    kind: &str,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    match selector {
        None => errs.push(FieldError::required(path, "")),
        Some(s) => {
            errs.extend(crate::rbac::validate_label_selector(s, path));
            if s.match_labels.is_empty() && s.match_expressions.is_empty() {
                errs.push(FieldError::invalid(
                    path,
                    go_label_selector(Some(s)),
                    format!("empty selector is invalid for {kind}"),
                ));
            }
        }
    }
    errs
}

/// Labels (`ValidateLabels`) at `path`.
pub(crate) fn validate_labels(labels: &BTreeMap<String, String>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (key, value) in labels {
        errs.extend(validate_label_name(key, path));
        errs.extend(validate_label_value(value, path));
    }
    errs
}

/// Annotations (`ValidateAnnotations`) at `path`.
pub(crate) fn validate_annotations(
    annotations: &BTreeMap<String, String>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut total = 0;
    for (key, value) in annotations {
        for msg in is_qualified_name(&key.to_lowercase()) {
            errs.push(FieldError::invalid(path, key, msg));
        }
        total += key.len() + value.len();
    }
    if total > 256 * 1024 {
        errs.push(FieldError::too_long(path, 256 * 1024));
    }
    errs
}

/// `ValidatePodTemplateSpec`: the template's labels and annotations, and its spec as a pod's
/// (allot's pod rules, with their paths moved under `path.spec`).
pub(crate) fn validate_pod_template_spec(
    template: &PodTemplateSpec,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = validate_labels(&template.metadata.labels, &child(path, "labels"));
    errs.extend(validate_annotations(
        &template.metadata.annotations,
        &child(path, "annotations"),
    ));
    let pod = Pod {
        metadata: ObjectMeta {
            name: "template".into(),
            ..ObjectMeta::default()
        },
        spec: template.spec.clone(),
        ..Pod::default()
    };
    for mut error in crate::core::validate_pod(&pod) {
        if let Some(rest) = error.path.strip_prefix("spec") {
            error.path = format!("{}{rest}", child(path, "spec"));
            errs.push(error);
        }
    }
    if !template.spec.ephemeral_containers.is_empty() {
        errs.push(FieldError::forbidden(
            &child(path, "spec.ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// The restart policy of a template, as the pod defaults leave it (`Always` when unset).
pub(crate) fn restart_policy(template: &PodTemplateSpec) -> &str {
    template.spec.restart_policy.as_deref().unwrap_or("Always")
}

/// Upstream's `IsValidPercent` message.
pub(crate) const PERCENT_MESSAGE: &str = "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')";

/// The percentage of an `N%` string.
pub(crate) fn percent_value(value: &IntOrString) -> Option<i64> {
    match value {
        IntOrString::String(s) => s
            .strip_suffix('%')
            .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|n| n.parse::<i64>().ok()),
        IntOrString::Int(_) => None,
    }
}

/// `getIntOrPercentValue`: the percentage or the integer (0 for other strings).
pub(crate) fn int_or_percent_value(value: &IntOrString) -> i64 {
    match value {
        IntOrString::Int(n) => i64::from(*n),
        IntOrString::String(_) => percent_value(value).unwrap_or(0),
    }
}

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn validate_positive_int_or_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match value {
        IntOrString::Int(n) => nonnegative(i64::from(*n), path),
        IntOrString::String(_) if percent_value(value).is_none() => {
            vec![FieldError::invalid(
                path,
                go_int_or_string(value),
                PERCENT_MESSAGE,
            )]
        }
        IntOrString::String(_) => Vec::new(),
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(value: &IntOrString, path: &str) -> Vec<FieldError> {
    match percent_value(value) {
        Some(p) if p > 100 => vec![FieldError::invalid(
            path,
            go_int_or_string(value),
            "must not be greater than 100%",
        )],
        _ => Vec::new(),
    }
}

/// `ValidateImmutableField` of two values that compare equal: "field is immutable".
pub(crate) fn immutable<T: PartialEq>(
    new: &T,
    old: &T,
    path: &str,
    value: impl FnOnce(&T) -> BadValue,
) -> Vec<FieldError> {
    if new == old {
        Vec::new()
    } else {
        vec![FieldError::invalid(path, value(new), "field is immutable")]
    }
}

/// `ValidateObjectMetaUpdate` of the update module.
pub(crate) fn validate_object_meta_update(new: &ObjectMeta, old: &ObjectMeta) -> Vec<FieldError> {
    crate::update::validate_object_meta_update(new, old, "metadata")
}

/// A whole structure that may not change, as upstream's declarative validator words it
/// (`+k8s:immutable`: `Forbidden: field is immutable`); the handwritten twin prints Go pointers.
pub(crate) fn immutable_struct<T: PartialEq>(new: &T, old: &T, path: &str) -> Vec<FieldError> {
    if new == old {
        Vec::new()
    } else {
        vec![FieldError::forbidden(path, crate::update::FIELD_IMMUTABLE)]
    }
}
