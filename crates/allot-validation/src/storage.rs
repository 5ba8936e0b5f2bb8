//! `storage.k8s.io/v1` rules (upstream `pkg/apis/storage/validation`): StorageClass, CSIDriver,
//! CSINode, CSIStorageCapacity, VolumeAttachment and VolumeAttributesClass, on create and on
//! update.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::Quantity;
use allot_api::core::v1::{PersistentVolumeReclaimPolicy, TopologySelectorTerm};
use allot_api::storage::v1::{
    CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment, VolumeAttributesClass,
    VolumeBindingMode,
};

use crate::field::{BadValue, FieldError, child, index};
use crate::kinds::{immutable, immutable_struct, validate_object_meta_update};
use crate::meta::{name_is_dns_subdomain, validate_object_meta};
use crate::names::{is_dns1123_subdomain, validate_driver_name, validate_label_name};

const MAX_PARAMETERS: usize = 512;
const MAX_PARAMETERS_SIZE: usize = 256 * 1024;
const CSI_NODE_ID_MAX_LENGTH: usize = 192;

/// A StorageClass's `provisioner`: required, a qualified name after lower-casing.
fn validate_provisioner(provisioner: &str, path: &str) -> Vec<FieldError> {
    if provisioner.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    crate::names::is_qualified_name(&provisioner.to_lowercase())
        .into_iter()
        .map(|msg| FieldError::invalid(path, provisioner, msg))
        .collect()
}

/// Provisioner or driver parameters: at most 512, no empty key, 256 kB in all.
fn validate_parameters(
    parameters: &BTreeMap<String, String>,
    allow_empty: bool,
    path: &str,
) -> Vec<FieldError> {
    if parameters.len() > MAX_PARAMETERS {
        return vec![FieldError::too_long(path, MAX_PARAMETERS)];
    }
    let mut errs = Vec::new();
    let mut total = 0;
    for (key, value) in parameters {
        if key.is_empty() {
            errs.push(FieldError::invalid(path, key, "field can not be empty."));
        }
        total += key.len() + value.len();
    }
    if total > MAX_PARAMETERS_SIZE {
        errs.push(FieldError::too_long(path, MAX_PARAMETERS_SIZE));
    }
    if !allow_empty && parameters.is_empty() {
        errs.push(FieldError::required(
            path,
            "must contain at least one key/value pair",
        ));
    }
    errs
}

/// `ValidateTopologySelectorTerm`s of a StorageClass: values required and unique, keys label
/// names and unique per term, terms unique.
pub(crate) fn validate_topology_terms(
    terms: &[TopologySelectorTerm],
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let mut seen: Vec<BTreeMap<&str, BTreeSet<&str>>> = Vec::new();
    for (i, term) in terms.iter().enumerate() {
        let term_path = index(path, i);
        let expressions_path = child(&term_path, "matchLabelExpressions");
        let mut keys: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for (j, requirement) in term.match_label_expressions.iter().enumerate() {
            let item = index(&expressions_path, j);
            let values_path = child(&item, "values");
            if requirement.values.is_empty() {
                errs.push(FieldError::required(&values_path, ""));
            }
            let mut values = BTreeSet::new();
            for (k, value) in requirement.values.iter().enumerate() {
                if !values.insert(value.as_str()) {
                    errs.push(FieldError::duplicate(&index(&values_path, k), value));
                }
            }
            errs.extend(validate_label_name(&requirement.key, &child(&item, "key")));
            if keys.contains_key(requirement.key.as_str()) {
                errs.push(FieldError::duplicate(
                    &child(&item, "key"),
                    &requirement.key,
                ));
            }
            keys.insert(requirement.key.as_str(), values);
        }
        if seen.contains(&keys) {
            errs.push(FieldError::duplicate(&expressions_path, ""));
        }
        seen.push(keys);
    }
    errs
}

/// Validates a StorageClass on create.
pub fn validate_storage_class(class: &StorageClass) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&class.metadata, false, name_is_dns_subdomain, "metadata");
    errs.extend(validate_provisioner(&class.provisioner, "provisioner"));
    errs.extend(validate_parameters(&class.parameters, true, "parameters"));
    if let Some(policy) = &class.reclaim_policy
        && !matches!(
            policy,
            PersistentVolumeReclaimPolicy::Delete | PersistentVolumeReclaimPolicy::Retain
        )
        && !policy.as_str().is_empty()
    {
        errs.push(FieldError::not_supported(
            "reclaimPolicy",
            policy.as_str(),
            &["Delete", "Retain"],
        ));
    }
    match &class.volume_binding_mode {
        None => errs.push(FieldError::required("volumeBindingMode", "")),
        Some(VolumeBindingMode::Other(mode)) => errs.push(FieldError::not_supported(
            "volumeBindingMode",
            mode.as_str(),
            &["Immediate", "WaitForFirstConsumer"],
        )),
        Some(_) => {}
    }
    errs.extend(validate_topology_terms(
        &class.allowed_topologies,
        "allowedTopologies",
    ));
    errs
}

/// What a StorageClass update may not change: parameters, provisioner, reclaim policy and
/// binding mode.
pub fn validate_storage_class_update(new: &StorageClass, old: &StorageClass) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    if new.parameters != old.parameters {
        errs.push(FieldError::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    if new.provisioner != old.provisioner {
        errs.push(FieldError::forbidden(
            "provisioner",
            "updates to provisioner are forbidden.",
        ));
    }
    if new.reclaim_policy != old.reclaim_policy {
        errs.push(FieldError::forbidden(
            "reclaimPolicy",
            "updates to reclaimPolicy are forbidden.",
        ));
    }
    errs.extend(immutable(
        &new.volume_binding_mode,
        &old.volume_binding_mode,
        "volumeBindingMode",
        |m| m.as_ref().map_or(BadValue::Null, |m| m.as_str().into()),
    ));
    errs
}

/// Validates a CSIDriver: its name as a driver name, the spec's defaulted fields set and known.
pub fn validate_csi_driver(driver: &CSIDriver) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &driver.metadata,
        false,
        crate::rbac::name_is_path_segment,
        "metadata",
    );
    errs.extend(validate_driver_name(&driver.metadata.name, "name"));
    let spec = &driver.spec;
    for (field, set) in [
        // Upstream's path spells it "attachedRequired".
        ("spec.attachedRequired", spec.attach_required.is_some()),
        ("spec.podInfoOnMount", spec.pod_info_on_mount.is_some()),
        ("spec.requiresRepublish", spec.requires_republish.is_some()),
        ("spec.storageCapacity", spec.storage_capacity.is_some()),
        ("spec.seLinuxMount", spec.se_linux_mount.is_some()),
    ] {
        if !set {
            errs.push(FieldError::required(field, ""));
        }
    }
    if let Some(policy) = &spec.fs_group_policy
        && !policy.is_known()
    {
        errs.push(FieldError::not_supported(
            "spec.fsGroupPolicy",
            policy.as_str(),
            &["File", "None", "ReadWriteOnceWithFSType"],
        ));
    }
    for (i, mode) in spec.volume_lifecycle_modes.iter().enumerate() {
        if !mode.is_known() {
            errs.push(FieldError::not_supported(
                &index("spec.volumeLifecycleModes", i),
                mode.as_str(),
                &["Ephemeral", "Persistent"],
            ));
        }
    }
    let mut audiences = BTreeSet::new();
    for (i, request) in spec.token_requests.iter().enumerate() {
        let item = index("spec.tokenRequests", i);
        if !audiences.insert(request.audience.as_str()) {
            errs.push(FieldError::duplicate(
                &child(&item, "audience"),
                &request.audience,
            ));
        }
        if let Some(seconds) = request.expiration_seconds {
            if seconds < 600 {
                errs.push(FieldError::invalid(
                    &child(&item, "expirationSeconds"),
                    seconds,
                    "may not specify a duration less than 10 minutes",
                ));
            }
            if seconds > 1 << 32 {
                errs.push(FieldError::invalid(
                    &child(&item, "expirationSeconds"),
                    seconds,
                    "may not specify a duration larger than 2^32 seconds",
                ));
            }
        }
    }
    if let Some(period) = spec.node_allocatable_update_period_seconds
        && period < 10
    {
        errs.push(FieldError::invalid(
            "spec.nodeAllocatableUpdatePeriodSeconds",
            period,
            "must be greater than or equal to 10 seconds",
        ));
    }
    errs
}

/// What a CSIDriver update may not change: `attachRequired`, `podInfoOnMount` and
/// `volumeLifecycleModes`.
pub fn validate_csi_driver_update(new: &CSIDriver, old: &CSIDriver) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable(
        &new.spec.attach_required,
        &old.spec.attach_required,
        "spec.attachRequired",
        |v| v.map_or(BadValue::Null, BadValue::Bool),
    ));
    errs.extend(immutable(
        &new.spec.pod_info_on_mount,
        &old.spec.pod_info_on_mount,
        "spec.podInfoOnMount",
        |v| v.map_or(BadValue::Null, BadValue::Bool),
    ));
    errs.extend(immutable_struct(
        &new.spec.volume_lifecycle_modes,
        &old.spec.volume_lifecycle_modes,
        "spec.volumeLifecycleModes",
    ));
    errs
}

/// Validates a CSINode: each driver's name, node ID and topology keys, no driver twice.
pub fn validate_csi_node(node: &CSINode) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&node.metadata, false, name_is_dns_subdomain, "metadata");
    let mut names = BTreeSet::new();
    for (i, driver) in node.spec.drivers.iter().enumerate() {
        let item = index("spec.drivers", i);
        let name_path = child(&item, "name");
        errs.extend(validate_driver_name(&driver.name, &name_path));
        if !names.insert(driver.name.as_str()) {
            errs.push(FieldError::duplicate(&name_path, &driver.name));
        }
        let id_path = child(&item, "nodeID");
        if driver.node_id.is_empty() {
            errs.push(FieldError::required(&id_path, ""));
        } else if driver.node_id.len() > CSI_NODE_ID_MAX_LENGTH {
            errs.push(FieldError::invalid(
                &id_path,
                &driver.node_id,
                format!("must be {CSI_NODE_ID_MAX_LENGTH} characters or less"),
            ));
        }
        let mut keys = BTreeSet::new();
        for (j, key) in driver.topology_keys.iter().enumerate() {
            let key_path = index(&child(&item, "topologyKeys"), j);
            if key.is_empty() {
                errs.push(FieldError::required(&key_path, ""));
            }
            if !keys.insert(key.as_str()) {
                errs.push(FieldError::duplicate(&key_path, key));
            }
            for msg in crate::names::is_qualified_name(key) {
                errs.push(FieldError::invalid(&key_path, key, msg));
            }
        }
        if let Some(count) = driver.allocatable.as_ref().and_then(|a| a.count)
            && count < 0
        {
            errs.push(FieldError::invalid(
                &child(&item, "allocatable.count"),
                i64::from(count),
                crate::kinds::NEGATIVE,
            ));
        }
    }
    errs
}

/// What a CSINode update may not change: a driver's node ID and topology keys.
pub fn validate_csi_node_update(new: &CSINode, old: &CSINode) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    for old_driver in &old.spec.drivers {
        for (i, driver) in new.spec.drivers.iter().enumerate() {
            if driver.name != old_driver.name {
                continue;
            }
            let item = index("spec.drivers", i);
            if driver.node_id != old_driver.node_id {
                errs.push(FieldError::invalid(
                    &child(&item, "nodeID"),
                    &driver.node_id,
                    "field is immutable",
                ));
            }
            if driver.topology_keys != old_driver.topology_keys {
                errs.push(FieldError::invalid(
                    &child(&item, "topologyKeys"),
                    BadValue::Raw(format!("{:?}", driver.topology_keys)),
                    "field is immutable",
                ));
            }
        }
    }
    errs
}

fn nonnegative_quantity(quantity: Option<&Quantity>, path: &str) -> Vec<FieldError> {
    match quantity {
        Some(q) if q.sign() < 0 => vec![FieldError::invalid(
            path,
            q.to_string(),
            crate::kinds::NEGATIVE,
        )],
        _ => Vec::new(),
    }
}

/// Validates a CSIStorageCapacity: a valid topology selector, a storage class name, capacities
/// not negative.
pub fn validate_csi_storage_capacity(capacity: &CSIStorageCapacity) -> Vec<FieldError> {
    let mut errs =
        validate_object_meta(&capacity.metadata, true, name_is_dns_subdomain, "metadata");
    if let Some(selector) = &capacity.node_topology {
        errs.extend(crate::rbac::validate_label_selector(
            selector,
            "nodeTopology",
        ));
    }
    for msg in is_dns1123_subdomain(&capacity.storage_class_name) {
        errs.push(FieldError::invalid(
            "storageClassName",
            &capacity.storage_class_name,
            msg,
        ));
    }
    errs.extend(nonnegative_quantity(capacity.capacity.as_ref(), "capacity"));
    errs.extend(nonnegative_quantity(
        capacity.maximum_volume_size.as_ref(),
        "maximumVolumeSize",
    ));
    errs
}

/// What a CSIStorageCapacity update may not change: all but the capacities.
pub fn validate_csi_storage_capacity_update(
    new: &CSIStorageCapacity,
    old: &CSIStorageCapacity,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable(
        &new.node_topology,
        &old.node_topology,
        "nodeTopology",
        |s| crate::kinds::go_label_selector(s.as_ref()),
    ));
    errs.extend(immutable(
        &new.storage_class_name,
        &old.storage_class_name,
        "storageClassName",
        |s| s.into(),
    ));
    errs
}

/// Validates a VolumeAttachment: an attacher, exactly one source (a PersistentVolume name, in
/// v1), a node.
pub fn validate_volume_attachment(attachment: &VolumeAttachment) -> Vec<FieldError> {
    let mut errs = validate_object_meta(
        &attachment.metadata,
        false,
        name_is_dns_subdomain,
        "metadata",
    );
    let spec = &attachment.spec;
    errs.extend(validate_driver_name(&spec.attacher, "spec.attacher"));
    let source = &spec.source;
    match (&source.persistent_volume_name, &source.inline_volume_spec) {
        (None, None) | (Some(_), Some(_)) => errs.push(FieldError::required(
            "spec.source",
            "must specify exactly one of inlineVolumeSpec and persistentVolumeName",
        )),
        (Some(name), None) => {
            for msg in is_dns1123_subdomain(name) {
                errs.push(FieldError::invalid(
                    "spec.source.persistentVolumeName",
                    name,
                    msg,
                ));
            }
        }
        (None, Some(_)) => {}
    }
    if spec.node_name.is_empty() {
        errs.push(FieldError::required("spec.nodeName", ""));
    } else {
        for msg in is_dns1123_subdomain(&spec.node_name) {
            errs.push(FieldError::invalid("spec.nodeName", &spec.node_name, msg));
        }
    }
    errs
}

/// What a VolumeAttachment update may not change: the spec.
pub fn validate_volume_attachment_update(
    new: &VolumeAttachment,
    old: &VolumeAttachment,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    errs.extend(immutable_struct(&new.spec, &old.spec, "spec"));
    errs
}

/// Validates a VolumeAttributesClass: a driver name and at least one parameter.
pub fn validate_volume_attributes_class(class: &VolumeAttributesClass) -> Vec<FieldError> {
    let mut errs = validate_object_meta(&class.metadata, false, name_is_dns_subdomain, "metadata");
    errs.extend(validate_driver_name(&class.driver_name, "driverName"));
    errs.extend(validate_parameters(&class.parameters, false, "parameters"));
    errs
}

/// What a VolumeAttributesClass update may not change: the driver and the parameters.
pub fn validate_volume_attributes_class_update(
    new: &VolumeAttributesClass,
    old: &VolumeAttributesClass,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata);
    if new.driver_name != old.driver_name {
        errs.push(FieldError::forbidden(
            "driverName",
            "updates to driverName are forbidden.",
        ));
    }
    if new.parameters != old.parameters {
        errs.push(FieldError::forbidden(
            "parameters",
            "updates to parameters are forbidden.",
        ));
    }
    errs
}
