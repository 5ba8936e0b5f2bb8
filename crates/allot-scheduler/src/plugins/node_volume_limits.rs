//! NodeVolumeLimits (PreFilter, Filter), as upstream's CSILimits: a node takes at most
//! `spec.drivers[].allocatable.count` volumes of each CSI driver (its CSINode's), counting the
//! volumes of the pods already there once each (by driver and volume handle) and the pod's new
//! ones. A claim bound to a CSI PersistentVolume counts as that volume; an unbound claim counts
//! as a new volume of its StorageClass's provisioner. A node whose Node object lists
//! `attachable-volumes-csi-<driver>` in `status.allocatable` has that limit when its CSINode
//! gives none.
//!
//! Not modelled: the CSI migration of in-tree volumes (upstream translates e.g. a
//! `gcePersistentDisk` PersistentVolume to its CSI driver when the CSINode's migrated-plugins
//! annotation names it); such volumes are not counted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{PersistentVolume, PersistentVolumeClaim, Pod};
use allot_api::storage::v1::{CSINode, StorageClass};
use allot_store::Store;

use crate::cache::NodeInfo;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin, Plugin,
    PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, Status, queueing,
};

use super::volume_util::{ClaimUse, claim_class, ephemeral_claim_for_pod, pod_claims};

/// The plugin's name.
pub const NAME: &str = "NodeVolumeLimits";
/// The node would exceed a driver's volume limit.
pub const REASON: &str = "node(s) exceed max volume count";
/// The Node allocatable prefix of a driver's limit.
const LIMIT_PREFIX: &str = "attachable-volumes-csi-";

/// The NodeVolumeLimits plugin.
#[derive(Debug, Default)]
pub struct NodeVolumeLimits;

/// A volume as counted: `(driver, unique name)`.
type Counted = (String, String);

/// PreFilter state: what Filter reads of the store.
#[derive(Debug, Clone)]
struct State {
    /// The pod's volumes.
    new: BTreeSet<Counted>,
    /// Every claim's volume, by `namespace/name`.
    claims: Arc<BTreeMap<String, Counted>>,
    /// Per node with a CSINode, the count limit of each driver.
    limits: Arc<BTreeMap<String, BTreeMap<String, i64>>>,
}

impl Plugin for NodeVolumeLimits {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }

    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl EnqueueExtensions for NodeVolumeLimits {
    /// CSINode and claim events are routed by the scheduler for all volume plugins; pod
    /// deletions retry every unschedulable pod.
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    /// Upstream's `EventsToRegister`: a CSINode added or updated, a claim added, a
    /// VolumeAttachment deleted ([`queueing::STORAGE`]), and a bound pod deleted (its volumes
    /// no longer count).
    fn requeue_on(&self) -> EventSet {
        queueing::STORAGE | queueing::ASSIGNED_POD_DELETED
    }
}

/// Upstream `getCSIDriverInfo`: the driver and handle of a claim's volume, or of a volume its
/// class would provision (`None`: not counted).
fn claim_volume(store: &Store, claim: &PersistentVolumeClaim) -> Option<Counted> {
    let pv_name = &claim.spec.volume_name;
    if !pv_name.is_empty()
        && let Some(pv) = store.get::<PersistentVolume>("", pv_name)
    {
        let csi = pv.spec.csi.as_ref()?;
        return Some((
            csi.driver.clone(),
            format!("{}/{}", csi.driver, csi.volume_handle),
        ));
    }
    let class_name = claim_class(claim);
    if class_name.is_empty() {
        return None;
    }
    let class = store.get::<StorageClass>("", &class_name)?;
    let driver = class.provisioner.clone();
    // Upstream uses a random prefix per scheduler; allot a fixed one (deterministic).
    let handle = format!(
        "{driver}/unbound-{}/{}",
        claim.metadata.namespace, claim.metadata.name
    );
    Some((driver, handle))
}

fn all_claims(store: &Store) -> BTreeMap<String, Counted> {
    store
        .list::<PersistentVolumeClaim>()
        .filter_map(|c| {
            let counted = claim_volume(store, c)?;
            Some((
                format!("{}/{}", c.metadata.namespace, c.metadata.name),
                counted,
            ))
        })
        .collect()
}

fn csi_limits(store: &Store) -> BTreeMap<String, BTreeMap<String, i64>> {
    store
        .list::<CSINode>()
        .map(|n| {
            let limits = n
                .spec
                .drivers
                .iter()
                .filter_map(|d| {
                    let count = d.allocatable.as_ref()?.count?;
                    Some((d.name.clone(), i64::from(count)))
                })
                .collect();
            (n.metadata.name.clone(), limits)
        })
        .collect()
}

/// The volumes a placed pod uses (claims that are missing are not counted).
fn pod_counted(pod: &Pod, claims: &BTreeMap<String, Counted>) -> Vec<Counted> {
    pod_claims(pod)
        .into_iter()
        .filter_map(|(name, _)| {
            claims
                .get(&format!("{}/{name}", pod.metadata.namespace))
                .cloned()
        })
        .collect()
}

/// Per driver, `(limit, attached, new)` for the drivers the pod would exceed on `node`.
fn exceeded(state: &State, node: &NodeInfo) -> Vec<(String, i64, usize, usize)> {
    let mut limits: BTreeMap<String, i64> = BTreeMap::new();
    for (key, q) in &node.node.status.allocatable {
        if let Some(driver) = key.strip_prefix(LIMIT_PREFIX) {
            limits.insert(driver.to_string(), q.value());
        }
    }
    if let Some(csi) = state.limits.get(&node.name) {
        for (driver, count) in csi {
            limits.insert(driver.clone(), *count);
        }
    }
    if limits.is_empty() {
        return Vec::new();
    }
    let mut attached: BTreeSet<Counted> = BTreeSet::new();
    for p in &node.pods {
        attached.extend(pod_counted(&p.pod, &state.claims));
    }
    let mut out = Vec::new();
    for (driver, limit) in limits {
        let new = state
            .new
            .iter()
            .filter(|(d, _)| *d == driver)
            .filter(|v| !attached.contains(*v))
            .count();
        if new == 0 {
            continue;
        }
        let have = attached.iter().filter(|(d, _)| *d == driver).count();
        if (have + new) as i64 > limit {
            out.push((driver, limit, have, new));
        }
    }
    out
}

impl PreFilterPlugin for NodeVolumeLimits {
    /// Skip for a pod without claims; a missing claim of the pod is unresolvable.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let all = PreFilterResult::all_nodes;
        let wanted = pod_claims(&pod.pod);
        if wanted.is_empty() {
            return (all(), Status::skip());
        }
        let ns = pod.pod.metadata.namespace.as_str();
        let mut new = BTreeSet::new();
        for (name, how) in wanted {
            let Some(claim) = ctx.store.get::<PersistentVolumeClaim>(ns, &name) else {
                return (
                    all(),
                    Status::unresolvable(format!(
                        "looking up PVC {ns}/{name}: persistentvolumeclaim \"{name}\" not found"
                    )),
                );
            };
            if how == ClaimUse::Ephemeral
                && let Err(e) = ephemeral_claim_for_pod(&pod.pod, claim)
            {
                return (all(), Status::error(e));
            }
            if let Some(v) = claim_volume(ctx.store, claim) {
                new.insert(v);
            }
        }
        if new.is_empty() {
            return (all(), Status::skip());
        }
        state.write(State {
            new,
            claims: Arc::new(all_claims(ctx.store)),
            limits: Arc::new(csi_limits(ctx.store)),
        });
        (all(), Status::success())
    }
}

impl FilterPlugin for NodeVolumeLimits {
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
        if exceeded(s, node).is_empty() {
            Status::success()
        } else {
            Status::unschedulable(REASON)
        }
    }

    /// Per node: the driver, its limit, the volumes attached and the pod's new ones.
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
            let parts: Vec<String> = exceeded(&s, node)
                .into_iter()
                .map(|(d, limit, have, new)| {
                    format!("{d}: limit {limit}, {have} attached, {new} more wanted")
                })
                .collect();
            (!parts.is_empty()).then(|| parts.join("; "))
        })))
    }

    fn cacheable(&self, _state: &CycleState) -> bool {
        false
    }
}
