//! The machine's NUMA nodes and the distances between them (upstream `numa_info.go`).

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use crate::{Error, NumaMask, PolicyOptions};

/// The NUMA nodes of a machine and, when `prefer-closest-numa-nodes` is on, their distances.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NumaInfo {
    nodes: Vec<usize>,
    /// Row per node id; entry `j` of a row is the distance to node id `j` (sysfs layout).
    distances: BTreeMap<usize, Vec<u64>>,
    default_mask: NumaMask,
}

impl NumaInfo {
    /// Builds the NUMA information as upstream's `NewNUMAInfo`: distances are required (and kept)
    /// only when `options.prefer_closest_numa` is set.
    ///
    /// Each distance row is indexed by node id, so it must reach the largest node id.
    pub fn new(
        nodes: &[usize],
        distances: Option<&BTreeMap<usize, Vec<u64>>>,
        options: &PolicyOptions,
    ) -> Result<Self, Error> {
        let mut seen = BTreeSet::new();
        for &node in nodes {
            if !seen.insert(node) {
                return Err(Error::DuplicateNumaNode { node });
            }
        }
        let mut kept = BTreeMap::new();
        if options.prefer_closest_numa {
            let max_id = nodes.iter().copied().max().unwrap_or(0);
            for &node in nodes {
                let row = distances
                    .and_then(|d| d.get(&node))
                    .ok_or(Error::MissingDistances { node })?;
                if row.len() <= max_id {
                    return Err(Error::ShortDistanceRow {
                        node,
                        len: row.len(),
                        missing: max_id,
                    });
                }
                kept.insert(node, row.clone());
            }
        }
        Ok(Self {
            nodes: nodes.to_vec(),
            distances: kept,
            default_mask: NumaMask::from_ids(nodes.iter().copied()),
        })
    }

    /// The node ids, in the order given.
    pub fn nodes(&self) -> &[usize] {
        &self.nodes
    }

    /// The mask of all nodes: upstream's "any NUMA node" affinity.
    pub fn default_mask(&self) -> &NumaMask {
        &self.default_mask
    }

    /// The distance from node `a` to node `b`, if known.
    pub fn distance(&self, a: usize, b: usize) -> Option<u64> {
        self.distances.get(&a).and_then(|row| row.get(b)).copied()
    }

    /// Sum of distances over all ordered pairs of nodes in the mask (including each node with
    /// itself). Upstream averages this over `count²` pairs; with equal counts comparing sums is
    /// the same comparison, done exactly.
    fn distance_sum(&self, mask: &NumaMask) -> u128 {
        let ids: Vec<usize> = mask.ids().collect();
        let mut sum = 0u128;
        for &a in &ids {
            for &b in &ids {
                sum += u128::from(self.distance(a, b).unwrap_or(0));
            }
        }
        sum
    }

    /// Upstream's `Closest` as an order: fewer nodes first; among equally many, the lower
    /// average distance; then the numerically smaller mask. `Less` means `a` is the closer one.
    pub fn closeness_cmp(&self, a: &NumaMask, b: &NumaMask) -> Ordering {
        a.count()
            .cmp(&b.count())
            .then_with(|| {
                if a.count() == b.count() {
                    self.distance_sum(a).cmp(&self.distance_sum(b))
                } else {
                    Ordering::Equal
                }
            })
            .then_with(|| a.numeric_cmp(b))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn four_nodes() -> NumaInfo {
        let distances: BTreeMap<usize, Vec<u64>> = [
            (0, vec![10, 11, 12, 12]),
            (1, vec![11, 10, 12, 12]),
            (2, vec![12, 12, 10, 11]),
            (3, vec![12, 12, 11, 10]),
        ]
        .into_iter()
        .collect();
        let options = PolicyOptions {
            prefer_closest_numa: true,
            ..PolicyOptions::default()
        };
        NumaInfo::new(&[0, 1, 2, 3], Some(&distances), &options).expect("valid")
    }

    #[test]
    fn closest_prefers_lower_average_distance_then_lower_mask() {
        let info = four_nodes();
        let m = |ids: &[usize]| NumaMask::from_ids(ids.iter().copied());
        assert_eq!(info.closeness_cmp(&m(&[2, 3]), &m(&[0, 2])), Ordering::Less);
        assert_eq!(info.closeness_cmp(&m(&[0, 1]), &m(&[2, 3])), Ordering::Less);
        assert_eq!(info.closeness_cmp(&m(&[3]), &m(&[0, 1])), Ordering::Less);
    }

    #[test]
    fn distances_required_only_with_prefer_closest() {
        assert!(NumaInfo::new(&[0, 1], None, &PolicyOptions::default()).is_ok());
        let options = PolicyOptions {
            prefer_closest_numa: true,
            ..PolicyOptions::default()
        };
        let err = NumaInfo::new(&[0, 1], None, &options).expect_err("no distances");
        assert_eq!(
            err.to_string(),
            "cannot discover NUMA topology: error getting NUMA distances from cadvisor"
        );
        let short: BTreeMap<usize, Vec<u64>> =
            [(0, vec![10]), (1, vec![20, 10])].into_iter().collect();
        assert!(matches!(
            NumaInfo::new(&[0, 1], Some(&short), &options),
            Err(Error::ShortDistanceRow { node: 0, .. })
        ));
        assert!(matches!(
            NumaInfo::new(&[0, 0], None, &PolicyOptions::default()),
            Err(Error::DuplicateNumaNode { node: 0 })
        ));
    }
}
