//! Property tests of the CPU pick over upstream's topology fixtures: the result is a subset of
//! the available CPUs, has exactly the requested size, and is deterministic.

use std::fs;
use std::sync::OnceLock;

use allot_cpumanager::{
    CpuSortingStrategy, TakeError, take_by_topology_numa_distributed, take_by_topology_numa_packed,
};
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use proptest::prelude::*;

const TOPOLOGIES: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies"
);

fn fixtures() -> &'static [CpuTopology] {
    static CELL: OnceLock<Vec<CpuTopology>> = OnceLock::new();
    CELL.get_or_init(|| {
        let mut paths: Vec<_> = fs::read_dir(TOPOLOGIES)
            .expect("topologies")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
            .collect();
        paths.sort();
        paths
            .iter()
            .map(|p| {
                let node = NodeTopology::from_yaml_str(&fs::read_to_string(p).expect("read"))
                    .expect("decode");
                CpuTopology::new(&node).expect("valid")
            })
            .collect()
    })
}

/// A fixture, a random subset of its CPUs (by a bit mask seed), and a request size.
fn scenario() -> impl Strategy<Value = (usize, Vec<bool>, usize, bool, bool)> {
    (
        0..22usize,
        proptest::collection::vec(any::<bool>(), 512),
        0..300usize,
        any::<bool>(),
        any::<bool>(),
    )
}

fn pick(topo: &CpuTopology, mask: &[bool]) -> CpuSet {
    topo.cpus()
        .iter()
        .filter(|&c| mask.get(c as usize).copied().unwrap_or(true))
        .collect()
}

fn check(
    result: &Result<CpuSet, TakeError>,
    available: &CpuSet,
    n: usize,
) -> Result<(), TestCaseError> {
    match result {
        Ok(cpus) => {
            prop_assert!(cpus.is_subset(available), "{cpus} not within {available}");
            prop_assert_eq!(cpus.len(), n, "{} CPUs for a request of {}", cpus.len(), n);
        }
        Err(TakeError::NotEnoughCpus { requested, .. }) => {
            prop_assert!(
                *requested > available.len(),
                "refused {requested} out of {}",
                available.len()
            );
        }
        Err(other) => prop_assert!(false, "unexpected error {other}"),
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn packed_pick_is_a_subset_of_the_right_size((t, mask, n, spread, uncore) in scenario()) {
        let fx = fixtures();
        let topo = &fx[t % fx.len()];
        let available = pick(topo, &mask);
        let n = n % (topo.cpus().len() + 2);
        let sort = if spread { CpuSortingStrategy::Spread } else { CpuSortingStrategy::Packed };
        let first = take_by_topology_numa_packed(topo, &available, n, sort, uncore);
        check(&first, &available, n)?;
        prop_assert_eq!(first, take_by_topology_numa_packed(topo, &available, n, sort, uncore));
    }

    #[test]
    fn distributed_pick_is_a_subset_of_the_right_size((t, mask, n, spread, by_socket) in scenario()) {
        let fx = fixtures();
        let topo = &fx[t % fx.len()];
        let available = pick(topo, &mask);
        let n = n % (topo.cpus().len() + 2);
        let group = if spread { 2 } else { 1 };
        let sort = CpuSortingStrategy::Packed;
        let first = take_by_topology_numa_distributed(topo, &available, n, group, sort, by_socket);
        check(&first, &available, n)?;
        prop_assert_eq!(first, take_by_topology_numa_distributed(topo, &available, n, group, sort, by_socket));
    }
}
