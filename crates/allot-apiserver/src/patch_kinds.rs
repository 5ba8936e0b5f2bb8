//! Strategic-merge-patch and server-side-apply facts (upstream's `patchStrategy`,
//! `patchMergeKey` and list markers) of the workload, storage, service and policy kinds: their
//! pod templates merge as a pod spec does, service ports merge by port and protocol, condition
//! lists by type, resource maps are free-form.

use allot_store::Kind;

use crate::patch::{FieldMeta, pod_field};

/// Where a kind keeps its pod template.
fn template_prefix(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Deployment
        | Kind::ReplicaSet
        | Kind::StatefulSet
        | Kind::DaemonSet
        | Kind::Job
        | Kind::ReplicationController => &["spec", "template"],
        Kind::CronJob => &["spec", "jobTemplate", "spec", "template"],
        Kind::PodTemplate => &["template"],
        _ => &[],
    }
}

/// The facts of a field path of `kind`, when this module knows them.
pub(crate) fn field(kind: Kind, path: &[&str]) -> Option<FieldMeta> {
    let prefix = template_prefix(kind);
    if !prefix.is_empty()
        && let Some(rest) = path.strip_prefix(prefix)
    {
        return Some(match rest {
            ["metadata", "labels" | "annotations"] => FieldMeta::free_form(),
            ["metadata", ..] => FieldMeta::PLAIN,
            rest => pod_field(rest),
        });
    }
    let meta = match (kind, path) {
        (Kind::Service, ["spec", "ports"]) => FieldMeta::merge("port", &["port", "protocol"]),
        (Kind::Service | Kind::ReplicationController, ["spec", "selector"]) => {
            FieldMeta::free_form()
        }
        (Kind::PersistentVolume, ["spec", "capacity"]) => FieldMeta::free_form(),
        (Kind::PersistentVolumeClaim, ["spec", "resources", "requests" | "limits"])
        | (
            Kind::PersistentVolumeClaim,
            [
                "status",
                "capacity" | "allocatedResources" | "allocatedResourceStatuses",
            ],
        ) => FieldMeta::free_form(),
        (Kind::StorageClass | Kind::VolumeAttributesClass, ["parameters"]) => {
            FieldMeta::free_form()
        }
        (Kind::Secret | Kind::ConfigMap, ["data" | "stringData" | "binaryData"]) => {
            FieldMeta::free_form()
        }
        (Kind::StatefulSet, ["spec", "volumeClaimTemplates", ..]) => FieldMeta::PLAIN,
        (Kind::CSINode, ["spec", "drivers"]) => FieldMeta::merge("name", &["name"]),
        _ => return None,
    };
    Some(meta)
}

/// The same facts by Go type and JSON field name, for the OpenAPI documents.
pub(crate) fn type_field(type_name: &str, field: &str) -> Option<FieldMeta> {
    let meta = match (type_name, field) {
        ("ServiceSpec", "ports") => FieldMeta::merge("port", &["port", "protocol"]),
        ("CSINodeSpec", "drivers") => FieldMeta::merge("name", &["name"]),
        (
            "DeploymentStatus"
            | "ReplicaSetStatus"
            | "StatefulSetStatus"
            | "DaemonSetStatus"
            | "JobStatus"
            | "ReplicationControllerStatus"
            | "PersistentVolumeClaimStatus"
            | "ServiceStatus"
            | "PodDisruptionBudgetStatus",
            "conditions",
        ) => FieldMeta::merge("type", &["type"]),
        _ => return None,
    };
    Some(meta)
}
