//! The `none` CPU Manager policy (upstream `policy_none.go`): no exclusive CPUs; every container
//! may run on every CPU the machine has, and CPU limits are enforced with CFS quota.

use allot_topology::CpuSet;
use allot_topologymanager::ProviderHints;

use crate::state::CpuManagerState;

/// The policy name in configuration and checkpoints.
pub const POLICY_NONE: &str = "none";

/// The `none` policy.
#[derive(Debug, Clone, Default)]
pub struct NonePolicy {
    cpus: CpuSet,
}

impl NonePolicy {
    /// The policy for a machine with the given CPUs.
    pub fn new(cpus: CpuSet) -> Self {
        NonePolicy { cpus }
    }

    /// The policy name.
    pub fn name(&self) -> &'static str {
        POLICY_NONE
    }

    /// Nothing to check: the `none` policy keeps no assignments.
    pub fn start(&self, _state: &mut CpuManagerState) {}

    /// Every container runs on every CPU.
    pub fn cpus_for_container(&self) -> &CpuSet {
        &self.cpus
    }

    /// The `none` policy never allocates; it has no topology preference either.
    pub fn get_topology_hints(&self) -> ProviderHints {
        ProviderHints::new()
    }

    /// The whole machine is allocatable to the shared pool; nothing is exclusive.
    pub fn allocatable_cpus(&self) -> CpuSet {
        CpuSet::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn none_policy_gives_the_whole_machine() {
        let p = NonePolicy::new(CpuSet::from_range(0, 3));
        assert_eq!(p.cpus_for_container(), &CpuSet::from_range(0, 3));
        assert!(p.get_topology_hints().is_empty());
        assert_eq!(p.name(), "none");
    }
}
