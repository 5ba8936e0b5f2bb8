//! The PersistentVolume binder (kube-controller-manager's `persistentvolume-binder-controller`),
//! for what the scheduler does not bind:
//!
//! - a claim of an `Immediate` class (or of none, or of a class that does not exist) that names
//!   no volume gets the smallest available volume of its class with room for its request, its
//!   access modes, its volume mode and matching its selector (a volume whose claimRef names the
//!   claim wins), or, when its class has a provisioner other than
//!   `kubernetes.io/no-provisioner`, a volume provisioned for it (`pvc-<uid>`, a CSI source of
//!   the provisioner: allot stands in for the external provisioner);
//! - a claim that names a volume (`spec.volumeName`, pre-bound by hand) is bound to it when the
//!   volume exists and is free or reserved for the claim;
//! - binding sets the volume's `claimRef` and phase `Bound`, the claim's `volumeName`,
//!   `pv.kubernetes.io/bind-completed`, `pv.kubernetes.io/bound-by-controller`, phase `Bound`,
//!   capacity and access modes;
//! - a volume without a claimRef in phase `Pending` becomes `Available`; a volume whose claim
//!   is gone becomes `Released`.
//!
//! Claims of WaitForFirstConsumer classes are the scheduler's (VolumeBinding's PreBind does the
//! same writes for the node it chose). Not modelled: reclaim policies (a Released volume stays),
//! recycling, deletion of provisioned volumes, the controller's Events.

use std::collections::BTreeMap;

use allot_api::core::v1::{
    CSIPersistentVolumeSource, ObjectReference, PersistentVolume, PersistentVolumeClaim,
    PersistentVolumeClaimPhase, PersistentVolumeMode, PersistentVolumePhase,
};
use allot_api::meta::v1::LabelSelector;
use allot_api::storage::v1::{StorageClass, VolumeBindingMode};
use allot_runtime::{Action, Context, Controller, Subscriptions, Topic};
use allot_store::{Event, Kind, ObjectKey, Store, Stored};

const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
const ANN_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";
const ANN_STORAGE_PROVISIONER: &str = "volume.kubernetes.io/storage-provisioner";
const NO_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// The PersistentVolume binder.
#[derive(Debug, Default)]
pub struct PersistentVolumeController;

impl PersistentVolumeController {
    /// A binder.
    pub fn new() -> Self {
        PersistentVolumeController
    }
}

impl Controller for PersistentVolumeController {
    fn name(&self) -> &'static str {
        "persistentvolume-binder-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::PersistentVolumeClaim(_) => vec![event.key.clone()],
            Stored::PersistentVolume(pv) => {
                let mut keys = vec![event.key.clone()];
                // A new or freed volume may bind a waiting Immediate claim.
                if pv.spec.claim_ref.is_none() {
                    keys.extend(
                        store
                            .list::<PersistentVolumeClaim>()
                            .filter(|c| c.spec.volume_name.is_empty())
                            .map(Store::key_of),
                    );
                }
                keys
            }
            Stored::StorageClass(_) => store
                .list::<PersistentVolumeClaim>()
                .filter(|c| c.spec.volume_name.is_empty())
                .map(Store::key_of)
                .collect(),
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::PersistentVolumeClaim));
        subscriptions.add(Topic::Kind(Kind::PersistentVolume));
        subscriptions.add(Topic::Kind(Kind::StorageClass));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let stamp = ctx.now.rfc3339();
        match key.kind {
            Kind::PersistentVolumeClaim => sync_claim(store, key, &stamp)?,
            Kind::PersistentVolume => sync_volume(store, key, &stamp)?,
            _ => {}
        }
        Ok(Action::Done)
    }
}

/// A claim's class: the beta annotation, else `spec.storageClassName`.
fn claim_class(claim: &PersistentVolumeClaim) -> String {
    claim
        .metadata
        .annotations
        .get(ANN_STORAGE_CLASS)
        .cloned()
        .or_else(|| claim.spec.storage_class_name.clone())
        .unwrap_or_default()
}

fn volume_class(pv: &PersistentVolume) -> String {
    pv.metadata
        .annotations
        .get(ANN_STORAGE_CLASS)
        .cloned()
        .unwrap_or_else(|| pv.spec.storage_class_name.clone())
}

fn reserved_for(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    pv.spec.claim_ref.as_ref().is_some_and(|r| {
        r.name.as_deref() == Some(claim.metadata.name.as_str())
            && r.namespace.as_deref().unwrap_or("") == claim.metadata.namespace
            && r.uid.as_deref().is_none_or(|u| {
                u.is_empty() || claim.metadata.uid.is_empty() || u == claim.metadata.uid
            })
    })
}

fn bytes(list: &allot_api::core::v1::ResourceList) -> i64 {
    list.get("storage").map(|q| q.value()).unwrap_or(0)
}

fn selector_matches(selector: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    let labels_ok = selector
        .match_labels
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let expressions_ok = selector.match_expressions.iter().all(|e| {
        let value = labels.get(&e.key);
        match e.operator.as_str() {
            "In" => value.is_some_and(|v| e.values.contains(v)),
            "NotIn" => value.is_none_or(|v| !e.values.contains(v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    });
    labels_ok && expressions_ok
}

/// The controller's `FindMatchingVolume` (no node: node affinity is not checked).
fn find_volume(store: &Store, claim: &PersistentVolumeClaim) -> Option<String> {
    let requested = bytes(&claim.spec.resources.requests);
    let class = claim_class(claim);
    let mode =
        |m: &Option<PersistentVolumeMode>| m.clone().unwrap_or(PersistentVolumeMode::Filesystem);
    let mut best: Option<(i64, String)> = None;
    for pv in store.list::<PersistentVolume>() {
        if pv.spec.claim_ref.is_some() && !reserved_for(pv, claim) {
            continue;
        }
        let size = bytes(&pv.spec.capacity);
        if size < requested
            || mode(&pv.spec.volume_mode) != mode(&claim.spec.volume_mode)
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        if reserved_for(pv, claim) {
            return Some(pv.metadata.name.clone());
        }
        let available = matches!(
            pv.status.phase,
            None | Some(PersistentVolumePhase::Available) | Some(PersistentVolumePhase::Pending)
        );
        if !available
            || claim
                .spec
                .selector
                .as_ref()
                .is_some_and(|s| !selector_matches(s, &pv.metadata.labels))
            || volume_class(pv) != class
            || !claim
                .spec
                .access_modes
                .iter()
                .all(|m| pv.spec.access_modes.contains(m))
        {
            continue;
        }
        if best.as_ref().is_none_or(|(s, _)| *s > size) {
            best = Some((size, pv.metadata.name.clone()));
        }
    }
    best.map(|(_, name)| name)
}

fn sync_claim(store: &mut Store, key: &ObjectKey, stamp: &str) -> Result<(), String> {
    let Some(claim) = store
        .get::<PersistentVolumeClaim>(&key.namespace, &key.name)
        .cloned()
    else {
        return Ok(());
    };
    if claim.metadata.deletion_timestamp.is_some()
        || claim.metadata.annotations.contains_key(ANN_BIND_COMPLETED)
    {
        return Ok(());
    }
    if !claim.spec.volume_name.is_empty() {
        // Pre-bound by hand: bind when the volume is there and free (or reserved for it).
        let name = claim.spec.volume_name.clone();
        let free = store
            .get::<PersistentVolume>("", &name)
            .is_some_and(|pv| pv.spec.claim_ref.is_none() || reserved_for(pv, &claim));
        if free {
            bind(store, &claim, &name, stamp)?;
        }
        return Ok(());
    }
    let class_name = claim_class(&claim);
    let class = (!class_name.is_empty())
        .then(|| store.get::<StorageClass>("", &class_name).cloned())
        .flatten();
    if class
        .as_ref()
        .is_some_and(|c| c.volume_binding_mode == Some(VolumeBindingMode::WaitForFirstConsumer))
    {
        return Ok(());
    }
    if let Some(volume) = find_volume(store, &claim) {
        return bind(store, &claim, &volume, stamp);
    }
    match class {
        Some(c) if !c.provisioner.is_empty() && c.provisioner != NO_PROVISIONER => {
            let name = provision(store, &claim, &c, stamp)?;
            bind(store, &claim, &name, stamp)
        }
        _ => Ok(()),
    }
}

/// Creates the volume an external provisioner would for `claim`.
fn provision(
    store: &mut Store,
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    stamp: &str,
) -> Result<String, String> {
    store
        .modify::<PersistentVolumeClaim, _>(&claim.metadata.namespace, &claim.metadata.name, |c| {
            c.metadata
                .annotations
                .insert(ANN_STORAGE_PROVISIONER.into(), class.provisioner.clone());
        })
        .map_err(|e| e.to_string())?;
    let uid = if claim.metadata.uid.is_empty() {
        format!("{}-{}", claim.metadata.namespace, claim.metadata.name)
    } else {
        claim.metadata.uid.clone()
    };
    let mut pv = PersistentVolume::default();
    pv.metadata.name = format!("pvc-{uid}");
    pv.metadata.annotations.insert(
        "pv.kubernetes.io/provisioned-by".into(),
        class.provisioner.clone(),
    );
    if let Some(size) = claim.spec.resources.requests.get("storage") {
        pv.spec.capacity.insert("storage".into(), size.clone());
    }
    pv.spec.access_modes = claim.spec.access_modes.clone();
    pv.spec.volume_mode = claim.spec.volume_mode.clone();
    pv.spec.storage_class_name = class.metadata.name.clone();
    pv.spec.persistent_volume_reclaim_policy = class.reclaim_policy.clone();
    pv.spec.mount_options = class.mount_options.clone();
    pv.spec.csi = Some(CSIPersistentVolumeSource {
        driver: class.provisioner.clone(),
        volume_handle: pv.metadata.name.clone(),
        ..Default::default()
    });
    pv.spec.claim_ref = Some(claim_ref(claim));
    pv.status.phase = Some(PersistentVolumePhase::Bound);
    let name = pv.metadata.name.clone();
    store.create_shared(pv, stamp).map_err(|e| e.to_string())?;
    Ok(name)
}

fn claim_ref(claim: &PersistentVolumeClaim) -> ObjectReference {
    ObjectReference {
        kind: Some("PersistentVolumeClaim".into()),
        namespace: Some(claim.metadata.namespace.clone()),
        name: Some(claim.metadata.name.clone()),
        uid: Some(claim.metadata.uid.clone()).filter(|u| !u.is_empty()),
        api_version: Some("v1".into()),
        resource_version: Some(claim.metadata.resource_version.clone()).filter(|r| !r.is_empty()),
        field_path: None,
    }
}

/// Binds both sides (upstream `bind`: the volume first, then the claim).
fn bind(
    store: &mut Store,
    claim: &PersistentVolumeClaim,
    volume: &str,
    stamp: &str,
) -> Result<(), String> {
    let reference = claim_ref(claim);
    let by_controller = claim.spec.volume_name.is_empty();
    let pv = store
        .modify::<PersistentVolume, _>("", volume, |pv| {
            if pv.spec.claim_ref.is_none() {
                pv.spec.claim_ref = Some(reference);
                pv.metadata
                    .annotations
                    .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            } else if let Some(r) = pv.spec.claim_ref.as_mut() {
                r.uid = reference.uid.clone();
            }
            if pv.status.phase != Some(PersistentVolumePhase::Bound) {
                pv.status.phase = Some(PersistentVolumePhase::Bound);
                pv.status.last_phase_transition_time = Some(stamp.to_string());
            }
            pv.clone()
        })
        .map_err(|e| e.to_string())?;
    store
        .modify::<PersistentVolumeClaim, _>(&claim.metadata.namespace, &claim.metadata.name, |c| {
            c.spec.volume_name = pv.metadata.name.clone();
            c.metadata
                .annotations
                .insert(ANN_BIND_COMPLETED.into(), "yes".into());
            if by_controller {
                c.metadata
                    .annotations
                    .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            }
            c.status.phase = Some(PersistentVolumeClaimPhase::Bound);
            c.status.access_modes = pv.spec.access_modes.clone();
            c.status.capacity = pv.spec.capacity.clone();
        })
        .map_err(|e| e.to_string())
}

fn sync_volume(store: &mut Store, key: &ObjectKey, stamp: &str) -> Result<(), String> {
    let Some(pv) = store.get::<PersistentVolume>("", &key.name).cloned() else {
        return Ok(());
    };
    let phase = match &pv.spec.claim_ref {
        None => PersistentVolumePhase::Available,
        Some(r) => {
            let ns = r.namespace.as_deref().unwrap_or("");
            let name = r.name.as_deref().unwrap_or("");
            match store.get::<PersistentVolumeClaim>(ns, name) {
                // A claim pre-binds the volume, or the binding is done: nothing to change.
                Some(_) => return Ok(()),
                None if pv.status.phase == Some(PersistentVolumePhase::Bound) => {
                    PersistentVolumePhase::Released
                }
                None => return Ok(()),
            }
        }
    };
    if pv.status.phase == Some(phase.clone()) {
        return Ok(());
    }
    store
        .modify::<PersistentVolume, _>("", &key.name, |v| {
            v.status.phase = Some(phase);
            v.status.last_phase_transition_time = Some(stamp.to_string());
        })
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::load::{LoadOptions, load_str};
    use allot_runtime::{Runtime, SimTime};

    fn run(yaml: &str) -> Store {
        let loaded = load_str("t.yaml", yaml, &LoadOptions::default());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let mut store = Store::new();
        for doc in loaded.documents {
            let mut object = doc.object;
            allot_api::defaults::default_object(&mut object);
            if let Some(stored) = Stored::from_object(object) {
                store
                    .create_stored(stored, &SimTime::ZERO.rfc3339())
                    .unwrap();
            }
        }
        let mut rt = Runtime::new(
            store,
            vec![Box::new(PersistentVolumeController::new())],
            SimTime::ZERO,
        );
        rt.run_due(10_000).unwrap();
        assert!(rt.errors().is_empty(), "{:?}", rt.errors());
        rt.store
    }

    const CLASSES: &str = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: std}\nprovisioner: csi.example.com\n---\napiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: wait}\nprovisioner: csi.example.com\nvolumeBindingMode: WaitForFirstConsumer\n---\n";

    fn pv(name: &str, class: &str, size: &str) -> String {
        format!(
            "apiVersion: v1\nkind: PersistentVolume\nmetadata: {{name: {name}}}\nspec: {{capacity: {{storage: {size}}}, accessModes: [ReadWriteOnce], storageClassName: '{class}', hostPath: {{path: /x}}}}\n---\n"
        )
    }

    fn pvc(name: &str, class: &str, size: &str) -> String {
        format!(
            "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: {name}, namespace: default}}\nspec: {{accessModes: [ReadWriteOnce], storageClassName: '{class}', resources: {{requests: {{storage: {size}}}}}}}\n---\n"
        )
    }

    fn claim<'a>(store: &'a Store, name: &str) -> &'a PersistentVolumeClaim {
        store.get::<PersistentVolumeClaim>("default", name).unwrap()
    }

    #[test]
    fn immediate_claims_take_the_smallest_fitting_volume() {
        let yaml = format!(
            "{CLASSES}{}{}{}{}",
            pv("big", "std", "100Gi"),
            pv("small", "std", "10Gi"),
            pv("fits", "std", "20Gi"),
            pvc("data", "std", "15Gi")
        );
        let store = run(&yaml);
        let c = claim(&store, "data");
        assert_eq!(c.spec.volume_name, "fits");
        assert_eq!(c.status.phase, Some(PersistentVolumeClaimPhase::Bound));
        let v = store.get::<PersistentVolume>("", "fits").unwrap();
        assert_eq!(v.status.phase, Some(PersistentVolumePhase::Bound));
        assert_eq!(
            v.spec.claim_ref.as_ref().unwrap().name.as_deref(),
            Some("data")
        );
        let other = store.get::<PersistentVolume>("", "big").unwrap();
        assert_eq!(other.status.phase, Some(PersistentVolumePhase::Available));
    }

    #[test]
    fn immediate_claims_without_a_volume_are_provisioned_and_wait_for_first_consumer_is_left_alone()
    {
        let yaml = format!(
            "{CLASSES}{}{}",
            pvc("data", "std", "5Gi"),
            pvc("later", "wait", "5Gi")
        );
        let store = run(&yaml);
        let c = claim(&store, "data");
        assert!(c.spec.volume_name.starts_with("pvc-"), "{:?}", c.spec);
        let v = store
            .get::<PersistentVolume>("", &c.spec.volume_name)
            .unwrap();
        assert_eq!(v.spec.csi.as_ref().unwrap().driver, "csi.example.com");
        let later = claim(&store, "later");
        assert!(later.spec.volume_name.is_empty());
        assert_eq!(
            later.status.phase,
            Some(PersistentVolumeClaimPhase::Pending)
        );
    }

    #[test]
    fn prebound_claims_bind_to_their_volume() {
        let yaml = format!(
            "{}apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {{name: data, namespace: default}}\nspec: {{accessModes: [ReadWriteOnce], storageClassName: '', volumeName: mine, resources: {{requests: {{storage: 1Gi}}}}}}\n",
            pv("mine", "", "1Gi")
        );
        let store = run(&yaml);
        assert_eq!(
            claim(&store, "data").status.phase,
            Some(PersistentVolumeClaimPhase::Bound)
        );
        let v = store.get::<PersistentVolume>("", "mine").unwrap();
        assert_eq!(v.status.phase, Some(PersistentVolumePhase::Bound));
        // The controller wrote the volume's claimRef, the user the claim's volumeName.
        assert!(v.metadata.annotations.contains_key(ANN_BOUND_BY_CONTROLLER));
        let c = claim(&store, "data");
        assert!(!c.metadata.annotations.contains_key(ANN_BOUND_BY_CONTROLLER));
        assert!(c.metadata.annotations.contains_key(ANN_BIND_COMPLETED));
    }
}
