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

/// What a container is, for the reuse of its devices (upstream devicemanager's
/// `devicesToReuse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerKind {
    /// A regular init container: it finishes before the next container starts, so its devices
    /// are offered to the pod's later containers.
    Init,
    /// A restartable init container (sidecar): it keeps running, so the devices it takes are
    /// never offered again.
    Sidecar,
    /// An app container: the devices it takes are no longer offered.
    App,
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
    /// Devices of finished regular init containers that the pod being admitted may reuse: pod
    /// UID -> resource -> ids. As upstream, only the pod being allocated is kept.
    reusable: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
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
            reusable: BTreeMap::new(),
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
            let reusable = self.reusable_ids(pod_uid, resource);
            if free.len() + reusable.len() < requested {
                hints.insert(resource.clone(), Some(Vec::new()));
                continue;
            }
            hints.insert(
                resource.clone(),
                Some(self.generate_with_reuse(resource, &free, &reusable, requested)),
            );
        }
        hints
    }

    /// The devices the pod may reuse, ascending by id.
    fn reusable_ids(&self, pod_uid: &str, resource: &str) -> Vec<&str> {
        self.reusable
            .get(pod_uid)
            .and_then(|r| r.get(resource))
            .map(|ids| ids.iter().map(String::as_str).collect())
            .unwrap_or_default()
    }

    /// Upstream's `generateDeviceTopologyHints`.
    fn generate(&self, resource: &str, available: &[&str], request: usize) -> Vec<TopologyHint> {
        self.generate_with_reuse(resource, available, &[], request)
    }

    /// Upstream's `generateDeviceTopologyHints` with reusable devices: a NUMA mask must hold
    /// every reusable device that has a NUMA node, and reusable devices count towards the
    /// request like free ones.
    fn generate_with_reuse(
        &self,
        resource: &str,
        available: &[&str],
        reusable: &[&str],
        request: usize,
    ) -> Vec<TopologyHint> {
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
            let mut matching = 0;
            for id in reusable {
                let Some(node) = all.get(*id).copied().flatten() else {
                    continue;
                };
                if !combo.contains(&node) {
                    return;
                }
                matching += 1;
            }
            matching += available
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

    /// Allocates the container's devices: devices a finished init container of the same pod
    /// left first (ascending id; upstream takes them in map order), then free devices on the
    /// affinity's NUMA nodes, then devices without NUMA information, then the rest; each group
    /// by NUMA node, then device id. Afterwards, as upstream's `devicesToReuse`, a regular init
    /// container's devices are offered to the pod's later containers and a sidecar's or app
    /// container's are not.
    pub fn allocate(
        &mut self,
        pod_uid: &str,
        container: &str,
        kind: ContainerKind,
        requests: &BTreeMap<String, usize>,
        affinity: Option<&NumaMask>,
    ) -> Result<BTreeMap<String, Vec<String>>, DeviceShortage> {
        self.reusable.retain(|uid, _| uid == pod_uid);
        let given = self.allocate_devices(pod_uid, container, requests, affinity)?;
        let reuse = self.reusable.entry(pod_uid.to_string()).or_default();
        for (resource, ids) in &given {
            let set = reuse.entry(resource.clone()).or_default();
            for id in ids {
                if kind == ContainerKind::Init {
                    set.insert(id.clone());
                } else {
                    set.remove(id);
                }
            }
        }
        Ok(given)
    }

    fn allocate_devices(
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
            let reused: Vec<String> = self
                .reusable_ids(pod_uid, resource)
                .into_iter()
                .take(requested)
                .map(str::to_string)
                .collect();
            let needed = requested - reused.len();
            if needed == 0 {
                given.insert(resource.clone(), reused);
                continue;
            }
            let free = self.free(resource);
            if free.len() < needed {
                return Err(DeviceShortage {
                    resource: resource.clone(),
                    requested: needed,
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
            let mut ids = reused;
            ids.extend(
                ranked
                    .into_iter()
                    .take(needed)
                    .map(|(_, _, id)| id.to_string()),
            );
            given.insert(resource.clone(), ids);
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
                self.reusable.remove(pod_uid);
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
            .allocate(
                "p",
                "c",
                ContainerKind::App,
                &req,
                Some(&NumaMask::from_ids([1])),
            )
            .expect("fits");
        assert_eq!(
            got["vendor.com/gpu"],
            vec!["b".to_string(), "c".to_string()]
        );
        // One device left: a request of two has no possible placement.
        let hints = dm.get_topology_hints("q", "c", &req);
        assert_eq!(hints["vendor.com/gpu"], Some(vec![]));
        assert!(
            dm.allocate("q", "c", ContainerKind::App, &req, None)
                .is_err()
        );
        dm.remove_container("p", "c");
        assert!(
            dm.allocate("q", "c", ContainerKind::App, &req, None)
                .is_ok()
        );
    }

    fn gpus(n: usize) -> BTreeMap<String, usize> {
        BTreeMap::from([("vendor.com/gpu".to_string(), n)])
    }

    fn ids(got: &BTreeMap<String, Vec<String>>) -> Vec<&str> {
        got["vendor.com/gpu"].iter().map(String::as_str).collect()
    }

    /// Upstream devicemanager `devicesToReuse`: a regular init container's devices go to the
    /// pod's later containers, a sidecar's stay with it.
    #[test]
    fn init_container_devices_are_reused_and_sidecars_keep_theirs() {
        let all = [
            dev("a", Some(0)),
            dev("b", Some(0)),
            dev("c", Some(1)),
            dev("d", Some(1)),
        ];
        let mut dm = DeviceManager::new(&all, &[0, 1]);
        let on1 = NumaMask::from_ids([1]);
        let init = dm
            .allocate("p", "init", ContainerKind::Init, &gpus(2), Some(&on1))
            .expect("fits");
        assert_eq!(ids(&init), ["c", "d"]);
        // The sidecar starts after the init container finished: it reuses one of its devices,
        // which is then never offered again.
        let side = dm
            .allocate("p", "side", ContainerKind::Sidecar, &gpus(1), None)
            .expect("fits");
        assert_eq!(ids(&side), ["c"]);
        // The app reuses the init container's other device and takes one free device.
        let app = dm
            .allocate("p", "app", ContainerKind::App, &gpus(2), None)
            .expect("fits");
        assert_eq!(ids(&app), ["d", "a"]);
        // Another pod finds only one free device: the reused ones stay the pod's.
        assert_eq!(
            dm.allocate("q", "app", ContainerKind::App, &gpus(2), None),
            Err(DeviceShortage {
                resource: "vendor.com/gpu".into(),
                requested: 2,
                available: 1
            })
        );
        for c in ["init", "side", "app"] {
            dm.remove_container("p", c);
        }
        assert!(dm.reusable.is_empty());
        assert!(
            dm.allocate("q", "app", ContainerKind::App, &gpus(4), None)
                .is_ok()
        );
    }

    #[test]
    fn hints_count_reusable_devices_and_keep_them_in_the_mask() {
        let mut dm = DeviceManager::new(&[dev("a", Some(0)), dev("b", Some(1))], &[0, 1]);
        dm.allocate(
            "p",
            "init",
            ContainerKind::Init,
            &gpus(1),
            Some(&NumaMask::from_ids([1])),
        )
        .expect("fits");
        // Free is {a} on node 0, reusable {b} on node 1: every mask must hold node 1.
        let hints = dm.get_topology_hints("p", "app", &gpus(1));
        assert_eq!(
            hints["vendor.com/gpu"],
            Some(vec![
                TopologyHint::new(NumaMask::from_ids([1]), true),
                TopologyHint::new(NumaMask::from_ids([0, 1]), false),
            ])
        );
        // Two devices fit only with the reused one.
        let hints = dm.get_topology_hints("p", "app", &gpus(2));
        assert_eq!(
            hints["vendor.com/gpu"],
            Some(vec![TopologyHint::new(NumaMask::from_ids([0, 1]), true)])
        );
        // Another pod cannot reuse them.
        assert_eq!(
            dm.get_topology_hints("q", "app", &gpus(2))["vendor.com/gpu"],
            Some(vec![])
        );
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
