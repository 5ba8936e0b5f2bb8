//! The fast path: the first branch of the search, walked without building the search's
//! problem, for the common shapes (plain `ExactCount` requests, `matchAttribute` and
//! `distinctAttribute` constraints, devices that draw no counters, allow no multiple
//! allocations, carry no capacity policy and no taints).
//!
//! The search (see [`crate::search`]) is a depth-first walk that, at each device still needed,
//! tries the devices in search order and descends into the first one it can take. When that
//! first branch reaches the end without backtracking, its picks are the answer. This module
//! walks exactly that branch, reading what it needs from the node view (device layout and the
//! selector rows the search keeps there) and checking nothing else, and gives up (`None`,
//! the caller then runs the search) as soon as the branch would backtrack, or the input has
//! anything the walk does not model: subrequests, `All`, admin access, capacity requests,
//! derived attributes, DeviceTaintRules, a device that is not simple, a selector row not
//! worked out yet (or one with an evaluation error), anything the search would reject with
//! an error. Giving up costs nothing but the walk so far, so the answer, the errors and the
//! explanations are those of the search.

use allot_api::resource::v1::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocationResult, DeviceAllocationMode, DeviceAllocationResult,
    DeviceClass, DeviceToleration,
};
use smallvec::SmallVec;

use crate::attributes::{Constraint, ConstraintKind};
use crate::search::{Picks, configs, device_result, node_selector};
use crate::view::Column;
use crate::{AllocationInput, CelCache, Features};

/// A request of the claim being walked.
struct Request<'a> {
    name: &'a str,
    class: &'a DeviceClass,
    count: usize,
    tolerations: &'a [DeviceToleration],
    /// Per device: the selectors accept it and per-device node selection admits it.
    row: std::rc::Rc<[bool]>,
}

/// Devices looked at per claim before the walk leaves the claim to the search (whose
/// prunings cut what an unsatisfiable claim would otherwise explore).
const MAX_VISITS: usize = 1024;

/// The depth-first walk of one claim, step for step as the search's (without its prunings,
/// which never change an answer).
struct Walk<'w> {
    reqs: &'w [Request<'w>],
    /// Per device still needed: its request.
    slots: &'w [usize],
    constraints: &'w mut [Constraint],
    /// Per constraint: its attribute of every device (from the node view).
    columns: &'w [std::rc::Rc<Column>],
    /// Devices in use: held by existing claims or picked in this call.
    taken: &'w mut [bool],
    picked: SmallVec<[(usize, usize); 8]>,
    simple: &'w [bool],
    /// Per request and constraint: whether the constraint applies to the request.
    applies: &'w [bool],
    visits: usize,
}

impl Walk<'_> {
    /// Picks devices for slots `slot..`: `Some(true)` when all fit (picks in `picked`),
    /// `Some(false)` when none of the branches does (state as on entry), `None` when the walk
    /// meets something it does not model (or has looked long enough).
    fn descend(&mut self, slot: usize) -> Option<bool> {
        let Some(&r) = self.slots.get(slot) else {
            return Some(true);
        };
        let row = &*self.reqs[r].row;
        let applies = &self.applies[r * self.constraints.len()..][..self.constraints.len()];
        self.visits += row.len();
        if self.visits > MAX_VISITS {
            return None;
        }
        for (d, &selected) in row.iter().enumerate() {
            if !selected {
                continue;
            }
            let simple = self.simple[d];
            if simple && self.taken[d] {
                continue;
            }
            if !simple {
                return None;
            }
            let mut added = 0;
            let mut admitted = true;
            for ((constraint, column), &applies) in
                self.constraints.iter_mut().zip(self.columns).zip(applies)
            {
                if !applies {
                    added += 1;
                    continue;
                }
                let attribute = column.attrs[d].as_ref();
                if !constraint.admits(attribute) {
                    admitted = false;
                    break;
                }
                if let Some(attribute) = attribute {
                    constraint.add(attribute);
                }
                added += 1;
            }
            if admitted {
                self.taken[d] = true;
                self.picked.push((d, r));
                if self.descend(slot + 1)? {
                    return Some(true);
                }
                self.taken[d] = false;
                self.picked.pop();
            }
            for (constraint, &applies) in self.constraints[..added].iter_mut().zip(applies) {
                if applies {
                    constraint.remove();
                }
            }
        }
        Some(false)
    }
}

/// The search's answer when its first branch succeeds and the input has the shapes this
/// path models; `None` otherwise (run the search).
pub(crate) fn allocate(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
) -> Option<Vec<AllocationResult>> {
    if features.device_taints && !input.taint_rules.is_empty() {
        return None;
    }
    let view = cache.views.get(input.node, features, input.slices);
    let flat = view.flat(input.slices, input.node, features)?;
    let n = flat.devices.len();
    // Devices existing claims hold (for simple devices: in use, whether dedicated or shared),
    // then also those this call picks.
    let mut taken = vec![false; n];
    for claim in input.allocated_claims {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        // Results of one claim mostly name one pool: look it up once per run of them.
        let mut pool: Option<(&str, &str, Option<&crate::view::PoolIndex>)> = None;
        for result in &allocation.devices.results {
            if result.admin_access == Some(true) {
                continue;
            }
            let names = match pool {
                Some((driver, name, names)) if driver == result.driver && name == result.pool => {
                    names
                }
                _ => {
                    let names = flat.index.pool(&result.driver, &result.pool);
                    pool = Some((&result.driver, &result.pool, names));
                    names
                }
            };
            if let Some(&d) = names.and_then(|names| names.get(result.device.as_str())) {
                taken[d] = true;
            }
        }
    }
    let device_at = |d: usize| {
        let (s, i) = flat.devices[d];
        let slice = input.slices[s as usize];
        (slice, &slice.spec.devices[i as usize])
    };
    let mut out = Vec::with_capacity(input.claims.len());
    for claim in input.claims {
        let spec = &claim.spec.devices;
        let mut reqs: SmallVec<[Request<'_>; 4]> = SmallVec::new();
        let mut total = 0usize;
        for request in &spec.requests {
            if !request.first_available.is_empty() {
                return None;
            }
            let exactly = request.exactly.as_ref()?;
            if exactly.capacity.is_some()
                || exactly.admin_access.is_some()
                || !exactly.derived_attributes.is_empty()
                || !matches!(
                    exactly.allocation_mode.as_ref(),
                    None | Some(DeviceAllocationMode::ExactCount)
                )
            {
                return None;
            }
            let count = usize::try_from(exactly.count.unwrap_or(1))
                .ok()
                .filter(|&count| count > 0)?;
            total += count;
            if exactly.device_class_name.is_empty() {
                return None;
            }
            let class = input
                .classes
                .iter()
                .find(|class| class.metadata.name == exactly.device_class_name)?;
            let mut ids: SmallVec<[usize; 4]> = SmallVec::new();
            for selector in &class.spec.selectors {
                if let Some(cel) = &selector.cel {
                    ids.push(cache.get_with_id(&cel.expression).0);
                }
            }
            for selector in &exactly.selectors {
                ids.push(cache.get_with_id(&selector.cel.as_ref()?.expression).0);
            }
            reqs.push(Request {
                name: &request.name,
                class,
                count,
                tolerations: &exactly.tolerations,
                row: view.row(&ids)??,
            });
        }
        if total > ALLOCATION_RESULTS_MAX_SIZE {
            return None;
        }
        let mut constraints: SmallVec<[Constraint; 2]> = SmallVec::new();
        for constraint in &spec.constraints {
            let (kind, attribute) =
                match (&constraint.match_attribute, &constraint.distinct_attribute) {
                    (Some(attribute), _) => (ConstraintKind::Match, attribute),
                    (None, Some(attribute)) => (ConstraintKind::Distinct, attribute),
                    (None, None) => return None,
                };
            constraints.push(Constraint::new(
                kind,
                attribute.clone(),
                constraint.requests.clone(),
                features.list_type_attributes,
            ));
        }
        let columns: SmallVec<[std::rc::Rc<Column>; 2]> = constraints
            .iter()
            .map(|constraint| {
                view.column(
                    &constraint.attribute,
                    constraint.list_semantics(),
                    flat.devices.iter().map(|&(s, i)| {
                        let spec = &input.slices[s as usize].spec;
                        (spec.driver.as_str(), &spec.devices[i as usize].attributes)
                    }),
                )
            })
            .collect();
        let applies: SmallVec<[bool; 8]> = reqs
            .iter()
            .flat_map(|req| {
                constraints
                    .iter()
                    .map(|constraint| constraint.applies(req.name, None))
            })
            .collect();
        // The claim's devices, one slot per device needed, walked depth first.
        let slots: SmallVec<[usize; 8]> = reqs
            .iter()
            .enumerate()
            .flat_map(|(r, req)| std::iter::repeat_n(r, req.count))
            .collect();
        let mut walk = Walk {
            reqs: &reqs,
            slots: &slots,
            constraints: &mut constraints,
            taken: &mut taken,
            columns: &columns,
            picked: SmallVec::new(),
            simple: &flat.simple,
            applies: &applies,
            visits: 0,
        };
        // A claim that does not fit given the picks for the claims before it would make the
        // search backtrack into those: leave that to the search.
        if !walk.descend(0)? {
            return None;
        }
        let picked = walk.picked;
        let results = picked
            .iter()
            .map(|&(d, r)| {
                let (slice, device) = device_at(d);
                let req = &reqs[r];
                device_result(
                    features,
                    req.name.to_string(),
                    Picks {
                        driver: &slice.spec.driver,
                        pool: &slice.spec.pool.name,
                        slice,
                        device,
                    },
                    false,
                    req.tolerations,
                    None,
                    None,
                )
            })
            .collect();
        let selected: SmallVec<[(&DeviceClass, &str, String); 4]> = reqs
            .iter()
            .map(|req| (req.class, req.name, req.name.to_string()))
            .collect();
        let config = configs(&selected, claim);
        let node_selector = node_selector(
            picked.iter().map(|&(d, _)| device_at(d)),
            &input.node.metadata.name,
            claim,
        )
        .ok()?;
        out.push(AllocationResult {
            devices: DeviceAllocationResult { results, config },
            node_selector,
            allocation_timestamp: None,
        });
    }
    Some(out)
}
