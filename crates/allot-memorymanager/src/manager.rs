//! The Memory Manager as a Topology Manager hint provider: a policy with its state.

use allot_topologymanager::{HintProvider, ProviderHints, TopologyHint};

use crate::{Checkpoint, ContainerResources, Error, MemoryState, PodResources, Policy};

/// A policy together with the state it manages (upstream's `manager`, minus the I/O): what the
/// Topology Manager consults and lets allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryManager {
    policy: Policy,
    state: MemoryState,
}

impl MemoryManager {
    /// Starts a manager on a restored (or empty) state; the state is validated as the kubelet
    /// does at start-up (see [`crate::StaticPolicy::start`]).
    pub fn new(policy: Policy, mut state: MemoryState) -> Result<Self, Error> {
        policy.start(&mut state)?;
        Ok(Self { policy, state })
    }

    /// The policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The current state.
    pub fn state(&self) -> &MemoryState {
        &self.state
    }

    /// The checkpoint to write for the current state.
    pub fn checkpoint(&self) -> Checkpoint {
        Checkpoint::new(self.policy.name(), &self.state)
    }

    /// Pod-level hints for a pod with a `.spec.resources` budget (see
    /// [`crate::StaticPolicy::get_pod_level_topology_hints`]); None has no preference.
    pub fn get_pod_level_topology_hints(
        &self,
        pod: &PodResources,
        budget: &std::collections::BTreeMap<String, u64>,
    ) -> ProviderHints {
        match &self.policy {
            Policy::Static(p) => p
                .get_pod_level_topology_hints(&self.state, pod, budget)
                .unwrap_or_default(),
            Policy::None => ProviderHints::new(),
        }
    }

    /// Allocates a pod's budget at once (see [`crate::StaticPolicy::allocate_pod`]); None
    /// allocates nothing.
    pub fn allocate_pod(
        &mut self,
        pod: &PodResources,
        budget: &std::collections::BTreeMap<String, u64>,
        affinity: &TopologyHint,
    ) -> Result<(), Error> {
        match &mut self.policy {
            Policy::Static(p) => p.allocate_pod(&mut self.state, pod, budget, affinity),
            Policy::None => Ok(()),
        }
    }

    /// Releases a container's memory.
    pub fn remove_container(&mut self, pod_uid: &str, container: &str) {
        self.policy
            .remove_container(&mut self.state, pod_uid, container);
    }
}

impl HintProvider<PodResources, ContainerResources> for MemoryManager {
    type Error = Error;

    fn get_topology_hints(
        &self,
        pod: &PodResources,
        container: &ContainerResources,
    ) -> ProviderHints {
        self.policy
            .get_topology_hints(&self.state, pod, container)
            .unwrap_or_default()
    }

    fn get_pod_topology_hints(&self, pod: &PodResources) -> ProviderHints {
        self.policy
            .get_pod_topology_hints(&self.state, pod)
            .unwrap_or_default()
    }

    fn allocate(
        &mut self,
        pod: &PodResources,
        container: &ContainerResources,
        affinity: &TopologyHint,
    ) -> Result<(), Error> {
        self.policy
            .allocate(&mut self.state, pod, container, affinity)
    }
}
