//! The input kinds of the simulator itself: `Timeline` (timed events) and `SimulationOptions`.
//!
//! A `Timeline` lists events at simulated times, each doing exactly one thing:
//!
//! ```yaml
//! apiVersion: allot.dev/v1alpha1
//! kind: Timeline
//! metadata:
//!   name: day-one
//! events:
//! - at: 30s                  # a Go duration after the start of the run
//!   create:                  # inline manifests, created in order
//!   - {apiVersion: v1, kind: Pod, metadata: {name: late}, spec: {containers: [{name: c}]}}
//! - at: 1m
//!   delete:                  # objects by kind, namespace (namespaced kinds) and name
//!   - {kind: Pod, namespace: default, name: late}
//!   - {kind: Deployment, name: web, propagationPolicy: Orphan}   # Background (default),
//!                                                                # Foreground or Orphan
//! - at: 90s
//!   update:                  # inline manifests replacing objects' spec, labels and
//!   - {apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {...}}  # annotations
//! - at: 2m
//!   deviceHealth:            # what the driver's health stream would report
//!     {driver: gpu.example.com, pool: node-1, device: gpu-0, health: Unhealthy}
//! - at: 3m
//!   claimDeviceCondition:    # a driver or controller setting a binding condition
//!     namespace: default
//!     claim: pod-gpu-x7k2p
//!     driver: gpu.example.com
//!     pool: node-1
//!     device: gpu-0
//!     condition: {type: Attached, status: "True", reason: Attached}
//! - at: 20m                  # no action: the clock advances to 20m, running what falls due
//! workloads:                 # how long pods run, per workload (or pod), unless they say
//! - {kind: Job, name: train, runDuration: 2h}   # kind, namespace and name narrow the match
//! - {kind: Deployment, runDuration: 30m, exitCode: 0}
//! ```
//!
//! A pod's run duration and exit code are the annotations `allot.dev/run-duration` and
//! `allot.dev/exit-code` on the pod or its workload's pod template; `workloads` entries add them
//! to the templates (and bare pods) they match that do not set them.
//!
//! Device health is kept where the node agents can see it: in the annotation
//! [`DEVICE_HEALTH_ANNOTATION`] of every ResourceSlice that lists the device, whose value is a JSON
//! object from device name to `Healthy`, `Unhealthy` or `Unknown` (devices not named are healthy).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The apiVersion of the simulator's own kinds.
pub const API_VERSION: &str = "allot.dev/v1alpha1";
/// The kind of a timeline document.
pub const TIMELINE_KIND: &str = "Timeline";
/// The kind of a simulation options document.
pub const OPTIONS_KIND: &str = "SimulationOptions";
/// The kind of the run's report, the last item of `-o json|yaml` (output; read back as input,
/// it is ignored).
pub const REPORT_KIND: &str = "SimulationReport";
/// ResourceSlice annotation holding device health: a JSON object from device name to
/// `Healthy`, `Unhealthy` or `Unknown`.
pub const DEVICE_HEALTH_ANNOTATION: &str = "allot.dev/device-health";
/// NodeTopology and KubeletConfiguration matching: an annotation with a node label selector
/// (`key=value,key2=value2`; `key` alone means the label exists) choosing the nodes (a node
/// label group) the document applies to; see [`crate::input`] for the precedence.
pub const NODE_SELECTOR_ANNOTATION: &str = "allot.dev/node-selector";

/// Object metadata of the simulator's kinds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Metadata {
    /// The name.
    #[serde(default)]
    pub name: String,
    /// Labels.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// `allot.dev/v1alpha1 Timeline`: events at simulated times.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Timeline {
    /// Always `allot.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// Always `Timeline`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: Metadata,
    /// The events; they run in time order, ties in list order.
    #[serde(default)]
    pub events: Vec<TimelineEvent>,
    /// Run durations (and exit codes) per workload.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub workloads: Vec<WorkloadDefaults>,
}

/// How long the pods of matching workloads run, unless their template says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadDefaults {
    /// `Pod`, `Deployment`, `ReplicaSet`, `StatefulSet`, `DaemonSet`, `Job` or `CronJob`.
    pub kind: String,
    /// Only this namespace (any when empty).
    #[serde(default)]
    pub namespace: String,
    /// Only this name (any when empty).
    #[serde(default)]
    pub name: String,
    /// A Go duration (`30m`, `2h`).
    pub run_duration: String,
    /// The exit code (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// One event: a time and at most one action (none: the clock just advances).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TimelineEvent {
    /// When, as a Go duration after the start (`90s`, `1m30s`, `500ms`, `2h`).
    pub at: String,
    /// Manifests to create, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub create: Vec<serde_json::Value>,
    /// Objects to delete.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delete: Vec<ObjectRef>,
    /// Manifests replacing existing objects' spec, labels and annotations.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub update: Vec<serde_json::Value>,
    /// A device's health changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_health: Option<DeviceHealth>,
    /// A condition is set on a claim's device status (`status.devices[].conditions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_device_condition: Option<ClaimDeviceCondition>,
}

/// An object to delete.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectRef {
    /// The kind (`Pod`, `ResourceClaim`, `DeviceTaintRule`, ...).
    pub kind: String,
    /// The namespace, for namespaced kinds (default `default`).
    #[serde(default)]
    pub namespace: String,
    /// The name.
    pub name: String,
    /// `Background` (default), `Foreground` or `Orphan`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub propagation_policy: Option<String>,
}

/// Health of one device.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeviceHealth {
    /// The driver.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device.
    pub device: String,
    /// `Healthy`, `Unhealthy` or `Unknown`.
    pub health: String,
}

/// A condition on one allocated device of a claim.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimDeviceCondition {
    /// The claim's namespace (default `default`).
    #[serde(default)]
    pub namespace: String,
    /// The claim's name.
    pub claim: String,
    /// The driver.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device.
    pub device: String,
    /// The condition.
    pub condition: ConditionSpec,
}

/// A condition as the timeline sets it (the transition time is the event's time).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConditionSpec {
    /// The type, e.g. `Attached`.
    #[serde(rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    pub status: String,
    /// A CamelCase reason (default: the type).
    #[serde(default)]
    pub reason: String,
    /// A message.
    #[serde(default)]
    pub message: String,
}

/// `allot.dev/v1alpha1 SimulationOptions`: how the run is set up.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SimulationOptions {
    /// Always `allot.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// Always `SimulationOptions`.
    #[serde(default)]
    pub kind: String,
    /// Metadata.
    #[serde(default)]
    pub metadata: Metadata,
    /// DRA feature gates by upstream name, over the simulator's default of every gate on.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
    /// How long to keep running after the last timeline event (Go duration, default `1h`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub horizon: Option<String>,
    /// The DynamicResources binding timeout (Go duration, default `10m` as upstream).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding_timeout: Option<String>,
    /// What device-taint eviction does to a pod: `Delete` (upstream, default) or `MarkFailed`
    /// (keep it with `status.phase: Failed`, so the final state shows the eviction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction_mode: Option<String>,
    /// How long a node agent waits for a driver's health report before it reports `Unknown`
    /// (Go duration, default `30s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver_health_timeout: Option<String>,
}

/// Parses a Go duration (`300ms`, `1.5s`, `2m30s`, `1h`; units `ms`, `s`, `m`, `h`) into
/// milliseconds. `0` alone is zero.
pub fn parse_duration_millis(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "0" {
        return Some(0);
    }
    if text.is_empty() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut total: f64 = 0.0;
    let mut index = 0;
    while index < bytes.len() {
        let start = index;
        while index < bytes.len() && (bytes[index].is_ascii_digit() || bytes[index] == b'.') {
            index += 1;
        }
        let number: f64 = text.get(start..index)?.parse().ok()?;
        let unit_start = index;
        while index < bytes.len() && bytes[index].is_ascii_alphabetic() {
            index += 1;
        }
        let scale = match text.get(unit_start..index)? {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total += number * scale;
    }
    if !total.is_finite() || !(0.0..=1e15).contains(&total) {
        return None;
    }
    Some(total.round() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations_parse() {
        assert_eq!(parse_duration_millis("0"), Some(0));
        assert_eq!(parse_duration_millis("500ms"), Some(500));
        assert_eq!(parse_duration_millis("1.5s"), Some(1500));
        assert_eq!(parse_duration_millis("2m30s"), Some(150_000));
        assert_eq!(parse_duration_millis("1h"), Some(3_600_000));
        assert_eq!(parse_duration_millis("10"), None);
        assert_eq!(parse_duration_millis("5d"), None);
        assert_eq!(parse_duration_millis(""), None);
    }
}
