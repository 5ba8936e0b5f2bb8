//! `CpuSet`: a set of CPU ids stored as a bitset over `u64` words.
//!
//! The set has no fixed upper size: it grows to the highest id it holds, and the word vector is
//! kept trimmed (no trailing zero words) so that derived equality and hashing compare contents.
//! The same type also holds sets of other small ids (cores, sockets, NUMA nodes), as upstream's
//! `cpuset.CPUSet` does. Up to 128 ids live inline (no heap allocation) while the type stays the
//! size of a `Vec`, so set arithmetic on common machines allocates nothing.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use smallvec::SmallVec;

use crate::TopologyError;

/// The highest id a `CpuSet` accepts from text: Linux supports at most 8192 CPUs, so this leaves
/// ample room while keeping one parsed range from allocating unbounded memory.
pub const MAX_CPU_ID: u32 = (1 << 20) - 1;

/// A set of CPU ids (or other small ids) with the Linux list format ("0-3,8") as its text form.
#[derive(Default, PartialEq, Eq, Hash)]
pub struct CpuSet {
    // Invariant: no trailing zero words, so derived equality and hashing compare contents.
    words: SmallVec<[u64; 2]>,
}

impl Clone for CpuSet {
    fn clone(&self) -> Self {
        // A plain copy of the words (the derived clone goes through an iterator).
        CpuSet {
            words: SmallVec::from_slice(&self.words),
        }
    }
}

impl CpuSet {
    /// The empty set.
    pub const fn new() -> Self {
        CpuSet {
            words: SmallVec::new_const(),
        }
    }

    /// A set holding the given ids.
    pub fn from_ids<I: IntoIterator<Item = u32>>(ids: I) -> Self {
        let mut set = CpuSet::new();
        for id in ids {
            set.insert(id);
        }
        set
    }

    /// The ids `lo..=hi`.
    pub fn from_range(lo: u32, hi: u32) -> Self {
        let mut set = CpuSet::new();
        set.insert_range(lo, hi);
        set
    }

    /// Parses the Linux list format: comma-separated ids and inclusive ranges `a-b`, in any order,
    /// possibly overlapping; the empty string (or only whitespace) is the empty set.
    pub fn parse(text: &str) -> Result<Self, TopologyError> {
        let mut set = CpuSet::new();
        let trimmed = text.trim();
        if trimmed.is_empty() {
            return Ok(set);
        }
        for part in trimmed.split(',') {
            let part = part.trim();
            let bad = || TopologyError::CpuList {
                input: text.to_string(),
                reason: format!("invalid element {part:?}"),
            };
            let parse_id = |s: &str| -> Result<u32, TopologyError> {
                let id: u32 = s.trim().parse().map_err(|_| bad())?;
                if id > MAX_CPU_ID {
                    return Err(TopologyError::CpuList {
                        input: text.to_string(),
                        reason: format!("id {id} exceeds the maximum {MAX_CPU_ID}"),
                    });
                }
                Ok(id)
            };
            match part.split_once('-') {
                Some((lo, hi)) => {
                    let (lo, hi) = (parse_id(lo)?, parse_id(hi)?);
                    if lo > hi {
                        return Err(TopologyError::CpuList {
                            input: text.to_string(),
                            reason: format!("range {part:?} is reversed"),
                        });
                    }
                    set.insert_range(lo, hi);
                }
                None => set.insert(parse_id(part)?),
            }
        }
        Ok(set)
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    fn ensure_word(&mut self, word: usize) {
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
    }

    /// Adds one id.
    pub fn insert(&mut self, id: u32) {
        let (w, b) = ((id / 64) as usize, id % 64);
        self.ensure_word(w);
        self.words[w] |= 1u64 << b;
    }

    /// Adds the ids `lo..=hi` (nothing when `lo > hi`).
    pub fn insert_range(&mut self, lo: u32, hi: u32) {
        if lo > hi {
            return;
        }
        self.ensure_word((hi / 64) as usize);
        for w in (lo / 64)..=(hi / 64) {
            let start = if w == lo / 64 { lo % 64 } else { 0 };
            let end = if w == hi / 64 { hi % 64 } else { 63 };
            let width = end - start + 1;
            let mask = if width == 64 {
                u64::MAX
            } else {
                ((1u64 << width) - 1) << start
            };
            self.words[w as usize] |= mask;
        }
    }

    /// Removes one id.
    pub fn remove(&mut self, id: u32) {
        let (w, b) = ((id / 64) as usize, id % 64);
        if let Some(word) = self.words.get_mut(w) {
            *word &= !(1u64 << b);
            self.trim();
        }
    }

    /// Whether the set holds `id`.
    pub fn contains(&self, id: u32) -> bool {
        let (w, b) = ((id / 64) as usize, id % 64);
        self.words
            .get(w)
            .is_some_and(|word| word & (1u64 << b) != 0)
    }

    /// The number of ids in the set.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The ids in ascending order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            words: &self.words,
            index: 0,
            current: self.words.first().copied().unwrap_or(0),
        }
    }

    /// The ids in ascending order, collected.
    pub fn to_vec(&self) -> Vec<u32> {
        self.iter().collect()
    }

    /// The smallest id, if any.
    pub fn first(&self) -> Option<u32> {
        self.iter().next()
    }

    /// The ids in either set.
    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.union_with(other);
        out
    }

    /// The ids in both sets.
    pub fn intersection(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.intersect_with(other);
        out
    }

    /// The ids in `self` but not in `other`.
    pub fn difference(&self, other: &CpuSet) -> CpuSet {
        let mut out = self.clone();
        out.difference_with(other);
        out
    }

    /// Adds every id of `other`, in place.
    pub fn union_with(&mut self, other: &CpuSet) {
        if self.words.len() < other.words.len() {
            self.words.resize(other.words.len(), 0);
        }
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// Keeps only ids also in `other`, in place.
    pub fn intersect_with(&mut self, other: &CpuSet) {
        self.words.truncate(other.words.len());
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= b;
        }
        self.trim();
    }

    /// Removes every id of `other`, in place.
    pub fn difference_with(&mut self, other: &CpuSet) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a &= !b;
        }
        self.trim();
    }

    /// `|self ∩ other|`, without allocating.
    pub fn intersection_len(&self, other: &CpuSet) -> usize {
        self.words
            .iter()
            .zip(&other.words)
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum()
    }

    /// The ids in both sets, ascending, without allocating.
    pub fn iter_intersection<'a>(&'a self, other: &'a CpuSet) -> impl Iterator<Item = u32> + 'a {
        self.words
            .iter()
            .zip(&other.words)
            .enumerate()
            .flat_map(|(i, (a, b))| {
                let mut word = a & b;
                std::iter::from_fn(move || {
                    if word == 0 {
                        return None;
                    }
                    let bit = word.trailing_zeros();
                    word &= word - 1;
                    Some(i as u32 * 64 + bit)
                })
            })
    }

    /// Whether the sets share an id, without allocating.
    pub fn intersects(&self, other: &CpuSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }

    /// Whether every id of `self` is in `other`.
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, a)| a & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Whether every id of `other` is in `self`.
    pub fn is_superset(&self, other: &CpuSet) -> bool {
        other.is_subset(self)
    }
}

/// Ascending iterator over the ids of a `CpuSet`.
pub struct Iter<'a> {
    words: &'a [u64],
    index: usize,
    current: u64,
}

impl Iterator for Iter<'_> {
    type Item = u32;

    fn next(&mut self) -> Option<u32> {
        loop {
            if self.current != 0 {
                let bit = self.current.trailing_zeros();
                self.current &= self.current - 1;
                return Some(self.index as u32 * 64 + bit);
            }
            self.index += 1;
            self.current = *self.words.get(self.index)?;
        }
    }
}

impl<'a> IntoIterator for &'a CpuSet {
    type Item = u32;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

impl FromIterator<u32> for CpuSet {
    fn from_iter<I: IntoIterator<Item = u32>>(iter: I) -> Self {
        CpuSet::from_ids(iter)
    }
}

impl fmt::Display for CpuSet {
    /// The canonical Linux list format: ascending, maximal ranges, "" for the empty set.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut iter = self.iter().peekable();
        let mut first = true;
        while let Some(lo) = iter.next() {
            let mut hi = lo;
            while iter.peek() == Some(&(hi + 1)) {
                hi += 1;
                iter.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if lo == hi {
                write!(f, "{lo}")?;
            } else {
                write!(f, "{lo}-{hi}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet({self})")
    }
}

impl FromStr for CpuSet {
    type Err = TopologyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse(s)
    }
}

impl Serialize for CpuSet {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for CpuSet {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        CpuSet::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn parses_and_formats_list_format() {
        let cases = [
            ("", ""),
            ("0", "0"),
            ("0-3,8", "0-3,8"),
            ("3,1-2", "1-3"),
            (" 5 , 0-1 ", "0-1,5"),
            ("63-65", "63-65"),
            ("0-127,1-2", "0-127"),
            ("1,3,5", "1,3,5"),
        ];
        for (input, want) in cases {
            assert_eq!(
                CpuSet::parse(input).unwrap().to_string(),
                want,
                "input {input:?}"
            );
        }
    }

    #[test]
    fn rejects_bad_input() {
        for input in ["a", "1-", "-1", "3-1", "1,,2", "1-2-3", "99999999"] {
            assert!(CpuSet::parse(input).is_err(), "input {input:?}");
        }
    }

    #[test]
    fn set_operations() {
        let a = CpuSet::parse("0-7").unwrap();
        let b = CpuSet::parse("4-11").unwrap();
        assert_eq!(a.union(&b).to_string(), "0-11");
        assert_eq!(a.intersection(&b).to_string(), "4-7");
        assert_eq!(a.difference(&b).to_string(), "0-3");
        assert_eq!(a.intersection_len(&b), 4);
        assert!(CpuSet::parse("4-5").unwrap().is_subset(&a));
        assert!(!b.is_subset(&a));
        assert_eq!(a.difference(&a), CpuSet::new());
        assert!(a.difference(&a).is_empty());
        let big = CpuSet::parse("200").unwrap();
        assert_eq!(big.intersection(&a), CpuSet::new());
        assert!(!big.is_subset(&a));
        assert!(CpuSet::new().is_subset(&a));
    }

    #[test]
    fn serde_as_list_string() {
        let set = CpuSet::parse("3,0-1").unwrap();
        assert_eq!(serde_json::to_string(&set).unwrap(), "\"0-1,3\"");
        let back: CpuSet = serde_json::from_str("\"0-1,3\"").unwrap();
        assert_eq!(back, set);
        assert!(serde_json::from_str::<CpuSet>("\"x\"").is_err());
    }

    proptest! {
        #[test]
        fn behaves_like_btreeset(a in proptest::collection::vec(0u32..300, 0..60),
                                 b in proptest::collection::vec(0u32..300, 0..60)) {
            let (sa, sb) = (CpuSet::from_ids(a.clone()), CpuSet::from_ids(b.clone()));
            let (ta, tb): (BTreeSet<u32>, BTreeSet<u32>) = (a.into_iter().collect(), b.into_iter().collect());
            prop_assert_eq!(sa.to_vec(), ta.iter().copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.union(&sb).to_vec(), ta.union(&tb).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.intersection(&sb).to_vec(), ta.intersection(&tb).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.difference(&sb).to_vec(), ta.difference(&tb).copied().collect::<Vec<_>>());
            prop_assert_eq!(sa.is_subset(&sb), ta.is_subset(&tb));
            prop_assert_eq!(sa.intersects(&sb), !ta.is_disjoint(&tb));
            prop_assert_eq!(sa.len(), ta.len());
            prop_assert_eq!(sa.iter_intersection(&sb).collect::<Vec<_>>(), sa.intersection(&sb).to_vec());
            prop_assert_eq!(CpuSet::parse(&sa.to_string()).unwrap(), sa.clone());
        }
    }
}
