//! kube-scheduler as one reconcile loop over allot's store: queue, filters, the DRA plugin,
//! scoring, reserve, binding conditions (PreBind), bind, and `PodScheduled=False` conditions
//! that say why.
//!
//! Key design decision: the expensive DRA allocator runs on as few nodes as possible. A pod is
//! first checked against every node with cheap filters (NodeUnschedulable, NodeName,
//! TaintToleration, NodeAffinity, NodeResourcesFit, the node selectors of already allocated
//! claims, and an upper bound of free devices kept per pool from store events), in upstream's
//! rotating order until `percentageOfNodesToScore` worth of feasible nodes is found. Those are
//! scored, and the allocator runs on them best first until one fits; only pods with
//! prioritized lists run it on every candidate, because their score depends on the
//! subrequests it picks. A node the allocator rejects counts as "cannot allocate all claims"
//! exactly as upstream's Filter would have reported, so the outcome (which node, or why none)
//! is upstream's whenever the best-scored feasible node is the same; ties are broken by node
//! name instead of at random. The cost: the per-node "feasible" count that bounds the scan
//! is taken before the allocator runs, so on clusters where many cheaply-feasible nodes lack
//! devices the scan may look at more nodes than upstream before giving up.
//!
//! PreBind waiting for binding conditions is kept in memory (pod → node and deadline); a
//! reconcile after the deadline, or after a claim reports a binding failure condition, undoes
//! the reservation and allocation and schedules again, preferring other nodes.

#![deny(missing_docs)]

mod cache;
pub mod extended;
pub mod filters;
pub mod nodealloc;
pub mod resources;

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Pod, PodCondition};
use allot_api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice,
};
use allot_api::scheduling::v1beta1::PodGroup;
use allot_dra::{AllocationInput, CelCache, Explanation, Features, Outcome};
use allot_runtime::{Action, Context, Controller, SimTime};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, StoreError, Stored};

pub use cache::{is_assigned, is_terminal};

use crate::cache::Cache;
use crate::filters::{REASON_CANNOT_ALLOCATE, REASON_CLAIM_NOT_AVAILABLE};
use crate::resources::{pod_non_zero_requests_with, pod_requests};

/// The name pods use in `spec.schedulerName` for this scheduler.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";
/// Upstream's limit of `status.reservedFor` entries.
pub const RESERVED_FOR_MAX: usize = 256;
/// Upstream's `FirstAvailableDeviceRequestMaxSize`, the base of the prioritized-list score.
const FIRST_AVAILABLE_MAX: i64 = 8;
/// The finalizer the scheduler puts on claims it allocates.
const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// `PodScheduled` reason of a pod no node fits (upstream's `v1.PodReasonUnschedulable`).
const POD_UNSCHEDULABLE: &str = "Unschedulable";
/// `PodScheduled` reason of a pod whose scheduling attempt failed with an error
/// (upstream's `v1.PodReasonSchedulerError`).
const POD_SCHEDULER_ERROR: &str = "SchedulerError";

/// How the scheduler behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchedulerConfig {
    /// DRA feature gates.
    pub features: Features,
    /// How long PreBind waits for binding conditions (upstream's DynamicResources
    /// `bindingTimeout`, default 600 seconds).
    pub binding_timeout_seconds: u64,
    /// Percentage of nodes to find feasible before scoring; 0 means upstream's adaptive
    /// default (50% minus 1% per 125 nodes, at least 5%, at least 100 nodes).
    pub percentage_of_nodes_to_score: u32,
    /// The `spec.schedulerName` this scheduler serves (an empty name also matches).
    pub scheduler_name: String,
    /// DRAExtendedResource: extended resources served by DeviceClasses ([`extended`]).
    pub extended_resource: bool,
    /// DRANodeAllocatableResources: devices consuming node resources ([`nodealloc`]).
    pub node_allocatable_resources: bool,
    /// The allocator's budget per node and attempt, allot's counterpart of upstream's
    /// DynamicResources `filterTimeout` (counted in search steps, not time).
    pub allocation_budget: allot_dra::Budget,
}

impl Default for SchedulerConfig {
    fn default() -> Self {
        SchedulerConfig {
            features: Features::default(),
            binding_timeout_seconds: 600,
            percentage_of_nodes_to_score: 0,
            scheduler_name: DEFAULT_SCHEDULER_NAME.to_string(),
            extended_resource: true,
            node_allocatable_resources: true,
            allocation_budget: allot_dra::Budget::default(),
        }
    }
}

/// Why a scheduling step failed for a reason other than "does not fit".
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SchedulerError {
    /// A store write failed.
    #[error("{action} {key}: {source}")]
    Store {
        /// What the scheduler was doing.
        action: &'static str,
        /// The object.
        key: String,
        /// The store's answer.
        source: Box<StoreError>,
    },
}

/// A pod waiting in PreBind for its devices' binding conditions.
#[derive(Debug, Clone)]
struct Waiting {
    node: String,
    deadline: SimTime,
}

/// One claim of the pod, resolved.
#[derive(Debug, Clone)]
struct PodClaim {
    /// `pod.spec.resourceClaims[].name`.
    entry: String,
    /// The claim (shared with the store).
    claim: std::sync::Arc<ResourceClaim>,
    /// The PodGroup to reserve for instead of the pod.
    group: Option<(String, String)>,
}

/// Why a node filter rejected a node (before the DynamicResources allocation).
enum Rejected {
    /// Counted under a fixed reason.
    Reason(&'static str),
    /// Counted under its own text (a taint the pod does not tolerate).
    Text(String),
    /// Counted once per text (insufficient resources).
    Texts(Vec<String>),
}

impl Rejected {
    fn count(
        self,
        reasons: &mut BTreeMap<&'static str, usize>,
        taint_reasons: &mut BTreeMap<String, usize>,
    ) {
        match self {
            Rejected::Reason(reason) => *reasons.entry(reason).or_insert(0) += 1,
            Rejected::Text(reason) => *taint_reasons.entry(reason).or_insert(0) += 1,
            Rejected::Texts(list) => {
                for reason in list {
                    *taint_reasons.entry(reason).or_insert(0) += 1;
                }
            }
        }
    }
}

/// The filters before DynamicResources, in upstream's order (NodeUnschedulable, NodeName,
/// TaintToleration, NodeAffinity, NodeResourcesFit, then claims allocated for other nodes):
/// the first that rejects the node, or `None` when it passes them all.
fn filter_node(
    pod: &Pod,
    state: &cache::NodeState,
    request: &resources::Resources,
    check_affinity: bool,
    claims: &[PodClaim],
    extras: &Extras<'_>,
) -> Option<Rejected> {
    let node = &state.node;
    if filters::node_unschedulable(pod, node).is_some() {
        return Some(Rejected::Reason(filters::REASON_UNSCHEDULABLE));
    }
    if filters::node_name(pod, node).is_some() {
        return Some(Rejected::Reason(filters::REASON_NODE_NAME));
    }
    if !node.spec.taints.is_empty()
        && let Some(reason) = filters::taint_toleration(pod, node)
    {
        return Some(Rejected::Text(reason));
    }
    if check_affinity && filters::node_affinity(pod, node).is_some() {
        return Some(Rejected::Reason(filters::REASON_AFFINITY));
    }
    let fits = request.scalar.is_empty()
        && filters::fits_plain(request, &state.allocatable, &state.requested, state.pods);
    if !fits {
        let fit = filters::resources_fit(
            request,
            &state.allocatable,
            &state.requested,
            state.pods,
            &|name| extras.delegated(&state.allocatable, name),
        );
        if !fit.is_empty() {
            return Some(Rejected::Texts(fit));
        }
    }
    let claim_elsewhere = claims.iter().any(|pc| {
        pc.claim
            .status
            .allocation
            .as_ref()
            .and_then(|a| a.node_selector.as_ref())
            .is_some_and(|sel| !filters::selector_matches(node, sel))
    });
    claim_elsewhere.then_some(Rejected::Reason(REASON_CLAIM_NOT_AVAILABLE))
}

/// The fast path's verdict on a node for a pod whose only node-dependent filters are the
/// free-device bound (without extended resources) and NodeResourcesFit without scalar
/// resources (`plain_request` is its CPU, memory and ephemeral storage): `Some(false)` when
/// the bound rejects the node, `Some(true)` when the node passes every filter before
/// DynamicResources, `None` when it takes [`filter_node`] to say (the node is unschedulable,
/// tainted or short of resources, or the slot is empty).
#[inline]
fn fast_verdict(
    summary: &cache::NodeSummary,
    plain_request: &[i64; 3],
    check_bound: bool,
    needed_devices: usize,
) -> Option<bool> {
    // `free` is UNBOUNDED for nodes without a bound and for empty slots.
    if check_bound && summary.free < needed_devices {
        return Some(false);
    }
    (summary.plain && summary.fits(plain_request)).then_some(true)
}

/// What the DynamicResources plugin checks for a pod besides its own claims: the special claim
/// for extended resources and the node allocatable resources of its devices.
struct Extras<'a> {
    pod: &'a Pod,
    claims: &'a [PodClaim],
    extended: Option<extended::ExtendedPlan>,
    node_allocatable: bool,
}

impl Extras<'_> {
    /// Whether NodeResourcesFit leaves `resource` to DRA on a node with `allocatable`.
    fn delegated(&self, allocatable: &resources::Resources, resource: &str) -> bool {
        self.extended
            .as_ref()
            .is_some_and(|p| p.delegated(allocatable, resource))
    }

    /// A lower bound of the devices the special claim needs on a node: the pod's effective
    /// request of each resource DRA serves there (the claim's requests add up to at least
    /// that, init containers' reuse included).
    fn extended_devices(
        &self,
        allocatable: &resources::Resources,
        request: &resources::Resources,
    ) -> usize {
        self.extended.as_ref().map_or(0, |plan| {
            plan.classes
                .keys()
                .filter(|r| plan.delegated(allocatable, r))
                .map(|r| usize::try_from(request.get(r)).unwrap_or(0))
                .sum()
        })
    }

    /// Whether the DRA plugin has work on every node even without claims to allocate.
    fn needed(&self) -> bool {
        self.extended.is_some()
            || (self.node_allocatable
                && self
                    .claims
                    .iter()
                    .any(|pc| pc.claim.status.allocation.is_some()))
    }
}

/// Why the DRA plugin rejected a node.
enum Rejection {
    /// The allocator found no devices.
    Devices(Explanation),
    /// Filter reasons (node allocatable resources).
    Reasons(Vec<String>),
    /// The allocator failed on the input itself (a selector's CEL runtime error, a request
    /// for a disabled feature): upstream's DynamicResources Filter returns an error status,
    /// which aborts the scheduling attempt (see [`Scheduler::filter_error`]).
    Error(String),
}

/// A scored candidate: (DRA score, resource and preference score, rank in name order, node
/// slot, the allocation when the DRA score needed it).
type Scored = (i64, i64, usize, usize, Option<Vec<AllocationResult>>);

/// A remembered scheduling failure (an equivalence class of pods, valid for one cache epoch).
#[derive(Debug, Clone)]
struct Failure {
    epoch: u64,
    message: String,
    explanation: Option<Explanation>,
    processed: usize,
}

/// The scheduler controller.
pub struct Scheduler {
    /// Failures by pod signature.
    failures: BTreeMap<String, Failure>,
    config: SchedulerConfig,
    cache: Cache,
    cel: CelCache,
    unschedulable: BTreeSet<ObjectKey>,
    waiting: BTreeMap<ObjectKey, Waiting>,
    /// Nodes where a pod's binding failed; tried last next time.
    avoid: BTreeMap<ObjectKey, BTreeSet<String>>,
    /// Pods waiting for a claim (namespace, name) to appear or change.
    claim_waiters: BTreeMap<(String, String), BTreeSet<ObjectKey>>,
    /// The resourceVersion of the scheduler's own last write of each pod.
    /// (A resourceVersion that is not a number is kept as `None`, which matches no event.)
    own_writes: BTreeMap<ObjectKey, Option<u64>>,
    next_start: usize,
    /// The feasible nodes of the batch being scored (kept to reuse the allocation).
    candidates: Vec<(usize, usize, i64, usize, i64)>,
    /// Per node slot, the last resource score computed there.
    fit_memo: Vec<FitMemo>,
    /// The last time formatted by [`Scheduler::stamp`].
    stamp_memo: Option<(SimTime, String)>,
    /// The error a filter returned during the current scheduling attempt: as upstream's
    /// framework does for a filter status that is neither success nor a rejection, the attempt
    /// stops there and the pod gets `PodScheduled=False` with reason `SchedulerError` and
    /// this message.
    filter_error: Option<String>,
}

impl Scheduler {
    /// A scheduler.
    pub fn new(config: SchedulerConfig) -> Self {
        Scheduler {
            config,
            cache: Cache::default(),
            cel: CelCache::default(),
            unschedulable: BTreeSet::new(),
            waiting: BTreeMap::new(),
            avoid: BTreeMap::new(),
            claim_waiters: BTreeMap::new(),
            own_writes: BTreeMap::new(),
            next_start: 0,
            failures: BTreeMap::new(),
            candidates: Vec::new(),
            fit_memo: Vec::new(),
            filter_error: None,
            stamp_memo: None,
        }
    }

    /// `now` in RFC 3339 (formatted once per simulated instant).
    fn stamp(&mut self, now: SimTime) -> String {
        match &self.stamp_memo {
            Some((at, text)) if *at == now => text.clone(),
            _ => {
                let text = now.rfc3339();
                self.stamp_memo = Some((now, text.clone()));
                text
            }
        }
    }

    /// Pods the scheduler currently considers unschedulable.
    pub fn unschedulable_pods(&self) -> impl Iterator<Item = &ObjectKey> {
        self.unschedulable.iter()
    }

    fn is_mine(&self, pod: &Pod) -> bool {
        match pod.spec.scheduler_name.as_deref() {
            None | Some("") => true,
            Some(name) => name == self.config.scheduler_name,
        }
    }

    fn wants(&self, pod: &Pod) -> bool {
        pod.spec.node_name.as_deref().is_none_or(str::is_empty)
            && !is_terminal(pod)
            && pod.metadata.deletion_timestamp.is_none()
            && self.is_mine(pod)
    }

    fn all_unschedulable(&self) -> Vec<ObjectKey> {
        self.unschedulable.iter().cloned().collect()
    }

    /// How many feasible nodes to find before scoring (upstream `numFeasibleNodesToFind`).
    fn nodes_to_find(&self, all: usize) -> usize {
        const MIN_FEASIBLE: usize = 100;
        const MIN_PERCENT: i64 = 5;
        let percentage = i64::from(self.config.percentage_of_nodes_to_score);
        if all < MIN_FEASIBLE || percentage >= 100 {
            return all;
        }
        let mut adaptive = percentage;
        if adaptive <= 0 {
            adaptive = (50 - all as i64 / 125).max(MIN_PERCENT);
        }
        let n = all * adaptive as usize / 100;
        n.max(MIN_FEASIBLE)
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.unschedulable.remove(key);
        self.own_writes.remove(key);
        self.claim_waiters.retain(|_, pods| {
            pods.remove(key);
            !pods.is_empty()
        });
    }

    /// Resolves a pod's claims (upstream `foreachPodResourceClaim`), or says why the pod has to
    /// wait (the PreFilter message).
    fn resolve_claims(
        &self,
        store: &Store,
        pod: &Pod,
    ) -> Result<Vec<PodClaim>, (String, Vec<String>)> {
        let ns = pod.metadata.namespace.as_str();
        let group_name = pod
            .spec
            .scheduling_group
            .as_ref()
            .map(|g| g.pod_group_name.clone())
            .or_else(|| pod.spec.workload_ref.as_ref().map(|w| w.pod_group.clone()))
            .filter(|n| !n.is_empty());
        let group = group_name
            .as_deref()
            .and_then(|name| store.get::<PodGroup>(ns, name));
        let mut out = Vec::new();
        for pod_claim in &pod.spec.resource_claims {
            let (name, from_template) = match (
                &pod_claim.resource_claim_name,
                &pod_claim.resource_claim_template_name,
            ) {
                (Some(name), _) => (name.clone(), false),
                (None, Some(template)) => {
                    match pod
                        .status
                        .resource_claim_statuses
                        .iter()
                        .find(|s| s.name == pod_claim.name)
                    {
                        Some(status) => match &status.resource_claim_name {
                            Some(name) => (name.clone(), true),
                            // No claim is needed for this entry.
                            None => continue,
                        },
                        None => {
                            return Err((
                                format!(
                                    "pod \"{ns}/{}\": ResourceClaim not created yet (waiting for resource claim {:?} from template {template:?} to be created)",
                                    pod.metadata.name, pod_claim.name
                                ),
                                vec![],
                            ));
                        }
                    }
                }
                (None, None) => {
                    return Err((
                        format!(
                            "pod \"{ns}/{}\", spec.resourceClaim {:?}: none of the supported fields are set",
                            pod.metadata.name, pod_claim.name
                        ),
                        vec![],
                    ));
                }
            };
            let Some(claim) = store.get_shared::<ResourceClaim>(ns, &name) else {
                return Err((
                    format!("resourceclaim.resource.k8s.io {name:?} not found"),
                    vec![name],
                ));
            };
            if claim.metadata.deletion_timestamp.is_some() {
                return Err((
                    format!("resourceclaim {name:?} is being deleted"),
                    vec![name],
                ));
            }
            // A claim matching one of the PodGroup's claims is reserved for the group.
            let for_group = group.and_then(|g| {
                g.spec
                    .resource_claims
                    .iter()
                    .any(|c| {
                        c.name == pod_claim.name
                            && c.resource_claim_name == pod_claim.resource_claim_name
                            && c.resource_claim_template_name
                                == pod_claim.resource_claim_template_name
                    })
                    .then(|| (g.metadata.name.clone(), g.metadata.uid.clone()))
            });
            if from_template && for_group.is_none() {
                let owned = claim
                    .metadata
                    .owner_references
                    .iter()
                    .any(|o| o.uid == pod.metadata.uid && o.controller == Some(true));
                if !owned {
                    return Err((
                        format!(
                            "ResourceClaim {ns}/{name} was not created for Pod {ns}/{} (Pod is not owner)",
                            pod.metadata.name
                        ),
                        vec![name],
                    ));
                }
            }
            out.push(PodClaim {
                entry: pod_claim.name.clone(),
                claim: claim.clone(),
                group: for_group,
            });
        }
        Ok(out)
    }

    fn reserved_for_consumer(pod: &Pod, pc: &PodClaim) -> bool {
        pc.claim
            .status
            .reserved_for
            .iter()
            .any(|r| match &pc.group {
                Some((_, uid)) => r.resource == "podgroups" && &r.uid == uid,
                None => r.resource == "pods" && r.uid == pod.metadata.uid,
            })
    }

    /// Whether an allocated claim is ready for binding: `Ok(true)` when every binding condition
    /// is True, `Err` naming the failure condition that is True (upstream
    /// `isClaimReadyForBinding`).
    fn claim_ready(claim: &ResourceClaim) -> Result<bool, String> {
        let Some(allocation) = &claim.status.allocation else {
            return Ok(false);
        };
        for result in &allocation.devices.results {
            if result.binding_conditions.is_empty() {
                continue;
            }
            let Some(status) = claim.status.devices.iter().find(|d| {
                d.driver == result.driver
                    && d.pool == result.pool
                    && d.device == result.device
                    && d.share_id == result.share_id
            }) else {
                return Ok(false);
            };
            for failure in &result.binding_failure_conditions {
                if status
                    .conditions
                    .iter()
                    .any(|c| &c.type_ == failure && c.status == "True")
                {
                    return Err(format!(
                        "claim {}/{} binding failed: device {}/{}/{} has condition {failure}=True",
                        claim.metadata.namespace,
                        claim.metadata.name,
                        result.driver,
                        result.pool,
                        result.device
                    ));
                }
            }
            for condition in &result.binding_conditions {
                if !status
                    .conditions
                    .iter()
                    .any(|c| &c.type_ == condition && c.status == "True")
                {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn has_binding_conditions(claim: &ResourceClaim) -> bool {
        claim.status.allocation.as_ref().is_some_and(|a| {
            a.devices
                .results
                .iter()
                .any(|r| !r.binding_conditions.is_empty())
        })
    }

    fn timed_out(&self, claim: &ResourceClaim, now: SimTime) -> bool {
        claim
            .status
            .allocation
            .as_ref()
            .and_then(|a| a.allocation_timestamp.as_deref())
            .and_then(SimTime::parse_rfc3339)
            .is_some_and(|t| t.plus_seconds(self.config.binding_timeout_seconds) <= now)
    }

    /// Removes the pod from its claims' `reservedFor` and deallocates claims nobody else
    /// reserves (upstream Unreserve followed by PostFilter's deallocation).
    fn unreserve(
        &mut self,
        store: &mut Store,
        pod: &Pod,
        claims: &[PodClaim],
    ) -> Result<(), SchedulerError> {
        for pc in claims {
            let ns = pc.claim.metadata.namespace.clone();
            let name = pc.claim.metadata.name.clone();
            let uid = pod.metadata.uid.clone();
            let group_uid = pc.group.as_ref().map(|g| g.1.clone());
            let result = store.modify::<ResourceClaim, _>(&ns, &name, |claim| {
                claim
                    .status
                    .reserved_for
                    .retain(|r| r.uid != uid && Some(&r.uid) != group_uid.as_ref());
                if claim.status.reserved_for.is_empty() {
                    claim.status.allocation = None;
                    claim.status.devices.clear();
                }
            });
            match result {
                Ok(()) | Err(StoreError::NotFound { .. }) => {}
                Err(source) => {
                    return Err(SchedulerError::Store {
                        action: "unreserve",
                        key: format!("{ns}/{name}"),
                        source: Box::new(source),
                    });
                }
            }
        }
        Ok(())
    }

    /// Writes `PodScheduled`: bound to `Ok(node)`, or not scheduled with `Err((reason,
    /// message))`.
    fn write_pod_condition(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        verdict: Result<&str, (&'static str, String)>,
        now: SimTime,
    ) -> Result<(), SchedulerError> {
        let stamp = self.stamp(now);
        let (status, reason, message, node) = match verdict {
            Ok(node) => ("True", None, None, Some(node)),
            Err((reason, message)) => ("False", Some(reason), Some(message), None),
        };
        let result = store.modify::<Pod, _>(&key.namespace, &key.name, |pod| {
            if let Some(node) = node {
                pod.spec.node_name = Some(node.to_string());
            }
            let condition = PodCondition {
                type_: "PodScheduled".into(),
                status: status.into(),
                observed_generation: None,
                last_probe_time: None,
                last_transition_time: Some(stamp.clone()),
                reason: reason.map(str::to_string),
                message: message.clone(),
            };
            match pod
                .status
                .conditions
                .iter_mut()
                .find(|c| c.type_ == "PodScheduled")
            {
                Some(existing) => {
                    if existing.status == condition.status {
                        let since = existing.last_transition_time.clone();
                        *existing = condition;
                        existing.last_transition_time = since;
                    } else {
                        *existing = condition;
                    }
                }
                None => pod.status.conditions.push(condition),
            }
            if pod.status.phase.is_none() {
                pod.status.phase = Some("Pending".into());
            }
        });
        match result {
            Ok(()) => {
                if let Some(pod) = store.get::<Pod>(&key.namespace, &key.name) {
                    self.own_writes
                        .insert(key.clone(), pod.metadata.resource_version.parse().ok());
                }
                Ok(())
            }
            Err(StoreError::NotFound { .. }) => Ok(()),
            Err(source) => Err(SchedulerError::Store {
                action: "update pod",
                key: key.to_string(),
                source: Box::new(source),
            }),
        }
    }

    fn mark_unschedulable(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        message: String,
        claims: &[String],
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        self.mark_not_scheduled(store, key, (POD_UNSCHEDULABLE, message), claims, now)
    }

    /// Writes `PodScheduled=False` with `reason` and `message` and parks the pod until its
    /// claims or the cluster change. A scheduling attempt a filter stopped with an error (see
    /// [`Scheduler::filter_error`]) has reason `SchedulerError`: upstream retries such a pod
    /// after a backoff; here it waits as an unschedulable pod does (without a change, a retry
    /// would end the same way).
    fn mark_not_scheduled(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        (reason, message): (&'static str, String),
        claims: &[String],
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        self.unschedulable.insert(key.clone());
        for claim in claims {
            self.claim_waiters
                .entry((key.namespace.clone(), claim.clone()))
                .or_default()
                .insert(key.clone());
        }
        self.write_pod_condition(store, key, Err((reason, message)), now)?;
        Ok(Action::Done)
    }

    fn bind(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        node: &str,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        self.forget(key);
        self.avoid.remove(key);
        self.write_pod_condition(store, key, Ok(node), now)?;
        self.own_writes.remove(key);
        Ok(Action::Done)
    }

    /// One scheduling attempt (or PreBind check) for a pod.
    fn schedule(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        now: SimTime,
    ) -> Result<Action, SchedulerError> {
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            self.forget(key);
            self.waiting.remove(key);
            self.avoid.remove(key);
            return Ok(Action::Done);
        };
        if !self.wants(&pod) {
            self.forget(key);
            if self.waiting.remove(key).is_some()
                && pod.metadata.deletion_timestamp.is_some()
                && let Ok(claims) = self.resolve_claims(store, &pod)
            {
                self.unreserve(store, &pod, &claims)?;
            }
            return Ok(Action::Done);
        }
        let claims = match self.resolve_claims(store, &pod) {
            Ok(claims) => claims,
            Err((message, names)) => {
                let n = self.cache.node_count();
                return self.mark_unschedulable(
                    store,
                    key,
                    format!("0/{n} nodes are available: {message}."),
                    &names,
                    now,
                );
            }
        };

        // PreBind: waiting for binding conditions.
        if let Some(waiting) = self.waiting.get(key).cloned() {
            let mut failure = None;
            let mut ready = true;
            // The special claim for extended resources waits for its binding conditions too.
            let special = extended::claim_name(&pod)
                .and_then(|name| store.get::<ResourceClaim>(&key.namespace, &name).cloned());
            for claim in claims.iter().map(|pc| &*pc.claim).chain(special.as_ref()) {
                match Self::claim_ready(claim) {
                    Ok(true) => {}
                    Ok(false) => ready = false,
                    Err(message) => failure = Some(message),
                }
            }
            if failure.is_none() && ready {
                self.waiting.remove(key);
                return self.bind(store, key, &waiting.node, now);
            }
            if failure.is_none() && now < waiting.deadline {
                return Ok(Action::RequeueAfterMillis(waiting.deadline.0 - now.0));
            }
            // Binding failed or timed out: undo and try again, elsewhere if possible.
            self.waiting.remove(key);
            self.avoid
                .entry(key.clone())
                .or_default()
                .insert(waiting.node.clone());
            self.unreserve(store, &pod, &claims)?;
            extended::release(store, &key.namespace, &key.name).map_err(|source| {
                SchedulerError::Store {
                    action: "release extended resource claim",
                    key: key.to_string(),
                    source: Box::new(source),
                }
            })?;
            return self.schedule(store, key, now);
        }

        // Claims whose binding failed or timed out earlier are deallocated first (PostFilter).
        let mut claims = claims;
        if self.config.features.device_binding_conditions
            && self.config.features.resource_claim_device_status
        {
            let stale: Vec<PodClaim> = claims
                .iter()
                .filter(|pc| {
                    Self::has_binding_conditions(&pc.claim)
                        && (Self::claim_ready(&pc.claim).is_err()
                            || (!matches!(Self::claim_ready(&pc.claim), Ok(true))
                                && self.timed_out(&pc.claim, now)))
                        && pc
                            .claim
                            .status
                            .reserved_for
                            .iter()
                            .all(|r| r.uid == pod.metadata.uid)
                })
                .cloned()
                .collect();
            if !stale.is_empty() {
                self.unreserve(store, &pod, &stale)?;
                claims = match self.resolve_claims(store, &pod) {
                    Ok(claims) => claims,
                    Err((message, names)) => {
                        let n = self.cache.node_count();
                        return self.mark_unschedulable(
                            store,
                            key,
                            format!("0/{n} nodes are available: {message}."),
                            &names,
                            now,
                        );
                    }
                };
            }
        }
        let claim_names: Vec<String> = claims
            .iter()
            .map(|pc| pc.claim.metadata.name.clone())
            .collect();

        // PreFilter: claims in use by others, unknown device classes.
        for pc in &claims {
            let claim = &pc.claim;
            if claim.status.allocation.is_some()
                && claim.status.reserved_for.len() >= RESERVED_FOR_MAX
                && !Self::reserved_for_consumer(&pod, pc)
            {
                let n = self.cache.node_count();
                return self.mark_unschedulable(
                    store,
                    key,
                    format!(
                        "0/{n} nodes are available: resourceclaim in use (claim {}/{} is reserved for {} consumers, the limit).",
                        claim.metadata.namespace, claim.metadata.name, RESERVED_FOR_MAX
                    ),
                    &claim_names,
                    now,
                );
            }
            if claim.status.allocation.is_none() {
                for request in &claim.spec.devices.requests {
                    let mut classes: Vec<(String, &str)> = Vec::new();
                    if let Some(exactly) = &request.exactly {
                        classes.push((request.name.clone(), exactly.device_class_name.as_str()));
                    }
                    for sub in &request.first_available {
                        classes.push((
                            format!("{}/{}", request.name, sub.name),
                            sub.device_class_name.as_str(),
                        ));
                    }
                    for (request_name, class) in classes {
                        if !self.cache.classes.iter().any(|c| c.metadata.name == class) {
                            let n = self.cache.node_count();
                            return self.mark_unschedulable(
                                store,
                                key,
                                format!("0/{n} nodes are available: request {request_name}: device class {class} does not exist."),
                                &claim_names,
                                now,
                            );
                        }
                    }
                }
            }
        }

        let to_allocate: Vec<ResourceClaim> = claims
            .iter()
            .filter(|pc| pc.claim.status.allocation.is_none())
            .map(|pc| ResourceClaim::clone(&pc.claim))
            .collect();
        let needed_devices = min_devices(&to_allocate);
        let prioritized = self.config.features.prioritized_list
            && to_allocate.iter().any(|c| {
                c.spec
                    .devices
                    .requests
                    .iter()
                    .any(|r| !r.first_available.is_empty())
            });
        let request = pod_requests(&pod);
        let extras = Extras {
            pod: &pod,
            claims: &claims,
            extended: if self.config.extended_resource {
                extended::ExtendedPlan::for_pod(&request, &self.cache.classes)
            } else {
                None
            },
            node_allocatable: self.config.node_allocatable_resources,
        };
        let run_dra = !to_allocate.is_empty() || extras.needed();
        let non_zero = pod_non_zero_requests_with(&pod, &request);
        let avoid = self.avoid.get(key).cloned().unwrap_or_default();

        let n = self.cache.node_count();
        if n == 0 {
            return self.mark_unschedulable(
                store,
                key,
                "0/0 nodes are available.".into(),
                &claim_names,
                now,
            );
        }
        // A pod that failed before in the same cluster state fails the same way again.
        let cacheable =
            claims.iter().all(|pc| pc.claim.status.allocation.is_none()) && avoid.is_empty();
        if self
            .failures
            .first_key_value()
            .is_some_and(|(_, f)| f.epoch != self.cache.epoch)
        {
            self.failures.clear();
        }
        let signature = (cacheable && !self.failures.is_empty())
            .then(|| equivalence_signature(&pod, &request, &to_allocate));
        if let Some(signature) = &signature
            && let Some(failure) = self.failures.get(signature)
            && failure.epoch == self.cache.epoch
        {
            let mut message = failure.message.clone();
            if let Some(e) = &failure.explanation {
                let mut e = e.clone();
                let names: Vec<String> = to_allocate
                    .iter()
                    .map(|claim| format!("{}/{}", claim.metadata.namespace, claim.metadata.name))
                    .collect();
                e.rename_claims(&names);
                message.push('\n');
                message.push_str(e.to_string().trim_end());
            }
            self.next_start = (self.next_start + failure.processed) % n;
            return self.mark_unschedulable(store, key, message, &claim_names, now);
        }
        let order = self.cache.order();
        let to_find = self.nodes_to_find(n);
        let start = self.next_start % n;
        let mut reasons: BTreeMap<&'static str, usize> = BTreeMap::new();
        let mut taint_reasons: BTreeMap<String, usize> = BTreeMap::new();
        let mut explanation: Option<(String, Explanation)> = None;
        // The first node by name the free-device bound pruned: (rank in name order, slot).
        let mut pruned_dra: Option<(usize, usize)> = None;
        let mut processed = 0usize;
        let mut chosen: Option<(usize, Vec<AllocationResult>)> = None;
        let mut first_batch = true;
        let check_dra_bound = !to_allocate.is_empty() || extras.extended.is_some();
        // Whether the free-device bound rejects a node before the other filters run (such
        // nodes are counted only when the pod fits nowhere, see below).
        let bound_rejects = |cache: &Cache, index: usize, state: &cache::NodeState| {
            check_dra_bound
                && cache.free_devices(index).is_some_and(|free| {
                    free < needed_devices + extras.extended_devices(&state.allocatable, &request)
                })
        };
        // NodeAffinity has nothing to reject without a node selector or required affinity.
        let check_affinity = !pod.spec.node_selector.is_empty()
            || pod
                .spec
                .affinity
                .as_ref()
                .and_then(|a| a.node_affinity.as_ref())
                .is_some_and(|a| {
                    a.required_during_scheduling_ignored_during_execution
                        .is_some()
                });
        // The fast path: a pod the per-node summaries decide for nodes that are neither
        // unschedulable nor tainted (NodeName, NodeAffinity and the claims' node selectors have
        // nothing to reject, NodeResourcesFit has no scalar resources to look up, and the
        // free-device bound needs no node allocatable). It only ever says "feasible"; any
        // other node goes through `filter_node`, so rejections are counted as before.
        let fast = !check_affinity
            && request.scalar.is_empty()
            && pod.spec.node_name.as_deref().is_none_or(str::is_empty)
            && extras.extended.is_none()
            && !claims.iter().any(|pc| {
                pc.claim
                    .status
                    .allocation
                    .as_ref()
                    .is_some_and(|a| a.node_selector.is_some())
            });
        let plain_request = [request.milli_cpu, request.memory, request.ephemeral_storage];
        // The fast path rejects nodes without a free device for a pod needing one.
        let skip_full = fast && check_dra_bound && needed_devices > 0;
        // Without preferred terms every node's NodeAffinity score input is 0.
        let prefers_affinity = pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .is_some_and(|a| {
                !a.preferred_during_scheduling_ignored_during_execution
                    .is_empty()
            });
        // Best first: nodes where binding failed before last, then the DRA score, then the
        // resource score, then the node name (the rank in name order).
        let avoid_slots: BTreeSet<usize> =
            avoid.iter().filter_map(|n| self.cache.slot_of(n)).collect();
        // Feasible nodes of a batch: (slot, rank in name order, resource score, untolerated
        // PreferNoSchedule taints, preferred affinity weight), kept between pods.
        let mut candidates = std::mem::take(&mut self.candidates);
        let mut fit_memo = std::mem::take(&mut self.fit_memo);
        self.filter_error = None;
        while processed < n && chosen.is_none() && self.filter_error.is_none() {
            // Filter a batch of nodes cheaply.
            candidates.clear();
            candidates.reserve(to_find.min(n - processed));
            let summaries = self.cache.summaries();
            if fit_memo.len() < summaries.len() {
                fit_memo.resize(summaries.len(), FitMemo::default());
            }
            // The candidate with the best resource score (ties: the first by name), and
            // whether any candidate has a taint or preferred-affinity score input to work out.
            let mut best: Option<(i64, usize, usize)> = None;
            let mut needs_prefs = false;
            let free_bits = self.cache.free_bits();
            while processed < n && candidates.len() < to_find {
                let rank = (start + processed) % n;
                if skip_full {
                    // Nodes without a free device are rejected by the bound and nothing
                    // else: pass over them to the next node that may have one.
                    let word = free_bits.get(rank / 64).copied().unwrap_or(0) >> (rank % 64);
                    if word & 1 == 0 {
                        let next = if word != 0 {
                            rank + word.trailing_zeros() as usize
                        } else {
                            free_bits
                                .iter()
                                .enumerate()
                                .skip(rank / 64 + 1)
                                .find(|(_, w)| **w != 0)
                                .map_or(n, |(i, w)| i * 64 + w.trailing_zeros() as usize)
                        };
                        processed += (next.min(n) - rank).min(n - processed);
                        continue;
                    }
                }
                let index = order[rank];
                processed += 1;
                let Some(summary) = summaries.get(index) else {
                    continue;
                };
                let feasible = match fast
                    .then(|| fast_verdict(summary, &plain_request, check_dra_bound, needed_devices))
                    .flatten()
                {
                    Some(verdict) => verdict,
                    None => {
                        let Some(state) = self.cache.node(index) else {
                            continue;
                        };
                        if bound_rejects(&self.cache, index, state) {
                            // Not a candidate whatever the other filters say (a cheap check
                            // first: when most nodes are full, most nodes end here). Which
                            // filter rejects it first matters only for the message of a pod
                            // that fits nowhere, and is worked out then.
                            continue;
                        }
                        match filter_node(&pod, state, &request, check_affinity, &claims, &extras) {
                            Some(rejected) => {
                                rejected.count(&mut reasons, &mut taint_reasons);
                                false
                            }
                            None => true,
                        }
                    }
                };
                if !feasible {
                    continue;
                }
                let fit = fit_memo[index].score(summary, non_zero);
                if best.is_none_or(|(f, r, _)| fit > f || (fit == f && rank < r)) {
                    best = Some((fit, rank, index));
                }
                needs_prefs |= !summary.plain || prefers_affinity;
                candidates.push((index, rank, fit, 0, 0));
            }
            if first_batch {
                // Upstream advances the start index by the nodes it looked at.
                self.next_start = (start + processed) % n;
                first_batch = false;
            }
            // Score: (DRA score, resource and preference score, node index); indexes are in
            // name order only through `order`, so ties compare names.
            let mut taint_max = 0usize;
            let mut affinity_max = 0i64;
            if needs_prefs {
                for candidate in &mut candidates {
                    let index = candidate.0;
                    if summaries.get(index).is_some_and(|s| s.plain) && !prefers_affinity {
                        // No taints, no preferred terms: both inputs are 0.
                        continue;
                    }
                    let node = self.cache.node(index).map(|s| &s.node);
                    let taints =
                        node.map_or(0, |n| filters::intolerable_prefer_no_schedule(&pod, n));
                    let affinity = node.map_or(0, |n| filters::preferred_affinity_weight(&pod, n));
                    taint_max = taint_max.max(taints);
                    affinity_max = affinity_max.max(affinity);
                    candidate.3 = taints;
                    candidate.4 = affinity;
                }
            }
            // Without preference scores, no DRA score and no node to avoid, the best node is
            // the one with the best resource score: try it before ordering the others.
            let mut tried = None;
            if !prioritized
                && taint_max == 0
                && affinity_max == 0
                && avoid_slots.is_empty()
                && let Some((_, _, index)) = best
            {
                if !run_dra {
                    chosen = Some((index, Vec::new()));
                    break;
                }
                if let Some(results) = self.allocate_or_count(
                    index,
                    &to_allocate,
                    &extras,
                    (&mut reasons, &mut taint_reasons, &mut explanation),
                ) {
                    chosen = Some((index, results));
                    break;
                }
                if self.filter_error.is_some() {
                    break;
                }
                tried = Some(index);
            }
            let mut scored: Vec<Scored> = Vec::with_capacity(candidates.len());
            for &(index, rank, fit, taints, affinity) in &candidates {
                if tried == Some(index) {
                    continue;
                }
                let mut score = fit;
                // TaintToleration (weight 3) and NodeAffinity (weight 2), normalised as upstream.
                score += if taint_max > 0 {
                    3 * (100 - 100 * taints as i64 / taint_max as i64)
                } else {
                    300
                };
                if affinity_max > 0 {
                    score += 2 * (100 * affinity / affinity_max);
                }
                scored.push((0, score, rank, index, None));
            }
            if prioritized {
                // The DRA score needs the allocator's choice on every candidate.
                let mut kept = Vec::new();
                for (_, score, rank, index, _) in scored {
                    if let Some(results) = self.allocate_or_count(
                        index,
                        &to_allocate,
                        &extras,
                        (&mut reasons, &mut taint_reasons, &mut explanation),
                    ) {
                        let dra = dra_score(&to_allocate, &results);
                        kept.push((dra, score, rank, index, Some(results)));
                    } else if self.filter_error.is_some() {
                        break;
                    }
                }
                if self.filter_error.is_some() {
                    break;
                }
                scored = kept;
                let max_dra = scored.iter().map(|s| s.0).max().unwrap_or(0);
                for s in &mut scored {
                    s.0 = if max_dra > 0 { 100 * s.0 / max_dra } else { 0 };
                }
            }
            let avoided = |index: usize| avoid_slots.contains(&index);
            let better = |a: &Scored, b: &Scored| {
                avoided(a.3)
                    .cmp(&avoided(b.3))
                    .then(b.0.cmp(&a.0))
                    .then(b.1.cmp(&a.1))
                    .then(a.2.cmp(&b.2))
            };
            let mut ordered = Vec::with_capacity(scored.len());
            while !scored.is_empty() {
                let best = (0..scored.len())
                    .min_by(|&i, &j| better(&scored[i], &scored[j]))
                    .unwrap_or(0);
                ordered.push(scored.swap_remove(best));
                if !run_dra || prioritized {
                    // The first one wins.
                    break;
                }
                // Keep selecting lazily: the allocator usually succeeds on the first node.
                let (_, _, _, index, _) = ordered[ordered.len() - 1];
                if let Some(results) = self.allocate_or_count(
                    index,
                    &to_allocate,
                    &extras,
                    (&mut reasons, &mut taint_reasons, &mut explanation),
                ) {
                    chosen = Some((index, results));
                    break;
                }
                if self.filter_error.is_some() {
                    break;
                }
            }
            if chosen.is_some() || self.filter_error.is_some() {
                break;
            }
            let scored = if !run_dra || prioritized {
                ordered
            } else {
                Vec::new()
            };
            for (_, _, _, index, results) in scored {
                if !run_dra {
                    chosen = Some((index, Vec::new()));
                    break;
                }
                if let Some(results) = results {
                    chosen = Some((index, results));
                    break;
                }
                if let Some(results) = self.allocate_or_count(
                    index,
                    &to_allocate,
                    &extras,
                    (&mut reasons, &mut taint_reasons, &mut explanation),
                ) {
                    chosen = Some((index, results));
                    break;
                }
                if self.filter_error.is_some() {
                    break;
                }
            }
        }
        self.candidates = candidates;
        self.fit_memo = fit_memo;
        if let Some(message) = self.filter_error.take() {
            return self.mark_not_scheduled(
                store,
                key,
                (POD_SCHEDULER_ERROR, message),
                &claim_names,
                now,
            );
        }
        let Some((node_index, results)) = chosen else {
            // Count the nodes the device bound rejected under the filter that rejects them
            // first, as if every filter had run in order. (Nothing the bound reads changed
            // since the walk: those are the nodes it rejected then.)
            for p in 0..processed {
                let rank = (start + p) % n;
                let index = order[rank];
                let Some(state) = self.cache.node(index) else {
                    continue;
                };
                if !bound_rejects(&self.cache, index, state) {
                    continue;
                }
                match filter_node(&pod, state, &request, check_affinity, &claims, &extras) {
                    Some(rejected) => rejected.count(&mut reasons, &mut taint_reasons),
                    None => {
                        *reasons.entry(REASON_CANNOT_ALLOCATE).or_insert(0) += 1;
                        // Ranks follow node names (`order` is in name order).
                        if pruned_dra.is_none_or(|(r, _)| rank < r) {
                            pruned_dra = Some((rank, index));
                        }
                    }
                }
            }
            if explanation.is_none()
                && let Some((_, index)) = pruned_dra
            {
                match self.try_allocate(index, &to_allocate, &extras) {
                    Err(Rejection::Devices(e)) => explanation = Some((String::new(), e)),
                    // Upstream's Filter would have run on that node and stopped the attempt.
                    Err(Rejection::Error(message)) => {
                        return self.mark_not_scheduled(
                            store,
                            key,
                            (POD_SCHEDULER_ERROR, message),
                            &claim_names,
                            now,
                        );
                    }
                    _ => {}
                }
            }
            let mut histogram: Vec<String> = reasons
                .iter()
                .map(|(r, c)| format!("{c} {r}"))
                .chain(taint_reasons.iter().map(|(r, c)| format!("{c} {r}")))
                .collect();
            histogram.sort();
            let message = format!("0/{n} nodes are available: {}.", histogram.join(", "));
            let signature = signature
                .or_else(|| cacheable.then(|| equivalence_signature(&pod, &request, &to_allocate)));
            if let Some(signature) = signature {
                self.failures.insert(
                    signature,
                    Failure {
                        epoch: self.cache.epoch,
                        message: message.clone(),
                        explanation: explanation.as_ref().map(|(_, e)| e.clone()),
                        processed,
                    },
                );
            }
            let mut message = message;
            if let Some((_, e)) = &explanation {
                message.push('\n');
                message.push_str(e.to_string().trim_end());
            }
            return self.mark_unschedulable(store, key, message, &claim_names, now);
        };
        let node = self
            .cache
            .node(node_index)
            .map(|s| s.name.clone())
            .unwrap_or_default();

        // Reserve + PreBind: write allocations and reservations.
        let stamp = self.stamp(now);
        let with_timestamp = self.config.features.device_binding_conditions
            && self.config.features.resource_claim_device_status;
        let mut result_iter = results.into_iter();
        let mut needs_wait = false;
        for pc in &claims {
            let allocation = if pc.claim.status.allocation.is_none() {
                result_iter.next()
            } else {
                None
            };
            if Self::reserved_for_consumer(&pod, pc) && allocation.is_none() {
                needs_wait |= Self::has_binding_conditions(&pc.claim);
                continue;
            }
            let consumer = match &pc.group {
                Some((name, uid)) => ResourceClaimConsumerReference {
                    api_group: "scheduling.k8s.io".into(),
                    resource: "podgroups".into(),
                    name: name.clone(),
                    uid: uid.clone(),
                },
                None => ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                },
            };
            let ns = pc.claim.metadata.namespace.clone();
            let name = pc.claim.metadata.name.clone();
            let stamp = stamp.clone();
            let written = store.modify::<ResourceClaim, _>(&ns, &name, |claim| {
                if let Some(mut allocation) = allocation {
                    if with_timestamp && allocation.allocation_timestamp.is_none() {
                        allocation.allocation_timestamp = Some(stamp);
                    }
                    if !claim
                        .metadata
                        .finalizers
                        .iter()
                        .any(|f| f == CLAIM_FINALIZER)
                    {
                        claim.metadata.finalizers.push(CLAIM_FINALIZER.into());
                    }
                    claim.status.allocation = Some(allocation);
                }
                if !claim
                    .status
                    .reserved_for
                    .iter()
                    .any(|r| r.uid == consumer.uid)
                {
                    claim.status.reserved_for.push(consumer);
                }
                Self::has_binding_conditions(claim)
            });
            match written {
                Ok(wait) => needs_wait |= wait,
                Err(source) => {
                    return Err(SchedulerError::Store {
                        action: "reserve claim",
                        key: format!("{ns}/{name}"),
                        source: Box::new(source),
                    });
                }
            }
        }
        if run_dra {
            needs_wait |=
                self.reserve_extras(store, key, node_index, &extras, result_iter.next(), &stamp)?;
        }
        if needs_wait && with_timestamp {
            let deadline = now.plus_seconds(self.config.binding_timeout_seconds);
            self.waiting.insert(key.clone(), Waiting { node, deadline });
            self.unschedulable.remove(key);
            for claim in &claim_names {
                self.claim_waiters
                    .entry((key.namespace.clone(), claim.clone()))
                    .or_default()
                    .insert(key.clone());
            }
            // The claims' device conditions may already be set.
            return self.schedule(store, key, now);
        }
        self.bind(store, key, &node, now)
    }

    fn note_explanation(
        &self,
        slot: &mut Option<(String, Explanation)>,
        index: usize,
        explanation: Explanation,
    ) {
        let Some(name) = self.cache.node(index).map(|s| s.name.as_str()) else {
            return;
        };
        if slot.as_ref().is_none_or(|(n, _)| name < n.as_str()) {
            *slot = Some((name.to_string(), explanation));
        }
    }

    /// Counts a node the DRA plugin rejected under its reasons; keeps the allocator's
    /// explanation of the first node by name.
    /// The allocator on one node; a node it rejects is counted under its reason (and its
    /// explanation kept) in `counts`: (filter reasons, taint reasons, explanation).
    fn allocate_or_count(
        &mut self,
        index: usize,
        claims: &[ResourceClaim],
        extras: &Extras<'_>,
        counts: Counts<'_>,
    ) -> Option<Vec<AllocationResult>> {
        let (reasons, other_reasons, explanation) = counts;
        match self.try_allocate(index, claims, extras) {
            Ok(Some(results)) => Some(results),
            Ok(None) => {
                *reasons.entry(REASON_CANNOT_ALLOCATE).or_insert(0) += 1;
                None
            }
            Err(e) => {
                self.count_rejection(e, index, reasons, other_reasons, explanation);
                None
            }
        }
    }

    fn count_rejection(
        &mut self,
        rejection: Rejection,
        index: usize,
        reasons: &mut BTreeMap<&'static str, usize>,
        other_reasons: &mut BTreeMap<String, usize>,
        explanation: &mut Option<(String, Explanation)>,
    ) {
        match rejection {
            Rejection::Devices(e) => {
                *reasons.entry(REASON_CANNOT_ALLOCATE).or_insert(0) += 1;
                self.note_explanation(explanation, index, e);
            }
            Rejection::Reasons(list) => {
                for reason in list {
                    *other_reasons.entry(reason).or_insert(0) += 1;
                }
            }
            Rejection::Error(message) => {
                self.filter_error.get_or_insert(message);
            }
        }
    }

    /// Runs the allocator on a node for the pod's unallocated claims and, when the node has
    /// no device plugin for an extended resource the pod requests, the special claim serving
    /// it (its result comes last); then checks the node allocatable resources the pod's
    /// devices consume. `Ok(Some(results))` when everything fits, `Ok(None)` when the allocator
    /// failed on bad input, `Err` with why not.
    fn try_allocate(
        &mut self,
        index: usize,
        claims: &[ResourceClaim],
        extras: &Extras<'_>,
    ) -> Result<Option<Vec<AllocationResult>>, Rejection> {
        self.cache.prepare_slices(index);
        self.cache.prepare_in_use(index);
        let Some(state) = self.cache.node(index) else {
            return Ok(None);
        };
        let special = extras
            .extended
            .as_ref()
            .and_then(|plan| plan.claim_for_node(extras.pod, &state.allocatable))
            .map(|(claim, _)| claim);
        let with_special: Vec<ResourceClaim>;
        let claims = match special {
            Some(claim) => {
                with_special = claims.iter().cloned().chain([claim]).collect();
                &with_special[..]
            }
            None => claims,
        };
        let results = if claims.is_empty() {
            Vec::new()
        } else {
            // References to the cache's shared objects: the allocator copies nothing.
            let slices: Vec<&ResourceSlice> = state
                .visible_slices
                .iter()
                .flatten()
                .map(|s| &**s)
                .collect();
            let in_use: Vec<&ResourceClaim> =
                self.cache.in_use(index).iter().map(|c| &**c).collect();
            let input = AllocationInput {
                node: &state.node,
                classes: &self.cache.classes,
                slices: &slices,
                allocated_claims: &in_use,
                claims,
                taint_rules: &self.cache.taint_rules,
                namespaces: &self.cache.namespaces,
            };
            match allot_dra::allocate_within(
                &input,
                &self.config.features,
                &self.cel,
                &self.config.allocation_budget,
            ) {
                Ok(Outcome::Allocated(results)) => results,
                Ok(Outcome::Unschedulable(explanation)) => {
                    return Err(Rejection::Devices(explanation));
                }
                // Upstream's filter timeout: an error that stops the attempt, naming the node
                // (kube-scheduler 1.37 returns it as an error, not as "unschedulable").
                Ok(Outcome::GaveUp(gave_up)) => {
                    return Err(Rejection::Error(format!(
                        "running \"DynamicResources\" filter plugin: node {}: timed out trying to allocate devices: {gave_up}",
                        state.node.metadata.name
                    )));
                }
                Err(e) => {
                    return Err(Rejection::Error(format!(
                        "running \"DynamicResources\" filter plugin: {e}"
                    )));
                }
            }
        };
        if extras.node_allocatable && self.node_has_allocatable_devices(index) {
            let reasons = match self.node_allocatable_statuses(index, extras, &results, None) {
                Ok(statuses) => match self.cache.node(index) {
                    Some(state) => nodealloc::fit_reasons(
                        extras.pod,
                        &statuses,
                        &state.allocatable,
                        &state.requested,
                    ),
                    None => Vec::new(),
                },
                Err(reason) => vec![reason],
            };
            if !reasons.is_empty() {
                return Err(Rejection::Reasons(reasons));
            }
        }
        Ok(Some(results))
    }

    /// Whether any device the node sees declares node allocatable resources (else the pod's
    /// footprint is its own requests, which NodeResourcesFit checked).
    fn node_has_allocatable_devices(&self, index: usize) -> bool {
        self.cache.node(index).is_some_and(|state| {
            state
                .visible_slices
                .as_deref()
                .unwrap_or(&[])
                .iter()
                .any(|slice| {
                    slice
                        .spec
                        .devices
                        .iter()
                        .any(|d| !d.node_allocatable_resources.is_empty())
                })
        })
    }

    /// The pod's `nodeAllocatableResourceClaimStatuses` on a node, for its claims' existing
    /// allocations and `results` (the unallocated claims' in order, then the special claim's,
    /// named `special_name` or upstream's in-memory name); `Err` with a filter reason when a
    /// claim with a mapped device is already used by another pod, or a device is missing.
    fn node_allocatable_statuses(
        &self,
        index: usize,
        extras: &Extras<'_>,
        results: &[AllocationResult],
        special_name: Option<&str>,
    ) -> Result<Vec<nodealloc::ClaimStatus>, String> {
        let Some(state) = self.cache.node(index) else {
            return Ok(Vec::new());
        };
        let slices = state.visible_slices.as_deref().unwrap_or(&[]);
        let mut new = results.iter();
        let mut allocated = Vec::new();
        for pc in extras.claims {
            let allocation = match &pc.claim.status.allocation {
                Some(existing) => {
                    // Claims with mapped devices cannot be shared across pods.
                    if !pc.claim.status.reserved_for.is_empty()
                        && !Self::reserved_for_consumer(extras.pod, pc)
                        && nodealloc::has_mapped_device(existing, slices, &state.node)
                    {
                        return Err(format!(
                            "node allocatable resource claim {} has a mapped device and cannot be shared across pods",
                            pc.claim.metadata.name
                        ));
                    }
                    existing
                }
                None => match new.next() {
                    Some(result) => result,
                    None => continue,
                },
            };
            allocated.push(nodealloc::AllocatedClaim {
                entry: Some(pc.entry.as_str()),
                name: pc.claim.metadata.name.as_str(),
                allocation,
            });
        }
        if let Some(result) = new.next() {
            allocated.push(nodealloc::AllocatedClaim {
                entry: None,
                name: special_name.unwrap_or(extended::IN_MEMORY_NAME),
                allocation: result,
            });
        }
        nodealloc::claim_statuses(extras.pod, &allocated, slices, &state.node)
    }

    /// Reserve for the DRA extras on the chosen node: creates the special claim for extended
    /// resources with its allocation (`special`), reserved for the pod, and records
    /// `status.extendedResourceClaimStatus` and `status.nodeAllocatableResourceClaimStatuses`
    /// on the pod (upstream PreBind). `Ok(true)` when the special claim's devices have binding
    /// conditions to wait for.
    fn reserve_extras(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        index: usize,
        extras: &Extras<'_>,
        special: Option<AllocationResult>,
        stamp: &str,
    ) -> Result<bool, SchedulerError> {
        let store_error = |action: &'static str, key: String| {
            move |source: StoreError| SchedulerError::Store {
                action,
                key,
                source: Box::new(source),
            }
        };
        let pod = extras.pod;
        let mut special_status = None;
        let mut special_claim: Option<(String, AllocationResult)> = None;
        if let Some(mut allocation) = special
            && let Some(state) = self.cache.node(index)
            && let Some((mut claim, mappings)) = extras
                .extended
                .as_ref()
                .and_then(|plan| plan.claim_for_node(pod, &state.allocatable))
        {
            claim.metadata.name.clear();
            let created = store.create(claim, stamp).map_err(store_error(
                "create extended resource claim",
                pod.metadata.name.clone(),
            ))?;
            let name = created.metadata.name.clone();
            if self.config.features.device_binding_conditions
                && self.config.features.resource_claim_device_status
                && allocation.allocation_timestamp.is_none()
            {
                allocation.allocation_timestamp = Some(stamp.to_string());
            }
            let consumer = ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            };
            let written = allocation.clone();
            store
                .modify::<ResourceClaim, _>(&key.namespace, &name, |claim| {
                    claim.metadata.finalizers.push(CLAIM_FINALIZER.into());
                    claim.status.allocation = Some(written);
                    claim.status.reserved_for.push(consumer);
                })
                .map_err(store_error(
                    "reserve claim",
                    format!("{}/{name}", key.namespace),
                ))?;
            special_status = Some(extended::status_json(&name, &mappings));
            special_claim = Some((name, allocation));
        }
        let mut statuses = Vec::new();
        if extras.node_allocatable && self.node_has_allocatable_devices(index) {
            // The claims as written by Reserve.
            let refreshed: Vec<PodClaim> = extras
                .claims
                .iter()
                .map(|pc| PodClaim {
                    claim: store
                        .get_shared::<ResourceClaim>(
                            &pc.claim.metadata.namespace,
                            &pc.claim.metadata.name,
                        )
                        .cloned()
                        .unwrap_or_else(|| pc.claim.clone()),
                    ..pc.clone()
                })
                .collect();
            let now = Extras {
                pod,
                claims: &refreshed,
                extended: None,
                node_allocatable: true,
            };
            let results: Vec<AllocationResult> =
                special_claim.iter().map(|(_, a)| a.clone()).collect();
            let name = special_claim.as_ref().map(|(n, _)| n.as_str());
            statuses = self
                .node_allocatable_statuses(index, &now, &results, name)
                .unwrap_or_default();
        }
        let wait = special_claim.as_ref().is_some_and(|(_, a)| {
            a.devices
                .results
                .iter()
                .any(|r| !r.binding_conditions.is_empty())
        });
        if special_status.is_none() && statuses.is_empty() {
            return Ok(wait);
        }
        store
            .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                if let Some(status) = &special_status {
                    p.status.extended_resource_claim_status = Some(status.clone());
                }
                if !statuses.is_empty() {
                    p.status.node_allocatable_resource_claim_statuses =
                        Some(nodealloc::statuses_json(&statuses));
                }
            })
            .map_err(store_error("update pod", key.to_string()))?;
        if let Some(written) = store.get::<Pod>(&key.namespace, &key.name) {
            self.own_writes
                .insert(key.clone(), written.metadata.resource_version.parse().ok());
        }
        Ok(wait)
    }
}

/// What decides a pod's fate besides the cluster: its requests, placement constraints and the
/// specs of the claims it still needs allocated.
/// Where a scheduling cycle counts the nodes it rejects: per filter reason, per taint reason,
/// and the allocator's explanation.
type Counts<'a> = (
    &'a mut BTreeMap<&'static str, usize>,
    &'a mut BTreeMap<String, usize>,
    &'a mut Option<(String, Explanation)>,
);

fn equivalence_signature(
    pod: &Pod,
    request: &resources::Resources,
    claims: &[ResourceClaim],
) -> String {
    let specs: Vec<_> = claims.iter().map(|c| &c.spec).collect();
    format!(
        "{:?}|{:?}|{:?}|{:?}|{:?}|{:?}",
        request,
        pod.spec.node_selector,
        pod.spec.affinity,
        pod.spec.tolerations,
        pod.spec.node_name,
        specs
    )
}

/// The last [`fit_score`] computed for a node, with its inputs: nodes change little between
/// pods, and pods of one workload ask for the same, so the next pod usually finds its score
/// here. A pure cache: the inputs are compared, whatever changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FitMemo {
    /// CPU allocatable, CPU requested with the pod's, memory allocatable, memory requested
    /// with the pod's.
    inputs: [i64; 4],
    score: i64,
}

impl Default for FitMemo {
    fn default() -> Self {
        FitMemo {
            inputs: [0; 4],
            score: fit_score(0, 0, 0, 0),
        }
    }
}

impl FitMemo {
    /// The resource score of a node for a pod with these non-zero requests.
    #[inline]
    fn score(&mut self, node: &cache::NodeSummary, pod_non_zero: (i64, i64)) -> i64 {
        let inputs = [
            node.allocatable[0],
            node.non_zero.0 + pod_non_zero.0,
            node.allocatable[1],
            node.non_zero.1 + pod_non_zero.1,
        ];
        if inputs != self.inputs {
            self.inputs = inputs;
            self.score = fit_score(inputs[0], inputs[1], inputs[2], inputs[3]);
        }
        self.score
    }
}

/// NodeResourcesFit's LeastAllocated score plus NodeResourcesBalancedAllocation, each 0..100,
/// over CPU and memory with equal weights.
fn fit_score(cpu_alloc: i64, cpu_req: i64, mem_alloc: i64, mem_req: i64) -> i64 {
    let least = |alloc: i64, req: i64| -> i64 {
        if alloc <= 0 || req > alloc {
            0
        } else {
            (alloc - req) * 100 / alloc
        }
    };
    let least_allocated = (least(cpu_alloc, cpu_req) + least(mem_alloc, mem_req)) / 2;
    let fraction = |alloc: i64, req: i64| -> f64 {
        if alloc <= 0 {
            1.0
        } else {
            (req as f64 / alloc as f64).min(1.0)
        }
    };
    let (a, b) = (fraction(cpu_alloc, cpu_req), fraction(mem_alloc, mem_req));
    let std = (a - b).abs() / 2.0;
    let balanced = ((1.0 - std) * 100.0) as i64;
    least_allocated + balanced
}

/// The prioritized-list score of an allocation (upstream `computeScore`): for each chosen
/// subrequest at index i, 8 − i.
fn dra_score(
    claims: &[ResourceClaim],
    results: &[allot_api::resource::v1::AllocationResult],
) -> i64 {
    let mut score = 0;
    for (claim, result) in claims.iter().zip(results) {
        let chosen: BTreeSet<&str> = result
            .devices
            .results
            .iter()
            .map(|r| r.request.as_str())
            .collect();
        for request in &claim.spec.devices.requests {
            for (i, sub) in request.first_available.iter().enumerate() {
                if chosen.contains(format!("{}/{}", request.name, sub.name).as_str()) {
                    score += FIRST_AVAILABLE_MAX - i as i64;
                }
            }
        }
    }
    score
}

/// A lower bound of the devices the claims need exclusively: ExactCount requests without admin
/// access (the smallest alternative for prioritized lists).
fn min_devices(claims: &[ResourceClaim]) -> usize {
    let mut total = 0usize;
    for claim in claims {
        for request in &claim.spec.devices.requests {
            if let Some(exactly) = &request.exactly {
                let exact = exactly
                    .allocation_mode
                    .as_ref()
                    .is_none_or(|m| m.as_str() == "ExactCount");
                if exact && exactly.admin_access != Some(true) {
                    total += usize::try_from(exactly.count.unwrap_or(1)).unwrap_or(0);
                }
            } else if !request.first_available.is_empty() {
                let least = request
                    .first_available
                    .iter()
                    .map(|s| {
                        let exact = s
                            .allocation_mode
                            .as_ref()
                            .is_none_or(|m| m.as_str() == "ExactCount");
                        if exact {
                            usize::try_from(s.count.unwrap_or(1)).unwrap_or(0)
                        } else {
                            0
                        }
                    })
                    .min()
                    .unwrap_or(0);
                total += least;
            }
        }
    }
    total
}

impl Controller for Scheduler {
    fn name(&self) -> &'static str {
        "scheduler"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match (&event.object, event.event_type) {
            (Stored::Pod(pod), EventType::Deleted) => {
                let mut keys = Vec::new();
                if self.unschedulable.contains(&event.key) || self.waiting.contains_key(&event.key)
                {
                    keys.push(event.key.clone());
                }
                if is_assigned(pod) {
                    keys.extend(self.all_unschedulable());
                }
                keys
            }
            (Stored::Pod(pod), _) => {
                if self
                    .own_writes
                    .get(&event.key)
                    .is_some_and(|rv| *rv == Some(event.resource_version))
                {
                    return Vec::new();
                }
                if self.wants(pod) || self.waiting.contains_key(&event.key) {
                    vec![event.key.clone()]
                } else if is_terminal(pod) && pod.spec.node_name.is_some() {
                    self.all_unschedulable()
                } else {
                    Vec::new()
                }
            }
            (Stored::Node(node), EventType::Added) => {
                let _ = node;
                self.all_unschedulable()
            }
            (Stored::Node(node), EventType::Modified) => {
                match self.cache.node_by_name(&node.metadata.name) {
                    Some(state)
                        if state.node.metadata.labels == node.metadata.labels
                            && state.node.spec == node.spec
                            && state.node.status.allocatable == node.status.allocatable =>
                    {
                        Vec::new()
                    }
                    _ => self.all_unschedulable(),
                }
            }
            (Stored::ResourceSlice(_), EventType::Added | EventType::Modified) => {
                self.all_unschedulable()
            }
            (Stored::DeviceClass(_) | Stored::DeviceTaintRule(_) | Stored::PodGroup(_), _) => {
                self.all_unschedulable()
            }
            (Stored::ResourceClaim(claim), event_type) => {
                // Only pods waiting here (unschedulable or in PreBind) are requeued.
                if self.unschedulable.is_empty() && self.waiting.is_empty() {
                    return Vec::new();
                }
                let mut keys: Vec<ObjectKey> = Vec::new();
                let ns = claim.metadata.namespace.as_str();
                let freed = (event_type == EventType::Deleted || claim.status.allocation.is_none())
                    && self.cache.claim_allocated(&event.key);
                if freed {
                    keys.extend(self.all_unschedulable());
                }
                if !self.claim_waiters.is_empty()
                    && let Some(pods) = self
                        .claim_waiters
                        .get(&(ns.to_string(), claim.metadata.name.clone()))
                {
                    keys.extend(pods.iter().cloned());
                }
                for owner in claim
                    .metadata
                    .owner_references
                    .iter()
                    .filter(|o| o.kind == "Pod")
                {
                    keys.push(ObjectKey::new(Kind::Pod, ns, owner.name.clone()));
                }
                for consumer in claim
                    .status
                    .reserved_for
                    .iter()
                    .filter(|r| r.resource == "pods")
                {
                    keys.push(ObjectKey::new(Kind::Pod, ns, consumer.name.clone()));
                }
                keys.retain(|k| self.unschedulable.contains(k) || self.waiting.contains_key(k));
                // In key order, each once.
                keys.sort_unstable();
                keys.dedup();
                keys
            }
            _ => Vec::new(),
        }
    }

    fn event_log_position(&self) -> Option<u64> {
        Some(self.cache.seen_rv())
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.cache.sync(store);
        if key.kind != Kind::Pod {
            return Ok(Action::Done);
        }
        self.schedule(store, key, ctx.now)
            .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod summary_tests;

#[cfg(test)]
mod feasible_nodes_tests {
    use super::*;

    fn find(percentage: u32, all: usize) -> usize {
        Scheduler::new(SchedulerConfig {
            percentage_of_nodes_to_score: percentage,
            ..SchedulerConfig::default()
        })
        .nodes_to_find(all)
    }

    /// Upstream `numFeasibleNodesToFind`: all nodes below 100; adaptive 50% minus 1% per 125
    /// nodes, at least 5%, at least 100 nodes; a configured percentage as given.
    #[test]
    fn nodes_to_find_matches_upstream() {
        assert_eq!(find(0, 99), 99);
        assert_eq!(find(0, 100), 100);
        assert_eq!(find(0, 199), 100);
        assert_eq!(find(0, 1000), 420);
        assert_eq!(find(0, 5000), 500);
        assert_eq!(find(0, 6000), 300);
        assert_eq!(find(0, 20_000), 1000);
        assert_eq!(find(30, 1000), 300);
        assert_eq!(find(30, 200), 100);
        assert_eq!(find(100, 5000), 5000);
    }
}
