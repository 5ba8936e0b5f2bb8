//! `resource.k8s.io/v1alpha3`: ResourcePoolStatusRequest (the spec's "Resource pool status"),
//! and the v1alpha3 spelling of DeviceTaintRule (decoded into the v1 type).

use std::collections::BTreeMap;

use crate::Quantity;
use serde::{Deserialize, Serialize};

use crate::meta::v1::{Condition, ObjectMeta, Time};
use crate::resource::v1::FullyQualifiedName;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "resource.k8s.io/v1alpha3";
/// Default of `spec.limit`.
pub const RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT: i32 = 100;
/// Maximum of `spec.limit`.
pub const RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX: i32 = 1000;

/// A one-time request for the status of resource pools.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcePoolStatusRequest {
    /// `resource.k8s.io/v1alpha3`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub api_version: String,
    /// `ResourcePoolStatusRequest`.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub kind: String,
    /// Object metadata.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub metadata: ObjectMeta,
    /// Which pools to report.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ResourcePoolStatusRequestSpec,
    /// The report, filled in by the controller.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ResourcePoolStatusRequestStatus,
}

/// Filters of a pool status request.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcePoolStatusRequestSpec {
    /// The driver whose pools are reported (required).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// Only this pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_name: Option<String>,
    /// At most this many pools (default 100, 1..=1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<i32>,
    /// Partition-type attribute for slices that declare none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_partition_type_attribute: Option<FullyQualifiedName>,
}

/// The report of a pool status request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourcePoolStatusRequestStatus {
    /// When the status was computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observation_time: Option<Time>,
    /// The number of pools matching the filter (may exceed `pools.len()`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool_count: Option<i32>,
    /// The pools, sorted by driver, then pool name.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub pools: Vec<PoolStatus>,
    /// `Complete` or `Failed`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Condition>,
    /// Errors met while processing the request.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub validation_errors: Vec<String>,
    /// `Truncated` when more pools matched than were returned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub truncation: Option<String>,
}

impl ResourcePoolStatusRequestStatus {
    /// Whether nothing is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// Status of one pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PoolStatus {
    /// The driver.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub driver: String,
    /// The pool name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pool_name: String,
    /// The node of the pool, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The latest pool generation seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The number of slices of the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_slice_count: Option<i64>,
    /// All devices of the pool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_devices: Option<i32>,
    /// Devices allocated to claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_devices: Option<i32>,
    /// Devices available for allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_devices: Option<i32>,
    /// Devices unavailable because of taints or other conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unavailable_devices: Option<i32>,
    /// Why the pool could not be fully validated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_error: Option<String>,
    /// Per partition type allocatability.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub partition_summary: Vec<PartitionSummary>,
    /// Capacity usage of shareable devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shareable_summary: Option<ShareableSummary>,
}

/// Allocatability of one partition type.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PartitionSummary {
    /// The attribute whose value groups this entry.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub attribute: FullyQualifiedName,
    /// The attribute's value (the partition type).
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// Devices of this type in the pool.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub total: i32,
    /// How many more could be allocated.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub allocatable: i32,
}

/// Capacity usage of the shareable devices of a pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShareableSummary {
    /// Shareable devices with nothing consumed.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub fully_available_devices: i32,
    /// Shareable devices with some capacity consumed.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub partially_available_devices: i32,
    /// Aggregates per capacity name.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub capacity: BTreeMap<String, CapacitySummary>,
}

/// Aggregate amounts of one capacity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacitySummary {
    /// Total across the pool.
    pub total: Quantity,
    /// Consumed across the pool.
    pub consumed: Quantity,
    /// Total minus consumed, never negative.
    pub available: Quantity,
}
