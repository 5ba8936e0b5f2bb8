//! Why claims do not fit: per claim and request, how many of the devices the node can see
//! each filter removed, and which constraint cannot be met.
//!
//! The explanation is computed after the search failed, from the devices' static properties
//! and the devices already allocated before this call, so it costs nothing when claims fit.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::AllocationInput;
use crate::attributes::{self, ConstraintKind};
use crate::search::{CapVerdict, Problem, Slot};

/// Why the claims do not fit on the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The node allocated for.
    pub node: String,
    /// Pools the node can see that are incomplete or invalid, as `driver/pool: state`.
    pub unusable_pools: Vec<String>,
    /// One entry per claim, in allocation order.
    pub claims: Vec<ClaimExplanation>,
}

/// One claim's part of an [`Explanation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaimExplanation {
    /// The claim as `namespace/name`.
    pub claim: String,
    /// Whether the claim fits when allocated on its own; `false` for a claim that only fails
    /// together with the others means the claims compete for the same devices.
    pub fits_alone: bool,
    /// Per request (and subrequest).
    pub requests: Vec<RequestExplanation>,
    /// Constraints that the candidates cannot satisfy.
    pub constraints: Vec<ConstraintFailure>,
}

/// One request's part of a [`ClaimExplanation`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RequestExplanation {
    /// `request` or `request/subrequest`.
    pub request: String,
    /// The device class.
    pub device_class: String,
    /// `ExactCount` or `All`.
    pub allocation_mode: String,
    /// Devices needed (for `All`: the devices the request matched).
    pub needed: usize,
    /// What each filter removed.
    pub filters: FilterCounts,
    /// Devices left after all filters.
    pub candidates: usize,
    /// Up to three of those candidates, as `driver/pool/device`.
    pub sample_candidates: Vec<String>,
}

/// How many devices each filter removed, in the order the filters apply; a device is counted
/// under the first filter that removes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FilterCounts {
    /// Devices in complete, valid pools that the node can see.
    pub visible: usize,
    /// Removed by per-device node selection (or binding conditions while that feature is off).
    pub node: usize,
    /// Removed by the device class's selectors.
    pub class_selector: usize,
    /// Removed by the request's own selectors.
    pub request_selector: usize,
    /// Removed by taints the request does not tolerate.
    pub taint: usize,
    /// Removed because already allocated to other claims.
    pub in_use: usize,
    /// Removed because the shared counters they consume are used up.
    pub counters: usize,
    /// Removed because the requested capacity does not fit.
    pub capacity: usize,
    /// Removed by compatibility groups: the device shares no group with the devices already
    /// allocated on one of its counter sets (`DRADeviceCompatibilityGroups`), or, with that
    /// gate off, it declares groups and so cannot be checked.
    pub compatibility_group: usize,
}

/// A claim constraint that the candidate devices cannot satisfy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConstraintFailure {
    /// The constraint, e.g. `matchAttribute: gpu.example.com/numa`.
    pub constraint: String,
    /// The requests it applies to (empty: all).
    pub requests: Vec<String>,
    /// What is wrong.
    pub reason: String,
    /// A candidate device that illustrates the problem.
    pub sample_device: Option<String>,
}

pub(crate) fn explain(problem: &mut Problem<'_>) -> Explanation {
    let unusable_pools = problem
        .pools
        .iter()
        .filter_map(|pool| {
            if pool.incomplete {
                Some(format!("{}: incomplete (being updated)", pool.id()))
            } else {
                pool.invalid
                    .as_ref()
                    .map(|reason| format!("{}: invalid ({reason})", pool.id()))
            }
        })
        .collect();
    let mut claims = Vec::new();
    for claim_index in 0..problem.claims.len() {
        let mut requests = Vec::new();
        // Candidate devices per request, for the constraint analysis.
        let mut candidates_by_request: Vec<(usize, Vec<usize>)> = Vec::new();
        let slots: Vec<Vec<usize>> = problem.claims[claim_index]
            .slots
            .iter()
            .map(|slot| match slot {
                Slot::Plain(r) => vec![*r],
                Slot::Subs(subs) => subs.clone(),
            })
            .collect();
        for reqs in &slots {
            for &r in reqs {
                let (explanation, candidates) = explain_request(problem, r);
                requests.push(explanation);
                candidates_by_request.push((r, candidates));
            }
        }
        // Derived attributes of the candidates, for the constraint analysis; a device whose
        // expression fails counts as lacking the attribute.
        for (r, candidates) in &candidates_by_request {
            for &d in candidates {
                let _ = problem.derive(*r, d);
            }
        }
        let mut constraints =
            explain_constraints(problem, claim_index, &slots, &candidates_by_request);
        constraints.extend(explain_compatibility(problem, &slots));
        let fits_alone = if problem.claims.len() == 1 {
            false
        } else {
            fits_alone(problem, claim_index)
        };
        claims.push(ClaimExplanation {
            claim: problem.claims[claim_index].name.clone(),
            fits_alone,
            requests,
            constraints,
        });
    }
    Explanation {
        node: problem.input.node.metadata.name.clone(),
        unusable_pools,
        claims,
    }
}

fn fits_alone(problem: &Problem<'_>, claim_index: usize) -> bool {
    let input = AllocationInput {
        claims: std::slice::from_ref(problem.claims[claim_index].claim),
        ..*problem.input
    };
    match Problem::new(&input, &problem.features, problem.cache) {
        Ok(mut alone) => crate::search::fits(&mut alone).unwrap_or(false),
        Err(_) => false,
    }
}

fn explain_request(problem: &mut Problem<'_>, r: usize) -> (RequestExplanation, Vec<usize>) {
    let features = problem.features;
    let mut filters = FilterCounts {
        visible: problem.devs.len(),
        ..Default::default()
    };
    let mut candidates = Vec::new();
    for d in 0..problem.devs.len() {
        let dev = &problem.devs[d];
        let node_ok = (features.binding_and_status() || dev.device.binding_conditions.is_empty())
            && (dev.slice.spec.per_device_node_selection != Some(true)
                || crate::nodes::node_matches(
                    problem.input.node,
                    dev.device.node_name.as_deref(),
                    dev.device.all_nodes == Some(true),
                    dev.device.node_selector.as_ref(),
                )
                .unwrap_or(false));
        if !node_ok {
            filters.node += 1;
            continue;
        }
        if !problem.selectors_accept(r, d, true) {
            filters.class_selector += 1;
            continue;
        }
        if !problem.selectors_accept(r, d, false) {
            filters.request_selector += 1;
            continue;
        }
        if problem.tainted(r, d) {
            filters.taint += 1;
            continue;
        }
        let dev = &problem.devs[d];
        if !problem.reqs[r].admin && (dev.allocated || (dev.shared && !dev.multi)) {
            filters.in_use += 1;
            continue;
        }
        let consumes = !dev.device.consumes_counters.is_empty();
        if consumes {
            let pc = &problem.counters[dev.pool];
            let exhausted = !features.partitionable_devices
                || pc.overdrawn
                || dev
                    .counters()
                    .iter()
                    .any(|(i, amount)| amount > &pc.available[*i]);
            if exhausted {
                filters.counters += 1;
                continue;
            }
        }
        if features.consumable_capacity
            && !matches!(problem.capacity_check(r, d), CapVerdict::Ok(_))
        {
            filters.capacity += 1;
            continue;
        }
        if problem.compat_blocked(d) {
            filters.compatibility_group += 1;
            continue;
        }
        candidates.push(d);
    }
    let req = &problem.reqs[r];
    let explanation = RequestExplanation {
        request: req.name(),
        device_class: req.class.metadata.name.clone(),
        allocation_mode: if req.all { "All" } else { "ExactCount" }.to_string(),
        needed: req.num_devices,
        filters,
        candidates: candidates.len(),
        sample_candidates: candidates
            .iter()
            .take(3)
            .map(|&d| problem.devs[d].id())
            .collect(),
    };
    (explanation, candidates)
}

/// Candidates the search turned down because they share no compatibility group with devices
/// picked for other requests on the same counter set.
fn explain_compatibility(problem: &Problem<'_>, slots: &[Vec<usize>]) -> Option<ConstraintFailure> {
    let mut requests = Vec::new();
    let mut devices = BTreeSet::new();
    for &r in slots.iter().flatten() {
        let rejected: Vec<usize> = problem
            .compat_rejected
            .range((r, 0)..(r + 1, 0))
            .map(|&(_, d)| d)
            .collect();
        if !rejected.is_empty() {
            requests.push(problem.reqs[r].name());
            devices.extend(rejected);
        }
    }
    let sample = devices.first().copied()?;
    Some(ConstraintFailure {
        constraint: "compatibilityGroups".to_string(),
        requests,
        reason: format!(
            "devices drawing from the same counter set must share a compatibility group; {} {} none with the devices picked alongside them",
            candidates(devices.len()),
            if devices.len() == 1 {
                "shares"
            } else {
                "share"
            }
        ),
        sample_device: Some(problem.devs[sample].id()),
    })
}

fn explain_constraints(
    problem: &Problem<'_>,
    claim_index: usize,
    slots: &[Vec<usize>],
    candidates_by_request: &[(usize, Vec<usize>)],
) -> Vec<ConstraintFailure> {
    let mut failures = Vec::new();
    for constraint in &problem.constraints[claim_index] {
        // The requests it covers: per slot, the first subrequest it applies to.
        let mut needed = 0usize;
        let mut devices: BTreeSet<usize> = BTreeSet::new();
        // The request each device is looked at for (derived attributes are per request).
        let mut owner: BTreeMap<usize, usize> = BTreeMap::new();
        for reqs in slots {
            let Some(&r) = reqs
                .iter()
                .find(|&&r| constraint.applies(problem.reqs[r].parent, problem.reqs[r].sub))
            else {
                continue;
            };
            needed += problem.reqs[r].num_devices;
            if let Some((_, candidates)) = candidates_by_request.iter().find(|(req, _)| *req == r) {
                devices.extend(candidates.iter().copied());
                for &d in candidates {
                    owner.entry(d).or_insert(r);
                }
            }
        }
        if needed == 0 {
            continue;
        }
        let describe = |kind: ConstraintKind| match kind {
            ConstraintKind::Match => format!("matchAttribute: {}", constraint.attribute),
            ConstraintKind::Distinct => format!("distinctAttribute: {}", constraint.attribute),
        };
        let mut without: Option<usize> = None;
        let mut groups: BTreeMap<attributes::Value, Vec<usize>> = BTreeMap::new();
        for &d in &devices {
            let r = owner.get(&d).copied().unwrap_or_default();
            match problem.attribute(r, d, &constraint.attribute) {
                None => {
                    without.get_or_insert(d);
                }
                Some(attribute) => {
                    for key in attributes::match_keys(attribute, constraint.list_semantics()) {
                        groups.entry(key).or_default().push(d);
                    }
                }
            }
        }
        let (reason, sample) = match constraint.kind {
            ConstraintKind::Match => {
                let best = groups.iter().max_by_key(|(_, members)| members.len());
                let best_len = best.map(|(_, m)| m.len()).unwrap_or(0);
                let multi = devices.iter().any(|&d| problem.devs[d].multi);
                if best_len >= needed || multi {
                    continue;
                }
                let sample = best
                    .and_then(|(_, members)| devices.iter().find(|d| !members.contains(d)).copied())
                    .or(without);
                (
                    format!(
                        "{needed} devices must share a value of {}, but at most {best_len} of the {} do{}",
                        constraint.attribute,
                        candidates(devices.len()),
                        best.map(|(value, _)| format!(" (value {value})"))
                            .unwrap_or_default()
                    ),
                    sample,
                )
            }
            ConstraintKind::Distinct => {
                let distinct = groups.len();
                if distinct >= needed {
                    continue;
                }
                let sample = groups
                    .values()
                    .find(|members| members.len() > 1)
                    .and_then(|m| m.get(1).copied())
                    .or(without);
                (
                    format!(
                        "{needed} devices must have distinct values of {}, but the {} {} only {distinct}",
                        constraint.attribute,
                        candidates(devices.len()),
                        if devices.len() == 1 { "has" } else { "have" }
                    ),
                    sample,
                )
            }
        };
        failures.push(ConstraintFailure {
            constraint: describe(constraint.kind),
            requests: constraint.requests.clone(),
            reason,
            sample_device: sample.map(|d| problem.devs[d].id()),
        });
    }
    failures
}

/// `n` candidates, in the right number ("1 candidate", "2 candidates").
fn candidates(n: usize) -> String {
    if n == 1 {
        "1 candidate".to_string()
    } else {
        format!("{n} candidates")
    }
}

impl fmt::Display for Explanation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "claims do not fit on node {}:", self.node)?;
        for pool in &self.unusable_pools {
            writeln!(f, "  pool {pool}")?;
        }
        for claim in &self.claims {
            let alone = if claim.fits_alone {
                " (fits on its own: competes with the other claims)"
            } else {
                ""
            };
            writeln!(f, "  claim {}{alone}", claim.claim)?;
            for request in &claim.requests {
                let c = &request.filters;
                writeln!(
                    f,
                    "    request {} (class {}, {} {}): {} visible, removed by node {}, class selector {}, request selector {}, taint {}, in use {}, counters {}, capacity {}, compatibility group {}; {}{}",
                    request.request,
                    request.device_class,
                    request.allocation_mode,
                    request.needed,
                    c.visible,
                    c.node,
                    c.class_selector,
                    c.request_selector,
                    c.taint,
                    c.in_use,
                    c.counters,
                    c.capacity,
                    c.compatibility_group,
                    candidates(request.candidates),
                    if request.sample_candidates.is_empty() {
                        String::new()
                    } else {
                        format!(" (e.g. {})", request.sample_candidates.join(", "))
                    }
                )?;
            }
            for constraint in &claim.constraints {
                write!(
                    f,
                    "    constraint {} cannot be met: {}",
                    constraint.constraint, constraint.reason
                )?;
                if let Some(device) = &constraint.sample_device {
                    write!(f, "; e.g. device {device}")?;
                }
                writeln!(f)?;
            }
        }
        Ok(())
    }
}
