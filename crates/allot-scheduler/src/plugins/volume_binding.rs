//! VolumeBinding (PreFilter, Filter, Reserve, PreBind), as upstream's `volumebinding` and its
//! `SchedulerVolumeBinder`:
//!
//! - PreFilter: every claim the pod names must exist (not Lost, not being deleted; a generic
//!   ephemeral volume's claim owned by the pod); a claim not bound yet whose class binds
//!   `Immediate` makes the pod unschedulable ("pod has unbound immediate
//!   PersistentVolumeClaims"); a pod without claims skips the plugin.
//! - Filter, per node (upstream `FindPodVolumes`): a bound claim's PersistentVolume must exist
//!   and its required node affinity match the node; the unbound claims of WaitForFirstConsumer
//!   classes, smallest request first, each take the smallest fitting available volume of their
//!   class (upstream `FindMatchingVolume`: not bound to another claim, capacity, volume mode,
//!   selector, access modes, node affinity; a volume pre-bound to the claim wins), and the
//!   rest must be provisionable on the node (a provisioner other than
//!   `kubernetes.io/no-provisioner`, the class's `allowedTopologies`, and, for a CSIDriver with
//!   `storageCapacity: true`, a CSIStorageCapacity of the class whose topology selects the node
//!   with room for the request). A claim already given a node (`volume.kubernetes.io/selected-node`)
//!   fits that node only.
//! - PreBind writes the bindings: a chosen volume gets `spec.claimRef`, the claim
//!   `spec.volumeName`; a claim to provision gets `volume.kubernetes.io/selected-node`.
//!
//! allot has no PersistentVolume controller nor external provisioners, so PreBind also does
//! their part at once, as they would: the claim gets `pv.kubernetes.io/bind-completed` and
//! `pv.kubernetes.io/bound-by-controller`, both objects phase `Bound` (the claim with the
//! volume's capacity and access modes), and a claim to provision gets a new volume
//! `pvc-<claim uid>` (CSI source of the provisioner, the claim's size, modes and class, the
//! class's reclaim policy, node affinity on the node's values of the driver's CSINode
//! `topologyKeys`). For the same reason a volume in phase `Pending` without a claimRef counts
//! as available (upstream waits for the controller to mark it `Available`), and a claim whose
//! `spec.volumeName` names a volume bound to it counts as bound without the bind-completed
//! annotation (as written by hand in a manifest).
//!
//! Score: upstream scores only with the StorageCapacityScoring gate (alpha, off in 1.37), so
//! the plugin has no Score.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, ObjectReference, PersistentVolume,
    PersistentVolumeClaim, PersistentVolumeClaimPhase, PersistentVolumeMode, PersistentVolumePhase,
    VolumeNodeAffinity,
};
use allot_api::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass};
use allot_store::Store;

use crate::cache::NodeInfo;
use crate::framework::{
    BindCtx, ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation,
    FilterPlugin, Plugin, PodInfo, PreBindPlugin, PreFilterCtx, PreFilterPlugin, PreFilterResult,
    ReservePlugin, Status, queueing,
};
use crate::labels::Selector;

use super::volume_util::{
    ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE, ANN_STORAGE_PROVISIONER,
    ClaimUse, NO_PROVISIONER, access_modes_fit, capacity_bytes, claim_class,
    ephemeral_claim_for_pod, is_wait_for_first_consumer, pod_claims, requested_bytes,
    volume_bound_to_claim, volume_class, volume_fits_node,
};

/// The plugin's name.
pub const NAME: &str = "VolumeBinding";
/// A bound volume's node affinity does not match the node.
pub const REASON_NODE_CONFLICT: &str = "node(s) had volume node affinity conflict";
/// No volume to bind (nor a way to provision one) on the node.
pub const REASON_BIND_CONFLICT: &str = "node(s) didn't find available persistent volumes to bind";
/// Not enough storage capacity on the node for a volume to provision.
pub const REASON_NOT_ENOUGH_SPACE: &str = "node(s) did not have enough free storage";
/// A claim is bound to a volume that does not exist.
pub const REASON_PV_NOT_EXIST: &str =
    "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)";
/// A claim of an Immediate class is not bound.
pub const REASON_UNBOUND_IMMEDIATE: &str = "pod has unbound immediate PersistentVolumeClaims";

/// The VolumeBinding plugin.
#[derive(Debug, Default)]
pub struct VolumeBinding;

/// What a node would do for the pod's unbound claims.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct PodVolumes {
    /// `(claim name, volume name)`.
    bindings: Vec<(String, String)>,
    /// Claims to provision.
    provisions: Vec<String>,
}

/// Why a node does not fit, per claim (for the explanation).
#[derive(Debug, Clone, Default)]
struct Verdict {
    reasons: Vec<&'static str>,
    details: Vec<String>,
    volumes: PodVolumes,
}

/// PreFilter state.
#[derive(Debug, Clone)]
struct State {
    /// Bound claims with their volumes (`None`: missing).
    bound: Vec<(Arc<PersistentVolumeClaim>, Option<Arc<PersistentVolume>>)>,
    /// Unbound claims of WaitForFirstConsumer classes, smallest request first.
    delayed: Vec<Arc<PersistentVolumeClaim>>,
    /// Volumes of the delayed claims' classes, by class, in name order.
    volumes: BTreeMap<String, Vec<Arc<PersistentVolume>>>,
    classes: BTreeMap<String, Arc<StorageClass>>,
    /// CSI drivers that opt into capacity tracking.
    capacity_drivers: BTreeSet<String>,
    capacities: Vec<Arc<CSIStorageCapacity>>,
    /// Per node, what Filter found.
    by_node: BTreeMap<String, PodVolumes>,
    /// Set at Reserve: nothing to write at PreBind.
    all_bound: bool,
}

impl Plugin for VolumeBinding {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }

    fn as_reserve(&mut self) -> Option<&mut dyn ReservePlugin> {
        Some(self)
    }

    fn as_pre_bind(&mut self) -> Option<&mut dyn PreBindPlugin> {
        Some(self)
    }

    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl EnqueueExtensions for VolumeBinding {
    /// Claim, volume, class, CSINode, CSIDriver and CSIStorageCapacity events are routed by
    /// the scheduler for all volume plugins.
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    /// Upstream's `EventsToRegister` with queueing hints on: StorageClass, claim and volume
    /// additions and updates, CSINode, CSIDriver and CSIStorageCapacity changes (all
    /// [`queueing::STORAGE`]), and a node added or relabelled (allowed topologies, volume node
    /// affinity).
    fn requeue_on(&self) -> EventSet {
        queueing::STORAGE | queueing::NODE_ADDED | queueing::NODE_LABEL
    }
}

/// Whether a claim counts as bound (upstream `isPVCFullyBound`, and see the module comment).
fn is_bound(store: &Store, claim: &PersistentVolumeClaim) -> bool {
    if claim.spec.volume_name.is_empty() {
        return false;
    }
    if claim.metadata.annotations.contains_key(ANN_BIND_COMPLETED) {
        return true;
    }
    store
        .get::<PersistentVolume>("", &claim.spec.volume_name)
        .is_some_and(|pv| volume_bound_to_claim(pv, claim))
}

/// Upstream `IsDelayBindingMode` (a class that does not exist binds immediately).
fn delays_binding(store: &Store, claim: &PersistentVolumeClaim) -> Result<bool, String> {
    let name = claim_class(claim);
    if name.is_empty() {
        return Ok(false);
    }
    let Some(class) = store.get::<StorageClass>("", &name) else {
        return Ok(false);
    };
    if class.volume_binding_mode.is_none() {
        return Err(format!(
            "VolumeBindingMode not set for StorageClass \"{name}\""
        ));
    }
    Ok(is_wait_for_first_consumer(class))
}

/// The pod's claims from the store, checked as upstream's `podHasPVCs`.
fn pod_pvcs(store: &Store, pod: &PodInfo) -> Result<Vec<Arc<PersistentVolumeClaim>>, String> {
    let ns = pod.pod.metadata.namespace.as_str();
    let mut out = Vec::new();
    for (name, how) in pod_claims(&pod.pod) {
        let Some(claim) = store.get_shared::<PersistentVolumeClaim>(ns, &name) else {
            return Err(match how {
                ClaimUse::Ephemeral => format!(
                    "waiting for ephemeral volume controller to create the persistentvolumeclaim \"{name}\""
                ),
                ClaimUse::Named => format!("persistentvolumeclaim \"{name}\" not found"),
            });
        };
        if claim.status.phase == Some(PersistentVolumeClaimPhase::Lost) {
            return Err(format!(
                "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \"{}\"",
                claim.spec.volume_name
            ));
        }
        if claim.metadata.deletion_timestamp.is_some() {
            return Err(format!("persistentvolumeclaim \"{name}\" is being deleted"));
        }
        if how == ClaimUse::Ephemeral {
            ephemeral_claim_for_pod(&pod.pod, claim)?;
        }
        out.push(claim.clone());
    }
    Ok(out)
}

impl PreFilterPlugin for VolumeBinding {
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let all = PreFilterResult::all_nodes;
        let claims = match pod_pvcs(ctx.store, pod) {
            Ok(c) if c.is_empty() => return (all(), Status::skip()),
            Ok(c) => c,
            Err(e) => return (all(), Status::unresolvable(e)),
        };
        let store = &*ctx.store;
        let mut bound = Vec::new();
        let mut delayed = Vec::new();
        let mut immediate = false;
        for claim in claims {
            if is_bound(store, &claim) {
                let pv = store
                    .get_shared::<PersistentVolume>("", &claim.spec.volume_name)
                    .cloned();
                bound.push((claim, pv));
                continue;
            }
            match delays_binding(store, &claim) {
                Ok(true) => delayed.push(claim),
                Ok(false) => immediate = true,
                Err(e) => return (all(), Status::error(e)),
            }
        }
        if immediate {
            return (all(), Status::unresolvable(REASON_UNBOUND_IMMEDIATE));
        }
        // Upstream `byPVCSize`: smallest request first (stable: pod order among equals).
        delayed.sort_by_key(|c| requested_bytes(c));
        let class_names: BTreeSet<String> = delayed.iter().map(|c| claim_class(c)).collect();
        let mut volumes: BTreeMap<String, Vec<Arc<PersistentVolume>>> = BTreeMap::new();
        if !delayed.is_empty() {
            for stored in store.list_kind(allot_store::Kind::PersistentVolume) {
                if let allot_store::Stored::PersistentVolume(pv) = stored {
                    let class = volume_class(pv);
                    if class_names.contains(&class) {
                        volumes.entry(class).or_default().push(pv.clone());
                    }
                }
            }
        }
        let classes = store
            .list_kind(allot_store::Kind::StorageClass)
            .filter_map(|s| match s {
                allot_store::Stored::StorageClass(c) if class_names.contains(&c.metadata.name) => {
                    Some((c.metadata.name.clone(), c.clone()))
                }
                _ => None,
            })
            .collect();
        let capacity_drivers = store
            .list::<CSIDriver>()
            .filter(|d| d.spec.storage_capacity == Some(true))
            .map(|d| d.metadata.name.clone())
            .collect();
        let capacities = store
            .list_kind(allot_store::Kind::CSIStorageCapacity)
            .filter_map(|s| match s {
                allot_store::Stored::CSIStorageCapacity(c) => Some(c.clone()),
                _ => None,
            })
            .collect();
        state.write(State {
            bound,
            delayed,
            volumes,
            classes,
            capacity_drivers,
            capacities,
            by_node: BTreeMap::new(),
            all_bound: true,
        });
        (all(), Status::success())
    }
}

/// Upstream `FindMatchingVolume` for the scheduler's path (a node, delayed binding).
fn find_matching<'a>(
    claim: &PersistentVolumeClaim,
    volumes: &'a [Arc<PersistentVolume>],
    node: &NodeInfo,
    chosen: &BTreeSet<String>,
) -> Result<Option<&'a Arc<PersistentVolume>>, String> {
    let requested = requested_bytes(claim);
    let class = claim_class(claim);
    let selector = match &claim.spec.selector {
        Some(s) => Some(Selector::from_api(Some(s)).map_err(|e| {
            format!(
                "error creating internal label selector for claim: {}/{}: {e}",
                claim.metadata.namespace, claim.metadata.name
            )
        })?),
        None => None,
    };
    let mode =
        |m: &Option<PersistentVolumeMode>| m.clone().unwrap_or(PersistentVolumeMode::Filesystem);
    let mut smallest: Option<(&Arc<PersistentVolume>, i64)> = None;
    for pv in volumes {
        if chosen.contains(&pv.metadata.name) {
            continue;
        }
        let bound_here = volume_bound_to_claim(pv, claim);
        if pv.spec.claim_ref.is_some() && !bound_here {
            continue;
        }
        let size = capacity_bytes(pv);
        if size < requested
            || mode(&claim.spec.volume_mode) != mode(&pv.spec.volume_mode)
            || pv.metadata.deletion_timestamp.is_some()
        {
            continue;
        }
        let affinity_ok = volume_fits_node(pv, &node.node);
        if bound_here {
            return Ok(affinity_ok.then_some(pv));
        }
        let available = match pv.status.phase {
            Some(PersistentVolumePhase::Available) => true,
            // allot has no PV controller to make a new volume Available.
            None | Some(PersistentVolumePhase::Pending) => true,
            _ => false,
        };
        if !available
            || selector
                .as_ref()
                .is_some_and(|s| !s.matches(&pv.metadata.labels))
        {
            continue;
        }
        if volume_class(pv) != class || !affinity_ok || !access_modes_fit(claim, pv) {
            continue;
        }
        if claim
            .spec
            .volume_attributes_class_name
            .as_deref()
            .unwrap_or("")
            != pv
                .spec
                .volume_attributes_class_name
                .as_deref()
                .unwrap_or("")
        {
            continue;
        }
        if smallest.is_none_or(|(_, s)| s > size) {
            smallest = Some((pv, size));
        }
    }
    Ok(smallest.map(|(pv, _)| pv))
}

/// Upstream `MatchTopologySelectorTerms`: no terms match every node.
fn topology_matches(
    terms: &[allot_api::core::v1::TopologySelectorTerm],
    labels: &BTreeMap<String, String>,
) -> bool {
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions
                .iter()
                .all(|r| labels.get(&r.key).is_some_and(|v| r.values.contains(v)))
        })
}

/// Upstream `checkVolumeProvisions`, one claim: `Ok(None)` fits, `Ok(Some(reason))` does not.
fn check_provision(
    state: &State,
    claim: &PersistentVolumeClaim,
    node: &NodeInfo,
) -> Result<Option<(&'static str, String)>, String> {
    let name = &claim.metadata.name;
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return Err(format!("no class for claim \"{name}\""));
    }
    let Some(class) = state.classes.get(&class_name) else {
        return Err(format!("failed to find storage class \"{class_name}\""));
    };
    let provisioner = class.provisioner.as_str();
    if provisioner.is_empty() || provisioner == NO_PROVISIONER {
        return Ok(Some((
            REASON_BIND_CONFLICT,
            format!(
                "claim {name}: no available volume of class {class_name}, which does not provision"
            ),
        )));
    }
    if !topology_matches(&class.allowed_topologies, node.labels()) {
        return Ok(Some((
            REASON_BIND_CONFLICT,
            format!("claim {name}: class {class_name}'s allowedTopologies exclude the node"),
        )));
    }
    let Some(request) = claim.spec.resources.requests.get("storage") else {
        return Ok(None);
    };
    if !state.capacity_drivers.contains(provisioner) {
        return Ok(None);
    }
    let size = request.value();
    let fits = state.capacities.iter().any(|c| {
        let limit = c.maximum_volume_size.as_ref().or(c.capacity.as_ref());
        c.storage_class_name == class_name
            && limit.is_some_and(|l| l.value() >= size)
            && c.node_topology.as_ref().is_some_and(|t| {
                Selector::from_api(Some(t)).is_ok_and(|s| s.matches(node.labels()))
            })
    });
    if fits {
        Ok(None)
    } else {
        Ok(Some((
            REASON_NOT_ENOUGH_SPACE,
            format!(
                "claim {name}: no CSIStorageCapacity of class {class_name} with {request} for the node"
            ),
        )))
    }
}

/// Upstream `FindPodVolumes` for one node.
fn find_pod_volumes(state: &State, node: &NodeInfo) -> Result<Verdict, String> {
    let mut v = Verdict::default();
    let (mut bound_ok, mut bound_exist, mut unbound_ok, mut storage_ok) = (true, true, true, true);
    for (claim, pv) in &state.bound {
        match pv {
            None => {
                bound_exist = false;
                v.details.push(format!(
                    "claim {}: volume {} does not exist",
                    claim.metadata.name, claim.spec.volume_name
                ));
                break;
            }
            Some(pv) if !volume_fits_node(pv, &node.node) => {
                bound_ok = false;
                v.details.push(format!(
                    "claim {}: volume {}'s node affinity does not match",
                    claim.metadata.name, pv.metadata.name
                ));
                break;
            }
            Some(_) => {}
        }
    }
    'unbound: {
        if state.delayed.is_empty() {
            break 'unbound;
        }
        let mut to_provision: Vec<&Arc<PersistentVolumeClaim>> = Vec::new();
        let mut to_match: Vec<&Arc<PersistentVolumeClaim>> = Vec::new();
        for claim in &state.delayed {
            match claim.metadata.annotations.get(ANN_SELECTED_NODE) {
                Some(selected) if *selected != node.name => {
                    unbound_ok = false;
                    v.details.push(format!(
                        "claim {}: being provisioned for node {selected}",
                        claim.metadata.name
                    ));
                    break 'unbound;
                }
                Some(_) => to_provision.push(claim),
                None => to_match.push(claim),
            }
        }
        let mut chosen = BTreeSet::new();
        for claim in to_match {
            let empty = Vec::new();
            let volumes = state.volumes.get(&claim_class(claim)).unwrap_or(&empty);
            match find_matching(claim, volumes, node, &chosen)? {
                Some(pv) => {
                    chosen.insert(pv.metadata.name.clone());
                    v.volumes
                        .bindings
                        .push((claim.metadata.name.clone(), pv.metadata.name.clone()));
                }
                None => {
                    unbound_ok = false;
                    to_provision.push(claim);
                }
            }
        }
        if !to_provision.is_empty() {
            unbound_ok = true;
            for claim in to_provision {
                match check_provision(state, claim, node)? {
                    None => v.volumes.provisions.push(claim.metadata.name.clone()),
                    Some((reason, detail)) => {
                        v.details.push(detail);
                        if reason == REASON_NOT_ENOUGH_SPACE {
                            storage_ok = false;
                        } else {
                            unbound_ok = false;
                        }
                        v.volumes.provisions.clear();
                        break;
                    }
                }
            }
        }
    }
    if !bound_ok {
        v.reasons.push(REASON_NODE_CONFLICT);
    }
    if !unbound_ok {
        v.reasons.push(REASON_BIND_CONFLICT);
    }
    if !storage_ok {
        v.reasons.push(REASON_NOT_ENOUGH_SPACE);
    }
    if !bound_exist {
        v.reasons.push(REASON_PV_NOT_EXIST);
    }
    Ok(v)
}

impl FilterPlugin for VolumeBinding {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::success();
        };
        let verdict = match find_pod_volumes(s, node) {
            Ok(v) => v,
            Err(e) => return Status::error(e),
        };
        if !verdict.reasons.is_empty() {
            return Status::with_reasons(
                crate::framework::Code::UnschedulableAndUnresolvable,
                verdict.reasons.iter().map(|r| (*r).into()).collect(),
            );
        }
        if let Some(s) = state.read_mut::<State>() {
            s.by_node.insert(node.name.clone(), verdict.volumes);
        }
        Status::success()
    }

    /// Per node: the claim and volume (or class) behind the reason.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let Some(s) = state.read::<State>().cloned() else {
            return Ok(None);
        };
        Ok(Some(Explanation::grouped(NAME, rejected, |node, _| {
            let v = find_pod_volumes(&s, node).ok()?;
            (!v.details.is_empty()).then(|| v.details.join("; "))
        })))
    }

    fn cacheable(&self, _state: &CycleState) -> bool {
        false
    }
}

impl ReservePlugin for VolumeBinding {
    fn reserve(
        &mut self,
        _ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        node: &str,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            s.all_bound = s
                .by_node
                .get(node)
                .is_none_or(|v| v.bindings.is_empty() && v.provisions.is_empty());
        }
        Status::success()
    }

    fn unreserve(
        &mut self,
        _ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        _pod: &PodInfo,
        _node: &str,
    ) {
    }
}

impl PreBindPlugin for VolumeBinding {
    fn pre_bind(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::success();
        };
        if s.all_bound {
            return Status::success();
        }
        let Some(volumes) = s.by_node.get(node).cloned() else {
            return Status::error(format!("no pod volumes found for node \"{node}\""));
        };
        let classes = s.classes.clone();
        let ns = pod.pod.metadata.namespace.clone();
        for (claim, pv) in &volumes.bindings {
            if let Err(e) = bind(ctx, &ns, claim, pv) {
                return Status::error(e);
            }
        }
        for claim in &volumes.provisions {
            if let Err(e) = provision(ctx, &classes, &ns, claim, node) {
                return Status::error(e);
            }
        }
        Status::success()
    }
}

/// The claimRef of a claim.
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

/// Binds a claim to a volume: the scheduler's claimRef, then the PV controller's completion.
fn bind(ctx: &mut BindCtx<'_>, ns: &str, claim_name: &str, pv_name: &str) -> Result<(), String> {
    let claim = ctx
        .store
        .get::<PersistentVolumeClaim>(ns, claim_name)
        .cloned()
        .ok_or_else(|| format!("persistentvolumeclaim \"{claim_name}\" not found"))?;
    let reference = claim_ref(&claim);
    let stamp = ctx.stamp.to_string();
    let pv = ctx
        .store
        .modify::<PersistentVolume, _>("", pv_name, |pv| {
            pv.spec.claim_ref = Some(reference);
            pv.metadata
                .annotations
                .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            pv.status.phase = Some(PersistentVolumePhase::Bound);
            pv.status.last_phase_transition_time = Some(stamp.clone());
            pv.clone()
        })
        .map_err(|e| e.to_string())?;
    complete_claim(ctx, ns, claim_name, &pv)
}

/// The PV controller's side: the claim names the volume and is Bound.
fn complete_claim(
    ctx: &mut BindCtx<'_>,
    ns: &str,
    claim_name: &str,
    pv: &PersistentVolume,
) -> Result<(), String> {
    ctx.store
        .modify::<PersistentVolumeClaim, _>(ns, claim_name, |c| {
            c.spec.volume_name = pv.metadata.name.clone();
            c.metadata
                .annotations
                .insert(ANN_BIND_COMPLETED.into(), "yes".into());
            c.metadata
                .annotations
                .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
            c.status.phase = Some(PersistentVolumeClaimPhase::Bound);
            c.status.access_modes = pv.spec.access_modes.clone();
            c.status.capacity = pv.spec.capacity.clone();
        })
        .map_err(|e| e.to_string())
}

/// Provisions a claim's volume for `node`: the scheduler's selected-node annotation, then the
/// provisioner's volume and the PV controller's binding.
fn provision(
    ctx: &mut BindCtx<'_>,
    classes: &BTreeMap<String, Arc<StorageClass>>,
    ns: &str,
    claim_name: &str,
    node: &str,
) -> Result<(), String> {
    let claim = ctx
        .store
        .modify::<PersistentVolumeClaim, _>(ns, claim_name, |c| {
            c.metadata
                .annotations
                .insert(ANN_SELECTED_NODE.into(), node.to_string());
            c.clone()
        })
        .map_err(|e| e.to_string())?;
    let class_name = claim_class(&claim);
    let class = classes
        .get(&class_name)
        .ok_or_else(|| format!("failed to find storage class \"{class_name}\""))?;
    let provisioner = class.provisioner.clone();
    ctx.store
        .modify::<PersistentVolumeClaim, _>(ns, claim_name, |c| {
            c.metadata
                .annotations
                .insert(ANN_STORAGE_PROVISIONER.into(), provisioner.clone());
        })
        .map_err(|e| e.to_string())?;
    let claim = ctx
        .store
        .get::<PersistentVolumeClaim>(ns, claim_name)
        .cloned()
        .ok_or_else(|| format!("persistentvolumeclaim \"{claim_name}\" not found"))?;
    let mut pv = PersistentVolume::default();
    let uid = if claim.metadata.uid.is_empty() {
        format!("{ns}-{claim_name}")
    } else {
        claim.metadata.uid.clone()
    };
    pv.metadata.name = format!("pvc-{uid}");
    pv.metadata.annotations.insert(
        "pv.kubernetes.io/provisioned-by".into(),
        provisioner.clone(),
    );
    pv.metadata
        .annotations
        .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
    if let Some(size) = claim.spec.resources.requests.get("storage") {
        pv.spec.capacity.insert("storage".into(), size.clone());
    }
    pv.spec.access_modes = claim.spec.access_modes.clone();
    pv.spec.volume_mode = claim.spec.volume_mode.clone();
    pv.spec.storage_class_name = class_name;
    pv.spec.persistent_volume_reclaim_policy = class.reclaim_policy.clone();
    pv.spec.mount_options = class.mount_options.clone();
    pv.spec.csi = Some(allot_api::core::v1::CSIPersistentVolumeSource {
        driver: provisioner.clone(),
        volume_handle: pv.metadata.name.clone(),
        ..Default::default()
    });
    pv.spec.node_affinity = topology_affinity(ctx, &provisioner, node);
    pv.spec.claim_ref = Some(claim_ref(&claim));
    pv.status.phase = Some(PersistentVolumePhase::Bound);
    let stamp = ctx.stamp.to_string();
    let pv = ctx.store.create(pv, &stamp).map_err(|e| e.to_string())?;
    complete_claim(ctx, ns, claim_name, &pv)
}

/// A provisioned volume's node affinity: the node's values of the driver's topology keys (as a
/// CSI provisioner writes from the node's topology segment); none when the CSINode names none.
fn topology_affinity(ctx: &BindCtx<'_>, driver: &str, node: &str) -> Option<VolumeNodeAffinity> {
    let csi = ctx.store.get::<CSINode>("", node)?;
    let keys = &csi
        .spec
        .drivers
        .iter()
        .find(|d| d.name == driver)?
        .topology_keys;
    let labels = &ctx.cluster.node_by_name(node)?.node.metadata.labels;
    let expressions: Vec<NodeSelectorRequirement> = keys
        .iter()
        .filter_map(|k| {
            Some(NodeSelectorRequirement {
                key: k.clone(),
                operator: allot_api::core::v1::NodeSelectorOperator::In,
                values: vec![labels.get(k)?.clone()],
            })
        })
        .collect();
    if expressions.is_empty() {
        return None;
    }
    Some(VolumeNodeAffinity {
        required: Some(NodeSelector {
            node_selector_terms: vec![NodeSelectorTerm {
                match_expressions: expressions,
                match_fields: Vec::new(),
            }],
        }),
    })
}
