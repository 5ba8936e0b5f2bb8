//! What the four volume plugins share: a pod's volumes read from its (opaque) `spec.volumes`,
//! claim names (generic ephemeral volumes included), a claim's storage class, and the
//! PersistentVolume helpers of upstream's `component-helpers/storage/volume` (a volume's
//! class, its node affinity, access modes).
//!
//! The plugins read PersistentVolumes, claims, StorageClasses and CSINodes from the store at
//! PreFilter (always current: the binding cycle of the previous pod may have written them a
//! moment ago) and keep what their Filter needs in the cycle state.

use std::collections::BTreeMap;

use allot_api::core::v1::{
    Node, PersistentVolume, PersistentVolumeAccessMode, PersistentVolumeClaim, Pod,
};
use allot_api::storage::v1::StorageClass;
use allot_store::Store;
use serde::Deserialize;

use crate::filters::selector_matches;

/// `volume.kubernetes.io/selected-node`: the node the scheduler chose for a claim to provision.
pub const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// `pv.kubernetes.io/bind-completed`: the claim's binding is complete.
pub const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// `pv.kubernetes.io/bound-by-controller`: the binding was made by a controller, not a user.
pub const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// `volume.beta.kubernetes.io/storage-class`: the old way to name a class, still honoured.
pub const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
/// `volume.kubernetes.io/storage-provisioner`: the provisioner asked to provision a claim.
pub const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
/// The provisioner of classes whose volumes are created by hand.
pub const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// A GCE persistent disk as a pod names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GcePd {
    /// The disk.
    #[serde(default)]
    pub pd_name: String,
    /// Mounted read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// An AWS EBS volume as a pod names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AwsEbs {
    /// The volume.
    #[serde(rename = "volumeID", default)]
    pub volume_id: String,
}

/// A Ceph RBD image as a pod names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rbd {
    /// Ceph monitors.
    #[serde(default)]
    pub monitors: Vec<String>,
    /// The RADOS pool (default `rbd`).
    #[serde(default)]
    pub pool: Option<String>,
    /// The image.
    #[serde(default)]
    pub image: String,
    /// Mounted read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// An iSCSI target as a pod names it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Iscsi {
    /// The target's IQN.
    #[serde(default)]
    pub iqn: String,
    /// Mounted read-only.
    #[serde(default)]
    pub read_only: bool,
}

/// `persistentVolumeClaim` of a pod volume.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimSource {
    /// The claim's name.
    #[serde(default)]
    pub claim_name: String,
}

/// One entry of a pod's `spec.volumes`, with the sources the scheduler reads (others are
/// ignored).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodVolume {
    /// The volume's name in the pod.
    #[serde(default)]
    pub name: String,
    /// `persistentVolumeClaim`.
    #[serde(default)]
    pub persistent_volume_claim: Option<ClaimSource>,
    /// `ephemeral` (its claim template is not read).
    #[serde(default)]
    pub ephemeral: Option<serde_json::Value>,
    /// `gcePersistentDisk`.
    #[serde(default)]
    pub gce_persistent_disk: Option<GcePd>,
    /// `awsElasticBlockStore`.
    #[serde(default)]
    pub aws_elastic_block_store: Option<AwsEbs>,
    /// `rbd`.
    #[serde(default)]
    pub rbd: Option<Rbd>,
    /// `iscsi`.
    #[serde(default)]
    pub iscsi: Option<Iscsi>,
}

/// How a pod volume uses a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimUse {
    /// `persistentVolumeClaim.claimName`.
    Named,
    /// A generic ephemeral volume: the claim `<pod>-<volume>` the pod owns.
    Ephemeral,
}

impl PodVolume {
    /// The claim this volume uses, if any: its name and how.
    pub fn claim(&self, pod: &Pod) -> Option<(String, ClaimUse)> {
        if let Some(source) = &self.persistent_volume_claim {
            return Some((source.claim_name.clone(), ClaimUse::Named));
        }
        self.ephemeral.as_ref().map(|_| {
            (
                format!("{}-{}", pod.metadata.name, self.name),
                ClaimUse::Ephemeral,
            )
        })
    }

    /// Whether VolumeRestrictions' disk checks concern this volume.
    pub fn needs_restrictions_check(&self) -> bool {
        self.gce_persistent_disk.is_some()
            || self.aws_elastic_block_store.is_some()
            || self.rbd.is_some()
            || self.iscsi.is_some()
    }
}

/// A pod's volumes (entries that do not decode are left out: the API server validated them).
pub fn pod_volumes(pod: &Pod) -> Vec<PodVolume> {
    match &pod.spec.volumes {
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .filter_map(|v| PodVolume::deserialize(v).ok())
            .collect(),
        _ => Vec::new(),
    }
}

/// The claims a pod's volumes name, in volume order: `(name, use)`.
pub fn pod_claims(pod: &Pod) -> Vec<(String, ClaimUse)> {
    pod_volumes(pod)
        .iter()
        .filter_map(|v| v.claim(pod))
        .collect()
}

/// Upstream `ephemeral.VolumeIsForPod`: an ephemeral volume's claim must be controlled by the
/// pod.
pub fn ephemeral_claim_for_pod(pod: &Pod, claim: &PersistentVolumeClaim) -> Result<(), String> {
    let owned = claim
        .metadata
        .owner_references
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == pod.metadata.uid);
    if owned {
        Ok(())
    } else {
        Err(format!(
            "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
            claim.metadata.namespace,
            claim.metadata.name,
            pod.metadata.namespace,
            pod.metadata.name
        ))
    }
}

/// Upstream `GetPersistentVolumeClaimClass`: the beta annotation, else `spec.storageClassName`
/// (empty when neither is set).
pub fn claim_class(claim: &PersistentVolumeClaim) -> String {
    if let Some(class) = claim.metadata.annotations.get(ANN_STORAGE_CLASS) {
        return class.clone();
    }
    claim.spec.storage_class_name.clone().unwrap_or_default()
}

/// Upstream `GetPersistentVolumeClass`: the beta annotation, else `spec.storageClassName`.
pub fn volume_class(volume: &PersistentVolume) -> String {
    if let Some(class) = volume.metadata.annotations.get(ANN_STORAGE_CLASS) {
        return class.clone();
    }
    volume.spec.storage_class_name.clone()
}

/// Whether a class delays binding until a pod uses the claim.
pub fn is_wait_for_first_consumer(class: &StorageClass) -> bool {
    class.volume_binding_mode
        == Some(allot_api::storage::v1::VolumeBindingMode::WaitForFirstConsumer)
}

/// Upstream `CheckNodeAffinity`: a volume without required node affinity fits every node.
pub fn volume_fits_node(volume: &PersistentVolume, node: &Node) -> bool {
    match volume
        .spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
    {
        Some(selector) => selector_matches(node, selector),
        None => true,
    }
}

/// Whether `volume` is bound to `claim` (its claimRef names the claim, and the uid when both
/// have one).
pub fn volume_bound_to_claim(volume: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    let Some(r) = &volume.spec.claim_ref else {
        return false;
    };
    r.name.as_deref() == Some(claim.metadata.name.as_str())
        && r.namespace.as_deref().unwrap_or("") == claim.metadata.namespace
        && r.uid.as_deref().is_none_or(|u| {
            u.is_empty() || claim.metadata.uid.is_empty() || u == claim.metadata.uid
        })
}

/// Upstream `CheckAccessModes`: the volume offers every mode the claim asks for.
pub fn access_modes_fit(claim: &PersistentVolumeClaim, volume: &PersistentVolume) -> bool {
    claim
        .spec
        .access_modes
        .iter()
        .all(|m| volume.spec.access_modes.contains(m))
}

/// Whether a claim asks for ReadWriteOncePod.
pub fn is_read_write_once_pod(claim: &PersistentVolumeClaim) -> bool {
    claim
        .spec
        .access_modes
        .contains(&PersistentVolumeAccessMode::ReadWriteOncePod)
}

/// The storage a claim requests, in bytes (0 when it names none).
pub fn requested_bytes(claim: &PersistentVolumeClaim) -> i64 {
    claim
        .spec
        .resources
        .requests
        .get("storage")
        .map(|q| q.value())
        .unwrap_or(0)
}

/// A volume's capacity, in bytes.
pub fn capacity_bytes(volume: &PersistentVolume) -> i64 {
    volume
        .spec
        .capacity
        .get("storage")
        .map(|q| q.value())
        .unwrap_or(0)
}

/// The store's claims, by `(namespace, name)`, of the claims a pod names (missing ones left
/// out).
pub fn claims_of(
    store: &Store,
    pod: &Pod,
) -> BTreeMap<String, std::sync::Arc<PersistentVolumeClaim>> {
    pod_claims(pod)
        .into_iter()
        .filter_map(|(name, _)| {
            store
                .get_shared::<PersistentVolumeClaim>(&pod.metadata.namespace, &name)
                .map(|c| (name, c.clone()))
        })
        .collect()
}

/// The upstream NotFound message of a claim.
pub fn claim_not_found(name: &str) -> String {
    format!("persistentvolumeclaim \"{name}\" not found")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn volumes_and_claims_decode_from_the_opaque_spec() {
        let mut pod = Pod::default();
        pod.metadata.name = "web-0".into();
        pod.spec.volumes = Some(serde_json::json!([
            {"name": "data", "persistentVolumeClaim": {"claimName": "data-web-0"}},
            {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
            {"name": "pd", "gcePersistentDisk": {"pdName": "disk", "readOnly": true}},
            {"name": "cfg", "configMap": {"name": "x"}}
        ]));
        let claims = pod_claims(&pod);
        assert_eq!(
            claims,
            vec![
                ("data-web-0".to_string(), ClaimUse::Named),
                ("web-0-scratch".to_string(), ClaimUse::Ephemeral)
            ]
        );
        let vols = pod_volumes(&pod);
        assert_eq!(vols.len(), 4);
        assert!(vols[2].needs_restrictions_check());
        assert!(!vols[3].needs_restrictions_check());
    }
}
