//! `allot.dev/v1alpha1`: AllocationOptions, the header of a DRA scenario file (see
//! `tests/conformance/README.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::meta::v1::ObjectMeta;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "allot.dev/v1alpha1";

/// What to allocate, for which node, with which feature gates.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocationOptions {
    /// `allot.dev/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `AllocationOptions`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Optional metadata.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<ObjectMeta>,
    /// The name of the Node to allocate for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// Kubernetes feature gates; gates not listed take their 1.37 defaults.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub feature_gates: BTreeMap<String, bool>,
    /// Claims to allocate in order (`name` or `namespace/name`); empty means every unallocated
    /// claim in file order.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub claims: Vec<String>,
    /// Search steps after which the allocation gives up (allot's budget per allocate call).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_search_steps: Option<u64>,
    /// Memory the search may spend remembering failed states, as a quantity of bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_search_memory: Option<allot_quantity::Quantity>,
}

/// A NodeTopology as the API server stores it: standard object metadata and the machine's
/// description kept as JSON. `allot-topology` owns the machine's schema (this crate must not
/// depend on it), so the API server checks the body by decoding it with `allot-topology`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeTopology {
    /// `allot.dev/v1alpha1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `NodeTopology`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata; the name is the Node's name.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// A free-form remark.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Counts stated explicitly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub declared: Option<serde_json::Value>,
    /// Provenance.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<serde_json::Value>,
    /// Logical CPUs.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub cpus: Vec<serde_json::Value>,
    /// NUMA nodes.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub numa_nodes: Vec<serde_json::Value>,
    /// Device-plugin devices.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub devices: Vec<serde_json::Value>,
}
