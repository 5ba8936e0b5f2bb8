//! A fixed-size set of small numbers (device or value indexes) as a bitset: the candidates of
//! a request cost one bit per device, so that requests with different selectors stay cheap
//! on nodes with many devices.

/// A set of numbers below a fixed size.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Bits {
    words: Vec<u64>,
}

impl Bits {
    /// The empty set of numbers below `size`.
    pub fn new(size: usize) -> Self {
        Bits {
            words: vec![0; size.div_ceil(64)],
        }
    }

    pub fn insert(&mut self, i: usize) {
        self.words[i / 64] |= 1 << (i % 64);
    }

    pub fn remove(&mut self, i: usize) {
        self.words[i / 64] &= !(1 << (i % 64));
    }

    /// How many numbers the set holds.
    pub fn len(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Adds every number of `other` (of the same size).
    pub fn union_with(&mut self, other: &Bits) {
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            *a |= b;
        }
    }

    /// The words the set is made of (for costing a walk over it).
    pub fn words(&self) -> usize {
        self.words.len()
    }

    /// The numbers in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + bit)
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::Bits;

    #[test]
    fn holds_what_was_inserted_in_order() {
        let mut bits = Bits::new(200);
        for i in [0, 63, 64, 130, 199] {
            bits.insert(i);
        }
        assert_eq!(bits.iter().collect::<Vec<_>>(), [0, 63, 64, 130, 199]);
        assert_eq!(bits.len(), 5);
        assert_eq!(bits.iter().filter(|&i| i == 130 || i == 131).count(), 1);
        bits.remove(64);
        assert_eq!(bits.len(), 4);
        let mut other = Bits::new(200);
        other.insert(1);
        other.union_with(&bits);
        assert_eq!(other.iter().collect::<Vec<_>>(), [0, 1, 63, 130, 199]);
        assert!(Bits::new(0).iter().next().is_none());
    }
}
