//! Why claims do not fit: per claim and request, how many of the devices the node can see
//! each filter removed, and which constraint cannot be met.
//!
//! The explanation is computed after the search failed, from the devices' static properties
//! and the devices already allocated before this call, so it costs nothing when claims fit.
//! When a bound proved that the claims cannot fit (see the search's `bound` module), the
//! explanation leads with that proof: which requests need more than which devices can give.
//! Requests that ask the same share their filter counts, and claims with the same spec share
//! their "fits alone" answer, so that thousands of identical claims explain in linear time.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::attributes::{self, ConstraintKind};
use crate::search::bound::{self, Resource};
use crate::search::{CapVerdict, Problem, Slot};
use crate::{AllocationInput, Budget};

/// Why the claims do not fit on the node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    /// The node allocated for.
    pub node: String,
    /// Pools the node can see that are incomplete or invalid, as `driver/pool: state`.
    pub unusable_pools: Vec<String>,
    /// What the requests need more of than there is, when a bound proved it (the requests and
    /// the devices that cannot cover them).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub shortfalls: Vec<Shortfall>,
    /// One entry per claim, in allocation order.
    pub claims: Vec<ClaimExplanation>,
}

/// Requests that together need more than the devices they can use can give: a proof that the
/// claims cannot fit, whatever devices are picked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shortfall {
    /// What runs short: `devices`, `distinctAttribute NAME`, `matchAttribute NAME`,
    /// `matchAttribute and distinctAttribute NAME`, `counter SET/COUNTER of pool
    /// DRIVER/POOL`, `capacity NAME`.
    pub resource: String,
    /// Why, in a sentence.
    pub reason: String,
    /// The requests, as `namespace/claim/request` (or `.../request/subrequest`).
    pub requests: Vec<String>,
    /// The devices that could serve them, as `driver/pool/device`.
    pub devices: Vec<String>,
}

/// Why an allocate call stopped without an answer: its [`Budget`] of search steps ran out
/// before it found devices for the claims or proved that they cannot fit (upstream's
/// DynamicResources filter times out in that case).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct GaveUp {
    /// The node allocated for.
    pub node: String,
    /// The claims, as `namespace/name`.
    pub claims: Vec<String>,
    /// The steps spent.
    pub steps: u64,
    /// The budget's steps.
    pub max_steps: u64,
    /// Bytes the memo of failed search states held at the end.
    pub memo_bytes: u64,
    /// The budget's memo bytes.
    pub max_memo_bytes: u64,
    /// When the budget's time limit stopped the search: that limit (`10ms`, `1ns`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time_limit: Option<String>,
}

impl fmt::Display for GaveUp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.time_limit {
            Some(limit) => write!(
                f,
                "gave up at the time limit of one allocation ({limit}, {} search steps)",
                self.steps
            )?,
            None => write!(
                f,
                "gave up after {} search steps (the limit of one allocation)",
                self.steps
            )?,
        }
        write!(
            f,
            " on node {}: found no devices for claim{} {} and could not prove that {} not fit",
            self.node,
            if self.claims.len() == 1 { "" } else { "s" },
            sample(&self.claims),
            if self.claims.len() == 1 {
                "it does"
            } else {
                "they do"
            },
        )
    }
}

/// Up to eight names, then how many more.
fn sample(names: &[String]) -> String {
    const SHOWN: usize = 8;
    let mut out = names
        .iter()
        .take(SHOWN)
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ");
    if names.len() > SHOWN {
        out.push_str(&format!(" and {} more", names.len() - SHOWN));
    }
    out
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

/// The explanation of claims the search could not allocate: `shortfall` is what a bound
/// proved during the search (the bounds are worked out here otherwise); the claims' "fits
/// alone" searches spend at most `budget`.
pub(crate) fn explain(
    problem: &mut Problem<'_>,
    shortfall: Option<bound::Shortfall>,
    budget: &Budget,
) -> Explanation {
    let mut left = *budget;
    let shortfall = match shortfall {
        Some(found) => Some(found),
        // Worked out whether or not the search used the bounds (the same explanation).
        None => {
            let mut steps = 0;
            let mut meter = bound::Meter {
                steps: &mut steps,
                limit: left.max_steps,
            };
            let found = bound::violated(problem, &mut meter).ok().flatten();
            left.max_steps = left.max_steps.saturating_sub(steps);
            found
        }
    };
    let shortfalls = shortfall
        .map(|found| vec![public_shortfall(problem, &found)])
        .unwrap_or_default();
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
    // Filter counts and candidates by what decides them (see `Problem::candidate_group`).
    let mut counted: BTreeMap<(usize, String), Counted> = BTreeMap::new();
    // "Fits alone" by claim namespace and spec.
    let mut alone: std::collections::HashMap<String, bool> = std::collections::HashMap::new();
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
                let key = (
                    problem.candidate_group(r),
                    problem.reqs[r].class.metadata.name.clone(),
                );
                let (filters, candidates) = match counted.get(&key) {
                    Some(known) => known.clone(),
                    None => {
                        let (filters, candidates) = count_filters(problem, r);
                        let known = (filters, std::rc::Rc::new(candidates));
                        counted.insert(key, known.clone());
                        known
                    }
                };
                requests.push(request_explanation(problem, r, filters, &candidates));
                candidates_by_request.push((r, candidates.to_vec()));
            }
        }
        // Derived attributes of the candidates, for the constraint analysis; a device whose
        // expression fails counts as lacking the attribute.
        for (r, candidates) in &candidates_by_request {
            if problem.reqs[*r].derived.is_empty() {
                continue;
            }
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
            let claim = problem.claims[claim_index].claim;
            let key = format!(
                "{}\n{}",
                claim.metadata.namespace,
                serde_json::to_string(&claim.spec).unwrap_or_default()
            );
            match alone.get(&key) {
                Some(&known) => known,
                None => {
                    let known = fits_alone(problem, claim_index, &mut left);
                    alone.insert(key, known);
                    known
                }
            }
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
        shortfalls,
        claims,
    }
}

/// A request's filter counts and candidates, shared by the requests that ask the same.
type Counted = (FilterCounts, std::rc::Rc<Vec<usize>>);

/// The public form of a bound's proof.
fn public_shortfall(problem: &Problem<'_>, found: &bound::Shortfall) -> Shortfall {
    let requests: Vec<String> = found
        .requests
        .iter()
        .map(|&r| {
            let req = &problem.reqs[r];
            format!("{}/{}", problem.claims[req.claim].name, req.name())
        })
        .collect();
    let devices: Vec<String> = found
        .devices
        .iter()
        .map(|&d| problem.devs[d].id())
        .collect();
    let n = requests.len();
    let them = if n == 1 {
        "1 request needs".to_string()
    } else {
        format!("{n} requests need")
    };
    let (needed, available) = (&found.needed, &found.available);
    let (resource, reason) = match &found.resource {
        Resource::Devices => (
            "devices".to_string(),
            format!(
                "{them} {} together, but only {} can serve any of them",
                plural(needed, "device"),
                plural(available, "device")
            ),
        ),
        Resource::DistinctValues(attribute) => (
            format!("distinctAttribute {attribute}"),
            format!(
                "{them} {} with distinct values of {attribute}, but their candidates have only {}",
                plural(needed, "device"),
                plural(available, "value")
            ),
        ),
        Resource::SharedValue(attribute) => (
            format!("matchAttribute {attribute}"),
            format!(
                "{them} {} sharing a value of {attribute}, but no value has enough candidates for all of them ({})",
                plural(needed, "device"),
                if available == "1" {
                    "each value has at most 1 candidate".to_string()
                } else {
                    format!("at most {available} candidates share one")
                }
            ),
        ),
        Resource::Contradiction(attribute) => (
            format!("matchAttribute and distinctAttribute {attribute}"),
            format!(
                "{them} {needed} devices that must both share a value of {attribute} and have distinct values of it"
            ),
        ),
        Resource::Counter(pool, counter) => {
            let (set, name) = &problem.counters[*pool].names[*counter];
            let pool = problem.pools[*pool].id();
            (
                format!("counter {set}/{name} of pool {pool}"),
                format!(
                    "{them} at least {needed} of counter {set}/{name} of pool {pool} together, but only {available} is left"
                ),
            )
        }
        Resource::Capacity(name) => (
            format!("capacity {name}"),
            format!(
                "{them} at least {needed} of capacity {name} together, but the shared devices they can use have only {available} left"
            ),
        ),
    };
    Shortfall {
        resource,
        reason,
        requests,
        devices,
    }
}

/// Whether claim `claim_index` fits on its own, searching within `budget` (and taking the
/// steps spent off it; a search that runs out answers no).
fn fits_alone(problem: &Problem<'_>, claim_index: usize, budget: &mut Budget) -> bool {
    if budget.max_steps == 0 {
        return false;
    }
    let input = AllocationInput {
        claims: std::slice::from_ref(problem.claims[claim_index].claim),
        ..*problem.input
    };
    match Problem::new(&input, &problem.features, problem.cache) {
        Ok(mut alone) => {
            let (fits, spent) = crate::search::fits(&mut alone, budget);
            budget.max_steps = budget.max_steps.saturating_sub(spent);
            matches!(fits, Ok(Some(true)))
        }
        Err(_) => false,
    }
}

/// A request's explanation from its filter counts and candidates.
fn request_explanation(
    problem: &Problem<'_>,
    r: usize,
    filters: FilterCounts,
    candidates: &[usize],
) -> RequestExplanation {
    let req = &problem.reqs[r];
    RequestExplanation {
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
    }
}

/// What each filter removes of the devices for request `r`, and the devices left.
fn count_filters(problem: &mut Problem<'_>, r: usize) -> (FilterCounts, Vec<usize>) {
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
    (filters, candidates)
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

impl Explanation {
    /// The same explanation told for claims of other names (a cached failure of claims with
    /// the same specs, in the same order): `names[i]` (`namespace/name`) replaces claim `i`'s
    /// name, in the claims and in the shortfalls' requests.
    pub fn rename_claims(&mut self, names: &[String]) {
        let mut renamed: BTreeMap<String, &str> = BTreeMap::new();
        for (claim, name) in self.claims.iter_mut().zip(names) {
            let old = std::mem::replace(&mut claim.claim, name.clone());
            renamed.insert(old, name);
        }
        for shortfall in &mut self.shortfalls {
            for request in &mut shortfall.requests {
                // `namespace/claim/request[/subrequest]`: the claim is the first two parts.
                let mut parts = request.splitn(3, '/');
                let (Some(namespace), Some(claim), Some(rest)) =
                    (parts.next(), parts.next(), parts.next())
                else {
                    continue;
                };
                if let Some(name) = renamed.get(&format!("{namespace}/{claim}")) {
                    *request = format!("{name}/{rest}");
                }
            }
        }
    }
}

/// `n` (a count) things, in the right number ("1 device", "2 devices").
fn plural(n: &str, thing: &str) -> String {
    if n == "1" {
        format!("1 {thing}")
    } else {
        format!("{n} {thing}s")
    }
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
        for shortfall in &self.shortfalls {
            writeln!(
                f,
                "  not enough {}: {}",
                shortfall.resource, shortfall.reason
            )?;
            writeln!(f, "    requests: {}", sample(&shortfall.requests))?;
            if !shortfall.devices.is_empty() {
                writeln!(f, "    devices: {}", sample(&shortfall.devices))?;
            }
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
