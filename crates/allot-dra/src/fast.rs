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
//!
//! What depends only on the claim's device spec, its classes and the node view is worked out
//! once and kept in the view as a [`Plan`] (each request's selectable devices, the constraints
//! as interned per-device codes, the slots, the result's configuration), recognised again by
//! the spec's number (see [`Specs`]) and the classes (by uid+resourceVersion, or by spec when
//! they have none). Per call the path only marks the devices existing claims hold (a
//! per-pool hash table of device names), then, for a claim without constraints, takes each
//! request's first free devices (the first branch, whose picks nothing else constrains); for
//! a claim with constraints it lists each request's free candidates and walks them; a walk
//! that runs long first checks whether any value of a scalar `matchAttribute` has enough free
//! candidates at all, so a claim that cannot fit goes to the search without a long walk.

use std::rc::Rc;

use allot_api::resource::v1::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocationResult, DeviceAllocationConfiguration,
    DeviceAllocationMode, DeviceAllocationResult, DeviceClaim, DeviceClass, DeviceClassSpec,
    ResourceClaim, SmolStr,
};
use smallvec::SmallVec;

use crate::attributes::{Constraint, ConstraintKind};
use crate::search::{Picks, configs, copied, device_result, node_selector};
use crate::view::{Flat, NodeView, same};
use crate::{AllocationInput, CelCache, Features};

/// Devices looked at per claim before the walk leaves the claim to the search (whose
/// prunings cut what an unsatisfiable claim would otherwise explore).
const MAX_VISITS: usize = 1024;

/// Devices looked at before the walk checks whether the claim can fit at all.
const FIRST_VISITS: usize = 256;

/// Plans kept per node view beyond this many are dropped, oldest first.
const MAX_PLANS: usize = 8;

/// Claim device specs numbered by [`Specs`] beyond this many are forgotten, oldest first.
const MAX_SPECS: usize = 64;

/// Claims [`Specs`] recognises by identity beyond this many are forgotten, oldest first.
const MAX_CLAIMS: usize = 16;

/// A scalar constraint's code of a device without the attribute.
const ABSENT: u32 = u32::MAX;
/// A scalar constraint's code of a device whose attribute has no scalar value (a list).
const NO_SCALAR: u32 = u32::MAX - 1;

/// What the fast path works out once per claim spec and node view: the requests with their
/// classes and selectable devices, the constraints as per-device codes, the devices needed
/// in walk order and the result's configuration. It is reused while the claim's device spec
/// and the classes it names are the same (see [`Plan::fits`]); the view it is kept in
/// vouches for the node, gates and slices.
pub(crate) struct Plan {
    /// The number of the claim device spec the plan was made for (see [`Specs`]).
    spec: u64,
    /// Per request: its class as it was.
    classes: Vec<ClassRef>,
    /// Per request: its devices in search order whose selectors accept them (and per-device
    /// node selection admits them).
    selected: Vec<Vec<u32>>,
    /// Per request: how many devices it needs.
    counts: Vec<usize>,
    /// Per request: its name as results hold it.
    requests: Vec<SmolStr>,
    constraints: Vec<PlanConstraint>,
    /// Per request: the constraints that apply to its devices.
    rules: Vec<SmallVec<[usize; 2]>>,
    /// Per device needed, in walk order: its request.
    slots: Vec<usize>,
    /// The configuration of the claim's result.
    config: Vec<DeviceAllocationConfiguration>,
}

/// How a plan recognises a request's class again.
struct ClassRef {
    /// Its position in the input's classes when the plan was made (checked first).
    at: usize,
    name: String,
    /// `(uid, resourceVersion)` when the class has both (the store changes the version with
    /// every change), else its spec, compared whole.
    version: Option<(String, String)>,
    spec: Option<DeviceClassSpec>,
}

impl ClassRef {
    fn of(at: usize, class: &DeviceClass) -> Self {
        let meta = &class.metadata;
        let version = (!meta.uid.is_empty() && !meta.resource_version.is_empty())
            .then(|| (meta.uid.clone(), meta.resource_version.clone()));
        ClassRef {
            at,
            name: meta.name.clone(),
            spec: version.is_none().then(|| class.spec.clone()),
            version,
        }
    }

    /// Whether `classes` still has this class, unchanged, where it was.
    fn holds(&self, classes: &[DeviceClass]) -> bool {
        let Some(class) = classes.get(self.at) else {
            return false;
        };
        let meta = &class.metadata;
        if !same(&meta.name, &self.name) {
            return false;
        }
        match (&self.version, &self.spec) {
            (Some((uid, rv)), _) => same(&meta.uid, uid) && same(&meta.resource_version, rv),
            (None, Some(spec)) => {
                (meta.uid.is_empty() || meta.resource_version.is_empty()) && class.spec == *spec
            }
            (None, None) => false,
        }
    }
}

/// A claim constraint over the view's devices.
struct PlanConstraint {
    kind: ConstraintKind,
    /// Per request: whether the constraint applies to its devices.
    applies: Vec<bool>,
    codes: Codes,
}

/// A constraint's attribute of every device, as small numbers (equal numbers, equal values).
enum Codes {
    /// Scalar semantics: the interned value, [`NO_SCALAR`] or [`ABSENT`]; and how many
    /// values there are.
    Scalar(Vec<u32>, usize),
    /// List semantics: the interned values of the device's set (empty: absent or no value).
    List(Rc<crate::view::Column>),
}

/// Numbers for the claim device specs the fast path plans for, kept across calls (in the
/// [`CelCache`]): a plan names its spec by number, so finding a claim's plan on a node compares
/// numbers, not specs. A claim with a `uid` and a `resourceVersion` (every claim a store
/// holds; the store changes the version with every write) is recognised by those, so its spec
/// is compared once, not once per node the scheduler tries it on; a claim without them (built
/// in memory, or read from a file) is numbered by comparing its spec with the specs numbered
/// lately. A claim is recognised by its namespace and name too, so that two claims of a
/// hand-written file that share a uid and a version are still told apart. A number stands for
/// one spec for good: numbers are never reused, and a forgotten spec seen again gets a new
/// one (its old plans are then no longer found, and age out).
#[derive(Default)]
pub(crate) struct Specs(std::cell::RefCell<SpecNumbers>);

#[derive(Default)]
struct SpecNumbers {
    /// Claims recognised lately: a ring of [`MAX_CLAIMS`] entries, the oldest overwritten
    /// in place (its strings' memory reused), so recording a claim allocates nothing once
    /// the ring is full.
    claims: Vec<Recognised>,
    /// The entry of `claims` to overwrite next, once it is full.
    oldest: usize,
    /// Specs numbered lately, newest last.
    specs: Vec<(DeviceClaim, u64)>,
    /// The next number.
    next: u64,
}

/// A claim recognised lately: its identity and its spec's number.
struct Recognised {
    /// The last bytes of uid and resourceVersion (where one claim's differ from another's),
    /// compared before the strings.
    fingerprint: u64,
    /// uid, resourceVersion, namespace and name.
    identity: [String; 4],
    number: u64,
}

/// The identity of `claim`: uid, resourceVersion, namespace and name.
fn identity(claim: &ResourceClaim) -> [&str; 4] {
    let meta = &claim.metadata;
    [
        &meta.uid,
        &meta.resource_version,
        &meta.namespace,
        &meta.name,
    ]
}

/// The last eight bytes of `text` (all of it when shorter) as a number.
#[inline]
fn tail(text: &str) -> u64 {
    let bytes = text.as_bytes();
    match bytes.len().checked_sub(8) {
        Some(start) => {
            let mut word = [0u8; 8];
            word.copy_from_slice(&bytes[start..]);
            u64::from_le_bytes(word)
        }
        None => crate::cel::tail_word(bytes),
    }
}

impl Recognised {
    fn is(&self, fingerprint: u64, identity: &[&str; 4]) -> bool {
        self.fingerprint == fingerprint
            && self
                .identity
                .iter()
                .zip(identity)
                .all(|(kept, given)| same(kept, given))
    }
}

impl Specs {
    /// The number of `claim`'s device spec.
    pub(crate) fn number(&self, claim: &ResourceClaim) -> u64 {
        let identity = identity(claim);
        let identified = !identity[0].is_empty() && !identity[1].is_empty();
        let fingerprint = tail(identity[0]) ^ tail(identity[1]).rotate_left(32);
        let mut numbers = self.0.borrow_mut();
        if identified
            && let Some(known) = numbers
                .claims
                .iter()
                .find(|known| known.is(fingerprint, &identity))
        {
            return known.number;
        }
        let number = match numbers
            .specs
            .iter()
            .rev()
            .find(|(spec, _)| *spec == claim.spec.devices)
        {
            Some(&(_, number)) => number,
            None => {
                let number = numbers.next;
                numbers.next += 1;
                if numbers.specs.len() >= MAX_SPECS {
                    numbers.specs.remove(0);
                }
                numbers.specs.push((claim.spec.devices.clone(), number));
                number
            }
        };
        if identified {
            numbers.record(fingerprint, &identity, number);
        }
        number
    }
}

impl SpecNumbers {
    /// Remembers a claim's identity and spec number, over the oldest entry once the ring is
    /// full.
    fn record(&mut self, fingerprint: u64, identity: &[&str; 4], number: u64) {
        if self.claims.len() < MAX_CLAIMS {
            self.claims.push(Recognised {
                fingerprint,
                identity: identity.map(str::to_string),
                number,
            });
            return;
        }
        let entry = &mut self.claims[self.oldest];
        self.oldest = (self.oldest + 1) % MAX_CLAIMS;
        entry.fingerprint = fingerprint;
        entry.number = number;
        for (kept, given) in entry.identity.iter_mut().zip(identity) {
            kept.clear();
            kept.push_str(given);
        }
    }
}

impl Plan {
    /// Whether the plan serves a claim whose device spec has number `spec`, with these
    /// classes.
    fn fits(&self, spec: u64, classes: &[DeviceClass]) -> bool {
        self.spec == spec && self.classes.iter().all(|class| class.holds(classes))
    }

    /// The plan of `claim` over `view`, `None` when the claim has a shape the fast path does
    /// not model or a selector row is not worked out yet.
    fn make(
        input: &AllocationInput<'_>,
        features: &Features,
        cache: &CelCache,
        view: &NodeView,
        flat: &Flat,
        claim: &ResourceClaim,
        number: u64,
    ) -> Option<Plan> {
        let spec = &claim.spec.devices;
        let mut classes = Vec::with_capacity(spec.requests.len());
        let mut selected = Vec::with_capacity(spec.requests.len());
        let mut counts = Vec::with_capacity(spec.requests.len());
        let mut chosen: Vec<(&DeviceClass, &str, String)> = Vec::new();
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
            if exactly.device_class_name.is_empty() {
                return None;
            }
            let (at, class) = input
                .classes
                .iter()
                .enumerate()
                .find(|(_, class)| class.metadata.name == exactly.device_class_name)?;
            let mut ids: SmallVec<[usize; 4]> = SmallVec::new();
            for selector in &class.spec.selectors {
                if let Some(cel) = &selector.cel {
                    ids.push(cache.get_with_id(&cel.expression).0);
                }
            }
            for selector in &exactly.selectors {
                ids.push(cache.get_with_id(&selector.cel.as_ref()?.expression).0);
            }
            let row = view.row(&ids)??;
            selected.push(
                row.iter()
                    .enumerate()
                    .filter(|&(_, &selectable)| selectable)
                    .map(|(d, _)| u32::try_from(d).ok())
                    .collect::<Option<Vec<u32>>>()?,
            );
            classes.push(ClassRef::of(at, class));
            counts.push(count);
            chosen.push((class, request.name.as_str(), request.name.clone()));
        }
        if counts.iter().sum::<usize>() > ALLOCATION_RESULTS_MAX_SIZE {
            return None;
        }
        let mut constraints = Vec::with_capacity(spec.constraints.len());
        for constraint in &spec.constraints {
            let (kind, attribute) =
                match (&constraint.match_attribute, &constraint.distinct_attribute) {
                    (Some(attribute), _) => (ConstraintKind::Match, attribute),
                    (None, Some(attribute)) => (ConstraintKind::Distinct, attribute),
                    (None, None) => return None,
                };
            let rule = Constraint::new(
                kind,
                attribute.clone(),
                constraint.requests.clone(),
                features.list_type_attributes,
            );
            let column = view.column(
                attribute,
                rule.list_semantics(),
                flat.devices.iter().map(|&(s, i)| {
                    let spec = &input.slices[s as usize].spec;
                    (spec.driver.as_str(), &spec.devices[i as usize].attributes)
                }),
            );
            let codes = if rule.list_semantics() {
                Codes::List(column)
            } else {
                Codes::Scalar(
                    column
                        .attrs
                        .iter()
                        .zip(&column.keys)
                        .map(|(attribute, keys)| match (attribute, keys.first()) {
                            (None, _) => ABSENT,
                            (Some(_), None) => NO_SCALAR,
                            (Some(_), Some(&key)) => key,
                        })
                        .collect(),
                    column.ids.len(),
                )
            };
            constraints.push(PlanConstraint {
                kind,
                applies: spec
                    .requests
                    .iter()
                    .map(|request| rule.applies(&request.name, None))
                    .collect(),
                codes,
            });
        }
        let rules = (0..spec.requests.len())
            .map(|r| {
                constraints
                    .iter()
                    .enumerate()
                    .filter(|(_, c)| c.applies[r])
                    .map(|(c, _)| c)
                    .collect()
            })
            .collect();
        let slots = counts
            .iter()
            .enumerate()
            .flat_map(|(r, &count)| std::iter::repeat_n(r, count))
            .collect();
        Some(Plan {
            spec: number,
            classes,
            selected,
            counts,
            requests: spec
                .requests
                .iter()
                .map(|request| SmolStr::from(&request.name))
                .collect(),
            constraints,
            rules,
            slots,
            config: configs(&chosen, claim),
        })
    }

    /// Whether no assignment can exist because some scalar `matchAttribute` constraint over
    /// two or more devices finds no value that enough of its requests' candidates share.
    fn cannot_fit(
        &self,
        candidates: &[u32],
        ranges: &[(u32, u32)],
        counts: &mut Vec<u32>,
        marks: &mut Vec<bool>,
    ) -> bool {
        for constraint in &self.constraints {
            let (ConstraintKind::Match, Codes::Scalar(codes, values)) =
                (constraint.kind, &constraint.codes)
            else {
                continue;
            };
            let needed: usize = self
                .counts
                .iter()
                .zip(&constraint.applies)
                .filter(|&(_, &applies)| applies)
                .map(|(&count, _)| count)
                .sum();
            if needed < 2 {
                continue;
            }
            // Per value: the distinct candidates carrying it (a device several requests can
            // take counts once).
            counts.clear();
            counts.resize(*values, 0);
            marks.clear();
            marks.resize(codes.len(), false);
            let mut most = 0;
            for (range, _) in ranges
                .iter()
                .zip(&constraint.applies)
                .filter(|&(_, &applies)| applies)
            {
                for &d in &candidates[range.0 as usize..range.1 as usize] {
                    let (d, code) = (d as usize, codes[d as usize]);
                    if code >= NO_SCALAR || std::mem::replace(&mut marks[d], true) {
                        continue;
                    }
                    let count = &mut counts[code as usize];
                    *count += 1;
                    most = most.max(*count as usize);
                }
            }
            if most < needed {
                return true;
            }
        }
        false
    }
}

/// Buffers of the fast path, kept in the node view and reused call after call.
#[derive(Default)]
pub(crate) struct Scratch {
    /// Per device: [`FREE`], [`TAKEN`] or [`OTHER`].
    state: Vec<u8>,
    /// The candidates of the claim's requests, one request after the other.
    candidates: Vec<u32>,
    /// Per request: its candidates' range.
    ranges: Vec<(u32, u32)>,
    /// Per constraint value: candidates carrying it.
    counts: Vec<u32>,
    /// Per device: counted already.
    marks: Vec<bool>,
}

/// A scalar `matchAttribute` state before any device was added.
const UNSET: u32 = u32::MAX - 2;
/// A scalar `matchAttribute` state after a first device without a scalar value: nothing more
/// may join.
const BLOCKED: u32 = u32::MAX - 3;

/// The running state of one constraint during the walk: what the devices picked so far
/// contributed.
enum Added<'p> {
    /// Scalar `matchAttribute`: the value every device must have ([`UNSET`] while empty,
    /// [`BLOCKED`] when nothing can match), and how many devices were added.
    ScalarMatch {
        codes: &'p [u32],
        value: u32,
        len: u32,
    },
    /// Scalar `distinctAttribute`: each picked device's code.
    ScalarDistinct {
        codes: &'p [u32],
        added: SmallVec<[u32; 8]>,
    },
    /// List semantics: each picked device's set (distinct) or the running intersection after
    /// it (match).
    List {
        kind: ConstraintKind,
        column: &'p crate::view::Column,
        added: Vec<SmallVec<[u32; 2]>>,
    },
}

impl<'p> Added<'p> {
    fn new(constraint: &'p PlanConstraint) -> Self {
        match (&constraint.codes, constraint.kind) {
            (Codes::Scalar(codes, _), ConstraintKind::Match) => Added::ScalarMatch {
                codes,
                value: UNSET,
                len: 0,
            },
            (Codes::Scalar(codes, _), ConstraintKind::Distinct) => Added::ScalarDistinct {
                codes,
                added: SmallVec::new(),
            },
            (Codes::List(column), kind) => Added::List {
                kind,
                column,
                added: Vec::new(),
            },
        }
    }

    /// Whether device `d` may join (as [`Constraint::admits`] decides on whole values).
    #[inline]
    fn admits(&self, d: usize) -> bool {
        match self {
            Added::ScalarMatch { codes, value, .. } => {
                let code = codes[d];
                code != ABSENT && (*value == UNSET || code == *value)
            }
            Added::ScalarDistinct { codes, added } => {
                let code = codes[d];
                code != ABSENT
                    && (added.is_empty()
                        || (code != NO_SCALAR && added.iter().all(|&other| other != code)))
            }
            Added::List {
                kind,
                column,
                added,
            } => {
                let keys = &column.keys[d];
                if keys.is_empty() {
                    return false;
                }
                match kind {
                    ConstraintKind::Match => added
                        .last()
                        .is_none_or(|running| running.iter().any(|key| keys.contains(key))),
                    ConstraintKind::Distinct => added
                        .iter()
                        .all(|other| other.iter().all(|key| !keys.contains(key))),
                }
            }
        }
    }

    /// Adds device `d` (which [`Added::admits`] accepted).
    #[inline]
    fn add(&mut self, d: usize) {
        match self {
            Added::ScalarMatch { codes, value, len } => {
                if *len == 0 {
                    let code = codes[d];
                    *value = if code == NO_SCALAR { BLOCKED } else { code };
                }
                *len += 1;
            }
            Added::ScalarDistinct { codes, added } => added.push(codes[d]),
            Added::List {
                kind,
                column,
                added,
            } => {
                let keys = &column.keys[d];
                let entry = match (kind, added.last()) {
                    (ConstraintKind::Match, Some(running)) => running
                        .iter()
                        .copied()
                        .filter(|key| keys.contains(key))
                        .collect(),
                    _ => keys.clone(),
                };
                added.push(entry);
            }
        }
    }

    /// Removes every device.
    fn clear(&mut self) {
        match self {
            Added::ScalarMatch { value, len, .. } => {
                *value = UNSET;
                *len = 0;
            }
            Added::ScalarDistinct { added, .. } => added.clear(),
            Added::List { added, .. } => added.clear(),
        }
    }

    /// Removes the device added last.
    #[inline]
    fn remove(&mut self) {
        match self {
            Added::ScalarMatch { value, len, .. } => {
                *len -= 1;
                if *len == 0 {
                    *value = UNSET;
                }
            }
            Added::ScalarDistinct { added, .. } => {
                added.pop();
            }
            Added::List { added, .. } => {
                added.pop();
            }
        }
    }
}

/// A device free for the walk to pick (in [`Scratch::state`]).
const FREE: u8 = 0;
/// A simple device in use, by existing claims or picks of this call.
const TAKEN: u8 = 1;
/// A device that is not simple: the walk gives up when it would consider it.
const OTHER: u8 = 2;

/// The depth-first walk of one claim, step for step as the search's (without its prunings,
/// which never change an answer).
struct Walk<'w, 'p> {
    plan: &'p Plan,
    /// The devices each request may take, in search order: those its selectors accept, less
    /// the simple ones already in use when the claim's walk starts.
    candidates: &'w [u32],
    /// Per request: its range in `candidates`.
    ranges: &'w [(u32, u32)],
    /// Per constraint: the devices added so far.
    added: &'w mut [Added<'p>],
    /// Per device: [`FREE`], [`TAKEN`] or [`OTHER`].
    state: &'w mut [u8],
    picked: SmallVec<[(u32, u32); 8]>,
    visits: usize,
    /// Visits after which the walk gives up.
    limit: usize,
}

impl Walk<'_, '_> {
    /// Back to the start (undoing the picks of a walk that gave up), with a new limit.
    fn restart(&mut self, limit: usize) {
        for &(d, _) in &self.picked {
            self.state[d as usize] = FREE;
        }
        self.picked.clear();
        for added in self.added.iter_mut() {
            added.clear();
        }
        self.visits = 0;
        self.limit = limit;
    }

    /// Picks devices for slots `slot..`: `Some(true)` when all fit (picks in `picked`),
    /// `Some(false)` when none of the branches does (state as on entry), `None` when the walk
    /// meets something it does not model (or has looked long enough).
    fn descend(&mut self, slot: usize) -> Option<bool> {
        let Some(&r) = self.plan.slots.get(slot) else {
            return Some(true);
        };
        let (start, end) = self.ranges[r];
        let candidates = &self.candidates[start as usize..end as usize];
        self.visits += candidates.len();
        if self.visits > self.limit {
            return None;
        }
        let rules = &self.plan.rules[r][..];
        for &d in candidates {
            let d = d as usize;
            match self.state[d] {
                FREE => {}
                TAKEN => continue,
                _ => return None,
            }
            if !rules.iter().all(|&c| self.added[c].admits(d)) {
                continue;
            }
            for &c in rules {
                self.added[c].add(d);
            }
            self.state[d] = TAKEN;
            self.picked.push((d as u32, r as u32));
            if self.descend(slot + 1)? {
                return Some(true);
            }
            self.state[d] = FREE;
            self.picked.pop();
            for &c in rules {
                self.added[c].remove();
            }
        }
        Some(false)
    }
}

/// Without constraints, the walk's first branch takes, slot after slot, the first device of
/// the slot's request that is free (no pick limits a later one but by taking its device), and
/// no walk goes further than that branch, so this takes those picks without building the
/// walk: `None` when a slot finds no free device (the walk would backtrack: left to the
/// search) or meets a device the path does not model.
fn first_free(plan: &Plan, state: &mut [u8]) -> Option<SmallVec<[(u32, u32); 8]>> {
    let mut picked = SmallVec::new();
    for (r, (selected, &count)) in plan.selected.iter().zip(&plan.counts).enumerate() {
        let mut needed = count;
        for &d in selected {
            if needed == 0 {
                break;
            }
            match state[d as usize] {
                FREE => {
                    state[d as usize] = TAKEN;
                    picked.push((d, r as u32));
                    needed -= 1;
                }
                TAKEN => {}
                _ => return None,
            }
        }
        if needed > 0 {
            return None;
        }
    }
    Some(picked)
}

/// The walk's picks for the claim of `plan` (in walk order, as `(device, request)`), the
/// devices they take marked in `state`; `None` when the claim goes to the search.
fn walk(
    plan: &Plan,
    state: &mut [u8],
    candidates: &mut Vec<u32>,
    ranges: &mut Vec<(u32, u32)>,
    counts: &mut Vec<u32>,
    marks: &mut Vec<bool>,
) -> Option<SmallVec<[(u32, u32); 8]>> {
    candidates.clear();
    ranges.clear();
    for (selected, &count) in plan.selected.iter().zip(&plan.counts) {
        let start = candidates.len();
        for &d in selected {
            if state[d as usize] != TAKEN {
                candidates.push(d);
            }
        }
        // Fewer candidates than devices needed: the claim cannot fit.
        if candidates.len() - start < count {
            return None;
        }
        ranges.push((start as u32, candidates.len() as u32));
    }
    // A claim that does not fit would make the search backtrack into the claims before
    // it, or report why: leave that to the search. A walk that runs long first checks
    // whether the claim can fit at all.
    let mut added: SmallVec<[Added<'_>; 2]> = SmallVec::new();
    for constraint in &plan.constraints {
        added.push(Added::new(constraint));
    }
    let mut walk = Walk {
        plan,
        candidates,
        ranges,
        added: &mut added,
        state,
        picked: SmallVec::new(),
        visits: 0,
        limit: FIRST_VISITS,
    };
    let mut found = walk.descend(0);
    if found.is_none() && walk.visits > FIRST_VISITS {
        if plan.cannot_fit(candidates, ranges, counts, marks) {
            return None;
        }
        walk.restart(MAX_VISITS);
        found = walk.descend(0);
    }
    if !found? {
        return None;
    }
    Some(walk.picked)
}

/// The plan of `claim` on `view`: a kept one that still fits, else a new one (kept).
fn plan_of(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
    view: &NodeView,
    flat: &Flat,
    claim: &ResourceClaim,
) -> Option<Rc<Plan>> {
    let number = cache.specs.number(claim);
    if let Some(plan) = view
        .plans
        .borrow()
        .iter()
        .rev()
        .find(|plan| plan.fits(number, input.classes))
    {
        return Some(Rc::clone(plan));
    }
    let plan = Rc::new(Plan::make(
        input, features, cache, view, flat, claim, number,
    )?);
    let mut plans = view.plans.borrow_mut();
    if plans.len() >= MAX_PLANS {
        plans.remove(0);
    }
    plans.push(Rc::clone(&plan));
    Some(plan)
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
    let mut scratch = view.scratch.borrow_mut();
    let Scratch {
        state,
        candidates,
        ranges,
        counts,
        marks,
    } = &mut *scratch;
    // Devices existing claims hold (for simple devices: in use, whether dedicated or shared),
    // then also those this call picks.
    state.clear();
    state.extend(
        flat.simple
            .iter()
            .map(|&simple| if simple { FREE } else { OTHER }),
    );
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
                Some((driver, name, names))
                    if same(driver, &result.driver) && same(name, &result.pool) =>
                {
                    names
                }
                _ => {
                    let names = flat.index.pool(&result.driver, &result.pool);
                    pool = Some((&result.driver, &result.pool, names));
                    names
                }
            };
            if let Some(d) = names.and_then(|names| names.get(&result.device))
                && state[d] == FREE
            {
                state[d] = TAKEN;
            }
        }
    }
    let mut out = Vec::with_capacity(input.claims.len());
    for claim in input.claims {
        let plan = plan_of(input, features, cache, &view, &flat, claim)?;
        let picked = if plan.constraints.is_empty() {
            first_free(&plan, state)?
        } else {
            walk(&plan, state, candidates, ranges, counts, marks)?
        };
        let picked = &picked;
        let device_at = |d: u32| {
            let (s, i) = flat.devices[d as usize];
            let slice = input.slices[s as usize];
            (slice, &slice.spec.devices[i as usize])
        };
        let mut results = Vec::with_capacity(picked.len());
        for &(d, r) in picked {
            let (slice, device) = device_at(d);
            let request = &claim.spec.devices.requests[r as usize];
            let tolerations = request
                .exactly
                .as_ref()
                .map_or(&[][..], |exactly| &exactly.tolerations);
            results.push(device_result(
                features,
                plan.requests[r as usize].clone(),
                Picks {
                    names: flat.names[d as usize].clone(),
                    slice,
                    device,
                },
                false,
                tolerations,
                None,
                None,
            ));
        }
        let node_selector = match picked.first() {
            Some(&(d, _)) if flat.named[d as usize] => {
                Some(view.named_selector(&input.node.metadata.name))
            }
            _ => node_selector(
                picked.iter().map(|&(d, _)| device_at(d)),
                &input.node.metadata.name,
                claim,
            )
            .ok()?,
        };
        out.push(AllocationResult {
            devices: DeviceAllocationResult {
                results,
                config: copied(&plan.config),
            },
            node_selector,
            allocation_timestamp: None,
        });
    }
    Some(out)
}
