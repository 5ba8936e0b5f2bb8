//! The static policy's CPU pick: upstream's `cpuAccumulator`, `takeByTopologyNUMAPacked` and
//! `takeByTopologyNUMADistributed` (pkg/kubelet/cm/cpumanager/cpu_assignment.go at commit
//! 08715a58e5cd59e77f7a9543522cc50e3e9c4c79), rewritten over bitsets.
//!
//! The orderings are upstream's, spelled out:
//! - "NUMA first" when the topology declares at least as many sockets as NUMA nodes, else
//!   "sockets first". The first level is sorted by (free CPUs, id); each lower level is listed
//!   parent by parent in the parent's order, and within a parent sorted by (free CPUs of the
//!   whole child, id). A child that spans two parents is listed under both, as upstream lists it.
//! - Packed CPU order: cores in core order, each core's free CPUs ascending. Spread order:
//!   sockets in socket order, each socket's free CPUs ascending.
//!
//! Upstream quirks reproduced on purpose so that answers stay identical:
//! - `take` subtracts the size of the set given even when some of it was already taken.
//! - In the distributed algorithm the chosen NUMA combination and remainder subset are Go slices
//!   that share a backing array with later combinations (`append` into spare capacity), so the
//!   combination used can differ from the one scored best. This is emulated exactly
//!   ([`GoSlices`]) for combinations of up to 256 NUMA nodes.
//!
//! Where upstream would panic or loop forever, this returns instead: `cpus_per_core() == 0`
//! skips the partial-uncore step (upstream divides by zero); a remainder that can never be
//! handed out skips that subset while scoring (upstream loops forever) and ends the final
//! hand-out with upstream's accounting error.

use std::cell::RefCell;
use std::fmt;
use std::str::FromStr;

use allot_topology::{CpuSet, CpuTopology, Level};
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

/// A list of dense indices (sockets, NUMA nodes, cores, uncore caches) in pick order; inline up
/// to 16 entries so ordering a small machine allocates nothing.
type Indices = SmallVec<[usize; 16]>;

/// How CPUs are ordered inside a socket (upstream's `CPUSortingStrategy`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuSortingStrategy {
    /// Fill a core's threads before moving to the next core (the default).
    #[default]
    Packed,
    /// Spread over cores first (static policy option distribute-cpus-across-cores).
    Spread,
}

impl fmt::Display for CpuSortingStrategy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CpuSortingStrategy::Packed => "packed",
            CpuSortingStrategy::Spread => "spread",
        })
    }
}

impl FromStr for CpuSortingStrategy {
    type Err = TakeError;

    fn from_str(s: &str) -> Result<Self, TakeError> {
        match s {
            "packed" => Ok(CpuSortingStrategy::Packed),
            "spread" => Ok(CpuSortingStrategy::Spread),
            other => Err(TakeError::UnknownSortingStrategy {
                value: other.to_string(),
            }),
        }
    }
}

/// Why no CPU set was picked. The messages are upstream's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TakeError {
    /// Fewer usable CPUs are available than requested.
    #[error(
        "not enough cpus available to satisfy request: requested={requested}, available={available}"
    )]
    NotEnoughCpus {
        /// CPUs requested.
        requested: usize,
        /// Size of the available set given.
        available: usize,
    },
    /// The accumulator ran out of candidates (e.g. a set given outside the topology).
    #[error("failed to allocate cpus")]
    FailedToAllocate,
    /// The distributed algorithm handed out fewer CPUs than requested.
    #[error("accounting error, not enough CPUs allocated, remaining: {remaining}")]
    AccountingNotEnough {
        /// CPUs still needed.
        remaining: i64,
    },
    /// The distributed algorithm handed out more CPUs than requested.
    #[error("accounting error, too many CPUs allocated, remaining: {remaining}")]
    AccountingTooMany {
        /// CPUs still needed (negative).
        remaining: i64,
    },
    /// `cpu_group_size` must be at least 1.
    #[error("invalid cpu group size {group_size}: must be at least 1")]
    InvalidGroupSize {
        /// The group size given.
        group_size: usize,
    },
    /// A sorting strategy name other than `packed` or `spread`.
    #[error("unknown cpu sorting strategy {value:?} (expected packed or spread)")]
    UnknownSortingStrategy {
        /// The name given.
        value: String,
    },
}

/// Upstream's `cpuAccumulator`: the free CPUs, the CPUs taken so far and how many are still
/// needed, with the orderings the pick is built from.
#[derive(Clone, Debug)]
pub struct CpuAccumulator<'t> {
    topo: &'t CpuTopology,
    free: CpuSet,
    result: CpuSet,
    needed: i64,
    numa_first: bool,
    sort: CpuSortingStrategy,
    // The NUMA node and socket orders depend only on `free`; they are remembered until the next
    // `take` because every step of a pick asks for them again.
    numa_order: RefCell<Option<Indices>>,
    socket_order: RefCell<Option<Indices>>,
}

/// Sorts dense indices by (free CPUs in their mask, index), ascending; index order is id order.
fn sort_by_free(ids: &mut [usize], masks: &[CpuSet], free: &CpuSet) {
    if ids.len() <= 4 {
        ids.sort_unstable_by_key(|&i| (free.intersection_len(&masks[i]), i));
        return;
    }
    // Longer lists: compute each key once rather than once per comparison.
    let mut keyed: Vec<(usize, usize)> = ids
        .iter()
        .map(|&i| (free.intersection_len(&masks[i]), i))
        .collect();
    keyed.sort_unstable();
    for (slot, (_, i)) in ids.iter_mut().zip(keyed) {
        *slot = i;
    }
}

impl<'t> CpuAccumulator<'t> {
    /// A new accumulator over `available ∩ topology CPUs`, needing `num_cpus`.
    pub fn new(
        topo: &'t CpuTopology,
        available: &CpuSet,
        num_cpus: usize,
        sort: CpuSortingStrategy,
    ) -> Self {
        let counts = topo.counts();
        CpuAccumulator {
            topo,
            free: available.intersection(topo.cpus()),
            result: CpuSet::new(),
            needed: i64::try_from(num_cpus).unwrap_or(i64::MAX),
            numa_first: counts.num_sockets >= counts.num_numa_nodes,
            sort,
            numa_order: RefCell::new(None),
            socket_order: RefCell::new(None),
        }
    }

    /// The CPUs taken so far.
    pub fn result(&self) -> &CpuSet {
        &self.result
    }

    /// The CPUs still free.
    pub fn free(&self) -> &CpuSet {
        &self.free
    }

    /// How many CPUs are still needed (negative when too many were taken).
    pub fn num_cpus_needed(&self) -> i64 {
        self.needed
    }

    /// Whether all needed CPUs were taken.
    pub fn is_satisfied(&self) -> bool {
        self.needed < 1
    }

    /// Whether fewer CPUs are free than still needed.
    pub fn is_failed(&self) -> bool {
        self.needed > self.free.len() as i64
    }

    /// Takes `cpus`: adds them to the result, removes them from the free set and subtracts their
    /// number from the need (all of them, as upstream does).
    pub fn take(&mut self, cpus: &CpuSet) {
        self.result.union_with(cpus);
        self.free.difference_with(cpus);
        self.needed -= cpus.len() as i64;
        *self.numa_order.get_mut() = None;
        *self.socket_order.get_mut() = None;
    }

    fn level_with_free(&self, masks: &[CpuSet]) -> Indices {
        let mut ids = Indices::new();
        for (i, mask) in masks.iter().enumerate() {
            if mask.intersects(&self.free) {
                ids.push(i);
            }
        }
        sort_by_free(&mut ids, masks, &self.free);
        ids
    }

    /// Children of each parent in `parents` order, each group sorted by free CPUs.
    fn children_in_order(
        &self,
        parents: &[usize],
        relation: &[Vec<(usize, CpuSet)>],
        child_masks: &[CpuSet],
    ) -> Indices {
        let mut out = Indices::new();
        for &p in parents {
            let start = out.len();
            for (c, pair) in &relation[p] {
                if pair.intersects(&self.free) {
                    out.push(*c);
                }
            }
            sort_by_free(&mut out[start..], child_masks, &self.free);
        }
        out
    }

    fn sorted_numa_indices(&self) -> Indices {
        if let Some(order) = self.numa_order.borrow().as_ref() {
            return Indices::from_slice(order);
        }
        let numas = self.topo.numa_level().masks();
        let order = if self.numa_first {
            self.level_with_free(numas)
        } else {
            let sockets = self.sorted_socket_indices();
            self.children_in_order(&sockets, self.topo.numas_of_socket(), numas)
        };
        *self.numa_order.borrow_mut() = Some(Indices::from_slice(&order));
        order
    }

    fn sorted_socket_indices(&self) -> Indices {
        if let Some(order) = self.socket_order.borrow().as_ref() {
            return Indices::from_slice(order);
        }
        let sockets = self.topo.socket_level().masks();
        let order = if self.numa_first {
            let numas = self.sorted_numa_indices();
            self.children_in_order(&numas, self.topo.sockets_of_numa(), sockets)
        } else {
            self.level_with_free(sockets)
        };
        *self.socket_order.borrow_mut() = Some(Indices::from_slice(&order));
        order
    }

    fn sorted_core_indices(&self) -> Indices {
        let cores = self.topo.core_level().masks();
        if self.numa_first {
            let sockets = self.sorted_socket_indices();
            self.children_in_order(&sockets, self.topo.cores_of_socket(), cores)
        } else {
            let numas = self.sorted_numa_indices();
            self.children_in_order(&numas, self.topo.cores_of_numa(), cores)
        }
    }

    fn sorted_uncore_indices(&self) -> Indices {
        let numas = self.sorted_numa_indices();
        self.children_in_order(
            &numas,
            self.topo.uncores_of_numa(),
            self.topo.uncore_level().masks(),
        )
    }

    fn sorted_cpus(&self) -> Vec<u32> {
        let mut out = Vec::with_capacity(self.free.len());
        match self.sort {
            CpuSortingStrategy::Packed => {
                let cores = self.topo.core_level().masks();
                for c in self.sorted_core_indices() {
                    out.extend(cores[c].iter_intersection(&self.free));
                }
            }
            CpuSortingStrategy::Spread => {
                let sockets = self.topo.socket_level().masks();
                for s in self.sorted_socket_indices() {
                    out.extend(sockets[s].iter_intersection(&self.free));
                }
            }
        }
        out
    }

    fn fully_free(&self, mut indices: Indices, masks: &[CpuSet]) -> Indices {
        indices.retain(|i| masks[*i].is_subset(&self.free));
        indices
    }

    /// Free CPUs in the order the strategy takes single CPUs (upstream's `freeCPUs`).
    pub fn free_cpus(&self) -> Vec<u32> {
        self.sorted_cpus()
    }

    /// Ids of fully free cores, in upstream's core order (`freeCores`).
    pub fn free_cores(&self) -> Vec<u32> {
        let level = self.topo.core_level();
        self.fully_free(self.sorted_core_indices(), level.masks())
            .into_iter()
            .map(|i| level.id(i))
            .collect()
    }

    /// Ids of fully free sockets, in upstream's socket order (`freeSockets`).
    pub fn free_sockets(&self) -> Vec<u32> {
        let level = self.topo.socket_level();
        self.fully_free(self.sorted_socket_indices(), level.masks())
            .into_iter()
            .map(|i| level.id(i))
            .collect()
    }

    /// Ids of fully free NUMA nodes, in upstream's NUMA order (`freeNUMANodes`).
    pub fn free_numa_nodes(&self) -> Vec<u32> {
        let level = self.topo.numa_level();
        self.fully_free(self.sorted_numa_indices(), level.masks())
            .into_iter()
            .map(|i| level.id(i))
            .collect()
    }

    /// Ids of fully free uncore caches, in upstream's order (`freeUncoreCache`).
    pub fn free_uncore_caches(&self) -> Vec<u32> {
        let level = self.topo.uncore_level();
        self.fully_free(self.sorted_uncore_indices(), level.masks())
            .into_iter()
            .map(|i| level.id(i))
            .collect()
    }

    /// Takes every unit (in the given order) that was fully free when the walk started and that
    /// the need still covers whole. The free set is snapshotted first, as upstream lists the
    /// free units before taking any.
    fn take_full(&mut self, order: Indices, level: &Level) {
        let free_before = self.free.clone();
        for i in order {
            if !level.mask(i).is_subset(&free_before) {
                continue;
            }
            if self.needed >= level.size(i) as i64 {
                self.take(level.mask(i));
            }
        }
    }

    fn take_full_numa_nodes(&mut self) {
        let order = self.sorted_numa_indices();
        self.take_full(order, self.topo.numa_level());
    }

    fn take_full_sockets(&mut self) {
        let order = self.sorted_socket_indices();
        self.take_full(order, self.topo.socket_level());
    }

    fn take_full_uncore(&mut self) {
        let order = self.sorted_uncore_indices();
        self.take_full(order, self.topo.uncore_level());
    }

    fn take_full_cores(&mut self) {
        let order = self.sorted_core_indices();
        self.take_full(order, self.topo.core_level());
    }

    fn take_full_first_level(&mut self) {
        if self.numa_first {
            self.take_full_numa_nodes()
        } else {
            self.take_full_sockets()
        }
    }

    fn take_full_second_level(&mut self) {
        if self.numa_first {
            self.take_full_sockets()
        } else {
            self.take_full_numa_nodes()
        }
    }

    fn take_partial_uncore(&mut self, uncore: usize) {
        let per_core = self.topo.cpus_per_core() as i64;
        if per_core == 0 {
            return;
        }
        let cores_needed = ((self.needed + per_core - 1) / per_core).max(0) as usize;
        // Cores (ascending id) with a free CPU in this uncore cache, the first `cores_needed`.
        let in_uncore = self
            .topo
            .uncore_level()
            .mask(uncore)
            .intersection(&self.free);
        let core_level = self.topo.core_level();
        let mut cpus = CpuSet::new();
        let mut taken_cores = 0;
        for mask in core_level.masks() {
            if taken_cores == cores_needed {
                break;
            }
            if mask.intersects(&in_uncore) {
                cpus.union_with(&mask.intersection(&self.free));
                taken_cores += 1;
            }
        }
        if self.needed % 2 != 0 && per_core > 1 && cpus.len() as i64 > self.needed {
            // Odd request with SMT: drop the highest CPU, keeping whole cores where possible.
            if let Some(last) = cpus.iter().last() {
                cpus.remove(last);
            }
        }
        if self.needed == cpus.len() as i64 {
            self.take(&cpus);
        }
    }

    fn take_uncore_cache(&mut self) {
        for uncore in self.sorted_uncore_indices() {
            let size = self.topo.uncore_level().mask(uncore).len() as i64;
            if self.needed >= size {
                self.take_full_uncore();
            }
            if self.is_satisfied() {
                return;
            }
            self.take_partial_uncore(uncore);
            if self.is_satisfied() {
                return;
            }
        }
    }

    fn take_remaining_cpus(&mut self) {
        let mut one = CpuSet::new();
        for cpu in self.sorted_cpus() {
            one.insert(cpu);
            self.take(&one);
            one.remove(cpu);
            if self.is_satisfied() {
                return;
            }
        }
    }

    /// Upstream's `rangeNUMANodesNeededToSatisfy`: the least and most NUMA nodes that could hold
    /// the request in groups of `group` CPUs (topology-wide counts, not declared ones).
    fn range_numa_nodes_needed(&self, group: i64) -> (usize, usize) {
        let num_numas = self.topo.numa_level().len() as i64;
        let available_numas = self
            .topo
            .numa_level()
            .masks()
            .iter()
            .filter(|m| m.intersects(&self.free))
            .count();
        let num_cpus = self.topo.cpus().len() as i64;
        let groups = (num_cpus - 1) / group + 1;
        let groups_per_numa = (groups - 1).checked_div(num_numas).unwrap_or(0) + 1;
        let groups_needed = (self.needed - 1) / group + 1;
        let min = (groups_needed - 1) / groups_per_numa + 1;
        let max = groups_needed.min(available_numas as i64);
        (min.max(0) as usize, max.max(0) as usize)
    }
}

/// The static policy's default CPU pick (upstream's `takeByTopologyNUMAPacked`): whole NUMA
/// nodes / sockets, then (optionally) uncore caches, then whole cores, then single CPUs.
pub fn take_by_topology_numa_packed(
    topo: &CpuTopology,
    available: &CpuSet,
    num_cpus: usize,
    sort: CpuSortingStrategy,
    prefer_align_by_uncore_cache: bool,
) -> Result<CpuSet, TakeError> {
    let mut acc = CpuAccumulator::new(topo, available, num_cpus, sort);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(TakeError::NotEnoughCpus {
            requested: num_cpus,
            available: available.len(),
        });
    }
    acc.take_full_first_level();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    acc.take_full_second_level();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if prefer_align_by_uncore_cache {
        acc.take_uncore_cache();
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    if sort != CpuSortingStrategy::Spread {
        acc.take_full_cores();
        if acc.is_satisfied() {
            return Ok(acc.result);
        }
    }
    acc.take_remaining_cpus();
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    Err(TakeError::FailedToAllocate)
}

/// Control flow of a combination walk.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Control {
    Continue,
    Break,
}

/// A Go slice header over a [`GoSlices`] arena.
#[derive(Clone, Copy, Debug)]
struct GoSlice {
    buf: usize,
    len: usize,
    cap: usize,
}

/// Emulates Go's `append` aliasing: appending to a slice with spare capacity writes into the
/// shared backing array; appending to a full one copies into a new array of Go's grown capacity.
#[derive(Default)]
struct GoSlices {
    bufs: Vec<Vec<usize>>,
}

impl GoSlices {
    const EMPTY: GoSlice = GoSlice {
        buf: usize::MAX,
        len: 0,
        cap: 0,
    };

    fn append(&mut self, s: GoSlice, v: usize) -> GoSlice {
        if s.len < s.cap {
            self.bufs[s.buf][s.len] = v;
            return GoSlice {
                len: s.len + 1,
                ..s
            };
        }
        // Go's growslice for small slices: double (from 0 to 1); beyond 256 elements grow by
        // about 1.25x (size-class rounding there is not emulated).
        let cap = if s.cap == 0 {
            1
        } else if s.cap < 256 {
            s.cap * 2
        } else {
            s.cap + (s.cap + 3 * 256) / 4
        };
        let mut buf = vec![0; cap];
        if s.len > 0 {
            buf[..s.len].copy_from_slice(&self.bufs[s.buf][..s.len]);
        }
        buf[s.len] = v;
        self.bufs.push(buf);
        GoSlice {
            buf: self.bufs.len() - 1,
            len: s.len + 1,
            cap,
        }
    }

    fn get(&self, s: GoSlice) -> Vec<usize> {
        if s.len == 0 {
            Vec::new()
        } else {
            self.bufs[s.buf][..s.len].to_vec()
        }
    }

    /// Upstream's `iterateCombinations`: every k-subset of `n` in lexicographic index order.
    fn iterate(
        &mut self,
        n: &[usize],
        k: usize,
        f: &mut dyn FnMut(&mut GoSlices, GoSlice) -> Control,
    ) {
        if k < 1 {
            return;
        }
        self.helper(n, k, 0, Self::EMPTY, f);
    }

    fn helper(
        &mut self,
        n: &[usize],
        k: usize,
        start: usize,
        accum: GoSlice,
        f: &mut dyn FnMut(&mut GoSlices, GoSlice) -> Control,
    ) -> Control {
        if k == 0 {
            return f(self, accum);
        }
        let mut i = start;
        while i + k <= n.len() {
            let next = self.append(accum, n[i]);
            if self.helper(n, k - 1, i + 1, next, f) == Control::Break {
                return Control::Break;
            }
            i += 1;
        }
        Control::Continue
    }
}

/// Upstream's rounded mean and standard deviation (3 decimals), over values in NUMA-id order.
fn standard_deviation(xs: &[i64]) -> f64 {
    let n = xs.len() as f64;
    let m = (xs.iter().map(|&x| x as f64).sum::<f64>() / n * 1000.0).round() / 1000.0;
    let s = xs
        .iter()
        .map(|&x| (x as f64 - m) * (x as f64 - m))
        .sum::<f64>();
    ((s / n).sqrt() * 1000.0).round() / 1000.0
}

/// Per-NUMA free counts keyed by dense index, present only for NUMA nodes in the walk
/// (upstream's `mapIntInt`).
#[derive(Clone)]
struct NumaCounts {
    values: Vec<Option<i64>>,
}

impl NumaCounts {
    fn get(&self, numa: usize) -> i64 {
        self.values[numa].unwrap_or(0)
    }

    fn sub(&mut self, numa: usize, v: i64) {
        self.values[numa] = Some(self.get(numa) - v);
    }

    fn all(&self) -> Vec<i64> {
        self.values.iter().flatten().copied().collect()
    }
}

/// The distribute-cpus-across-numa pick (upstream's `takeByTopologyNUMADistributed`): spread the
/// request evenly, in groups of `cpu_group_size` CPUs, over the fewest NUMA nodes that allow it,
/// choosing the combination that leaves the free CPUs most balanced. `align_by_socket` prefers
/// combinations within one socket (option align-by-socket).
pub fn take_by_topology_numa_distributed(
    topo: &CpuTopology,
    available: &CpuSet,
    num_cpus: usize,
    cpu_group_size: usize,
    sort: CpuSortingStrategy,
    align_by_socket: bool,
) -> Result<CpuSet, TakeError> {
    if cpu_group_size == 0 {
        return Err(TakeError::InvalidGroupSize {
            group_size: cpu_group_size,
        });
    }
    if !num_cpus.is_multiple_of(cpu_group_size) {
        return take_by_topology_numa_packed(topo, available, num_cpus, sort, false);
    }
    let mut acc = CpuAccumulator::new(topo, available, num_cpus, sort);
    if acc.is_satisfied() {
        return Ok(acc.result);
    }
    if acc.is_failed() {
        return Err(TakeError::NotEnoughCpus {
            requested: num_cpus,
            available: available.len(),
        });
    }
    let group = cpu_group_size as i64;
    let want = num_cpus as i64;
    let numa_level = topo.numa_level();
    let numas = acc.sorted_numa_indices();
    let (min_numas, max_numas) = acc.range_numa_nodes_needed(group);

    for k in min_numas..=max_numas {
        // Free CPUs per NUMA node are fixed while combinations are scored.
        let free_in: Vec<i64> = numa_level
            .masks()
            .iter()
            .map(|m| m.intersection_len(&acc.free) as i64)
            .collect();
        let mut initial = NumaCounts {
            values: vec![None; numa_level.len()],
        };
        for &n in &numas {
            initial.values[n] = Some(free_in[n]);
        }

        let mut arena = GoSlices::default();
        let mut best_balance = f64::MAX;
        let mut best_remainder: Option<GoSlice> = None;
        let mut best_combo: Option<GoSlice> = None;
        let mut best_in_one_socket = false;

        arena.iterate(
            &numas,
            k,
            &mut |arena: &mut GoSlices, combo_ref: GoSlice| {
                if best_balance == 0.0 && (!align_by_socket || best_in_one_socket) {
                    return Control::Break;
                }
                let combo = arena.get(combo_ref);
                let mut union = CpuSet::new();
                for &n in &combo {
                    union.union_with(numa_level.mask(n));
                }
                if (union.intersection_len(&acc.free) as i64) < want {
                    return Control::Continue;
                }
                let groups: i64 = combo.iter().map(|&n| free_in[n] / group).sum();
                if groups * group < want {
                    return Control::Continue;
                }
                let mut distribution = want / combo.len() as i64 / group * group;
                if align_by_socket {
                    for &n in &combo {
                        distribution = distribution.min(free_in[n] / group * group);
                    }
                }
                if combo.iter().any(|&n| free_in[n] < distribution) {
                    return Control::Continue;
                }
                let mut after = initial.clone();
                for &n in &combo {
                    after.sub(n, distribution);
                }
                let remainder = want - distribution * combo.len() as i64;
                let remainder_combo: Vec<usize> = combo
                    .iter()
                    .copied()
                    .filter(|&n| after.get(n) >= group)
                    .collect();

                let mut best_local_balance = f64::MAX;
                let mut best_local_remainder: Option<GoSlice> = None;
                if remainder == 0 {
                    best_local_balance = standard_deviation(&after.all());
                }
                let mut k2 = remainder_combo.len();
                while remainder > 0 && k2 >= 1 {
                    arena.iterate(
                        &remainder_combo,
                        k2,
                        &mut |arena: &mut GoSlices, subset_ref: GoSlice| {
                            let subset = arena.get(subset_ref);
                            let mut rem = remainder;
                            let mut local = after.clone();
                            if subset.iter().map(|&n| local.get(n)).sum::<i64>() < rem {
                                return Control::Continue;
                            }
                            while rem > 0 {
                                let before = rem;
                                for &n in &subset {
                                    if rem == 0 {
                                        break;
                                    }
                                    if local.get(n) < group {
                                        continue;
                                    }
                                    local.sub(n, group);
                                    rem -= group;
                                }
                                if rem == before {
                                    // Upstream loops forever here; treat the subset as unusable.
                                    return Control::Continue;
                                }
                            }
                            let balance = standard_deviation(&local.all());
                            if balance < best_local_balance {
                                best_local_balance = balance;
                                best_local_remainder = Some(subset_ref);
                            }
                            Control::Continue
                        },
                    );
                    k2 -= 1;
                }

                let ids: Vec<u32> = combo.iter().map(|&n| numa_level.id(n)).collect();
                let in_same_socket = align_by_socket && topo.are_numa_nodes_in_same_socket(&ids);
                let mut is_better = best_local_balance < best_balance;
                if align_by_socket && in_same_socket != best_in_one_socket {
                    is_better = in_same_socket;
                }
                if is_better {
                    best_balance = best_local_balance;
                    best_remainder = best_local_remainder;
                    best_combo = Some(combo_ref);
                    if align_by_socket {
                        best_in_one_socket = in_same_socket;
                    }
                }
                Control::Continue
            },
        );

        let Some(best_combo) = best_combo else {
            continue;
        };
        let combo = arena.get(best_combo);
        if combo.is_empty() {
            continue;
        }
        let free_now = |acc: &CpuAccumulator<'_>, n: usize| {
            numa_level.mask(n).intersection_len(&acc.free) as i64
        };
        let mut distribution = want / combo.len() as i64 / group * group;
        for &n in &combo {
            distribution = distribution.min(free_now(&acc, n) / group * group);
        }
        for &n in &combo {
            let pool = numa_level.mask(n).intersection(&acc.free);
            let cpus = take_by_topology_numa_packed(
                topo,
                &pool,
                distribution.max(0) as usize,
                sort,
                false,
            )
            .unwrap_or_default();
            acc.take(&cpus);
        }
        let mut remainder = want - distribution * combo.len() as i64;
        let remainder_list = best_remainder.map(|r| arena.get(r)).unwrap_or_default();
        while remainder > 0 {
            let before = remainder;
            for &n in &remainder_list {
                if remainder == 0 {
                    break;
                }
                if free_now(&acc, n) < group {
                    continue;
                }
                let pool = numa_level.mask(n).intersection(&acc.free);
                let cpus = take_by_topology_numa_packed(topo, &pool, cpu_group_size, sort, false)
                    .unwrap_or_default();
                acc.take(&cpus);
                remainder -= group;
            }
            if remainder == before {
                // Upstream loops forever here; report its accounting error instead.
                break;
            }
        }
        if acc.needed > 0 {
            return Err(TakeError::AccountingNotEnough {
                remaining: acc.needed,
            });
        }
        if acc.needed < 0 {
            return Err(TakeError::AccountingTooMany {
                remaining: acc.needed,
            });
        }
        return Ok(acc.result);
    }

    take_by_topology_numa_packed(topo, available, num_cpus, sort, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_append_aliasing_is_emulated() {
        // Combinations of 4 from 5: the 4th element shares a backing array among siblings.
        let mut arena = GoSlices::default();
        let mut kept = None;
        let mut seen = Vec::new();
        arena.iterate(
            &[0, 1, 2, 3, 4],
            4,
            &mut |arena: &mut GoSlices, s: GoSlice| {
                seen.push(arena.get(s));
                if kept.is_none() {
                    kept = Some(s);
                }
                Control::Continue
            },
        );
        assert_eq!(seen.len(), 5);
        assert_eq!(seen[0], vec![0, 1, 2, 3]);
        // The first combination [0,1,2,3] was overwritten by its sibling [0,1,2,4].
        assert_eq!(arena.get(kept.unwrap()), vec![0, 1, 2, 4]);

        // Combinations of 3 each get their own array.
        let mut arena = GoSlices::default();
        let mut kept = None;
        arena.iterate(&[0, 1, 2, 3], 3, &mut |_: &mut GoSlices, s: GoSlice| {
            kept.get_or_insert(s);
            Control::Continue
        });
        assert_eq!(arena.get(kept.unwrap()), vec![0, 1, 2]);
    }

    #[test]
    fn standard_deviation_rounds_like_upstream() {
        assert_eq!(standard_deviation(&[1, 2, 3, 4]), 1.118);
        assert_eq!(standard_deviation(&[5, 5]), 0.0);
    }

    #[test]
    fn sorting_strategy_names() {
        assert_eq!(
            "spread".parse::<CpuSortingStrategy>().unwrap(),
            CpuSortingStrategy::Spread
        );
        assert!("x".parse::<CpuSortingStrategy>().is_err());
    }
}
