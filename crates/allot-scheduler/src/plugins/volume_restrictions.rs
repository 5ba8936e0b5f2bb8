//! VolumeRestrictions (PreFilter with AddPod/RemovePod, Filter), as upstream's
//! `volumerestrictions`: the in-tree disks a pod mounts must not be mounted in a conflicting
//! way by a pod already on the node (the same GCE PD unless both mount it read-only, the same
//! AWS EBS volume, the same RBD image (a shared monitor, same pool and image) or iSCSI IQN
//! unless both are read-only), and a ReadWriteOncePod claim may be used by one pod only in the
//! whole cluster.

use std::collections::BTreeSet;

use allot_api::core::v1::PersistentVolumeClaim;

use crate::cache::NodeInfo;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin, Plugin,
    PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, Status, queueing,
};

use super::volume_util::{PodVolume, claim_not_found, is_read_write_once_pod, pod_volumes};

/// The plugin's name.
pub const NAME: &str = "VolumeRestrictions";
/// A disk the pod mounts is mounted in a conflicting way on the node.
pub const REASON_DISK_CONFLICT: &str = "node(s) had no available disk";
/// A ReadWriteOncePod claim of the pod is in use.
pub const REASON_RWOP_CONFLICT: &str =
    "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode";

/// The VolumeRestrictions plugin.
#[derive(Debug, Default)]
pub struct VolumeRestrictions;

/// PreFilter state: the pod's volumes, its ReadWriteOncePod claims and how many times placed
/// pods use them.
#[derive(Debug, Clone)]
struct State {
    volumes: Vec<PodVolume>,
    rwop_claims: BTreeSet<String>,
    conflicts: i64,
    /// The pod's namespace (claims are namespaced).
    namespace: String,
    /// The pods using them (for the explanation).
    users: Vec<String>,
}

impl State {
    fn uses(&self, pod: &PodInfo) -> i64 {
        if pod.pod.metadata.namespace != self.namespace {
            return 0;
        }
        pod_volumes(&pod.pod)
            .iter()
            .filter_map(|v| v.claim(&pod.pod))
            .filter(|(name, _)| self.rwop_claims.contains(name))
            .count() as i64
    }
}

impl Plugin for VolumeRestrictions {
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

impl EnqueueExtensions for VolumeRestrictions {
    /// Pod deletions free disks and claims (every unschedulable pod is retried on those);
    /// claim creations are routed by the scheduler for all volume plugins.
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    /// Upstream's `EventsToRegister` with queueing hints on: a bound pod deleted (its disks
    /// and ReadWriteOncePod claims are free), a node added, a claim added
    /// ([`queueing::STORAGE`]).
    fn requeue_on(&self) -> EventSet {
        queueing::ASSIGNED_POD_DELETED | queueing::NODE_ADDED | queueing::STORAGE
    }
}

/// Whether two pods' volumes conflict (upstream `isVolumeConflict`).
fn conflicts(volume: &PodVolume, existing: &PodVolume) -> bool {
    if let (Some(a), Some(b)) = (&volume.gce_persistent_disk, &existing.gce_persistent_disk)
        && a.pd_name == b.pd_name
        && !(a.read_only && b.read_only)
    {
        return true;
    }
    if let (Some(a), Some(b)) = (
        &volume.aws_elastic_block_store,
        &existing.aws_elastic_block_store,
    ) && a.volume_id == b.volume_id
    {
        return true;
    }
    if let (Some(a), Some(b)) = (&volume.iscsi, &existing.iscsi)
        && a.iqn == b.iqn
        && !(a.read_only && b.read_only)
    {
        return true;
    }
    if let (Some(a), Some(b)) = (&volume.rbd, &existing.rbd) {
        let pool = |p: &Option<String>| p.clone().unwrap_or_else(|| "rbd".into());
        let overlap = a.monitors.iter().any(|m| b.monitors.contains(m));
        if overlap
            && pool(&a.pool) == pool(&b.pool)
            && a.image == b.image
            && !(a.read_only && b.read_only)
        {
            return true;
        }
    }
    false
}

/// The pods on `node` whose disks conflict with `volumes`.
fn disk_conflicts(volumes: &[PodVolume], node: &NodeInfo) -> Vec<String> {
    let mut out = Vec::new();
    for v in volumes.iter().filter(|v| v.needs_restrictions_check()) {
        for other in &node.pods {
            let theirs = pod_volumes(&other.pod);
            if theirs.iter().any(|e| conflicts(v, e)) && !out.contains(&other.key()) {
                out.push(other.key());
            }
        }
    }
    out
}

impl PreFilterPlugin for VolumeRestrictions {
    /// Skip for a pod without in-tree disks and without ReadWriteOncePod claims in use; a
    /// missing claim is unresolvable.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let volumes = pod_volumes(&pod.pod);
        let needs_check = volumes.iter().any(PodVolume::needs_restrictions_check);
        let ns = pod.pod.metadata.namespace.as_str();
        let mut rwop_claims = BTreeSet::new();
        for v in &volumes {
            // Upstream reads only `persistentVolumeClaim` sources here.
            let Some((name, super::volume_util::ClaimUse::Named)) = v.claim(&pod.pod) else {
                continue;
            };
            let Some(claim) = ctx.store.get::<PersistentVolumeClaim>(ns, &name) else {
                return (
                    PreFilterResult::all_nodes(),
                    Status::unresolvable(claim_not_found(&name)),
                );
            };
            if is_read_write_once_pod(claim) {
                rwop_claims.insert(name);
            }
        }
        // Upstream `IsPVCUsedByPods`: at most one placed pod may use each such claim.
        let mut conflicts = 0;
        let mut users = Vec::new();
        if !rwop_claims.is_empty() {
            for claim in &rwop_claims {
                let user = ctx.cluster.nodes_in_order().find_map(|n| {
                    n.pods.iter().find(|p| {
                        p.pod.metadata.namespace == ns
                            && pod_volumes(&p.pod)
                                .iter()
                                .filter_map(|v| v.claim(&p.pod))
                                .any(|(c, _)| &c == claim)
                    })
                });
                if let Some(user) = user {
                    conflicts += 1;
                    users.push(format!("{} uses {claim}", user.key()));
                }
            }
        }
        if !needs_check && conflicts == 0 {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        state.write(State {
            volumes,
            rwop_claims,
            conflicts,
            namespace: ns.to_string(),
            users,
        });
        (PreFilterResult::all_nodes(), Status::success())
    }

    fn add_pod(
        &mut self,
        state: &mut CycleState,
        _pod: &PodInfo,
        added: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            s.conflicts += s.uses(added);
        }
        Status::success()
    }

    fn remove_pod(
        &mut self,
        state: &mut CycleState,
        _pod: &PodInfo,
        removed: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            s.conflicts -= s.uses(removed);
        }
        Status::success()
    }
}

impl FilterPlugin for VolumeRestrictions {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read::<State>() else {
            let volumes = pod_volumes(&pod.pod);
            if !disk_conflicts(&volumes, node).is_empty() {
                return Status::unschedulable(REASON_DISK_CONFLICT);
            }
            return Status::success();
        };
        if !disk_conflicts(&s.volumes, node).is_empty() {
            return Status::unschedulable(REASON_DISK_CONFLICT);
        }
        if s.conflicts > 0 {
            return Status::unschedulable(REASON_RWOP_CONFLICT);
        }
        Status::success()
    }

    /// Per node, the pods whose disks conflict, or the pods using the ReadWriteOncePod claims.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let (volumes, users) = match state.read::<State>() {
            Some(s) => (s.volumes.clone(), s.users.clone()),
            None => (pod_volumes(&pod.pod), Vec::new()),
        };
        Ok(Some(Explanation::grouped(
            NAME,
            rejected,
            |node, reason| {
                if reason == REASON_DISK_CONFLICT {
                    Some(format!(
                        "disks mounted by {}",
                        disk_conflicts(&volumes, node).join(", ")
                    ))
                } else {
                    (!users.is_empty()).then(|| users.join(", "))
                }
            },
        )))
    }

    fn cacheable(&self, _state: &CycleState) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::volume_util::{AwsEbs, GcePd, Iscsi, Rbd};

    fn vol() -> PodVolume {
        PodVolume::default()
    }

    #[test]
    fn disk_conflicts_follow_upstream() {
        let gce = |name: &str, ro: bool| PodVolume {
            gce_persistent_disk: Some(GcePd {
                pd_name: name.into(),
                read_only: ro,
            }),
            ..vol()
        };
        assert!(conflicts(&gce("a", false), &gce("a", true)));
        assert!(!conflicts(&gce("a", true), &gce("a", true)));
        assert!(!conflicts(&gce("a", false), &gce("b", false)));
        let ebs = |id: &str| PodVolume {
            aws_elastic_block_store: Some(AwsEbs {
                volume_id: id.into(),
            }),
            ..vol()
        };
        assert!(conflicts(&ebs("x"), &ebs("x")));
        let rbd = |mons: &[&str], ro: bool| PodVolume {
            rbd: Some(Rbd {
                monitors: mons.iter().map(|s| s.to_string()).collect(),
                pool: None,
                image: "img".into(),
                read_only: ro,
            }),
            ..vol()
        };
        assert!(conflicts(
            &rbd(&["a", "b"], false),
            &rbd(&["b", "c"], false)
        ));
        assert!(!conflicts(&rbd(&["a"], false), &rbd(&["c"], false)));
        assert!(!conflicts(&rbd(&["a"], true), &rbd(&["a"], true)));
        let iscsi = |iqn: &str, ro: bool| PodVolume {
            iscsi: Some(Iscsi {
                iqn: iqn.into(),
                read_only: ro,
            }),
            ..vol()
        };
        assert!(conflicts(&iscsi("q", true), &iscsi("q", false)));
        assert!(!conflicts(&iscsi("q", true), &iscsi("q", true)));
    }
}
