//! `resource.k8s.io/v1beta1`: the DRA kinds as Kubernetes 1.32–1.37 serve them at this
//! version, and their conversion to and from [`v1`](super::v1), the storage version.
//!
//! Only three shapes differ from v1, and only those are declared here (every nested type that
//! has v1's shape is v1's type):
//! - a request is flat: `deviceClassName`, `selectors`, `allocationMode`, `count`,
//!   `adminAccess`, `tolerations` and `capacity` sit on the request itself, where v1 nests them
//!   under `exactly`;
//! - a device wraps everything but its name in `basic`;
//! - a slice's `nodeName` and `allNodes` are a plain string and boolean (empty and `false` mean
//!   unset) where v1 has optional values.
//!
//! DeviceClass has v1's shape at this version: it converts by its `apiVersion` alone.
//!
//! The conversion rules are upstream's (pkg/apis/resource/v1beta1/conversion.go): a request
//! that sets any of the flat fields becomes an `exactly` request (even an invalid one, which
//! validation then reports); v1 to v1beta1 moves `exactly` back up; a device always gets a
//! `basic` (possibly empty) on the way to v1beta1, and a missing `basic` converts to a device
//! with only a name. allot's extensions of v1 (`derivedAttributes` on requests) are carried at
//! this version too, so every v1 object round-trips by construction.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::core::v1::NodeSelector;
use crate::meta::v1::ObjectMeta;
use crate::resource::v1::{
    self, CapacityRequirements, CounterSet, DeviceAllocationMode, DeviceAttribute, DeviceCapacity,
    DeviceClaimConfiguration, DeviceConstraint, DeviceCounterConsumption, DeviceDerivedAttribute,
    DeviceSelector, DeviceSubRequest, DeviceTaint, DeviceToleration, FullyQualifiedName,
    NodeAllocatableResource, QualifiedName, ResourceClaimStatus, ResourcePool, SkipNodeOperation,
};

/// The API version of this module's kinds.
pub const API_VERSION: &str = "resource.k8s.io/v1beta1";

/// The kinds served at this version.
pub const KINDS: &[&str] = &[
    "DeviceClass",
    "ResourceClaim",
    "ResourceClaimTemplate",
    "ResourceSlice",
];

// ---------------------------------------------------------------------------------------------
// ResourceSlice
// ---------------------------------------------------------------------------------------------

/// One or more devices in a pool, published by a driver (v1beta1 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSlice {
    /// `resource.k8s.io/v1beta1`.
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

/// The information published by a driver in one ResourceSlice (v1beta1 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceSliceSpec {
    /// The driver's name (a DNS subdomain).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// The pool this slice belongs to.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pool: ResourcePool,
    /// The node providing the devices; empty when another node selection field is used.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub node_name: String,
    /// The nodes with access (exactly one term).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,
    /// All nodes have access; `false` means unset.
    #[serde(
        default,
        skip_serializing_if = "std::ops::Not::not",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub all_nodes: bool,
    /// The devices of this slice.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub devices: Vec<Device>,
    /// Node access is set per device.
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

/// One device: a name and, in `basic`, everything else.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Device {
    /// The device's name, unique in the pool (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The device's attributes, capacity and the rest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicDevice>,
}

/// Everything of a device but its name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BasicDevice {
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
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::resource::v1::deserialize_node_allocatable_resources"
    )]
    pub node_allocatable_resources: BTreeMap<String, NodeAllocatableResource>,
}

// ---------------------------------------------------------------------------------------------
// ResourceClaim and ResourceClaimTemplate
// ---------------------------------------------------------------------------------------------

/// A request for access to devices (v1beta1 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaim {
    /// `resource.k8s.io/v1beta1`.
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
    /// Allocation and reservation (v1's shape).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ResourceClaimStatus,
}

/// What a ResourceClaim requests (v1beta1 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimSpec {
    /// The device requests.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub devices: DeviceClaim,
}

/// How devices are requested (v1beta1 shape).
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

/// One request: the fields of one exact request inline, or `firstAvailable`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceRequest {
    /// The request name (a DNS label).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The DeviceClass whose selectors and config apply (always written, as upstream's
    /// field has no `omitempty`).
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
    /// Prioritised alternatives; the first that can be satisfied is chosen.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub first_available: Vec<DeviceSubRequest>,
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
    /// Virtual attributes computed per candidate device (allot's extension of v1, carried
    /// here so that a v1 request round-trips).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub derived_attributes: Vec<DeviceDerivedAttribute>,
}

/// A template from which ResourceClaims are generated (v1beta1 shape).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaimTemplate {
    /// `resource.k8s.io/v1beta1`.
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

/// Metadata and spec of the generated claim (v1beta1 shape).
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

// ---------------------------------------------------------------------------------------------
// Conversion
// ---------------------------------------------------------------------------------------------

/// The `apiVersion` a converted object carries: `to` when the source named one, else none
/// (an object decoded without type metadata stays without it).
fn converted_api_version(from: &str, to: &str) -> String {
    if from.is_empty() {
        String::new()
    } else {
        to.to_string()
    }
}

impl From<ResourceSlice> for v1::ResourceSlice {
    fn from(slice: ResourceSlice) -> Self {
        v1::ResourceSlice {
            api_version: converted_api_version(&slice.api_version, v1::API_VERSION),
            kind: slice.kind,
            metadata: slice.metadata,
            spec: slice.spec.into(),
        }
    }
}

impl From<v1::ResourceSlice> for ResourceSlice {
    fn from(slice: v1::ResourceSlice) -> Self {
        ResourceSlice {
            api_version: converted_api_version(&slice.api_version, API_VERSION),
            kind: slice.kind,
            metadata: slice.metadata,
            spec: slice.spec.into(),
        }
    }
}

impl From<ResourceSliceSpec> for v1::ResourceSliceSpec {
    fn from(spec: ResourceSliceSpec) -> Self {
        v1::ResourceSliceSpec {
            driver: spec.driver,
            pool: spec.pool,
            // Upstream: an empty name and a false allNodes are unset.
            node_name: (!spec.node_name.is_empty()).then_some(spec.node_name),
            node_selector: spec.node_selector,
            all_nodes: spec.all_nodes.then_some(true),
            devices: spec.devices.into_iter().map(v1::Device::from).collect(),
            per_device_node_selection: spec.per_device_node_selection,
            shared_counters: spec.shared_counters,
            partition_type_attribute: spec.partition_type_attribute,
            skip_node_operations: spec.skip_node_operations,
        }
    }
}

impl From<v1::ResourceSliceSpec> for ResourceSliceSpec {
    fn from(spec: v1::ResourceSliceSpec) -> Self {
        ResourceSliceSpec {
            driver: spec.driver,
            pool: spec.pool,
            node_name: spec.node_name.unwrap_or_default(),
            node_selector: spec.node_selector,
            all_nodes: spec.all_nodes.unwrap_or(false),
            devices: spec.devices.into_iter().map(Device::from).collect(),
            per_device_node_selection: spec.per_device_node_selection,
            shared_counters: spec.shared_counters,
            partition_type_attribute: spec.partition_type_attribute,
            skip_node_operations: spec.skip_node_operations,
        }
    }
}

impl From<Device> for v1::Device {
    fn from(device: Device) -> Self {
        let Some(basic) = device.basic else {
            return v1::Device {
                name: device.name,
                ..v1::Device::default()
            };
        };
        v1::Device {
            name: device.name,
            attributes: basic.attributes,
            capacity: basic.capacity,
            consumes_counters: basic.consumes_counters,
            node_name: basic.node_name,
            node_selector: basic.node_selector,
            all_nodes: basic.all_nodes,
            taints: basic.taints,
            binds_to_node: basic.binds_to_node,
            binding_conditions: basic.binding_conditions,
            binding_failure_conditions: basic.binding_failure_conditions,
            allow_multiple_allocations: basic.allow_multiple_allocations,
            node_allocatable_resources: basic.node_allocatable_resources,
        }
    }
}

impl From<v1::Device> for Device {
    fn from(device: v1::Device) -> Self {
        Device {
            name: device.name,
            // Upstream always writes `basic`, even for a device with nothing but a name.
            basic: Some(BasicDevice {
                attributes: device.attributes,
                capacity: device.capacity,
                consumes_counters: device.consumes_counters,
                node_name: device.node_name,
                node_selector: device.node_selector,
                all_nodes: device.all_nodes,
                taints: device.taints,
                binds_to_node: device.binds_to_node,
                binding_conditions: device.binding_conditions,
                binding_failure_conditions: device.binding_failure_conditions,
                allow_multiple_allocations: device.allow_multiple_allocations,
                node_allocatable_resources: device.node_allocatable_resources,
            }),
        }
    }
}

impl From<ResourceClaim> for v1::ResourceClaim {
    fn from(claim: ResourceClaim) -> Self {
        v1::ResourceClaim {
            api_version: converted_api_version(&claim.api_version, v1::API_VERSION),
            kind: claim.kind,
            metadata: claim.metadata,
            spec: claim.spec.into(),
            status: claim.status,
        }
    }
}

impl From<v1::ResourceClaim> for ResourceClaim {
    fn from(claim: v1::ResourceClaim) -> Self {
        ResourceClaim {
            api_version: converted_api_version(&claim.api_version, API_VERSION),
            kind: claim.kind,
            metadata: claim.metadata,
            spec: claim.spec.into(),
            status: claim.status,
        }
    }
}

impl From<ResourceClaimTemplate> for v1::ResourceClaimTemplate {
    fn from(template: ResourceClaimTemplate) -> Self {
        v1::ResourceClaimTemplate {
            api_version: converted_api_version(&template.api_version, v1::API_VERSION),
            kind: template.kind,
            metadata: template.metadata,
            spec: v1::ResourceClaimTemplateSpec {
                metadata: template.spec.metadata,
                spec: template.spec.spec.into(),
            },
        }
    }
}

impl From<v1::ResourceClaimTemplate> for ResourceClaimTemplate {
    fn from(template: v1::ResourceClaimTemplate) -> Self {
        ResourceClaimTemplate {
            api_version: converted_api_version(&template.api_version, API_VERSION),
            kind: template.kind,
            metadata: template.metadata,
            spec: ResourceClaimTemplateSpec {
                metadata: template.spec.metadata,
                spec: template.spec.spec.into(),
            },
        }
    }
}

impl From<ResourceClaimSpec> for v1::ResourceClaimSpec {
    fn from(spec: ResourceClaimSpec) -> Self {
        v1::ResourceClaimSpec {
            devices: v1::DeviceClaim {
                requests: spec
                    .devices
                    .requests
                    .into_iter()
                    .map(v1::DeviceRequest::from)
                    .collect(),
                constraints: spec.devices.constraints,
                config: spec.devices.config,
            },
        }
    }
}

impl From<v1::ResourceClaimSpec> for ResourceClaimSpec {
    fn from(spec: v1::ResourceClaimSpec) -> Self {
        ResourceClaimSpec {
            devices: DeviceClaim {
                requests: spec
                    .devices
                    .requests
                    .into_iter()
                    .map(DeviceRequest::from)
                    .collect(),
                constraints: spec.devices.constraints,
                config: spec.devices.config,
            },
        }
    }
}

impl DeviceRequest {
    /// Whether any field of an exact request is set: upstream's test for making an `exactly`
    /// request out of a v1beta1 one. As in Go, an empty class name, an empty mode and a zero
    /// count are unset.
    pub fn has_exact_fields(&self) -> bool {
        !self.device_class_name.is_empty()
            || !self.selectors.is_empty()
            || self
                .allocation_mode
                .as_ref()
                .is_some_and(|mode| !mode.as_str().is_empty())
            || self.count.is_some_and(|count| count != 0)
            || self.admin_access.is_some()
            || !self.tolerations.is_empty()
            || self.capacity.is_some()
            || !self.derived_attributes.is_empty()
    }
}

impl From<DeviceRequest> for v1::DeviceRequest {
    fn from(request: DeviceRequest) -> Self {
        let exactly = request
            .has_exact_fields()
            .then_some(v1::ExactDeviceRequest {
                device_class_name: request.device_class_name,
                selectors: request.selectors,
                allocation_mode: request.allocation_mode,
                count: request.count,
                admin_access: request.admin_access,
                tolerations: request.tolerations,
                capacity: request.capacity,
                derived_attributes: request.derived_attributes,
            });
        v1::DeviceRequest {
            name: request.name,
            exactly,
            first_available: request.first_available,
        }
    }
}

impl From<v1::DeviceRequest> for DeviceRequest {
    fn from(request: v1::DeviceRequest) -> Self {
        let exactly = request.exactly.unwrap_or_default();
        DeviceRequest {
            name: request.name,
            device_class_name: exactly.device_class_name,
            selectors: exactly.selectors,
            allocation_mode: exactly.allocation_mode,
            count: exactly.count,
            admin_access: exactly.admin_access,
            first_available: request.first_available,
            tolerations: exactly.tolerations,
            capacity: exactly.capacity,
            derived_attributes: exactly.derived_attributes,
        }
    }
}
