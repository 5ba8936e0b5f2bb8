//! The Device Manager for device-plugin resources (upstream pkg/kubelet/cm/devicemanager): the
//! devices come from the `NodeTopology`'s `devices` list, each with an optional NUMA node. It is
//! a Topology Manager hint provider (`generateDeviceTopologyHints`) and hands out device ids,
//! aligned devices first.

use std::collections::{BTreeMap, BTreeSet};

use allot_topology::Device;
use allot_topologymanager::{NumaMask, ProviderHints, TopologyHint};
use serde::{Deserialize, Serialize};

/// Device ids given to containers: pod UID -> container -> resource -> ids.
pub type DeviceAssignments = BTreeMap<String, BTreeMap<String, BTreeMap<String, Vec<String>>>>;

/// Why a container's devices could not be allocated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceShortage {
    /// The resource name.
    pub resource: String,
    /// Devices requested.
    pub requested: usize,
    /// Devices free.
    pub available: usize,
}

/// The Device Manager.
#[derive(Debug, Clone, Default)]
pub struct DeviceManager {
    /// Resource name -> device id -> NUMA node.
    devices: BTreeMap<String, BTreeMap<String, Option<u32>>>,
    /// Every NUMA node of the machine, ascending.
    numa_nodes: Vec<u32>,
    /// What is allocated.
    pub assignments: DeviceAssignments,
}

impl DeviceManager {
    /// A manager for the given devices on a machine with the given NUMA nodes.
    pub fn new(devices: &[Device], numa_nodes: &[u32]) -> Self {
        let mut map: BTreeMap<String, BTreeMap<String, Option<u32>>> = BTreeMap::new();
        for d in devices {
            map.entry(d.resource_name.clone())
                .or_default()
                .insert(d.id.clone(), d.numa);
        }
        let mut nodes = numa_nodes.to_vec();
        nodes.sort_unstable();
        nodes.dedup();
        DeviceManager {
            devices: map,
            numa_nodes: nodes,
            assignments: DeviceAssignments::new(),
        }
    }

    /// Whether `resource` is a device-plugin resource of this node.
    pub fn manages(&self, resource: &str) -> bool {
        self.devices.contains_key(resource)
    }

    fn in_use(&self, resource: &str) -> BTreeSet<&str> {
        let mut used = BTreeSet::new();
        for containers in self.assignments.values() {
            for resources in containers.values() {
                if let Some(ids) = resources.get(resource) {
                    used.extend(ids.iter().map(String::as_str));
                }
            }
        }
        used
    }

    fn free(&self, resource: &str) -> Vec<&str> {
        let used = self.in_use(resource);
        self.devices
            .get(resource)
            .map(|all| {
                all.keys()
                    .map(String::as_str)
                    .filter(|id| !used.contains(id))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Upstream's `GetTopologyHints` for one container's device requests (resource -> count).
    pub fn get_topology_hints(
        &self,
        pod_uid: &str,
        container: &str,
        requests: &BTreeMap<String, usize>,
    ) -> ProviderHints {
        let mut hints = ProviderHints::new();
        for (resource, &requested) in requests {
            let Some(all) = self.devices.get(resource) else {
                continue;
            };
            if requested == 0 {
                continue;
            }
            if all.values().all(Option::is_none) {
                hints.insert(resource.clone(), None);
                continue;
            }
            let allocated = self
                .assignments
                .get(pod_uid)
                .and_then(|c| c.get(container))
                .and_then(|r| r.get(resource));
            if let Some(ids) = allocated {
                if ids.len() != requested {
                    hints.insert(resource.clone(), Some(Vec::new()));
                    continue;
                }
                let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
                hints.insert(
                    resource.clone(),
                    Some(self.generate(resource, &ids, requested)),
                );
                continue;
            }
            let free = self.free(resource);
            if free.len() < requested {
                hints.insert(resource.clone(), Some(Vec::new()));
                continue;
            }
            hints.insert(
                resource.clone(),
                Some(self.generate(resource, &free, requested)),
            );
        }
        hints
    }

    /// Upstream's `generateDeviceTopologyHints`.
    fn generate(&self, resource: &str, available: &[&str], request: usize) -> Vec<TopologyHint> {
        let Some(all) = self.devices.get(resource) else {
            return Vec::new();
        };
        let mut min_affinity = self.numa_nodes.len();
        let mut hints = Vec::new();
        for_each_combination(&self.numa_nodes, |combo| {
            let in_mask = |node: Option<u32>| node.is_some_and(|n| combo.contains(&n));
            let devices_in_mask = all.values().filter(|n| in_mask(**n)).count();
            if devices_in_mask >= request && combo.len() < min_affinity {
                min_affinity = combo.len();
            }
            let matching = available
                .iter()
                .filter(|id| in_mask(all.get(**id).copied().flatten()))
                .count();
            if matching < request {
                return;
            }
            hints.push(TopologyHint::new(
                NumaMask::from_ids(combo.iter().map(|&n| n as usize)),
                false,
            ));
        });
        for h in &mut hints {
            if h.affinity.as_ref().map_or(0, NumaMask::count) == min_affinity {
                h.preferred = true;
            }
        }
        hints
    }

    /// Allocates the container's devices, those on the affinity's NUMA nodes first, then devices
    /// without NUMA information, then the rest; each group by NUMA node, then device id.
    pub fn allocate(
        &mut self,
        pod_uid: &str,
        container: &str,
        requests: &BTreeMap<String, usize>,
        affinity: Option<&NumaMask>,
    ) -> Result<BTreeMap<String, Vec<String>>, DeviceShortage> {
        if let Some(done) = self.assignments.get(pod_uid).and_then(|c| c.get(container)) {
            return Ok(done.clone());
        }
        let mut given: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (resource, &requested) in requests {
            if requested == 0 || !self.manages(resource) {
                continue;
            }
            let free = self.free(resource);
            if free.len() < requested {
                return Err(DeviceShortage {
                    resource: resource.clone(),
                    requested,
                    available: free.len(),
                });
            }
            let numa = |id: &str| {
                self.devices
                    .get(resource)
                    .and_then(|m| m.get(id))
                    .copied()
                    .flatten()
            };
            let mut ranked: Vec<(u8, u32, &str)> = free
                .iter()
                .map(|&id| {
                    let node = numa(id);
                    let rank = match (node, affinity) {
                        (Some(n), Some(mask)) if mask.contains(n as usize) => 0,
                        (None, _) => 1,
                        _ => 2,
                    };
                    (rank, node.unwrap_or(u32::MAX), id)
                })
                .collect();
            ranked.sort();
            given.insert(
                resource.clone(),
                ranked
                    .into_iter()
                    .take(requested)
                    .map(|(_, _, id)| id.to_string())
                    .collect(),
            );
        }
        if !given.is_empty() {
            self.assignments
                .entry(pod_uid.to_string())
                .or_default()
                .insert(container.to_string(), given.clone());
        }
        Ok(given)
    }

    /// Frees a container's devices.
    pub fn remove_container(&mut self, pod_uid: &str, container: &str) {
        if let Some(containers) = self.assignments.get_mut(pod_uid) {
            containers.remove(container);
            if containers.is_empty() {
                self.assignments.remove(pod_uid);
            }
        }
    }

    /// The devices a container holds.
    pub fn container_devices(
        &self,
        pod_uid: &str,
        container: &str,
    ) -> BTreeMap<String, Vec<String>> {
        self.assignments
            .get(pod_uid)
            .and_then(|c| c.get(container))
            .cloned()
            .unwrap_or_default()
    }
}

/// Every non-empty combination of `items`, by size, each size in lexicographic order (upstream's
/// `bitmask.IterateBitMasks`).
pub(crate) fn for_each_combination<F: FnMut(&[u32])>(items: &[u32], mut f: F) {
    fn go<F: FnMut(&[u32])>(items: &[u32], accum: &mut Vec<u32>, size: usize, f: &mut F) {
        if accum.len() == size {
            f(accum);
            return;
        }
        for i in 0..items.len() {
            accum.push(items[i]);
            go(&items[i + 1..], accum, size, f);
            accum.pop();
        }
    }
    let mut accum = Vec::new();
    for size in 1..=items.len() {
        go(items, &mut accum, size, &mut f);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(id: &str, numa: Option<u32>) -> Device {
        Device {
            resource_name: "vendor.com/gpu".into(),
            id: id.into(),
            numa,
        }
    }

    #[test]
    fn hints_and_aligned_allocation() {
        let mut dm = DeviceManager::new(
            &[dev("a", Some(0)), dev("b", Some(1)), dev("c", Some(1))],
            &[0, 1],
        );
        let req = BTreeMap::from([("vendor.com/gpu".to_string(), 2usize)]);
        let hints = dm.get_topology_hints("p", "c", &req);
        let list = hints["vendor.com/gpu"].clone().expect("hints");
        assert_eq!(
            list,
            vec![
                TopologyHint::new(NumaMask::from_ids([1]), true),
                TopologyHint::new(NumaMask::from_ids([0, 1]), false),
            ]
        );
        let got = dm
            .allocate("p", "c", &req, Some(&NumaMask::from_ids([1])))
            .expect("fits");
        assert_eq!(
            got["vendor.com/gpu"],
            vec!["b".to_string(), "c".to_string()]
        );
        // One device left: a request of two has no possible placement.
        let hints = dm.get_topology_hints("q", "c", &req);
        assert_eq!(hints["vendor.com/gpu"], Some(vec![]));
        assert!(dm.allocate("q", "c", &req, None).is_err());
        dm.remove_container("p", "c");
        assert!(dm.allocate("q", "c", &req, None).is_ok());
    }

    #[test]
    fn devices_without_numa_have_no_preference() {
        let dm = DeviceManager::new(&[dev("a", None)], &[0, 1]);
        let req = BTreeMap::from([("vendor.com/gpu".to_string(), 1usize)]);
        assert_eq!(
            dm.get_topology_hints("p", "c", &req)["vendor.com/gpu"],
            None
        );
    }
}
