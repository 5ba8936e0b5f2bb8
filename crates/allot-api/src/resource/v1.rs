//! `resource.k8s.io/v1`: DeviceClass, ResourceClaim, ResourceClaimTemplate, ResourceSlice and
//! DeviceTaintRule, as in Kubernetes 1.37, including the alpha fields.
//!
//! Go `string` fields that upstream marks required are plain `String` with `#[serde(default)]`:
//! a missing value decodes as empty and validation reports "Required value", as the API server
//! does. Optional scalars and structs are `Option<T>`; lists are `Vec<T>` (empty = absent).

use std::collections::BTreeMap;
use std::sync::Arc;

pub use smol_str::SmolStr;

use crate::Quantity;
use serde::{Deserialize, Deserializer, Serialize};

use crate::core::v1::NodeSelector;
use crate::meta::v1::{Condition, ObjectMeta, Time, Uid};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "resource.k8s.io/v1";

/// The finalizer set on claims allocated by a builtin controller.
pub const FINALIZER: &str = "resource.kubernetes.io/delete-protection";
/// The namespace label that permits `adminAccess: true` in that namespace.
pub const DRA_ADMIN_NAMESPACE_LABEL_KEY: &str = "resource.kubernetes.io/admin-access";
/// The prefix of the implicit extended resource name of a DeviceClass.
pub const RESOURCE_DEVICE_CLASS_PREFIX: &str = "deviceclass.resource.kubernetes.io/";
/// The annotation on the special claim generated for extended resources.
pub const EXTENDED_RESOURCE_CLAIM_ANNOTATION: &str =
    "resource.kubernetes.io/extended-resource-claim";
/// The annotation on template-generated claims naming the pod's claim entry.
pub const POD_RESOURCE_CLAIM_ANNOTATION: &str = "resource.kubernetes.io/pod-claim-name";

/// Maximum length of a driver name.
pub const DRIVER_NAME_MAX_LENGTH: usize = 63;
/// Maximum length of a pool name.
pub const POOL_NAME_MAX_LENGTH: usize = 253;
/// Maximum number of devices in a slice.
pub const RESOURCE_SLICE_MAX_DEVICES: usize = 128;
/// Maximum number of devices in a slice when any device uses taints, counters or list attributes.
pub const RESOURCE_SLICE_MAX_DEVICES_WITH_ADVANCED_FEATURES: usize = 64;
/// Maximum number of binding conditions per device.
pub const BINDING_CONDITIONS_MAX_SIZE: usize = 4;
/// Maximum number of binding failure conditions per device.
pub const BINDING_FAILURE_CONDITIONS_MAX_SIZE: usize = 4;
/// Maximum number of counter sets per slice.
pub const RESOURCE_SLICE_MAX_COUNTER_SETS: usize = 8;
/// Maximum number of counters per counter set.
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_COUNTER_SET: usize = 32;
/// Maximum number of counter consumptions per device.
pub const RESOURCE_SLICE_MAX_DEVICE_COUNTER_CONSUMPTIONS_PER_DEVICE: usize = 2;
/// Maximum number of counters per counter consumption.
pub const RESOURCE_SLICE_MAX_COUNTERS_PER_DEVICE_COUNTER_CONSUMPTION: usize = 32;
/// Maximum number of compatibility groups per counter consumption.
pub const DEVICE_COMPATIBILITY_GROUPS_MAX_SIZE: usize = 2;
/// Maximum number of attributes and capacities per device.
pub const RESOURCE_SLICE_MAX_ATTRIBUTES_AND_CAPACITIES_PER_DEVICE: usize = 32;
/// Maximum number of attribute values (scalars plus list elements) per device.
pub const RESOURCE_SLICE_MAX_ATTRIBUTE_VALUES_PER_DEVICE: usize = 48;
/// Maximum length of the domain of a qualified name.
pub const DEVICE_MAX_DOMAIN_LENGTH: usize = 63;
/// Maximum length of the identifier of a qualified name.
pub const DEVICE_MAX_ID_LENGTH: usize = 32;
/// Maximum length of a string or version attribute value.
pub const DEVICE_ATTRIBUTE_MAX_VALUE_LENGTH: usize = 64;
/// Maximum number of taints per device.
pub const DEVICE_TAINTS_MAX_LENGTH: usize = 16;
/// Maximum number of conditions in a DeviceTaintRule status.
pub const DEVICE_TAINT_RULE_STATUS_MAX_CONDITIONS: usize = 8;
/// Maximum number of requests per claim.
pub const DEVICE_REQUESTS_MAX_SIZE: usize = ALLOCATION_RESULTS_MAX_SIZE;
/// Maximum number of constraints per claim.
pub const DEVICE_CONSTRAINTS_MAX_SIZE: usize = 32;
/// Maximum number of config entries per claim or class.
pub const DEVICE_CONFIG_MAX_SIZE: usize = 32;
/// Maximum number of selectors per request or class.
pub const DEVICE_SELECTORS_MAX_SIZE: usize = 32;
/// Maximum number of subrequests per request.
pub const FIRST_AVAILABLE_DEVICE_REQUEST_MAX_SIZE: usize = 8;
/// Maximum number of tolerations per request.
pub const DEVICE_TOLERATIONS_MAX_LENGTH: usize = 16;
/// Maximum number of derived attributes per request.
pub const DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE: usize = 32;
/// Cost limit of one CEL selector.
pub const CEL_SELECTOR_EXPRESSION_MAX_COST: u64 = 1_000_000;
/// Combined cost limit of all derived attribute expressions in one claim.
pub const DEVICE_CLAIM_DERIVED_ATTRIBUTE_CEL_MAX_COST: u64 = 1_000_000;
/// Maximum length of a CEL expression.
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;
/// Maximum length of opaque parameters (raw JSON).
pub const OPAQUE_PARAMETERS_MAX_LENGTH: usize = 10 * 1024;
/// Maximum number of entries in `status.reservedFor`.
pub const RESOURCE_CLAIM_RESERVED_FOR_MAX_SIZE: usize = 256;
/// Maximum number of entries in `status.allocation.devices.results`.
pub const ALLOCATION_RESULTS_MAX_SIZE: usize = 32;
/// Maximum number of entries in `status.allocation.devices.config`.
pub const ALLOCATION_CONFIG_MAX_SIZE: usize = 64;
/// Maximum number of conditions in a device status.
pub const ALLOCATED_DEVICE_STATUS_MAX_CONDITIONS: usize = 8;
/// Maximum length of the raw data in a device status.
pub const ALLOCATED_DEVICE_STATUS_DATA_MAX_LENGTH: usize = 10 * 1024;
/// Maximum number of IPs in a device's network data.
pub const NETWORK_DEVICE_DATA_MAX_IPS: usize = 16;
/// Maximum length of an interface name in network data.
pub const NETWORK_DEVICE_DATA_INTERFACE_NAME_MAX_LENGTH: usize = 256;
/// Maximum length of a hardware address in network data.
pub const NETWORK_DEVICE_DATA_HARDWARE_ADDRESS_MAX_LENGTH: usize = 128;
/// Maximum number of valid values in a capacity request policy.
pub const CAPACITY_REQUEST_POLICY_DISCRETE_MAX_OPTIONS: usize = 10;

/// The name of a device attribute or capacity: a C identifier, optionally prefixed by a DNS
/// subdomain and `/`.
pub type QualifiedName = String;
/// A [`QualifiedName`] whose domain is set.
pub type FullyQualifiedName = String;

// ---------------------------------------------------------------------------------------------
// ResourceSlice
// ---------------------------------------------------------------------------------------------

/// One or more devices in a pool, published by a driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSlice {
    /// `resource.k8s.io/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `ResourceSlice`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// What the driver publishes.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ResourceSliceSpec,
}

/// The information published by a driver in one ResourceSlice.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSliceSpec {
    /// The driver's name (a DNS subdomain).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// The pool this slice belongs to.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pool: ResourcePool,
    /// The node providing the devices (one of the node selection fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The nodes with access (one of the node selection fields; exactly one term).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// All nodes have access (one of the node selection fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// The devices of this slice.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub devices: Vec<Device>,
    /// Node access is set per device (one of the node selection fields).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_device_node_selection: Option<bool>,
    /// Counter sets that devices of the pool consume from.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub shared_counters: Vec<CounterSet>,
    /// The string attribute naming each partitionable device's partition type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition_type_attribute: Option<FullyQualifiedName>,
    /// Node-local operations skipped for the devices of this slice.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub skip_node_operations: Vec<SkipNodeOperation>,
}

string_enum! {
    /// A node-local operation that can be skipped.
    pub enum SkipNodeOperation {
        /// Every node-local operation.
        All = "*",
        /// The NodePrepareResources gRPC call.
        NodePrepareResources = "NodePrepareResources",
        /// The NodeUnprepareResources gRPC call.
        NodeUnprepareResources = "NodeUnprepareResources",
    }
}

/// A named set of counters that devices of the pool consume from.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CounterSet {
    /// The counter set's name (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The counters, by name (DNS labels).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub counters: BTreeMap<String, Counter>,
}

/// The pool a ResourceSlice belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcePool {
    /// The pool name: DNS subdomains separated by `/`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The pool generation; consumers use only slices of the highest generation.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub generation: i64,
    /// The number of slices in the pool at this generation.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub resource_slice_count: i64,
}

/// One device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Device {
    /// The device's name, unique in the pool (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Attributes by qualified name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub attributes: BTreeMap<QualifiedName, DeviceAttribute>,
    /// Capacities by qualified name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub capacity: BTreeMap<QualifiedName, DeviceCapacity>,
    /// Counters consumed from the pool's counter sets.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub consumes_counters: Vec<DeviceCounterConsumption>,
    /// The node of this device (with per-device node selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The nodes of this device (with per-device node selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// All nodes have this device (with per-device node selection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub all_nodes: Option<bool>,
    /// Driver-defined taints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub taints: Vec<DeviceTaint>,
    /// Whether an allocation is bound to the node chosen at allocation time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binds_to_node: Option<bool>,
    /// Conditions that must be true before binding.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub binding_conditions: Vec<String>,
    /// Conditions that signal a binding failure.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub binding_failure_conditions: Vec<String>,
    /// Whether the device may be allocated more than once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_multiple_allocations: Option<bool>,
    /// Node-allocatable resources this device accounts for, by node resource name.
    ///
    /// Decoding also accepts the spec's `{mapping: {cpu: ...}, overhead: {memory: ...}}` shape
    /// and converts it to the API shape `{cpu: {mapping: ...}, memory: {overhead: ...}}`.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "deserialize_node_allocatable_resources"
    )]
    pub node_allocatable_resources: BTreeMap<String, NodeAllocatableResource>,
}

/// How a device accounts for one node-allocatable resource.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAllocatableResource {
    /// The device models the resource directly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mapping: Option<NodeAllocatableMapping>,
    /// The device needs the resource as auxiliary overhead.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<NodeAllocatableOverhead>,
}

/// How an allocation translates into a node-allocatable quantity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAllocatableMapping {
    /// The consumed capacity that is the base quantity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_key: Option<QualifiedName>,
    /// Multiplier for the consumed capacity (required with `capacityKey`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity_multiplier: Option<Quantity>,
    /// Multiplier for the number of allocated devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_multiplier: Option<Quantity>,
}

/// Auxiliary node-allocatable overhead of a device.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAllocatableOverhead {
    /// Overhead once per pod referencing the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_pod: Option<Quantity>,
    /// Overhead per container reference to the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_container: Option<Quantity>,
}

/// One entry of `nodeAllocatableResources`: the spec's shape (grouped by kind first) or the API
/// shape (one resource).
enum NodeAllocatableEntry {
    Mapping(BTreeMap<String, NodeAllocatableMapping>),
    Overhead(BTreeMap<String, NodeAllocatableOverhead>),
    Resource(Box<NodeAllocatableResource>),
}

pub(crate) fn deserialize_node_allocatable_resources<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<BTreeMap<String, NodeAllocatableResource>, D::Error> {
    use serde::de::Error;
    let raw = BTreeMap::<String, serde_json::Value>::deserialize(deserializer)?;
    let mut out: BTreeMap<String, NodeAllocatableResource> = BTreeMap::new();
    for (key, value) in raw {
        let entry = match key.as_str() {
            "mapping" => serde_json::from_value(value)
                .map(NodeAllocatableEntry::Mapping)
                .map_err(|err| D::Error::custom(format!("mapping: {err}")))?,
            "overhead" => serde_json::from_value(value)
                .map(NodeAllocatableEntry::Overhead)
                .map_err(|err| D::Error::custom(format!("overhead: {err}")))?,
            _ => serde_json::from_value(value)
                .map(|resource| NodeAllocatableEntry::Resource(Box::new(resource)))
                .map_err(|err| D::Error::custom(format!("{key}: {err}")))?,
        };
        match entry {
            NodeAllocatableEntry::Mapping(by_resource) => {
                for (resource, mapping) in by_resource {
                    out.entry(resource).or_default().mapping = Some(mapping);
                }
            }
            NodeAllocatableEntry::Overhead(by_resource) => {
                for (resource, overhead) in by_resource {
                    out.entry(resource).or_default().overhead = Some(overhead);
                }
            }
            NodeAllocatableEntry::Resource(resource) => {
                let slot = out.entry(key).or_default();
                if resource.mapping.is_some() {
                    slot.mapping = resource.mapping;
                }
                if resource.overhead.is_some() {
                    slot.overhead = resource.overhead;
                }
            }
        }
    }
    Ok(out)
}

/// Counters a device consumes from one counter set.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceCounterConsumption {
    /// The counter set consumed from.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub counter_set: String,
    /// The consumed counters by name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub counters: BTreeMap<String, Counter>,
    /// Opaque groups; co-allocated devices on one counter set must share one.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub compatibility_groups: Vec<String>,
}

/// A quantity of a device.
///
/// Decoding also accepts a bare quantity (`memory: 40Gi`) as `{value: 40Gi}`, the shorthand the
/// spec's node-allocatable CPU example uses; serialising always writes the API's object shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceCapacity {
    /// The total capacity.
    pub value: Quantity,
    /// How requests consume this capacity when the device allows multiple allocations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_policy: Option<CapacityRequestPolicy>,
}

/// The API shape of [`DeviceCapacity`], decoded strictly.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct DeviceCapacityObject {
    value: Quantity,
    #[serde(default)]
    request_policy: Option<CapacityRequestPolicy>,
}

impl<'de> Deserialize<'de> for DeviceCapacity {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct CapacityVisitor;

        impl<'de> serde::de::Visitor<'de> for CapacityVisitor {
            type Value = DeviceCapacity;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a DeviceCapacity object or a quantity")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                map: A,
            ) -> Result<Self::Value, A::Error> {
                let object = DeviceCapacityObject::deserialize(
                    serde::de::value::MapAccessDeserializer::new(map),
                )?;
                Ok(DeviceCapacity {
                    value: object.value,
                    request_policy: object.request_policy,
                })
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                let value = Quantity::deserialize(serde::de::value::StrDeserializer::<E>::new(v))?;
                Ok(DeviceCapacity {
                    value,
                    request_policy: None,
                })
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                let value = Quantity::deserialize(serde::de::value::I64Deserializer::<E>::new(v))?;
                Ok(DeviceCapacity {
                    value,
                    request_policy: None,
                })
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                let value = Quantity::deserialize(serde::de::value::U64Deserializer::<E>::new(v))?;
                Ok(DeviceCapacity {
                    value,
                    request_policy: None,
                })
            }

            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                let value = Quantity::deserialize(serde::de::value::F64Deserializer::<E>::new(v))?;
                Ok(DeviceCapacity {
                    value,
                    request_policy: None,
                })
            }
        }

        deserializer.deserialize_any(CapacityVisitor)
    }
}

/// A counter's amount.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Counter {
    /// How much of the counter is available (or consumed).
    pub value: Quantity,
}

/// How requests consume a device capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequestPolicy {
    /// The amount consumed by a request that does not name this capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<Quantity>,
    /// The acceptable amounts, ascending (at most 10).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub valid_values: Vec<Quantity>,
    /// The acceptable range.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_range: Option<CapacityRequestPolicyRange>,
}

/// A range of acceptable capacity amounts.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequestPolicyRange {
    /// The minimum (required).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<Quantity>,
    /// The maximum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<Quantity>,
    /// The step between valid amounts, starting at `min`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub step: Option<Quantity>,
}

/// A device attribute: exactly one field is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAttribute {
    /// An integer.
    #[serde(default, rename = "int", skip_serializing_if = "Option::is_none")]
    pub int_value: Option<i64>,
    /// A boolean.
    #[serde(default, rename = "bool", skip_serializing_if = "Option::is_none")]
    pub bool_value: Option<bool>,
    /// A string of at most 64 characters.
    #[serde(default, rename = "string", skip_serializing_if = "Option::is_none")]
    pub string_value: Option<String>,
    /// A semantic version of at most 64 characters.
    #[serde(default, rename = "version", skip_serializing_if = "Option::is_none")]
    pub version_value: Option<String>,
    /// A non-empty list of integers (DRAListTypeAttributes).
    #[serde(
        default,
        rename = "ints",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub int_values: Vec<i64>,
    /// A non-empty list of booleans (DRAListTypeAttributes).
    #[serde(
        default,
        rename = "bools",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub bool_values: Vec<bool>,
    /// A non-empty list of strings (DRAListTypeAttributes).
    #[serde(
        default,
        rename = "strings",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub string_values: Vec<String>,
    /// A non-empty list of semantic versions (DRAListTypeAttributes).
    #[serde(
        default,
        rename = "versions",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub version_values: Vec<String>,
}

impl DeviceAttribute {
    /// Whether one of the list fields is set.
    pub fn is_list(&self) -> bool {
        !self.int_values.is_empty()
            || !self.bool_values.is_empty()
            || !self.string_values.is_empty()
            || !self.version_values.is_empty()
    }

    /// The number of values: one per scalar field set plus every list element.
    pub fn value_count(&self) -> usize {
        usize::from(self.int_value.is_some())
            + usize::from(self.bool_value.is_some())
            + usize::from(self.string_value.is_some())
            + usize::from(self.version_value.is_some())
            + self.int_values.len()
            + self.bool_values.len()
            + self.string_values.len()
            + self.version_values.len()
    }
}

string_enum! {
    /// The effect of a device taint.
    pub enum DeviceTaintEffect {
        /// No effect; the taint is informational.
        None = "None",
        /// Do not allocate the device to claims that do not tolerate it.
        NoSchedule = "NoSchedule",
        /// Also evict pods using the device.
        NoExecute = "NoExecute",
    }
}

/// A taint on a device.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaint {
    /// The taint key (a label name).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
    /// The taint value (a label value).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub value: String,
    /// The effect.
    #[serde(default = "DeviceTaint::missing_effect")]
    pub effect: DeviceTaintEffect,
    /// When the taint was added.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Time>,
}

impl DeviceTaint {
    fn missing_effect() -> DeviceTaintEffect {
        DeviceTaintEffect::Other(String::new())
    }
}

impl Default for DeviceTaint {
    fn default() -> Self {
        Self {
            key: String::new(),
            value: String::new(),
            effect: Self::missing_effect(),
            time_added: None,
        }
    }
}

/// Adds one taint to every device matching a selector.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaintRule {
    /// `resource.k8s.io/v1` (also read: `v1beta2`, `v1alpha3`).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `DeviceTaintRule`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// The selector and the taint.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: DeviceTaintRuleSpec,
    /// Eviction status.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: DeviceTaintRuleStatus,
}

/// The selector and the taint of a DeviceTaintRule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaintRuleSpec {
    /// Which devices get the taint; absent selects none, empty selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_selector: Option<DeviceTaintSelector>,
    /// The taint.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub taint: DeviceTaint,
}

/// Which devices a DeviceTaintRule applies to; all given criteria must match.
///
/// `deviceClassName` and `selectors` are the spec's extension (upstream removed them in 1.35):
/// a device matches the class when it satisfies the class's selectors.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaintSelector {
    /// Only devices selected by this DeviceClass (extension).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_class_name: Option<String>,
    /// Only devices of this driver.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// Only devices in this pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<String>,
    /// Only devices with this name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<String>,
    /// Only devices satisfying all these CEL selectors (extension).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selectors: Vec<DeviceSelector>,
}

/// Status of a DeviceTaintRule.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceTaintRuleStatus {
    /// Conditions, e.g. `EvictionInProgress`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Condition>,
}

impl DeviceTaintRuleStatus {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.conditions.is_empty()
    }
}

// ---------------------------------------------------------------------------------------------
// ResourceClaim
// ---------------------------------------------------------------------------------------------

/// A request for access to devices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaim {
    /// `resource.k8s.io/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `ResourceClaim`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// What is requested.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ResourceClaimSpec,
    /// Allocation and reservation.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ResourceClaimStatus,
}

/// What a ResourceClaim requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimSpec {
    /// The device requests.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub devices: DeviceClaim,
}

/// How devices are requested.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClaim {
    /// The requests; all must be satisfied.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: Vec<DeviceRequest>,
    /// Constraints on the set of allocated devices.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub constraints: Vec<DeviceConstraint>,
    /// Configuration for drivers.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub config: Vec<DeviceClaimConfiguration>,
}

/// One request: either `exactly` or `firstAvailable`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRequest {
    /// The request name (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// A single request that must be met exactly.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exactly: Option<ExactDeviceRequest>,
    /// Prioritised alternatives; the first that can be satisfied is chosen.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub first_available: Vec<DeviceSubRequest>,
}

string_enum! {
    /// How devices are allocated for a request.
    pub enum DeviceAllocationMode {
        /// Every matching device in a pool.
        All = "All",
        /// A given number of devices.
        ExactCount = "ExactCount",
    }
}

/// A request for one or more identical devices.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExactDeviceRequest {
    /// The DeviceClass whose selectors and config apply.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub device_class_name: String,
    /// Selectors every device must satisfy.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selectors: Vec<DeviceSelector>,
    /// The allocation mode (defaulted to `ExactCount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    /// The number of devices for `ExactCount` (defaulted to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Administrative access to devices that may be in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// Tolerations for device taints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub tolerations: Vec<DeviceToleration>,
    /// Capacity required from each device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
    /// Virtual attributes computed per candidate device for constraints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub derived_attributes: Vec<DeviceDerivedAttribute>,
}

/// One alternative of a `firstAvailable` list.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSubRequest {
    /// The subrequest name (a DNS label); referenced as `<request>/<subrequest>`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The DeviceClass whose selectors and config apply.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub device_class_name: String,
    /// Selectors every device must satisfy.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selectors: Vec<DeviceSelector>,
    /// The allocation mode (defaulted to `ExactCount`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_mode: Option<DeviceAllocationMode>,
    /// The number of devices for `ExactCount` (defaulted to 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i64>,
    /// Tolerations for device taints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub tolerations: Vec<DeviceToleration>,
    /// Capacity required from each device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRequirements>,
    /// Virtual attributes computed per candidate device for constraints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub derived_attributes: Vec<DeviceDerivedAttribute>,
}

/// Capacity requirements of a request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacityRequirements {
    /// Required amounts by capacity name (domain defaults to the device's driver).
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: BTreeMap<QualifiedName, Quantity>,
}

/// A device selector: exactly one field is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceSelector {
    /// A CEL expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cel: Option<CelDeviceSelector>,
}

/// A CEL expression selecting a device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CelDeviceSelector {
    /// The expression; must evaluate to a bool.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub expression: String,
}

/// A virtual attribute computed by CEL for each candidate device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceDerivedAttribute {
    /// The attribute name (fully qualified).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: FullyQualifiedName,
    /// The CEL expression producing a scalar or a list of scalars.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub expression: String,
}

/// A constraint on the devices of some requests: exactly one of the attribute fields is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceConstraint {
    /// The requests (`<request>` or `<request>/<subrequest>`); empty means all.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: Vec<String>,
    /// All devices must share a value of this attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_attribute: Option<FullyQualifiedName>,
    /// All devices must have distinct values of this attribute.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distinct_attribute: Option<FullyQualifiedName>,
}

/// Configuration in a claim, for some of its requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClaimConfiguration {
    /// The requests this applies to; empty means all.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: Vec<String>,
    /// Driver-specific parameters (the inlined `DeviceConfiguration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// Driver-specific configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OpaqueDeviceConfiguration {
    /// The driver receiving the parameters.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// Arbitrary parameters (raw JSON, at most 10 KiB).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub parameters: serde_json::Value,
}

string_enum! {
    /// The operator of a [`DeviceToleration`].
    pub enum DeviceTolerationOperator {
        /// The value equals.
        Equal = "Equal",
        /// The key exists (any value).
        Exists = "Exists",
    }
}

/// A toleration of device taints.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceToleration {
    /// The taint key; empty means every key (with `Exists`).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub key: String,
    /// The operator (defaulted to `Equal`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<DeviceTolerationOperator>,
    /// The value to match.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub value: String,
    /// The effect to match; absent means every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<DeviceTaintEffect>,
    /// How long a NoExecute taint is tolerated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Allocation and reservation state of a claim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimStatus {
    /// The allocation, once allocated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation: Option<AllocationResult>,
    /// Who may use the claim.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub reserved_for: Vec<ResourceClaimConsumerReference>,
    /// Per-device status reported by drivers.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub devices: Vec<AllocatedDeviceStatus>,
}

impl ResourceClaimStatus {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.allocation.is_none() && self.reserved_for.is_empty() && self.devices.is_empty()
    }
}

/// A consumer of a claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimConsumerReference {
    /// The API group; empty for core.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_group: String,
    /// The resource, e.g. `pods`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub resource: String,
    /// The name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The UID.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub uid: Uid,
}

/// The result of allocating a claim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocationResult {
    /// The allocated devices.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub devices: DeviceAllocationResult,
    /// Where the devices are available; absent means everywhere. Shared: an allocator hands
    /// out the same selector (typically `metadata.name In [node]`) for every claim it
    /// allocates on a node, and copies of the result (claim status, caches, events) share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<Arc<NodeSelector>>,
    /// When the allocation was made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocation_timestamp: Option<Time>,
}

/// The allocated devices and their configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAllocationResult {
    /// One entry per allocated device.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub results: Vec<DeviceRequestAllocationResult>,
    /// Claim and class configuration combined.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub config: Vec<DeviceAllocationConfiguration>,
}

impl DeviceAllocationResult {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        self.results.is_empty() && self.config.is_empty()
    }
}

/// Capacities by name: a `BTreeMap` (it derefs to one, and serialises as one) whose drop
/// costs nothing when it is empty, as it is in nearly every allocation result (only shares
/// of devices allowing multiple allocations consume capacity). An empty `BTreeMap` owns no
/// memory, yet dropping one walks its generic teardown, some fifty instructions per result.
#[derive(Clone, Default)]
pub struct CapacityMap {
    map: std::mem::ManuallyDrop<BTreeMap<QualifiedName, Quantity>>,
    /// Whether the map may own memory: it was handed in, or handed out for writing (a map
    /// emptied by removals can keep an empty node). A map made empty and never written owns
    /// nothing, and its drop is skipped.
    owns: bool,
}

impl CapacityMap {
    /// Whether no capacity is listed.
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
}

impl PartialEq for CapacityMap {
    fn eq(&self, other: &Self) -> bool {
        *self.map == *other.map
    }
}

impl Drop for CapacityMap {
    fn drop(&mut self) {
        // The map is moved out and dropped; the empty map left in its place owns nothing.
        if self.owns {
            drop(std::mem::take(&mut *self.map));
        }
    }
}

impl std::ops::Deref for CapacityMap {
    type Target = BTreeMap<QualifiedName, Quantity>;
    fn deref(&self) -> &Self::Target {
        &self.map
    }
}

impl std::ops::DerefMut for CapacityMap {
    fn deref_mut(&mut self) -> &mut Self::Target {
        self.owns = true;
        &mut self.map
    }
}

impl From<BTreeMap<QualifiedName, Quantity>> for CapacityMap {
    fn from(map: BTreeMap<QualifiedName, Quantity>) -> Self {
        CapacityMap {
            map: std::mem::ManuallyDrop::new(map),
            owns: true,
        }
    }
}

impl FromIterator<(QualifiedName, Quantity)> for CapacityMap {
    fn from_iter<I: IntoIterator<Item = (QualifiedName, Quantity)>>(iter: I) -> Self {
        BTreeMap::from_iter(iter).into()
    }
}

impl<'a> IntoIterator for &'a CapacityMap {
    type Item = (&'a QualifiedName, &'a Quantity);
    type IntoIter = std::collections::btree_map::Iter<'a, QualifiedName, Quantity>;
    fn into_iter(self) -> Self::IntoIter {
        self.map.iter()
    }
}

impl std::fmt::Debug for CapacityMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        BTreeMap::fmt(self, f)
    }
}

impl Serialize for CapacityMap {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        BTreeMap::serialize(self, serializer)
    }
}

impl<'de> Deserialize<'de> for CapacityMap {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        BTreeMap::deserialize(deserializer).map(CapacityMap::from)
    }
}

/// One allocated device. The names are [`SmolStr`]s: an allocator hands out the same driver,
/// pool, device and request names call after call, and copying a name of up to 23 bytes (most
/// are) is a copy of 24 bytes, with neither an allocation nor an atomic reference count (a
/// longer name is shared, as an `Arc<str>`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRequestAllocationResult {
    /// The request (`<request>` or `<request>/<subrequest>`).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub request: SmolStr,
    /// The driver.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: SmolStr,
    /// The pool.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pool: SmolStr,
    /// The device.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub device: SmolStr,
    /// Allocated for administrative access.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_access: Option<bool>,
    /// The request's tolerations at allocation time.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub tolerations: Vec<DeviceToleration>,
    /// The device's binding conditions at allocation time.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub binding_conditions: Vec<String>,
    /// The device's binding failure conditions at allocation time.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub binding_failure_conditions: Vec<String>,
    /// Identifies one share of a device allowing multiple allocations.
    #[serde(default, rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<Uid>,
    /// Capacity consumed by this share.
    #[serde(
        default,
        skip_serializing_if = "CapacityMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub consumed_capacity: CapacityMap,
    /// The slice's `skipNodeOperations` at allocation time.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub skip_node_operations: Vec<SkipNodeOperation>,
}

string_enum! {
    /// Where an allocation's configuration came from.
    pub enum AllocationConfigSource {
        /// From the claim.
        FromClaim = "FromClaim",
        /// From a DeviceClass.
        FromClass = "FromClass",
    }
}

/// Configuration in an allocation result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceAllocationConfiguration {
    /// Where it came from.
    pub source: AllocationConfigSource,
    /// The requests this applies to; empty means all.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: Vec<String>,
    /// Driver-specific parameters (the inlined `DeviceConfiguration`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// Status of an allocated device, reported by its driver.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocatedDeviceStatus {
    /// The driver.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// The pool.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pool: String,
    /// The device.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub device: String,
    /// The share.
    #[serde(default, rename = "shareID", skip_serializing_if = "Option::is_none")]
    pub share_id: Option<Uid>,
    /// The device's conditions.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub conditions: Vec<Condition>,
    /// Driver-specific data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// Network information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_data: Option<NetworkDeviceData>,
}

/// Network details of an allocated device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkDeviceData {
    /// The interface name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub interface_name: String,
    /// Addresses in CIDR notation.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ips: Vec<String>,
    /// The hardware (MAC) address.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub hardware_address: String,
}

// ---------------------------------------------------------------------------------------------
// DeviceClass and ResourceClaimTemplate
// ---------------------------------------------------------------------------------------------

/// A category of devices, with selectors and configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClass {
    /// `resource.k8s.io/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `DeviceClass`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// Selectors and configuration.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: DeviceClassSpec,
}

/// What a DeviceClass selects and configures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassSpec {
    /// Selectors every device claimed through this class must satisfy.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selectors: Vec<DeviceSelector>,
    /// Configuration for each device claimed through this class.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub config: Vec<DeviceClassConfiguration>,
    /// The extended resource name served by this class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_resource_name: Option<String>,
}

/// Configuration in a DeviceClass (the inlined `DeviceConfiguration`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceClassConfiguration {
    /// Driver-specific parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opaque: Option<OpaqueDeviceConfiguration>,
}

/// A template from which ResourceClaims are generated.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimTemplate {
    /// `resource.k8s.io/v1`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `ResourceClaimTemplate`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// The claim to generate.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ResourceClaimTemplateSpec,
}

/// Metadata and spec of the generated claim.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimTemplateSpec {
    /// Labels and annotations copied to the claim.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// The claim's spec.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ResourceClaimSpec,
}

#[cfg(test)]
mod tests {
    use super::{CapacityMap, DeviceRequestAllocationResult};
    use crate::Quantity;

    #[test]
    fn consumed_capacity_reads_and_writes_as_a_map() {
        let text = r#"{"request":"r","driver":"d","pool":"p","device":"x","shareID":"1","consumedCapacity":{"memory":"4Gi","cores":"2"}}"#;
        let result: DeviceRequestAllocationResult = serde_json::from_str(text).expect("parses");
        assert_eq!(result.consumed_capacity.len(), 2);
        assert_eq!(
            result.consumed_capacity.get("memory"),
            Some(&Quantity::parse("4Gi").expect("quantity"))
        );
        // Written back in key order; an empty map (or a null one) is left out.
        let written = serde_json::to_string(&result).expect("writes");
        assert!(written.contains(r#""consumedCapacity":{"cores":"2","memory":"4Gi"}"#));
        let copy = result.clone();
        drop(result);
        assert_eq!(copy.consumed_capacity.len(), 2);
        let null: DeviceRequestAllocationResult =
            serde_json::from_str(r#"{"request":"r","consumedCapacity":null}"#).expect("parses");
        assert!(null.consumed_capacity.is_empty());
        assert_eq!(null.consumed_capacity, CapacityMap::default());
        assert!(
            !serde_json::to_string(&null)
                .expect("writes")
                .contains("consumed")
        );
        let mut grown = CapacityMap::default();
        grown.insert("memory".into(), Quantity::parse("1Gi").expect("quantity"));
        assert_eq!(format!("{grown:?}"), format!("{:?}", *grown));
        assert_ne!(grown, CapacityMap::default());
        // Emptied by removal it equals an empty map (and is dropped whole: an emptied
        // BTreeMap may keep a node).
        grown.remove("memory");
        assert_eq!(grown, CapacityMap::default());
        assert!(grown.is_empty());
    }
}
