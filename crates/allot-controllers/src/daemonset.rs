//! The DaemonSet controller (upstream `pkg/controller/daemon`).
//!
//! One pod per eligible node, placed by the scheduler as upstream has done since 1.12: the
//! controller creates the pod without `nodeName` but with a required node affinity on
//! `metadata.name` for its node (replacing the `matchFields` of every term of the template's
//! affinity), and with the default DaemonSet tolerations (`not-ready` and `unreachable`
//! NoExecute; `disk-pressure`, `memory-pressure`, `pid-pressure` and `unschedulable`
//! NoSchedule; `network-unavailable` NoSchedule for host-network pods). A node is eligible when
//! the template's `nodeName` (if any) is the node, its node selector and required affinity
//! match, and every NoSchedule and NoExecute taint is tolerated; a pod already running stays on
//! a node that only gained a NoSchedule taint. Failed daemon pods are deleted (and made again);
//! surplus pods on a node, and pods on nodes no longer eligible, are deleted. A `RollingUpdate`
//! replaces pods of an older revision up to `maxUnavailable` at a time (or, with `maxSurge`,
//! starts the new pod first). The status counts desired, current, misscheduled, ready,
//! available, updated and unavailable.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::apps::v1::{DaemonSet, DaemonSetStatus, DaemonSetUpdateStrategyType};
use allot_api::core::v1::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PodSpec, TaintEffect, Toleration, TolerationOperator,
};
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, Kind, ObjectKey, Store, Stored};

use crate::events::{self, EventKind, Source};
use crate::history::{REVISION_LABEL, ensure_revision, truncate};
use crate::workload::{
    self, available_at, controlled, controller_key, earliest, fits_node_affinity, is_available,
    is_ready, is_terminating, owned_pod, pods_prefix, reconciled, requeue_at, scaled_value,
    untolerated_taint,
};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "daemonset-controller";
/// The deprecated label with the DaemonSet's generation a pod was made for.
pub const TEMPLATE_GENERATION_LABEL: &str = "pod-template-generation";

/// The DaemonSet controller.
#[derive(Debug, Default)]
pub struct DaemonSetController;

impl DaemonSetController {
    /// A controller.
    pub fn new() -> Self {
        DaemonSetController
    }
}

impl Controller for DaemonSetController {
    fn name(&self) -> &'static str {
        "daemonset-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::DaemonSet(_) => vec![event.key.clone()],
            Stored::Pod(pod) => {
                controller_key(&pod.metadata, &event.key.namespace, Kind::DaemonSet)
                    .into_iter()
                    .collect()
            }
            // A node that comes, goes or changes labels or taints concerns every DaemonSet.
            Stored::Node(_) => store.list::<DaemonSet>().map(Store::key_of).collect(),
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::DaemonSet));
        subscriptions.add(Topic::Kind(Kind::Pod));
        subscriptions.add(Topic::Kind(Kind::Node));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(ds) = reconciled::<DaemonSet>(store, key) else {
            return Ok(Action::Done);
        };
        sync(store, &ds, ctx.now)
    }
}

/// The tolerations every daemon pod gets (upstream's `AddOrUpdateDaemonPodTolerations`).
pub fn default_tolerations(host_network: bool) -> Vec<Toleration> {
    let mut list = vec![
        ("node.kubernetes.io/not-ready", TaintEffect::NoExecute),
        ("node.kubernetes.io/unreachable", TaintEffect::NoExecute),
        ("node.kubernetes.io/disk-pressure", TaintEffect::NoSchedule),
        (
            "node.kubernetes.io/memory-pressure",
            TaintEffect::NoSchedule,
        ),
        ("node.kubernetes.io/pid-pressure", TaintEffect::NoSchedule),
        ("node.kubernetes.io/unschedulable", TaintEffect::NoSchedule),
    ];
    if host_network {
        list.push((
            "node.kubernetes.io/network-unavailable",
            TaintEffect::NoSchedule,
        ));
    }
    list.into_iter()
        .map(|(key, effect)| Toleration {
            key: key.into(),
            operator: Some(TolerationOperator::Exists),
            value: String::new(),
            effect: Some(effect),
            toleration_seconds: None,
        })
        .collect()
}

fn host_network(spec: &PodSpec) -> bool {
    spec.host_network
        .as_ref()
        .and_then(|v| v.as_bool())
        .unwrap_or(false)
}

/// The template's tolerations with the defaults added (an existing toleration of the same key
/// and effect is replaced, as upstream's `AddOrUpdateTolerationInPodSpec`).
fn tolerations_with_defaults(spec: &PodSpec) -> Vec<Toleration> {
    let mut list = spec.tolerations.clone();
    for t in default_tolerations(host_network(spec)) {
        list.retain(|x| !(x.key == t.key && x.effect == t.effect));
        list.push(t);
    }
    list
}

/// Whether the DaemonSet should run on the node, and whether a pod already there may stay
/// (upstream's `NodeShouldRunDaemonPod`).
pub fn should_run(spec: &PodSpec, node: &Node) -> (bool, bool) {
    if spec
        .node_name
        .as_deref()
        .is_some_and(|n| !n.is_empty() && n != node.metadata.name)
    {
        return (false, false);
    }
    if !fits_node_affinity(spec, node) {
        return (false, false);
    }
    let tolerations = tolerations_with_defaults(spec);
    if untolerated_taint(&tolerations, node, &[TaintEffect::NoExecute]).is_some() {
        return (false, false);
    }
    let schedulable = untolerated_taint(&tolerations, node, &[TaintEffect::NoSchedule]).is_none();
    (schedulable, true)
}

/// The node a daemon pod is for: `nodeName`, else its required `metadata.name` affinity
/// (upstream's `GetTargetNodeName`).
pub fn target_node(pod: &Pod) -> Option<String> {
    if let Some(n) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
        return Some(n.to_string());
    }
    let selector = pod
        .spec
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?;
    selector.node_selector_terms.iter().find_map(|t| {
        t.match_fields
            .iter()
            .find(|r| {
                r.key == "metadata.name"
                    && r.operator == NodeSelectorOperator::In
                    && r.values.len() == 1
            })
            .map(|r| r.values[0].clone())
    })
}

/// The template's affinity with the node's `metadata.name` requirement in every term
/// (upstream's `ReplaceDaemonSetPodNodeNameNodeAffinity`).
fn node_name_affinity(affinity: Option<Affinity>, node: &str) -> Affinity {
    let requirement = NodeSelectorRequirement {
        key: "metadata.name".into(),
        operator: NodeSelectorOperator::In,
        values: vec![node.to_string()],
    };
    let mut affinity = affinity.unwrap_or_default();
    let node_affinity = affinity
        .node_affinity
        .get_or_insert_with(NodeAffinity::default);
    let selector = node_affinity
        .required_during_scheduling_ignored_during_execution
        .get_or_insert_with(NodeSelector::default);
    if selector.node_selector_terms.is_empty() {
        selector
            .node_selector_terms
            .push(NodeSelectorTerm::default());
    }
    for term in &mut selector.node_selector_terms {
        term.match_fields = vec![requirement.clone()];
    }
    affinity
}

/// The pods of the DaemonSet by the node they are for.
fn pods_by_node(store: &Store, ds: &DaemonSet) -> BTreeMap<String, Vec<Pod>> {
    let mut out: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    for pod in controlled::<Pod>(store, &ds.metadata.uid) {
        if let Some(node) = target_node(pod) {
            out.entry(node).or_default().push(pod.clone());
        }
    }
    for pods in out.values_mut() {
        pods.sort_by(|a, b| {
            a.metadata
                .creation_timestamp
                .cmp(&b.metadata.creation_timestamp)
                .then_with(|| a.metadata.uid.cmp(&b.metadata.uid))
        });
    }
    out
}

fn revision_of(pod: &Pod) -> &str {
    pod.metadata
        .labels
        .get(REVISION_LABEL)
        .map_or("", String::as_str)
}

fn sync(store: &mut Store, ds: &DaemonSet, now: SimTime) -> Result<Action, String> {
    let selector_labels = ds
        .spec
        .selector
        .as_ref()
        .map(|s| s.match_labels.clone())
        .unwrap_or_default();
    let revision = ensure_revision(
        store,
        Kind::DaemonSet,
        &ds.metadata,
        &ds.spec.template,
        &selector_labels,
        ds.status.collision_count,
        now,
    )?;
    let nodes: Vec<Node> = store.list::<Node>().cloned().collect();
    let mut next = None;
    if ds.metadata.deletion_timestamp.is_none() {
        next = manage(store, ds, &nodes, &revision, now)?;
    }
    let by_node = pods_by_node(store, ds);
    let mut status = DaemonSetStatus {
        observed_generation: ds.metadata.generation.unwrap_or(0),
        collision_count: ds.status.collision_count,
        conditions: ds.status.conditions.clone(),
        ..DaemonSetStatus::default()
    };
    for node in &nodes {
        let (run, _) = should_run(&ds.spec.template.spec, node);
        let pods = by_node.get(&node.metadata.name);
        let pod = pods.and_then(|p| p.iter().find(|p| !is_terminating(p)));
        if run {
            status.desired_number_scheduled += 1;
            if let Some(pod) = pod {
                status.current_number_scheduled += 1;
                if is_ready(pod) {
                    status.number_ready += 1;
                    if is_available(pod, ds.spec.min_ready_seconds, now) {
                        status.number_available += 1;
                    }
                    next = earliest(next, available_at(pod, ds.spec.min_ready_seconds, now));
                }
                if revision_of(pod) == revision {
                    status.updated_number_scheduled += 1;
                }
            }
        } else if pod.is_some() {
            status.number_misscheduled += 1;
        }
    }
    status.number_unavailable = status.desired_number_scheduled - status.number_available;
    if status != ds.status {
        store
            .modify::<DaemonSet, _>(&ds.metadata.namespace, &ds.metadata.name, |d| {
                d.status = status.clone()
            })
            .map_err(|e| e.to_string())?;
    }
    let live: BTreeSet<String> = by_node
        .values()
        .flatten()
        .map(|p| revision_of(p).to_string())
        .chain([revision])
        .collect();
    truncate(
        store,
        &ds.metadata,
        &live,
        ds.spec.revision_history_limit.unwrap_or(10),
    )?;
    Ok(requeue_at(next, now))
}

/// Creates and deletes daemon pods node by node, then rolls pods of older revisions.
fn manage(
    store: &mut Store,
    ds: &DaemonSet,
    nodes: &[Node],
    revision: &str,
    now: SimTime,
) -> Result<Option<SimTime>, String> {
    let by_node = pods_by_node(store, ds);
    let involved = events::reference(ds);
    let source = Source::component(COMPONENT);
    let mut create: Vec<&str> = Vec::new();
    let mut delete: Vec<Pod> = Vec::new();
    for node in nodes {
        let name = node.metadata.name.as_str();
        let (run, stay) = should_run(&ds.spec.template.spec, node);
        let pods: Vec<&Pod> = by_node
            .get(name)
            .map(|p| p.iter().filter(|p| !is_terminating(p)).collect())
            .unwrap_or_default();
        if run && pods.is_empty() {
            create.push(name);
        } else if stay && !pods.is_empty() {
            let mut keep = Vec::new();
            for pod in pods {
                if pod.status.phase.as_deref() == Some("Failed") {
                    events::record(
                        store,
                        now,
                        &involved,
                        EventKind::Warning,
                        "FailedDaemonPod",
                        &format!(
                            "Found failed daemon pod {}/{} on node {name}, will try to kill it",
                            pod.metadata.namespace, pod.metadata.name
                        ),
                        source,
                    )?;
                    delete.push(pod.clone());
                } else {
                    keep.push(pod);
                }
            }
            // More than one pod on the node: the oldest stays (upstream keeps the oldest
            // running one).
            delete.extend(keep.iter().skip(1).map(|p| (*p).clone()));
        } else if !stay {
            delete.extend(pods.into_iter().cloned());
        }
    }
    for pod in &delete {
        crate::workload::delete_object(store, &Store::key_of(pod), now)?;
        events::record(
            store,
            now,
            &involved,
            EventKind::Normal,
            "SuccessfulDelete",
            &format!("Deleted pod: {}", pod.metadata.name),
            source,
        )?;
    }
    for node in create {
        create_pod(store, ds, node, revision, now)?;
    }
    if ds.spec.update_strategy.type_ == Some(DaemonSetUpdateStrategyType::OnDelete) {
        return Ok(None);
    }
    rolling_update(store, ds, nodes, revision, now)
}

fn create_pod(
    store: &mut Store,
    ds: &DaemonSet,
    node: &str,
    revision: &str,
    now: SimTime,
) -> Result<(), String> {
    let mut pod = owned_pod(
        Kind::DaemonSet,
        &ds.metadata,
        &ds.spec.template,
        &pods_prefix(&ds.metadata.name),
    );
    pod.metadata
        .labels
        .insert(REVISION_LABEL.into(), revision.to_string());
    pod.metadata.labels.insert(
        TEMPLATE_GENERATION_LABEL.into(),
        ds.metadata.generation.unwrap_or(1).to_string(),
    );
    pod.spec.tolerations = tolerations_with_defaults(&pod.spec);
    pod.spec.affinity = Some(node_name_affinity(pod.spec.affinity.take(), node));
    let involved = events::reference(ds);
    workload::create_pod(store, now, &involved, Source::component(COMPONENT), pod).map(drop)
}

/// Replaces pods of older revisions: with `maxSurge` the new pod first (the old one goes once
/// the new one is available), else the old one first, within `maxUnavailable`.
fn rolling_update(
    store: &mut Store,
    ds: &DaemonSet,
    nodes: &[Node],
    revision: &str,
    now: SimTime,
) -> Result<Option<SimTime>, String> {
    let by_node = pods_by_node(store, ds);
    let desired: Vec<&Node> = nodes
        .iter()
        .filter(|n| should_run(&ds.spec.template.spec, n).0)
        .collect();
    let total = desired.len() as i32;
    let rolling = ds.spec.update_strategy.rolling_update.as_ref();
    let surge = scaled_value(rolling.and_then(|r| r.max_surge.as_ref()), total, true);
    let mut max_unavailable = scaled_value(
        rolling.and_then(|r| r.max_unavailable.as_ref()),
        total,
        true,
    );
    if surge == 0 && max_unavailable == 0 {
        max_unavailable = 1;
    }
    let min_ready = ds.spec.min_ready_seconds;
    let mut unavailable = 0;
    let mut old_pods: Vec<(&str, &Pod)> = Vec::new();
    let mut next = None;
    for node in &desired {
        let pods: Vec<&Pod> = by_node
            .get(&node.metadata.name)
            .map(|p| p.iter().filter(|p| !is_terminating(p)).collect())
            .unwrap_or_default();
        let new = pods.iter().find(|p| revision_of(p) == revision);
        let old = pods.iter().find(|p| revision_of(p) != revision);
        match (old, new) {
            (Some(old), Some(new)) => {
                // Surge: the old pod goes once the new one is available.
                if is_available(new, min_ready, now) {
                    delete_old(store, ds, old, now)?;
                } else {
                    next = earliest(next, available_at(new, min_ready, now));
                }
            }
            (Some(old), None) => {
                if !is_available(old, min_ready, now) {
                    unavailable += 1;
                }
                old_pods.push((node.metadata.name.as_str(), old));
            }
            (None, Some(new)) => {
                if !is_available(new, min_ready, now) {
                    unavailable += 1;
                }
            }
            (None, None) => unavailable += 1,
        }
    }
    if surge > 0 {
        for (node, _) in old_pods.iter().take(surge as usize) {
            create_pod(store, ds, node, revision, now)?;
        }
        return Ok(next);
    }
    // Unavailable old pods first: replacing them costs no availability.
    old_pods.sort_by_key(|(node, p)| (is_available(p, min_ready, now), *node));
    let mut budget = max_unavailable - unavailable;
    for (_, pod) in old_pods {
        let available = is_available(pod, min_ready, now);
        if available && budget <= 0 {
            break;
        }
        delete_old(store, ds, pod, now)?;
        if available {
            budget -= 1;
        }
    }
    Ok(next)
}

fn delete_old(store: &mut Store, ds: &DaemonSet, pod: &Pod, now: SimTime) -> Result<(), String> {
    crate::workload::delete_object(store, &Store::key_of(pod), now)?;
    events::record(
        store,
        now,
        &events::reference(ds),
        EventKind::Normal,
        "SuccessfulDelete",
        &format!("Deleted pod: {}", pod.metadata.name),
        Source::component(COMPONENT),
    )
}

#[cfg(test)]
mod tests;
