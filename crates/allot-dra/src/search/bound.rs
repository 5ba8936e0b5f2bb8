//! Proofs that no assignment exists, worked out once per search from the static candidates
//! (what each request could take in any search state): a matching bound over requests and
//! devices (Hall's condition: a set of requests needs more devices than match any of them),
//! over-drawn shared counters and consumable capacity, and claim constraints that the
//! candidates cannot satisfy (too few distinct values, no value shared by enough devices, a
//! `matchAttribute` and a `distinctAttribute` on the same attribute).
//!
//! Every bound is a relaxation: it drops conditions (constraints for the matching, device
//! exclusivity for the counters, ...), so a violation proves that the requests it names can
//! never all be satisfied. The search then stops without exploring: that is only the search's
//! answer if the search could not have met an error first, so the bounds only look at the
//! *clean prefix*, the requests in search order up to the first one whose checks may raise an
//! error (a selector or capacity check that fails on some device, a derived attribute, an
//! `All` request under a constraint that could reject one of its devices). The search cannot
//! get past requests that cannot all be
//! satisfied, and cannot raise an error before, so it would have found nothing.
//!
//! Requests with identical candidates are grouped (a thousand identical claims are one
//! group needing a thousand devices), and the matching runs over the groups: a greedy pass in
//! search order, then augmenting paths for what is still missing. A group that finds no
//! augmenting path proves Hall's condition violated: the groups its search reached need more
//! devices than their candidates, all taken by them, number.

use std::collections::HashMap;
use std::rc::Rc;

use allot_quantity::Quantity;

use super::bits::Bits;
use super::{Problem, Slot, Stop};
use crate::attributes::ConstraintKind;

/// A hash map with the allocator's fast deterministic hasher.
type Map<K, V> = HashMap<K, V, crate::cel::FxBuild>;

/// What ran short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Resource {
    /// Devices.
    Devices,
    /// Devices with pairwise different values of an attribute (`distinctAttribute`).
    DistinctValues(String),
    /// Devices sharing one value of an attribute (`matchAttribute`).
    SharedValue(String),
    /// A `matchAttribute` and a `distinctAttribute` on the same attribute and devices.
    Contradiction(String),
    /// A shared counter: pool index, counter index in the pool.
    Counter(usize, usize),
    /// A consumable capacity by the name devices publish it under.
    Capacity(String),
}

/// A proof that requests cannot all be satisfied.
#[derive(Debug, Clone)]
pub(crate) struct Shortfall {
    pub resource: Resource,
    /// The requests (indexes into the problem's requests), in search order.
    pub requests: Vec<usize>,
    /// How much they need together.
    pub needed: String,
    /// How much there is for them.
    pub available: String,
    /// The devices that could serve them (device indexes, ascending).
    pub devices: Vec<usize>,
}

/// Counts the bounds' work against the search's step budget.
pub(crate) struct Meter<'s> {
    pub steps: &'s mut u64,
    pub limit: u64,
}

impl Meter<'_> {
    fn charge(&mut self, work: usize) -> Result<(), Stop> {
        *self.steps = self.steps.saturating_add(work as u64 + 1);
        if *self.steps > self.limit {
            return Err(Stop::Budget);
        }
        Ok(())
    }
}

/// One request (or a slot of subrequests, relaxed) of the clean prefix.
struct Demand {
    /// The requests it stands for (one, or a slot's subrequests).
    reqs: Vec<usize>,
    /// The claim.
    claim: usize,
    /// For a slot of one request (not subrequests): the request (the constraint bounds look
    /// at those).
    plain: Option<usize>,
    /// Devices it needs.
    count: usize,
    /// The devices it may take (multiple-allocation devices included).
    candidates: Rc<Bits>,
}

/// The first bound the requests violate, if any.
pub(crate) fn violated(
    problem: &mut Problem<'_>,
    meter: &mut Meter<'_>,
) -> Result<Option<Shortfall>, Stop> {
    let demands = clean_prefix(problem, meter)?;
    if demands.is_empty() {
        return Ok(None);
    }
    if let Some(found) = matching(problem, &demands, meter)? {
        return Ok(Some(found));
    }
    if let Some(found) = counters(problem, &demands, meter)? {
        return Ok(Some(found));
    }
    if let Some(found) = capacity(problem, &demands, meter)? {
        return Ok(Some(found));
    }
    constraints(problem, &demands, meter)
}

/// The devices of `candidates` a request can never take for reasons the static candidates do
/// not cover: counters it could never draw (the pool is over-drawn, or the device alone draws
/// more than is left).
fn drawable(problem: &Problem<'_>, d: usize) -> bool {
    let dev = &problem.devs[d];
    if dev.uses.is_none() {
        return true;
    }
    let pc = &problem.counters[dev.pool];
    !pc.overdrawn
        && dev
            .counters()
            .iter()
            .all(|(i, amount)| amount <= &pc.available[*i])
}

/// The demands of the clean prefix, in search order.
fn clean_prefix(problem: &mut Problem<'_>, meter: &mut Meter<'_>) -> Result<Vec<Demand>, Stop> {
    let n_devs = problem.devs.len();
    let mut demands = Vec::new();
    // Per candidate list (by address; the list is kept alive with its entry, so that the
    // address is not reused): the list with undrawable devices removed.
    let mut usable: Map<*const Bits, (Rc<Bits>, Rc<Bits>)> = Map::default();
    for claim in 0..problem.claims.len() {
        for slot in 0..problem.claims[claim].slots.len() {
            let reqs: Vec<usize> = match &problem.claims[claim].slots[slot] {
                Slot::Plain(r) => vec![*r],
                Slot::Subs(subs) => subs.clone(),
            };
            let mut count = usize::MAX;
            let mut union: Option<Bits> = None;
            let mut admin = false;
            for &r in &reqs {
                meter.charge(0)?;
                let req = &problem.reqs[r];
                let constrained = problem.constraints[claim]
                    .iter()
                    .any(|c| c.applies(req.parent, req.sub));
                if req.all && constrained && !all_admitted(problem, claim, slot, r) {
                    // May raise an error when a constraint rejects one of its devices.
                    return Ok(demands);
                }
                admin |= req.admin;
                let (need, candidates) = if req.all {
                    let mut bits = Bits::new(n_devs);
                    let mut need = 0;
                    for &d in &req.all_devices {
                        let dev = &problem.devs[d];
                        need += 1;
                        if !(dev.allocated || dev.shared && !dev.multi) {
                            bits.insert(d);
                        }
                    }
                    (need, Rc::new(bits))
                } else {
                    let Some(candidates) = problem.static_candidates(r) else {
                        return Ok(demands);
                    };
                    meter.charge(candidates.words())?;
                    (problem.reqs[r].num_devices, candidates)
                };
                let key = Rc::as_ptr(&candidates);
                let candidates = match usable.get(&key) {
                    Some((_, known)) => Rc::clone(known),
                    None => {
                        let mut kept = (*candidates).clone();
                        for d in candidates.iter() {
                            if !drawable(problem, d) {
                                kept.remove(d);
                            }
                        }
                        let kept = Rc::new(kept);
                        usable.insert(key, (candidates, Rc::clone(&kept)));
                        kept
                    }
                };
                count = count.min(need);
                match &mut union {
                    None => union = Some((*candidates).clone()),
                    Some(union) => union.union_with(&candidates),
                }
                if reqs.len() == 1 {
                    union = None;
                    if !admin {
                        demands.push(Demand {
                            reqs: reqs.clone(),
                            claim,
                            plain: Some(r),
                            count,
                            candidates,
                        });
                    }
                }
            }
            // Admin access does not take devices away from others: no demand.
            if let Some(union) = union
                && !admin
            {
                demands.push(Demand {
                    reqs,
                    claim,
                    plain: None,
                    count,
                    candidates: Rc::new(union),
                });
            }
        }
    }
    Ok(demands)
}

/// Whether the constraints that apply to `All` request `r` (in slot `slot` of `claim`) admit
/// every one of its devices, whatever the search picked before: no earlier slot of the claim
/// has a request they apply to (so they hold nothing yet when the request starts), and its
/// devices, added in order, all pass. Then the request never raises "a claim constraint would
/// not be satisfied".
fn all_admitted(problem: &Problem<'_>, claim: usize, slot: usize, r: usize) -> bool {
    let req = &problem.reqs[r];
    if !req.derived.is_empty() || req.sub.is_some() {
        return false;
    }
    for constraint in &problem.constraints[claim] {
        if !constraint.applies(req.parent, req.sub) {
            continue;
        }
        let earlier = problem.claims[claim].slots[..slot].iter().any(|s| {
            let reqs: &[usize] = match s {
                Slot::Plain(r) => std::slice::from_ref(r),
                Slot::Subs(subs) => subs,
            };
            reqs.iter().any(|&e| {
                let e = &problem.reqs[e];
                constraint.applies(e.parent, e.sub)
            })
        });
        if earlier {
            return false;
        }
        let mut fresh = crate::attributes::Constraint::new(
            constraint.kind,
            constraint.attribute.clone(),
            constraint.requests.clone(),
            constraint.list_semantics(),
        );
        for &d in &req.all_devices {
            let attribute = problem.attribute(r, d, &constraint.attribute);
            if !fresh.admits(attribute) {
                return false;
            }
            if let Some(attribute) = attribute {
                fresh.add(attribute);
            }
        }
    }
    true
}

/// Demands merged by identical exclusive candidates.
struct Group {
    /// Exclusive devices it may take.
    candidates: Rc<Bits>,
    /// Exclusive devices it needs.
    need: usize,
    /// Its requests.
    reqs: Vec<usize>,
}

/// Splits `demands` into exclusive needs (a device allowing multiple allocations serves each
/// request once and never runs out, so it takes one device off the request's need) and
/// groups them by candidates.
fn groups(problem: &Problem<'_>, demands: &[(usize, &Rc<Bits>, &[usize])]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut by_list: Map<*const Bits, usize> = Map::default();
    let mut by_content: Map<Bits, usize> = Map::default();
    let mut exclusive: Map<*const Bits, (Rc<Bits>, usize)> = Map::default();
    for &(count, candidates, reqs) in demands {
        let key = Rc::as_ptr(candidates);
        let (only, multi) = exclusive
            .entry(key)
            .or_insert_with(|| {
                let mut only = (**candidates).clone();
                let mut multi = 0;
                for d in candidates.iter() {
                    if problem.devs[d].multi {
                        only.remove(d);
                        multi += 1;
                    }
                }
                (Rc::new(only), multi)
            })
            .clone();
        let need = count.saturating_sub(multi);
        if need == 0 {
            continue;
        }
        let at = match by_list.get(&key) {
            Some(&at) => at,
            None => {
                let at = *by_content.entry((*only).clone()).or_insert_with(|| {
                    groups.push(Group {
                        candidates: Rc::clone(&only),
                        need: 0,
                        reqs: Vec::new(),
                    });
                    groups.len() - 1
                });
                by_list.insert(key, at);
                at
            }
        };
        groups[at].need = groups[at].need.saturating_add(need);
        groups[at].reqs.extend_from_slice(reqs);
    }
    groups
}

const NONE: u32 = u32::MAX;

/// Whether `groups` can all get their exclusive devices (out of `size` numbered ones, each
/// serving one group); if not, the groups and devices of a violated Hall condition.
fn assign(
    groups: &[Group],
    size: usize,
    meter: &mut Meter<'_>,
) -> Result<Option<(Vec<usize>, Bits)>, Stop> {
    let mut owner = vec![NONE; size];
    let mut have = vec![0usize; groups.len()];
    // First fit, in search order.
    for (g, group) in groups.iter().enumerate() {
        meter.charge(group.candidates.words())?;
        for d in group.candidates.iter() {
            if have[g] == group.need {
                break;
            }
            if owner[d] == NONE {
                owner[d] = g as u32;
                have[g] += 1;
            }
        }
    }
    // Augmenting paths for what is missing (breadth first, over groups).
    let mut seen_group = vec![0u32; groups.len()];
    let mut seen_dev = vec![0u32; size];
    let mut parent = vec![(NONE, NONE); groups.len()];
    let mut stamp = 0u32;
    let mut queue = std::collections::VecDeque::new();
    for g in 0..groups.len() {
        while have[g] < groups[g].need {
            stamp += 1;
            queue.clear();
            queue.push_back(g);
            seen_group[g] = stamp;
            let mut free = None;
            'search: while let Some(x) = queue.pop_front() {
                meter.charge(groups[x].candidates.words())?;
                for d in groups[x].candidates.iter() {
                    if seen_dev[d] == stamp {
                        continue;
                    }
                    seen_dev[d] = stamp;
                    match owner[d] {
                        NONE => {
                            free = Some((x, d));
                            break 'search;
                        }
                        y => {
                            let y = y as usize;
                            if seen_group[y] != stamp {
                                seen_group[y] = stamp;
                                parent[y] = (x as u32, d as u32);
                                queue.push_back(y);
                            }
                        }
                    }
                }
            }
            let Some((mut x, d)) = free else {
                // Hall's condition fails for the groups reached: every device any of them
                // may take is taken by one of them, and they still need more.
                let reached: Vec<usize> = (0..groups.len())
                    .filter(|&y| seen_group[y] == stamp)
                    .collect();
                let mut devices = Bits::new(size);
                for &y in &reached {
                    devices.union_with(&groups[y].candidates);
                }
                return Ok(Some((reached, devices)));
            };
            owner[d] = x as u32;
            while x != g {
                let (px, via) = parent[x];
                owner[via as usize] = px;
                x = px as usize;
            }
            have[g] += 1;
        }
    }
    Ok(None)
}

/// Hall's condition over every demand of the clean prefix.
fn matching(
    problem: &Problem<'_>,
    demands: &[Demand],
    meter: &mut Meter<'_>,
) -> Result<Option<Shortfall>, Stop> {
    let list: Vec<(usize, &Rc<Bits>, &[usize])> = demands
        .iter()
        .map(|d| (d.count, &d.candidates, d.reqs.as_slice()))
        .collect();
    let groups = groups(problem, &list);
    let Some((reached, devices)) = assign(&groups, problem.devs.len(), meter)? else {
        return Ok(None);
    };
    let needed: usize = reached.iter().map(|&g| groups[g].need).sum();
    Ok(Some(Shortfall {
        resource: Resource::Devices,
        requests: requests_of(reached.iter().flat_map(|&g| &groups[g].reqs)),
        needed: needed.to_string(),
        available: devices.len().to_string(),
        devices: devices.iter().collect(),
    }))
}

/// Requests in search order, each once.
fn requests_of<'r>(reqs: impl Iterator<Item = &'r usize>) -> Vec<usize> {
    let mut out: Vec<usize> = reqs.copied().collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// Shared counters: the requests together draw at least the sum, per request, of its
/// cheapest candidates (devices allowing multiple allocations draw once, whoever takes them
/// first, so they count as free).
fn counters(
    problem: &Problem<'_>,
    demands: &[Demand],
    meter: &mut Meter<'_>,
) -> Result<Option<Shortfall>, Stop> {
    if problem.counters.iter().all(|pc| pc.names.is_empty()) {
        return Ok(None);
    }
    let list: Vec<(usize, &Rc<Bits>, &[usize])> = demands
        .iter()
        .map(|d| (d.count, &d.candidates, d.reqs.as_slice()))
        .collect();
    let groups = groups(problem, &list);
    // Per (pool, counter): the least the groups draw, the groups drawing, their devices.
    let mut least: Map<(usize, usize), (Quantity, Vec<usize>, Bits)> = Map::default();
    for group in &groups {
        meter.charge(group.candidates.words())?;
        let mut draws: Map<(usize, usize), Vec<&Quantity>> = Map::default();
        let total = group.candidates.len();
        for d in group.candidates.iter() {
            let dev = &problem.devs[d];
            for (i, amount) in dev.counters() {
                draws.entry((dev.pool, *i)).or_default().push(amount);
            }
        }
        for (key, mut amounts) in draws {
            // Devices that draw nothing from this counter cover that much of the need.
            let free = total - amounts.len();
            if free >= group.need {
                continue;
            }
            // The cheapest `take` amounts (a selection, not a sort).
            let take = (group.need - free).min(amounts.len());
            if take > 0 && take < amounts.len() {
                amounts.select_nth_unstable(take - 1);
            }
            let mut sum = Quantity::zero();
            for amount in &amounts[..take] {
                sum += *amount;
            }
            let entry = least
                .entry(key)
                .or_insert_with(|| (Quantity::zero(), Vec::new(), Bits::new(problem.devs.len())));
            entry.0 += &sum;
            entry.1.extend_from_slice(&group.reqs);
            for d in group.candidates.iter() {
                if problem.devs[d]
                    .counters()
                    .iter()
                    .any(|(i, _)| problem.devs[d].pool == key.0 && *i == key.1)
                {
                    entry.2.insert(d);
                }
            }
        }
    }
    let mut keys: Vec<&(usize, usize)> = least.keys().collect();
    keys.sort();
    for key in keys {
        let (sum, reqs, devices) = &least[key];
        let available = &problem.counters[key.0].available[key.1];
        if sum > available {
            return Ok(Some(Shortfall {
                resource: Resource::Counter(key.0, key.1),
                requests: requests_of(reqs.iter()),
                needed: sum.to_string(),
                available: available.to_string(),
                devices: devices.iter().collect(),
            }));
        }
    }
    Ok(None)
}

/// Consumable capacity of devices allowing multiple allocations: requests that can only take
/// such devices consume, together, at least the sum of their cheapest candidates' amounts of
/// each capacity, which must fit in what those devices have left.
fn capacity(
    problem: &mut Problem<'_>,
    demands: &[Demand],
    meter: &mut Meter<'_>,
) -> Result<Option<Shortfall>, Stop> {
    if !problem.features.consumable_capacity || !problem.devs.iter().any(|dev| dev.multi) {
        return Ok(None);
    }
    // Per capacity name: least consumed, requests, devices.
    let mut least: std::collections::BTreeMap<String, (Quantity, Vec<usize>)> =
        std::collections::BTreeMap::new();
    let mut devices = Bits::new(problem.devs.len());
    for demand in demands {
        let [r] = demand.reqs[..] else {
            continue;
        };
        if problem.reqs[r].all || demand.candidates.iter().any(|d| !problem.devs[d].multi) {
            continue;
        }
        meter.charge(demand.candidates.len())?;
        let mut amounts: std::collections::BTreeMap<String, Vec<Quantity>> =
            std::collections::BTreeMap::new();
        let total = demand.candidates.len();
        for d in demand.candidates.iter() {
            devices.insert(d);
            if let super::CapVerdict::Ok(consumed) = problem.capacity_check(r, d) {
                for (name, amount) in consumed.iter() {
                    amounts
                        .entry(name.clone())
                        .or_default()
                        .push(amount.clone());
                }
            }
        }
        for (name, mut list) in amounts {
            let free = total - list.len();
            if free >= demand.count {
                continue;
            }
            let take = (demand.count - free).min(list.len());
            if take > 0 && take < list.len() {
                list.select_nth_unstable(take - 1);
            }
            let entry = least
                .entry(name)
                .or_insert_with(|| (Quantity::zero(), Vec::new()));
            for amount in &list[..take] {
                entry.0 += amount;
            }
            entry.1.push(r);
        }
    }
    for (name, (sum, reqs)) in least {
        let mut left = Quantity::zero();
        let mut serving = Vec::new();
        for d in devices.iter() {
            let dev = &problem.devs[d];
            let Some(capacity) = dev.device.capacity.get(&name) else {
                continue;
            };
            serving.push(d);
            let mut free = capacity.value.clone();
            if let Some(used) = dev.capacity_used.as_ref().and_then(|u| u.get(&name)) {
                free -= used;
            }
            left += &free;
        }
        if sum > left {
            return Ok(Some(Shortfall {
                resource: Resource::Capacity(name),
                requests: requests_of(reqs.iter()),
                needed: sum.to_string(),
                available: left.to_string(),
                devices: serving,
            }));
        }
    }
    Ok(None)
}

/// Claim constraints over the plain requests of the clean prefix they apply to.
fn constraints(
    problem: &mut Problem<'_>,
    demands: &[Demand],
    meter: &mut Meter<'_>,
) -> Result<Option<Shortfall>, Stop> {
    for claim in 0..problem.claims.len() {
        let mine: Vec<&Demand> = demands
            .iter()
            .filter(|d| d.claim == claim && d.plain.is_some())
            .collect();
        let n_constraints = problem.constraints[claim].len();
        // Constraints looked at so far: kind, attribute, requests with their need.
        let mut seen: Vec<Seen> = Vec::new();
        for ci in 0..n_constraints {
            let mut covered: Vec<(usize, usize, Rc<Bits>)> = Vec::new();
            let mut derived = false;
            for demand in &mine {
                let Some(r) = demand.plain else { continue };
                let req = &problem.reqs[r];
                if !problem.constraints[claim][ci].applies(req.parent, req.sub) {
                    continue;
                }
                derived |= !req.derived.is_empty();
                covered.push((r, demand.count, Rc::clone(&demand.candidates)));
            }
            let total: usize = covered.iter().map(|c| c.1).sum();
            if derived || total < 2 {
                continue;
            }
            let column = problem.column(covered[0].0, ci);
            let constraint = &problem.constraints[claim][ci];
            let (kind, attribute, list) = (
                constraint.kind,
                constraint.attribute.clone(),
                constraint.list_semantics(),
            );
            let reqs: Vec<usize> = covered.iter().map(|c| c.0).collect();
            let needs: Vec<(usize, usize)> = covered.iter().map(|c| (c.0, c.1)).collect();
            // Two devices under both a `matchAttribute` and a `distinctAttribute` of one
            // attribute would have to share a value and differ (as scalars, or as sets that
            // intersect and are disjoint).
            let clash = seen.iter().find_map(|(k, a, other)| {
                if *k == kind || *a != attribute {
                    return None;
                }
                let both: Vec<(usize, usize)> = needs
                    .iter()
                    .copied()
                    .filter(|(r, _)| other.iter().any(|(o, _)| o == r))
                    .collect();
                (both.iter().map(|(_, n)| n).sum::<usize>() >= 2).then_some(both)
            });
            if let Some(both) = clash {
                let mut devices = Bits::new(problem.devs.len());
                for (r, _, candidates) in &covered {
                    if both.iter().any(|(b, _)| b == r) {
                        devices.union_with(candidates);
                    }
                }
                return Ok(Some(Shortfall {
                    resource: Resource::Contradiction(attribute),
                    requests: both.iter().map(|(r, _)| *r).collect(),
                    needed: both.iter().map(|(_, n)| n).sum::<usize>().to_string(),
                    available: "1".to_string(),
                    devices: devices.iter().collect(),
                }));
            }
            seen.push((kind, attribute.clone(), needs));
            meter.charge(covered.len() * problem.devs.len() / 64)?;
            let found = match kind {
                ConstraintKind::Distinct => distinct(problem, &covered, &column, list, meter)?,
                ConstraintKind::Match => shared(problem, &covered, &column, meter)?,
            };
            if let Some((needed, available, devices)) = found {
                return Ok(Some(Shortfall {
                    resource: match kind {
                        ConstraintKind::Distinct => Resource::DistinctValues(attribute),
                        ConstraintKind::Match => Resource::SharedValue(attribute),
                    },
                    requests: reqs,
                    needed,
                    available,
                    devices,
                }));
            }
        }
    }
    Ok(None)
}

type Found = Option<(String, String, Vec<usize>)>;

/// A constraint looked at: its kind, attribute, and requests with their need.
type Seen = (ConstraintKind, String, Vec<(usize, usize)>);

/// `distinctAttribute`: every device needs its own value (with scalar semantics the first
/// device may also be one whose value is a list; devices without the attribute never join).
fn distinct(
    problem: &Problem<'_>,
    covered: &[(usize, usize, Rc<Bits>)],
    column: &crate::view::Column,
    list: bool,
    meter: &mut Meter<'_>,
) -> Result<Found, Stop> {
    // Values are numbered as the column interns them; one more for "any other value".
    let wildcard = column.ids.len();
    let size = wildcard + 1;
    let mut groups = Vec::new();
    let mut devices = Bits::new(problem.devs.len());
    for (r, count, candidates) in covered {
        let mut values = Bits::new(size);
        for d in candidates.iter() {
            if column.attrs[d].is_none() {
                continue;
            }
            devices.insert(d);
            if column.keys[d].is_empty() {
                if !list {
                    values.insert(wildcard);
                }
            } else {
                for &key in &column.keys[d] {
                    values.insert(key as usize);
                }
            }
        }
        groups.push(Group {
            candidates: Rc::new(values),
            need: *count,
            reqs: vec![*r],
        });
    }
    let Some((reached, values)) = assign(&groups, size, meter)? else {
        return Ok(None);
    };
    let needed: usize = reached.iter().map(|&g| groups[g].need).sum();
    Ok(Some((
        needed.to_string(),
        values.len().to_string(),
        devices.iter().collect(),
    )))
}

/// `matchAttribute`: all devices share one value, so some value must have enough candidates
/// for every request at once.
fn shared(
    problem: &Problem<'_>,
    covered: &[(usize, usize, Rc<Bits>)],
    column: &crate::view::Column,
    meter: &mut Meter<'_>,
) -> Result<Found, Stop> {
    let total: usize = covered.iter().map(|c| c.1).sum();
    let mut union = Bits::new(problem.devs.len());
    for (_, _, candidates) in covered {
        union.union_with(candidates);
    }
    // Candidates per value, over every request.
    let mut per_value = vec![0usize; column.ids.len()];
    for d in union.iter() {
        for &key in &column.keys[d] {
            per_value[key as usize] += 1;
        }
    }
    meter.charge(union.words() + per_value.len())?;
    let best = per_value.iter().copied().max().unwrap_or(0);
    // A device allowing multiple allocations may serve several requests.
    let shared_devices = union.iter().any(|d| problem.devs[d].multi);
    for (value, &count) in per_value.iter().enumerate() {
        if count < total && !shared_devices {
            continue;
        }
        // Enough devices carry the value: can every request have its share of them?
        let mut demands = Vec::new();
        for (r, need, candidates) in covered {
            let mut only = Bits::new(problem.devs.len());
            for d in candidates.iter() {
                if column.keys[d].iter().any(|&k| k as usize == value) {
                    only.insert(d);
                }
            }
            demands.push((*need, Rc::new(only), vec![*r]));
        }
        let list: Vec<(usize, &Rc<Bits>, &[usize])> = demands
            .iter()
            .map(|(need, c, r)| (*need, c, r.as_slice()))
            .collect();
        let groups = groups(problem, &list);
        if assign(&groups, problem.devs.len(), meter)?.is_none() {
            return Ok(None);
        }
    }
    Ok(Some((
        total.to_string(),
        best.to_string(),
        union.iter().collect(),
    )))
}
