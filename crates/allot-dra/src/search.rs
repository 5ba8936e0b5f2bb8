//! The backtracking search, step for step as upstream's `allocateOne`, plus the prunings
//! described in the crate documentation.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use allot_api::core::v1::{
    NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
};
use allot_api::resource::v1::{
    ALLOCATION_RESULTS_MAX_SIZE, AllocationConfigSource, AllocationResult, CapacityRequirements,
    DRA_ADMIN_NAMESPACE_LABEL_KEY, Device, DeviceAllocationConfiguration, DeviceAllocationMode,
    DeviceAllocationResult, DeviceAttribute, DeviceClass, DeviceDerivedAttribute,
    DeviceRequestAllocationResult, DeviceSelector, DeviceTaint, DeviceTaintEffect,
    DeviceToleration, DeviceTolerationOperator, ResourceClaim, ResourceSlice, SmolStr,
};
use allot_quantity::Quantity;

use crate::attributes::{self, Constraint, ConstraintKind};
use crate::capacity::{self, CapacityError, Consumed};
use crate::cel::{self, CelCache};
use crate::explain;
use crate::pools::Pool;
use crate::{AllocationInput, Error, Features, Outcome};

mod bits;
pub(crate) mod bound;
mod compat;
mod derived;

use bits::Bits;

/// `namespace/name`, or `name` without a namespace, as klog prints objects.
pub(crate) fn claim_name(claim: &ResourceClaim) -> String {
    if claim.metadata.namespace.is_empty() {
        claim.metadata.name.clone()
    } else {
        // Not `format!`: its machinery costs several times the two copies on this hot path.
        let (namespace, name) = (&claim.metadata.namespace, &claim.metadata.name);
        let mut out = String::with_capacity(namespace.len() + 1 + name.len());
        out.push_str(namespace);
        out.push('/');
        out.push_str(name);
        out
    }
}

/// One device visible from the node, in search order.
pub(crate) struct Dev<'a> {
    pub pool: usize,
    pub slice: &'a ResourceSlice,
    pub device: &'a Device,
    pub driver: &'a str,
    pub pool_name: &'a str,
    /// Allows multiple allocations (only with `DRAConsumableCapacity`).
    pub multi: bool,
    /// Taints from DeviceTaintRules (the device's own are read from `device`).
    pub rule_taints: Vec<DeviceTaint>,
    /// What the device draws from counter sets; `None` for the many devices that draw
    /// nothing (kept apart so that such devices cost nothing to build and drop).
    pub uses: Option<Box<CounterUse>>,
    /// Allocated exclusively to an existing claim.
    pub allocated: bool,
    /// Capacity consumed by existing shared allocations.
    pub capacity_used: Option<Consumed>,
    /// Existing claims hold shares of this device.
    pub shared: bool,
    /// With `DRADeviceCompatibilityGroups` off: the device declares groups, or joins a
    /// counter set on which an allocated device declared some, so it cannot be checked and
    /// is skipped (upstream's version-skew protection).
    pub compat_skip: bool,
}

/// The counter consumption of a device that draws from counter sets.
pub(crate) struct CounterUse {
    /// Counter consumption as (pool counter index, amount).
    pub counters: Vec<(usize, Quantity)>,
    /// The same in nano units, when every amount is a whole number of them.
    pub counters_nano: Option<Vec<(usize, i128)>>,
    /// Compatibility groups per counter set consumed from (sorted), in consumption order.
    pub groups: Vec<(String, Vec<String>)>,
}

impl Dev<'_> {
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.driver, self.pool_name, self.device.name)
    }

    /// Counter consumption as (pool counter index, amount).
    pub fn counters(&self) -> &[(usize, Quantity)] {
        self.uses.as_ref().map_or(&[], |uses| &uses.counters)
    }

    /// The same in nano units, when every amount is a whole number of them.
    pub fn counters_nano(&self) -> Option<&[(usize, i128)]> {
        match &self.uses {
            None => Some(&[]),
            Some(uses) => uses.counters_nano.as_deref(),
        }
    }

    /// Compatibility groups per counter set consumed from (sorted), in consumption order.
    pub fn groups(&self) -> &[(String, Vec<String>)] {
        self.uses.as_ref().map_or(&[], |uses| &uses.groups)
    }
}

/// Counter bookkeeping of one pool.
#[derive(Default)]
pub(crate) struct PoolCounters {
    /// Counter set -> counter -> index.
    pub index: HashMap<String, HashMap<String, usize>>,
    pub names: Vec<(String, String)>,
    /// What is left after existing allocations.
    pub available: Vec<Quantity>,
    /// Some counter is already overdrawn, so no counter-consuming device fits.
    pub overdrawn: bool,
    /// `available` in nano units, when the whole pool (counters and every device's
    /// consumption) is exact in them: the search then charges plain integers.
    pub available_nano: Option<Vec<i128>>,
}

/// A quantity in units of 10^-9 (the finest precision Kubernetes quantities keep), when exact.
fn nano(quantity: &Quantity) -> Option<i128> {
    let (mantissa, scale) = quantity.to_parts();
    let exponent = scale.checked_add(9)?;
    if exponent >= 0 {
        mantissa.checked_mul(10i128.checked_pow(u32::try_from(exponent).ok()?)?)
    } else {
        let divisor = 10i128.checked_pow(u32::try_from(-exponent).ok()?)?;
        (mantissa % divisor == 0).then(|| mantissa / divisor)
    }
}

/// A request or subrequest that needs devices.
pub(crate) struct Req<'a> {
    pub claim: usize,
    pub parent: &'a str,
    pub sub: Option<&'a str>,
    pub class: &'a DeviceClass,
    pub all: bool,
    pub num_devices: usize,
    pub admin: bool,
    pub selectors: &'a [DeviceSelector],
    pub tolerations: &'a [DeviceToleration],
    pub capacity: Option<&'a CapacityRequirements>,
    pub all_devices: Vec<usize>,
    /// The derived attributes as written.
    pub derived_spec: &'a [DeviceDerivedAttribute],
    /// The derived attributes, compiled (with `DRADerivedAttributes`).
    pub derived: Vec<derived::Derived>,
    /// The CEL selectors of the class, then of the request, compiled once per call.
    pub compiled: Vec<Selector>,
}

/// One CEL selector of a request, looked up in the compile cache.
pub(crate) struct Selector {
    /// A selector of the device class (rather than of the request).
    pub of_class: bool,
    /// Its position in the class's or request's list.
    pub index: usize,
    /// Its id in the compile cache (for the verdict cache).
    pub id: usize,
    pub compiled: crate::cel::Compiled,
}

impl Req<'_> {
    pub fn name(&self) -> String {
        match self.sub {
            Some(sub) => format!("{}/{sub}", self.parent),
            None => self.parent.to_string(),
        }
    }
    /// [`Req::name`] as a result holds it (no allocation for a plain request).
    pub fn shared_name(&self) -> SmolStr {
        match self.sub {
            Some(_) => self.name().into(),
            None => self.parent.into(),
        }
    }
    /// The request's own name (the subrequest name for a subrequest).
    pub fn own_name(&self) -> &str {
        self.sub.unwrap_or(self.parent)
    }
}

pub(crate) enum Slot {
    Plain(usize),
    Subs(Vec<usize>),
}

pub(crate) struct ClaimData<'a> {
    pub claim: &'a ResourceClaim,
    pub name: String,
    pub slots: Vec<Slot>,
    pub max_devices: usize,
}

/// A selector verdict: match, no match, or the error upstream would raise.
#[derive(Clone)]
pub(crate) enum Verdict {
    Yes,
    No,
    Fail(Box<Error>),
}

/// Cached capacity pre-check of a (request, device) pair.
#[derive(Clone)]
pub(crate) enum CapVerdict {
    Unknown,
    /// The device can serve the request, consuming this much when it allows multiple
    /// allocations.
    Ok(std::rc::Rc<Consumed>),
    No,
    Fail(Box<Error>),
}

/// Everything fixed for one call, plus the caches.
pub(crate) struct Problem<'a> {
    pub input: &'a AllocationInput<'a>,
    pub features: Features,
    pub cache: &'a CelCache,
    pub pools: Vec<Pool<'a>>,
    pub devs: Vec<Dev<'a>>,
    pub counters: Vec<PoolCounters>,
    pub reqs: Vec<Req<'a>>,
    pub claims: Vec<ClaimData<'a>>,
    pub constraints: Vec<Vec<Constraint>>,
    /// Requests that ask the same share what is worked out for them (see [`Groups`]), so
    /// that a thousand identical claims cost what one does.
    groups: Groups,
    /// Per selector group: the verdict per device, two bits each ([`Verdicts`]), on first use.
    verdicts: Vec<Verdicts>,
    /// Per selector group: its selector row from the node view (see
    /// [`crate::view::NodeView`]), which answers the selector part of
    /// [`Problem::selectable`] without a per-call verdict array.
    rows: Vec<Option<std::rc::Rc<[bool]>>>,
    /// Per capacity group: the capacity pre-check per device, on first use (and only while
    /// [`MAX_CAPACITY_ENTRIES`] are not reached: then checks are worked out every time).
    cap_verdicts: Vec<Vec<CapVerdict>>,
    /// Entries of `cap_verdicts` allocated so far.
    cap_entries: usize,
    /// The consumption of capacity checks whose amounts are never read (see
    /// [`Problem::capacity_check`]).
    unread_consumption: std::rc::Rc<Consumed>,
    /// CEL views of devices, converted on first use (warm verdict caches rarely need one).
    cel_devices: HashMap<usize, Result<allot_cel::CelDevice, String>, crate::cel::FxBuild>,
    /// What is known of the node's devices across calls (content hashes, attribute columns).
    view: std::rc::Rc<crate::view::NodeView>,
    /// Whether every selector and capacity check was evaluated up front without errors, which
    /// the look-ahead pruning needs.
    clean: bool,
    /// Whether the prunings are on (always, except to compare against the plain search).
    pub prune: bool,
    /// The slots (claim, slot) with an `All` request (or subrequest), in search order: what
    /// the `All` look-ahead walks.
    all_slots: Vec<(usize, usize)>,
    /// Per pool and counter set: the compatibility groups of devices already allocated.
    compat_baseline: Vec<HashMap<String, compat::Groups>>,
    /// Per request: derived attribute values by device, evaluated on first use.
    derived_values: Vec<HashMap<usize, Result<Vec<DeviceAttribute>, Error>>>,
    /// (request, device) pairs the search turned down for compatibility groups; for the
    /// explanation.
    pub compat_rejected: std::collections::BTreeSet<(usize, usize)>,
    /// Per (request, index of a constraint of its claim): every device's attribute, looked up
    /// once per call for the pigeonhole bound, and then also read by the constraint checks
    /// (requests without derived attributes only).
    columns: HashMap<(usize, usize), std::rc::Rc<Column>, crate::cel::FxBuild>,
    /// Per candidate group: the devices that pass every check that does not depend on the
    /// search state (selectors, capacity pre-check, taints, partitionable gate, existing
    /// allocations), for the bounds; `Some(None)` when one of them raises an error, so the
    /// bounds stay out of the way.
    candidates: Vec<Option<Option<std::rc::Rc<Bits>>>>,
}

/// Capacity pre-checks kept per call beyond this many (request groups × devices) are worked
/// out again when needed instead, to bound memory.
const MAX_CAPACITY_ENTRIES: usize = 1 << 24;

/// Which requests share per-call work: the same compiled selectors (selector group: the
/// verdicts), the same capacity requirements (capacity group: the capacity pre-check), and
/// both plus the same admin access and tolerations, without derived attributes (candidate
/// group: the static candidates).
#[derive(Default)]
struct Groups {
    /// Per request: its selector, capacity and candidate group.
    of: Vec<(usize, usize, usize)>,
    selectors: HashMap<Vec<usize>, usize, crate::cel::FxBuild>,
    capacity: HashMap<String, usize, crate::cel::FxBuild>,
    candidates: HashMap<(usize, usize, bool, String), usize, crate::cel::FxBuild>,
    /// Candidate groups made so far (requests with derived attributes get their own).
    n_candidates: usize,
}

/// Selector verdicts of one selector group, two bits per device: unknown, yes, no, error
/// (the error itself is worked out again for the request that asks, since it names the
/// request's claim).
#[derive(Default)]
struct Verdicts(Vec<u64>);

impl Verdicts {
    const UNKNOWN: u64 = 0;
    const YES: u64 = 1;
    const NO: u64 = 2;
    const FAIL: u64 = 3;

    fn get(&self, d: usize) -> u64 {
        self.0
            .get(d / 32)
            .map_or(Self::UNKNOWN, |w| w >> (d % 32 * 2) & 3)
    }

    fn set(&mut self, d: usize, devices: usize, code: u64) {
        if self.0.is_empty() {
            self.0 = vec![0; devices.div_ceil(32)];
        }
        let word = &mut self.0[d / 32];
        *word = *word & !(3 << (d % 32 * 2)) | code << (d % 32 * 2);
    }
}

pub(crate) use crate::view::Column;

type Id<'a> = (&'a str, &'a str, &'a str);

/// How existing claims use one device.
#[derive(Default)]
struct Usage {
    /// Allocated exclusively.
    dedicated: bool,
    /// Shares of it exist.
    shared: bool,
    /// Capacity consumed by the shares.
    consumed: Option<Consumed>,
}

impl Usage {
    /// Whether some existing claim holds the device (exclusively or a share of it).
    fn in_use(&self) -> bool {
        self.dedicated || self.shared
    }
}

/// Runs one allocation within `budget`.
pub(crate) fn run(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
    prune: bool,
    budget: &crate::Budget,
) -> Result<Outcome, Error> {
    let mut problem = Problem::new(input, features, cache)?;
    problem.prune = prune;
    let mut search = Search::new(&problem, budget);
    let found = match search.run(&mut problem, Pos::default()) {
        Ok(found) => found,
        Err(Stop::MaxSize | Stop::Hopeless) => false,
        Err(Stop::Budget) => {
            return Ok(Outcome::GaveUp(explain::GaveUp {
                // Rust writes durations as Go does (`10ms`, `1ns`, `1.5s`).
                time_limit: search
                    .timed_out
                    .then(|| format!("{:?}", budget.max_time.unwrap_or_default())),
                node: input.node.metadata.name.clone(),
                claims: problem.claims.iter().map(|c| c.name.clone()).collect(),
                steps: search.spent(),
                max_steps: budget.max_steps,
                memo_bytes: search.memo_bytes(),
                max_memo_bytes: budget.max_memo_bytes,
            }));
        }
        Err(Stop::Error(err)) => return Err(err),
    };
    if found {
        return Ok(Outcome::Allocated(search.results(&problem)?));
    }
    let reasons: Vec<String> = problem
        .pools
        .iter()
        .filter_map(|pool| {
            pool.invalid
                .as_ref()
                .map(|reason| format!("{}: {reason}", pool.id()))
        })
        .collect();
    if !reasons.is_empty() {
        return Err(Error::InvalidPools { reasons });
    }
    // The explanation may spend what the search left of the budget.
    let left = crate::Budget {
        max_steps: budget.max_steps.saturating_sub(search.spent()),
        ..*budget
    };
    let shortfall = search.shortfall.take();
    Ok(Outcome::Unschedulable(explain::explain(
        &mut problem,
        shortfall,
        &left,
    )))
}

impl<'a> Problem<'a> {
    pub(crate) fn new(
        input: &'a AllocationInput<'a>,
        features: &Features,
        cache: &'a CelCache,
    ) -> Result<Self, Error> {
        let features = *features;
        let view = cache.views.get(input.node, &features, input.slices);
        let pools = view.pools(input.slices, input.node, &features)?;

        // Devices in use by existing claims: by device index for the devices the node sees
        // (numbered once per view), by name for the others (devices of slices that do not
        // target the node, which only matter for counters).
        let index = view.index(&pools);
        let n_devs: usize = pools
            .iter()
            .flat_map(|pool| &pool.slices)
            .map(|slice| slice.spec.devices.len())
            .sum();
        let mut dev_usage: Vec<Usage> = Vec::new();
        let mut usage: HashMap<Id<'_>, Usage, crate::cel::FxBuild> = HashMap::default();
        for claim in input.allocated_claims {
            let Some(allocation) = &claim.status.allocation else {
                continue;
            };
            usage.reserve(allocation.devices.results.len());
            for result in &allocation.devices.results {
                if result.admin_access == Some(true) {
                    continue;
                }
                let entry = match index.get(&result.driver, &result.pool, &result.device) {
                    Some(d) => {
                        if dev_usage.is_empty() {
                            dev_usage.resize_with(n_devs, Usage::default);
                        }
                        &mut dev_usage[d]
                    }
                    None => usage
                        .entry((
                            result.driver.as_str(),
                            result.pool.as_str(),
                            result.device.as_str(),
                        ))
                        .or_default(),
                };
                if features.consumable_capacity && result.share_id.is_some() {
                    entry.shared = true;
                    if !result.consumed_capacity.is_empty() {
                        capacity::add_into(
                            entry.consumed.get_or_insert_with(Consumed::new),
                            &result.consumed_capacity,
                        );
                    }
                    continue;
                }
                entry.dedicated = true;
            }
        }
        let is_allocated = |id: &Id<'_>| {
            !dev_usage.is_empty()
                && index
                    .get(id.0, id.1, id.2)
                    .is_some_and(|d| dev_usage[d].in_use())
                || !usage.is_empty() && usage.contains_key(id)
        };

        // Counters per pool.
        let mut counters = Vec::with_capacity(pools.len());
        let mut compat_baseline = Vec::with_capacity(pools.len());
        for pool in &pools {
            let mut baseline: HashMap<String, compat::Groups> = HashMap::new();
            let mut pc = PoolCounters::default();
            for (set_name, set) in &pool.counter_sets {
                for (counter_name, counter) in &set.counters {
                    pc.index
                        .entry(set_name.to_string())
                        .or_default()
                        .insert(counter_name.clone(), pc.names.len());
                    pc.names.push((set_name.to_string(), counter_name.clone()));
                    pc.available.push(counter.value.clone());
                }
            }
            for slice in pool.slices.iter().chain(pool.slices_not_targeting.iter()) {
                for device in &slice.spec.devices {
                    // Only devices that draw from counter sets matter here.
                    if device.consumes_counters.is_empty() {
                        continue;
                    }
                    if !is_allocated(&(
                        slice.spec.driver.as_str(),
                        slice.spec.pool.name.as_str(),
                        device.name.as_str(),
                    )) {
                        continue;
                    }
                    for (set, groups) in compat::device_groups(device) {
                        let joined = compat::fold(baseline.get(&set), &groups);
                        baseline.insert(set, joined);
                    }
                    for consumption in &device.consumes_counters {
                        for (name, counter) in &consumption.counters {
                            if let Some(&i) = pc
                                .index
                                .get(consumption.counter_set.as_str())
                                .and_then(|set| set.get(name.as_str()))
                            {
                                pc.available[i] -= &counter.value;
                            }
                        }
                    }
                }
            }
            pc.overdrawn = pc.available.iter().any(|q| q.sign() < 0);
            pc.available_nano = pc.available.iter().map(nano).collect();
            counters.push(pc);
            compat_baseline.push(baseline);
        }

        // Devices in search order.
        let mut devs = Vec::with_capacity(
            pools
                .iter()
                .flat_map(|pool| &pool.slices)
                .map(|slice| slice.spec.devices.len())
                .sum(),
        );
        for (pool_index, pool) in pools.iter().enumerate() {
            for slice in &pool.slices {
                for device in &slice.spec.devices {
                    let used = dev_usage.get(devs.len()).filter(|u| u.in_use());
                    let uses = (!device.consumes_counters.is_empty()).then(|| {
                        let mut device_counters = Vec::new();
                        for consumption in &device.consumes_counters {
                            for (name, counter) in &consumption.counters {
                                if let Some(&i) = counters[pool_index]
                                    .index
                                    .get(consumption.counter_set.as_str())
                                    .and_then(|set| set.get(name.as_str()))
                                {
                                    device_counters.push((i, counter.value.clone()));
                                }
                            }
                        }
                        Box::new(CounterUse {
                            counters_nano: device_counters
                                .iter()
                                .map(|(i, amount)| nano(amount).map(|n| (*i, n)))
                                .collect(),
                            counters: device_counters,
                            groups: compat::device_groups(device),
                        })
                    });
                    let compat_skip = uses.as_ref().is_some_and(|uses| {
                        uses.groups.iter().any(|(set, declared)| {
                            !declared.is_empty()
                                || compat_baseline[pool_index]
                                    .get(set)
                                    .is_some_and(compat::Groups::declared)
                        })
                    });
                    devs.push(Dev {
                        pool: pool_index,
                        slice,
                        device,
                        driver: pool.driver,
                        pool_name: pool.name,
                        multi: features.consumable_capacity
                            && device.allow_multiple_allocations == Some(true),
                        rule_taints: Vec::new(),
                        uses,
                        allocated: used.is_some_and(|u| u.dedicated),
                        capacity_used: used.and_then(|u| u.consumed.clone()),
                        shared: used.is_some_and(|u| u.shared),
                        compat_skip,
                    });
                }
            }
        }
        for dev in &devs {
            if dev.counters_nano().is_none() {
                counters[dev.pool].available_nano = None;
            }
        }
        let mut problem = Problem {
            input,
            features,
            cache,
            pools,
            devs,
            counters,
            reqs: Vec::new(),
            claims: Vec::new(),
            constraints: Vec::new(),
            groups: Groups::default(),
            verdicts: Vec::new(),
            rows: Vec::new(),
            cap_verdicts: Vec::new(),
            cap_entries: 0,
            unread_consumption: std::rc::Rc::new(Consumed::new()),
            cel_devices: HashMap::default(),
            view,
            clean: false,
            prune: true,
            all_slots: Vec::new(),
            compat_baseline,
            derived_values: Vec::new(),
            compat_rejected: std::collections::BTreeSet::new(),
            columns: HashMap::default(),
            candidates: Vec::new(),
        };
        problem.apply_taint_rules();
        problem.validate_claims()?;
        for (c, claim) in problem.claims.iter().enumerate() {
            for (i, slot) in claim.slots.iter().enumerate() {
                let all = match slot {
                    Slot::Plain(r) => problem.reqs[*r].all,
                    Slot::Subs(subs) => subs.iter().any(|&r| problem.reqs[r].all),
                };
                if all {
                    problem.all_slots.push((c, i));
                }
            }
        }
        problem.clean = problem.reqs.iter().any(|req| req.all) && problem.evaluate_everything();
        Ok(problem)
    }

    fn apply_taint_rules(&mut self) {
        if !self.features.device_taints || self.input.taint_rules.is_empty() {
            return;
        }
        for d in 0..self.devs.len() {
            for rule in self.input.taint_rules {
                let Some(selector) = &rule.spec.device_selector else {
                    // A rule without a selector taints every device.
                    self.devs[d].rule_taints.push(rule.spec.taint.clone());
                    continue;
                };
                let dev = &self.devs[d];
                if selector
                    .driver
                    .as_deref()
                    .is_some_and(|driver| driver != dev.driver)
                    || selector
                        .pool
                        .as_deref()
                        .is_some_and(|pool| pool != dev.pool_name)
                    || selector
                        .device
                        .as_deref()
                        .is_some_and(|device| device != dev.device.name)
                {
                    continue;
                }
                let mut matches = true;
                if let Some(class_name) = &selector.device_class_name {
                    match self
                        .input
                        .classes
                        .iter()
                        .find(|class| &class.metadata.name == class_name)
                    {
                        Some(class) => {
                            matches = self.selectors_match_quiet(d, &class.spec.selectors);
                        }
                        None => matches = false,
                    }
                }
                if matches && !selector.selectors.is_empty() {
                    matches = self.selectors_match_quiet(d, &selector.selectors);
                }
                if matches {
                    self.devs[d].rule_taints.push(rule.spec.taint.clone());
                }
            }
        }
    }

    /// Selector evaluation for DeviceTaintRules: an error means "does not select".
    fn selectors_match_quiet(&mut self, d: usize, selectors: &[DeviceSelector]) -> bool {
        for selector in selectors {
            let Some(cel) = &selector.cel else {
                return false;
            };
            let compiled = self.cache.get(&cel.expression);
            let Ok(compiled) = compiled.as_ref() else {
                return false;
            };
            let Ok(device) = self.cel_device(d) else {
                return false;
            };
            if cel::evaluate(compiled, device) != Ok(true) {
                return false;
            }
        }
        true
    }

    fn cel_device(&mut self, d: usize) -> Result<&allot_cel::CelDevice, String> {
        let dev = &self.devs[d];
        match self.cel_devices.entry(d).or_insert_with(|| {
            cel::cel_device(
                dev.driver,
                dev.device,
                dev.device.allow_multiple_allocations == Some(true),
            )
        }) {
            Ok(device) => Ok(device),
            Err(message) => Err(message.clone()),
        }
    }

    fn validate_claims(&mut self) -> Result<(), Error> {
        let features = self.features;
        let namespaces = self.input.namespaces;
        for (claim_index, claim) in self.input.claims.iter().enumerate() {
            let name = claim_name(claim);
            let mut slots = Vec::new();
            let mut min_devices = 0usize;
            let mut max_devices = 0usize;
            for request in &claim.spec.devices.requests {
                let has_subs = !request.first_available.is_empty();
                if !features.prioritized_list && has_subs {
                    return Err(Error::PrioritizedListDisabled {
                        claim: name,
                        request: request.name.clone(),
                    });
                }
                if !features.consumable_capacity
                    && request
                        .exactly
                        .as_ref()
                        .is_some_and(|e| e.capacity.is_some())
                {
                    return Err(Error::ConsumableCapacityDisabled {
                        claim: name,
                        kind: "request",
                        request: request.name.clone(),
                    });
                }
                if has_subs {
                    let mut min = usize::MAX;
                    let mut max = 0;
                    let mut indexes = Vec::new();
                    for sub in &request.first_available {
                        if !features.consumable_capacity && sub.capacity.is_some() {
                            return Err(Error::ConsumableCapacityDisabled {
                                claim: name,
                                kind: "subrequest",
                                request: sub.name.clone(),
                            });
                        }
                        let req = self.validate_request(
                            claim_index,
                            &name,
                            RequestView {
                                parent: &request.name,
                                sub: Some(&sub.name),
                                class: &sub.device_class_name,
                                mode: sub.allocation_mode.as_ref(),
                                count: sub.count,
                                admin: None,
                                selectors: &sub.selectors,
                                tolerations: &sub.tolerations,
                                capacity: sub.capacity.as_ref(),
                                derived: &sub.derived_attributes,
                            },
                        )?;
                        min = min.min(req.num_devices);
                        max = max.max(req.num_devices);
                        indexes.push(self.reqs.len());
                        self.reqs.push(req);
                    }
                    min_devices += min;
                    max_devices += max;
                    slots.push(Slot::Subs(indexes));
                } else {
                    let exactly = request.exactly.as_ref();
                    let req = self.validate_request(
                        claim_index,
                        &name,
                        RequestView {
                            parent: &request.name,
                            sub: None,
                            class: exactly.map(|e| e.device_class_name.as_str()).unwrap_or(""),
                            mode: exactly.and_then(|e| e.allocation_mode.as_ref()),
                            count: exactly.and_then(|e| e.count),
                            admin: exactly.and_then(|e| e.admin_access),
                            selectors: exactly.map(|e| e.selectors.as_slice()).unwrap_or(&[]),
                            tolerations: exactly.map(|e| e.tolerations.as_slice()).unwrap_or(&[]),
                            capacity: exactly.and_then(|e| e.capacity.as_ref()),
                            derived: exactly
                                .map(|e| e.derived_attributes.as_slice())
                                .unwrap_or(&[]),
                        },
                    )?;
                    if req.admin
                        && let Some(namespace) = namespaces
                            .iter()
                            .find(|ns| ns.metadata.name == claim.metadata.namespace)
                        && namespace
                            .metadata
                            .labels
                            .get(DRA_ADMIN_NAMESPACE_LABEL_KEY)
                            .map(String::as_str)
                            != Some("true")
                    {
                        return Err(Error::AdminAccessForbidden {
                            claim: name,
                            request: request.name.clone(),
                            namespace: namespace.metadata.name.clone(),
                            label: DRA_ADMIN_NAMESPACE_LABEL_KEY,
                        });
                    }
                    min_devices += req.num_devices;
                    max_devices += req.num_devices;
                    slots.push(Slot::Plain(self.reqs.len()));
                    self.reqs.push(req);
                }
            }
            if min_devices > ALLOCATION_RESULTS_MAX_SIZE {
                return Err(Error::TooManyDevices {
                    claim: name,
                    count: min_devices,
                    limit: ALLOCATION_RESULTS_MAX_SIZE,
                });
            }
            let mut constraints = Vec::new();
            for (index, constraint) in claim.spec.devices.constraints.iter().enumerate() {
                let c = if let Some(attribute) = &constraint.match_attribute {
                    Constraint::new(
                        ConstraintKind::Match,
                        attribute.clone(),
                        constraint.requests.clone(),
                        features.list_type_attributes,
                    )
                } else if let Some(attribute) = &constraint.distinct_attribute {
                    Constraint::new(
                        ConstraintKind::Distinct,
                        attribute.clone(),
                        constraint.requests.clone(),
                        features.list_type_attributes,
                    )
                } else {
                    return Err(Error::EmptyConstraint { claim: name, index });
                };
                constraints.push(c);
            }
            self.compile_derived(&name, &slots, &constraints)?;
            self.constraints.push(constraints);
            self.claims.push(ClaimData {
                claim,
                name,
                slots,
                max_devices,
            });
        }
        Ok(())
    }

    /// Checks and compiles the derived attributes of one claim's requests.
    fn compile_derived(
        &mut self,
        claim: &str,
        slots: &[Slot],
        constraints: &[Constraint],
    ) -> Result<(), Error> {
        let mut cost = 0u64;
        let reqs: Vec<usize> = slots
            .iter()
            .flat_map(|slot| match slot {
                Slot::Plain(r) => vec![*r],
                Slot::Subs(subs) => subs.clone(),
            })
            .collect();
        for r in reqs {
            let req = &self.reqs[r];
            if req.derived_spec.is_empty() {
                continue;
            }
            if !self.features.derived_attributes {
                return Err(Error::DerivedAttributesDisabled {
                    claim: claim.to_string(),
                    request: req.own_name().to_string(),
                });
            }
            let compiled = derived::compile(
                req.derived_spec,
                constraints,
                req.parent,
                req.sub,
                &mut cost,
            )
            .map_err(|(name, reason)| Error::InvalidDerivedAttribute {
                claim: claim.to_string(),
                request: req.own_name().to_string(),
                name,
                reason,
            })?;
            if cost > derived::CLAIM_MAX_COST {
                return Err(Error::InvalidDerivedAttribute {
                    claim: claim.to_string(),
                    request: req.own_name().to_string(),
                    name: String::new(),
                    reason: format!(
                        "the claim's derived attribute expressions have an estimated cost of {cost}, more than the limit of {}",
                        derived::CLAIM_MAX_COST
                    ),
                });
            }
            self.reqs[r].derived = compiled;
        }
        Ok(())
    }

    /// Evaluates the derived attributes of request `r` for device `d` (once; remembered).
    pub(crate) fn derive(&mut self, r: usize, d: usize) -> Result<(), Error> {
        if self.reqs[r].derived.is_empty() {
            return Ok(());
        }
        if let Some(values) = self.derived_values[r].get(&d) {
            return values.as_ref().map(|_| ()).map_err(Clone::clone);
        }
        let lists = self.features.list_type_attributes;
        let mut values = Ok(Vec::with_capacity(self.reqs[r].derived.len()));
        let converted = self.cel_device(d).map(|_| ());
        let req = &self.reqs[r];
        for attribute in &req.derived {
            let value = match (&converted, self.cel_devices.get(&d)) {
                (Err(message), _) => Err(message.clone()),
                (Ok(()), Some(Ok(device))) => attribute
                    .expression
                    .evaluate_value(device)
                    .map_err(|err| err.to_string())
                    .and_then(|value| derived::to_attribute(value, lists)),
                _ => Err("device conversion missing".to_string()),
            };
            match value {
                Ok(value) => {
                    if let Ok(values) = &mut values {
                        values.push(value);
                    }
                }
                Err(message) => {
                    values = Err(Error::DerivedAttributeRuntime {
                        claim: self.claims_name(req.claim),
                        request: req.name(),
                        name: attribute.name.clone(),
                        device: self.devs[d].id(),
                        message,
                    });
                    break;
                }
            }
        }
        let result = values.as_ref().map(|_| ()).map_err(Clone::clone);
        self.derived_values[r].insert(d, values);
        result
    }

    /// The attribute a constraint sees for device `d` picked for request `r`: the request's
    /// derived attribute of that name (evaluated by [`Problem::derive`] before), else the
    /// device's own.
    /// The devices request `r` could take in any search state, or `None` when checking one
    /// of them raises an error (see [`Problem::candidates`]).
    fn static_candidates(&mut self, r: usize) -> Option<std::rc::Rc<Bits>> {
        let group = self.groups.of[r].2;
        if self.candidates.len() <= group {
            self.candidates
                .resize(self.groups.n_candidates.max(group + 1), None);
        }
        if let Some(known) = &self.candidates[group] {
            return known.clone();
        }
        let admin = self.reqs[r].admin;
        let mut list = Bits::new(self.devs.len());
        let mut clean = true;
        for d in 0..self.devs.len() {
            let dev = &self.devs[d];
            if !admin && (dev.allocated || (dev.shared && !dev.multi)) {
                continue;
            }
            match self.selectable(r, d) {
                Verdict::Yes => {}
                Verdict::Fail(_) => {
                    clean = false;
                    break;
                }
                _ => continue,
            }
            if self.features.consumable_capacity {
                match self.capacity_check(r, d) {
                    CapVerdict::Ok(_) => {}
                    CapVerdict::Fail(_) => {
                        clean = false;
                        break;
                    }
                    _ => continue,
                }
            }
            if !self.features.partitionable_devices
                && !self.devs[d].device.consumes_counters.is_empty()
            {
                continue;
            }
            if self.tainted(r, d) {
                continue;
            }
            if self.derive(r, d).is_err() {
                clean = false;
                break;
            }
            list.insert(d);
        }
        let known = clean.then(|| std::rc::Rc::new(list));
        self.candidates[group] = Some(known.clone());
        known
    }

    /// The candidate group of request `r`: requests of one group have the same candidates
    /// and filter counts for the same class.
    pub(crate) fn candidate_group(&self, r: usize) -> usize {
        self.groups.of[r].2
    }

    /// The column of the attribute of constraint `ci` of the claim of request `r` (which has
    /// no derived attributes).
    fn column(&mut self, r: usize, ci: usize) -> std::rc::Rc<Column> {
        if let Some(column) = self.columns.get(&(r, ci)) {
            return std::rc::Rc::clone(column);
        }
        let constraint = &self.constraints[self.reqs[r].claim][ci];
        let (name, list) = (constraint.attribute.as_str(), constraint.list_semantics());
        let column = self.view.column(
            name,
            list,
            self.devs
                .iter()
                .map(|dev| (dev.driver, &dev.device.attributes)),
        );
        self.columns.insert((r, ci), std::rc::Rc::clone(&column));
        column
    }

    pub(crate) fn attribute(&self, r: usize, d: usize, name: &str) -> Option<&DeviceAttribute> {
        let req = &self.reqs[r];
        if req.derived.is_empty() {
            let dev = &self.devs[d];
            return attributes::lookup(&dev.device.attributes, dev.driver, name);
        }
        attribute_for(req, self.derived_values[r].get(&d), &self.devs[d], name)
    }

    fn validate_request(
        &mut self,
        claim: usize,
        claim_name: &str,
        view: RequestView<'a>,
    ) -> Result<Req<'a>, Error> {
        let own = view.sub.unwrap_or(view.parent).to_string();
        for (index, selector) in view.selectors.iter().enumerate() {
            if selector.cel.is_none() {
                return Err(Error::EmptySelector {
                    claim: claim_name.to_string(),
                    request: own,
                    index,
                });
            }
        }
        if !self.features.admin_access && view.admin.is_some() {
            return Err(Error::AdminAccessDisabled {
                claim: claim_name.to_string(),
                request: own,
            });
        }
        if view.class.is_empty() {
            return Err(Error::MissingDeviceClass {
                claim: claim_name.to_string(),
                request: own,
            });
        }
        let Some(class) = self
            .input
            .classes
            .iter()
            .find(|class| class.metadata.name == view.class)
        else {
            return Err(Error::UnknownDeviceClass {
                claim: claim_name.to_string(),
                request: own,
                class: view.class.to_string(),
            });
        };
        let mut req = Req {
            claim,
            parent: view.parent,
            sub: view.sub,
            class,
            all: false,
            num_devices: 0,
            admin: view.admin == Some(true),
            selectors: view.selectors,
            tolerations: view.tolerations,
            capacity: view.capacity,
            all_devices: Vec::new(),
            derived_spec: view.derived,
            derived: Vec::new(),
            compiled: Vec::new(),
        };
        for (of_class, selectors) in [
            (true, class.spec.selectors.as_slice()),
            (false, view.selectors),
        ] {
            for (index, selector) in selectors.iter().enumerate() {
                if let Some(cel_selector) = &selector.cel {
                    let (id, compiled) = self.cache.get_with_id(&cel_selector.expression);
                    req.compiled.push(Selector {
                        of_class,
                        index,
                        id,
                        compiled,
                    });
                }
            }
        }
        let req_index = self.reqs.len();
        self.group(&req);
        self.derived_values.push(HashMap::new());
        match view.mode.unwrap_or(&DeviceAllocationMode::ExactCount) {
            DeviceAllocationMode::ExactCount => {
                let count = view.count.unwrap_or(1);
                req.num_devices = usize::try_from(count).map_err(|_| Error::CountTooLarge {
                    claim: claim_name.to_string(),
                    request: own.clone(),
                    count,
                })?;
            }
            DeviceAllocationMode::All => {
                req.all = true;
                for pool in &self.pools {
                    let state = if pool.incomplete {
                        "being updated"
                    } else if pool.invalid.is_some() {
                        "invalid"
                    } else {
                        continue;
                    };
                    return Err(Error::AllDevicesPoolNotReady {
                        claim: claim_name.to_string(),
                        request: own,
                        pool: pool.id(),
                        state,
                    });
                }
                // The request is not in `reqs` yet; evaluate through a temporary slot.
                self.reqs.push(req);
                let mut all = Vec::new();
                for d in 0..self.devs.len() {
                    match self.selectable(req_index, d) {
                        Verdict::Yes => {}
                        Verdict::Fail(err) => {
                            self.reqs.pop();
                            return Err(*err);
                        }
                        _ => continue,
                    }
                    if self.features.consumable_capacity {
                        match self.capacity_check(req_index, d) {
                            CapVerdict::Ok(_) => {}
                            _ => continue,
                        }
                    }
                    all.push(d);
                }
                let Some(mut req) = self.reqs.pop() else {
                    return Err(Error::MissingDeviceClass {
                        claim: claim_name.to_string(),
                        request: own,
                    });
                };
                req.num_devices = all.len();
                req.all_devices = all;
                return Ok(req);
            }
            DeviceAllocationMode::Other(mode) => {
                return Err(Error::UnsupportedAllocationMode {
                    claim: claim_name.to_string(),
                    request: own,
                    mode: mode.clone(),
                });
            }
        }
        Ok(req)
    }

    /// Evaluates every selector and capacity check now; false if any of them fails with an
    /// error (then the look-ahead pruning stays off, so errors surface exactly as upstream's).
    fn evaluate_everything(&mut self) -> bool {
        for r in 0..self.reqs.len() {
            for d in 0..self.devs.len() {
                match self.selectable(r, d) {
                    Verdict::Fail(_) => return false,
                    // A derived attribute that fails to evaluate raises an error mid-search.
                    Verdict::Yes if self.derive(r, d).is_err() => return false,
                    _ => {}
                }
                if self.features.consumable_capacity
                    && let CapVerdict::Fail(_) = self.capacity_check(r, d)
                {
                    return false;
                }
            }
        }
        true
    }

    /// Upstream's `isSelectable`: binding conditions, class selectors, request selectors and
    /// per-device node selection, cached per (request, device).
    pub(crate) fn selectable(&mut self, r: usize, d: usize) -> Verdict {
        let dev = &self.devs[d];
        if !self.features.binding_and_status() && !dev.device.binding_conditions.is_empty() {
            return Verdict::No;
        }
        if !self.features.device_compatibility_groups && dev.compat_skip {
            return Verdict::No;
        }
        let group = self.groups.of[r].0;
        if let Some(row) = &self.rows[group] {
            return if row[d] { Verdict::Yes } else { Verdict::No };
        }
        match self.verdicts[group].get(d) {
            Verdicts::YES => return Verdict::Yes,
            Verdicts::NO => return Verdict::No,
            // The error names the request's claim: worked out again for this request.
            Verdicts::FAIL => return self.evaluate_selectors(r, d),
            _ => {}
        }
        let verdict = self.evaluate_selectors(r, d);
        let code = match verdict {
            Verdict::Yes => Verdicts::YES,
            Verdict::No => Verdicts::NO,
            Verdict::Fail(_) => Verdicts::FAIL,
        };
        let devices = self.devs.len();
        self.verdicts[group].set(d, devices, code);
        verdict
    }

    /// Files a new request (the next index) under its groups, making the groups it is the
    /// first of.
    fn group(&mut self, req: &Req<'_>) {
        let ids: Vec<usize> = req.compiled.iter().map(|selector| selector.id).collect();
        let selectors = match self.groups.selectors.get(&ids) {
            Some(&group) => group,
            None => {
                let row = self.row(&req.compiled);
                let group = self.rows.len();
                self.rows.push(row);
                self.verdicts.push(Verdicts::default());
                self.groups.selectors.insert(ids, group);
                group
            }
        };
        let next = self.cap_verdicts.len();
        let capacity = *self
            .groups
            .capacity
            .entry(format!("{:?}", req.capacity))
            .or_insert(next);
        if capacity == next {
            self.cap_verdicts.push(Vec::new());
        }
        let next = self.groups.n_candidates;
        let candidates = if req.derived_spec.is_empty() {
            *self
                .groups
                .candidates
                .entry((
                    selectors,
                    capacity,
                    req.admin,
                    format!("{:?}", req.tolerations),
                ))
                .or_insert(next)
        } else {
            next
        };
        if candidates == next {
            self.groups.n_candidates += 1;
        }
        self.groups.of.push((selectors, capacity, candidates));
    }

    /// The selector row of a request with these compiled selectors: from the node view, or
    /// worked out for every device now (kept views only; `None` elsewhere, and when some device
    /// raises an error). It includes the binding-conditions gate of [`Problem::selectable`]
    /// (which depends only on the gates, part of the view's key), not the compatibility-group
    /// skip (which depends on existing allocations).
    fn row(&mut self, compiled: &[Selector]) -> Option<std::rc::Rc<[bool]>> {
        if !self.view.is_kept() {
            return None;
        }
        let ids: Vec<usize> = compiled.iter().map(|selector| selector.id).collect();
        if let Some(row) = self.view.row(&ids) {
            return row;
        }
        let mut row = Vec::with_capacity(self.devs.len());
        let mut clean = true;
        let binding = self.features.binding_and_status();
        'devices: for d in 0..self.devs.len() {
            // As `selectable` checks it before the selectors.
            if !binding && !self.devs[d].device.binding_conditions.is_empty() {
                row.push(false);
                continue;
            }
            for selector in compiled {
                match self.selector_verdict_of(selector.id, &selector.compiled, d) {
                    Ok(true) => {}
                    Ok(false) => {
                        row.push(false);
                        continue 'devices;
                    }
                    Err(_) => {
                        clean = false;
                        break 'devices;
                    }
                }
            }
            match self.node_selection(d) {
                Ok(admitted) => row.push(admitted),
                Err(_) => {
                    clean = false;
                    break;
                }
            }
        }
        let row: Option<std::rc::Rc<[bool]>> = clean.then(|| row.into());
        self.view.keep_row(ids, row.clone());
        row
    }

    /// Per-device node selection of device `d` (true for devices of slices without it).
    fn node_selection(&self, d: usize) -> Result<bool, Error> {
        let dev = &self.devs[d];
        if dev.slice.spec.per_device_node_selection != Some(true) {
            return Ok(true);
        }
        crate::nodes::node_matches(
            self.input.node,
            dev.device.node_name.as_deref(),
            dev.device.all_nodes == Some(true),
            dev.device.node_selector.as_ref(),
        )
        .map_err(|message| Error::NodeSelection {
            what: format!(
                "device {} in slice {}",
                dev.device.name, dev.slice.metadata.name
            ),
            message,
        })
    }

    /// Compiled selector `i` of request `r` on device `d`, through the cross-call verdict cache:
    /// `Ok(verdict)`, or the compiler's or the evaluator's error (`Err(true)` for compile errors).
    fn selector_verdict(&mut self, r: usize, d: usize, i: usize) -> Result<bool, (bool, String)> {
        let selector = &self.reqs[r].compiled[i];
        let (id, compiled) = (selector.id, std::rc::Rc::clone(&selector.compiled));
        self.selector_verdict_of(id, &compiled, d)
    }

    /// Compiled expression `compiled` (id `id` in the compile cache) on device `d`; see
    /// [`Problem::selector_verdict`].
    fn selector_verdict_of(
        &mut self,
        id: usize,
        compiled: &crate::cel::Compiled,
        d: usize,
    ) -> Result<bool, (bool, String)> {
        let hash = {
            let mut hashes = self.view.hashes.borrow_mut();
            if hashes.len() <= d {
                hashes.resize(self.devs.len().max(d + 1), None);
            }
            *hashes[d]
                .get_or_insert_with(|| cel::device_hash(self.devs[d].driver, self.devs[d].device))
        };
        if let Some(verdict) = self.cache.verdict(id, hash) {
            return Ok(verdict);
        }
        let compiled = compiled
            .as_ref()
            .as_ref()
            .map_err(|message| (true, message.clone()))?;
        let device = self.cel_device(d).map_err(|message| (false, message))?;
        let verdict = cel::evaluate(compiled, device).map_err(|message| (false, message))?;
        self.cache.remember(id, hash, verdict);
        Ok(verdict)
    }

    fn evaluate_selectors(&mut self, r: usize, d: usize) -> Verdict {
        for i in 0..self.reqs[r].compiled.len() {
            match self.selector_verdict(r, d, i) {
                Ok(true) => {}
                Ok(false) => return Verdict::No,
                // The owner's name is only spelled out for an error, not on every evaluation.
                Err((compile, message)) => {
                    let selector = &self.reqs[r].compiled[i];
                    let (of_class, index) = (selector.of_class, selector.index);
                    let owner = self.selector_owner(r, of_class);
                    return Verdict::Fail(Box::new(if compile {
                        Error::CelCompile {
                            owner,
                            index,
                            message,
                        }
                    } else {
                        Error::CelRuntime {
                            owner,
                            index,
                            message,
                        }
                    }));
                }
            }
        }
        match self.node_selection(d) {
            Ok(true) => Verdict::Yes,
            Ok(false) => Verdict::No,
            Err(err) => Verdict::Fail(Box::new(err)),
        }
    }

    /// Whether the class's (`of_class`) or the request's own CEL selectors all accept device
    /// `d` (errors and selectors without CEL count as "no"), through the expressions compiled
    /// for the request and the cross-call verdict cache.
    pub(crate) fn selectors_accept(&mut self, r: usize, d: usize, of_class: bool) -> bool {
        let selectors = if of_class {
            self.reqs[r].class.spec.selectors.as_slice()
        } else {
            self.reqs[r].selectors
        };
        if selectors.iter().any(|selector| selector.cel.is_none()) {
            return false;
        }
        (0..self.reqs[r].compiled.len()).all(|i| {
            self.reqs[r].compiled[i].of_class != of_class
                || self.selector_verdict(r, d, i) == Ok(true)
        })
    }

    /// Who owns the selectors of request `r`, as errors name it: its class or its claim.
    fn selector_owner(&self, r: usize, of_class: bool) -> String {
        if of_class {
            format!("class {}", self.reqs[r].class.metadata.name)
        } else {
            format!("claim {}", self.claims_name(self.reqs[r].claim))
        }
    }

    fn claims_name(&self, claim: usize) -> String {
        match self.claims.get(claim) {
            Some(data) => data.name.clone(),
            None => self
                .input
                .claims
                .get(claim)
                .map(claim_name)
                .unwrap_or_default(),
        }
    }

    /// Static part of upstream's `CmpRequestOverCapacity`: what the request would consume and
    /// whether that fits next to existing allocations.
    pub(crate) fn capacity_check(&mut self, r: usize, d: usize) -> CapVerdict {
        let group = self.groups.of[r].1;
        match self.cap_verdicts[group].get(d) {
            None | Some(CapVerdict::Unknown) => {}
            // The error names the request: worked out again for this one.
            Some(CapVerdict::Fail(_)) => {}
            Some(known) => return known.clone(),
        }
        let dev = &self.devs[d];
        let req = &self.reqs[r];
        if req.capacity.is_none()
            && !dev.multi
            && dev.capacity_used.is_none()
            && dev
                .device
                .capacity
                .values()
                .all(|capacity| capacity.request_policy.is_none())
        {
            // Without requirements and policies a request consumes every capacity in full,
            // which always fits a device nobody shares; the amounts are only ever read for
            // devices that allow multiple allocations or already hold shares, so they are not
            // worked out here.
            let verdict = CapVerdict::Ok(std::rc::Rc::clone(&self.unread_consumption));
            self.keep_capacity(group, d, &verdict);
            return verdict;
        }
        let verdict = match capacity::consumption(req.capacity, dev.device, dev.driver) {
            Ok(Some(consumed)) => {
                if capacity::fits(&consumed, None, dev.device) {
                    CapVerdict::Ok(std::rc::Rc::new(consumed))
                } else {
                    CapVerdict::No
                }
            }
            Ok(None) => CapVerdict::No,
            Err(CapacityError::NotRepresentable(capacity)) => {
                CapVerdict::Fail(Box::new(Error::CapacityNotRepresentable {
                    claim: self.claims_name(req.claim),
                    request: req.name(),
                    device: dev.id(),
                    capacity,
                }))
            }
            Err(CapacityError::RequestedTwice(capacity)) => {
                CapVerdict::Fail(Box::new(Error::CapacityRequestedTwice {
                    claim: self.claims_name(req.claim),
                    request: req.name(),
                    capacity,
                }))
            }
        };
        self.keep_capacity(group, d, &verdict);
        verdict
    }

    /// Keeps a capacity pre-check of capacity group `group` (see [`MAX_CAPACITY_ENTRIES`]).
    fn keep_capacity(&mut self, group: usize, d: usize, verdict: &CapVerdict) {
        let devices = self.devs.len();
        if self.cap_verdicts[group].is_empty() {
            if self.cap_entries + devices > MAX_CAPACITY_ENTRIES {
                return;
            }
            self.cap_entries += devices;
            self.cap_verdicts[group] = vec![CapVerdict::Unknown; devices];
        }
        self.cap_verdicts[group][d] = verdict.clone();
    }

    /// Whether compatibility groups keep device `d` out regardless of this search: with the
    /// gate off, the version-skew skip; with it on, no shared group with devices already
    /// allocated on one of its counter sets.
    pub(crate) fn compat_blocked(&self, d: usize) -> bool {
        let dev = &self.devs[d];
        if !self.features.device_compatibility_groups {
            return dev.compat_skip;
        }
        let baseline = &self.compat_baseline[dev.pool];
        !dev.device.consumes_counters.is_empty()
            && !dev
                .groups()
                .iter()
                .all(|(set, groups)| compat::admits(baseline.get(set), groups))
    }

    /// Whether a taint on the device keeps the request from using it.
    pub(crate) fn tainted(&self, r: usize, d: usize) -> bool {
        if !self.features.device_taints {
            return false;
        }
        let tolerations = self.reqs[r].tolerations;
        let dev = &self.devs[d];
        dev.device
            .taints
            .iter()
            .chain(&dev.rule_taints)
            .any(|taint| {
                matches!(
                    taint.effect,
                    DeviceTaintEffect::NoSchedule | DeviceTaintEffect::NoExecute
                ) && !tolerations
                    .iter()
                    .any(|toleration| tolerates(toleration, taint))
            })
    }
}

struct RequestView<'a> {
    parent: &'a str,
    sub: Option<&'a str>,
    class: &'a str,
    mode: Option<&'a DeviceAllocationMode>,
    count: Option<i64>,
    admin: Option<bool>,
    selectors: &'a [DeviceSelector],
    tolerations: &'a [DeviceToleration],
    capacity: Option<&'a CapacityRequirements>,
    derived: &'a [DeviceDerivedAttribute],
}

/// See [`Problem::attribute`]; a free function so that the search can hold other fields of
/// the problem mutably meanwhile.
fn attribute_for<'p>(
    req: &'p Req<'_>,
    values: Option<&'p Result<Vec<DeviceAttribute>, Error>>,
    dev: &'p Dev<'_>,
    name: &str,
) -> Option<&'p DeviceAttribute> {
    match req.derived.iter().position(|d| d.name == name) {
        Some(i) => values.and_then(|v| v.as_ref().ok()).and_then(|v| v.get(i)),
        None => attributes::lookup(&dev.device.attributes, dev.driver, name),
    }
}

/// Upstream's `ToleratesTaint`.
pub(crate) fn tolerates(toleration: &DeviceToleration, taint: &DeviceTaint) -> bool {
    if toleration
        .effect
        .as_ref()
        .is_some_and(|effect| effect != &taint.effect)
    {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration.operator.as_ref() {
        None | Some(DeviceTolerationOperator::Equal) => toleration.value == taint.value,
        Some(DeviceTolerationOperator::Exists) => true,
        Some(_) => false,
    }
}

/// Search steps after which failed states are remembered.
const MEMO_AFTER_STEPS: u64 = 2_000;

/// Devices skipped because they are taken count as this fraction of a step: skipping costs a
/// couple of nanoseconds, and a large input that fits (thousands of claims, each walking past
/// the devices the earlier ones took) must not run out of steps for it.
const SKIPS_PER_STEP: u64 = 16;

/// Bytes a remembered state costs besides its key (the table's entry and allocation).
const MEMO_ENTRY_BYTES: u64 = 48;

/// Appends `text` to a memo key: its length, then its bytes four to a number.
fn push_text(key: &mut Vec<u32>, text: &str) {
    key.push(text.len() as u32);
    for chunk in text.as_bytes().chunks(4) {
        let mut word = [0u8; 4];
        word[..chunk.len()].copy_from_slice(chunk);
        key.push(u32::from_le_bytes(word));
    }
}

/// A position in the search: which device of which (sub)request of which claim.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Pos {
    claim: usize,
    request: usize,
    sub: usize,
    device: usize,
}

pub(crate) enum Stop {
    /// Upstream's `errAllocationResultMaxSizeExceeded`: backtrack aggressively.
    MaxSize,
    Error(Error),
    /// The step budget ran out.
    Budget,
    /// A bound proved that no assignment exists (the proof is [`Search::shortfall`]).
    Hopeless,
}

impl From<Error> for Stop {
    fn from(err: Error) -> Self {
        Stop::Error(err)
    }
}

struct Picked {
    dev: usize,
    req: usize,
    consumed: Option<Consumed>,
    charged_counters: bool,
    marked: bool,
    /// Joined the compatibility-group state of its counter sets.
    joined_groups: bool,
}

/// What a position of the search waits for, on the search's own stack: upstream's
/// `allocateOne` recurses once per device picked, which thousands of claims turn into a
/// stack overflow; this walk keeps the same order in a vector.
enum Frame {
    /// The claims after `claim`; on failure the state is remembered when `memo` (the state
    /// is then what it was on entry: keys are not kept on the stack, whose depth grows with
    /// the claims).
    NextClaim { claim: usize, memo: bool },
    /// Subrequest `sub` of the slot at `pos`, and whether every subrequest tried so far
    /// exceeded the claim's device limit.
    Subs {
        pos: Pos,
        sub: usize,
        all_exceeded: bool,
    },
    /// The request after the one at `pos`; on failure the state is remembered when `memo`.
    NextRequest { pos: Pos, memo: bool },
    /// The rest, after a device of an `All` request.
    AllDevice { claim: usize },
    /// The rest, after a device of an `ExactCount` request.
    Exact(Exact),
}

/// An `ExactCount` request's walk over the devices at one position.
#[derive(Clone, Copy)]
struct Exact {
    pos: Pos,
    allocate_sub: bool,
    r: usize,
    /// The next device to try.
    next: usize,
    /// Devices still needed, this one included.
    needed: usize,
    /// Whether the pigeonhole bound is checked at this position.
    bounded: bool,
}

/// What the walk does next: enter a position, or hand a result to the frame below.
enum Next {
    Enter(Pos, bool),
    Return(Result<bool, Stop>),
}

/// The mutable state of the search.
pub(crate) struct Search {
    /// Per device: the claims it is being allocated to (devices without multiple allocations).
    allocating: Vec<Vec<usize>>,
    /// Per device: capacity being consumed by new shared allocations.
    allocating_capacity: Vec<Option<Consumed>>,
    /// The devices [`Search::in_use`] answers yes for, as a bitset: the walk over a request's
    /// devices jumps over them 64 at a time (with thousands of claims, most devices are taken
    /// by the time the last ones look).
    busy: Vec<u64>,
    /// Per pool: counters consumed by new allocations.
    consumed_counters: Vec<Vec<Quantity>>,
    /// The same in nano units, for pools with `available_nano`.
    consumed_nano: Vec<Vec<i128>>,
    picked: Vec<Vec<Picked>>,
    /// Per claim and request: the chosen subrequest.
    selected_sub: Vec<Vec<usize>>,
    /// Work done: positions entered, devices looked at, the bounds' work.
    steps: u64,
    /// Devices skipped because they were taken (see [`SKIPS_PER_STEP`]).
    skips: u64,
    /// The work after which the search gives up.
    limit: u64,
    /// When the search gives up whatever its work ([`crate::Budget::max_time`]).
    deadline: Option<std::time::Instant>,
    /// The work at which the clock is read next.
    next_clock: u64,
    /// The search gave up at its deadline.
    pub(crate) timed_out: bool,
    /// States from which the rest of the search failed.
    failed_states: HashSet<Box<[u32]>, crate::cel::FxBuild>,
    /// Bytes `failed_states` holds, and may hold.
    memo_bytes: u64,
    memo_limit: u64,
    /// Per pool and counter set: the compatibility-group state after each device of this
    /// search that joined it (a stack, popped when backtracking).
    groups: Vec<HashMap<String, Vec<compat::Groups>>>,
    /// Whether the pigeonhole bound is computed: only once some subtree failed. A search that
    /// succeeds first-fit without backtracking never pays for it; the bound never changes an
    /// answer, so switching it on mid-search is safe.
    bounding: bool,
    /// Whether the bounds of [`bound`] were worked out (once, at the first failure).
    checked: bool,
    /// What they proved, if anything.
    pub(crate) shortfall: Option<bound::Shortfall>,
}

/// How often (in steps) a search with a deadline reads the clock: tens of microseconds.
const CLOCK_EVERY_STEPS: u64 = 1024;

impl Search {
    pub(crate) fn new(problem: &Problem<'_>, budget: &crate::Budget) -> Self {
        let mut busy = vec![0u64; problem.devs.len().div_ceil(64)];
        for (d, dev) in problem.devs.iter().enumerate() {
            if dev.allocated || (dev.shared && !dev.multi) {
                busy[d / 64] |= 1 << (d % 64);
            }
        }
        Search {
            allocating: vec![Vec::new(); problem.devs.len()],
            allocating_capacity: vec![None; problem.devs.len()],
            busy,
            consumed_nano: problem
                .counters
                .iter()
                .map(|pc| vec![0; pc.available.len()])
                .collect(),
            consumed_counters: problem
                .counters
                .iter()
                .map(|pc| vec![Quantity::zero(); pc.available.len()])
                .collect(),
            picked: problem.claims.iter().map(|_| Vec::new()).collect(),
            selected_sub: problem
                .claims
                .iter()
                .map(|c| vec![0; c.slots.len()])
                .collect(),
            steps: 0,
            skips: 0,
            limit: budget.max_steps,
            deadline: budget
                .max_time
                .and_then(|t| std::time::Instant::now().checked_add(t)),
            next_clock: 0,
            timed_out: false,
            failed_states: HashSet::default(),
            memo_bytes: 0,
            memo_limit: budget.max_memo_bytes,
            groups: problem.counters.iter().map(|_| HashMap::new()).collect(),
            bounding: false,
            checked: false,
            shortfall: None,
        }
    }

    /// The work done so far, in steps.
    pub(crate) fn spent(&self) -> u64 {
        self.steps.saturating_add(self.skips / SKIPS_PER_STEP)
    }

    /// Bytes held by the memo of failed states.
    pub(crate) fn memo_bytes(&self) -> u64 {
        self.memo_bytes
    }

    /// Counts `work` steps; `Err(Stop::Budget)` once the budget is spent.
    fn charge(&mut self, work: u64) -> Result<(), Stop> {
        self.steps = self.steps.saturating_add(work);
        if self.spent() > self.limit {
            return Err(Stop::Budget);
        }
        if let Some(deadline) = self.deadline
            && self.steps >= self.next_clock
        {
            self.next_clock = self.steps.saturating_add(CLOCK_EVERY_STEPS);
            if std::time::Instant::now() >= deadline {
                self.timed_out = true;
                return Err(Stop::Budget);
            }
        }
        Ok(())
    }

    /// Remembers a failed state, while the memo has room.
    fn remember(&mut self, key: Box<[u32]>) {
        let cost = 4 * key.len() as u64 + MEMO_ENTRY_BYTES;
        if self.memo_bytes.saturating_add(cost) > self.memo_limit {
            return;
        }
        if self.failed_states.insert(key) {
            self.memo_bytes += cost;
        }
    }

    /// The state that decides the outcome of allocating claims `claim..`: devices taken
    /// exclusively, capacity shared out, counters consumed; as numbers (amounts by their
    /// canonical text), which hash and compare faster than text and take less memory.
    fn state_key(&mut self, claim: usize) -> Vec<u32> {
        // The devices in use (those in use before the call are the same in every state).
        self.skips += self.busy.len() as u64;
        let mut key = vec![claim as u32];
        for (w, &word) in self.busy.iter().enumerate() {
            let mut rest = word;
            while rest != 0 {
                key.push((w * 64) as u32 + rest.trailing_zeros());
                rest &= rest - 1;
            }
        }
        key.push(u32::MAX);
        for (d, consumed) in self.allocating_capacity.iter().enumerate() {
            self.skips += 1;
            if let Some(consumed) = consumed {
                key.push(d as u32);
                for (name, amount) in consumed {
                    push_text(&mut key, name);
                    push_text(&mut key, &amount.to_string());
                }
            }
        }
        key.push(u32::MAX);
        for (pool, consumed) in self.consumed_counters.iter().enumerate() {
            for (i, amount) in consumed.iter().enumerate() {
                if !amount.is_zero() {
                    key.extend([pool as u32, i as u32]);
                    push_text(&mut key, &amount.to_string());
                }
            }
        }
        key.push(u32::MAX);
        for (pool, consumed) in self.consumed_nano.iter().enumerate() {
            for (i, amount) in consumed.iter().enumerate() {
                if *amount != 0 {
                    key.extend([pool as u32, i as u32]);
                    let bits = *amount as u128;
                    key.extend((0..4).map(|w| (bits >> (w * 32)) as u32));
                }
            }
        }
        self.steps += key.len() as u64 / 8;
        key
    }

    /// Upstream's `deviceInUse`: allocated exclusively, shared by a live share while the device
    /// no longer allows multiple allocations, or picked exclusively in this search.
    fn in_use(&self, _problem: &Problem<'_>, d: usize) -> bool {
        self.busy[d / 64] >> (d % 64) & 1 == 1
    }

    /// The first device from `d` on that is not in use (`n` when there is none), counting the
    /// words looked at as skips.
    fn next_free(&mut self, mut d: usize, n: usize) -> usize {
        while d < n {
            self.skips += 1;
            let free = !self.busy[d / 64] >> (d % 64);
            if free != 0 {
                return (d + free.trailing_zeros() as usize).min(n);
            }
            d = (d / 64 + 1) * 64;
        }
        n
    }

    /// Upstream's `deviceCapacityInUse`: some share of the device exists already (so its
    /// counters are charged already).
    fn capacity_in_use(&self, problem: &Problem<'_>, d: usize) -> bool {
        let dev = &problem.devs[d];
        dev.capacity_used.is_some() || dev.shared || self.allocating_capacity[d].is_some()
    }

    fn req_index(problem: &Problem<'_>, pos: Pos) -> usize {
        match &problem.claims[pos.claim].slots[pos.request] {
            Slot::Plain(r) => *r,
            Slot::Subs(subs) => subs[pos.sub.min(subs.len() - 1)],
        }
    }

    /// Upstream's `allocateOne` from `start` to the end: `Ok(true)` when every claim from
    /// there on fits (the picks are then in the search's state), `Ok(false)` when none does.
    /// The positions wait on an explicit stack ([`Frame`]), in upstream's order.
    pub(crate) fn run(&mut self, problem: &mut Problem<'_>, start: Pos) -> Result<bool, Stop> {
        let mut stack: Vec<Frame> = Vec::new();
        let mut next = Next::Enter(start, false);
        loop {
            next = match next {
                Next::Enter(pos, allocate_sub) => {
                    self.enter(problem, pos, allocate_sub, &mut stack)
                }
                Next::Return(result) => match stack.pop() {
                    None => return result,
                    Some(frame) => self.resume(problem, frame, result, &mut stack),
                },
            };
        }
    }

    /// The memo key of the state at the end of a request of claim `pos.claim` (the rest of
    /// the claim only depends on which devices the claim holds), once the search got big.
    fn request_key(&mut self, pos: Pos) -> Box<[u32]> {
        let mut key = self.state_key(pos.claim);
        let mut picks: Vec<(u32, u32)> = self.picked[pos.claim]
            .iter()
            .map(|p| (p.dev as u32, p.req as u32))
            .collect();
        picks.sort_unstable();
        key.extend([u32::MAX, pos.request as u32 + 1]);
        for (d, r) in picks {
            key.extend([d, r]);
        }
        key.into_boxed_slice()
    }

    /// Enters position `pos`: answers it at once, or pushes what it waits for and names the
    /// position to enter next.
    fn enter(
        &mut self,
        problem: &mut Problem<'_>,
        pos: Pos,
        allocate_sub: bool,
        stack: &mut Vec<Frame>,
    ) -> Next {
        if let Err(stop) = self.charge(1) {
            return Next::Return(Err(stop));
        }
        if pos.claim >= problem.claims.len() {
            return Next::Return(Ok(true));
        }
        if pos.request >= problem.claims[pos.claim].slots.len() {
            // What happens from the next claim on depends only on which devices, capacities
            // and counters are taken, not on which earlier claim took them: remember states
            // from which the rest failed, and do not explore them twice.
            let memo = problem.prune
                && self.steps > MEMO_AFTER_STEPS
                && pos.claim + 1 < problem.claims.len();
            // Nothing to find before something failed.
            if memo && !self.failed_states.is_empty() {
                let key = self.state_key(pos.claim + 1);
                if self.failed_states.contains(&key[..]) {
                    return Next::Return(Ok(false));
                }
            }
            stack.push(Frame::NextClaim {
                claim: pos.claim,
                memo,
            });
            return Next::Enter(
                Pos {
                    claim: pos.claim + 1,
                    ..Pos::default()
                },
                false,
            );
        }
        if !allocate_sub && let Slot::Subs(_) = &problem.claims[pos.claim].slots[pos.request] {
            stack.push(Frame::Subs {
                pos,
                sub: 0,
                all_exceeded: true,
            });
            return Next::Enter(Pos { sub: 0, ..pos }, true);
        }
        let r = Self::req_index(problem, pos);
        let (all, num_devices) = (problem.reqs[r].all, problem.reqs[r].num_devices);
        if all && problem.reqs[r].all_devices.is_empty() {
            return Next::Return(Ok(false));
        }
        if pos.device >= num_devices {
            // Upstream tries every order of the devices of a request; the rest of the claim
            // only depends on which devices the claim holds, so failed states are remembered
            // here too (only once the search got big, to keep small searches cheap).
            let memo = problem.prune && self.steps > MEMO_AFTER_STEPS;
            if memo && !self.failed_states.is_empty() {
                let key = self.request_key(pos);
                if self.failed_states.contains(&key) {
                    return Next::Return(Ok(false));
                }
            }
            stack.push(Frame::NextRequest { pos, memo });
            return Next::Enter(
                Pos {
                    claim: pos.claim,
                    request: pos.request + 1,
                    sub: 0,
                    device: 0,
                },
                false,
            );
        }
        if self.picked[pos.claim].len() + num_devices - pos.device > ALLOCATION_RESULTS_MAX_SIZE {
            return Next::Return(Err(Stop::MaxSize));
        }
        if problem.prune && self.doomed(problem, pos) {
            return Next::Return(Ok(false));
        }
        if all {
            let d = problem.reqs[r].all_devices[pos.device];
            return match self.allocate_device(problem, pos.claim, r, d, true) {
                Err(err) => Next::Return(Err(err)),
                Ok(false) => Next::Return(Ok(false)),
                Ok(true) => {
                    stack.push(Frame::AllDevice { claim: pos.claim });
                    Next::Enter(
                        Pos {
                            device: pos.device + 1,
                            ..pos
                        },
                        allocate_sub,
                    )
                }
            };
        }
        let needed = num_devices - pos.device;
        let bounded = problem.prune && self.bounding;
        if bounded && !self.enough_candidates(problem, pos.claim, r, needed) {
            return Next::Return(Ok(false));
        }
        let at = Exact {
            pos,
            allocate_sub,
            r,
            next: 0,
            needed,
            bounded,
        };
        self.try_devices(problem, at, stack)
    }

    /// Tries the devices of an `ExactCount` request from `at.next` on, in search order: the
    /// first one it can take is picked, and the position after it entered.
    fn try_devices(
        &mut self,
        problem: &mut Problem<'_>,
        mut at: Exact,
        stack: &mut Vec<Frame>,
    ) -> Next {
        let (pos, r) = (at.pos, at.r);
        let admin = problem.reqs[r].admin;
        let n = problem.devs.len();
        while at.next < n {
            if !admin {
                at.next = self.next_free(at.next, n);
                if at.next == n {
                    break;
                }
            }
            let d = at.next;
            at.next += 1;
            if admin && self.allocating[d].contains(&pos.claim) {
                self.skips += 1;
                continue;
            }
            if let Err(stop) = self.charge(1) {
                return Next::Return(Err(stop));
            }
            match problem.selectable(r, d) {
                Verdict::Yes => {}
                Verdict::Fail(err) => return Next::Return(Err(Stop::Error(*err))),
                _ => continue,
            }
            if problem.features.consumable_capacity {
                match problem.capacity_check(r, d) {
                    CapVerdict::Ok(consumed) => {
                        if !self.fits_allocating(problem, d, &consumed) {
                            continue;
                        }
                    }
                    CapVerdict::Fail(err) => return Next::Return(Err(Stop::Error(*err))),
                    _ => continue,
                }
            }
            match self.allocate_device(problem, pos.claim, r, d, false) {
                Err(err) => return Next::Return(Err(err)),
                Ok(false) => continue,
                Ok(true) => {}
            }
            stack.push(Frame::Exact(at));
            return Next::Enter(
                Pos {
                    device: pos.device + 1,
                    ..pos
                },
                at.allocate_sub,
            );
        }
        Next::Return(Ok(false))
    }

    /// Hands the result of the position above to `frame`: the frame answers, or names the
    /// next position to enter (having pushed itself again).
    fn resume(
        &mut self,
        problem: &mut Problem<'_>,
        frame: Frame,
        result: Result<bool, Stop>,
        stack: &mut Vec<Frame>,
    ) -> Next {
        match frame {
            Frame::NextClaim { claim, memo } => {
                let result = match result {
                    Err(Stop::MaxSize) => Ok(false),
                    other => other,
                };
                if memo && matches!(result, Ok(false)) {
                    let key = self.state_key(claim + 1).into_boxed_slice();
                    self.remember(key);
                }
                Next::Return(result)
            }
            Frame::Subs {
                pos,
                sub,
                mut all_exceeded,
            } => {
                match result {
                    Err(Stop::MaxSize) => {}
                    Err(err) => return Next::Return(Err(err)),
                    Ok(true) => {
                        self.selected_sub[pos.claim][pos.request] = sub;
                        return Next::Return(Ok(true));
                    }
                    Ok(false) => {
                        all_exceeded = false;
                        if let Err(stop) = self.check_bounds(problem) {
                            return Next::Return(Err(stop));
                        }
                    }
                }
                let n = match &problem.claims[pos.claim].slots[pos.request] {
                    Slot::Subs(subs) => subs.len(),
                    Slot::Plain(_) => 0,
                };
                if sub + 1 < n {
                    stack.push(Frame::Subs {
                        pos,
                        sub: sub + 1,
                        all_exceeded,
                    });
                    return Next::Enter(
                        Pos {
                            sub: sub + 1,
                            ..pos
                        },
                        true,
                    );
                }
                Next::Return(if all_exceeded {
                    Err(Stop::MaxSize)
                } else {
                    Ok(false)
                })
            }
            Frame::NextRequest { pos, memo } => {
                if memo && matches!(result, Ok(false)) {
                    let key = self.request_key(pos);
                    self.remember(key);
                }
                Next::Return(result)
            }
            Frame::AllDevice { claim } => {
                if !matches!(result, Ok(true)) {
                    self.deallocate(problem, claim);
                }
                Next::Return(result)
            }
            Frame::Exact(mut at) => match result {
                Ok(true) => Next::Return(Ok(true)),
                Err(err) => {
                    self.deallocate(problem, at.pos.claim);
                    Next::Return(Err(err))
                }
                Ok(false) => {
                    self.deallocate(problem, at.pos.claim);
                    // A subtree failed: from now on bound every level, starting with this
                    // one (the state is back to what it was on entry, and the remaining
                    // candidates are part of the subtree the bound speaks about).
                    if problem.prune && !at.bounded {
                        self.bounding = true;
                        at.bounded = true;
                        if let Err(stop) = self.check_bounds(problem) {
                            return Next::Return(Err(stop));
                        }
                        if !self.enough_candidates(problem, at.pos.claim, at.r, at.needed) {
                            return Next::Return(Ok(false));
                        }
                    }
                    self.try_devices(problem, at, stack)
                }
            },
        }
    }

    /// The bounds of [`bound`], worked out once per search (at its first failure, so a
    /// search that fits first-fit never pays for them): `Err(Stop::Hopeless)` when they
    /// prove that no assignment exists.
    fn check_bounds(&mut self, problem: &mut Problem<'_>) -> Result<(), Stop> {
        if self.checked || !problem.prune {
            return Ok(());
        }
        self.checked = true;
        let limit = self.limit.saturating_sub(self.skips / SKIPS_PER_STEP);
        let mut meter = bound::Meter {
            steps: &mut self.steps,
            limit,
        };
        if let Some(found) = bound::violated(problem, &mut meter)? {
            self.shortfall = Some(found);
            return Err(Stop::Hopeless);
        }
        Ok(())
    }

    /// Whether `consumed` still fits next to existing shares and those of this search.
    fn fits_allocating(&self, problem: &Problem<'_>, d: usize, consumed: &Consumed) -> bool {
        let dev = &problem.devs[d];
        match (&self.allocating_capacity[d], &dev.capacity_used) {
            (None, None) => true,
            (None, Some(used)) => capacity::fits(consumed, Some(used), dev.device),
            (Some(allocating), used) => {
                let mut total = used.clone().unwrap_or_default();
                capacity::add_into(&mut total, allocating);
                capacity::fits(consumed, Some(&total), dev.device)
            }
        }
    }

    /// Upstream's `allocateDevice`: checks availability and constraints for one candidate and,
    /// if it works, records it. `must` turns a constraint violation into an error (for `All`).
    fn allocate_device(
        &mut self,
        problem: &mut Problem<'_>,
        claim: usize,
        r: usize,
        d: usize,
        must: bool,
    ) -> Result<bool, Stop> {
        let features = problem.features;
        let admin = problem.reqs[r].admin;
        let multi = problem.devs[d].multi;
        if !multi && admin && self.allocating[d].contains(&claim) {
            return Ok(false);
        }
        if !admin && self.in_use(problem, d) {
            return Ok(false);
        }
        // A shareable device serves each request at most once.
        if multi && self.picked[claim].iter().any(|p| p.dev == d && p.req == r) {
            return Ok(false);
        }
        let consumes = !problem.devs[d].device.consumes_counters.is_empty();
        if !features.partitionable_devices && consumes {
            return Ok(false);
        }
        let skip_counters = multi && self.capacity_in_use(problem, d);
        let mut charged = false;
        if !skip_counters && consumes {
            if !self.charge_counters(problem, d) {
                return Ok(false);
            }
            charged = true;
        }
        let joined_groups = charged && features.device_compatibility_groups;
        if joined_groups && !self.join_groups(problem, d) {
            problem.compat_rejected.insert((r, d));
            self.release_counters(problem, d);
            return Ok(false);
        }
        // Undoes what was recorded so far when the device is turned down below.
        let undo = |search: &mut Self, problem: &Problem<'_>| {
            if joined_groups {
                search.leave_groups(problem, d);
            }
            if charged {
                search.release_counters(problem, d);
            }
        };
        if problem.tainted(r, d) {
            undo(self, problem);
            return Ok(false);
        }
        // Derived attributes, evaluated now that the selectors accepted the device.
        if let Err(err) = problem.derive(r, d) {
            undo(self, problem);
            return Err(Stop::Error(err));
        }
        // Constraints.
        let (parent, sub) = (problem.reqs[r].parent, problem.reqs[r].sub);
        let dev = &problem.devs[d];
        let req = &problem.reqs[r];
        let values = if req.derived.is_empty() {
            None
        } else {
            problem.derived_values[r].get(&d)
        };
        let mut added = 0;
        let mut rejected = false;
        for (ci, constraint) in problem.constraints[claim].iter_mut().enumerate() {
            if !constraint.applies(parent, sub) {
                added += 1;
                continue;
            }
            // The bound's column, when it was built already, saves the lookup.
            let column = if problem.columns.is_empty() {
                None
            } else {
                problem.columns.get(&(r, ci))
            };
            let attribute = match column {
                Some(column) => column.attrs[d].as_ref(),
                None => attribute_for(req, values, dev, &constraint.attribute),
            };
            if !constraint.admits(attribute) {
                rejected = true;
                break;
            }
            if let Some(attribute) = attribute {
                constraint.add(attribute);
            }
            added += 1;
        }
        if rejected {
            for constraint in problem.constraints[claim][..added].iter_mut() {
                if constraint.applies(parent, sub) {
                    constraint.remove();
                }
            }
            undo(self, problem);
            if must {
                return Err(Stop::Error(Error::ConstraintRejectsRequiredDevice {
                    claim: problem.claims[claim].name.clone(),
                    request: problem.reqs[r].own_name().to_string(),
                    device: problem.devs[d].id(),
                }));
            }
            return Ok(false);
        }
        // Capacity against what this search already handed out.
        let mut consumed = None;
        if features.consumable_capacity {
            let ok = match problem.capacity_check(r, d) {
                CapVerdict::Ok(c) => {
                    let fits = self.fits_allocating(problem, d, &c);
                    if fits && multi {
                        consumed = Some(Consumed::clone(&c));
                    }
                    fits
                }
                CapVerdict::Fail(err) => {
                    self.undo_constraints(problem, claim, r, d);
                    undo(self, problem);
                    return Err(Stop::Error(*err));
                }
                _ => false,
            };
            if !ok {
                self.undo_constraints(problem, claim, r, d);
                undo(self, problem);
                return Ok(false);
            }
        }
        let marked = !multi;
        if marked {
            self.allocating[d].push(claim);
            self.busy[d / 64] |= 1 << (d % 64);
        }
        if let Some(c) = &consumed {
            capacity::add_into(
                self.allocating_capacity[d].get_or_insert_with(Consumed::new),
                c,
            );
        }
        self.picked[claim].push(Picked {
            dev: d,
            req: r,
            consumed,
            charged_counters: charged,
            marked,
            joined_groups,
        });
        Ok(true)
    }

    fn undo_constraints(&mut self, problem: &mut Problem<'_>, claim: usize, r: usize, _d: usize) {
        let (parent, sub) = (problem.reqs[r].parent, problem.reqs[r].sub);
        for constraint in problem.constraints[claim].iter_mut() {
            if constraint.applies(parent, sub) {
                constraint.remove();
            }
        }
    }

    fn deallocate(&mut self, problem: &mut Problem<'_>, claim: usize) {
        let Some(picked) = self.picked[claim].pop() else {
            return;
        };
        self.undo_constraints(problem, claim, picked.req, picked.dev);
        if picked.marked
            && let Some(i) = self.allocating[picked.dev]
                .iter()
                .rposition(|&c| c == claim)
        {
            self.allocating[picked.dev].remove(i);
            let dev = &problem.devs[picked.dev];
            if self.allocating[picked.dev].is_empty()
                && !(dev.allocated || dev.shared && !dev.multi)
            {
                self.busy[picked.dev / 64] &= !(1 << (picked.dev % 64));
            }
        }
        if let Some(consumed) = &picked.consumed
            && let Some(allocating) = &mut self.allocating_capacity[picked.dev]
            && capacity::sub_from(allocating, consumed)
        {
            self.allocating_capacity[picked.dev] = None;
        }
        if picked.joined_groups {
            self.leave_groups(problem, picked.dev);
        }
        if picked.charged_counters {
            self.release_counters(problem, picked.dev);
        }
    }

    /// Upstream's `checkAndConsumeCompatibilityGroups`: whether device `d` shares a group with
    /// every device on each counter set it draws from (allocated before or in this search);
    /// if so, records it.
    fn join_groups(&mut self, problem: &Problem<'_>, d: usize) -> bool {
        let dev = &problem.devs[d];
        let running = &mut self.groups[dev.pool];
        let baseline = &problem.compat_baseline[dev.pool];
        let current = |running: &HashMap<String, Vec<compat::Groups>>, set: &str| {
            running
                .get(set)
                .and_then(|stack| stack.last())
                .or_else(|| baseline.get(set))
                .cloned()
        };
        if !dev
            .groups()
            .iter()
            .all(|(set, groups)| compat::admits(current(running, set).as_ref(), groups))
        {
            return false;
        }
        for (set, groups) in dev.groups() {
            let joined = compat::fold(current(running, set).as_ref(), groups);
            running.entry(set.clone()).or_default().push(joined);
        }
        true
    }

    fn leave_groups(&mut self, problem: &Problem<'_>, d: usize) {
        let dev = &problem.devs[d];
        for (set, _) in dev.groups().iter().rev() {
            if let Some(stack) = self.groups[dev.pool].get_mut(set) {
                stack.pop();
            }
        }
    }

    fn charge_counters(&mut self, problem: &Problem<'_>, d: usize) -> bool {
        let dev = &problem.devs[d];
        let pc = &problem.counters[dev.pool];
        if pc.overdrawn {
            return false;
        }
        if let (Some(available), Some(amounts)) = (&pc.available_nano, dev.counters_nano()) {
            let consumed = &mut self.consumed_nano[dev.pool];
            for (i, amount) in amounts {
                consumed[*i] += amount;
            }
            let ok = amounts.iter().all(|(i, _)| consumed[*i] <= available[*i]);
            if !ok {
                for (i, amount) in amounts {
                    consumed[*i] -= amount;
                }
            }
            return ok;
        }
        let consumed = &mut self.consumed_counters[dev.pool];
        for (i, amount) in dev.counters() {
            consumed[*i] += amount;
        }
        let ok = dev
            .counters()
            .iter()
            .all(|(i, _)| consumed[*i] <= pc.available[*i]);
        if !ok {
            for (i, amount) in dev.counters() {
                consumed[*i] -= amount;
            }
        }
        ok
    }

    fn release_counters(&mut self, problem: &Problem<'_>, d: usize) {
        let dev = &problem.devs[d];
        if let (Some(_), Some(amounts)) = (
            &problem.counters[dev.pool].available_nano,
            dev.counters_nano(),
        ) {
            let consumed = &mut self.consumed_nano[dev.pool];
            for (i, amount) in amounts {
                consumed[*i] -= amount;
            }
            return;
        }
        let consumed = &mut self.consumed_counters[dev.pool];
        for (i, amount) in dev.counters() {
            consumed[*i] -= amount;
        }
    }

    /// Pigeonhole bound for an `ExactCount` request that still needs `needed` devices: if fewer
    /// usable devices exist (or, with a match constraint, fewer sharing a value), no assignment
    /// of the remaining devices exists, and picking devices for such a request never raises an
    /// error, so the subtree can be skipped. Stays out of the way when a device would raise an
    /// error on evaluation.
    fn enough_candidates(
        &mut self,
        problem: &mut Problem<'_>,
        claim: usize,
        r: usize,
        needed: usize,
    ) -> bool {
        let admin = problem.reqs[r].admin;
        let (parent, sub) = (problem.reqs[r].parent, problem.reqs[r].sub);
        let plain = problem.reqs[r].derived.is_empty();
        // The constraints that apply, with their attribute columns (when the request has no
        // derived attributes, whose values are only known per device).
        let mut applicable: Vec<(usize, Option<std::rc::Rc<Column>>)> = Vec::new();
        for ci in 0..problem.constraints[claim].len() {
            let constraint = &problem.constraints[claim][ci];
            if !constraint.applies(parent, sub) {
                continue;
            }
            applicable.push((ci, plain.then(|| problem.column(r, ci))));
        }
        // Match constraints: how many candidates carry each value (by interned id, or by value
        // for requests with derived attributes).
        let matching: Vec<usize> = applicable
            .iter()
            .enumerate()
            .filter(|(_, (ci, _))| problem.constraints[claim][*ci].kind == ConstraintKind::Match)
            .map(|(i, _)| i)
            .collect();
        let mut counts: Vec<Vec<usize>> = matching
            .iter()
            .map(|&i| vec![0; applicable[i].1.as_ref().map_or(0, |c| c.ids.len())])
            .collect();
        let mut groups: Vec<HashMap<attributes::Value, usize>> =
            vec![HashMap::new(); matching.len()];
        let Some(candidates) = problem.static_candidates(r) else {
            return true;
        };
        let mut count = 0usize;
        self.skips += candidates.words() as u64;
        for d in candidates.iter() {
            self.skips += 1;
            if admin && self.allocating[d].contains(&claim) {
                continue;
            }
            // The rest of `in_use`: picked in this search.
            if !admin && !self.allocating[d].is_empty() {
                continue;
            }
            if problem.features.consumable_capacity
                && let CapVerdict::Ok(consumed) = problem.capacity_check(r, d)
                && !self.fits_allocating(problem, d, &consumed)
            {
                continue;
            }
            let dev = &problem.devs[d];
            let admitted = applicable.iter().all(|(ci, column)| {
                let constraint = &problem.constraints[claim][*ci];
                let attribute = match column {
                    Some(column) => column.attrs[d].as_ref(),
                    None => problem.attribute(r, d, &constraint.attribute),
                };
                constraint.admits(attribute)
            });
            if !admitted {
                continue;
            }
            if dev.multi && self.picked[claim].iter().any(|p| p.dev == d && p.req == r) {
                continue;
            }
            count += 1;
            for (g, &i) in matching.iter().enumerate() {
                let (ci, column) = &applicable[i];
                match column {
                    Some(column) => {
                        for &key in &column.keys[d] {
                            counts[g][key as usize] += 1;
                        }
                    }
                    None => {
                        let constraint = &problem.constraints[claim][*ci];
                        let Some(attribute) = problem.attribute(r, d, &constraint.attribute) else {
                            continue;
                        };
                        for key in attributes::match_keys(attribute, constraint.list_semantics()) {
                            *groups[g].entry(key).or_default() += 1;
                        }
                    }
                }
            }
        }
        if count < needed {
            return false;
        }
        for (g, &i) in matching.iter().enumerate() {
            let (ci, column) = &applicable[i];
            let constraint = &problem.constraints[claim][*ci];
            let of = |v: &attributes::Value| match column {
                Some(column) => column.ids.get(v).map_or(0, |&id| counts[g][id as usize]),
                None => groups[g].get(v).copied().unwrap_or(0),
            };
            let best = match constraint.required_values() {
                Some(required) => required.iter().map(of).max().unwrap_or(0),
                None => match column {
                    Some(_) => counts[g].iter().copied().max().unwrap_or(0),
                    None => groups[g].values().copied().max().unwrap_or(0),
                },
            };
            if best < needed {
                return false;
            }
        }
        true
    }

    /// Look-ahead at `All` requests from the current position on: if one of them needs a
    /// device that is already taken for good (in use and not shareable) and nothing before it
    /// can raise an error, it will fail when reached, so the subtree has no solution and no
    /// error. Only `All` requests can raise errors during the search (a constraint that
    /// rejects a required device), and only when a constraint applies to them, so the walk
    /// stops at the first constrained `All` request that is not doomed at its next device.
    fn doomed(&mut self, problem: &Problem<'_>, pos: Pos) -> bool {
        if !problem.clean || problem.claims[pos.claim].max_devices > ALLOCATION_RESULTS_MAX_SIZE {
            return false;
        }
        // Only slots with `All` requests matter (others are skipped): those from here on.
        let first = problem
            .all_slots
            .partition_point(|&slot| slot < (pos.claim, pos.request));
        for &(claim_index, request_index) in &problem.all_slots[first..] {
            self.skips += 1;
            let slot = &problem.claims[claim_index].slots[request_index];
            {
                let current = claim_index == pos.claim && request_index == pos.request;
                let r = match slot {
                    _ if current => Self::req_index(problem, pos),
                    Slot::Plain(r) => *r,
                    Slot::Subs(subs) => {
                        if subs.iter().any(|&r| problem.reqs[r].all) {
                            // Which alternative runs is not known here.
                            return false;
                        }
                        continue;
                    }
                };
                let req = &problem.reqs[r];
                if !req.all {
                    continue;
                }
                if req.admin {
                    return false;
                }
                let constrained = problem.constraints[claim_index]
                    .iter()
                    .any(|c| c.applies(req.parent, req.sub));
                let start = if current { pos.device } else { 0 };
                for &d in req.all_devices.iter().skip(start) {
                    self.skips += 1;
                    if !problem.devs[d].multi && self.in_use(problem, d) {
                        return true;
                    }
                    if constrained {
                        return false;
                    }
                }
            }
        }
        false
    }

    /// Builds the allocation results, as upstream does after a successful search.
    pub(crate) fn results(&self, problem: &Problem<'_>) -> Result<Vec<AllocationResult>, Error> {
        let features = problem.features;
        let mut out = Vec::with_capacity(problem.claims.len());
        let mut share_counter = 0u64;
        for (claim_index, claim) in problem.claims.iter().enumerate() {
            let mut results = Vec::with_capacity(self.picked[claim_index].len());
            for picked in &self.picked[claim_index] {
                let dev = &problem.devs[picked.dev];
                let req = &problem.reqs[picked.req];
                let share_id = picked.consumed.as_ref().map(|_| {
                    share_counter += 1;
                    format!("00000000-0000-4000-8000-{share_counter:012x}")
                });
                results.push(device_result(
                    &features,
                    req.shared_name(),
                    Picks {
                        names: [
                            dev.driver.into(),
                            dev.pool_name.into(),
                            dev.device.name.as_str().into(),
                        ],
                        slice: dev.slice,
                        device: dev.device,
                    },
                    req.admin,
                    req.tolerations,
                    share_id,
                    picked.consumed.as_ref(),
                ));
            }
            let selected: Vec<(&DeviceClass, &str, String)> = self
                .selected_reqs(problem, claim_index)
                .into_iter()
                .map(|r| {
                    let req = &problem.reqs[r];
                    (req.class, req.parent, req.name())
                })
                .collect();
            let config = configs(&selected, claim.claim);
            let node_selector = node_selector(
                self.picked[claim_index].iter().map(|picked| {
                    let dev = &problem.devs[picked.dev];
                    (dev.slice, dev.device)
                }),
                &problem.input.node.metadata.name,
                claim.claim,
            )?;
            out.push(AllocationResult {
                devices: DeviceAllocationResult { results, config },
                node_selector,
                allocation_timestamp: None,
            });
        }
        Ok(out)
    }

    fn selected_reqs(&self, problem: &Problem<'_>, claim: usize) -> Vec<usize> {
        problem.claims[claim]
            .slots
            .iter()
            .enumerate()
            .map(|(i, slot)| match slot {
                Slot::Plain(r) => *r,
                Slot::Subs(subs) => subs[self.selected_sub[claim][i].min(subs.len() - 1)],
            })
            .collect()
    }
}

/// A device as the results name it.
pub(crate) struct Picks<'a> {
    /// The driver, pool and device names as the result holds them (the fast path keeps them
    /// per device in the node view).
    pub names: [SmolStr; 3],
    pub slice: &'a ResourceSlice,
    pub device: &'a Device,
}

/// One device's entry of an allocation result, as upstream builds it (inlined: the entry,
/// some two hundred bytes, is then written where the caller keeps it instead of copied).
#[allow(clippy::too_many_arguments)]
#[inline]
pub(crate) fn device_result(
    features: &Features,
    request: SmolStr,
    dev: Picks<'_>,
    admin: bool,
    tolerations: &[DeviceToleration],
    share_id: Option<String>,
    consumed: Option<&Consumed>,
) -> DeviceRequestAllocationResult {
    let [driver, pool, device] = dev.names;
    let mut result = DeviceRequestAllocationResult {
        request,
        driver,
        pool,
        device,
        admin_access: admin.then_some(true),
        tolerations: copied(tolerations),
        binding_conditions: Vec::new(),
        binding_failure_conditions: Vec::new(),
        share_id,
        consumed_capacity: Default::default(),
        skip_node_operations: Vec::new(),
    };
    if let Some(consumed) = consumed {
        result.consumed_capacity = consumed.clone().into();
    }
    if features.binding_and_status() {
        result.binding_conditions = copied(&dev.device.binding_conditions);
        result.binding_failure_conditions = copied(&dev.device.binding_failure_conditions);
    }
    if features.optional_node_operations {
        result.skip_node_operations = copied(&dev.slice.spec.skip_node_operations);
    }
    result
}

/// A copy of `items`; an empty one without going through the general copy (most results
/// carry no tolerations, binding conditions or configuration, and the general path costs
/// some thirty instructions per empty list).
#[inline]
pub(crate) fn copied<T: Clone>(items: &[T]) -> Vec<T> {
    if items.is_empty() {
        Vec::new()
    } else {
        items.to_vec()
    }
}

/// The configuration of a claim's result: class configs of the selected (sub)requests, given
/// as (class, parent request name, full name), then the claim's own.
pub(crate) fn configs(
    selected: &[(&DeviceClass, &str, String)],
    claim: &ResourceClaim,
) -> Vec<DeviceAllocationConfiguration> {
    let mut config: Vec<DeviceAllocationConfiguration> = Vec::new();
    let mut class_ranges: Vec<(&str, usize, usize)> = Vec::new();
    for (class, _, name) in selected {
        if let Some((_, start, end)) = class_ranges
            .iter()
            .find(|(class_name, _, _)| *class_name == class.metadata.name)
        {
            for entry in &mut config[*start..*end] {
                entry.requests.push(name.clone());
            }
            continue;
        }
        let start = config.len();
        for class_config in &class.spec.config {
            config.push(DeviceAllocationConfiguration {
                source: AllocationConfigSource::FromClass,
                requests: vec![name.clone()],
                opaque: class_config.opaque.clone(),
            });
        }
        class_ranges.push((class.metadata.name.as_str(), start, config.len()));
    }
    // Class configs that cover every request apply to all of them.
    for entry in &mut config {
        if entry.requests.len() == selected.len() {
            entry.requests.clear();
        }
    }
    for claim_config in &claim.spec.devices.config {
        if claim_config.requests.is_empty() {
            config.push(DeviceAllocationConfiguration {
                source: AllocationConfigSource::FromClaim,
                requests: Vec::new(),
                opaque: claim_config.opaque.clone(),
            });
            continue;
        }
        let covered: Vec<bool> = selected
            .iter()
            .map(|(_, parent, name)| {
                claim_config
                    .requests
                    .iter()
                    .any(|requested| requested.as_str() == *parent || requested == name)
            })
            .collect();
        if !covered.iter().any(|&c| c) {
            continue;
        }
        config.push(DeviceAllocationConfiguration {
            source: AllocationConfigSource::FromClaim,
            requests: if covered.iter().all(|&c| c) {
                Vec::new()
            } else {
                claim_config.requests.clone()
            },
            opaque: claim_config.opaque.clone(),
        });
    }
    config
}

/// The node selector of a claim's result, from the devices picked (slice and device).
pub(crate) fn node_selector<'s>(
    picked: impl Iterator<Item = (&'s ResourceSlice, &'s Device)>,
    node: &str,
    claim: &ResourceClaim,
) -> Result<Option<Arc<NodeSelector>>, Error> {
    let mut term = NodeSelectorTerm::default();
    for (slice, device) in picked {
        let (node_name, selector) = if slice.spec.per_device_node_selection == Some(true) {
            (device.node_name.as_deref(), device.node_selector.as_ref())
        } else {
            (
                slice.spec.node_name.as_deref(),
                slice.spec.node_selector.as_ref(),
            )
        };
        if node_name.is_some() || device.binds_to_node == Some(true) {
            return Ok(Some(named_node(node)));
        }
        if let Some(selector) = selector {
            match selector.node_selector_terms.as_slice() {
                [] => {}
                [only] => {
                    add_requirements(&only.match_fields, &mut term.match_fields);
                    add_requirements(&only.match_expressions, &mut term.match_expressions);
                }
                terms => {
                    return Err(Error::NodeSelectorTerms {
                        claim: claim.metadata.name.clone(),
                        terms: terms.len(),
                    });
                }
            }
        }
    }
    if term.match_fields.is_empty() && term.match_expressions.is_empty() {
        return Ok(None);
    }
    Ok(Some(Arc::new(NodeSelector {
        node_selector_terms: vec![term],
    })))
}

/// The node selector of a result that names its node: `metadata.name In [node]`.
pub(crate) fn named_node(node: &str) -> Arc<NodeSelector> {
    Arc::new(NodeSelector {
        node_selector_terms: vec![NodeSelectorTerm {
            match_expressions: Vec::new(),
            match_fields: vec![NodeSelectorRequirement {
                key: "metadata.name".to_string(),
                operator: NodeSelectorOperator::In,
                values: vec![node.to_string()],
            }],
        }],
    })
}

fn add_requirements(from: &[NodeSelectorRequirement], to: &mut Vec<NodeSelectorRequirement>) {
    for requirement in from {
        let values: HashSet<&String> = requirement.values.iter().collect();
        let present = to.iter().any(|existing| {
            existing.key == requirement.key
                && existing.operator == requirement.operator
                && existing.values.iter().collect::<HashSet<_>>() == values
        });
        if !present {
            to.push(requirement.clone());
        }
    }
}

/// Allocates the claims of `problem` once more and reports whether they fit, within `budget`
/// (`Ok(None)` when it runs out, with the steps spent); used by the explanation to test
/// claims on their own.
pub(crate) fn fits(
    problem: &mut Problem<'_>,
    budget: &crate::Budget,
) -> (Result<Option<bool>, Error>, u64) {
    for constraints in &mut problem.constraints {
        for c in constraints.iter_mut() {
            while c.len() > 0 {
                c.remove();
            }
        }
    }
    let mut search = Search::new(problem, budget);
    let result = match search.run(problem, Pos::default()) {
        Ok(found) => Ok(Some(found)),
        Err(Stop::MaxSize | Stop::Hopeless) => Ok(Some(false)),
        Err(Stop::Budget) => Ok(None),
        Err(Stop::Error(err)) => Err(err),
    };
    (result, search.spent())
}

#[cfg(test)]
mod nano_tests {
    use super::*;

    fn q(text: &str) -> Quantity {
        Quantity::parse(text).expect("quantity")
    }

    #[test]
    fn nano_units_are_exact_or_absent() {
        assert_eq!(nano(&q("1")), Some(1_000_000_000));
        assert_eq!(nano(&q("40Gi")), Some(40 * (1i128 << 30) * 1_000_000_000));
        assert_eq!(nano(&q("500m")), Some(500_000_000));
        assert_eq!(nano(&q("1n")), Some(1));
        assert_eq!(nano(&q("0")), Some(0));
        // Quantities keep nothing finer than nano (upstream rounds up on parsing).
        assert_eq!(nano(&q("0.0000000001")), Some(1));
        // Beyond i128 in nano units: no integer form, the search keeps Quantity arithmetic.
        assert_eq!(nano(&q("1e30")), None);
    }
}

#[cfg(test)]
mod group_tests {
    use super::*;
    use crate::Scenario;

    /// Identical claims share their per-call tables: memory grows with the claims and the
    /// devices, not with their product (issue 15: 4,000 claims on 4,000 devices took 650 MB).
    #[test]
    fn identical_requests_share_verdicts_capacity_checks_and_candidates() {
        let mut yaml = String::from(
            "apiVersion: v1\nkind: Node\nmetadata: {name: node-1}\n---\n\
             apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: gpu}\nspec:\n  selectors:\n  - cel: {expression: 'device.driver == \"gpu.example.com\"'}\n---\n\
             apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: s}\nspec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool: {name: p, generation: 1, resourceSliceCount: 1}\n  devices:\n",
        );
        for d in 0..50 {
            yaml.push_str(&format!("  - name: gpu-{d}\n"));
        }
        for c in 0..40 {
            let selector = if c % 2 == 0 {
                "true"
            } else {
                "device.driver != \"x\""
            };
            yaml.push_str(&format!(
                "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{c}, namespace: default}}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu\n        selectors:\n        - cel: {{expression: '{selector}'}}\n"
            ));
        }
        let scenario = Scenario::parse(&yaml).expect("scenario");
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let refs = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &refs);
        let cache = CelCache::default();
        let mut problem = Problem::new(&input, &Features::default(), &cache).expect("problem");
        assert_eq!(problem.reqs.len(), 40);
        // Two selector texts: two selector groups, one capacity group, two candidate groups.
        assert_eq!(problem.verdicts.len(), 2);
        assert_eq!(problem.cap_verdicts.len(), 1);
        assert_eq!(problem.groups.n_candidates, 2);
        for r in 0..40 {
            let candidates = problem.static_candidates(r).expect("clean");
            assert_eq!(candidates.len(), 50);
        }
        assert_eq!(problem.candidates.iter().flatten().count(), 2);
        // Verdicts take two bits per device.
        assert!(problem.verdicts.iter().all(|v| v.0.len() <= 2));
    }
}
