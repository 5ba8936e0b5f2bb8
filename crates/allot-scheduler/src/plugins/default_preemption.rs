//! DefaultPreemption (PostFilter): when a pod fits nowhere, find lower-priority pods whose
//! removal makes it fit on some node, mark them for deletion and nominate that node (upstream
//! `plugins/defaultpreemption` and `framework/preemption`, kube-scheduler 1.37).
//!
//! The rule, as upstream's:
//! - A pod with `preemptionPolicy: Never` preempts nothing ("not eligible due to
//!   preemptionPolicy=Never."); neither does a pod whose nominated node still has a
//!   lower-priority pod terminating because of an earlier preemption.
//! - Candidate nodes are those some filter rejected as `Unschedulable` (not
//!   `UnschedulableAndUnresolvable`: removing pods cannot help there), in name order.
//! - On a candidate, every pod of strictly lower priority is removed (the PreFilter extensions
//!   of the other plugins are told, so that inter-pod affinity, spread and DRA see the node
//!   without them); if the pod still does not fit, the node is no candidate. Otherwise the
//!   removed pods are put back one by one, most important first (higher priority, then the
//!   one that started earlier), those whose return would break a PodDisruptionBudget first;
//!   a pod whose return keeps the pod fitting is spared ("reprieved"), the others are victims.
//! - Dry runs stop once `max(minCandidateNodesAbsolute, minCandidateNodesPercentage% of the
//!   candidates)` nodes gave victims, one of them without PDB violations (at most that many
//!   candidates with violations and that many without are kept). Upstream starts at a
//!   random offset; allot starts at the first node by name, to stay deterministic.
//! - Among the candidates the node chosen has, in order: the fewest PDB violations, the lowest
//!   highest victim priority, the smallest sum of victim priorities (each plus 2^31), the
//!   fewest victims, the latest earliest start time among its highest-priority victims; then
//!   the first in dry-run order (nodes without PDB violations first, by name).
//! - The victims get the `DisruptionTarget` condition (reason `PreemptionByScheduler`) and a
//!   deletion timestamp with their `terminationGracePeriodSeconds` (30 by default); the
//!   scheduler deletes them when that grace period has passed on the clock. Each gets
//!   upstream's Event (reason `Preempted`, action `Preempting`, `related` the preemptor,
//!   "Preempted by pod <preemptor uid> on node <node>", reported as the preemptor's
//!   `schedulerName`), recorded here, where the decision is made. A victim already being
//!   deleted is left alone (no condition, no Event), as upstream's executor skips it. The pod
//!   gets the node in `status.nominatedNodeName` and is scheduled once the victims are gone.
//!
//! **Preemption that frees devices (allot's rule; upstream does not do this yet).** The
//! DynamicResources plugin's PreFilter extension follows the removals: a claim allocated on
//! the node counts as deallocated while every pod in its `status.reservedFor` has been
//! removed (a claim reserved for a PodGroup, or for no pod at all, is never freed this way).
//! Its filter then allocates the preemptor's claims as if those devices were free. The same
//! reprieve loop keeps the victims minimal: a pod whose return still lets the claims be
//! allocated (its devices are not needed, or it holds none) is spared, so no pod is evicted
//! whose removal frees nothing the pod needs, and no pod of equal or higher priority is ever
//! considered. The claims are then deallocated by the ResourceClaim controller when their
//! pods are gone, as always.
//!
//! - The dry run's filters count the pods nominated to the node with a priority at least the
//!   pod's as placed there (upstream `RunFilterPluginsWithNominatedPods`): a node another
//!   preemptor already claimed is no candidate unless it has room for both.
//!
//! Not modelled: lower-priority pods nominated to the chosen node keep their nomination.

use std::collections::BTreeMap;

use allot_api::core::v1::{Pod, PodCondition, PreemptionPolicy};
use allot_api::policy::v1::PodDisruptionBudget;
use allot_store::{Kind, ObjectKey};
use serde::Deserialize;

use crate::cache::NodeInfo;
use crate::framework::{
    BindCtx, Code, Ctx, CycleState, Diagnosis, FilterHandle, FitError, NodeStatuses, Plugin,
    PodInfo, PostFilterOutcome, PostFilterPlugin, Status, Victim,
};
use crate::labels::Selector;
use crate::resources::{pod_non_zero_requests_with, pod_requests};

/// The plugin's name.
pub const NAME: &str = "DefaultPreemption";

/// The `DisruptionTarget` reason of a pod preempted by the scheduler.
pub const REASON_PREEMPTION: &str = "PreemptionByScheduler";
/// A node with no lower-priority pod.
const NO_VICTIMS: &str = "No preemption victims found for incoming pod";
/// A node where removing pods cannot help.
const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
/// The grace period of a pod that does not say (the API server's default).
const DEFAULT_GRACE_SECONDS: i64 = 30;

/// `DefaultPreemptionArgs`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Args {
    /// Minimum share of candidate nodes to dry-run (default 10).
    #[serde(default)]
    pub min_candidate_nodes_percentage: Option<i32>,
    /// Minimum number of candidate nodes to dry-run (default 100).
    #[serde(default)]
    pub min_candidate_nodes_absolute: Option<i32>,
    /// Set by the API's defaulting; ignored.
    #[serde(default)]
    pub api_version: Option<String>,
    /// Set by the API's defaulting; ignored.
    #[serde(default)]
    pub kind: Option<String>,
}

/// The DefaultPreemption plugin.
#[derive(Debug)]
pub struct DefaultPreemption {
    percentage: i32,
    absolute: i32,
}

impl DefaultPreemption {
    /// The plugin, or upstream's validation message for its arguments.
    pub fn new(args: Args) -> Result<Self, String> {
        let percentage = args.min_candidate_nodes_percentage.unwrap_or(10);
        let absolute = args.min_candidate_nodes_absolute.unwrap_or(100);
        if !(0..=100).contains(&percentage) {
            return Err(format!(
                "minCandidateNodesPercentage: Invalid value: {percentage}: not in valid range [0, 100]"
            ));
        }
        if absolute < 0 {
            return Err(format!(
                "minCandidateNodesAbsolute: Invalid value: {absolute}: not in valid range [0, inf)"
            ));
        }
        if percentage == 0 && absolute == 0 {
            return Err(
                "minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute"
                    .into(),
            );
        }
        Ok(DefaultPreemption {
            percentage,
            absolute,
        })
    }

    /// Upstream `calculateNumCandidates`.
    fn num_candidates(&self, nodes: usize) -> usize {
        let nodes = nodes as i64;
        let n = (nodes * i64::from(self.percentage) / 100).max(i64::from(self.absolute));
        n.min(nodes).max(0) as usize
    }
}

impl Plugin for DefaultPreemption {
    fn name(&self) -> &'static str {
        NAME
    }

    fn as_post_filter(&mut self) -> Option<&mut dyn PostFilterPlugin> {
        Some(self)
    }
}

/// A pod's priority (0 when unset).
pub fn priority(pod: &Pod) -> i32 {
    pod.spec.priority.unwrap_or(0)
}

/// Whether a pod is terminating because the scheduler preempted it.
pub fn terminating_by_preemption(pod: &Pod) -> bool {
    pod.metadata.deletion_timestamp.is_some()
        && pod.status.conditions.iter().any(|c| {
            c.type_ == "DisruptionTarget"
                && c.status == "True"
                && c.reason.as_deref() == Some(REASON_PREEMPTION)
        })
}

/// A pod's start time as RFC 3339 text (`now` when it has none, as upstream's
/// `GetPodStartTime`); such texts compare in time order.
fn start_time(pod: &Pod, now: &str) -> String {
    pod.status
        .start_time
        .as_ref()
        .and_then(|v| v.as_str())
        .unwrap_or(now)
        .to_string()
}

/// An RFC 3339 UTC time as text that sorts in time order, with or without fractional
/// seconds (`…:05Z` and `…:05.000000001Z` become `…:05000000000` and `…:05000000001`).
fn time_key(text: &str) -> String {
    let text = text.trim_end_matches('Z');
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    format!("{whole}{fraction:0<9}")
}

/// Upstream `MoreImportantPod`, made total: higher priority, then earlier start, then key.
fn more_important(a: &Pod, b: &Pod, now: &str) -> std::cmp::Ordering {
    priority(b)
        .cmp(&priority(a))
        .then_with(|| time_key(&start_time(a, now)).cmp(&time_key(&start_time(b, now))))
        .then_with(|| a.metadata.namespace.cmp(&b.metadata.namespace))
        .then_with(|| a.metadata.name.cmp(&b.metadata.name))
}

/// Whether a claim allocated from the node's pools is about to be released: it is being
/// deleted, or every pod reserving it is gone or terminating.
fn releasing_devices(cluster: &crate::cache::Cache, node: &NodeInfo) -> bool {
    cluster.in_use(node.slot).iter().any(|claim| {
        let reserved = &claim.status.reserved_for;
        claim.metadata.deletion_timestamp.is_some()
            || (!reserved.is_empty()
                && reserved.iter().all(|r| {
                    r.resource == "pods"
                        && cluster
                            .assigned_pod(&ObjectKey::new(
                                Kind::Pod,
                                claim.metadata.namespace.clone(),
                                r.name.clone(),
                            ))
                            .is_none_or(|p| p.pod.metadata.deletion_timestamp.is_some())
                }))
    })
}

/// The candidates of a dry run, and the statuses of the nodes that are none.
type Found = (Vec<Candidate>, Vec<(usize, Status)>);

/// A node where preemption would make the pod fit.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The node.
    pub node: String,
    /// The victims, most important first.
    pub victims: Vec<std::sync::Arc<PodInfo>>,
    /// How many victims break a PodDisruptionBudget.
    pub pdb_violations: usize,
}

/// The PDBs as selectors with their remaining disruptions.
struct Budgets<'a> {
    pdbs: Vec<(&'a PodDisruptionBudget, Option<Selector>)>,
}

impl<'a> Budgets<'a> {
    fn new(pdbs: &'a [PodDisruptionBudget]) -> Self {
        Budgets {
            pdbs: pdbs
                .iter()
                .map(|p| {
                    let selector = Selector::from_api(p.spec.selector.as_ref())
                        .ok()
                        .filter(|s| p.spec.selector.is_some() && !s.is_everything());
                    (p, selector)
                })
                .collect(),
        }
    }

    /// Upstream `filterPodsWithPDBViolation`: the pods (in their order) split into those whose
    /// removal breaks a budget and the others.
    fn split(
        &self,
        pods: &[std::sync::Arc<PodInfo>],
    ) -> (Vec<std::sync::Arc<PodInfo>>, Vec<std::sync::Arc<PodInfo>>) {
        let mut allowed: Vec<i64> = self
            .pdbs
            .iter()
            .map(|(p, _)| i64::from(p.status.disruptions_allowed))
            .collect();
        let (mut violating, mut other) = (Vec::new(), Vec::new());
        for info in pods {
            let pod = &info.pod;
            let mut violated = false;
            if !pod.metadata.labels.is_empty() {
                for (i, (pdb, selector)) in self.pdbs.iter().enumerate() {
                    if pdb.metadata.namespace != pod.metadata.namespace {
                        continue;
                    }
                    let Some(selector) = selector else { continue };
                    if !selector.matches(&pod.metadata.labels) {
                        continue;
                    }
                    if pdb.status.disrupted_pods.contains_key(&pod.metadata.name) {
                        continue;
                    }
                    allowed[i] -= 1;
                    if allowed[i] < 0 {
                        violated = true;
                    }
                }
            }
            if violated {
                violating.push(std::sync::Arc::clone(info));
            } else {
                other.push(std::sync::Arc::clone(info));
            }
        }
        (violating, other)
    }
}

/// Removes or adds back a pod on the dry run's node copy, telling the PreFilter extensions.
fn change_pod(
    handle: &mut dyn FilterHandle,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    other: &std::sync::Arc<PodInfo>,
    add: bool,
) -> Status {
    let requests = pod_requests(&other.pod);
    let non_zero = pod_non_zero_requests_with(&other.pod, &requests);
    if add {
        node.add_pod(std::sync::Arc::clone(other), &requests, non_zero);
        handle.add_pod(state, pod, other, node)
    } else {
        let key = ObjectKey::new(
            Kind::Pod,
            other.pod.metadata.namespace.clone(),
            other.pod.metadata.name.clone(),
        );
        node.remove_pod(&key, &requests, non_zero);
        handle.remove_pod(state, pod, other, node)
    }
}

/// Upstream `SelectVictimsOnNode`: the victims on one node and their PDB violations, or the
/// node's status when preemption cannot make the pod fit there.
pub fn select_victims_on_node(
    ctx: &Ctx<'_>,
    handle: &mut dyn FilterHandle,
    state: &mut CycleState,
    pod: &PodInfo,
    node: &mut NodeInfo,
    pdbs: &[PodDisruptionBudget],
) -> Result<(Vec<std::sync::Arc<PodInfo>>, usize), Status> {
    let own = priority(&pod.pod);
    let mut potential: Vec<std::sync::Arc<PodInfo>> = node
        .pods
        .iter()
        .filter(|p| priority(&p.pod) < own)
        .cloned()
        .collect();
    for p in &potential {
        let status = change_pod(handle, state, pod, node, p, false);
        if !status.is_success() {
            return Err(status);
        }
    }
    if potential.is_empty() {
        return Err(Status::unresolvable(NO_VICTIMS));
    }
    let status = handle.run_filters(ctx, state, pod, node);
    if !status.is_success() {
        return Err(status);
    }
    let now = ctx.now.rfc3339();
    potential.sort_by(|a, b| more_important(&a.pod, &b.pod, &now));
    let (violating, other) = Budgets::new(pdbs).split(&potential);
    let mut victims = Vec::new();
    let mut violations = 0;
    for (group, counts) in [(&violating, true), (&other, false)] {
        for p in group {
            let status = change_pod(handle, state, pod, node, p, true);
            if !status.is_success() {
                return Err(status);
            }
            let fits = handle.run_filters(ctx, state, pod, node);
            if fits.code() == Code::Error {
                return Err(fits);
            }
            if !fits.is_success() {
                let status = change_pod(handle, state, pod, node, p, false);
                if !status.is_success() {
                    return Err(status);
                }
                victims.push(std::sync::Arc::clone(p));
                if counts {
                    violations += 1;
                }
            }
        }
    }
    if !violating.is_empty() && !other.is_empty() {
        victims.sort_by(|a, b| more_important(&a.pod, &b.pod, &now));
    }
    Ok((victims, violations))
}

/// Upstream `pickOneNodeForPreemption` over the candidates (in dry-run order) with its
/// default criteria: the index of the chosen one.
pub fn pick_one(candidates: &[Candidate], now: &str) -> Option<usize> {
    /// A criterion's score: higher is better.
    #[derive(PartialEq, Eq, PartialOrd, Ord)]
    enum Key {
        Number(i128),
        Time(String),
    }
    let scores: Vec<Score<'_, Key>> = vec![
        Box::new(|c| Key::Number(-(c.pdb_violations as i128))),
        Box::new(|c| {
            Key::Number(-i128::from(
                c.victims.first().map_or(0, |p| priority(&p.pod)),
            ))
        }),
        Box::new(|c| {
            Key::Number(
                -c.victims
                    .iter()
                    .map(|p| i128::from(priority(&p.pod)) + (1i128 << 31))
                    .sum::<i128>(),
            )
        }),
        Box::new(|c| Key::Number(-(c.victims.len() as i128))),
        Box::new(move |c| {
            // The earliest start among the highest-priority victims; later is better.
            let top = c.victims.first().map_or(0, |p| priority(&p.pod));
            Key::Time(
                c.victims
                    .iter()
                    .filter(|p| priority(&p.pod) == top)
                    .map(|p| time_key(&start_time(&p.pod, now)))
                    .min()
                    .unwrap_or_default(),
            )
        }),
    ];
    pick_one_by(candidates, &scores)
}

/// One criterion of [`pick_one_by`]: a candidate's score, higher is better.
pub type Score<'a, K> = Box<dyn Fn(&Candidate) -> K + 'a>;

/// Upstream `pickOneNodeForPreemption` with the given criteria (upstream's `OrderedScoreFuncs`
/// of the preemption plugin; DefaultPreemption's are [`pick_one`]'s): the candidates with the
/// best first score, among those the best second, ...; the first left, in dry-run order.
pub fn pick_one_by<K: Ord>(candidates: &[Candidate], scores: &[Score<'_, K>]) -> Option<usize> {
    if candidates.is_empty() {
        return None;
    }
    let mut remaining: Vec<usize> = (0..candidates.len()).collect();
    for score in scores {
        let best = remaining.iter().map(|&i| score(&candidates[i])).max();
        let Some(best) = best else { break };
        remaining.retain(|&i| score(&candidates[i]) == best);
        if remaining.len() == 1 {
            break;
        }
    }
    remaining.first().copied()
}

/// How a preemption plugin picks the victims on one node: the victims and their PDB
/// violations, or the node's status (upstream's `SelectVictimsOnNode`).
pub type SelectVictims<'a> = dyn FnMut(
        &Ctx<'_>,
        &mut dyn FilterHandle,
        &mut CycleState,
        &PodInfo,
        &mut NodeInfo,
        &[PodDisruptionBudget],
    ) -> Result<(Vec<std::sync::Arc<PodInfo>>, usize), Status>
    + 'a;

/// Upstream `nodesWherePreemptionMightHelp`: the nodes, in name order, that Filter rejected
/// as `Unschedulable`. A node rejected as `UnschedulableAndUnresolvable` is skipped (removing
/// pods cannot help there), and so is a node without a status (Filter never saw it: a
/// PreFilter result left it out, which upstream's `NodeToStatus` reports as unresolvable).
pub fn nodes_where_preemption_might_help<'c>(
    cluster: &'c crate::cache::Cache,
    statuses: &NodeStatuses,
) -> Vec<&'c NodeInfo> {
    let by_slot: BTreeMap<usize, &Status> = statuses.iter().map(|(s, st)| (*s, st)).collect();
    cluster
        .nodes_in_order()
        .filter(|n| {
            by_slot
                .get(&n.slot)
                .is_some_and(|s| s.code() == Code::Unschedulable)
        })
        .collect()
}

impl DefaultPreemption {
    /// Upstream `PodEligibleToPreemptOthers`: `Err` with the reason when not eligible.
    pub fn eligible(
        &self,
        ctx: &BindCtx<'_>,
        pod: &PodInfo,
        statuses: &NodeStatuses,
    ) -> Result<(), &'static str> {
        if pod.pod.spec.preemption_policy == Some(PreemptionPolicy::Never) {
            return Err("not eligible due to preemptionPolicy=Never.");
        }
        let nominated = pod.pod.status.nominated_node_name.as_deref().unwrap_or("");
        if nominated.is_empty() {
            return Ok(());
        }
        let Some(node) = ctx.cluster.node_by_name(nominated) else {
            return Ok(());
        };
        let unresolvable = statuses
            .iter()
            .find(|(slot, _)| *slot == node.slot)
            .is_some_and(|(_, s)| s.code() == Code::UnschedulableAndUnresolvable);
        if unresolvable {
            return Ok(());
        }
        let own = priority(&pod.pod);
        if node
            .pods
            .iter()
            .any(|p| priority(&p.pod) < own && terminating_by_preemption(&p.pod))
        {
            return Err("not eligible due to a terminating pod on the nominated node.");
        }
        // allot: a victim that is gone may still hold devices until the ResourceClaim
        // controller deallocates its claims; that counts as terminating too.
        if releasing_devices(ctx.cluster, node) {
            return Err("not eligible due to a terminating pod on the nominated node.");
        }
        Ok(())
    }

    /// Upstream `findCandidates` + `DryRunPreemption`: the candidates (nodes without PDB
    /// violations first) and the statuses of the nodes that are none. A node whose dry run
    /// fails with an error is no candidate; the errors are returned (joined as upstream's
    /// aggregate error) only when no node is a candidate.
    pub fn find_candidates(
        &self,
        ctx: &mut BindCtx<'_>,
        handle: &mut dyn FilterHandle,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeStatuses,
    ) -> Result<Found, String> {
        self.find_candidates_with(
            ctx,
            handle,
            state,
            pod,
            statuses,
            &mut select_victims_on_node,
        )
    }

    /// [`Self::find_candidates`] with the victims of a node chosen by `select` (upstream's
    /// `Interface.SelectVictimsOnNode` of the preemption plugin driving the evaluator;
    /// DefaultPreemption's is [`select_victims_on_node`]; upstream's framework tests plug in
    /// fakes).
    pub fn find_candidates_with(
        &self,
        ctx: &mut BindCtx<'_>,
        handle: &mut dyn FilterHandle,
        state: &CycleState,
        pod: &PodInfo,
        statuses: &NodeStatuses,
        select: &mut SelectVictims<'_>,
    ) -> Result<Found, String> {
        let cluster = ctx.cluster;
        let potential = nodes_where_preemption_might_help(cluster, statuses);
        let mut out_statuses = Vec::new();
        if potential.is_empty() {
            return Ok((Vec::new(), out_statuses));
        }
        let pdbs: Vec<PodDisruptionBudget> =
            ctx.store.list::<PodDisruptionBudget>().cloned().collect();
        let wanted = self.num_candidates(potential.len());
        let fctx = Ctx {
            cluster,
            now: ctx.now,
        };
        let (mut clean, mut violating) = (Vec::new(), Vec::new());
        let mut errors: Vec<String> = Vec::new();
        for node in potential {
            let mut copy = node.clone();
            let mut state = state.clone();
            match select(&fctx, handle, &mut state, pod, &mut copy, &pdbs) {
                Ok((victims, violations)) if !victims.is_empty() => {
                    let c = Candidate {
                        node: node.name.clone(),
                        victims,
                        pdb_violations: violations,
                    };
                    // Each list holds at most `wanted` candidates (upstream's
                    // `candidateList` of that size drops the others).
                    let list = if violations == 0 {
                        &mut clean
                    } else {
                        &mut violating
                    };
                    if list.len() < wanted {
                        list.push(c);
                    }
                    if !clean.is_empty() && clean.len() + violating.len() >= wanted {
                        break;
                    }
                }
                Ok(_) => {
                    let message =
                        format!("expected at least one victim pod on node {:?}", node.name);
                    errors.push(message.clone());
                    out_statuses.push((node.slot, Status::error(message)));
                }
                Err(status) => {
                    if status.code() == Code::Error {
                        errors.push(status.message());
                    }
                    out_statuses.push((node.slot, status));
                }
            }
        }
        clean.extend(violating);
        if clean.is_empty() && !errors.is_empty() {
            // Upstream's `utilerrors.NewAggregate`: one error as it is, several in brackets.
            return Err(if errors.len() == 1 {
                errors.remove(0)
            } else {
                format!("[{}]", errors.join(", "))
            });
        }
        Ok((clean, out_statuses))
    }

    /// Marks the victims: the `DisruptionTarget` condition and a deletion timestamp with
    /// their grace period, and records upstream's `Preempted` Event for each (upstream
    /// `prepareCandidate` and the executor's `PreemptPod`, the deletion itself left to the
    /// scheduler's clock). A victim whose graceful deletion has already started is left as it
    /// is (no condition, no Event), as upstream skips the API calls for it; one that is gone
    /// already is skipped.
    pub fn prepare(
        &self,
        ctx: &mut BindCtx<'_>,
        pod: &PodInfo,
        candidate: &Candidate,
    ) -> Result<Vec<Victim>, String> {
        let scheduler = pod
            .pod
            .spec
            .scheduler_name
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| crate::DEFAULT_SCHEDULER_NAME.to_string());
        let message = format!("{scheduler}: preempting to accommodate a higher priority pod");
        let preemptor = allot_events::reference_of(Kind::Pod, &pod.pod.metadata);
        let note = preempted_message(&pod.pod.metadata.uid, &candidate.node);
        let mut out = Vec::new();
        for victim in &candidate.victims {
            let meta = &victim.pod.metadata;
            let key = ObjectKey::new(Kind::Pod, meta.namespace.clone(), meta.name.clone());
            let grace = victim
                .pod
                .spec
                .termination_grace_period_seconds
                .as_ref()
                .and_then(|v| v.as_i64())
                .unwrap_or(DEFAULT_GRACE_SECONDS)
                .max(0);
            if meta.deletion_timestamp.is_some() {
                // Upstream: "Victim Pod is already being deleted, skipping the API call for
                // it". allot's scheduler still deletes it when its grace period is over.
                out.push(Victim {
                    key,
                    grace_seconds: grace,
                });
                continue;
            }
            let stamp = ctx.stamp.to_string();
            let result = ctx
                .store
                .modify::<Pod, _>(&meta.namespace, &meta.name, |p| {
                    mark_victim(p, &message, &stamp, grace);
                });
            match result {
                Ok(()) => {}
                // Gone already: nothing to delete, no Event (upstream returns before it).
                Err(allot_store::StoreError::NotFound { .. }) => continue,
                Err(e) => return Err(format!("preempting {key}: {e}")),
            }
            let involved = allot_events::reference_of(Kind::Pod, meta);
            let occurrence = allot_events::Occurrence::new(
                &involved,
                allot_events::EventKind::Normal,
                "Preempted",
                &note,
                allot_events::Source::component(&scheduler),
            )
            .related(&preemptor)
            .action("Preempting");
            // Best effort, as upstream's recorder: a failed Event does not undo the preemption.
            let _ = occurrence.record(ctx.store, ctx.now);
            out.push(Victim {
                key,
                grace_seconds: grace,
            });
        }
        Ok(out)
    }
}

/// Upstream's message of the `Preempted` Event on a victim: `Preempted by pod <preemptor uid>
/// on node <node>`.
pub fn preempted_message(preemptor_uid: &str, node: &str) -> String {
    format!("Preempted by pod {preemptor_uid} on node {node}")
}

/// The victim's `DisruptionTarget` condition (its `lastTransitionTime` kept when it was True
/// already, as upstream's `UpdatePodCondition`) and its deletion timestamp.
fn mark_victim(p: &mut Pod, message: &str, stamp: &str, grace: i64) {
    let mut condition = PodCondition {
        type_: "DisruptionTarget".into(),
        status: "True".into(),
        reason: Some(REASON_PREEMPTION.into()),
        message: Some(message.to_string()),
        last_transition_time: Some(stamp.to_string()),
        ..Default::default()
    };
    match p
        .status
        .conditions
        .iter_mut()
        .find(|c| c.type_ == "DisruptionTarget")
    {
        Some(existing) => {
            if existing.status == condition.status {
                condition
                    .last_transition_time
                    .clone_from(&existing.last_transition_time);
            }
            *existing = condition;
        }
        None => p.status.conditions.push(condition),
    }
    if p.metadata.deletion_timestamp.is_none() {
        p.metadata.deletion_timestamp = Some(stamp.to_string());
        p.metadata.deletion_grace_period_seconds = Some(grace);
    }
}

impl PostFilterPlugin for DefaultPreemption {
    fn post_filter(
        &mut self,
        ctx: &mut BindCtx<'_>,
        handle: &mut dyn FilterHandle,
        state: &mut CycleState,
        pod: &PodInfo,
        statuses: &NodeStatuses,
    ) -> PostFilterOutcome {
        let fail = |status: Status| PostFilterOutcome {
            nominated: None,
            status,
            victims: Vec::new(),
        };
        if let Err(reason) = self.eligible(ctx, pod, statuses) {
            return fail(Status::unschedulable(format!("preemption: {reason}")));
        }
        let (candidates, node_statuses) =
            match self.find_candidates(ctx, handle, state, pod, statuses) {
                Ok(found) => found,
                Err(message) => return fail(Status::error(format!("preemption: {message}"))),
            };
        if candidates.is_empty() {
            let all = ctx.cluster.node_count();
            let absent = all - node_statuses.len();
            let error = FitError {
                num_all_nodes: all,
                diagnosis: Diagnosis {
                    node_statuses,
                    absent: (absent > 0).then(|| (absent, Status::unresolvable(NOT_HELPFUL))),
                    ..Default::default()
                },
            };
            return fail(Status::unschedulable(format!(
                "preemption: {}",
                error.message()
            )));
        }
        let now = ctx.now.rfc3339();
        let best = pick_one(&candidates, &now).unwrap_or(0);
        let candidate = &candidates[best];
        match self.prepare(ctx, pod, candidate) {
            Ok(victims) => PostFilterOutcome {
                nominated: Some(candidate.node.clone()),
                status: Status::success(),
                victims,
            },
            Err(message) => fail(Status::error(format!("preemption: {message}"))),
        }
    }
}

#[cfg(test)]
mod tests;
