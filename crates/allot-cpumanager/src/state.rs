//! The CPU Manager's state: the shared pool ("default CPU set") and the exclusive assignments per
//! pod and container, as upstream's `state.State` keeps them.
//!
//! Pods and containers are kept in `BTreeMap`s so every walk over the state is in lexicographic
//! order of pod UID, then container name.

use std::collections::BTreeMap;

use allot_topology::CpuSet;
use serde::{Deserialize, Serialize};

/// Exclusive CPU assignments: pod UID -> container name -> CPUs.
pub type ContainerCpuAssignments = BTreeMap<String, BTreeMap<String, CpuSet>>;

/// The CPU Manager state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuManagerState {
    /// The shared pool: CPUs that containers without exclusive CPUs run on.
    pub default_cpu_set: CpuSet,
    /// Exclusive assignments per pod UID and container name.
    #[serde(default)]
    pub assignments: ContainerCpuAssignments,
    /// Pod-level CPU pools (pod-level resource managers, pod scope): pod UID -> every CPU the pod
    /// holds, exclusive slices and the pod shared pool together.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_pools: BTreeMap<String, CpuSet>,
}

impl CpuManagerState {
    /// A state with the given shared pool and no assignments.
    pub fn with_default(default_cpu_set: CpuSet) -> Self {
        CpuManagerState {
            default_cpu_set,
            ..CpuManagerState::default()
        }
    }

    /// The exclusive CPUs of one container, if it has any.
    pub fn cpu_set(&self, pod_uid: &str, container: &str) -> Option<&CpuSet> {
        self.assignments.get(pod_uid)?.get(container)
    }

    /// The CPUs a container runs on: its exclusive CPUs, or else the shared pool.
    pub fn cpu_set_or_default(&self, pod_uid: &str, container: &str) -> &CpuSet {
        self.cpu_set(pod_uid, container)
            .unwrap_or(&self.default_cpu_set)
    }

    /// Records an exclusive assignment.
    pub fn set_cpu_set(&mut self, pod_uid: &str, container: &str, cpus: CpuSet) {
        self.assignments
            .entry(pod_uid.to_string())
            .or_default()
            .insert(container.to_string(), cpus);
    }

    /// Forgets a container's assignment; a pod without containers left is dropped.
    pub fn delete(&mut self, pod_uid: &str, container: &str) {
        if let Some(containers) = self.assignments.get_mut(pod_uid) {
            containers.remove(container);
            if containers.is_empty() {
                self.assignments.remove(pod_uid);
            }
        }
    }

    /// Every CPU assigned exclusively to some container.
    pub fn assigned_cpus(&self) -> CpuSet {
        let mut all = CpuSet::new();
        for containers in self.assignments.values() {
            for cpus in containers.values() {
                all.union_with(cpus);
            }
        }
        all
    }

    /// The CPUs assigned to the other containers of the same pod.
    pub fn sibling_cpus(&self, pod_uid: &str, container: &str) -> CpuSet {
        let mut all = CpuSet::new();
        if let Some(containers) = self.assignments.get(pod_uid) {
            for (name, cpus) in containers {
                if name != container {
                    all.union_with(cpus);
                }
            }
        }
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_get_delete() {
        let mut s = CpuManagerState::with_default(CpuSet::from_range(0, 7));
        s.set_cpu_set("p", "a", CpuSet::from_ids([1, 2]));
        s.set_cpu_set("p", "b", CpuSet::from_ids([3]));
        assert_eq!(s.cpu_set("p", "a"), Some(&CpuSet::from_ids([1, 2])));
        assert_eq!(s.cpu_set_or_default("p", "c"), &CpuSet::from_range(0, 7));
        assert_eq!(s.sibling_cpus("p", "a"), CpuSet::from_ids([3]));
        assert_eq!(s.assigned_cpus(), CpuSet::from_ids([1, 2, 3]));
        s.delete("p", "a");
        s.delete("p", "b");
        assert!(s.assignments.is_empty());
    }
}
