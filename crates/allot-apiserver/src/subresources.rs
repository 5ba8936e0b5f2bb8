//! The pod subresources that are not the pod: `pods/binding` (POST a `v1 Binding`: sets
//! `spec.nodeName` once, as kube-scheduler's DefaultBinder does) and `pods/eviction` (POST a
//! `policy/v1 Eviction`: deletes the pod unless a PodDisruptionBudget forbids it), as upstream's
//! BindingREST and EvictionREST answer.

use allot_api::core::v1::{Pod, PodCondition};
use allot_api::policy::v1::{PodDisruptionBudget, UnhealthyPodEvictionPolicyType};
use allot_store::{Kind, ObjectKey, Store, Stored};
use axum::http::{Method, StatusCode};
use serde_json::{Value, json};

use crate::server::{ApiError, Shared, Target};

/// Upstream's limit on a PDB's `status.disruptedPods`.
const MAX_DISRUPTED_PODS: usize = 2000;

/// Serves `POST .../pods/NAME/{binding,eviction}`.
pub(crate) fn create(
    shared: &Shared,
    target: &Target,
    subresource: &str,
    method: &Method,
    body: &mut crate::server::RequestBody,
) -> Result<(StatusCode, Value), ApiError> {
    if *method != Method::POST {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("{method} is not supported on pods/{subresource}"),
        ));
    }
    let name = target.name.as_deref().unwrap_or_default();
    let body = body.object()?;
    let body_namespace = body
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !body_namespace.is_empty() && body_namespace != target.namespace {
        return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        ));
    }
    match subresource {
        "binding" => bind(shared, target, name, &body),
        _ => evict(shared, target, name, &body),
    }
}

fn success() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201})
}

fn text<'a>(value: &'a Value, pointer: &str) -> &'a str {
    value
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn string_map(value: &Value, pointer: &str) -> Vec<(String, String)> {
    value
        .pointer(pointer)
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default()
}

/// `Operation cannot be fulfilled on RESOURCE "NAME": REASON` (409).
fn conflict(resource: &str, name: &str, reason: &str) -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "Conflict",
        format!("Operation cannot be fulfilled on {resource} \"{name}\": {reason}"),
    )
    .with_details(json!({"name": name, "kind": resource}))
}

fn pod_not_found(name: &str) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        "NotFound",
        format!("pods \"{name}\" not found"),
    )
    .with_details(json!({"name": name, "kind": "pods"}))
}

/// Sets a pod condition as upstream's `UpdatePodCondition`: the condition replaces the old one
/// of its type, keeping the old transition time when nothing but the probe time changed.
fn set_condition(pod: &mut Pod, mut condition: PodCondition, now: &str) {
    condition.last_transition_time = Some(now.to_string());
    let conditions = &mut pod.status.conditions;
    match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
        None => conditions.push(condition),
        Some(old) => {
            if old.status == condition.status {
                condition
                    .last_transition_time
                    .clone_from(&old.last_transition_time);
            }
            *old = condition;
        }
    }
}

fn bind(
    shared: &Shared,
    target: &Target,
    name: &str,
    body: &Value,
) -> Result<(StatusCode, Value), ApiError> {
    if text(body, "/kind") != "Binding" && !text(body, "/kind").is_empty() {
        return Err(ApiError::bad_request(format!(
            "not a Binding object: {}",
            text(body, "/kind")
        )));
    }
    if text(body, "/metadata/name") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    // Upstream's ValidatePodBinding, answered as its plain error (500).
    let mut problems = Vec::new();
    let kind = text(body, "/target/kind");
    if !kind.is_empty() && kind != "Node" {
        problems.push(format!(
            "target.kind: Unsupported value: \"{kind}\": supported values: \"Node\", \"<empty>\""
        ));
    }
    let node = text(body, "/target/name").to_string();
    if node.is_empty() {
        problems.push("target.name: Required value".to_string());
    }
    if !problems.is_empty() {
        let message = if problems.len() == 1 {
            problems.remove(0)
        } else {
            format!("[{}]", problems.join(", "))
        };
        return Err(ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "",
            message,
        ));
    }
    let uid = text(body, "/metadata/uid").to_string();
    let resource_version = text(body, "/metadata/resourceVersion").to_string();
    let annotations = string_map(body, "/metadata/annotations");
    let labels = string_map(body, "/metadata/labels");
    let key = ObjectKey::new(Kind::Pod, target.namespace.as_str(), name);
    let now = crate::server::now_rfc3339();
    crate::server::write(shared, target.dry_run, |store| {
        let pod = match store.get_stored(&key) {
            Some(Stored::Pod(pod)) => pod.clone(),
            _ => return Err(pod_not_found(name)),
        };
        if !uid.is_empty() && uid != pod.metadata.uid {
            return Err(conflict(
                "pods",
                name,
                &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    pod.metadata.uid
                ),
            ));
        }
        if !resource_version.is_empty() && resource_version != pod.metadata.resource_version {
            return Err(conflict(
                "pods",
                name,
                "the object has been modified; please apply your changes to the latest version and try again",
            ));
        }
        let refuse = |reason: String| Err(conflict("pods/binding", name, &reason));
        if pod.metadata.deletion_timestamp.is_some() {
            return refuse(format!(
                "pod {name} is being deleted, cannot be assigned to a host"
            ));
        }
        if let Some(bound) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
            return refuse(format!(
                "pod {name} is already assigned to node \"{bound}\""
            ));
        }
        if !pod.spec.scheduling_gates.is_empty() {
            return refuse(format!("pod {name} has non-empty .spec.schedulingGates"));
        }
        let mut pod = (*pod).clone();
        pod.spec.node_name = Some(node.clone());
        // ClearingNominatedNodeNameAfterBinding and PodTopologyLabelsAdmission (on in 1.37).
        pod.status.nominated_node_name = None;
        pod.metadata.annotations.extend(annotations.iter().cloned());
        pod.metadata.labels.extend(labels.iter().cloned());
        set_condition(
            &mut pod,
            PodCondition {
                type_: "PodScheduled".into(),
                status: "True".into(),
                ..PodCondition::default()
            },
            &now,
        );
        crate::storage::update_stored(store, Stored::Pod(std::sync::Arc::new(pod)))
            .map_err(|e| crate::server::pod_store_error(name, e))
    })?;
    Ok((StatusCode::CREATED, success()))
}

/// Upstream's 429 for an eviction a budget forbids.
fn too_many_requests(retry_after: u64, cause: String) -> ApiError {
    let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
    if retry_after > 0 {
        details["retryAfterSeconds"] = json!(retry_after);
    }
    ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "TooManyRequests",
        "Cannot evict pod as it would violate the pod's disruption budget.",
    )
    .with_details(details)
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .conditions
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

/// What the budget says about evicting a pod: `Ok(Some(pdb))` with the budget to write back
/// (one disruption fewer), `Ok(None)` when the eviction needs no budget change.
fn check_budget(
    store: &Store,
    pod: &Pod,
    now: &str,
) -> Result<Option<PodDisruptionBudget>, ApiError> {
    let budgets: Vec<&PodDisruptionBudget> = store
        .list::<PodDisruptionBudget>()
        .filter(|b| b.metadata.namespace == pod.metadata.namespace)
        .filter(|b| {
            b.spec
                .selector
                .as_ref()
                .is_some_and(|s| crate::aggregation::selector_matches(s, &pod.metadata.labels))
        })
        .collect();
    let budget = match budgets.as_slice() {
        [] => return Ok(None),
        [one] => *one,
        _ => {
            return Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "",
                "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
            ));
        }
    };
    let status = &budget.status;
    if !pod_ready(pod) {
        let always = budget.spec.unhealthy_pod_eviction_policy
            == Some(UnhealthyPodEvictionPolicyType::AlwaysAllow);
        if always
            || (status.current_healthy >= status.desired_healthy && status.desired_healthy > 0)
        {
            return Ok(None);
        }
    }
    let name = &budget.metadata.name;
    if status.observed_generation < budget.metadata.generation.unwrap_or(0) {
        return Err(too_many_requests(
            10,
            format!("The disruption budget {name} is still being processed by the server."),
        ));
    }
    let forbidden = |reason: &str| {
        ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!("poddisruptionbudget.policy \"{name}\" is forbidden: {reason}"),
        )
        .with_details(json!({"name": name, "group": "policy", "kind": "poddisruptionbudget"}))
    };
    if status.disruptions_allowed < 0 {
        return Err(forbidden("pdb disruptions allowed is negative"));
    }
    if status.disrupted_pods.len() > MAX_DISRUPTED_PODS {
        return Err(forbidden(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if status.disruptions_allowed == 0 {
        let condition = status
            .conditions
            .iter()
            .find(|c| c.type_ == "DisruptionAllowed");
        let message = match condition {
            Some(c) if c.status == "False" && !c.message.is_empty() && c.reason == "SyncFailed" => {
                format!(
                    "The disruption budget {name} does not allow evicting pods currently because it failed sync: {}",
                    c.message
                )
            }
            _ if status.current_healthy <= status.desired_healthy => format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status.desired_healthy, status.current_healthy
            ),
            Some(c) if c.status == "False" && !c.message.is_empty() => format!(
                "The disruption budget {name} does not allow evicting pods currently ({}): {}",
                c.reason, c.message
            ),
            _ => format!("The disruption budget {name} does not allow evicting pods currently"),
        };
        return Err(too_many_requests(0, message));
    }
    let mut updated = budget.clone();
    updated.status.disruptions_allowed -= 1;
    if updated.status.disruptions_allowed == 0 {
        let condition = allot_api::meta::v1::Condition {
            type_: "DisruptionAllowed".into(),
            status: "False".into(),
            reason: "InsufficientPods".into(),
            observed_generation: Some(updated.status.observed_generation),
            last_transition_time: now.to_string(),
            message: String::new(),
        };
        let conditions = &mut updated.status.conditions;
        match conditions.iter_mut().find(|c| c.type_ == condition.type_) {
            Some(old) if old.status == condition.status => {
                old.reason = condition.reason;
                old.message = condition.message;
                old.observed_generation = condition.observed_generation;
            }
            Some(old) => *old = condition,
            None => conditions.push(condition),
        }
    }
    updated
        .status
        .disrupted_pods
        .insert(pod.metadata.name.clone(), now.to_string());
    Ok(Some(updated))
}

fn evict(
    shared: &Shared,
    target: &Target,
    name: &str,
    body: &Value,
) -> Result<(StatusCode, Value), ApiError> {
    if text(body, "/kind") != "Eviction" && !text(body, "/kind").is_empty() {
        return Err(ApiError::bad_request(format!(
            "not a Eviction object: {}",
            text(body, "/kind")
        )));
    }
    if text(body, "/metadata/name") != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    let options = body.get("deleteOptions").cloned().unwrap_or(Value::Null);
    if options
        .get("ignoreStoreReadErrorWithClusterBreakingPotential")
        .and_then(Value::as_bool)
        == Some(true)
    {
        let message = "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option";
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("Eviction.policy \"{name}\" is invalid: {message}"),
        )
        .with_details(json!({"name": name, "group": "policy", "kind": "Eviction",
            "causes": [{"reason": "FieldValueInvalid", "message": "Invalid value: true: can not be set for pod eviction, try after removing the option",
                        "field": "deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential"}]})));
    }
    let dry_run = target.dry_run
        || options
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|v| v == "All"));
    let key = ObjectKey::new(Kind::Pod, target.namespace.as_str(), name);
    let now = crate::server::now_rfc3339();
    // Check the budget and take one disruption from it, then mark the pod and delete it.
    crate::server::write(shared, dry_run, |store| {
        let pod = match store.get_stored(&key) {
            Some(Stored::Pod(pod)) => pod.clone(),
            _ => return Err(pod_not_found(name)),
        };
        let terminal = matches!(
            pod.status.phase.as_deref(),
            Some("Succeeded" | "Failed" | "Pending")
        ) || pod.metadata.deletion_timestamp.is_some();
        if !terminal && let Some(budget) = check_budget(store, &pod, &now)? {
            crate::storage::update_stored(
                store,
                Stored::PodDisruptionBudget(std::sync::Arc::new(budget)),
            )
            .map_err(|e| ApiError::internal(e.to_string()))?;
        }
        for (field, have, label) in [
            ("uid", pod.metadata.uid.as_str(), "UID"),
            (
                "resourceVersion",
                pod.metadata.resource_version.as_str(),
                "ResourceVersion",
            ),
        ] {
            if let Some(want) = options
                .pointer(&format!("/preconditions/{field}"))
                .and_then(Value::as_str)
                .filter(|w| !w.is_empty() && *w != have)
            {
                let what = if label == "UID" {
                    "The object might have been deleted and then recreated"
                } else {
                    "The object might have been modified"
                };
                return Err(conflict(
                    "Pod",
                    name,
                    &format!(
                        "the {label} in the precondition ({want}) does not match the {label} in record ({have}). {what}"
                    ),
                ));
            }
        }
        let mut marked = (*pod).clone();
        set_condition(
            &mut marked,
            PodCondition {
                type_: "DisruptionTarget".into(),
                status: "True".into(),
                reason: Some("EvictionByEvictionAPI".into()),
                message: Some("Eviction API: evicting".into()),
                ..PodCondition::default()
            },
            &now,
        );
        let marked = crate::storage::update_stored(store, Stored::Pod(std::sync::Arc::new(marked)))
            .map_err(|e| crate::server::pod_store_error(name, e))?;
        crate::server::delete_stored(store, marked, &now)
            .map_err(|e| crate::server::pod_store_error(name, e))
    })?;
    Ok((StatusCode::CREATED, success()))
}
