//! `CpuTopology`: a precomputed, query-ready view of a `NodeTopology`'s CPUs, the analogue of
//! upstream's `topology.CPUTopology` and `CPUDetails`.
//!
//! Every core, socket, NUMA node and uncore cache gets a dense index (assigned in ascending id
//! order, so comparing indices compares ids) and a `CpuSet` mask of its CPUs, computed once. The
//! CPU-assignment engine then answers "how many free CPUs does socket 3 have" with one masked
//! popcount instead of walking a map.

use crate::{CpuSet, NodeTopology, TopologyError};

/// One topology level (cores, sockets, NUMA nodes or uncore caches): ids and CPU masks, by
/// dense index.
#[derive(Clone, Debug, Default)]
pub struct Level {
    ids: Vec<u32>,
    masks: Vec<CpuSet>,
    sizes: Vec<usize>,
}

impl Level {
    fn build(pairs: impl Iterator<Item = (u32, u32)>) -> (Level, Vec<(u32, usize)>) {
        let mut all: Vec<(u32, u32)> = pairs.collect();
        let mut ids: Vec<u32> = all.iter().map(|(_, id)| *id).collect();
        ids.sort_unstable();
        ids.dedup();
        let mut masks = vec![CpuSet::new(); ids.len()];
        let mut index = Vec::with_capacity(all.len());
        all.sort_unstable();
        for (cpu, id) in all {
            // The id was collected from this same list, so the search always succeeds.
            let i = ids.binary_search(&id).unwrap_or(0);
            masks[i].insert(cpu);
            index.push((cpu, i));
        }
        let sizes = masks.iter().map(CpuSet::len).collect();
        (Level { ids, masks, sizes }, index)
    }

    /// The number of distinct ids.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the level is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The ids in ascending order (index `i` has id `ids()[i]`).
    pub fn ids(&self) -> &[u32] {
        &self.ids
    }

    /// The id at a dense index.
    pub fn id(&self, index: usize) -> u32 {
        self.ids[index]
    }

    /// The CPUs of each dense index.
    pub fn masks(&self) -> &[CpuSet] {
        &self.masks
    }

    /// The CPUs at a dense index.
    pub fn mask(&self, index: usize) -> &CpuSet {
        &self.masks[index]
    }

    /// The number of CPUs at a dense index.
    pub fn size(&self, index: usize) -> usize {
        self.sizes[index]
    }

    /// The dense index of an id.
    pub fn index_of(&self, id: u32) -> Option<usize> {
        self.ids.binary_search(&id).ok()
    }

    /// The CPUs of the given ids (unknown ids contribute nothing).
    pub fn cpus_of(&self, ids: &[u32]) -> CpuSet {
        let mut out = CpuSet::new();
        for id in ids {
            if let Some(i) = self.index_of(*id) {
                out.union_with(&self.masks[i]);
            }
        }
        out
    }

    /// The ids having at least one CPU in `cpus`.
    pub fn ids_touching(&self, cpus: &CpuSet) -> CpuSet {
        self.masks
            .iter()
            .zip(&self.ids)
            .filter(|(m, _)| m.intersects(cpus))
            .map(|(_, id)| *id)
            .collect()
    }
}

/// Dense indices of one CPU's core, socket, NUMA node and uncore cache.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuLocation {
    /// Dense core index.
    pub core: usize,
    /// Dense socket index.
    pub socket: usize,
    /// Dense NUMA node index.
    pub numa: usize,
    /// Dense uncore cache index.
    pub uncore: usize,
}

/// A pair relation "child of parent": for each parent dense index, the child dense indices that
/// share CPUs with it and the shared CPUs (ascending child index).
pub type Relation = Vec<Vec<(usize, CpuSet)>>;

/// The CPU counts upstream's policies use (`NumCPUs`, `NumCores`, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    /// Logical CPUs.
    pub num_cpus: usize,
    /// Physical cores.
    pub num_cores: usize,
    /// Sockets.
    pub num_sockets: usize,
    /// NUMA nodes.
    pub num_numa_nodes: usize,
    /// Uncore caches.
    pub num_uncore_caches: usize,
}

/// The query-ready CPU topology of a node.
#[derive(Clone, Debug)]
pub struct CpuTopology {
    cpus: CpuSet,
    locations: Vec<Option<CpuLocation>>,
    cores: Level,
    sockets: Level,
    numa_nodes: Level,
    uncore_caches: Level,
    counts: Counts,
    numas_of_socket: Relation,
    sockets_of_numa: Relation,
    cores_of_socket: Relation,
    cores_of_numa: Relation,
    uncores_of_numa: Relation,
}

fn relation(parents: &Level, children: &Level) -> Relation {
    parents
        .masks
        .iter()
        .map(|pm| {
            children
                .masks
                .iter()
                .enumerate()
                .filter(|(_, cm)| cm.intersects(pm))
                .map(|(ci, cm)| (ci, cm.intersection(pm)))
                .collect()
        })
        .collect()
}

impl CpuTopology {
    /// Builds the view. Counts come from `declared` when present, else from the CPU list.
    pub fn new(node: &NodeTopology) -> Result<Self, TopologyError> {
        node.validate()?;
        let cpus: CpuSet = node.cpus.iter().map(|c| c.id).collect();
        let (cores, core_ix) = Level::build(node.cpus.iter().map(|c| (c.id, c.core)));
        let (sockets, socket_ix) = Level::build(node.cpus.iter().map(|c| (c.id, c.socket)));
        let (numa_nodes, numa_ix) = Level::build(node.cpus.iter().map(|c| (c.id, c.numa)));
        let (uncore_caches, uncore_ix) =
            Level::build(node.cpus.iter().map(|c| (c.id, c.uncore_cache)));
        let max = cpus.iter().last().map_or(0, |m| m as usize + 1);
        let mut locations = vec![None; max];
        // All four index lists are sorted by CPU id and hold every CPU once.
        for (((c, s), n), u) in core_ix.iter().zip(&socket_ix).zip(&numa_ix).zip(&uncore_ix) {
            locations[c.0 as usize] = Some(CpuLocation {
                core: c.1,
                socket: s.1,
                numa: n.1,
                uncore: u.1,
            });
        }
        let counts = match node.declared {
            Some(d) => Counts {
                num_cpus: d.num_cpus,
                num_cores: d.num_cores,
                num_sockets: d.num_sockets,
                num_numa_nodes: d.num_numa_nodes,
                num_uncore_caches: d.num_uncore_cache,
            },
            None => Counts {
                num_cpus: cpus.len(),
                num_cores: cores.len(),
                num_sockets: sockets.len(),
                num_numa_nodes: numa_nodes.len(),
                num_uncore_caches: uncore_caches.len(),
            },
        };
        Ok(CpuTopology {
            numas_of_socket: relation(&sockets, &numa_nodes),
            sockets_of_numa: relation(&numa_nodes, &sockets),
            cores_of_socket: relation(&sockets, &cores),
            cores_of_numa: relation(&numa_nodes, &cores),
            uncores_of_numa: relation(&numa_nodes, &uncore_caches),
            cpus,
            locations,
            cores,
            sockets,
            numa_nodes,
            uncore_caches,
            counts,
        })
    }

    /// All logical CPUs.
    pub fn cpus(&self) -> &CpuSet {
        &self.cpus
    }

    /// The counts (declared or derived).
    pub fn counts(&self) -> Counts {
        self.counts
    }

    /// Upstream's `CPUsPerCore()`: `NumCPUs / NumCores`, 0 when there are no cores.
    pub fn cpus_per_core(&self) -> usize {
        self.counts
            .num_cpus
            .checked_div(self.counts.num_cores)
            .unwrap_or(0)
    }

    /// Dense indices of a CPU's core, socket, NUMA node and uncore cache.
    pub fn location(&self, cpu: u32) -> Option<CpuLocation> {
        self.locations.get(cpu as usize).copied().flatten()
    }

    /// The ids of a CPU's core, socket, NUMA node and uncore cache.
    pub fn cpu_info(&self, cpu: u32) -> Option<crate::CpuInfo> {
        let l = self.location(cpu)?;
        Some(crate::CpuInfo {
            id: cpu,
            core: self.cores.id(l.core),
            socket: self.sockets.id(l.socket),
            numa: self.numa_nodes.id(l.numa),
            uncore_cache: self.uncore_caches.id(l.uncore),
        })
    }

    /// The core level.
    pub fn core_level(&self) -> &Level {
        &self.cores
    }

    /// The socket level.
    pub fn socket_level(&self) -> &Level {
        &self.sockets
    }

    /// The NUMA node level.
    pub fn numa_level(&self) -> &Level {
        &self.numa_nodes
    }

    /// The uncore cache level.
    pub fn uncore_level(&self) -> &Level {
        &self.uncore_caches
    }

    /// NUMA nodes sharing CPUs with each socket (dense indices).
    pub fn numas_of_socket(&self) -> &Relation {
        &self.numas_of_socket
    }

    /// Sockets sharing CPUs with each NUMA node (dense indices).
    pub fn sockets_of_numa(&self) -> &Relation {
        &self.sockets_of_numa
    }

    /// Cores sharing CPUs with each socket (dense indices).
    pub fn cores_of_socket(&self) -> &Relation {
        &self.cores_of_socket
    }

    /// Cores sharing CPUs with each NUMA node (dense indices).
    pub fn cores_of_numa(&self) -> &Relation {
        &self.cores_of_numa
    }

    /// Uncore caches sharing CPUs with each NUMA node (dense indices).
    pub fn uncores_of_numa(&self) -> &Relation {
        &self.uncores_of_numa
    }

    /// Core ids of all CPUs.
    pub fn cores(&self) -> CpuSet {
        self.cores.ids.iter().copied().collect()
    }

    /// Socket ids of all CPUs.
    pub fn sockets(&self) -> CpuSet {
        self.sockets.ids.iter().copied().collect()
    }

    /// NUMA node ids of all CPUs.
    pub fn numa_nodes(&self) -> CpuSet {
        self.numa_nodes.ids.iter().copied().collect()
    }

    /// Uncore cache ids of all CPUs.
    pub fn uncore_caches(&self) -> CpuSet {
        self.uncore_caches.ids.iter().copied().collect()
    }

    /// CPUs of the given cores.
    pub fn cpus_in_cores(&self, ids: &[u32]) -> CpuSet {
        self.cores.cpus_of(ids)
    }

    /// CPUs of the given sockets.
    pub fn cpus_in_sockets(&self, ids: &[u32]) -> CpuSet {
        self.sockets.cpus_of(ids)
    }

    /// CPUs of the given NUMA nodes.
    pub fn cpus_in_numa_nodes(&self, ids: &[u32]) -> CpuSet {
        self.numa_nodes.cpus_of(ids)
    }

    /// CPUs of the given uncore caches.
    pub fn cpus_in_uncore_caches(&self, ids: &[u32]) -> CpuSet {
        self.uncore_caches.cpus_of(ids)
    }

    /// Core ids of the CPUs in `cpus` (upstream's `KeepOnly(cpus).Cores()`).
    pub fn cores_of(&self, cpus: &CpuSet) -> CpuSet {
        self.cores.ids_touching(cpus)
    }

    /// Socket ids of the CPUs in `cpus`.
    pub fn sockets_of(&self, cpus: &CpuSet) -> CpuSet {
        self.sockets.ids_touching(cpus)
    }

    /// NUMA node ids of the CPUs in `cpus`.
    pub fn numa_nodes_of(&self, cpus: &CpuSet) -> CpuSet {
        self.numa_nodes.ids_touching(cpus)
    }

    /// Uncore cache ids of the CPUs in `cpus`.
    pub fn uncore_caches_of(&self, cpus: &CpuSet) -> CpuSet {
        self.uncore_caches.ids_touching(cpus)
    }

    /// NUMA node ids of the given sockets (upstream's `NUMANodesInSockets`).
    pub fn numa_nodes_in_sockets(&self, ids: &[u32]) -> CpuSet {
        self.numa_nodes_of(&self.cpus_in_sockets(ids))
    }

    /// Socket ids of the given NUMA nodes (upstream's `SocketsInNUMANodes`).
    pub fn sockets_in_numa_nodes(&self, ids: &[u32]) -> CpuSet {
        self.sockets_of(&self.cpus_in_numa_nodes(ids))
    }

    /// Core ids of the given sockets.
    pub fn cores_in_sockets(&self, ids: &[u32]) -> CpuSet {
        self.cores_of(&self.cpus_in_sockets(ids))
    }

    /// Core ids of the given NUMA nodes.
    pub fn cores_in_numa_nodes(&self, ids: &[u32]) -> CpuSet {
        self.cores_of(&self.cpus_in_numa_nodes(ids))
    }

    /// Uncore cache ids of the given NUMA nodes (upstream's `UncoreInNUMANodes`).
    pub fn uncore_caches_in_numa_nodes(&self, ids: &[u32]) -> CpuSet {
        self.uncore_caches_of(&self.cpus_in_numa_nodes(ids))
    }

    /// Upstream's `AreNUMANodesInSameSocket`: every id is a known NUMA node and together they
    /// span at most one socket.
    pub fn are_numa_nodes_in_same_socket(&self, ids: &[u32]) -> bool {
        ids.iter().all(|id| self.numa_nodes.index_of(*id).is_some())
            && self.sockets_in_numa_nodes(ids).len() <= 1
    }

    /// Upstream's `isAlignedAtUncoreCache`: every CPU of `cpus` is known and all share one
    /// uncore cache (trivially true for zero or one CPU).
    pub fn is_aligned_at_uncore_cache(&self, cpus: &CpuSet) -> bool {
        if cpus.len() <= 1 {
            return true;
        }
        cpus.is_subset(&self.cpus) && self.uncore_caches_of(cpus).len() == 1
    }

    /// The CPUs sharing a core with any CPU of `cpus` (whole physical cores).
    pub fn full_cores_of(&self, cpus: &CpuSet) -> CpuSet {
        self.cpus_in_cores(&self.cores_of(cpus).to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CpuInfo;

    fn dual_socket_ht() -> NodeTopology {
        let mut t = NodeTopology::new("dual");
        for id in 0..12u32 {
            let core = id % 6;
            let socket = core % 2;
            t.cpus.push(CpuInfo {
                id,
                core,
                socket,
                numa: socket,
                uncore_cache: 0,
            });
        }
        t
    }

    #[test]
    fn queries_like_upstream() {
        let topo = CpuTopology::new(&dual_socket_ht()).unwrap();
        assert_eq!(topo.cpus_per_core(), 2);
        assert_eq!(topo.cpus_in_sockets(&[0]).to_string(), "0,2,4,6,8,10");
        assert_eq!(topo.cpus_in_cores(&[1]).to_string(), "1,7");
        assert_eq!(topo.cores_in_sockets(&[1]).to_string(), "1,3,5");
        assert_eq!(topo.numa_nodes_in_sockets(&[0, 1]).to_string(), "0-1");
        assert_eq!(topo.sockets_in_numa_nodes(&[1]).to_string(), "1");
        assert!(topo.are_numa_nodes_in_same_socket(&[0]));
        assert!(!topo.are_numa_nodes_in_same_socket(&[0, 1]));
        assert!(!topo.are_numa_nodes_in_same_socket(&[7]));
        assert_eq!(topo.cpu_info(7).unwrap().core, 1);
        assert_eq!(topo.cpu_info(12), None);
        assert_eq!(
            topo.full_cores_of(&CpuSet::parse("0,3").unwrap())
                .to_string(),
            "0,3,6,9"
        );
        assert_eq!(topo.counts().num_sockets, 2);
        assert!(topo.is_aligned_at_uncore_cache(&CpuSet::parse("0-11").unwrap()));
        assert!(!topo.is_aligned_at_uncore_cache(&CpuSet::parse("0,12").unwrap()));
        assert!(topo.is_aligned_at_uncore_cache(&CpuSet::parse("99").unwrap()));
    }

    #[test]
    fn declared_counts_win() {
        let mut node = dual_socket_ht();
        node.declared = Some(crate::DeclaredCounts {
            num_cpus: 24,
            num_cores: 6,
            num_sockets: 2,
            num_numa_nodes: 0,
            num_uncore_cache: 1,
        });
        let topo = CpuTopology::new(&node).unwrap();
        assert_eq!(topo.cpus_per_core(), 4);
        assert_eq!(topo.counts().num_numa_nodes, 0);
    }
}
