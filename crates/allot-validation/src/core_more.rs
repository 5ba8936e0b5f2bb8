//! core/v1 rules for PersistentVolume, PersistentVolumeClaim, Service and
//! ReplicationController (upstream `pkg/apis/core/validation`), and `scheduling.k8s.io/v1`
//! PriorityClass (`pkg/apis/scheduling/validation` and the Priority admission plugin's rule of
//! one default class), on create and on update.

use std::collections::BTreeSet;

use allot_api::Quantity;
use allot_api::core::v1::{
    PersistentVolume, PersistentVolumeAccessMode, PersistentVolumeClaim, PersistentVolumeClaimSpec,
    PersistentVolumeMode, PersistentVolumeReclaimPolicy, PersistentVolumeSpec,
    ReplicationController, ReplicationControllerSpec, Service, ServiceAffinity, ServiceType,
};
use allot_api::intstr::IntOrString;
use allot_api::scheduling::v1::PriorityClass;

use crate::field::{BadValue, FieldError, child, index, key};
use crate::kinds::{
    Selection, immutable, immutable_struct, nonnegative, restart_policy, template_mismatch,
    validate_labels, validate_object_meta_update, validate_pod_template_spec,
};
use crate::meta::{name_is_dns_label, name_is_dns_subdomain, validate_object_meta};
use crate::names::{is_dns1123_label, is_dns1123_subdomain};

/// The largest priority a user-defined PriorityClass may have.
pub const HIGHEST_USER_DEFINABLE_PRIORITY: i32 = 1_000_000_000;
/// The prefix reserved for the system's PriorityClasses.
pub const SYSTEM_PRIORITY_CLASS_PREFIX: &str = "system-";
/// The system's PriorityClasses: name and value.
pub const SYSTEM_PRIORITY_CLASSES: [(&str, i32); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

/// Validates a PriorityClass: names with the `system-` prefix are the system's classes with
/// their values; other values at most one billion; a known preemption policy.
pub fn validate_priority_class(class: &PriorityClass) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&class.metadata, false, name_is_dns_subdomain, "metadata");
    let name = class.metadata.name.as_str();
    if name.starts_with(SYSTEM_PRIORITY_CLASS_PREFIX) {
        let reason = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            None => Some(format!("{name} is not a known system priority class")),
            Some((_, value)) if *value != class.value => {
                Some(format!("value of {name} PriorityClass must be {value}"))
            }
            Some(_) if class.global_default => Some(format!(
                "globalDefault of {name} PriorityClass must be false"
            )),
            Some(_) => None,
        };
        if let Some(reason) = reason {
            errs.push(FieldError::forbidden(
                "metadata.name",
                format!(
                    "priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix are reserved for system use only. error: {reason}"
                ),
            ));
        }
    } else if class.value > HIGHEST_USER_DEFINABLE_PRIORITY {
        errs.push(FieldError::forbidden(
            "value",
            format!(
                "maximum allowed value of a user defined priority is {HIGHEST_USER_DEFINABLE_PRIORITY}"
            ),
        ));
    }
    if let Some(policy) = &class.preemption_policy
        && !policy.is_known()
    {
        errs.push(FieldError::not_supported(
            "preemptionPolicy",
            policy.as_str(),
            &["Never", "PreemptLowerPriority"],
        ));
    }
    errs
}

/// What a PriorityClass update may not change: the value and the preemption policy.
pub fn validate_priority_class_update(new: &PriorityClass, old: &PriorityClass) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    if new.value != old.value {
        errs.push(FieldError::forbidden(
            "value",
            "may not be changed in an update.",
        ));
    }
    errs.extend(immutable(
        &new.preemption_policy,
        &old.preemption_policy,
        "preemptionPolicy",
        |p| p.as_ref().map_or(BadValue::Null, |p| p.as_str().into()),
    ));
    errs
}

/// The Priority admission plugin's rule: at most one PriorityClass is the global default. The
/// reason a class `class` marked `globalDefault` may not be written, given the classes stored
/// (the class's own stored copy is ignored).
pub fn admit_priority_class<'a>(
    class: &PriorityClass,
    stored: impl IntoIterator<Item = &'a PriorityClass>,
) -> Option<String> {
    if !class.global_default {
        return None;
    }
    stored
        .into_iter()
        .find(|other| other.global_default && other.metadata.name != class.metadata.name)
        .map(|other| {
            format!(
                "PriorityClass {} is already marked as default. Only one default can exist",
                other.metadata.name
            )
        })
}

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];

/// Access modes: at least one (with `required`'s message), each known, `ReadWriteOncePod`
/// alone.
fn validate_access_modes(
    modes: &[PersistentVolumeAccessMode],
    required: &str,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if modes.is_empty() {
        errs.push(FieldError::required(path, required));
    }
    for mode in modes {
        if !mode.is_known() {
            errs.push(FieldError::not_supported(path, mode.as_str(), ACCESS_MODES));
        }
    }
    if modes.len() > 1 && modes.contains(&PersistentVolumeAccessMode::ReadWriteOncePod) {
        errs.push(FieldError::forbidden(
            path,
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    errs
}

fn validate_volume_mode(mode: Option<&PersistentVolumeMode>, path: &str) -> Vec<FieldError> {
    match mode {
        Some(PersistentVolumeMode::Other(other)) => vec![FieldError::not_supported(
            path,
            other.as_str(),
            &["Block", "Filesystem"],
        )],
        _ => Vec::new(),
    }
}

fn validate_class_name(name: &str, path: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return Vec::new();
    }
    is_dns1123_subdomain(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

/// The volume sources a PersistentVolume sets, by JSON name.
fn volume_sources(spec: &PersistentVolumeSpec) -> Vec<&'static str> {
    // In upstream's order of checks: the second source found is the one refused.
    let sources = [
        ("hostPath", spec.host_path.is_some()),
        ("gcePersistentDisk", spec.gce_persistent_disk.is_some()),
        (
            "awsElasticBlockStore",
            spec.aws_elastic_block_store.is_some(),
        ),
        ("glusterfs", spec.glusterfs.is_some()),
        ("flocker", spec.flocker.is_some()),
        ("nfs", spec.nfs.is_some()),
        ("rbd", spec.rbd.is_some()),
        ("quobyte", spec.quobyte.is_some()),
        ("cephfs", spec.cephfs.is_some()),
        ("iscsi", spec.iscsi.is_some()),
        ("cinder", spec.cinder.is_some()),
        ("fc", spec.fc.is_some()),
        ("flexVolume", spec.flex_volume.is_some()),
        ("azureFile", spec.azure_file.is_some()),
        ("vsphereVolume", spec.vsphere_volume.is_some()),
        (
            "photonPersistentDisk",
            spec.photon_persistent_disk.is_some(),
        ),
        ("portworxVolume", spec.portworx_volume.is_some()),
        ("azureDisk", spec.azure_disk.is_some()),
        ("scaleIO", spec.scale_io.is_some()),
        ("local", spec.local.is_some()),
        ("storageos", spec.storageos.is_some()),
        ("csi", spec.csi.is_some()),
    ];
    sources
        .iter()
        .filter(|(_, set)| *set)
        .map(|(name, _)| *name)
        .collect()
}

/// Validates a PersistentVolume: access modes, a `storage` capacity, exactly one source (with
/// its required fields), node affinity for local volumes, known policies and modes.
pub fn validate_persistent_volume(volume: &PersistentVolume) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&volume.metadata, false, name_is_dns_subdomain, "metadata");
    let spec = &volume.spec;
    errs.extend(validate_access_modes(
        &spec.access_modes,
        "",
        "spec.accessModes",
    ));
    if spec.capacity.is_empty() {
        errs.push(FieldError::required("spec.capacity", ""));
    } else if !spec.capacity.contains_key("storage") || spec.capacity.len() > 1 {
        let keys: Vec<&str> = spec.capacity.keys().map(String::as_str).collect();
        errs.push(FieldError::not_supported(
            "spec.capacity",
            BadValue::Raw(format!("{keys:?}")),
            &["storage"],
        ));
    }
    for (name, quantity) in &spec.capacity {
        errs.extend(positive_quantity(quantity, &key("spec.capacity", name)));
    }
    if let Some(policy) = &spec.persistent_volume_reclaim_policy
        && !policy.is_known()
    {
        errs.push(FieldError::not_supported(
            "spec.persistentVolumeReclaimPolicy",
            policy.as_str(),
            &["Delete", "Recycle", "Retain"],
        ));
    }
    errs.extend(validate_class_name(
        &spec.storage_class_name,
        "spec.storageClassName",
    ));
    let sources = volume_sources(spec);
    match sources.as_slice() {
        [] => errs.push(FieldError::required("spec", "must specify a volume type")),
        [_] => {}
        [_, more @ ..] => {
            for name in more {
                errs.push(FieldError::forbidden(
                    &child("spec", name),
                    "may not specify more than 1 volume type",
                ));
            }
        }
    }
    errs.extend(validate_volume_source_fields(spec));
    if spec.local.is_some() && spec.node_affinity.is_none() {
        errs.push(FieldError::required(
            "spec.nodeAffinity",
            "Local volume requires node affinity",
        ));
    }
    if let Some(required) = spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
    {
        errs.extend(crate::core::validate_node_selector(
            required,
            "spec.nodeAffinity.required",
        ));
    }
    errs.extend(validate_volume_mode(
        spec.volume_mode.as_ref(),
        "spec.volumeMode",
    ));
    if spec.persistent_volume_reclaim_policy == Some(PersistentVolumeReclaimPolicy::Recycle)
        && spec.host_path.as_ref().is_some_and(|h| h.path == "/")
    {
        errs.push(FieldError::forbidden(
            "spec.persistentVolumeReclaimPolicy",
            "may not be 'recycle' for a hostPath mount of '/'",
        ));
    }
    errs
}

/// The required fields of the sources allot's scheduler reads (host paths, local paths, NFS
/// exports, CSI volumes).
fn validate_volume_source_fields(spec: &PersistentVolumeSpec) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(host) = &spec.host_path
        && host.path.is_empty()
    {
        errs.push(FieldError::required("spec.hostPath.path", ""));
    }
    if let Some(local) = &spec.local
        && local.path.is_empty()
    {
        errs.push(FieldError::required("spec.local.path", ""));
    }
    if let Some(nfs) = &spec.nfs {
        if nfs.server.is_empty() {
            errs.push(FieldError::required("spec.nfs.server", ""));
        }
        if nfs.path.is_empty() {
            errs.push(FieldError::required("spec.nfs.path", ""));
        } else if !nfs.path.starts_with('/') {
            errs.push(FieldError::invalid(
                "spec.nfs.path",
                &nfs.path,
                "must be an absolute path",
            ));
        }
    }
    if let Some(csi) = &spec.csi {
        errs.extend(crate::names::validate_driver_name(
            &csi.driver,
            "spec.csi.driver",
        ));
        if csi.volume_handle.is_empty() {
            errs.push(FieldError::required("spec.csi.volumeHandle", ""));
        }
    }
    errs
}

/// A quantity that must be above zero.
fn positive_quantity(quantity: &Quantity, path: &str) -> Vec<FieldError> {
    if quantity.sign() <= 0 {
        vec![FieldError::invalid(
            path,
            quantity.to_string(),
            "must be greater than zero",
        )]
    } else {
        Vec::new()
    }
}

/// What a PersistentVolume update may not change: the source (but for CSI's node expansion
/// secret), the volume mode, and node affinity once set.
pub fn validate_persistent_volume_update(
    new: &PersistentVolume,
    old: &PersistentVolume,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    // The volume source: the spec without the fields that are not part of it.
    let source = |spec: &PersistentVolumeSpec| {
        let mut spec = spec.clone();
        spec.capacity.clear();
        spec.access_modes.clear();
        spec.claim_ref = None;
        spec.persistent_volume_reclaim_policy = None;
        spec.storage_class_name.clear();
        spec.mount_options.clear();
        spec.volume_mode = None;
        spec.node_affinity = None;
        spec.volume_attributes_class_name = None;
        if let Some(csi) = &mut spec.csi {
            csi.node_expand_secret_ref = None;
        }
        spec
    };
    if source(&new.spec) != source(&old.spec) {
        errs.push(FieldError::forbidden(
            "spec.persistentvolumesource",
            "spec.persistentvolumesource is immutable after creation",
        ));
    }
    errs.extend(immutable(
        &new.spec.volume_mode,
        &old.spec.volume_mode,
        "spec.volumeMode",
        |m| m.as_ref().map_or(BadValue::Null, |m| m.as_str().into()),
    ));
    if old.spec.node_affinity.is_some() {
        errs.extend(immutable_struct(
            &new.spec.node_affinity,
            &old.spec.node_affinity,
            "spec.nodeAffinity",
        ));
    }
    errs
}

/// Validates a PersistentVolumeClaim: its spec (access modes, a positive `storage` request,
/// class name, volume mode, selector).
pub fn validate_persistent_volume_claim(claim: &PersistentVolumeClaim) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&claim.metadata, true, name_is_dns_subdomain, "metadata");
    errs.extend(validate_persistent_volume_claim_spec(&claim.spec, "spec"));
    errs
}

/// `ValidatePersistentVolumeClaimSpec`.
pub(crate) fn validate_persistent_volume_claim_spec(
    spec: &PersistentVolumeClaimSpec,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = validate_access_modes(
        &spec.access_modes,
        "at least 1 access mode is required",
        &child(path, "accessModes"),
    );
    if let Some(selector) = &spec.selector {
        errs.extend(crate::rbac::validate_label_selector(
            selector,
            &child(path, "selector"),
        ));
    }
    let storage_path = key(&child(path, "resources"), "storage");
    match spec.resources.requests.get("storage") {
        None => errs.push(FieldError::required(&storage_path, "")),
        Some(quantity) => errs.extend(positive_quantity(quantity, &storage_path)),
    }
    if let Some(class) = &spec.storage_class_name {
        errs.extend(validate_class_name(class, &child(path, "storageClassName")));
    }
    errs.extend(validate_volume_mode(
        spec.volume_mode.as_ref(),
        &child(path, "volumeMode"),
    ));
    if let Some(source) = &spec.data_source {
        if source.name.is_empty() {
            errs.push(FieldError::required(&child(path, "dataSource.name"), ""));
        }
        if source.kind.is_empty() {
            errs.push(FieldError::required(&child(path, "dataSource.kind"), ""));
        }
    }
    errs
}

/// What a PersistentVolumeClaim update may not change: the spec, but for the volume name (set
/// once), the class name (set once), the volume attributes class and the storage request,
/// which may not shrink below the capacity.
pub fn validate_persistent_volume_claim_update(
    new: &PersistentVolumeClaim,
    old: &PersistentVolumeClaim,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    let mut new_spec = new.spec.clone();
    let mut old_spec = old.spec.clone();
    if old_spec.volume_name.is_empty() {
        old_spec.volume_name = new_spec.volume_name.clone();
    }
    if old_spec.storage_class_name.is_none() {
        old_spec.storage_class_name = new_spec.storage_class_name.clone();
    }
    old_spec.volume_attributes_class_name = new_spec.volume_attributes_class_name.clone();
    let old_size = old.spec.resources.requests.get("storage");
    let new_size = new.spec.resources.requests.get("storage");
    if let Some(size) = old_size {
        new_spec
            .resources
            .requests
            .insert("storage".into(), size.clone());
    }
    if new_spec != old_spec {
        errs.push(FieldError::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    if let (Some(new_size), Some(old_size)) = (new_size, old_size)
        && new_size < old_size
    {
        let status_size = old.status.capacity.get("storage");
        if status_size.is_some_and(|s| new_size <= s) || status_size.is_none() {
            errs.push(FieldError::forbidden(
                "spec.resources.requests.storage",
                "field can not be less than status.capacity",
            ));
        }
    }
    errs
}

const SERVICE_TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];

/// Validates a Service: ports (named when several, in range, known protocols, unique), type,
/// session affinity, the external name of an `ExternalName` service.
pub fn validate_service(service: &Service) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&service.metadata, true, name_is_dns_label, "metadata");
    let spec = &service.spec;
    let headless = spec.cluster_ip == "None";
    let kind = spec.type_.clone().unwrap_or(ServiceType::ClusterIP);
    if spec.ports.is_empty() && !headless && kind != ServiceType::ExternalName {
        errs.push(FieldError::required("spec.ports", ""));
    }
    let mut names = BTreeSet::new();
    let mut ports = BTreeSet::new();
    for (i, port) in spec.ports.iter().enumerate() {
        let item = index("spec.ports", i);
        let name_path = child(&item, "name");
        if spec.ports.len() > 1 && port.name.is_empty() {
            errs.push(FieldError::required(&name_path, ""));
        } else if !port.name.is_empty() {
            for msg in is_dns1123_label(&port.name) {
                errs.push(FieldError::invalid(&name_path, &port.name, msg));
            }
            if !names.insert(port.name.as_str()) {
                errs.push(FieldError::duplicate(&name_path, &port.name));
            }
        }
        let port_path = child(&item, "port");
        if !(1..=65535).contains(&port.port) {
            errs.push(FieldError::invalid(
                &port_path,
                i64::from(port.port),
                "must be between 1 and 65535, inclusive",
            ));
        }
        match &port.protocol {
            None => errs.push(FieldError::required(&child(&item, "protocol"), "")),
            Some(protocol) if !protocol.is_known() => errs.push(FieldError::not_supported(
                &child(&item, "protocol"),
                protocol.as_str(),
                &["SCTP", "TCP", "UDP"],
            )),
            Some(protocol) => {
                if !ports.insert((port.port, protocol.as_str().to_string())) {
                    errs.push(FieldError::duplicate(
                        &item,
                        BadValue::Raw(format!(
                            "core.ServicePort{{Name:{:?}, Protocol:{:?}, Port:{}}}",
                            port.name,
                            protocol.as_str(),
                            port.port
                        )),
                    ));
                }
            }
        }
        if let Some(target) = &port.target_port {
            errs.extend(validate_target_port(target, &child(&item, "targetPort")));
        }
        if port.node_port != 0 && matches!(kind, ServiceType::ClusterIP | ServiceType::ExternalName)
        {
            errs.push(FieldError::forbidden(
                &child(&item, "nodePort"),
                "may not be used when `type` is 'ClusterIP'",
            ));
        }
    }
    if !kind.is_known() {
        errs.push(FieldError::not_supported(
            "spec.type",
            kind.as_str(),
            SERVICE_TYPES,
        ));
    }
    if kind == ServiceType::ExternalName {
        if spec.external_name.is_empty() {
            errs.push(FieldError::required("spec.externalName", ""));
        } else {
            for msg in is_dns1123_subdomain(spec.external_name.trim_end_matches('.')) {
                errs.push(FieldError::invalid(
                    "spec.externalName",
                    &spec.external_name,
                    msg,
                ));
            }
        }
    }
    if let Some(affinity) = &spec.session_affinity
        && !affinity.is_known()
    {
        errs.push(FieldError::not_supported(
            "spec.sessionAffinity",
            affinity.as_str(),
            &["ClientIP", "None"],
        ));
    }
    if spec.session_affinity == Some(ServiceAffinity::ClientIP)
        && let Some(timeout) = spec
            .session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds)
        && !(1..=86400).contains(&timeout)
    {
        errs.push(FieldError::invalid(
            "spec.sessionAffinityConfig.clientIP.timeoutSeconds",
            i64::from(timeout),
            "must be greater than 0 and less than 86400",
        ));
    }
    errs.extend(validate_labels(&spec.selector, "spec.selector"));
    errs
}

fn validate_target_port(target: &IntOrString, path: &str) -> Vec<FieldError> {
    match target {
        IntOrString::Int(n) if !(1..=65535).contains(n) => vec![FieldError::invalid(
            path,
            i64::from(*n),
            "must be between 1 and 65535, inclusive",
        )],
        IntOrString::String(name) => crate::names::is_dns1123_label(name)
            .into_iter()
            .take(1)
            .filter(|_| !is_iana_svc_name(name))
            .map(|_| {
                FieldError::invalid(
                    path,
                    name,
                    "must contain at least one letter (a-z), must contain only alphanumerics and '-', and must be no more than 15 characters",
                )
            })
            .collect(),
        IntOrString::Int(_) => Vec::new(),
    }
}

/// `IsValidPortName`: at most 15 characters, lower-case letters, digits and `-`, a letter, no
/// leading, trailing or double `-`.
fn is_iana_svc_name(name: &str) -> bool {
    name.len() <= 15
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && name.bytes().any(|b| b.is_ascii_lowercase())
        && !name.starts_with('-')
        && !name.ends_with('-')
        && !name.contains("--")
}

/// What a Service update may not change: its cluster IP once set (unless it was an
/// `ExternalName` service).
pub fn validate_service_update(new: &Service, old: &Service) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    let changes_from_external = old.spec.type_ == Some(ServiceType::ExternalName);
    if !changes_from_external && !old.spec.cluster_ip.is_empty() {
        errs.extend(immutable(
            &new.spec.cluster_ip,
            &old.spec.cluster_ip,
            "spec.clusterIPs[0]",
            |ip| ip.into(),
        ));
    }
    errs
}

/// Validates a ReplicationController: replicas, a selector matching the template, a template
/// of pods that restart `Always`.
pub fn validate_replication_controller(controller: &ReplicationController) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &controller.metadata,
        true,
        name_is_dns_subdomain,
        "metadata",
    );
    errs.extend(validate_replication_controller_spec(
        &controller.spec,
        "spec",
    ));
    errs
}

fn validate_replication_controller_spec(
    spec: &ReplicationControllerSpec,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = nonnegative(
        i64::from(spec.replicas.unwrap_or(1)),
        &child(path, "replicas"),
    );
    errs.extend(nonnegative(
        i64::from(spec.min_ready_seconds),
        &child(path, "minReadySeconds"),
    ));
    let selector_path = child(path, "selector");
    if spec.selector.is_empty() {
        errs.push(FieldError::required(&selector_path, ""));
    } else {
        errs.extend(validate_labels(&spec.selector, &selector_path));
    }
    let template_path = child(path, "template");
    let Some(template) = &spec.template else {
        errs.push(FieldError::required(&template_path, ""));
        return errs;
    };
    let selector = allot_api::meta::v1::LabelSelector {
        match_labels: spec.selector.clone(),
        ..Default::default()
    };
    if !spec.selector.is_empty()
        && !Selection::of(Some(&selector)).matches(&template.metadata.labels)
    {
        errs.push(template_mismatch(
            &child(&template_path, "metadata.labels"),
            &template.metadata.labels,
        ));
    }
    errs.extend(validate_pod_template_spec(template, &template_path));
    let policy = restart_policy(template);
    if policy != "Always" {
        errs.push(FieldError::not_supported(
            &child(&template_path, "spec.restartPolicy"),
            policy,
            &["Always"],
        ));
    }
    if template.spec.active_deadline_seconds.is_some() {
        errs.push(FieldError::forbidden(
            &child(&template_path, "spec.activeDeadlineSeconds"),
            "activeDeadlineSeconds in ReplicationController is not Supported",
        ));
    }
    errs
}

/// What a ReplicationController update may not change: only its metadata's identity (its
/// selector may change, as upstream allows for the core group).
pub fn validate_replication_controller_update(
    new: &ReplicationController,
    old: &ReplicationController,
) -> Vec<FieldError> {
    validate_object_meta_update(&new.metadata, &old.metadata)
}
