//! DynamicResources (PreFilter, Filter, PreScore, Score, Reserve, PreBind): the pod's
//! ResourceClaims are allocated by the structured allocator on the node, reserved for the pod,
//! and written with their binding conditions awaited before the pod binds.
//!
//! Key design decision: the allocator runs on as few nodes as possible. Its Filter is
//! deferrable: the framework runs the cheap filters on nodes first (and passes over nodes whose
//! free devices, counted per pool from store events, cannot hold the claims), scores the rest,
//! and runs the allocator best node first until one fits, whenever no other score depends on
//! which nodes are feasible. Pods with prioritized lists (whose score is the allocator's pick)
//! have the allocator run on every candidate first. A node the allocator rejects counts as
//! "cannot allocate all claims" exactly as upstream's Filter would have reported.
//!
//! Also here, as upstream's plugin has them: extended resources backed by DRA (a special claim
//! per pod, see [`crate::extended`]), DRA node allocatable resources ([`crate::nodealloc`]),
//! claims reserved for a PodGroup, the `reservedFor` limit, and binding conditions (PreBind
//! waits up to the binding timeout; a failure or timeout undoes the allocation and the pod is
//! scheduled again, preferring other nodes).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::{
    AllocationResult, ResourceClaim, ResourceClaimConsumerReference, ResourceSlice,
};
use allot_api::scheduling::v1beta1::PodGroup;
use allot_dra::{AllocationInput, CelCache, Explanation as DraExplanation, Features, Outcome};
use allot_runtime::SimTime;
use allot_store::{Kind, ObjectKey, Store, StoreError};

use crate::cache::{Cache, NodeInfo};
use crate::extended::{self, ExtendedPlan};
use crate::filters::{REASON_CANNOT_ALLOCATE, REASON_CLAIM_NOT_AVAILABLE, selector_matches};
use crate::framework::{
    BindCtx, ClusterEvents, Code, Ctx, CycleState, EnqueueExtensions, EventSet, Explanation,
    FilterPlugin, MAX_NODE_SCORE, NodeScore, Plugin, PodInfo, PreBindPlugin, PreFilterCtx,
    PreFilterPlugin, PreFilterResult, PreScorePlugin, ReservePlugin, ScorePlugin, Status,
    SummaryCheck, SummaryPass, default_normalize_score, explanation_data, queueing,
};
use crate::nodealloc;
use crate::resources::{Resources, pod_requests};

/// The plugin's name.
pub const NAME: &str = "DynamicResources";
/// Upstream's limit of `status.reservedFor` entries.
pub const RESERVED_FOR_MAX: usize = 256;
/// Upstream's `FirstAvailableDeviceRequestMaxSize`, the base of the prioritized-list score.
const FIRST_AVAILABLE_MAX: i64 = 8;
/// The finalizer the scheduler puts on claims it allocates.
const CLAIM_FINALIZER: &str = "resource.kubernetes.io/delete-protection";

/// How the plugin behaves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// DRA feature gates.
    pub features: Features,
    /// How long PreBind waits for binding conditions (`bindingTimeout`, default 600 s).
    pub binding_timeout_seconds: u64,
    /// DRAExtendedResource.
    pub extended_resource: bool,
    /// DRANodeAllocatableResources.
    pub node_allocatable_resources: bool,
    /// The allocator's budget per node and attempt (allot's `filterTimeout`, in search steps).
    pub allocation_budget: allot_dra::Budget,
}

/// One claim of the pod, resolved.
#[derive(Debug, Clone)]
struct PodClaim {
    /// `pod.spec.resourceClaims[].name`.
    entry: String,
    /// The claim (shared with the store).
    claim: Arc<ResourceClaim>,
    /// The PodGroup to reserve for instead of the pod: (name, uid).
    group: Option<(String, String)>,
}

/// Why the allocation failed on a node.
enum Rejection {
    /// The allocator found no devices.
    Devices(DraExplanation),
    /// Filter reasons (node allocatable resources).
    Reasons(Vec<String>),
    /// The allocator failed on the input itself (a selector's CEL runtime error, a request
    /// for a disabled feature): upstream's Filter returns an error status, which stops the
    /// attempt.
    Error(String),
}

/// The plugin's cycle state.
#[derive(Debug, Clone, Default)]
struct State {
    claims: Vec<PodClaim>,
    /// The claims to allocate (unallocated), in the pod's order.
    to_allocate: Vec<ResourceClaim>,
    /// A lower bound of the devices those claims need exclusively.
    needed_devices: usize,
    /// Extended resources DRA may serve.
    extended: Option<ExtendedPlan>,
    /// The pod's effective requests.
    request: Resources,
    /// The allocator (or node allocatable checks) must run on a node.
    run: bool,
    /// The free-device bound applies.
    check_bound: bool,
    /// Some allocated claim restricts the nodes by its node selector.
    selector_bound: bool,
    /// Some claim has a prioritized list (its score needs the allocation).
    prioritized: bool,
    /// Allocation results per node slot (the unallocated claims' in order, then the special
    /// claim's).
    results: HashMap<usize, Vec<AllocationResult>>,
    /// The allocator's explanation on the first node by name it rejected.
    explanation: Option<(String, DraExplanation)>,
    /// Nodes rejected by the free-device bound alone, by name.
    pruned: Vec<(String, usize)>,
    /// Preemption's what-if: the uids of the pods removed from the node being tried. A claim
    /// every pod of whose `reservedFor` is among them counts as deallocated.
    removed: BTreeSet<String>,
    /// The uids of pods added by a what-if that were not removed before (nominated pods).
    added: BTreeSet<String>,
    /// Per node name, the unallocated claims of the pods nominated there that this pod must
    /// leave devices for (higher or equal priority): allocated first, in memory.
    nominated: BTreeMap<String, Vec<ResourceClaim>>,
    /// PreBind: claims written; waiting for binding conditions until this time.
    written: bool,
    deadline: Option<SimTime>,
}

/// The claims in use on a node, gathered at (slices generation, claims version).
type InUse = (u64, u64, Vec<Arc<ResourceClaim>>);

/// The DynamicResources plugin.
pub struct DynamicResources {
    config: Config,
    cel: CelCache,
    /// Per node slot: the slices it sees, at a slices generation.
    slices: Vec<Option<(u64, Vec<Arc<ResourceSlice>>)>>,
    /// Per node slot: the allocated claims in use there, at (slices generation, claims
    /// version).
    in_use: Vec<Option<InUse>>,
}

impl std::fmt::Debug for DynamicResources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DynamicResources")
            .field("config", &self.config)
            .finish()
    }
}

impl DynamicResources {
    /// The plugin.
    pub fn new(config: Config) -> Self {
        DynamicResources {
            config,
            cel: CelCache::default(),
            slices: Vec::new(),
            in_use: Vec::new(),
        }
    }

    fn with_timestamp(&self) -> bool {
        self.config.features.device_binding_conditions
            && self.config.features.resource_claim_device_status
    }

    /// The slices a node sees (memoized per slices generation).
    fn node_slices(&mut self, cluster: &Cache, node: &NodeInfo) -> &[Arc<ResourceSlice>] {
        let slot = node.slot;
        if self.slices.len() <= slot {
            self.slices.resize(slot + 1, None);
        }
        let fresh = self.slices[slot]
            .as_ref()
            .is_some_and(|(g, _)| *g == node.slices_generation);
        if !fresh {
            self.slices[slot] = Some((node.slices_generation, cluster.visible_slices(slot)));
        }
        self.slices[slot]
            .as_ref()
            .map_or(&[], |(_, s)| s.as_slice())
    }

    /// The claims in use on a node (memoized while no claim of its pools changed).
    fn node_in_use(&mut self, cluster: &Cache, node: &NodeInfo) -> Vec<Arc<ResourceClaim>> {
        let slot = node.slot;
        if self.in_use.len() <= slot {
            self.in_use.resize(slot + 1, None);
        }
        let newest = cluster.in_use_version(slot);
        let fresh = self.in_use[slot]
            .as_ref()
            .is_some_and(|(g, at, _)| *g == node.slices_generation && *at >= newest);
        if !fresh {
            self.in_use[slot] = Some((
                node.slices_generation,
                cluster.claims_version(),
                cluster.in_use(slot),
            ));
        }
        self.in_use[slot]
            .as_ref()
            .map(|(_, _, c)| c.clone())
            .unwrap_or_default()
    }

    /// Runs the allocator on a node for the pod's unallocated claims and, when the node has
    /// no device plugin for an extended resource the pod requests, the special claim serving
    /// it (its result comes last); then checks the node allocatable resources the pod's
    /// devices consume.
    fn try_allocate(
        &mut self,
        cluster: &Cache,
        pod: &Pod,
        s: &State,
        node: &NodeInfo,
    ) -> Result<Vec<AllocationResult>, Rejection> {
        let special = s
            .extended
            .as_ref()
            .and_then(|plan| plan.claim_for_node(pod, &node.allocatable))
            .map(|(claim, _)| claim);
        let with_special: Vec<ResourceClaim>;
        let held = s.nominated.get(&node.name).map_or(&[][..], Vec::as_slice);
        let claims = match special {
            Some(claim) => {
                with_special = held
                    .iter()
                    .chain(&s.to_allocate)
                    .cloned()
                    .chain([claim])
                    .collect();
                &with_special[..]
            }
            None if held.is_empty() => &s.to_allocate[..],
            None => {
                with_special = held.iter().chain(&s.to_allocate).cloned().collect();
                &with_special[..]
            }
        };
        let results = if claims.is_empty() {
            Vec::new()
        } else {
            let in_use_arcs = self.node_in_use(cluster, node);
            let slices_owned: Vec<Arc<ResourceSlice>> = self.node_slices(cluster, node).to_vec();
            // References to the cache's shared objects: the allocator copies nothing.
            let slices: Vec<&ResourceSlice> = slices_owned.iter().map(|s| &**s).collect();
            let in_use: Vec<&ResourceClaim> = in_use_arcs
                .iter()
                .map(|c| &**c)
                .filter(|c| !freed(c, &s.removed))
                .collect();
            let input = AllocationInput {
                node: &node.node,
                classes: &cluster.classes,
                slices: &slices,
                allocated_claims: &in_use,
                claims,
                taint_rules: &cluster.taint_rules,
                namespaces: &cluster.namespaces,
            };
            match allot_dra::allocate_within(
                &input,
                &self.config.features,
                &self.cel,
                &self.config.allocation_budget,
            ) {
                // The nominated pods' results come first: not this pod's.
                Ok(Outcome::Allocated(mut results)) => {
                    results.split_off(held.len().min(results.len()))
                }
                Ok(Outcome::Unschedulable(explanation)) => {
                    return Err(Rejection::Devices(explanation));
                }
                // Upstream's filter timeout: an error that stops the attempt, naming the node
                // (kube-scheduler 1.37 returns it as an error, not as "unschedulable").
                Ok(Outcome::GaveUp(gave_up)) => {
                    return Err(Rejection::Error(format!(
                        "node {}: timed out trying to allocate devices: {gave_up}",
                        node.name
                    )));
                }
                Err(e) => return Err(Rejection::Error(e.to_string())),
            }
        };
        if self.config.node_allocatable_resources
            && self.node_has_allocatable_devices(cluster, node)
        {
            let reasons =
                match self.node_allocatable_statuses(cluster, pod, s, node, &results, None) {
                    Ok(statuses) => {
                        nodealloc::fit_reasons(pod, &statuses, &node.allocatable, &node.requested)
                    }
                    Err(reason) => vec![reason],
                };
            if !reasons.is_empty() {
                return Err(Rejection::Reasons(reasons));
            }
        }
        Ok(results)
    }

    /// Whether any device the node sees declares node allocatable resources (else the pod's
    /// footprint is its own requests, which NodeResourcesFit checked).
    fn node_has_allocatable_devices(&mut self, cluster: &Cache, node: &NodeInfo) -> bool {
        self.node_slices(cluster, node).iter().any(|slice| {
            slice
                .spec
                .devices
                .iter()
                .any(|d| !d.node_allocatable_resources.is_empty())
        })
    }

    /// The pod's `nodeAllocatableResourceClaimStatuses` on a node, for its claims' existing
    /// allocations and `results` (the unallocated claims' in order, then the special claim's,
    /// named `special_name` or upstream's in-memory name); `Err` with a filter reason when a
    /// claim with a mapped device is already used by another pod, or a device is missing.
    fn node_allocatable_statuses(
        &mut self,
        cluster: &Cache,
        pod: &Pod,
        s: &State,
        node: &NodeInfo,
        results: &[AllocationResult],
        special_name: Option<&str>,
    ) -> Result<Vec<nodealloc::ClaimStatus>, String> {
        let slices = self.node_slices(cluster, node).to_vec();
        let mut new = results.iter();
        let mut allocated = Vec::new();
        for pc in &s.claims {
            let allocation = match &pc.claim.status.allocation {
                Some(existing) => {
                    // Claims with mapped devices cannot be shared across pods.
                    if !pc.claim.status.reserved_for.is_empty()
                        && !reserved_for_consumer(pod, pc)
                        && nodealloc::has_mapped_device(existing, &slices, &node.node)
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
        nodealloc::claim_statuses(pod, &allocated, &slices, &node.node)
    }

    /// A lower bound of the devices the special claim needs on a node: the pod's effective
    /// request of each resource DRA serves there.
    fn extended_devices(s: &State, node: &NodeInfo) -> usize {
        s.extended.as_ref().map_or(0, |plan| {
            plan.classes
                .keys()
                .filter(|r| plan.delegated(&node.allocatable, r))
                .map(|r| usize::try_from(s.request.get(r)).unwrap_or(0))
                .sum()
        })
    }
}

/// Resolves a pod's claims (upstream `foreachPodResourceClaim`), or says why the pod has to
/// wait (the PreFilter message, with the claims to wait for).
fn resolve_claims(store: &Store, pod: &Pod) -> Result<Vec<PodClaim>, (String, Vec<String>)> {
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
                        && c.resource_claim_template_name == pod_claim.resource_claim_template_name
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

/// Whether an allocated claim is ready for binding: `Ok(true)` when every binding condition is
/// True, `Err` naming the failure condition that is True (upstream `isClaimReadyForBinding`).
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

/// Removes the pod from its claims' `reservedFor` and deallocates claims nobody else reserves
/// (upstream Unreserve followed by PostFilter's deallocation).
fn unreserve_claims(store: &mut Store, pod: &Pod, claims: &[PodClaim]) -> Result<(), String> {
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
            Err(source) => return Err(format!("unreserve {ns}/{name}: {source}")),
        }
    }
    Ok(())
}

/// The prioritized-list score of an allocation (upstream `computeScore`): for each chosen
/// subrequest at index i, 8 − i.
fn dra_score(claims: &[ResourceClaim], results: &[AllocationResult]) -> i64 {
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
    let exact = |mode: Option<&allot_api::resource::v1::DeviceAllocationMode>| {
        mode.is_none_or(|m| m.as_str() == "ExactCount")
    };
    let mut total = 0usize;
    for claim in claims {
        for request in &claim.spec.devices.requests {
            if let Some(exactly) = &request.exactly {
                if exact(exactly.allocation_mode.as_ref()) && exactly.admin_access != Some(true) {
                    total += usize::try_from(exactly.count.unwrap_or(1)).unwrap_or(0);
                }
            } else if !request.first_available.is_empty() {
                total += request
                    .first_available
                    .iter()
                    .map(|s| {
                        if exact(s.allocation_mode.as_ref()) {
                            usize::try_from(s.count.unwrap_or(1)).unwrap_or(0)
                        } else {
                            0
                        }
                    })
                    .min()
                    .unwrap_or(0);
            }
        }
    }
    total
}

/// A rejection in the shape of `PreFilter` (every node).
fn reject(message: String) -> (PreFilterResult, Status) {
    (PreFilterResult::all_nodes(), Status::unresolvable(message))
}

impl Plugin for DynamicResources {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_pre_filter(&mut self) -> Option<&mut dyn PreFilterPlugin> {
        Some(self)
    }

    fn as_filter(&mut self) -> Option<&mut dyn FilterPlugin> {
        Some(self)
    }

    fn as_pre_score(&mut self) -> Option<&mut dyn PreScorePlugin> {
        Some(self)
    }

    fn as_score(&mut self) -> Option<&mut dyn ScorePlugin> {
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

impl EnqueueExtensions for DynamicResources {
    fn requeue_on(&self) -> EventSet {
        queueing::DRA | queueing::POD_GROUP | queueing::NODE_ADDED | queueing::NODE_LABEL
    }

    fn events(&self) -> ClusterEvents {
        ClusterEvents::default()
    }

    /// The pod's claims (or the one it waits to exist).
    fn wait_for(&self, state: &CycleState) -> Vec<ObjectKey> {
        state
            .read::<Waits>()
            .map(|w| w.0.clone())
            .unwrap_or_default()
    }
}

/// The claims a pod's retry waits for (kept apart from [`State`]: written on every path).
#[derive(Debug, Clone)]
struct Waits(Vec<ObjectKey>);

impl PreFilterPlugin for DynamicResources {
    /// Resolves the pod's claims (deallocating those whose binding failed or timed out), and
    /// rejects the pod when a claim is missing, in use by too many consumers, or names a
    /// device class that does not exist. Skip for a pod without claims or extended resources
    /// DRA serves.
    fn pre_filter(
        &mut self,
        ctx: &mut PreFilterCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
    ) -> (PreFilterResult, Status) {
        let pod = &pod.pod;
        let ns = pod.metadata.namespace.clone();
        let waits = |names: &[String]| {
            Waits(
                names
                    .iter()
                    .map(|n| ObjectKey::new(Kind::ResourceClaim, ns.clone(), n.clone()))
                    .collect(),
            )
        };
        let mut claims = match resolve_claims(ctx.store, pod) {
            Ok(claims) => claims,
            Err((message, names)) => {
                state.write(waits(&names));
                return reject(message);
            }
        };
        // Claims whose binding failed or timed out earlier are deallocated first.
        if self.with_timestamp() {
            let timeout = self.config.binding_timeout_seconds;
            let now = ctx.now;
            let timed_out = |claim: &ResourceClaim| {
                claim
                    .status
                    .allocation
                    .as_ref()
                    .and_then(|a| a.allocation_timestamp.as_deref())
                    .and_then(SimTime::parse_rfc3339)
                    .is_some_and(|t| t.plus_seconds(timeout) <= now)
            };
            let stale: Vec<PodClaim> = claims
                .iter()
                .filter(|pc| {
                    has_binding_conditions(&pc.claim)
                        && (claim_ready(&pc.claim).is_err()
                            || (!matches!(claim_ready(&pc.claim), Ok(true))
                                && timed_out(&pc.claim)))
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
                if let Err(e) = unreserve_claims(ctx.store, pod, &stale) {
                    return (PreFilterResult::all_nodes(), Status::error(e));
                }
                claims = match resolve_claims(ctx.store, pod) {
                    Ok(claims) => claims,
                    Err((message, names)) => {
                        state.write(waits(&names));
                        return reject(message);
                    }
                };
            }
        }
        let claim_names: Vec<String> = claims
            .iter()
            .map(|pc| pc.claim.metadata.name.clone())
            .collect();
        state.write(waits(&claim_names));
        // Claims in use by others, unknown device classes.
        for pc in &claims {
            let claim = &pc.claim;
            if claim.status.allocation.is_some()
                && claim.status.reserved_for.len() >= RESERVED_FOR_MAX
                && !reserved_for_consumer(pod, pc)
            {
                return reject(format!(
                    "resourceclaim in use (claim {}/{} is reserved for {} consumers, the limit)",
                    claim.metadata.namespace, claim.metadata.name, RESERVED_FOR_MAX
                ));
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
                        if !ctx.cluster.classes.iter().any(|c| c.metadata.name == class) {
                            return reject(format!(
                                "request {request_name}: device class {class} does not exist"
                            ));
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
        let request = pod_requests(pod);
        let extended = if self.config.extended_resource {
            ExtendedPlan::for_pod(&request, &ctx.cluster.classes)
        } else {
            None
        };
        let any_allocated = claims.iter().any(|pc| pc.claim.status.allocation.is_some());
        let run = !to_allocate.is_empty()
            || extended.is_some()
            || (self.config.node_allocatable_resources && any_allocated);
        let selector_bound = claims.iter().any(|pc| {
            pc.claim
                .status
                .allocation
                .as_ref()
                .is_some_and(|a| a.node_selector.is_some())
        });
        if !run && !selector_bound {
            return (PreFilterResult::all_nodes(), Status::skip());
        }
        let prioritized = self.config.features.prioritized_list
            && to_allocate.iter().any(|c| {
                c.spec
                    .devices
                    .requests
                    .iter()
                    .any(|r| !r.first_available.is_empty())
            });
        let nominated = nominated_claims(ctx, pod);
        state.write(State {
            nominated,
            needed_devices: min_devices(&to_allocate),
            check_bound: !to_allocate.is_empty() || extended.is_some(),
            claims,
            to_allocate,
            extended,
            request,
            run,
            selector_bound,
            prioritized,
            ..State::default()
        });
        (PreFilterResult::all_nodes(), Status::success())
    }

    /// Preemption's what-if: the removed pod's claims count as deallocated once no remaining
    /// consumer reserves them (see [`freed`]).
    fn remove_pod(
        &mut self,
        state: &mut CycleState,
        _pod: &PodInfo,
        removed: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            let uid = &removed.pod.metadata.uid;
            if !s.added.remove(uid) {
                s.removed.insert(uid.clone());
            }
        }
        Status::success()
    }

    /// Undoes [`PreFilterPlugin::remove_pod`].
    fn add_pod(
        &mut self,
        state: &mut CycleState,
        _pod: &PodInfo,
        added: &PodInfo,
        _node: &NodeInfo,
    ) -> Status {
        if let Some(s) = state.read_mut::<State>() {
            let uid = &added.pod.metadata.uid;
            if !s.removed.remove(uid) {
                s.added.insert(uid.clone());
            }
        }
        Status::success()
    }
}

/// The unallocated claims of the pods nominated to each node that `pod` must leave room for
/// (upstream counts nominated pods on their node; for their claims allot allocates them first
/// on that node, in memory, so that a lower-priority pod cannot take the devices preemption
/// freed for them).
fn nominated_claims(ctx: &PreFilterCtx<'_>, pod: &Pod) -> BTreeMap<String, Vec<ResourceClaim>> {
    let mut out = BTreeMap::new();
    if ctx.cluster.nominated.is_empty() {
        return out;
    }
    let key = ObjectKey::new(
        Kind::Pod,
        pod.metadata.namespace.clone(),
        pod.metadata.name.clone(),
    );
    let priority = pod.spec.priority.unwrap_or(0);
    for node in ctx.cluster.nominated.keys() {
        let mut claims = Vec::new();
        for q in ctx.cluster.nominated_for(node, priority, &key) {
            if let Ok(resolved) = resolve_claims(ctx.store, &q.pod) {
                claims.extend(
                    resolved
                        .iter()
                        .filter(|pc| pc.claim.status.allocation.is_none())
                        .map(|pc| (*pc.claim).clone()),
                );
            }
        }
        if !claims.is_empty() {
            out.insert(node.clone(), claims);
        }
    }
    out
}

/// Whether preemption's removals free a claim: it is reserved for pods only, and every one of
/// them was removed (allot's rule; a claim reserved for a PodGroup or for no one stays).
fn freed(claim: &ResourceClaim, removed: &BTreeSet<String>) -> bool {
    let reserved = &claim.status.reserved_for;
    !removed.is_empty()
        && !reserved.is_empty()
        && reserved
            .iter()
            .all(|r| r.resource == "pods" && removed.contains(&r.uid))
}

impl FilterPlugin for DynamicResources {
    /// A claim allocated for other nodes rejects the node; then the free-device bound, then
    /// the allocator (whose results the cycle keeps for Reserve).
    fn filter(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &NodeInfo,
    ) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::success();
        };
        let elsewhere = s.claims.iter().any(|pc| {
            pc.claim
                .status
                .allocation
                .as_ref()
                .and_then(|a| a.node_selector.as_ref())
                .is_some_and(|sel| !selector_matches(&node.node, sel))
        });
        if elsewhere {
            return Status::unresolvable(REASON_CLAIM_NOT_AVAILABLE);
        }
        if !s.run {
            return Status::success();
        }
        if s.check_bound
            && s.removed.is_empty()
            && ctx
                .cluster
                .free_devices(node.slot)
                .is_some_and(|free| free < s.needed_devices + Self::extended_devices(s, node))
        {
            let entry = (node.name.clone(), node.slot);
            if let Some(s) = state.read_mut::<State>() {
                s.pruned.push(entry);
            }
            return Status::unschedulable(REASON_CANNOT_ALLOCATE);
        }
        match self.try_allocate(ctx.cluster, &pod.pod, s, node) {
            Ok(results) => {
                if let Some(s) = state.read_mut::<State>() {
                    s.results.insert(node.slot, results);
                }
                Status::success()
            }
            Err(Rejection::Devices(explanation)) => {
                if let Some(s) = state.read_mut::<State>()
                    && s.explanation
                        .as_ref()
                        .is_none_or(|(n, _)| node.name.as_str() < n.as_str())
                {
                    s.explanation = Some((node.name.clone(), explanation));
                }
                Status::unschedulable(REASON_CANNOT_ALLOCATE)
            }
            Err(Rejection::Reasons(reasons)) => Status::with_reasons(
                Code::Unschedulable,
                reasons.into_iter().map(Into::into).collect(),
            ),
            Err(Rejection::Error(message)) => Status::error(message),
        }
    }

    /// The free-device bound rejects nodes for sure; without claims allocated for other nodes
    /// the filter may run after scoring.
    fn summary_check(&self, state: &CycleState, _pod: &PodInfo) -> SummaryCheck {
        let Some(s) = state.read::<State>() else {
            return SummaryCheck::ALWAYS;
        };
        SummaryCheck {
            pass: SummaryPass::Never,
            min_free_devices: if s.check_bound { s.needed_devices } else { 0 },
        }
    }

    fn deferrable(&self, state: &CycleState) -> bool {
        state.read::<State>().is_some_and(|s| !s.selector_bound)
    }

    /// The allocator's explanation on the first node by name it rejected (running it on the
    /// first node the bound rejected, by name, when it rejected none itself).
    fn explain(
        &mut self,
        ctx: &Ctx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        _rejected: &[(&NodeInfo, &Status)],
    ) -> Result<Option<Explanation>, String> {
        let Some(s) = state.read::<State>() else {
            return Ok(None);
        };
        let mut explanation = s.explanation.as_ref().map(|(_, e)| e.clone());
        if explanation.is_none()
            && let Some((_, slot)) = s.pruned.iter().min_by(|a, b| a.0.cmp(&b.0))
            && let Some(node) = ctx.cluster.node(*slot)
        {
            match self.try_allocate(ctx.cluster, &pod.pod, s, node) {
                Err(Rejection::Devices(e)) => explanation = Some(e),
                // Upstream's Filter would have run on that node and stopped the attempt.
                Err(Rejection::Error(message)) => {
                    return Err(format!("running \"{NAME}\" filter plugin: {message}"));
                }
                _ => {}
            }
        }
        Ok(explanation.map(|e| Explanation {
            text: e.to_string().trim_end().to_string(),
            data: Some(Box::new(e)),
        }))
    }

    /// A pod with allocated claims depends on them: its verdicts are not reused.
    fn cacheable(&self, state: &CycleState) -> bool {
        state.read::<State>().is_none_or(|s| {
            s.nominated.is_empty()
                && s.claims
                    .iter()
                    .all(|pc| pc.claim.status.allocation.is_none())
        })
    }

    /// The specs of the claims to allocate.
    fn signature(&self, state: &CycleState) -> String {
        state.read::<State>().map_or(String::new(), |s| {
            let specs: Vec<_> = s.to_allocate.iter().map(|c| &c.spec).collect();
            format!("{specs:?}")
        })
    }

    /// The explanation names the pod's own claims.
    fn rerender(&self, state: &CycleState, _pod: &PodInfo, explanation: &Explanation) -> String {
        let (Some(e), Some(s)) = (
            explanation_data::<DraExplanation>(explanation),
            state.read::<State>(),
        ) else {
            return explanation.text.clone();
        };
        let mut e = e.clone();
        let names: Vec<String> = s
            .to_allocate
            .iter()
            .map(|claim| format!("{}/{}", claim.metadata.namespace, claim.metadata.name))
            .collect();
        e.rename_claims(&names);
        e.to_string().trim_end().to_string()
    }
}

impl PreScorePlugin for DynamicResources {
    /// Only prioritized lists score.
    fn pre_score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &mut CycleState,
        _pod: &PodInfo,
        _nodes: &[usize],
    ) -> Status {
        match state.read::<State>() {
            Some(s) if s.prioritized => Status::success(),
            _ => Status::skip(),
        }
    }
}

impl ScorePlugin for DynamicResources {
    fn score(
        &mut self,
        _ctx: &Ctx<'_>,
        state: &CycleState,
        _pod: &PodInfo,
        node: &NodeInfo,
    ) -> Result<i64, Status> {
        let Some(s) = state.read::<State>() else {
            return Ok(0);
        };
        Ok(s.results
            .get(&node.slot)
            .map_or(0, |results| dra_score(&s.to_allocate, results)))
    }

    fn normalize(&mut self, _state: &CycleState, _pod: &PodInfo, scores: &mut [NodeScore]) {
        default_normalize_score(MAX_NODE_SCORE, false, scores);
    }

    fn normalize_depends_on_set(&self) -> bool {
        true
    }
}

impl ReservePlugin for DynamicResources {
    /// Writes the allocations and reservations (upstream assumes them in memory here and
    /// writes them in PreBind; allot's store is the scheduler's cache of record, so the
    /// write is the assumption): the next scheduling cycles see the devices taken, also while
    /// the pod waits at Permit (a gang), and Unreserve gives them back.
    fn reserve(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        self.write_once(ctx, state, pod, node)
    }

    /// Removes the pod from its claims' `reservedFor` (deallocating claims nobody else
    /// reserves) and, unless the pod is being deleted, deletes its special claim and clears
    /// its DRA status fields.
    fn unreserve(
        &mut self,
        ctx: &mut BindCtx<'_>,
        _state: &mut CycleState,
        pod: &PodInfo,
        _node: &str,
    ) {
        let Some(current) = ctx
            .store
            .get_shared::<Pod>(&pod.pod.metadata.namespace, &pod.pod.metadata.name)
            .cloned()
        else {
            return;
        };
        if let Ok(claims) = resolve_claims(ctx.store, &current) {
            let _ = unreserve_claims(ctx.store, &current, &claims);
        }
        if current.metadata.deletion_timestamp.is_none() {
            let _ = extended::release(
                ctx.store,
                &current.metadata.namespace,
                &current.metadata.name,
            );
        }
    }
}

impl PreBindPlugin for DynamicResources {
    /// Writes the allocations and reservations (and the special claim and the pod's DRA status
    /// fields) once, then waits until every binding condition of the pod's devices is True:
    /// `Wait` until the binding timeout, a failure when a binding failure condition is True or
    /// the timeout passed.
    fn pre_bind(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        let written = self.write_once(ctx, state, pod, node);
        if !written.is_success() {
            return written;
        }
        let Some(deadline) = state.read::<State>().and_then(|s| s.deadline) else {
            return Status::success();
        };
        // Waiting for binding conditions: the claims as they are now.
        let Some(current) = ctx
            .store
            .get_shared::<Pod>(&pod.pod.metadata.namespace, &pod.pod.metadata.name)
            .cloned()
        else {
            return Status::unschedulable("pod deleted while waiting for binding conditions");
        };
        let claims = match resolve_claims(ctx.store, &current) {
            Ok(claims) => claims,
            Err((message, _)) => return Status::unschedulable(message),
        };
        let special = extended::claim_name(&current).and_then(|name| {
            ctx.store
                .get::<ResourceClaim>(&current.metadata.namespace, &name)
                .cloned()
        });
        let mut failure = None;
        let mut ready = true;
        for claim in claims.iter().map(|pc| &*pc.claim).chain(special.as_ref()) {
            match claim_ready(claim) {
                Ok(true) => {}
                Ok(false) => ready = false,
                Err(message) => failure = Some(message),
            }
        }
        if let Some(message) = failure {
            return Status::unschedulable(message);
        }
        if ready {
            return Status::success();
        }
        if ctx.now < deadline {
            return Status::wait_until(deadline);
        }
        Status::unschedulable("binding conditions were not met before the binding timeout")
    }
}

impl DynamicResources {
    /// Writes the pod's claims once per cycle (Reserve, or PreBind when Reserve did not run),
    /// and starts the binding-condition wait when a device has conditions.
    fn write_once(
        &mut self,
        ctx: &mut BindCtx<'_>,
        state: &mut CycleState,
        pod: &PodInfo,
        node: &str,
    ) -> Status {
        let Some(s) = state.read::<State>() else {
            return Status::success();
        };
        if s.written {
            return Status::success();
        }
        let slot = ctx.cluster.slot_of(node);
        let results = slot
            .and_then(|slot| s.results.get(&slot).cloned())
            .unwrap_or_default();
        let needs_wait = match self.write_claims(ctx, s, &pod.pod, slot, results) {
            Ok(wait) => wait,
            Err(message) => return Status::error(message),
        };
        let deadline = (needs_wait && self.with_timestamp())
            .then(|| ctx.now.plus_seconds(self.config.binding_timeout_seconds));
        if let Some(s) = state.read_mut::<State>() {
            s.written = true;
            s.deadline = deadline;
        }
        Status::success()
    }

    /// Writes the allocations and reservations of the pod's claims on the chosen node, then
    /// the DRA extras; `Ok(true)` when some device has binding conditions to wait for.
    fn write_claims(
        &mut self,
        ctx: &mut BindCtx<'_>,
        s: &State,
        pod: &Pod,
        slot: Option<usize>,
        results: Vec<AllocationResult>,
    ) -> Result<bool, String> {
        let stamp = ctx.stamp.to_string();
        let with_timestamp = self.with_timestamp();
        let mut result_iter = results.into_iter();
        let mut needs_wait = false;
        for pc in &s.claims {
            let allocation = if pc.claim.status.allocation.is_none() {
                result_iter.next()
            } else {
                None
            };
            if reserved_for_consumer(pod, pc) && allocation.is_none() {
                needs_wait |= has_binding_conditions(&pc.claim);
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
            let written = ctx.store.modify::<ResourceClaim, _>(&ns, &name, |claim| {
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
                has_binding_conditions(claim)
            });
            match written {
                Ok(wait) => needs_wait |= wait,
                Err(source) => return Err(format!("reserve claim {ns}/{name}: {source}")),
            }
        }
        if s.run
            && let Some(slot) = slot
        {
            needs_wait |= self.reserve_extras(ctx, s, pod, slot, result_iter.next())?;
        }
        Ok(needs_wait)
    }

    /// Reserve for the DRA extras on the chosen node: creates the special claim for extended
    /// resources with its allocation (`special`), reserved for the pod, and records
    /// `status.extendedResourceClaimStatus` and `status.nodeAllocatableResourceClaimStatuses`
    /// on the pod (upstream PreBind). `Ok(true)` when the special claim's devices have binding
    /// conditions to wait for.
    fn reserve_extras(
        &mut self,
        ctx: &mut BindCtx<'_>,
        s: &State,
        pod: &Pod,
        slot: usize,
        special: Option<AllocationResult>,
    ) -> Result<bool, String> {
        let cluster = ctx.cluster;
        let Some(node) = cluster.node(slot) else {
            return Ok(false);
        };
        let ns = pod.metadata.namespace.clone();
        let mut special_status = None;
        let mut special_claim: Option<(String, AllocationResult)> = None;
        if let Some(mut allocation) = special
            && let Some((mut claim, mappings)) = s
                .extended
                .as_ref()
                .and_then(|plan| plan.claim_for_node(pod, &node.allocatable))
        {
            claim.metadata.name.clear();
            let created = ctx.store.create(claim, ctx.stamp).map_err(|e| {
                format!("create extended resource claim {}: {e}", pod.metadata.name)
            })?;
            let name = created.metadata.name.clone();
            if self.with_timestamp() && allocation.allocation_timestamp.is_none() {
                allocation.allocation_timestamp = Some(ctx.stamp.to_string());
            }
            let consumer = ResourceClaimConsumerReference {
                api_group: String::new(),
                resource: "pods".into(),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
            };
            let written = allocation.clone();
            ctx.store
                .modify::<ResourceClaim, _>(&ns, &name, |claim| {
                    claim.metadata.finalizers.push(CLAIM_FINALIZER.into());
                    claim.status.allocation = Some(written);
                    claim.status.reserved_for.push(consumer);
                })
                .map_err(|e| format!("reserve claim {ns}/{name}: {e}"))?;
            special_status = Some(extended::status_json(&name, &mappings));
            special_claim = Some((name, allocation));
        }
        let mut statuses = Vec::new();
        if self.config.node_allocatable_resources
            && self.node_has_allocatable_devices(cluster, node)
        {
            // The claims as written by Reserve.
            let refreshed: Vec<PodClaim> = s
                .claims
                .iter()
                .map(|pc| PodClaim {
                    claim: ctx
                        .store
                        .get_shared::<ResourceClaim>(
                            &pc.claim.metadata.namespace,
                            &pc.claim.metadata.name,
                        )
                        .cloned()
                        .unwrap_or_else(|| pc.claim.clone()),
                    ..pc.clone()
                })
                .collect();
            let now = State {
                claims: refreshed,
                ..State::default()
            };
            let results: Vec<AllocationResult> =
                special_claim.iter().map(|(_, a)| a.clone()).collect();
            let name = special_claim.as_ref().map(|(n, _)| n.as_str());
            statuses = self
                .node_allocatable_statuses(cluster, pod, &now, node, &results, name)
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
        ctx.store
            .modify::<Pod, _>(&ns, &pod.metadata.name, |p| {
                if let Some(status) = &special_status {
                    p.status.extended_resource_claim_status = Some(status.clone());
                }
                if !statuses.is_empty() {
                    p.status.node_allocatable_resource_claim_statuses =
                        Some(nodealloc::statuses_json(&statuses));
                }
            })
            .map_err(|e| format!("update pod {ns}/{}: {e}", pod.metadata.name))?;
        Ok(wait)
    }
}
