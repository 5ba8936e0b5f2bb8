//! The DRA structured allocator: given a node, device classes, resource slices, claims already
//! allocated and claims to allocate, pick the same devices kube-scheduler picks.
//!
//! Key design decision: one allocator, parameterised by [`Features`], that follows upstream's
//! first-fit backtracking search step by step (pools and slices in lexicographic order, pools
//! with binding conditions last), so that the first solution it finds is upstream's, and errors
//! surface at the same point of the search. On top of that search sit two prunings that never
//! change the answer: a pigeonhole bound per request (fewer usable devices than still needed
//! means the subtree cannot succeed) and a look-ahead at `allocationMode: All` requests (a device
//! such a request needs is already taken for good). Both only cut subtrees that provably contain
//! neither a solution nor an error, which is what keeps unsatisfiable inputs from blowing up
//! exponentially where upstream does. The cost is that the prunings are only enabled when every
//! selector evaluated cleanly up front; otherwise the plain search runs.
//!
//! In front of the search sits a fast path for the common shapes (plain `ExactCount` requests,
//! attribute constraints, simple devices): the same depth-first walk without building the
//! search's per-call state, over what the node view keeps across calls (device layout,
//! selector rows, attribute columns). It answers only when its walk finds the search's first
//! solution without meeting anything it does not model; otherwise the search runs, so
//! answers, errors and explanations are the search's.
//!
//! Before the search explores anything twice, bounds over the whole input (see the `bound`
//! module of the search: a matching of requests to devices, shared counters, consumable
//! capacity, constraints) may prove that no assignment exists; the answer then names the
//! requests and the devices that cannot cover them. Whatever escapes the bounds is cut off by
//! a [`Budget`] of search steps: the call then answers [`Outcome::GaveUp`], never runs long or
//! grows without bound. The search keeps its positions on a stack of its own, so its depth
//! (thousands of claims) never touches the thread's stack.
//!
//! "Does not fit" is an [`Outcome::Unschedulable`] with an [`Explanation`]; [`Error`] is
//! reserved for bad input, as upstream separates `ErrFailedAllocationOnNode` from other errors.
//! The engine is pure: no clocks, no I/O, no globals. Share IDs come from a deterministic
//! counter, so the same input always gives the same output.

#![deny(missing_docs)]

mod attributes;
mod budget;
mod capacity;
mod cel;
mod error;
mod explain;
mod fast;
mod features;
#[doc(hidden)]
pub mod fuzzing;
mod nodes;
mod pools;
mod scenario;
mod search;
mod view;

/// The allocation result type, re-exported for callers that only need to print it.
pub use allot_api::resource::v1::AllocationResult;
pub use budget::Budget;
pub use cel::CelCache;
pub use error::Error;
pub use explain::{
    ClaimExplanation, ConstraintFailure, Explanation, FilterCounts, GaveUp, RequestExplanation,
    Shortfall,
};
pub use features::Features;
pub use scenario::{AllocationOptions, InputRefs, Scenario, display_claim};

use allot_api::core::v1::{Namespace, Node};
use allot_api::resource::v1::{DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice};

/// Everything one allocation call looks at.
#[derive(Debug, Clone, Copy)]
pub struct AllocationInput<'a> {
    /// The node to allocate for.
    pub node: &'a Node,
    /// All device classes.
    pub classes: &'a [DeviceClass],
    /// All resource slices of the cluster (the allocator picks those visible to the node).
    pub slices: &'a [&'a ResourceSlice],
    /// Claims already allocated (their devices are in use); claims without an allocation are
    /// ignored here.
    pub allocated_claims: &'a [&'a ResourceClaim],
    /// The claims to allocate together, in order.
    pub claims: &'a [ResourceClaim],
    /// DeviceTaintRules whose taints apply to matching devices (with `DRADeviceTaints`).
    pub taint_rules: &'a [DeviceTaintRule],
    /// Namespaces, when known: a claim in a listed namespace that is not labelled
    /// `resource.kubernetes.io/admin-access: "true"` may not ask for admin access.
    pub namespaces: &'a [Namespace],
}

/// The answer of [`allocate`].
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Every claim fits; one result per claim, in the order of [`AllocationInput::claims`].
    Allocated(Vec<AllocationResult>),
    /// The claims do not fit on this node, and why.
    Unschedulable(Explanation),
    /// The search spent its [`Budget`] without finding an assignment or proving that none
    /// exists (upstream's filter timeout). Not an error in the input: the same claims may fit
    /// another node, or this one once other claims let go of devices.
    GaveUp(GaveUp),
}

impl Outcome {
    /// Whether all claims were allocated.
    pub fn is_allocated(&self) -> bool {
        matches!(self, Outcome::Allocated(_))
    }
}

/// Allocates devices for `input.claims` on `input.node`, with a fresh CEL cache.
pub fn allocate(input: &AllocationInput<'_>, features: &Features) -> Result<Outcome, Error> {
    allocate_with_cache(input, features, &CelCache::default())
}

/// Allocates devices for `input.claims` on `input.node`, reusing compiled CEL expressions from
/// `cache` (as kube-scheduler keeps one CEL cache across scheduling cycles), within the
/// default [`Budget`].
pub fn allocate_with_cache(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
) -> Result<Outcome, Error> {
    allocate_within(input, features, cache, &Budget::default())
}

/// [`allocate_with_cache`] within `budget`.
pub fn allocate_within(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
    budget: &Budget,
) -> Result<Outcome, Error> {
    if let Some(results) = fast::allocate(input, features, cache) {
        return Ok(Outcome::Allocated(results));
    }
    search::run(input, features, cache, true, budget)
}

/// The fast path's answer alone (see the `fast` module): `Some` when it settles the call,
/// which must then be the search's answer; for tests that check it against the search.
#[doc(hidden)]
pub fn allocate_fast_path_only(
    input: &AllocationInput<'_>,
    features: &Features,
    cache: &CelCache,
) -> Option<Vec<AllocationResult>> {
    fast::allocate(input, features, cache)
}

/// The same search without the prunings and without a budget, exactly as upstream walks
/// it; for tests that check the prunings never change an answer. Exponential on adversarial
/// inputs.
#[doc(hidden)]
pub fn allocate_without_pruning(
    input: &AllocationInput<'_>,
    features: &Features,
) -> Result<Outcome, Error> {
    search::run(
        input,
        features,
        &CelCache::default(),
        false,
        &Budget::unlimited(),
    )
}

/// [`allocate_without_pruning`] within `budget`: `GaveUp` when upstream's exhaustive walk
/// would take longer (for tests over generated inputs).
#[doc(hidden)]
pub fn allocate_without_pruning_within(
    input: &AllocationInput<'_>,
    features: &Features,
    budget: &Budget,
) -> Result<Outcome, Error> {
    search::run(input, features, &CelCache::default(), false, budget)
}
