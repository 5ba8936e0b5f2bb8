//! VolumeZone (PreFilter, Filter), as upstream's `volumezone`: the zone and region labels of
//! the PersistentVolumes bound to a pod's claims must match the node's (a node without any
//! such label takes every volume; the beta `failure-domain.beta.kubernetes.io/*` labels match
//! their GA `topology.kubernetes.io/*` counterparts on the node; a label value may list
//! several zones separated by `__`). Claims of a WaitForFirstConsumer class that are not
//! bound yet are left to VolumeBinding.

use std::collections::BTreeSet;

use allot_api::core::v1::{PersistentVolume, PersistentVolumeClaim};
use allot_api::storage::v1::StorageClass;

use crate::cache::NodeInfo;
use crate::framework::{
    ClusterEvents, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation, FilterPlugin, Plugin,
    PodInfo, PreFilterCtx, PreFilterPlugin, PreFilterResult, Status, queueing,
};

use super::volume_util::{ClaimUse, claim_class, claim_not_found, pod_volumes};

/// The plugin's name.
pub const NAME: &str = "VolumeZone";
/// A volume's zone or region is not the node's.
pub const REASON: &str = "node(s) had no available volume zone";

const BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
const BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
const ZONE: &str = "topology.kubernetes.io/zone";
const REGION: &str = "topology.kubernetes.io/region";
/// The labels compared, in upstream's order.
const TOPOLOGY_LABELS: [&str; 4] = [BETA_ZONE, BETA_REGION, ZONE, REGION];

/// The VolumeZone plugin.
#[derive(Debug, Default)]
pub struct VolumeZone;

/// One topology label of a bound volume.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PvTopology {
    pv: String,
    key: &'static str,
    values: BTreeSet<String>,
}

/// PreFilter state.
#[derive(Debug, Clone)]
struct State(Vec<PvTopology>);

impl Plugin for VolumeZone {
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

impl EnqueueExtensions for VolumeZone {
    /// Node, claim, volume and class events are routed by the scheduler for all volume plugins.
    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    /// Upstream's `EventsToRegister` with queueing hints on: a StorageClass added, claims
    /// and volumes added or updated ([`queueing::STORAGE`]), a node added or relabelled (its
    /// zone and region labels).
    fn requeue_on(&self) -> EventSet {
        queueing::STORAGE | queueing::NODE_ADDED | queueing::NODE_LABEL
    }
}

/// Upstream `LabelZonesToSet`: `a__b` is the set {a, b}; an empty part makes the label
/// unusable (`None`: ignored).
fn zones(value: &str) -> Option<BTreeSet<String>> {
    let mut out = BTreeSet::new();
    for part in value.split("__") {
        let part = part.trim();
        if part.is_empty() {
            return None;
        }
        out.insert(part.to_string());
    }
    Some(out)
}

fn topologies(pv: &PersistentVolume) -> Vec<PvTopology> {
    TOPOLOGY_LABELS
        .iter()
        .filter_map(|key| {
            let value = pv.metadata.labels.get(*key)?;
            Some(PvTopology {
                pv: pv.metadata.name.clone(),
                key,
                values: zones(value)?,
            })
        })
        .collect()
}

fn ga(label: &str) -> &str {
    match label {
        BETA_ZONE => ZONE,
        BETA_REGION => REGION,
        other => other,
    }
}

/// The first volume topology the node does not match.
fn mismatch<'a>(topologies: &'a [PvTopology], node: &NodeInfo) -> Option<&'a PvTopology> {
    let labels = node.labels();
    if !TOPOLOGY_LABELS.iter().any(|l| labels.contains_key(*l)) {
        return None;
    }
    topologies.iter().find(|t| {
        let value = labels.get(t.key).or_else(|| labels.get(ga(t.key)));
        value.is_none_or(|v| !t.values.contains(v))
    })
}

impl PreFilterPlugin for VolumeZone {
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let all = PreFilterResult::all_nodes;
        let ns = pod.pod.metadata.namespace.as_str();
        let mut found = Vec::new();
        for v in pod_volumes(&pod.pod) {
            // Upstream reads `persistentVolumeClaim` sources only.
            let Some((name, ClaimUse::Named)) = v.claim(&pod.pod) else {
                continue;
            };
            if name.is_empty() {
                return (
                    all(),
                    Status::unresolvable("PersistentVolumeClaim had no name"),
                );
            }
            let Some(claim) = ctx.store.get::<PersistentVolumeClaim>(ns, &name) else {
                return (all(), Status::unresolvable(claim_not_found(&name)));
            };
            let pv_name = claim.spec.volume_name.clone();
            if pv_name.is_empty() {
                let class_name = claim_class(claim);
                if class_name.is_empty() {
                    return (
                        all(),
                        Status::unresolvable(
                            "PersistentVolumeClaim had no pv name and storageClass name",
                        ),
                    );
                }
                let Some(class) = ctx.store.get::<StorageClass>("", &class_name) else {
                    return (
                        all(),
                        Status::unresolvable(format!(
                            "storageclass.storage.k8s.io \"{class_name}\" not found"
                        )),
                    );
                };
                match class.volume_binding_mode {
                    None => {
                        return (
                            all(),
                            Status::unresolvable(format!(
                                "VolumeBindingMode not set for StorageClass \"{class_name}\""
                            )),
                        );
                    }
                    Some(allot_api::storage::v1::VolumeBindingMode::WaitForFirstConsumer) => {
                        continue;
                    }
                    Some(_) => {
                        return (all(), Status::unresolvable("PersistentVolume had no name"));
                    }
                }
            }
            let Some(pv) = ctx.store.get::<PersistentVolume>("", &pv_name) else {
                return (
                    all(),
                    Status::unresolvable(format!("persistentvolume \"{pv_name}\" not found")),
                );
            };
            found.extend(topologies(pv));
        }
        if found.is_empty() {
            return (all(), Status::skip());
        }
        state.write(State(found));
        (all(), Status::success())
    }
}

impl FilterPlugin for VolumeZone {
    fn filter(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(State(t)) = state.read::<State>() else {
            return Status::success();
        };
        match mismatch(t, node) {
            Some(_) => Status::unresolvable(REASON),
            None => Status::success(),
        }
    }

    /// Per node: the volume and label that do not match.
    fn explain(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let t = state
            .read::<State>()
            .map(|s| s.0.clone())
            .unwrap_or_default();
        Ok(Some(Explanation::grouped(NAME, rejected, |node, _| {
            let m = mismatch(&t, node)?;
            let have = node
                .labels()
                .get(m.key)
                .or_else(|| node.labels().get(ga(m.key)))
                .map(String::as_str)
                .unwrap_or("(none)");
            let want: Vec<&str> = m.values.iter().map(String::as_str).collect();
            Some(format!(
                "PersistentVolume {} has {}={}, node has {have}",
                m.pv,
                m.key,
                want.join("__")
            ))
        })))
    }

    fn cacheable(&self, _state: &CycleState) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zone_sets_split_on_double_underscore() {
        assert_eq!(
            zones("a__b").unwrap(),
            ["a".to_string(), "b".to_string()].into()
        );
        assert!(zones("a____b").is_none());
    }
}
