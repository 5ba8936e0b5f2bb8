//! `NodeTopology` (apiVersion `allot.dev/v1alpha1`): the machine as the kubelet's resource
//! managers see it. Plain data with strict decoding; queries live in [`crate::CpuTopology`].

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::{ByteSize, TopologyError};

/// The apiVersion of `NodeTopology` documents.
pub const API_VERSION: &str = "allot.dev/v1alpha1";
/// The kind of `NodeTopology` documents.
pub const KIND: &str = "NodeTopology";

/// A node's machine topology: logical CPUs, NUMA nodes with memory, and device-plugin devices.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeTopology {
    /// Always `allot.dev/v1alpha1`.
    pub api_version: String,
    /// Always `NodeTopology`.
    pub kind: String,
    /// Object metadata (the name).
    #[serde(default)]
    pub metadata: Metadata,
    /// A free-form remark about where the data came from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Counts stated explicitly (upstream's `CPUTopology.Num*` fields); when absent they are
    /// derived from `cpus`. They can disagree with `cpus` and then win, as upstream's do.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<DeclaredCounts>,
    /// Provenance (e.g. repo, commit, file, var of an upstream fixture).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<BTreeMap<String, String>>,
    /// Every online logical CPU.
    #[serde(default)]
    pub cpus: Vec<CpuInfo>,
    /// NUMA nodes with memory, hugepages and distances.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub numa_nodes: Vec<NumaNode>,
    /// Device-plugin devices with their NUMA affinity.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<Device>,
}

/// Object metadata of a `NodeTopology`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The name (for a discovered machine, its hostname).
    #[serde(default)]
    pub name: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// Upstream's explicit `CPUTopology` counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeclaredCounts {
    /// `NumCPUs`: logical CPUs.
    #[serde(rename = "numCPUs")]
    pub num_cpus: usize,
    /// `NumCores`: physical cores.
    #[serde(rename = "numCores")]
    pub num_cores: usize,
    /// `NumSockets`.
    #[serde(rename = "numSockets")]
    pub num_sockets: usize,
    /// `NumNUMANodes`.
    #[serde(rename = "numNUMANodes")]
    pub num_numa_nodes: usize,
    /// `NumUncoreCache`.
    #[serde(rename = "numUncoreCache")]
    pub num_uncore_cache: usize,
}

/// One logical CPU and where it sits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CpuInfo {
    /// The logical CPU id.
    pub id: u32,
    /// The physical core id, unique across the machine (sysfs discovery uses the lowest thread
    /// id of the core, as upstream does).
    pub core: u32,
    /// The socket (physical package) id.
    pub socket: u32,
    /// The NUMA node id.
    pub numa: u32,
    /// The uncore (last-level, L3) cache id; 0 when not given.
    #[serde(default)]
    pub uncore_cache: u32,
}

/// One NUMA node: memory, hugepages and distances.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NumaNode {
    /// The NUMA node id.
    pub id: u32,
    /// Total memory of the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<ByteSize>,
    /// Hugepages per size, keyed by resource name (`hugepages-2Mi`, `hugepages-1Gi`), as total
    /// bytes of that page size on this node.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub hugepages: BTreeMap<String, ByteSize>,
    /// Distances to every NUMA node (including itself), as sysfs reports them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub distances: Vec<NumaDistance>,
    /// The cadvisor `Node` literal of an upstream test, when a scenario carries one
    /// (`null` where upstream passes none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine_info: Option<MachineInfoNode>,
    /// True when this entry was derived by the scenario's author rather than given upstream.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub derived: bool,
}

/// The distance from one NUMA node to another.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NumaDistance {
    /// The other NUMA node.
    pub node: u32,
    /// The relative distance (10 = local).
    pub distance: u32,
}

/// cadvisor's per-node `MachineInfo` fields, spelled as cadvisor serialises them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineInfoNode {
    /// `Id`.
    #[serde(rename = "Id")]
    pub id: u32,
    /// `Memory` in bytes.
    #[serde(rename = "Memory")]
    pub memory: u64,
    /// `HugePages`.
    #[serde(rename = "HugePages", default)]
    pub huge_pages: Vec<MachineInfoHugePages>,
}

/// cadvisor's `HugePagesInfo`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineInfoHugePages {
    /// `PageSize` in KiB.
    #[serde(rename = "PageSize")]
    pub page_size: u64,
    /// `NumPages`.
    #[serde(rename = "NumPages")]
    pub num_pages: u64,
}

/// A device-plugin device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Device {
    /// The extended resource name (`vendor.com/gpu`).
    pub resource_name: String,
    /// The device id reported by the plugin.
    pub id: String,
    /// The NUMA node the device is attached to; absent when it has no affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub numa: Option<u32>,
}

impl NodeTopology {
    /// An empty topology with the given name.
    pub fn new(name: impl Into<String>) -> Self {
        NodeTopology {
            api_version: API_VERSION.to_string(),
            kind: KIND.to_string(),
            metadata: Metadata {
                name: name.into(),
                ..Metadata::default()
            },
            note: None,
            declared: None,
            source: None,
            cpus: Vec::new(),
            numa_nodes: Vec::new(),
            devices: Vec::new(),
        }
    }

    /// Decodes one YAML (or JSON) document strictly and validates it.
    pub fn from_yaml_str(text: &str) -> Result<Self, TopologyError> {
        let topo: NodeTopology =
            serde_saphyr::from_str(text).map_err(|e| TopologyError::Decode(e.to_string()))?;
        topo.validate()?;
        Ok(topo)
    }

    /// Encodes as YAML.
    pub fn to_yaml_string(&self) -> Result<String, TopologyError> {
        serde_saphyr::to_string(self).map_err(|e| TopologyError::Encode(e.to_string()))
    }

    /// Checks apiVersion and kind and that CPU, NUMA node and device ids are unique.
    pub fn validate(&self) -> Result<(), TopologyError> {
        if self.api_version != API_VERSION || self.kind != KIND {
            return Err(TopologyError::WrongKind {
                api_version: self.api_version.clone(),
                kind: self.kind.clone(),
            });
        }
        let mut seen = BTreeSet::new();
        for cpu in &self.cpus {
            for (what, id) in [
                ("cpu", cpu.id),
                ("core", cpu.core),
                ("socket", cpu.socket),
                ("NUMA node", cpu.numa),
                ("uncore cache", cpu.uncore_cache),
            ] {
                if id > crate::MAX_CPU_ID {
                    return Err(TopologyError::IdTooLarge { what, id });
                }
            }
            if !seen.insert(cpu.id) {
                return Err(TopologyError::Duplicate {
                    what: "cpu",
                    id: cpu.id.to_string(),
                });
            }
        }
        let mut seen = BTreeSet::new();
        for node in &self.numa_nodes {
            if !seen.insert(node.id) {
                return Err(TopologyError::Duplicate {
                    what: "NUMA node",
                    id: node.id.to_string(),
                });
            }
        }
        let mut seen = BTreeSet::new();
        for dev in &self.devices {
            if !seen.insert((dev.resource_name.as_str(), dev.id.as_str())) {
                return Err(TopologyError::Duplicate {
                    what: "device",
                    id: format!("{}/{}", dev.resource_name, dev.id),
                });
            }
        }
        Ok(())
    }

    /// The NUMA node with the given id.
    pub fn numa_node(&self, id: u32) -> Option<&NumaNode> {
        self.numa_nodes.iter().find(|n| n.id == id)
    }

    /// The distance between two NUMA nodes, when known.
    pub fn numa_distance(&self, from: u32, to: u32) -> Option<u32> {
        self.numa_node(from)?
            .distances
            .iter()
            .find(|d| d.node == to)
            .map(|d| d.distance)
    }
}
