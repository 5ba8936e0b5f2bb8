//! The report's drill-down: each node drawn as `allot node show -o svg` draws a machine
//! ([`allot_kubelet::picture`]), with the owners a simulation leaves: containers' exclusive CPUs
//! (from the node agents' `allot.dev/resources` annotations), the CPUs the static policy
//! reserves, the shared pool, and each node-local DRA device with the pod whose claim holds it.
//!
//! The page carries each distinct layout (machine and devices) once, as a template, and per
//! node only its owners and which owner holds each CPU and device (see the picture module):
//! 5,000 nodes of one kind cost one drawing and 5,000 short lists.

use std::collections::{BTreeMap, HashMap};

use allot_api::core::v1::{Node, Pod};
use allot_api::resource::v1::{Device as SliceDevice, ResourceSlice};
use allot_kubelet::picture::{self, Device, Owner, Paints, Picture, Template};
use allot_kubelet_config::KubeletConfiguration;
use allot_store::Store;
use allot_topology::{CpuSet, NodeTopology};

use crate::fragmentation::NodeSetup;

/// The NUMA node a slice's device publishes (`numaNode` or `numa`, with or without a domain;
/// `numaNode` wins), as the node agents read it.
fn device_numa(device: &SliceDevice) -> Option<u32> {
    let named = |wanted: &str| {
        device
            .attributes
            .iter()
            .filter(|(name, _)| {
                name.as_str() == wanted || name.rsplit_once('/').is_some_and(|(_, n)| n == wanted)
            })
            .find_map(|(_, v)| v.int_value)
    };
    named("numaNode")
        .or_else(|| named("numa"))
        .and_then(|n| u32::try_from(n).ok())
}

/// Node-local devices per node, with the pod holding each (`namespace/name` of the claim's
/// first consumer, or `claim namespace/name`).
fn devices(store: &Store) -> BTreeMap<String, Vec<Device>> {
    let users = super::device_users(store);
    let mut out: BTreeMap<String, Vec<Device>> = BTreeMap::new();
    for slice in store.list::<ResourceSlice>() {
        let Some(node) = slice.spec.node_name.as_ref() else {
            continue;
        };
        let list = out.entry(node.to_string()).or_default();
        for device in &slice.spec.devices {
            let key = (
                slice.spec.driver.as_str(),
                slice.spec.pool.name.as_str(),
                device.name.as_str(),
            );
            list.push(Device {
                label: format!("{} {}", slice.spec.driver, device.name),
                numa: device_numa(device),
                owner: users.get(&key).cloned().map(Owner::Pod),
            });
        }
    }
    out
}

/// Containers' exclusive CPUs per node, from the pods' resources annotations (pods not
/// finished).
fn exclusive(store: &Store) -> HashMap<String, BTreeMap<u32, Owner>> {
    let mut out: HashMap<String, BTreeMap<u32, Owner>> = HashMap::new();
    for pod in store.list::<Pod>() {
        let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else {
            continue;
        };
        if matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed")) {
            continue;
        }
        let Some(value) = pod
            .metadata
            .annotations
            .get(crate::output::RESOURCES_ANNOTATION)
            .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        else {
            continue;
        };
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        for container in value["containers"].as_array().into_iter().flatten() {
            let container_name = container["name"].as_str().unwrap_or_default();
            for id in container["cpuIds"].as_array().into_iter().flatten() {
                if let Some(id) = id.as_u64().and_then(|i| u32::try_from(i).ok()) {
                    out.entry(node.to_string()).or_default().insert(
                        id,
                        Owner::Exclusive(name.clone(), container_name.to_string()),
                    );
                }
            }
        }
    }
    out
}

/// The CPUs the static policy reserves on a machine with a configuration (none for the none
/// policy, or when the node could not start), once per distinct pair.
#[derive(Default)]
struct Reserved(HashMap<String, Option<CpuSet>>);

impl Reserved {
    fn prepare(&mut self, key: &str, topology: &NodeTopology, config: &KubeletConfiguration) {
        if !self.0.contains_key(key) {
            let reserved = allot_kubelet::Node::start(
                topology.clone(),
                config,
                allot_kubelet_config::ValidateOptions::default(),
                &allot_kubelet::Checkpoints::default(),
            )
            .ok()
            .and_then(|node| match &node.cpu {
                allot_kubelet::CpuPolicy::Static(p) => Some(p.reserved().clone()),
                allot_kubelet::CpuPolicy::None(_) => None,
            });
            self.0.insert(key.to_string(), reserved);
        }
    }

    fn get(&self, key: &str) -> Option<&CpuSet> {
        self.0.get(key).and_then(Option::as_ref)
    }
}

/// The drawings of a store's nodes: the distinct layouts, and per node its layout's index
/// and its owners.
pub(super) struct Machines {
    /// The layouts.
    pub layouts: Vec<Template>,
    /// Per node name: (layout, owners).
    pub nodes: HashMap<String, (usize, Paints)>,
}

/// Draws every node of `store` (machines from `setup`; a node without one has no CPUs drawn).
pub(super) fn machines(store: &Store, setup: Option<NodeSetup<'_>>) -> Machines {
    let mut devices = devices(store);
    let mut exclusive = exclusive(store);
    let mut reserved = Reserved::default();
    let mut index: HashMap<String, usize> = HashMap::new();
    let mut out = Machines {
        layouts: Vec::new(),
        nodes: HashMap::new(),
    };
    // A node without a machine: nothing but its devices.
    let empty = NodeTopology {
        api_version: String::new(),
        kind: String::new(),
        metadata: Default::default(),
        note: None,
        declared: None,
        source: None,
        cpus: Vec::new(),
        numa_nodes: Vec::new(),
        devices: Vec::new(),
    };
    for node in store.list::<Node>() {
        let name = node.metadata.name.clone();
        let machine = setup.and_then(|s| s(node));
        let (topology, config_key) = match &machine {
            Some((topology, config)) => {
                let mut anonymous = topology.clone();
                anonymous.metadata.name.clear();
                let key = format!(
                    "{}\u{0}{}",
                    serde_json::to_string(&anonymous).unwrap_or_default(),
                    serde_json::to_string(config).unwrap_or_default()
                );
                reserved.prepare(&key, topology, config);
                (topology, key)
            }
            None => (&empty, String::new()),
        };
        let mut cpus: BTreeMap<u32, Owner> = BTreeMap::new();
        let held = exclusive.remove(&name).unwrap_or_default();
        let kept = reserved.get(&config_key);
        for cpu in &topology.cpus {
            let owner = if let Some(owner) = held.get(&cpu.id) {
                owner.clone()
            } else if kept.is_some_and(|r| r.contains(cpu.id)) {
                Owner::Reserved
            } else {
                Owner::Shared
            };
            cpus.insert(cpu.id, owner);
        }
        let picture = Picture {
            name: name.clone(),
            topology,
            cpus,
            devices: devices.remove(&name).unwrap_or_default(),
            rejected: Vec::new(),
        };
        // The layout: the machine (without its name) and the devices' names and NUMA nodes.
        let mut layout_key = config_key.split('\u{0}').next().unwrap_or("").to_string();
        for device in &picture.devices {
            layout_key.push_str(&format!("\u{0}{}\u{1}{:?}", device.label, device.numa));
        }
        let layout = *index.entry(layout_key).or_insert_with(|| {
            out.layouts.push(picture::template(&picture));
            out.layouts.len() - 1
        });
        out.nodes.insert(name, (layout, picture::paint(&picture)));
    }
    out
}
