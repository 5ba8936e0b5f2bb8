//! The `cpu_manager_state` checkpoint in the kubelet's JSON format (v2: `policyName`,
//! `defaultCpuSet`, `entries` pod -> container -> CPU list, `checksum`), with the checksum computed
//! exactly as the kubelet computes it, so that files move freely between allot and a kubelet.
//!
//! The kubelet's checksum is FNV-1a (32 bit) over the text that go-spew prints for the checkpoint
//! struct with `%#v` (types in parentheses, map keys sorted, strings unquoted), with the checksum
//! field set to zero. [`CpuManagerCheckpoint::compute_checksum`] writes that text by hand.
//!
//! This module only encodes and decodes bytes; writing the file atomically is the caller's job
//! (the engines do no I/O).
//!
//! Pod-level CPU pools are stored as an entry of their pod under the container name
//! [`POD_POOL_ENTRY`], which no real container can have. A kubelet that does not know pod-level
//! resource managers reads such a file without error and treats the entry as a stale container.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use allot_topology::CpuSet;
use serde::{Deserialize, Serialize};

use crate::state::CpuManagerState;

/// The container name under which a pod-level CPU pool is checkpointed ('@' cannot occur in a
/// container name).
pub const POD_POOL_ENTRY: &str = "@pod";

/// The file name the kubelet uses.
pub const CHECKPOINT_FILE: &str = "cpu_manager_state";

/// Why a checkpoint could not be restored (the kubelet's wording after "could not restore state
/// from checkpoint: ").
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CheckpointError {
    /// The bytes are not a JSON checkpoint.
    #[error("{0}")]
    Json(String),
    /// The checksum does not match the content.
    #[error("checkpoint is corrupted")]
    Corrupt,
    /// The checkpoint was written by another CPU Manager policy.
    #[error("configured policy \"{configured}\" differs from state checkpoint policy \"{found}\"")]
    PolicyMismatch {
        /// The policy in the configuration.
        configured: String,
        /// The policy in the checkpoint.
        found: String,
    },
    /// The default CPU set is not a CPU list.
    #[error("could not parse default cpu set \"{value}\": {reason}")]
    BadDefaultCpuSet {
        /// The text found.
        value: String,
        /// Why it did not parse.
        reason: String,
    },
    /// An assignment is not a CPU list.
    #[error(
        "could not parse cpuset \"{value}\" for container \"{container}\" in pod \"{pod}\": {reason}"
    )]
    BadAssignment {
        /// The text found.
        value: String,
        /// The container.
        container: String,
        /// The pod UID.
        pod: String,
        /// Why it did not parse.
        reason: String,
    },
    /// A v1 checkpoint (keyed by container id) whose containers cannot be mapped to pods.
    #[error(
        "error migrating v1 checkpoint state to v2 checkpoint state: containerID '{0}' not found in initial containers list"
    )]
    V1Migration(String),
}

/// The v2 checkpoint as stored on disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuManagerCheckpoint {
    /// The CPU Manager policy that wrote the checkpoint.
    pub policy_name: String,
    /// The shared pool in list format.
    pub default_cpu_set: String,
    /// Pod UID -> container name -> CPU list. `None` is a JSON `null` (a nil map in Go).
    #[serde(default, skip_serializing_if = "entries_empty")]
    pub entries: Option<BTreeMap<String, BTreeMap<String, String>>>,
    /// FNV-1a over the spew rendering, as the kubelet computes it.
    pub checksum: u64,
}

fn entries_empty(e: &Option<BTreeMap<String, BTreeMap<String, String>>>) -> bool {
    e.as_ref().is_none_or(|m| m.is_empty())
}

/// FNV-1a, 32 bit.
fn fnv1a32(text: &str) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

impl CpuManagerCheckpoint {
    /// Builds the checkpoint of a state, checksum included.
    pub fn from_state(policy_name: &str, state: &CpuManagerState) -> Self {
        let mut entries: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (pod, containers) in &state.assignments {
            let slot = entries.entry(pod.clone()).or_default();
            for (container, cpus) in containers {
                slot.insert(container.clone(), cpus.to_string());
            }
        }
        for (pod, cpus) in &state.pod_pools {
            entries
                .entry(pod.clone())
                .or_default()
                .insert(POD_POOL_ENTRY.to_string(), cpus.to_string());
        }
        let mut cp = CpuManagerCheckpoint {
            policy_name: policy_name.to_string(),
            default_cpu_set: state.default_cpu_set.to_string(),
            entries: Some(entries),
            checksum: 0,
        };
        cp.checksum = cp.compute_checksum();
        cp
    }

    /// The kubelet's checksum of this checkpoint (the stored checksum is ignored).
    pub fn compute_checksum(&self) -> u64 {
        let mut text = String::from("(*state.CPUManagerCheckpoint){PolicyName:(string)");
        text.push_str(&self.policy_name);
        text.push_str(" DefaultCPUSet:(string)");
        text.push_str(&self.default_cpu_set);
        text.push_str(" Entries:(map[string]map[string]string)");
        match &self.entries {
            None => text.push_str("<nil>"),
            Some(entries) => {
                text.push_str("map[");
                for (i, (pod, containers)) in entries.iter().enumerate() {
                    if i > 0 {
                        text.push(' ');
                    }
                    let _ = write!(text, "{pod}:map[");
                    for (j, (name, cpus)) in containers.iter().enumerate() {
                        if j > 0 {
                            text.push(' ');
                        }
                        let _ = write!(text, "{name}:{cpus}");
                    }
                    text.push(']');
                }
                text.push(']');
            }
        }
        text.push_str(" Checksum:(checksum.Checksum)0}");
        u64::from(fnv1a32(&text))
    }

    /// The JSON bytes the kubelet writes (Go's `json.Marshal` of the struct).
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing plain strings, maps and an integer cannot fail.
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// Turns the checkpoint into a state, checking policy name and CPU lists as the kubelet does.
    pub fn into_state(self, configured_policy: &str) -> Result<CpuManagerState, CheckpointError> {
        if self.policy_name != configured_policy {
            return Err(CheckpointError::PolicyMismatch {
                configured: configured_policy.to_string(),
                found: self.policy_name,
            });
        }
        let default_cpu_set = CpuSet::parse(&self.default_cpu_set).map_err(|e| {
            CheckpointError::BadDefaultCpuSet {
                value: self.default_cpu_set.clone(),
                reason: e.to_string(),
            }
        })?;
        let mut state = CpuManagerState::with_default(default_cpu_set);
        for (pod, containers) in self.entries.unwrap_or_default() {
            for (container, text) in containers {
                let cpus = CpuSet::parse(&text).map_err(|e| CheckpointError::BadAssignment {
                    value: text.clone(),
                    container: container.clone(),
                    pod: pod.clone(),
                    reason: e.to_string(),
                })?;
                if container == POD_POOL_ENTRY {
                    state.pod_pools.insert(pod.clone(), cpus);
                } else {
                    state.set_cpu_set(&pod, &container, cpus);
                }
            }
        }
        Ok(state)
    }
}

/// Looks a field up the way Go's `encoding/json` does: exact name first, then case-insensitive.
fn go_field<'a>(
    obj: &'a serde_json::Map<String, serde_json::Value>,
    name: &str,
) -> Option<&'a serde_json::Value> {
    obj.get(name).or_else(|| {
        obj.iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v)
            .next_back()
    })
}

fn go_string(v: Option<&serde_json::Value>, field: &str) -> Result<String, CheckpointError> {
    match v {
        None | Some(serde_json::Value::Null) => Ok(String::new()),
        Some(serde_json::Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(CheckpointError::Json(format!(
            "json: cannot unmarshal {} into Go struct field .{field} of type string",
            json_kind(other)
        ))),
    }
}

fn json_kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "bool",
        serde_json::Value::Number(_) => "number",
        serde_json::Value::String(_) => "string",
        serde_json::Value::Array(_) => "array",
        serde_json::Value::Object(_) => "object",
    }
}

/// Reads checkpoint bytes as the kubelet does: first as a v1 checkpoint (entries keyed by
/// container id), then as v2; checks the checksum (0 means "no checksum", accepted for old
/// files), the policy name and the CPU lists.
pub fn decode(bytes: &[u8], configured_policy: &str) -> Result<CpuManagerState, CheckpointError> {
    let value: serde_json::Value =
        serde_json::from_slice(bytes).map_err(|e| CheckpointError::Json(e.to_string()))?;
    let obj = match value {
        serde_json::Value::Object(obj) => obj,
        other => {
            return Err(CheckpointError::Json(format!(
                "json: cannot unmarshal {} into Go value of type state.CPUManagerCheckpoint",
                json_kind(&other)
            )));
        }
    };
    let policy_name = go_string(go_field(&obj, "policyName"), "policyName")?;
    let default_cpu_set = go_string(go_field(&obj, "defaultCpuSet"), "defaultCpuSet")?;
    let checksum = match go_field(&obj, "checksum") {
        None | Some(serde_json::Value::Null) => 0,
        Some(v) => v.as_u64().ok_or_else(|| {
            CheckpointError::Json(
                "json: cannot unmarshal number into Go struct field .checksum of type checksum.Checksum"
                    .to_string(),
            )
        })?,
    };
    let raw_entries = go_field(&obj, "entries");

    // Version 1: entries map container id -> CPU list.
    let v1_entries: Option<Option<BTreeMap<String, String>>> = match raw_entries {
        None => Some(Some(BTreeMap::new())),
        Some(serde_json::Value::Null) => Some(None),
        Some(serde_json::Value::Object(m)) => m
            .iter()
            .map(|(k, v)| v.as_str().map(|s| (k.clone(), s.to_string())))
            .collect::<Option<BTreeMap<_, _>>>()
            .map(Some),
        Some(_) => None,
    };
    if let Some(v1) = v1_entries {
        let v1_ok = checksum == 0 || checksum == v1_checksum(&policy_name, &default_cpu_set, &v1);
        if v1_ok {
            if let Some(first) = v1.as_ref().and_then(|m| m.keys().next()) {
                return Err(CheckpointError::V1Migration(first.clone()));
            }
            let cp = CpuManagerCheckpoint {
                policy_name,
                default_cpu_set,
                entries: Some(BTreeMap::new()),
                checksum,
            };
            return cp.into_state(configured_policy);
        }
    }

    // Version 2: entries map pod UID -> container name -> CPU list.
    let entries: Option<BTreeMap<String, BTreeMap<String, String>>> =
        match raw_entries {
            None => Some(BTreeMap::new()),
            Some(serde_json::Value::Null) => None,
            Some(v) => Some(serde_json::from_value(v.clone()).map_err(|e| {
                CheckpointError::Json(format!("json: cannot unmarshal entries: {e}"))
            })?),
        };
    let cp = CpuManagerCheckpoint {
        policy_name,
        default_cpu_set,
        entries,
        checksum,
    };
    if checksum != 0 && checksum != cp.compute_checksum() {
        return Err(CheckpointError::Corrupt);
    }
    cp.into_state(configured_policy)
}

fn v1_checksum(
    policy: &str,
    default_cpu_set: &str,
    entries: &Option<BTreeMap<String, String>>,
) -> u64 {
    // The kubelet renames the v1 type to the v2 name before hashing.
    let mut text = format!(
        "(*state.CPUManagerCheckpoint){{PolicyName:(string){policy} DefaultCPUSet:(string){default_cpu_set} Entries:(map[string]string)"
    );
    match entries {
        None => text.push_str("<nil>"),
        Some(m) => {
            text.push_str("map[");
            for (i, (k, v)) in m.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                let _ = write!(text, "{k}:{v}");
            }
            text.push(']');
        }
    }
    text.push_str(" Checksum:(checksum.Checksum)0}");
    u64::from(fnv1a32(&text))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Vectors from upstream's state_checkpoint_test.go (TestCheckpointStateRestore).
    #[test]
    fn upstream_checksums() {
        let ok = |json: &str| decode(json.as_bytes(), "none");
        let s =
            ok(r#"{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":354655845}"#)
                .expect("valid");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(4, 6));
        let s = ok(r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":3610638499}"#)
            .expect("valid");
        assert_eq!(
            s.cpu_set("pod", "container1"),
            Some(&CpuSet::from_range(4, 6))
        );
        assert_eq!(
            ok(r#"{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":1337}"#),
            Err(CheckpointError::Corrupt)
        );
        assert!(matches!(ok("{"), Err(CheckpointError::Json(_))));
        assert_eq!(
            ok(
                r#"{"policyName":"other","defaultCPUSet":"1-3","entries":{},"checksum":1394507217}"#
            ),
            Err(CheckpointError::PolicyMismatch {
                configured: "none".into(),
                found: "other".into()
            })
        );
        assert!(matches!(
            ok(r#"{"policyName":"none","defaultCPUSet":"1.3","entries":{},"checksum":3021697696}"#),
            Err(CheckpointError::BadDefaultCpuSet { .. })
        ));
        assert!(matches!(
            ok(
                r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"asd"}},"checksum":962272150}"#
            ),
            Err(CheckpointError::BadAssignment { .. })
        ));
        let s = ok(r#"{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}"#)
            .expect("v1 without entries");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(1, 3));
        assert_eq!(
            ok(
                r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"containerID1":"4-6","containerID2":"1-3"},"checksum":3680390589}"#
            ),
            Err(CheckpointError::V1Migration("containerID1".into()))
        );
    }

    #[test]
    fn round_trip() {
        let mut state = CpuManagerState::with_default(CpuSet::from_ids([0, 5, 6, 7]));
        state.set_cpu_set("uid-1", "app", CpuSet::from_ids([1, 2]));
        state.set_cpu_set("uid-1", "side", CpuSet::from_ids([3]));
        state
            .pod_pools
            .insert("uid-1".into(), CpuSet::from_range(1, 4));
        let cp = CpuManagerCheckpoint::from_state("static", &state);
        let bytes = cp.to_json();
        let text = String::from_utf8(bytes.clone()).expect("utf8");
        assert!(text.starts_with(r#"{"policyName":"static","defaultCpuSet":"0,5-7","entries":{"uid-1":{"@pod":"1-4","app":"1-2","side":"3"}},"checksum":"#));
        assert_eq!(decode(&bytes, "static"), Ok(state));
    }

    #[test]
    fn empty_entries_are_omitted_like_go() {
        let state = CpuManagerState::with_default(CpuSet::from_range(0, 3));
        let cp = CpuManagerCheckpoint::from_state("none", &state);
        let text = String::from_utf8(cp.to_json()).expect("utf8");
        assert_eq!(
            text,
            format!(
                r#"{{"policyName":"none","defaultCpuSet":"0-3","checksum":{}}}"#,
                cp.checksum
            )
        );
        assert_eq!(decode(text.as_bytes(), "none"), Ok(state));
    }
}
