//! GangScheduling (PreEnqueue, Reserve, Permit): all-or-nothing scheduling of the pods of a
//! `scheduling.k8s.io` PodGroup whose policy is `gang` (KEP-4671, kube-scheduler 1.37's
//! workload-aware scheduling). A pod belongs to a group through `spec.schedulingGroup`.
//!
//! - PreEnqueue keeps a pod out of the queue until its PodGroup exists and at least
//!   `minCount` of the group's pods (neither terminal nor being deleted) exist.
//! - Reserve counts the pod as assumed for its group; Unreserve takes it back.
//! - Permit lets a pod through once `minCount` pods of its group are assumed or bound;
//!   otherwise the pod waits, holding what it reserved, until the group's deadline (the
//!   group's scheduling timeout, upstream's default five minutes, starts with its first
//!   waiting pod and is shared by all). When another pod completes the quorum, the framework
//!   asks the waiting pods again and they bind. At the deadline the framework rejects every
//!   pod still waiting (Unreserve: their claims and node resources are freed), and they go
//!   back to the queue.
//!
//! Key design decision: the plugin keeps only its own bookkeeping (assumed pods and the
//! deadline per group); group membership and PodGroups come from the scheduler's cache, kept
//! from store events, so PreEnqueue is a lookup, not a scan of every pod.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::Pod;
use allot_runtime::SimTime;
use allot_store::{Event, Kind, ObjectKey};

use crate::cache::{Cache, pod_group_key};
use crate::framework::{
    BindCtx, ClusterEvents, CycleState, EnqueueExtensions, PermitPlugin, Plugin, PodInfo,
    PreEnqueuePlugin, ReservePlugin, Status,
};

/// The plugin's name.
pub const NAME: &str = "GangScheduling";
/// Upstream's default scheduling timeout of a pod group (five minutes).
pub const DEFAULT_SCHEDULING_TIMEOUT_SECONDS: u64 = 300;
/// PreEnqueue's message while the group has fewer than `minCount` pods.
pub const WAITING_FOR_PODS: &str =
    "waiting for minCount pods from a gang to appear in scheduling queue";
/// Permit's message while fewer than `minCount` pods are assumed.
pub const WAITING_ON_PERMIT: &str = "waiting for minCount pods from a gang to be waiting on permit";

/// A group's bookkeeping.
#[derive(Debug, Default)]
struct Group {
    /// Pods past Reserve (not unreserved).
    assumed: BTreeSet<ObjectKey>,
    /// When the current attempt to form the gang times out.
    deadline: Option<SimTime>,
}

/// The GangScheduling plugin.
#[derive(Debug)]
pub struct GangScheduling {
    timeout_seconds: u64,
    groups: BTreeMap<(String, String), Group>,
}

impl Default for GangScheduling {
    fn default() -> Self {
        GangScheduling::new(DEFAULT_SCHEDULING_TIMEOUT_SECONDS)
    }
}

impl GangScheduling {
    /// A plugin whose groups time out after `timeout_seconds`.
    pub fn new(timeout_seconds: u64) -> Self {
        GangScheduling {
            timeout_seconds,
            groups: BTreeMap::new(),
        }
    }
}

/// The `minCount` of a pod's group when the group exists and its policy is `gang`.
pub fn gang_min_count(cluster: &Cache, pod: &Pod) -> Option<usize> {
    let (ns, name) = pod_group_key(pod)?;
    let group = cluster.pod_group(&ns, &name)?;
    let gang = group.spec.scheduling_policy.as_ref()?.gang.as_ref()?;
    Some(usize::try_from(gang.min_count).unwrap_or(0))
}

fn pod_key(pod: &Pod) -> ObjectKey {
    ObjectKey::new(
        Kind::Pod,
        pod.metadata.namespace.as_str(),
        pod.metadata.name.as_str(),
    )
}

impl Plugin for GangScheduling {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_enqueue(&mut self) -> Option<&mut dyn PreEnqueuePlugin> {
        Some(self)
    }

    fn as_reserve(&mut self) -> Option<&mut dyn ReservePlugin> {
        Some(self)
    }

    fn as_permit(&mut self) -> Option<&mut dyn PermitPlugin> {
        Some(self)
    }

    fn as_enqueue_extensions(&self) -> Option<&dyn EnqueueExtensions> {
        Some(self)
    }
}

impl PreEnqueuePlugin for GangScheduling {
    fn pre_enqueue(&mut self, cluster: &Cache, pod: &Pod) -> Status {
        let Some((ns, name)) = pod_group_key(pod) else {
            return Status::success();
        };
        if cluster.pod_group(&ns, &name).is_none() {
            return Status::unresolvable(format!(
                "waiting for pod's pod group {name:?} to appear in scheduling queue"
            ));
        }
        let Some(min_count) = gang_min_count(cluster, pod) else {
            return Status::success();
        };
        let pods = cluster.group_members(&ns, &name).map_or(0, BTreeSet::len);
        if pods < min_count {
            return Status::unresolvable(WAITING_FOR_PODS);
        }
        Status::success()
    }
}

impl ReservePlugin for GangScheduling {
    fn reserve(
        &mut self,
        ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) -> Status {
        if let Some(group) = pod_group_key(&pod.pod)
            && gang_min_count(ctx.cluster, &pod.pod).is_some()
        {
            self.groups
                .entry(group)
                .or_default()
                .assumed
                .insert(pod_key(&pod.pod));
        }
        Status::success()
    }

    fn unreserve(
        &mut self,
        _ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) {
        if let Some(group) = pod_group_key(&pod.pod)
            && let Some(g) = self.groups.get_mut(&group)
        {
            g.assumed.remove(&pod_key(&pod.pod));
            if g.assumed.is_empty() && g.deadline.is_none() {
                self.groups.remove(&group);
            }
        }
    }
}

impl PermitPlugin for GangScheduling {
    /// Success once `minCount` pods of the gang are assumed or bound; else `Wait` until the
    /// group's deadline (a new one when there is none or the last one passed).
    fn permit(
        &mut self,
        ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) -> Status {
        let Some(min_count) = gang_min_count(ctx.cluster, &pod.pod) else {
            return Status::success();
        };
        let Some(key) = pod_group_key(&pod.pod) else {
            return Status::success();
        };
        let me = pod_key(&pod.pod);
        let members = ctx.cluster.group_members(&key.0, &key.1);
        let group = self.groups.entry(key).or_default();
        // Pods that left the group (deleted, finished) no longer count.
        group
            .assumed
            .retain(|k| *k == me || members.is_some_and(|m| m.contains(k)));
        let mut ready: BTreeSet<&ObjectKey> = group.assumed.iter().collect();
        if let Some(members) = members {
            ready.extend(
                members
                    .iter()
                    .filter(|k| ctx.cluster.is_assigned_or_assumed(k)),
            );
        }
        if ready.len() >= min_count {
            group.deadline = None;
            return Status::success();
        }
        let deadline = match group.deadline {
            Some(at) if at > ctx.now => at,
            _ => ctx.now.plus_seconds(self.timeout_seconds),
        };
        group.deadline = Some(deadline);
        Status::wait_until_because(deadline, WAITING_ON_PERMIT)
    }
}

impl EnqueueExtensions for GangScheduling {
    /// A new pod of a group, bound or not, may complete the gang.
    fn events(&self) -> ClusterEvents {
        ClusterEvents {
            assigned_pod_added_or_relabelled: true,
            namespace_changed: false,
        }
    }

    fn concerns(&self, _event: &Event) -> bool {
        false
    }
}

/// A duration in milliseconds as Go's `time.Duration` prints it (`5m0s`, `1h0m0s`, `1.5s`).
pub fn go_duration(millis: u64) -> String {
    if millis == 0 {
        return "0s".into();
    }
    if millis < 1000 {
        return format!("{millis}ms");
    }
    let hours = millis / 3_600_000;
    let minutes = millis / 60_000 % 60;
    let ms = millis % 60_000;
    let seconds = if ms.is_multiple_of(1000) {
        format!("{}s", ms / 1000)
    } else {
        let text = format!("{}.{:03}", ms / 1000, ms % 1000);
        format!("{}s", text.trim_end_matches('0'))
    };
    if hours > 0 {
        format!("{hours}h{minutes}m{seconds}")
    } else if minutes > 0 {
        format!("{minutes}m{seconds}")
    } else {
        seconds
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_print_as_go() {
        assert_eq!(go_duration(300_000), "5m0s");
        assert_eq!(go_duration(3_600_000), "1h0m0s");
        assert_eq!(go_duration(90_500), "1m30.5s");
        assert_eq!(go_duration(1_000), "1s");
        assert_eq!(go_duration(250), "250ms");
    }
}
