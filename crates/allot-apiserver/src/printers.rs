//! `kubectl get` columns and cells of the workload, storage, service and policy kinds, as
//! upstream's printers (pkg/printers/internalversion) define them. The server always fills the
//! wide (priority 1) cells; kubectl shows them with `-o wide`.
//!
//! Rows are computed from the object's JSON, so a missing field reads as its Go zero value, as
//! upstream's printers see the internal types after defaulting.

use allot_store::Kind;
use serde_json::{Value, json};

use crate::resources::human_age;

/// A column: name, type, priority.
pub type Column = (&'static str, &'static str, u8);

const NAME: Column = ("Name", "string", 0);
const AGE: Column = ("Age", "string", 0);
const CONTAINERS: Column = ("Containers", "string", 1);
const IMAGES: Column = ("Images", "string", 1);
const SELECTOR: Column = ("Selector", "string", 1);

/// The columns of `kind`; kinds upstream has no printer for get the API server's default
/// columns (`Name`, `Created At`).
pub fn columns(kind: Kind) -> Vec<Column> {
    let mut out = vec![NAME];
    let rest: &[Column] = match kind {
        Kind::PriorityClass => &[
            ("Value", "integer", 0),
            ("Global-Default", "boolean", 0),
            AGE,
            ("PreemptionPolicy", "string", 0),
        ],
        Kind::StorageClass => &[
            ("Provisioner", "string", 0),
            ("ReclaimPolicy", "string", 0),
            ("VolumeBindingMode", "string", 0),
            ("AllowVolumeExpansion", "string", 0),
            AGE,
        ],
        Kind::CSIDriver => &[
            ("AttachRequired", "boolean", 0),
            ("PodInfoOnMount", "boolean", 0),
            ("StorageCapacity", "boolean", 0),
            ("TokenRequests", "string", 0),
            ("RequiresRepublish", "boolean", 0),
            ("Modes", "string", 0),
            AGE,
        ],
        Kind::CSINode => &[("Drivers", "integer", 0), AGE],
        Kind::CSIStorageCapacity => &[("StorageClassName", "string", 0), ("Capacity", "string", 0)],
        Kind::VolumeAttachment => &[
            ("Attacher", "string", 0),
            ("PV", "string", 0),
            ("Node", "string", 0),
            ("Attached", "boolean", 0),
            AGE,
        ],
        Kind::PersistentVolume => &[
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("Reclaim Policy", "string", 0),
            ("Status", "string", 0),
            ("Claim", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            ("Reason", "string", 0),
            AGE,
            ("VolumeMode", "string", 1),
        ],
        Kind::PersistentVolumeClaim => &[
            ("Status", "string", 0),
            ("Volume", "string", 0),
            ("Capacity", "string", 0),
            ("Access Modes", "string", 0),
            ("StorageClass", "string", 0),
            ("VolumeAttributesClass", "string", 0),
            AGE,
            ("VolumeMode", "string", 1),
        ],
        Kind::Service => &[
            ("Type", "string", 0),
            ("Cluster-IP", "string", 0),
            ("External-IP", "string", 0),
            ("Port(s)", "string", 0),
            AGE,
            SELECTOR,
        ],
        Kind::ReplicationController | Kind::ReplicaSet => &[
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        Kind::PodDisruptionBudget => &[
            ("Min Available", "string", 0),
            ("Max Unavailable", "string", 0),
            ("Allowed Disruptions", "integer", 0),
            AGE,
        ],
        Kind::Deployment => &[
            ("Ready", "string", 0),
            ("Up-to-date", "string", 0),
            ("Available", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        Kind::StatefulSet => &[("Ready", "string", 0), AGE, CONTAINERS, IMAGES],
        Kind::DaemonSet => &[
            ("Desired", "integer", 0),
            ("Current", "integer", 0),
            ("Ready", "integer", 0),
            ("Up-to-date", "integer", 0),
            ("Available", "integer", 0),
            ("Node Selector", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        Kind::ControllerRevision => &[("Controller", "string", 0), ("Revision", "string", 0), AGE],
        Kind::Job => &[
            ("Status", "string", 0),
            ("Completions", "string", 0),
            ("Duration", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        Kind::CronJob => &[
            ("Schedule", "string", 0),
            ("Timezone", "string", 0),
            ("Suspend", "boolean", 0),
            ("Active", "integer", 0),
            ("Last Schedule", "string", 0),
            AGE,
            CONTAINERS,
            IMAGES,
            SELECTOR,
        ],
        Kind::ServiceAccount => &[("Secrets", "string", 0), AGE],
        Kind::Secret => &[("Type", "string", 0), ("Data", "string", 0), AGE],
        Kind::ConfigMap => &[("Data", "string", 0), AGE],
        Kind::Endpoints => &[("Endpoints", "string", 0), AGE],
        Kind::ResourceQuota => &[("Request", "string", 0), ("Limit", "string", 0), AGE],
        Kind::PodTemplate => &[
            ("Containers", "string", 0),
            ("Images", "string", 0),
            ("Pod Labels", "string", 0),
        ],
        Kind::EndpointSlice => &[
            ("AddressType", "string", 0),
            ("Ports", "string", 0),
            ("Endpoints", "string", 0),
            AGE,
        ],
        Kind::HorizontalPodAutoscaler => &[
            ("Reference", "string", 0),
            ("Targets", "string", 0),
            ("MinPods", "string", 0),
            ("MaxPods", "string", 0),
            ("Replicas", "string", 0),
            AGE,
        ],
        Kind::CertificateSigningRequest => &[
            AGE,
            ("SignerName", "string", 0),
            ("Requestor", "string", 0),
            ("RequestedDuration", "string", 0),
            ("Condition", "string", 0),
        ],
        Kind::ValidatingAdmissionPolicy => &[
            ("Validations", "integer", 0),
            ("ParamKind", "string", 0),
            AGE,
        ],
        Kind::ValidatingAdmissionPolicyBinding => {
            &[("PolicyName", "string", 0), ("ParamRef", "string", 0), AGE]
        }
        Kind::ServiceCIDR => &[("CIDRs", "string", 0), AGE],
        Kind::IPAddress => &[("ParentRef", "string", 0)],
        Kind::VolumeAttributesClass => &[("DriverName", "string", 0), AGE],
        _ => &[("Created At", "date", 0)],
    };
    out.extend_from_slice(rest);
    out
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> &'a str {
    object
        .pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
}

fn int_at(object: &Value, pointer: &str) -> i64 {
    object.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn bool_at(object: &Value, pointer: &str) -> Option<bool> {
    object.pointer(pointer).and_then(Value::as_bool)
}

fn array_at<'a>(object: &'a Value, pointer: &str) -> &'a [Value] {
    object
        .pointer(pointer)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// How long ago an RFC 3339 time was, as `kubectl get` prints ages; `<unknown>` when unset.
fn since(text: &str, now: chrono::DateTime<chrono::Utc>) -> String {
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| human_age((now - t.with_timezone(&chrono::Utc)).num_seconds()))
        .unwrap_or_else(|_| "<unknown>".into())
}

/// `key=value` pairs joined by commas in key order, or `<none>` (upstream's
/// `labels.FormatLabels`).
fn format_labels(map: Option<&Value>) -> String {
    let pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if pairs.is_empty() {
        "<none>".into()
    } else {
        pairs.join(",")
    }
}

/// A label selector as upstream's `metav1.FormatLabelSelector` writes it: `matchLabels` as
/// `k=v`, then each expression (`k in (a,b)`, `k notin (a)`, `k`, `!k`), or `<none>`.
pub fn format_label_selector(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        parts.extend(
            labels
                .iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default())),
        );
    }
    for expression in array_at(selector, "/matchExpressions") {
        let key = str_at(expression, "/key");
        let mut values: Vec<&str> = array_at(expression, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let list = values.join(",");
        parts.push(match str_at(expression, "/operator") {
            "In" => format!("{key} in ({list})"),
            "NotIn" => format!("{key} notin ({list})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({list})"),
        });
    }
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

/// The containers' names and images of a pod template, comma-separated.
fn containers_and_images(template: Option<&Value>) -> (String, String) {
    let containers = template.map_or(&[][..], |t| array_at(t, "/spec/containers"));
    let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| str_at(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// Access modes as `RWO,ROX,RWX,RWOP` (upstream's `GetAccessModesAsString`).
pub fn access_modes(modes: &[Value]) -> String {
    let has = |mode: &str| modes.iter().any(|m| m.as_str() == Some(mode));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// The storage class of a volume or claim: the beta annotation wins over the field.
fn storage_class(object: &Value) -> String {
    match object
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
    {
        Some(class) => class.to_string(),
        None => str_at(object, "/spec/storageClassName").to_string(),
    }
}

fn unset_or(object: &Value, pointer: &str) -> String {
    match object.pointer(pointer).and_then(Value::as_str) {
        Some(text) => text.to_string(),
        None => "<unset>".into(),
    }
}

fn bool_text(value: Option<bool>) -> String {
    match value {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => "<unset>".into(),
    }
}

fn int_or_string(value: Option<&Value>) -> String {
    match value {
        Some(Value::Number(n)) => n.to_string(),
        Some(Value::String(s)) => s.clone(),
        _ => "N/A".into(),
    }
}

/// A service's external address (upstream's `getServiceExternalIP`).
fn service_external_ip(object: &Value) -> String {
    let external: Vec<&str> = array_at(object, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    match str_at(object, "/spec/type") {
        "ClusterIP" | "NodePort" | "" => {
            if external.is_empty() {
                "<none>".into()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let mut ingress: Vec<&str> = array_at(object, "/status/loadBalancer/ingress")
                .iter()
                .filter_map(|i| {
                    let ip = str_at(i, "/ip");
                    let host = str_at(i, "/hostname");
                    (!ip.is_empty())
                        .then_some(ip)
                        .or((!host.is_empty()).then_some(host))
                })
                .collect();
            ingress.sort_unstable();
            ingress.dedup();
            let mut lb = ingress.join(",");
            // The narrow table clips the load balancer list to 16 bytes; the server fills
            // the wide form, as kube-apiserver's table conversion does.
            if !external.is_empty() {
                let mut all: Vec<String> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').map(str::to_string).collect()
                };
                all.extend(external.iter().map(|s| s.to_string()));
                return all.join(",");
            }
            if lb.is_empty() {
                lb = "<pending>".into();
            }
            lb
        }
        "ExternalName" => str_at(object, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    }
}

/// A service's ports as `80/TCP` or `80:30080/TCP`, or `<none>`.
fn service_ports(object: &Value) -> String {
    let pieces: Vec<String> = array_at(object, "/spec/ports")
        .iter()
        .map(|p| {
            let port = int_at(p, "/port");
            let protocol = str_at(p, "/protocol");
            match int_at(p, "/nodePort") {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    if pieces.is_empty() {
        "<none>".into()
    } else {
        pieces.join(",")
    }
}

fn has_condition(object: &Value, kind: &str) -> bool {
    array_at(object, "/status/conditions")
        .iter()
        .any(|c| str_at(c, "/type") == kind && str_at(c, "/status") == "True")
}

/// A Job's status column (upstream's order of precedence).
fn job_status(object: &Value) -> &'static str {
    if has_condition(object, "Complete") {
        "Complete"
    } else if has_condition(object, "Failed") {
        "Failed"
    } else if object.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if has_condition(object, "Suspended") {
        "Suspended"
    } else if has_condition(object, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    }
}

fn job_completions(object: &Value) -> String {
    let succeeded = int_at(object, "/status/succeeded");
    match object.pointer("/spec/completions").and_then(Value::as_i64) {
        Some(completions) => format!("{succeeded}/{completions}"),
        None => match int_at(object, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    }
}

fn job_duration(object: &Value, now: chrono::DateTime<chrono::Utc>) -> String {
    let parse = |p: &str| {
        chrono::DateTime::parse_from_rfc3339(str_at(object, p))
            .ok()
            .map(|t| t.with_timezone(&chrono::Utc))
    };
    match (parse("/status/startTime"), parse("/status/completionTime")) {
        (None, _) => String::new(),
        (Some(start), None) => human_age((now - start).num_seconds()),
        (Some(start), Some(end)) => human_age((end - start).num_seconds()),
    }
}

/// The controller owning an object as `kind.group/name` in lower case, or `<none>`.
fn controller_of(object: &Value) -> String {
    let Some(owner) = array_at(object, "/metadata/ownerReferences")
        .iter()
        .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
    else {
        return "<none>".into();
    };
    let group = str_at(owner, "/apiVersion")
        .rsplit_once('/')
        .map_or("", |(g, _)| g);
    let kind = str_at(owner, "/kind");
    let group_kind = if group.is_empty() {
        kind.to_string()
    } else {
        format!("{kind}.{group}")
    };
    if group_kind.is_empty() {
        return str_at(owner, "/name").to_string();
    }
    format!("{}/{}", group_kind.to_lowercase(), str_at(owner, "/name"))
}

/// The cells of one row, matching [`columns`].
pub fn cells(kind: Kind, object: &Value, now: chrono::DateTime<chrono::Utc>) -> Vec<Value> {
    let name = str_at(object, "/metadata/name").to_string();
    let age = since(str_at(object, "/metadata/creationTimestamp"), now);
    let template = object.pointer("/spec/template");
    let (containers, images) = containers_and_images(template);
    let selector = format_label_selector(object.pointer("/spec/selector"));
    let terminating_or = |phase: &str| {
        if object.pointer("/metadata/deletionTimestamp").is_some() {
            "Terminating".to_string()
        } else {
            phase.to_string()
        }
    };
    match kind {
        Kind::PriorityClass => vec![
            json!(name),
            json!(int_at(object, "/value")),
            json!(bool_at(object, "/globalDefault").unwrap_or(false)),
            json!(age),
            json!(str_at(object, "/preemptionPolicy")),
        ],
        Kind::StorageClass => {
            let default = object
                .pointer("/metadata/annotations/storageclass.kubernetes.io~1is-default-class")
                .or_else(|| {
                    object.pointer(
                        "/metadata/annotations/storageclass.beta.kubernetes.io~1is-default-class",
                    )
                })
                .and_then(Value::as_str)
                == Some("true");
            let reclaim = match str_at(object, "/reclaimPolicy") {
                "" => "Delete",
                other => other,
            };
            let binding = match str_at(object, "/volumeBindingMode") {
                "" => "Immediate",
                other => other,
            };
            vec![
                json!(if default {
                    format!("{name} (default)")
                } else {
                    name
                }),
                json!(str_at(object, "/provisioner")),
                json!(reclaim),
                json!(binding),
                json!(bool_at(object, "/allowVolumeExpansion").unwrap_or(false)),
                json!(age),
            ]
        }
        Kind::CSIDriver => {
            let modes: Vec<&str> = array_at(object, "/spec/volumeLifecycleModes")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let tokens = object
                .pointer("/spec/tokenRequests")
                .and_then(Value::as_array)
                .map_or_else(
                    || "<unset>".to_string(),
                    |t| {
                        t.iter()
                            .map(|r| str_at(r, "/audience"))
                            .collect::<Vec<_>>()
                            .join(",")
                    },
                );
            vec![
                json!(name),
                json!(bool_at(object, "/spec/attachRequired").unwrap_or(true)),
                json!(bool_at(object, "/spec/podInfoOnMount").unwrap_or(false)),
                json!(bool_at(object, "/spec/storageCapacity").unwrap_or(false)),
                json!(tokens),
                json!(bool_at(object, "/spec/requiresRepublish").unwrap_or(false)),
                json!(if modes.is_empty() {
                    "<none>".to_string()
                } else {
                    modes.join(",")
                }),
                json!(age),
            ]
        }
        Kind::CSINode => vec![
            json!(name),
            json!(array_at(object, "/spec/drivers").len()),
            json!(age),
        ],
        Kind::CSIStorageCapacity => vec![
            json!(name),
            json!(str_at(object, "/storageClassName")),
            json!(unset_or(object, "/capacity")),
        ],
        Kind::VolumeAttachment => vec![
            json!(name),
            json!(str_at(object, "/spec/attacher")),
            json!(str_at(object, "/spec/source/persistentVolumeName")),
            json!(str_at(object, "/spec/nodeName")),
            json!(bool_at(object, "/status/attached").unwrap_or(false)),
            json!(age),
        ],
        Kind::PersistentVolume => {
            let claim = match object.pointer("/spec/claimRef") {
                Some(r) if r.is_object() => {
                    format!("{}/{}", str_at(r, "/namespace"), str_at(r, "/name"))
                }
                _ => String::new(),
            };
            let capacity = match str_at(object, "/spec/capacity/storage") {
                "" => "0",
                other => other,
            };
            vec![
                json!(name),
                json!(capacity),
                json!(access_modes(array_at(object, "/spec/accessModes"))),
                json!(str_at(object, "/spec/persistentVolumeReclaimPolicy")),
                json!(terminating_or(str_at(object, "/status/phase"))),
                json!(claim),
                json!(storage_class(object)),
                json!(unset_or(object, "/spec/volumeAttributesClassName")),
                json!(str_at(object, "/status/reason")),
                json!(age),
                json!(unset_or(object, "/spec/volumeMode")),
            ]
        }
        Kind::PersistentVolumeClaim => {
            let volume = str_at(object, "/spec/volumeName");
            let (capacity, modes) = if volume.is_empty() {
                (String::new(), String::new())
            } else {
                let capacity = match str_at(object, "/status/capacity/storage") {
                    "" => "0",
                    other => other,
                };
                (
                    capacity.to_string(),
                    access_modes(array_at(object, "/status/accessModes")),
                )
            };
            vec![
                json!(name),
                json!(terminating_or(str_at(object, "/status/phase"))),
                json!(volume),
                json!(capacity),
                json!(modes),
                json!(storage_class(object)),
                json!(unset_or(object, "/spec/volumeAttributesClassName")),
                json!(age),
                json!(unset_or(object, "/spec/volumeMode")),
            ]
        }
        Kind::Service => {
            let cluster_ip = array_at(object, "/spec/clusterIPs")
                .first()
                .and_then(Value::as_str)
                .unwrap_or("<none>");
            vec![
                json!(name),
                json!(str_at(object, "/spec/type")),
                json!(cluster_ip),
                json!(service_external_ip(object)),
                json!(service_ports(object)),
                json!(age),
                json!(format_labels(object.pointer("/spec/selector"))),
            ]
        }
        Kind::ReplicationController | Kind::ReplicaSet => {
            let selector = if kind == Kind::ReplicationController {
                format_labels(object.pointer("/spec/selector"))
            } else {
                selector
            };
            vec![
                json!(name),
                json!(int_at(object, "/spec/replicas")),
                json!(int_at(object, "/status/replicas")),
                json!(int_at(object, "/status/readyReplicas")),
                json!(age),
                json!(containers),
                json!(images),
                json!(selector),
            ]
        }
        Kind::PodDisruptionBudget => vec![
            json!(name),
            json!(int_or_string(object.pointer("/spec/minAvailable"))),
            json!(int_or_string(object.pointer("/spec/maxUnavailable"))),
            json!(int_at(object, "/status/disruptionsAllowed")),
            json!(age),
        ],
        Kind::Deployment => vec![
            json!(name),
            json!(format!(
                "{}/{}",
                int_at(object, "/status/readyReplicas"),
                int_at(object, "/spec/replicas")
            )),
            json!(int_at(object, "/status/updatedReplicas")),
            json!(int_at(object, "/status/availableReplicas")),
            json!(age),
            json!(containers),
            json!(images),
            json!(selector),
        ],
        Kind::StatefulSet => vec![
            json!(name),
            json!(format!(
                "{}/{}",
                int_at(object, "/status/readyReplicas"),
                int_at(object, "/spec/replicas")
            )),
            json!(age),
            json!(containers),
            json!(images),
        ],
        Kind::DaemonSet => vec![
            json!(name),
            json!(int_at(object, "/status/desiredNumberScheduled")),
            json!(int_at(object, "/status/currentNumberScheduled")),
            json!(int_at(object, "/status/numberReady")),
            json!(int_at(object, "/status/updatedNumberScheduled")),
            json!(int_at(object, "/status/numberAvailable")),
            json!(format_labels(
                object.pointer("/spec/template/spec/nodeSelector")
            )),
            json!(age),
            json!(containers),
            json!(images),
            json!(selector),
        ],
        Kind::ControllerRevision => vec![
            json!(name),
            json!(controller_of(object)),
            json!(int_at(object, "/revision")),
            json!(age),
        ],
        Kind::Job => vec![
            json!(name),
            json!(job_status(object)),
            json!(job_completions(object)),
            json!(job_duration(object, now)),
            json!(age),
            json!(containers),
            json!(images),
            json!(selector),
        ],
        Kind::CronJob => {
            let job_template = object.pointer("/spec/jobTemplate/spec/template");
            let (containers, images) = containers_and_images(job_template);
            let last = match str_at(object, "/status/lastScheduleTime") {
                "" => "<none>".to_string(),
                time => since(time, now),
            };
            let time_zone = match object.pointer("/spec/timeZone").and_then(Value::as_str) {
                Some(zone) => zone.to_string(),
                None => "<none>".into(),
            };
            vec![
                json!(name),
                json!(str_at(object, "/spec/schedule")),
                json!(time_zone),
                json!(bool_text(bool_at(object, "/spec/suspend"))),
                json!(array_at(object, "/status/active").len()),
                json!(last),
                json!(age),
                json!(containers),
                json!(images),
                json!(format_label_selector(
                    object.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        _ => match uninterpreted_cells(kind, object, &name, &age) {
            Some(row) => row,
            None => vec![
                json!(name),
                json!(str_at(object, "/metadata/creationTimestamp")),
            ],
        },
    }
}

fn map_len(object: &Value, pointer: &str) -> usize {
    object
        .pointer(pointer)
        .and_then(Value::as_object)
        .map_or(0, serde_json::Map::len)
}

/// `a,b,c + N more...`, or `<unset>` when empty (upstream's `listWithMoreString`).
fn list_with_more(items: &[String], max: usize) -> String {
    if items.is_empty() {
        return "<unset>".into();
    }
    let shown = items[..items.len().min(max)].join(",");
    if items.len() > max {
        format!("{shown} + {} more...", items.len() - max)
    } else {
        shown
    }
}

/// A legacy Endpoints' addresses (`ip:port`, three at most), or `<none>`.
fn format_endpoints(object: &Value) -> String {
    let subsets = array_at(object, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let mut all = Vec::new();
    for subset in subsets {
        let addresses = array_at(subset, "/addresses");
        let ports = array_at(subset, "/ports");
        if ports.is_empty() {
            all.extend(addresses.iter().map(|a| str_at(a, "/ip").to_string()));
            continue;
        }
        for port in ports {
            for address in addresses {
                let ip = str_at(address, "/ip");
                let host = if ip.contains(':') {
                    format!("[{ip}]")
                } else {
                    ip.to_string()
                };
                all.push(format!("{host}:{}", int_at(port, "/port")));
            }
        }
    }
    let shown = all[..all.len().min(3)].join(",");
    if all.len() > 3 {
        format!("{shown} + {} more...", all.len() - 3)
    } else {
        shown
    }
}

/// A quota's `resource: used/hard` pairs, split into requests and limits.
fn quota_columns(object: &Value) -> (String, String) {
    let hard = object.pointer("/status/hard").and_then(Value::as_object);
    let (mut requests, mut limits) = (Vec::new(), Vec::new());
    for (resource, hard_value) in hard.into_iter().flatten() {
        let used = object
            .pointer(&format!(
                "/status/used/{}",
                resource.replace('~', "~0").replace('/', "~1")
            ))
            .and_then(Value::as_str)
            .unwrap_or("0");
        let text = format!("{resource}: {used}/{}", hard_value.as_str().unwrap_or("0"));
        if resource.split('.').next() == Some("limits") && resource.contains('.') {
            limits.push(text);
        } else {
            requests.push(text);
        }
    }
    (requests.join(", "), limits.join(", "))
}

/// An HPA's metric targets (upstream's `formatHPAMetrics`, the common shapes), two at most.
fn hpa_metrics(object: &Value) -> String {
    let specs = array_at(object, "/spec/metrics");
    if specs.is_empty() {
        return "<none>".into();
    }
    let statuses = array_at(object, "/status/currentMetrics");
    let current = |i: usize, pointer: &str| {
        statuses
            .get(i)
            .and_then(|s| s.pointer(pointer))
            .map(|v| match v {
                Value::Number(n) => n.to_string(),
                other => other.as_str().unwrap_or_default().to_string(),
            })
    };
    let list: Vec<String> = specs
        .iter()
        .enumerate()
        .map(|(i, spec)| {
            let kind = str_at(spec, "/type");
            let source = match kind {
                "Resource" => "resource",
                "ContainerResource" => "containerResource",
                "Pods" => "pods",
                "Object" => "object",
                "External" => "external",
                _ => return "<unknown type>".to_string(),
            };
            let target = spec.get(source).cloned().unwrap_or(Value::Null);
            let status_base = format!("/{source}/current");
            if let Some(utilization) = target.pointer("/target/averageUtilization") {
                let now = current(i, &format!("{status_base}/averageUtilization"))
                    .map_or("<unknown>".to_string(), |v| format!("{v}%"));
                return format!("{}: {now}/{utilization}%", str_at(&target, "/name"));
            }
            let (pointer, suffix) = match target.pointer("/target/averageValue") {
                Some(_) => ("averageValue", " (avg)"),
                None => ("value", ""),
            };
            let wanted = target
                .pointer(&format!("/target/{pointer}"))
                .and_then(Value::as_str)
                .unwrap_or_default();
            let now = current(i, &format!("{status_base}/{pointer}"))
                .unwrap_or_else(|| "<unknown>".into());
            match kind {
                "Resource" | "ContainerResource" => {
                    format!("{}: {now}/{wanted}", str_at(&target, "/name"))
                }
                "Pods" => format!("{now}/{wanted}"),
                _ => format!("{now}/{wanted}{suffix}"),
            }
        })
        .collect();
    let shown = list[..list.len().min(2)].join(", ");
    if list.len() > 2 {
        format!("{shown} + {} more...", list.len() - 2)
    } else {
        shown
    }
}

/// A CSR's condition column: Denied, Approved or Pending, then Failed and Issued.
fn csr_status(object: &Value) -> String {
    let has = |kind: &str| {
        array_at(object, "/status/conditions")
            .iter()
            .any(|c| str_at(c, "/type") == kind)
    };
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !str_at(object, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

/// The rows of the kinds allot serves without interpreting them.
pub(crate) fn uninterpreted_cells(
    kind: Kind,
    object: &Value,
    name: &str,
    age: &str,
) -> Option<Vec<Value>> {
    let row = match kind {
        Kind::ServiceAccount => vec![
            json!(name),
            json!(array_at(object, "/secrets").len()),
            json!(age),
        ],
        Kind::Secret => vec![
            json!(name),
            json!(str_at(object, "/type")),
            json!(map_len(object, "/data")),
            json!(age),
        ],
        Kind::ConfigMap => vec![
            json!(name),
            json!(map_len(object, "/data") + map_len(object, "/binaryData")),
            json!(age),
        ],
        Kind::Endpoints => vec![json!(name), json!(format_endpoints(object)), json!(age)],
        Kind::ResourceQuota => {
            let (requests, limits) = quota_columns(object);
            vec![json!(name), json!(requests), json!(limits), json!(age)]
        }
        Kind::PodTemplate => {
            let (containers, images) = containers_and_images(object.pointer("/template"));
            vec![
                json!(name),
                json!(containers),
                json!(images),
                json!(format_labels(object.pointer("/template/metadata/labels"))),
            ]
        }
        Kind::EndpointSlice => {
            let ports: Vec<String> = array_at(object, "/ports")
                .iter()
                .map(
                    |p| match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                        (Some(port), _) => port.to_string(),
                        (None, Some(Value::String(name))) => name.clone(),
                        _ => "*".to_string(),
                    },
                )
                .collect();
            let addresses: Vec<String> = array_at(object, "/endpoints")
                .iter()
                .flat_map(|e| array_at(e, "/addresses").iter())
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect();
            vec![
                json!(name),
                json!(str_at(object, "/addressType")),
                json!(list_with_more(&ports, 3)),
                json!(list_with_more(&addresses, 3)),
                json!(age),
            ]
        }
        Kind::HorizontalPodAutoscaler => vec![
            json!(name),
            json!(format!(
                "{}/{}",
                str_at(object, "/spec/scaleTargetRef/kind"),
                str_at(object, "/spec/scaleTargetRef/name")
            )),
            json!(hpa_metrics(object)),
            json!(
                object
                    .pointer("/spec/minReplicas")
                    .and_then(Value::as_i64)
                    .map_or("<unset>".to_string(), |n| n.to_string())
            ),
            json!(int_at(object, "/spec/maxReplicas")),
            json!(int_at(object, "/status/currentReplicas")),
            json!(age),
        ],
        Kind::CertificateSigningRequest => vec![
            json!(name),
            json!(age),
            json!(match str_at(object, "/spec/signerName") {
                "" => "<none>",
                signer => signer,
            }),
            json!(str_at(object, "/spec/username")),
            json!(
                object
                    .pointer("/spec/expirationSeconds")
                    .and_then(Value::as_i64)
                    .map_or("<none>".to_string(), human_age)
            ),
            json!(csr_status(object)),
        ],
        Kind::ValidatingAdmissionPolicy => vec![
            json!(name),
            json!(array_at(object, "/spec/validations").len()),
            json!(match object.pointer("/spec/paramKind") {
                Some(kind) if kind.is_object() =>
                    format!("{}/{}", str_at(kind, "/apiVersion"), str_at(kind, "/kind")),
                _ => "<unset>".to_string(),
            }),
            json!(age),
        ],
        Kind::ValidatingAdmissionPolicyBinding => {
            let param = match object.pointer("/spec/paramRef") {
                Some(r) if r.is_object() => match (str_at(r, "/name"), str_at(r, "/namespace")) {
                    ("", _) => format_label_selector(r.get("selector")),
                    (name, "") => format!("*/{name}"),
                    (name, namespace) => format!("{namespace}/{name}"),
                },
                _ => "<unset>".to_string(),
            };
            vec![
                json!(name),
                json!(str_at(object, "/spec/policyName")),
                json!(param),
                json!(age),
            ]
        }
        Kind::ServiceCIDR => {
            let cidrs: Vec<&str> = array_at(object, "/spec/cidrs")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            vec![json!(name), json!(cidrs.join(",")), json!(age)]
        }
        Kind::IPAddress => {
            let parent = match object.pointer("/spec/parentRef") {
                Some(r) if r.is_object() => {
                    let group = str_at(r, "/group");
                    let resource = str_at(r, "/resource");
                    let mut text = if group.is_empty() {
                        resource.to_lowercase()
                    } else {
                        format!("{resource}.{group}").to_lowercase()
                    };
                    if !str_at(r, "/namespace").is_empty() {
                        text = format!("{text}/{}", str_at(r, "/namespace"));
                    }
                    format!("{text}/{}", str_at(r, "/name"))
                }
                _ => "<none>".to_string(),
            };
            vec![json!(name), json!(parent)]
        }
        Kind::VolumeAttributesClass => {
            vec![
                json!(name),
                json!(str_at(object, "/driverName")),
                json!(age),
            ]
        }
        _ => return None,
    };
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> chrono::DateTime<chrono::Utc> {
        chrono::DateTime::parse_from_rfc3339("2026-01-01T00:10:00Z")
            .expect("time")
            .with_timezone(&chrono::Utc)
    }

    #[test]
    fn workloads_print_like_kubectl() {
        let deployment = json!({
            "metadata": {"name": "web", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                     "template": {"spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2},
        });
        assert_eq!(
            cells(Kind::Deployment, &deployment, now()),
            vec![
                json!("web"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("10m"),
                json!("c"),
                json!("nginx"),
                json!("app=web")
            ]
        );
        let job = json!({
            "metadata": {"name": "j"},
            "spec": {"parallelism": 2},
            "status": {"succeeded": 1, "startTime": "2026-01-01T00:00:00Z",
                       "completionTime": "2026-01-01T00:01:30Z",
                       "conditions": [{"type": "Complete", "status": "True"}]},
        });
        let row = cells(Kind::Job, &job, now());
        assert_eq!(
            row[1..4],
            [json!("Complete"), json!("1/1 of 2"), json!("90s")]
        );
    }

    #[test]
    fn storage_and_services_print_like_kubectl() {
        let pvc = json!({
            "metadata": {"name": "data"},
            "spec": {"volumeName": "pv-1", "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "10Gi"},
                       "accessModes": ["ReadWriteOncePod", "ReadWriteOnce"]},
        });
        let row = cells(Kind::PersistentVolumeClaim, &pvc, now());
        assert_eq!(
            row[1..7],
            [
                json!("Bound"),
                json!("pv-1"),
                json!("10Gi"),
                json!("RWO,RWOP"),
                json!("fast"),
                json!("<unset>")
            ]
        );
        let service = json!({
            "metadata": {"name": "s"},
            "spec": {"type": "NodePort", "clusterIPs": ["10.0.0.1"],
                     "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}]},
        });
        let row = cells(Kind::Service, &service, now());
        assert_eq!(
            row[1..5],
            [
                json!("NodePort"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("80:30080/TCP")
            ]
        );
        let selector = json!({"matchLabels": {"a": "1"},
            "matchExpressions": [{"key": "b", "operator": "In", "values": ["y", "x"]},
                                 {"key": "c", "operator": "DoesNotExist"}]});
        assert_eq!(format_label_selector(Some(&selector)), "a=1,b in (x,y),!c");
    }
}
