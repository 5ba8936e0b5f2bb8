//! The hint merge (upstream `policy.go` and the four policies' `Merge`).
//!
//! Upstream enumerates every combination of one hint per resource, which is exponential in the
//! number of resources. This module gets the same answer by folding resources one at a time into
//! the set of distinct partial merges. A partial merge that is still preferred is fully described
//! by the one non-nil mask all its hints shared (or none yet); a non-preferred one only by the AND
//! of its masks. So the set never holds more than about three times the number of distinct masks,
//! whatever the number of resources. The best candidate is then chosen with upstream's comparison,
//! which is a total order (shown in [`HintMerger::compare`]), so the enumeration order does not
//! matter.

use std::collections::BTreeSet;

use crate::{NumaInfo, NumaMask, Policy, PolicyOptions, ProviderHints, TopologyHint};

/// Merges the providers' hints under `policy` and decides admission, as the kubelet's
/// `Policy.Merge`: returns the best hint and whether the pod (or container) may be admitted.
///
/// - none: `({any, not preferred}, true)` without looking at the hints.
/// - best-effort: the best merged hint; always admits.
/// - restricted: the best merged hint; admits only a preferred one.
/// - single-numa-node: merges only preferred hints that are "any node" or name one node; a
///   result covering every node is reported as "any node"; admits only a preferred one.
pub fn merge(
    policy: Policy,
    options: &PolicyOptions,
    numa: &NumaInfo,
    providers_hints: &[ProviderHints],
) -> (TopologyHint, bool) {
    if policy == Policy::None {
        return (TopologyHint::default(), true);
    }
    if let Some(decision) = merge_in_one_word(policy, options, numa, providers_hints) {
        return decision;
    }
    match policy {
        Policy::None => (TopologyHint::default(), true),
        Policy::BestEffort => {
            let factors = filter_providers_hints(providers_hints);
            let best = HintMerger::new(numa, &factors, policy, options).merge();
            (best, true)
        }
        Policy::Restricted => {
            let factors = filter_providers_hints(providers_hints);
            let best = HintMerger::new(numa, &factors, policy, options).merge();
            let admit = best.preferred;
            (best, admit)
        }
        Policy::SingleNumaNode => {
            let factors = filter_single_numa_hints(filter_providers_hints(providers_hints));
            let mut best = HintMerger::new(numa, &factors, policy, options).merge();
            if best.affinity.as_ref() == Some(numa.default_mask()) {
                best.affinity = None;
            }
            let admit = best.preferred;
            (best, admit)
        }
    }
}

/// Turns provider answers into merge factors, one hint list per resource (upstream
/// `filterProvidersHints`): a provider without hints becomes one `{any, preferred}` factor, a
/// resource with no preference `{any, preferred}`, a resource with no possible affinity
/// `{any, not preferred}`.
pub fn filter_providers_hints(providers_hints: &[ProviderHints]) -> Vec<Vec<TopologyHint>> {
    let mut factors = Vec::new();
    for hints in providers_hints {
        if hints.is_empty() {
            factors.push(vec![TopologyHint::any(true)]);
            continue;
        }
        for resource_hints in hints.values() {
            match resource_hints {
                None => factors.push(vec![TopologyHint::any(true)]),
                Some(list) if list.is_empty() => factors.push(vec![TopologyHint::any(false)]),
                Some(list) => factors.push(list.clone()),
            }
        }
    }
    factors
}

/// Keeps only preferred hints that are "any node" or name exactly one node (upstream
/// `filterSingleNumaHints`). A factor may become empty, which leaves nothing to merge.
fn filter_single_numa_hints(factors: Vec<Vec<TopologyHint>>) -> Vec<Vec<TopologyHint>> {
    factors
        .into_iter()
        .map(|hints| {
            hints
                .into_iter()
                .filter(|h| h.preferred && h.affinity.as_ref().is_none_or(|mask| mask.count() == 1))
                .collect()
        })
        .collect()
}

/// A partial merge of some factors.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Partial {
    /// Every hint so far was preferred and every non-nil mask was this one (or there was none).
    Preferred(Option<NumaMask>),
    /// Some hint was not preferred or two masks differed: the AND of the default mask and all
    /// masks so far.
    NotPreferred(NumaMask),
}

impl Partial {
    fn anded(&self, default: &NumaMask) -> NumaMask {
        match self {
            Partial::Preferred(None) => default.clone(),
            Partial::Preferred(Some(mask)) => default.and(mask),
            Partial::NotPreferred(mask) => mask.clone(),
        }
    }

    fn extend(&self, hint: &TopologyHint, default: &NumaMask) -> Partial {
        if let (Partial::Preferred(common), true) = (self, hint.preferred) {
            match (common, &hint.affinity) {
                (_, None) => return self.clone(),
                (None, Some(mask)) => return Partial::Preferred(Some(mask.clone())),
                (Some(c), Some(mask)) if c == mask => return self.clone(),
                _ => {}
            }
        }
        let anded = self.anded(default);
        let next = match &hint.affinity {
            Some(mask) => anded.and(mask),
            None => anded,
        };
        Partial::NotPreferred(next)
    }

    fn into_hint(self, default: &NumaMask) -> TopologyHint {
        let preferred = matches!(self, Partial::Preferred(_));
        TopologyHint::new(self.anded(default), preferred)
    }
}

/// A partial merge over machine words: preferred with no mask yet, preferred with the shared
/// raw mask, or not preferred with the AND (restricted to the machine's nodes) so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WordPartial {
    Any,
    Shared(u64),
    Anded(u64),
}

/// The resource-by-resource fold of [`HintMerger::candidates`] over machine words. Shared raw
/// masks are indexed, ANDs are packed into `n` bits (`n` NUMA nodes, at most 16), and both
/// sets are dense bitmaps, so each step is a constant-time insert without allocation. `None`
/// when the machine has more than 16 NUMA nodes.
fn fold_words(default: u64, factors: &mut [Vec<(Option<u64>, bool)>]) -> Option<Vec<WordPartial>> {
    let positions: Vec<u32> = (0..64).filter(|b| default & (1u64 << b) != 0).collect();
    let n = positions.len();
    if n > 16 {
        return None;
    }
    let pack = |mask: u64| -> u32 {
        positions
            .iter()
            .enumerate()
            .filter(|(_, b)| mask & (1u64 << **b) != 0)
            .fold(0u32, |acc, (i, _)| acc | (1 << i))
    };
    let unpack = |packed: u32| -> u64 {
        positions
            .iter()
            .enumerate()
            .filter(|(i, _)| packed & (1 << i) != 0)
            .fold(0u64, |acc, (_, b)| acc | (1u64 << b))
    };
    let full: u32 = if n == 0 { 0 } else { u32::MAX >> (32 - n) };
    let mut raws: Vec<u64> = Vec::new();
    let mut indexed: Vec<Vec<(Option<usize>, u32, bool)>> = Vec::with_capacity(factors.len());
    for hints in factors.iter_mut() {
        hints.sort_unstable();
        hints.dedup();
        let mut words = Vec::with_capacity(hints.len());
        for &(mask, preferred) in hints.iter() {
            words.push(match mask {
                Some(raw) => {
                    let index = match raws.iter().position(|&r| r == raw) {
                        Some(i) => i,
                        None => {
                            raws.push(raw);
                            raws.len() - 1
                        }
                    };
                    (Some(index), pack(raw), preferred)
                }
                None => (None, full, preferred),
            });
        }
        indexed.push(words);
    }
    let packed_raw: Vec<u32> = raws.iter().map(|&r| pack(r)).collect();
    let mut any = true;
    let mut shared: Vec<usize> = Vec::new();
    let mut anded: Vec<u32> = Vec::new();
    let mut shared_seen = vec![false; raws.len()];
    let mut anded_seen = vec![false; 1usize << n];
    for hints in &indexed {
        let was_any = std::mem::replace(&mut any, false);
        let was_shared = std::mem::take(&mut shared);
        let was_anded = std::mem::take(&mut anded);
        shared_seen.iter_mut().for_each(|s| *s = false);
        anded_seen.iter_mut().for_each(|s| *s = false);
        let mut add_shared = |i: usize, shared: &mut Vec<usize>| {
            if !shared_seen[i] {
                shared_seen[i] = true;
                shared.push(i);
            }
        };
        let mut add_anded = |c: u32, anded: &mut Vec<u32>| {
            if !anded_seen[c as usize] {
                anded_seen[c as usize] = true;
                anded.push(c);
            }
        };
        for &(raw, packed, preferred) in hints {
            if was_any {
                match (preferred, raw) {
                    (true, None) => any = true,
                    (true, Some(i)) => add_shared(i, &mut shared),
                    (false, _) => add_anded(packed, &mut anded),
                }
            }
            for &s in &was_shared {
                match (preferred, raw) {
                    (true, None) => add_shared(s, &mut shared),
                    (true, Some(i)) if i == s => add_shared(s, &mut shared),
                    _ => add_anded(packed_raw[s] & packed, &mut anded),
                }
            }
            for &c in &was_anded {
                add_anded(c & packed, &mut anded);
            }
        }
        if !any && shared.is_empty() && anded.is_empty() {
            break;
        }
    }
    let mut out = Vec::with_capacity(usize::from(any) + shared.len() + anded.len());
    if any {
        out.push(WordPartial::Any);
    }
    out.extend(shared.into_iter().map(|i| WordPartial::Shared(raws[i])));
    out.extend(anded.into_iter().map(|c| WordPartial::Anded(unpack(c))));
    Some(out)
}

/// [`merge`] on machine words straight from the providers' answers, without copying hints:
/// the path every machine with at most 16 NUMA nodes, all below id 64, takes. `None` sends the
/// caller to the general path.
fn merge_in_one_word(
    policy: Policy,
    options: &PolicyOptions,
    numa: &NumaInfo,
    providers_hints: &[ProviderHints],
) -> Option<(TopologyHint, bool)> {
    let default = numa.default_mask().as_u64()?;
    let single = policy == Policy::SingleNumaNode;
    let mut factors: Vec<Vec<(Option<u64>, bool)>> = Vec::new();
    for hints in providers_hints {
        if hints.is_empty() {
            factors.push(vec![(None, true)]);
            continue;
        }
        for resource_hints in hints.values() {
            match resource_hints {
                None => factors.push(vec![(None, true)]),
                Some(list) if list.is_empty() => factors.push(vec![(None, false)]),
                Some(list) => {
                    let mut words = Vec::with_capacity(list.len());
                    for h in list {
                        let mask = match &h.affinity {
                            Some(m) => Some(m.as_u64()?),
                            None => None,
                        };
                        words.push((mask, h.preferred));
                    }
                    factors.push(words);
                }
            }
        }
    }
    if single {
        for words in &mut factors {
            words
                .retain(|&(mask, preferred)| preferred && mask.is_none_or(|m| m.count_ones() == 1));
        }
    }
    let best_non_preferred_count = factors
        .iter()
        .filter_map(|words| {
            words
                .iter()
                .filter_map(|(mask, _)| mask.map(|m| m.count_ones() as usize))
                .min()
        })
        .max()
        .unwrap_or(0);
    let found = fold_words(default, &mut factors)?;
    let merger = HintMerger {
        numa,
        factors: &[],
        closest: !single && options.prefer_closest_numa,
        best_non_preferred_count,
    };
    let mut best: Option<TopologyHint> = None;
    for partial in found {
        let candidate = match partial {
            WordPartial::Any => TopologyHint::new(NumaMask::from_u64(default), true),
            WordPartial::Shared(raw) => TopologyHint::new(NumaMask::from_u64(default & raw), true),
            WordPartial::Anded(mask) => TopologyHint::new(NumaMask::from_u64(mask), false),
        };
        best = merger.compare(best, candidate);
    }
    let mut best = best.unwrap_or_else(|| TopologyHint::new(NumaMask::from_u64(default), false));
    if single && best.affinity.as_ref() == Some(numa.default_mask()) {
        best.affinity = None;
    }
    let admit = policy == Policy::BestEffort || best.preferred;
    Some((best, admit))
}

/// Upstream's `HintMerger`: picks the best of all merged hint combinations.
struct HintMerger<'a> {
    numa: &'a NumaInfo,
    factors: &'a [Vec<TopologyHint>],
    /// Order equally wide masks by NUMA distance (prefer-closest-numa-nodes, not with
    /// single-numa-node).
    closest: bool,
    /// Upstream's `BestNonPreferredAffinityCount`: the largest, over factors, of the node count
    /// of the factor's narrowest non-nil hint.
    best_non_preferred_count: usize,
}

impl<'a> HintMerger<'a> {
    fn new(
        numa: &'a NumaInfo,
        factors: &'a [Vec<TopologyHint>],
        policy: Policy,
        options: &PolicyOptions,
    ) -> Self {
        let best_non_preferred_count = factors
            .iter()
            .filter_map(|hints| {
                hints
                    .iter()
                    .filter_map(|h| h.affinity.as_ref())
                    .map(NumaMask::count)
                    .min()
            })
            .max()
            .unwrap_or(0);
        Self {
            numa,
            factors,
            closest: policy != Policy::SingleNumaNode && options.prefer_closest_numa,
            best_non_preferred_count,
        }
    }

    /// Every distinct merged hint over all combinations of one hint per factor.
    fn candidates(&self) -> BTreeSet<Partial> {
        let default = self.numa.default_mask();
        let mut partials = BTreeSet::from([Partial::Preferred(None)]);
        for hints in self.factors {
            let distinct: BTreeSet<&TopologyHint> = hints.iter().collect();
            let mut next = BTreeSet::new();
            for partial in &partials {
                for hint in &distinct {
                    next.insert(partial.extend(hint, default));
                }
            }
            partials = next;
            if partials.is_empty() {
                break;
            }
        }
        partials
    }

    fn merge(&self) -> TopologyHint {
        let default = self.numa.default_mask();
        let mut best: Option<TopologyHint> = None;
        for partial in self.candidates() {
            let candidate = partial.into_hint(default);
            best = self.compare(best, candidate);
        }
        best.unwrap_or_else(|| TopologyHint::new(default.clone(), false))
    }

    /// Upstream's mask comparison: keep `current` unless `candidate` is strictly better by
    /// narrowness (node count, then numeric value), or with prefer-closest by closeness (node
    /// count, then average distance, then numeric value). Both are total orders.
    fn mask_better(&self, current: &NumaMask, candidate: &NumaMask) -> bool {
        if current == candidate {
            return false;
        }
        let order = if self.closest {
            self.numa.closeness_cmp(candidate, current)
        } else {
            candidate.narrowness_cmp(current)
        };
        order == std::cmp::Ordering::Less
    }

    /// Upstream's `HintMerger.compare`. Written out, it ranks candidates by a total order:
    /// preferred before not preferred; among preferred, the better mask; among not preferred
    /// with target count `B`, masks of exactly `B` nodes first, then masks with fewer than `B`
    /// nodes (more nodes first), then masks with more than `B` nodes (fewer first), ties broken
    /// by the better mask. Empty masks are never chosen.
    fn compare(
        &self,
        current: Option<TopologyHint>,
        candidate: TopologyHint,
    ) -> Option<TopologyHint> {
        let Some(candidate_mask) = candidate.affinity.as_ref() else {
            return current;
        };
        if candidate_mask.is_empty() {
            return current;
        }
        let Some(current) = current else {
            return Some(candidate);
        };
        let Some(current_mask) = current.affinity.as_ref() else {
            return Some(candidate);
        };
        let take = match (current.preferred, candidate.preferred) {
            (false, true) => true,
            (true, false) => false,
            (true, true) => self.mask_better(current_mask, candidate_mask),
            (false, false) => {
                let target = self.best_non_preferred_count;
                let cur = current_mask.count();
                let cand = candidate_mask.count();
                if cur > target {
                    self.mask_better(current_mask, candidate_mask)
                } else if cur == target {
                    cand == target && self.mask_better(current_mask, candidate_mask)
                } else if cand > target {
                    false
                } else if cand == target || cand > cur {
                    true
                } else if cand < cur {
                    false
                } else {
                    self.mask_better(current_mask, candidate_mask)
                }
            }
        };
        Some(if take { candidate } else { current })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Upstream's merge written literally: every permutation in nested-loop order, merged and
    /// compared one by one. The reference for the property test below.
    fn reference_merge(
        policy: Policy,
        options: &PolicyOptions,
        numa: &NumaInfo,
        providers: &[ProviderHints],
    ) -> (TopologyHint, bool) {
        if policy == Policy::None {
            return (TopologyHint::default(), true);
        }
        let mut factors = filter_providers_hints(providers);
        if policy == Policy::SingleNumaNode {
            factors = filter_single_numa_hints(factors);
        }
        let merger = HintMerger::new(numa, &factors, policy, options);
        let default = numa.default_mask().clone();
        let mut best = None;
        let mut idx = vec![0usize; factors.len()];
        let any_empty = factors.iter().any(Vec::is_empty);
        if !any_empty {
            loop {
                let mut preferred = true;
                let mut first: Option<&NumaMask> = None;
                let mut merged = default.clone();
                for (f, &i) in factors.iter().zip(&idx) {
                    let hint = &f[i];
                    if let Some(mask) = &hint.affinity {
                        match first {
                            None => first = Some(mask),
                            Some(m) if m != mask => preferred = false,
                            _ => {}
                        }
                        merged = merged.and(mask);
                    }
                    if !hint.preferred {
                        preferred = false;
                    }
                }
                best = merger.compare(best, TopologyHint::new(merged, preferred));
                // Advance the odometer, last factor fastest.
                let mut pos = factors.len();
                loop {
                    if pos == 0 {
                        break;
                    }
                    pos -= 1;
                    idx[pos] += 1;
                    if idx[pos] < factors[pos].len() {
                        break;
                    }
                    idx[pos] = 0;
                    if pos == 0 {
                        pos = usize::MAX;
                        break;
                    }
                }
                if pos == usize::MAX || factors.is_empty() {
                    break;
                }
            }
        }
        let mut best = best.unwrap_or_else(|| TopologyHint::new(default.clone(), false));
        if policy == Policy::SingleNumaNode && best.affinity.as_ref() == Some(&default) {
            best.affinity = None;
        }
        let admit = policy == Policy::BestEffort || best.preferred;
        (best, admit)
    }

    fn hint_strategy(nodes: usize, offset: usize) -> impl Strategy<Value = TopologyHint> {
        (
            proptest::option::weighted(0.85, proptest::collection::vec(0..nodes, 0..=nodes)),
            any::<bool>(),
        )
            .prop_map(move |(ids, preferred)| TopologyHint {
                affinity: ids.map(|ids| NumaMask::from_ids(ids.into_iter().map(|i| i + offset))),
                preferred,
            })
    }

    fn providers_strategy(
        nodes: usize,
        offset: usize,
    ) -> impl Strategy<Value = Vec<ProviderHints>> {
        let resource = proptest::option::weighted(
            0.85,
            proptest::collection::vec(hint_strategy(nodes, offset), 0..4),
        );
        let provider = proptest::collection::btree_map("[a-c]", resource, 0..3);
        proptest::collection::vec(provider, 0..4)
    }

    /// Policy, prefer-closest, node count, id offset (62 puts ids across the 64-bit word
    /// boundary, exercising the general path), providers, distance rows.
    #[allow(clippy::type_complexity)]
    fn setup() -> impl Strategy<
        Value = (
            Policy,
            bool,
            usize,
            usize,
            Vec<ProviderHints>,
            Vec<Vec<u64>>,
        ),
    > {
        (1usize..6, prop_oneof![Just(0usize), Just(62usize)]).prop_flat_map(|(nodes, offset)| {
            (
                prop_oneof![
                    Just(Policy::BestEffort),
                    Just(Policy::Restricted),
                    Just(Policy::SingleNumaNode)
                ],
                any::<bool>(),
                Just(nodes),
                Just(offset),
                providers_strategy(nodes, offset),
                proptest::collection::vec(
                    proptest::collection::vec(10u64..40, nodes + offset),
                    nodes,
                ),
            )
        })
    }

    proptest! {
        #[test]
        fn folded_merge_equals_upstream_enumeration(
            (policy, closest, nodes, offset, providers, rows) in setup()
        ) {
            let options = PolicyOptions { prefer_closest_numa: closest, ..PolicyOptions::default() };
            let distances = rows.into_iter().enumerate().map(|(i, row)| (i + offset, row)).collect();
            let ids: Vec<usize> = (offset..offset + nodes).collect();
            let numa = NumaInfo::new(&ids, Some(&distances), &options).expect("valid");
            prop_assert_eq!(
                merge(policy, &options, &numa, &providers),
                reference_merge(policy, &options, &numa, &providers)
            );
        }

        #[test]
        fn merge_is_deterministic_and_within_the_machine(
            (policy, _closest, nodes, offset, providers, _rows) in setup()
        ) {
            let options = PolicyOptions::default();
            let ids: Vec<usize> = (offset..offset + nodes).collect();
            let numa = NumaInfo::new(&ids, None, &options).expect("valid");
            let first = merge(policy, &options, &numa, &providers);
            prop_assert_eq!(&first, &merge(policy, &options, &numa, &providers));
            if let Some(mask) = &first.0.affinity {
                prop_assert!(!mask.is_empty());
                prop_assert!(mask.is_subset_of(numa.default_mask()));
            }
        }
    }

    #[test]
    fn none_policy_ignores_hints() {
        let numa = NumaInfo::new(&[0, 1], None, &PolicyOptions::default()).expect("valid");
        let providers = vec![ProviderHints::from([("cpu".to_string(), Some(vec![]))])];
        assert_eq!(
            merge(Policy::None, &PolicyOptions::default(), &numa, &providers),
            (TopologyHint::default(), true)
        );
    }

    #[test]
    fn no_providers_gives_any_node_preferred() {
        let numa = NumaInfo::new(&[0, 1], None, &PolicyOptions::default()).expect("valid");
        let (hint, admit) = merge(Policy::Restricted, &PolicyOptions::default(), &numa, &[]);
        assert_eq!(hint, TopologyHint::new(NumaMask::from_ids([0, 1]), true));
        assert!(admit);
        let (hint, admit) = merge(
            Policy::SingleNumaNode,
            &PolicyOptions::default(),
            &numa,
            &[],
        );
        assert_eq!(hint, TopologyHint::any(true));
        assert!(admit);
    }

    #[test]
    fn many_resources_on_many_nodes_stay_fast() {
        // 96 NUMA nodes (beyond upstream's 64-bit mask) and 12 resources of 96 single-node
        // hints each: 96^12 permutations for upstream's enumeration, a few thousand here.
        let ids: Vec<usize> = (0..96).collect();
        let numa = NumaInfo::new(&ids, None, &PolicyOptions::default()).expect("valid");
        let hints: Vec<TopologyHint> = ids
            .iter()
            .map(|&i| TopologyHint::new(NumaMask::from_ids([i]), true))
            .collect();
        let provider: ProviderHints = (0..12)
            .map(|r| (format!("r{r:02}"), Some(hints.clone())))
            .collect();
        let (hint, admit) = merge(
            Policy::Restricted,
            &PolicyOptions::default(),
            &numa,
            &[provider],
        );
        assert_eq!(hint, TopologyHint::new(NumaMask::from_ids([0]), true));
        assert!(admit);
    }
}
