//! `NumaMask`: a growable set of NUMA node ids with upstream's bitmask ordering.

use std::cmp::Ordering;
use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A set of NUMA node ids, stored as a growable bitset.
///
/// Upstream stores NUMA affinity in a `uint64`, which caps machines at 64 nodes; this mask has no
/// such limit. It keeps upstream's semantics otherwise: masks compare as the unsigned integer whose
/// bit `i` is node `i` ([`NumaMask::is_less_than`]), and one mask is narrower than another when it
/// names fewer nodes, or as many nodes with a smaller numeric value ([`NumaMask::is_narrower_than`]).
///
/// Invariant: `words` has no trailing zero word, so derived equality and hashing are set equality.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct NumaMask {
    words: Vec<u64>,
}

impl NumaMask {
    /// The empty mask.
    pub fn new() -> Self {
        Self::default()
    }

    /// A mask holding exactly the given node ids (duplicates are ignored).
    pub fn from_ids<I: IntoIterator<Item = usize>>(ids: I) -> Self {
        let mut mask = Self::new();
        for id in ids {
            mask.insert(id);
        }
        mask
    }

    /// Adds node `id` to the mask.
    pub fn insert(&mut self, id: usize) {
        let word = id / 64;
        if self.words.len() <= word {
            self.words.resize(word + 1, 0);
        }
        self.words[word] |= 1u64 << (id % 64);
    }

    /// Removes node `id` from the mask.
    pub fn remove(&mut self, id: usize) {
        let word = id / 64;
        if let Some(w) = self.words.get_mut(word) {
            *w &= !(1u64 << (id % 64));
        }
        self.trim();
    }

    /// Whether node `id` is in the mask.
    pub fn contains(&self, id: usize) -> bool {
        self.words
            .get(id / 64)
            .is_some_and(|w| w & (1u64 << (id % 64)) != 0)
    }

    /// Whether no node is in the mask.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The number of nodes in the mask.
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// The node ids in the mask, ascending.
    pub fn ids(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(i * 64 + bit)
            })
        })
    }

    /// The intersection of `self` and `other`.
    pub fn and(&self, other: &NumaMask) -> NumaMask {
        let mut words: Vec<u64> = self
            .words
            .iter()
            .zip(other.words.iter())
            .map(|(a, b)| a & b)
            .collect();
        while words.last() == Some(&0) {
            words.pop();
        }
        NumaMask { words }
    }

    /// The union of `self` and `other`.
    pub fn or(&self, other: &NumaMask) -> NumaMask {
        let len = self.words.len().max(other.words.len());
        let words = (0..len)
            .map(|i| {
                self.words.get(i).copied().unwrap_or(0) | other.words.get(i).copied().unwrap_or(0)
            })
            .collect();
        NumaMask { words }
    }

    /// Whether every node of `self` is in `other`.
    pub fn is_subset_of(&self, other: &NumaMask) -> bool {
        self.words
            .iter()
            .enumerate()
            .all(|(i, w)| w & !other.words.get(i).copied().unwrap_or(0) == 0)
    }

    /// Compares the masks as unsigned integers (bit `i` = node `i`), as upstream's `bitMask` does.
    pub fn numeric_cmp(&self, other: &NumaMask) -> Ordering {
        self.words.len().cmp(&other.words.len()).then_with(|| {
            for (a, b) in self.words.iter().rev().zip(other.words.iter().rev()) {
                match a.cmp(b) {
                    Ordering::Equal => continue,
                    unequal => return unequal,
                }
            }
            Ordering::Equal
        })
    }

    /// Upstream's `IsLessThan`: the numerically smaller mask, i.e. the one with more
    /// lower-numbered nodes.
    pub fn is_less_than(&self, other: &NumaMask) -> bool {
        self.numeric_cmp(other) == Ordering::Less
    }

    /// Upstream's `IsNarrowerThan`: fewer nodes, or as many nodes and numerically smaller.
    pub fn is_narrower_than(&self, other: &NumaMask) -> bool {
        self.narrowness_cmp(other) == Ordering::Less
    }

    /// The total order behind [`NumaMask::is_narrower_than`]: node count, then numeric value.
    pub fn narrowness_cmp(&self, other: &NumaMask) -> Ordering {
        self.count()
            .cmp(&other.count())
            .then_with(|| self.numeric_cmp(other))
    }

    /// The mask as one machine word, when every node id is below 64.
    pub(crate) fn as_u64(&self) -> Option<u64> {
        match self.words.as_slice() {
            [] => Some(0),
            [w] => Some(*w),
            _ => None,
        }
    }

    /// The mask of the set bits of `bits`.
    pub(crate) fn from_u64(bits: u64) -> Self {
        if bits == 0 {
            Self::new()
        } else {
            Self { words: vec![bits] }
        }
    }

    fn trim(&mut self) {
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }
}

impl Ord for NumaMask {
    /// Masks are ordered by narrowness (node count, then numeric value), a total order.
    fn cmp(&self, other: &Self) -> Ordering {
        self.narrowness_cmp(other)
    }
}

impl PartialOrd for NumaMask {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Debug for NumaMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.ids()).finish()
    }
}

impl fmt::Display for NumaMask {
    /// Node ids joined by commas, e.g. `0,2`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for id in self.ids() {
            if !first {
                f.write_str(",")?;
            }
            first = false;
            write!(f, "{id}")?;
        }
        Ok(())
    }
}

impl FromIterator<usize> for NumaMask {
    fn from_iter<T: IntoIterator<Item = usize>>(iter: T) -> Self {
        Self::from_ids(iter)
    }
}

impl Serialize for NumaMask {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.ids())
    }
}

impl<'de> Deserialize<'de> for NumaMask {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let ids = Vec::<usize>::deserialize(deserializer)?;
        Ok(Self::from_ids(ids))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(ids: &[usize]) -> NumaMask {
        NumaMask::from_ids(ids.iter().copied())
    }

    #[test]
    fn count_ids_and_membership_beyond_64_nodes() {
        let mask = m(&[0, 63, 64, 130]);
        assert_eq!(mask.count(), 4);
        assert_eq!(mask.ids().collect::<Vec<_>>(), vec![0, 63, 64, 130]);
        assert!(mask.contains(130));
        assert!(!mask.contains(129));
        assert_eq!(mask.to_string(), "0,63,64,130");
    }

    #[test]
    fn remove_trims_so_equality_is_set_equality() {
        let mut mask = m(&[1, 200]);
        mask.remove(200);
        assert_eq!(mask, m(&[1]));
        mask.remove(1);
        assert!(mask.is_empty());
        assert_eq!(mask, NumaMask::new());
    }

    #[test]
    fn and_or_subset() {
        assert_eq!(m(&[0, 1, 70]).and(&m(&[1, 70, 71])), m(&[1, 70]));
        assert_eq!(m(&[0, 70]).and(&m(&[1])), NumaMask::new());
        assert_eq!(m(&[0]).or(&m(&[100])), m(&[0, 100]));
        assert!(m(&[1, 100]).is_subset_of(&m(&[0, 1, 100])));
        assert!(!m(&[1, 101]).is_subset_of(&m(&[0, 1, 100])));
    }

    #[test]
    fn narrower_means_fewer_nodes_then_lower_value() {
        // Upstream's bitmask tests: {0} is narrower than {0,1}; {0,1} than {0,2}; {1} is not
        // narrower than {0}.
        assert!(m(&[0]).is_narrower_than(&m(&[0, 1])));
        assert!(m(&[0, 1]).is_narrower_than(&m(&[0, 2])));
        assert!(!m(&[1]).is_narrower_than(&m(&[0])));
        assert!(!m(&[0]).is_narrower_than(&m(&[0])));
        assert!(m(&[64]).is_narrower_than(&m(&[0, 1])));
        assert!(m(&[3]).is_narrower_than(&m(&[64])));
        assert!(m(&[0, 1]).is_less_than(&m(&[2])));
    }

    #[test]
    fn serde_as_id_list() {
        let mask: NumaMask = serde_json::from_str("[2, 0, 2]").expect("valid json");
        assert_eq!(mask, m(&[0, 2]));
        assert_eq!(serde_json::to_string(&mask).expect("serializes"), "[0,2]");
    }
}
