//! The `cpu_manager_state` checkpoint, byte-compatible with the kubelet's, including the
//! pod-level entries of the pod-level resource managers (KEP-5526).
//!
//! # Which format
//!
//! allot writes the **v4** layout, the one upstream's kubelet writes since the pod-level
//! resource managers switched to a serialized payload (`pkg/kubelet/cm/cpumanager/state/
//! checkpoint.go`, types `CPUManagerCheckpoint` = `CPUManagerCheckpointV4`,
//! `CPUManagerCheckpointData`; reading order in `state_checkpoint.go`,
//! `loadAndMigrateCheckpointV4`):
//!
//! ```json
//! {"policyName":"static","defaultCpuSet":"0,5-7",
//!  "entries":{"uid":{"app":"1-2"}},"podEntries":{"uid":{"cpuSet":"1-4"}},
//!  "checksum":0,
//!  "data":"{\"policyName\":\"static\",\"defaultCpuSet\":\"0,5-7\",\"entries\":{...},\"podEntries\":{...}}",
//!  "dataChecksum":123}
//! ```
//!
//! `data` (the JSON of `policyName`, `defaultCpuSet`, `entries`, `podEntries`) with
//! `dataChecksum` is the authoritative payload. The v3 fields are repeated beside it with a zero
//! `checksum` so that an older kubelet, which accepts a zero checksum, can still read the file as
//! v2 (it then ignores `podEntries`).
//!
//! Reading follows the kubelet: v4 first; a file with a `data` or a `dataChecksum` that does not
//! load is an error ("could not load v4 checkpoint: ...") and never falls back; otherwise v3
//! (`podEntries`, checksum required), then v2, then v1 (entries keyed by container id; only an
//! empty v1 can be migrated, since allot has no running containers to map ids to). The newest
//! upstream reader seen stops at v2; allot keeps reading v1 as the v3-era kubelet did, which only
//! accepts more files, never a different state.
//!
//! # Checksums
//!
//! The kubelet's checksums are FNV-1a (32 bit) over the text go-spew prints with `%#v` and the
//! kubelet's hashing configuration (types in parentheses, map keys sorted, strings unquoted, no
//! methods, no pointer addresses), with the checksum field zeroed:
//!
//! - `dataChecksum` hashes the `data` string: the text is `(string)` followed by the string.
//! - v3 hashes the struct; a `cpuset.CPUSet` prints as its inner map
//!   (`(cpuset.CPUSet){elems:(map[int]struct {})map[7:{} 8:{}]}`). Upstream computes it under the
//!   type name `CPUManagerCheckpointV3` and, for files written while v3 was the newest format,
//!   `CPUManagerCheckpoint`; both are accepted.
//! - v2 and v1 hash under the legacy type name `CPUManagerCheckpoint` (v2 also under
//!   `CPUManagerCheckpointV2` when the PodLevelResourceManagers gate is off, as upstream).
//!
//! The text is written by hand here (`spew_v3`, `spew_v2`, `spew_v1`); the module's tests
//! check it against checksums computed by upstream's kubelet.
//!
//! This module only encodes and decodes bytes; writing the file atomically is the caller's job
//! (the engines do no I/O).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use allot_topology::CpuSet;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::state::CpuManagerState;

pub use allot_checkpoint::data_checksum;
use allot_checkpoint::{
    checksum_of, go_checksum, go_field, go_json_escape, json_error, json_kind, type_error,
};

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
    /// A v4 checkpoint (it has `data` or `dataChecksum`) that does not load; the kubelet does not
    /// fall back to older versions then.
    #[error("could not load v4 checkpoint: {0}")]
    V4(String),
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
        "failed to migrate checkpoint from v1 to v2: containerID '{0}' not found in initial containers list"
    )]
    V1Migration(String),
}

/// How a checkpoint is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The PodLevelResourceManagers feature gate: pod entries are restored only with it on, and
    /// with it off a v2 checksum may also be computed under the type name
    /// `CPUManagerCheckpointV2` (both as upstream).
    pub pod_level_resource_managers: bool,
    /// A checkpoint without any of `checksum`, `data` and `dataChecksum` is taken as written
    /// (entries and pod entries unchecked). For hand-written states (`kind: NodeState`); the
    /// kubelet itself would read such a file as v2 and drop its pod entries.
    pub trust_missing_checksum: bool,
}

impl ReadOptions {
    /// The kubelet with the PodLevelResourceManagers gate on.
    pub const KUBELET: ReadOptions = ReadOptions {
        pod_level_resource_managers: true,
        trust_missing_checksum: false,
    };
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions::KUBELET
    }
}

/// A pod-level entry as stored: the pod's whole CPU set in list format.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodEntry {
    /// Every CPU the pod holds (exclusive slices and the pod shared pool).
    #[serde(rename = "cpuSet", default, skip_serializing_if = "String::is_empty")]
    pub cpu_set: String,
}

/// Pod UID -> container name -> CPU list.
pub type ContainerEntries = BTreeMap<String, BTreeMap<String, String>>;

/// Upstream's `CPUManagerCheckpointData`: the v4 payload, serialized into `data`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointData {
    /// The CPU Manager policy that wrote the checkpoint.
    pub policy_name: String,
    /// The shared pool in list format.
    pub default_cpu_set: String,
    /// Exclusive assignments (omitted when empty, as Go's `omitempty`).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entries: ContainerEntries,
    /// Pod-level CPU sets (omitted when empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_entries: BTreeMap<String, PodEntry>,
}

/// The v4 checkpoint file as the kubelet writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuManagerCheckpoint {
    /// v3 copy: the policy.
    pub policy_name: String,
    /// v3 copy: the shared pool.
    pub default_cpu_set: String,
    /// v3 copy: exclusive assignments (omitted when empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub entries: ContainerEntries,
    /// v3 copy: pod-level CPU sets (omitted when empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_entries: BTreeMap<String, PodEntry>,
    /// The legacy checksum, always 0 in v4 (older kubelets accept 0 as "unchecked").
    pub checksum: u64,
    /// The JSON of [`CheckpointData`].
    pub data: String,
    /// The checksum of `data`.
    pub data_checksum: u64,
}

impl CpuManagerCheckpoint {
    /// Builds the v4 checkpoint of a state, checksums included.
    pub fn from_state(policy_name: &str, state: &CpuManagerState) -> Self {
        let entries: ContainerEntries = state
            .assignments
            .iter()
            .map(|(pod, containers)| {
                let containers = containers
                    .iter()
                    .map(|(name, cpus)| (name.clone(), cpus.to_string()))
                    .collect();
                (pod.clone(), containers)
            })
            .collect();
        let pod_entries: BTreeMap<String, PodEntry> = state
            .pod_pools
            .iter()
            .map(|(pod, cpus)| {
                (
                    pod.clone(),
                    PodEntry {
                        cpu_set: cpus.to_string(),
                    },
                )
            })
            .collect();
        let payload = CheckpointData {
            policy_name: policy_name.to_string(),
            default_cpu_set: state.default_cpu_set.to_string(),
            entries,
            pod_entries,
        };
        // Serializing plain strings and maps cannot fail.
        let data = go_json_escape(serde_json::to_string(&payload).unwrap_or_default());
        let data_checksum = data_checksum(&data);
        CpuManagerCheckpoint {
            policy_name: payload.policy_name,
            default_cpu_set: payload.default_cpu_set,
            entries: payload.entries,
            pod_entries: payload.pod_entries,
            checksum: 0,
            data,
            data_checksum,
        }
    }

    /// The JSON bytes the kubelet writes (Go's `json.Marshal` of the struct).
    pub fn to_json(&self) -> Vec<u8> {
        // Serializing plain strings, maps and integers cannot fail.
        go_json_escape(serde_json::to_string(self).unwrap_or_default()).into_bytes()
    }
}

/// Pod UID -> container -> CPU list, with Go's nil maps (`None`) kept apart from empty ones,
/// since go-spew prints them differently.
type GoEntries = Option<BTreeMap<String, Option<BTreeMap<String, String>>>>;

/// The fields of a v2/v3 checkpoint or of the v4 payload, decoded as Go's `encoding/json` decodes
/// them into the kubelet's freshly made structs (absent maps stay empty, `null` makes them nil).
#[derive(Debug, Clone, Default)]
struct Fields {
    policy_name: String,
    default_cpu_set: String,
    entries: GoEntries,
    pod_entries: Option<BTreeMap<String, CpuSet>>,
    checksum: u64,
}

/// The go-spew text of a v3 checkpoint under `type_name`, checksum zeroed.
fn spew_v3(type_name: &str, f: &Fields) -> String {
    let mut text = spew_head(type_name, f);
    text.push_str(" PodEntries:(state.PodCPUAssignments)");
    match &f.pod_entries {
        None => text.push_str("<nil>"),
        Some(pods) => {
            text.push_str("map[");
            for (i, (pod, cpus)) in pods.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                let _ = write!(
                    text,
                    "{pod}:{{CPUSet:(cpuset.CPUSet){{elems:(map[int]struct {{}})map["
                );
                for (j, cpu) in cpus.iter().enumerate() {
                    if j > 0 {
                        text.push(' ');
                    }
                    let _ = write!(text, "{cpu}:{{}}");
                }
                text.push_str("]}}");
            }
            text.push(']');
        }
    }
    text.push_str(" Checksum:(checksum.Checksum)0}");
    text
}

/// The go-spew text of a v2 checkpoint under `type_name`, checksum zeroed.
fn spew_v2(type_name: &str, f: &Fields) -> String {
    let mut text = spew_head(type_name, f);
    text.push_str(" Checksum:(checksum.Checksum)0}");
    text
}

fn spew_head(type_name: &str, f: &Fields) -> String {
    let mut text = format!(
        "(*state.{type_name}){{PolicyName:(string){} DefaultCPUSet:(string){} Entries:(map[string]map[string]string)",
        f.policy_name, f.default_cpu_set
    );
    match &f.entries {
        None => text.push_str("<nil>"),
        Some(entries) => {
            text.push_str("map[");
            for (i, (pod, containers)) in entries.iter().enumerate() {
                if i > 0 {
                    text.push(' ');
                }
                let _ = write!(text, "{pod}:");
                match containers {
                    None => text.push_str("<nil>"),
                    Some(containers) => {
                        text.push_str("map[");
                        for (j, (name, cpus)) in containers.iter().enumerate() {
                            if j > 0 {
                                text.push(' ');
                            }
                            let _ = write!(text, "{name}:{cpus}");
                        }
                        text.push(']');
                    }
                }
            }
            text.push(']');
        }
    }
    text
}

/// The go-spew text of a v1 checkpoint (entries keyed by container id), under the legacy name.
fn spew_v1(
    policy: &str,
    default_cpu_set: &str,
    entries: &Option<BTreeMap<String, String>>,
) -> String {
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
    text
}

/// A string field: absent or `null` leaves Go's zero value.
fn go_string(obj: &Map<String, Value>, ty: &str, field: &str) -> Result<String, String> {
    match go_field(obj, field) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(other) => Err(type_error(other, ty, field, "string")),
    }
}

/// `map[string]map[string]string`, into a map the kubelet made beforehand.
fn go_entries(obj: &Map<String, Value>, ty: &str) -> Result<GoEntries, String> {
    let field = "entries";
    let go_type = "map[string]string";
    match go_field(obj, field) {
        None => Ok(Some(BTreeMap::new())),
        Some(Value::Null) => Ok(None),
        Some(Value::Object(pods)) => {
            let mut out = BTreeMap::new();
            for (pod, containers) in pods {
                let containers = match containers {
                    Value::Null => None,
                    Value::Object(m) => {
                        let mut inner = BTreeMap::new();
                        for (name, cpus) in m {
                            let cpus = match cpus {
                                Value::Null => String::new(),
                                Value::String(s) => s.clone(),
                                other => return Err(type_error(other, ty, field, "string")),
                            };
                            inner.insert(name.clone(), cpus);
                        }
                        Some(inner)
                    }
                    other => return Err(type_error(other, ty, field, go_type)),
                };
                out.insert(pod.clone(), containers);
            }
            Ok(Some(out))
        }
        Some(other) => Err(type_error(other, ty, field, "map[string]map[string]string")),
    }
}

/// `state.PodCPUAssignments` (`map[string]PodEntry`, `PodEntry` decoding `{"cpuSet": "..."}`).
fn go_pod_entries(
    obj: &Map<String, Value>,
    ty: &str,
) -> Result<Option<BTreeMap<String, CpuSet>>, String> {
    let field = "podEntries";
    match go_field(obj, field) {
        None => Ok(Some(BTreeMap::new())),
        Some(Value::Null) => Ok(None),
        Some(Value::Object(pods)) => {
            let mut out = BTreeMap::new();
            for (pod, entry) in pods {
                let text = match entry {
                    Value::Null => String::new(),
                    Value::Object(m) => match go_field(m, "cpuSet") {
                        None | Some(Value::Null) => String::new(),
                        Some(Value::String(s)) => s.clone(),
                        Some(other) => {
                            return Err(type_error(other, "podEntryJSON", "cpuSet", "string"));
                        }
                    },
                    other => {
                        return Err(format!(
                            "json: cannot unmarshal {} into Go value of type state.podEntryJSON",
                            json_kind(other)
                        ));
                    }
                };
                let cpus =
                    CpuSet::parse(&text).map_err(|e| format!("failed to parse cpuset: {e}"))?;
                out.insert(pod.clone(), cpus);
            }
            Ok(Some(out))
        }
        Some(other) => Err(type_error(other, ty, field, "state.PodCPUAssignments")),
    }
}

impl Fields {
    /// Decodes the fields of struct `ty`; `pods` says whether the struct has `podEntries`.
    fn parse(obj: &Map<String, Value>, ty: &str, pods: bool) -> Result<Fields, String> {
        Ok(Fields {
            policy_name: go_string(obj, ty, "policyName")?,
            default_cpu_set: go_string(obj, ty, "defaultCpuSet")?,
            entries: go_entries(obj, ty)?,
            pod_entries: if pods { go_pod_entries(obj, ty)? } else { None },
            checksum: go_checksum(obj, ty, "checksum")?,
        })
    }
}

/// Turns decoded fields into a state, checking policy name and CPU lists as the kubelet does.
fn restore(
    f: Fields,
    configured_policy: &str,
    opts: ReadOptions,
) -> Result<CpuManagerState, CheckpointError> {
    if f.policy_name != configured_policy {
        return Err(CheckpointError::PolicyMismatch {
            configured: configured_policy.to_string(),
            found: f.policy_name,
        });
    }
    let default_cpu_set =
        CpuSet::parse(&f.default_cpu_set).map_err(|e| CheckpointError::BadDefaultCpuSet {
            value: f.default_cpu_set.clone(),
            reason: e.to_string(),
        })?;
    let mut state = CpuManagerState::with_default(default_cpu_set);
    for (pod, containers) in f.entries.unwrap_or_default() {
        for (container, text) in containers.unwrap_or_default() {
            let cpus = CpuSet::parse(&text).map_err(|e| CheckpointError::BadAssignment {
                value: text.clone(),
                container: container.clone(),
                pod: pod.clone(),
                reason: e.to_string(),
            })?;
            state.set_cpu_set(&pod, &container, cpus);
        }
    }
    if opts.pod_level_resource_managers {
        state.pod_pools = f.pod_entries.unwrap_or_default();
    }
    Ok(state)
}

/// Reads checkpoint bytes as the kubelet with the PodLevelResourceManagers gate on does (see the
/// module docs for the order of versions).
pub fn decode(bytes: &[u8], configured_policy: &str) -> Result<CpuManagerState, CheckpointError> {
    decode_with(bytes, configured_policy, ReadOptions::KUBELET)
}

/// Reads checkpoint bytes: v4, v3, v2, then v1, as the kubelet does, checking checksums (a zero
/// checksum is "unchecked" for v2 and v1 only), the policy name and the CPU lists.
pub fn decode_with(
    bytes: &[u8],
    configured_policy: &str,
    opts: ReadOptions,
) -> Result<CpuManagerState, CheckpointError> {
    let value: Value =
        serde_json::from_slice(bytes).map_err(|e| CheckpointError::Json(json_error(&e)))?;
    let obj = match value {
        Value::Object(obj) => obj,
        // Go decodes `null` into the zero struct: an empty v2 checkpoint with no checksum.
        Value::Null => Map::new(),
        other => {
            return Err(CheckpointError::Json(format!(
                "json: cannot unmarshal {} into Go value of type state.CPUManagerCheckpointV2",
                json_kind(&other)
            )));
        }
    };

    if opts.trust_missing_checksum
        && ["checksum", "data", "dataChecksum"]
            .iter()
            .all(|k| go_field(&obj, k).is_none())
        && let Ok(f) = Fields::parse(&obj, "CPUManagerCheckpointV3", true)
    {
        return restore(f, configured_policy, opts);
    }

    // Version 4: the payload in `data`, checked by `dataChecksum`.
    let data = match go_field(&obj, "data") {
        Some(Value::String(s)) => s.as_str(),
        _ => "",
    };
    let data_sum = go_field(&obj, "dataChecksum")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if !data.is_empty() || data_sum != 0 {
        return decode_v4(&obj, data, data_sum, configured_policy, opts);
    }

    // Version 3: pod entries beside the entries, checksum over both.
    if let Ok(f) = Fields::parse(&obj, "CPUManagerCheckpointV3", true) {
        let sum = f.checksum;
        if sum == checksum_of(&spew_v3("CPUManagerCheckpointV3", &f))
            || sum == checksum_of(&spew_v3("CPUManagerCheckpoint", &f))
        {
            return restore(f, configured_policy, opts);
        }
    }

    // Version 2: entries map pod UID -> container name -> CPU list.
    let v2_error = match Fields::parse(&obj, "CPUManagerCheckpointV2", false) {
        Ok(f) => {
            let sum = f.checksum;
            let ok = sum == 0
                || sum == checksum_of(&spew_v2("CPUManagerCheckpoint", &f))
                || (!opts.pod_level_resource_managers
                    && sum == checksum_of(&spew_v2("CPUManagerCheckpointV2", &f)));
            if ok {
                return restore(f, configured_policy, opts);
            }
            CheckpointError::Corrupt
        }
        Err(e) => CheckpointError::Json(e),
    };

    // Version 1: entries map container id -> CPU list.
    match decode_v1(&obj) {
        Some((policy_name, default_cpu_set, entries, checksum)) => {
            if checksum != 0
                && checksum != checksum_of(&spew_v1(&policy_name, &default_cpu_set, &entries))
            {
                return Err(CheckpointError::Corrupt);
            }
            if let Some(first) = entries.as_ref().and_then(|m| m.keys().next()) {
                return Err(CheckpointError::V1Migration(first.clone()));
            }
            let f = Fields {
                policy_name,
                default_cpu_set,
                entries: Some(BTreeMap::new()),
                pod_entries: None,
                checksum,
            };
            restore(f, configured_policy, opts)
        }
        // Not a v1 checkpoint either: say why it is not a v2 one (upstream's newest reader stops
        // at v2 and says the same).
        None => Err(v2_error),
    }
}

fn decode_v4(
    obj: &Map<String, Value>,
    data: &str,
    data_sum: u64,
    configured_policy: &str,
    opts: ReadOptions,
) -> Result<CpuManagerState, CheckpointError> {
    let outer = "CPUManagerCheckpoint";
    let checks = [
        Fields::parse(obj, outer, true).err(),
        go_string(obj, outer, "data").err(),
        go_checksum(obj, outer, "dataChecksum").err(),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(CheckpointError::V4(format!(
            "failed to deserialize cpu manager checkpoint: {e}"
        )));
    }
    let data_error = |e: String| {
        CheckpointError::V4(format!(
            "failed to deserialize cpu manager checkpoint data: {e}"
        ))
    };
    let payload: Value = serde_json::from_str(data).map_err(|e| data_error(json_error(&e)))?;
    let payload = match payload {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(data_error(format!(
                "json: cannot unmarshal {} into Go value of type state.CPUManagerCheckpointData",
                json_kind(&other)
            )));
        }
    };
    let f = Fields::parse(&payload, "CPUManagerCheckpointData", true).map_err(data_error)?;
    if data_sum != data_checksum(data) {
        return Err(CheckpointError::V4("checkpoint is corrupted".to_string()));
    }
    restore(f, configured_policy, opts)
}

/// The fields of a v1 checkpoint, if the object decodes as one.
#[allow(clippy::type_complexity)]
fn decode_v1(
    obj: &Map<String, Value>,
) -> Option<(String, String, Option<BTreeMap<String, String>>, u64)> {
    let ty = "CPUManagerCheckpointV1";
    let policy = go_string(obj, ty, "policyName").ok()?;
    let default_cpu_set = go_string(obj, ty, "defaultCpuSet").ok()?;
    let checksum = go_checksum(obj, ty, "checksum").ok()?;
    let entries = match go_field(obj, "entries") {
        None => Some(BTreeMap::new()),
        Some(Value::Null) => None,
        Some(Value::Object(m)) => Some(
            m.iter()
                .map(|(k, v)| match v {
                    Value::Null => Some((k.clone(), String::new())),
                    Value::String(s) => Some((k.clone(), s.clone())),
                    _ => None,
                })
                .collect::<Option<BTreeMap<_, _>>>()?,
        ),
        Some(_) => return None,
    };
    Some((policy, default_cpu_set, entries, checksum))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(json: &str, policy: &str) -> Result<CpuManagerState, CheckpointError> {
        decode(json.as_bytes(), policy)
    }

    // Vectors from upstream's state_checkpoint_test.go (TestCheckpointStateRestore), written by
    // kubelets that wrote v2 (and v1) checkpoints.
    #[test]
    fn upstream_v2_and_v1_checksums() {
        let none = |json: &str| ok(json, "none");
        let s = none(
            r#"{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":354655845}"#,
        )
        .expect("valid");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(4, 6));
        let s = none(r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":3610638499}"#)
            .expect("valid");
        assert_eq!(
            s.cpu_set("pod", "container1"),
            Some(&CpuSet::from_range(4, 6))
        );
        assert_eq!(
            none(r#"{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":1337}"#),
            Err(CheckpointError::Corrupt)
        );
        assert_eq!(
            none("{"),
            Err(CheckpointError::Json(
                "unexpected end of JSON input".to_string()
            ))
        );
        assert_eq!(
            none(
                r#"{"policyName":"other","defaultCPUSet":"1-3","entries":{},"checksum":1394507217}"#
            ),
            Err(CheckpointError::PolicyMismatch {
                configured: "none".into(),
                found: "other".into()
            })
        );
        assert!(matches!(
            none(
                r#"{"policyName":"none","defaultCPUSet":"1.3","entries":{},"checksum":3021697696}"#
            ),
            Err(CheckpointError::BadDefaultCpuSet { .. })
        ));
        assert!(matches!(
            none(
                r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"asd"}},"checksum":962272150}"#
            ),
            Err(CheckpointError::BadAssignment { .. })
        ));
        let s = none(r#"{"policyName":"none","defaultCPUSet":"1-3","checksum":1694838852}"#)
            .expect("v1 without entries");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(1, 3));
        assert_eq!(
            none(
                r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"containerID1":"4-6","containerID2":"1-3"},"checksum":3680390589}"#
            ),
            Err(CheckpointError::V1Migration("containerID1".into()))
        );
    }

    /// A v2 file exactly as a kubelet without pod-level resource managers writes it still
    /// restores, with the gate on or off.
    #[test]
    fn kubelet_written_v2_file_restores() {
        let file = br#"{"policyName":"static","defaultCpuSet":"0,5-7","entries":{"uid-1":{"app":"1-2","side":"3-4"}},"checksum":1755639897}"#;
        // The checksum is the legacy-named spew hash of exactly these fields.
        let f = Fields {
            policy_name: "static".into(),
            default_cpu_set: "0,5-7".into(),
            entries: Some(BTreeMap::from([(
                "uid-1".to_string(),
                Some(BTreeMap::from([
                    ("app".to_string(), "1-2".to_string()),
                    ("side".to_string(), "3-4".to_string()),
                ])),
            )])),
            pod_entries: None,
            checksum: 0,
        };
        assert_eq!(
            checksum_of(&spew_v2("CPUManagerCheckpoint", &f)),
            1_755_639_897
        );
        for gate in [true, false] {
            let opts = ReadOptions {
                pod_level_resource_managers: gate,
                trust_missing_checksum: false,
            };
            let s = decode_with(file, "static", opts).expect("v2 restores");
            assert_eq!(s.cpu_set("uid-1", "side"), Some(&CpuSet::from_range(3, 4)));
            assert!(s.pod_pools.is_empty());
        }
    }

    // Vectors from upstream's tests of the pod-level resource managers (v3 checkpoints, checksum
    // computed by the kubelet under the type name CPUManagerCheckpointV3).
    #[test]
    fn upstream_v3_checksums_with_pod_entries() {
        let text = r#"{"policyName":"static","defaultCPUSet":"1-2","entries":{"pod1":{"container1":"5-6","container2":"3-4"}},"podEntries":{"pod2":{"cpuSet":"7-9"}},"checksum":2284712151}"#;
        let s = ok(text, "static").expect("v3 restores");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(1, 2));
        assert_eq!(
            s.cpu_set("pod1", "container2"),
            Some(&CpuSet::from_range(3, 4))
        );
        assert_eq!(s.pod_pools["pod2"], CpuSet::from_range(7, 9));
        // Without the gate the kubelet drops the pod entries.
        let off = ReadOptions {
            pod_level_resource_managers: false,
            trust_missing_checksum: false,
        };
        let s = decode_with(text.as_bytes(), "static", off).expect("v3 restores");
        assert!(s.pod_pools.is_empty());
        let text = r#"{"policyName":"none","defaultCPUSet":"1-3","entries":{"pod1":{"container1":"4-6","container2":"1-3"}},"podEntries":{"pod2":{"cpuSet":"7-9"}},"checksum":751755688}"#;
        assert_eq!(ok(text, "none").expect("v3").pod_pools.len(), 1);
        // A v3 without pod entries: upstream's checksum covers an empty (not nil) map.
        let text = r#"{"policyName":"static","defaultCPUSet":"7-9","entries":{"pod":{"container1":"4-6","container2":"1-3"}},"checksum":1942532442}"#;
        assert_eq!(
            ok(text, "static").expect("v3").default_cpu_set,
            CpuSet::from_range(7, 9)
        );
    }

    #[test]
    fn v3_under_the_legacy_type_name_and_a_wrong_checksum() {
        let f = Fields {
            policy_name: "static".into(),
            default_cpu_set: "0".into(),
            entries: Some(BTreeMap::new()),
            pod_entries: Some(BTreeMap::from([(
                "p".to_string(),
                CpuSet::from_range(1, 2),
            )])),
            checksum: 0,
        };
        let sum = checksum_of(&spew_v3("CPUManagerCheckpoint", &f));
        let text = format!(
            r#"{{"policyName":"static","defaultCpuSet":"0","podEntries":{{"p":{{"cpuSet":"1-2"}}}},"checksum":{sum}}}"#
        );
        assert_eq!(
            ok(&text, "static").expect("legacy name").pod_pools["p"],
            CpuSet::from_range(1, 2)
        );
        // A wrong v3 checksum falls back to v2, which fails the same checksum.
        let bad = text.replace(&sum.to_string(), &(sum + 1).to_string());
        assert_eq!(ok(&bad, "static"), Err(CheckpointError::Corrupt));
        // A zero checksum is no v3 checksum: the file reads as v2 and the pod entries are lost,
        // as in the kubelet.
        let zero = text.replace(&sum.to_string(), "0");
        let s = ok(&zero, "static").expect("v2 with zero checksum");
        assert!(s.pod_pools.is_empty());
    }

    // Payload checksums from upstream's tests (checksum.New of the data string).
    #[test]
    fn upstream_data_checksums() {
        assert_eq!(
            data_checksum(r#"{"policyName":"none","defaultCPUSet":"4-6"}"#),
            657_950_972
        );
        assert_eq!(
            data_checksum(r#"{"policyName":"none","defaultCPUSet":"4-6","unknownField":"value"}"#),
            3_492_408_555
        );
    }

    fn v4(data: &str, sum: u64) -> String {
        let quoted = serde_json::to_string(data).expect("string");
        format!(r#"{{"checksum":0,"data":{quoted},"dataChecksum":{sum}}}"#)
    }

    #[test]
    fn v4_read_uses_data_and_ignores_the_v3_copy() {
        let data = r#"{"policyName":"static","defaultCPUSet":"1-3","entries":{"pod":{"container1":"4-6","container2":"7-9"}},"podEntries":{"pod":{"cpuSet":"4-10"}},"unknownField":1}"#;
        let sum = data_checksum(data);
        // The v3 copy says something else (and has a bad checksum): data wins.
        let text = format!(
            r#"{{"policyName":"other","defaultCpuSet":"0","entries":{{"x":{{"y":"1"}}}},"checksum":77,"data":{},"dataChecksum":{sum}}}"#,
            serde_json::to_string(data).expect("string")
        );
        let s = ok(&text, "static").expect("v4 restores");
        assert_eq!(s.default_cpu_set, CpuSet::from_range(1, 3));
        assert_eq!(
            s.cpu_set("pod", "container2"),
            Some(&CpuSet::from_range(7, 9))
        );
        assert_eq!(s.pod_pools["pod"], CpuSet::from_range(4, 10));
        assert!(s.cpu_set("x", "y").is_none());
    }

    #[test]
    fn corrupt_v4_does_not_fall_back() {
        let data = r#"{"policyName":"none","defaultCPUSet":"4-6"}"#;
        // Wrong data checksum, though the v3 copy beside it is a valid v2 checkpoint.
        let text = r#"{"policyName":"none","defaultCPUSet":"4-6","entries":{},"checksum":354655845,"data":"{\"policyName\":\"none\",\"defaultCPUSet\":\"4-6\"}","dataChecksum":1234}"#;
        let err = ok(text, "none").expect_err("corrupt");
        assert_eq!(err, CheckpointError::V4("checkpoint is corrupted".into()));
        assert_eq!(
            err.to_string(),
            "could not load v4 checkpoint: checkpoint is corrupted"
        );
        // Data without a checksum is corrupt too.
        assert_eq!(
            ok(&v4(data, 0).replace(r#","dataChecksum":0"#, ""), "none"),
            Err(CheckpointError::V4("checkpoint is corrupted".into()))
        );
        // A checksum without data: the payload does not decode.
        assert_eq!(
            ok(r#"{"checksum":0,"dataChecksum":1234}"#, "none")
                .expect_err("no data")
                .to_string(),
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: unexpected end of JSON input"
        );
        // Payload that is not JSON.
        let bad = v4("{", 5);
        assert_eq!(
            ok(&bad, "none").expect_err("bad data").to_string(),
            "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: unexpected end of JSON input"
        );
        // A payload pod entry that is not a CPU list.
        let data = r#"{"policyName":"none","defaultCPUSet":"","podEntries":{"p":{"cpuSet":"x"}}}"#;
        let err = ok(&v4(data, data_checksum(data)), "none").expect_err("bad cpuset");
        assert!(
            err.to_string().starts_with(
                "could not load v4 checkpoint: failed to deserialize cpu manager checkpoint data: failed to parse cpuset: "
            ),
            "{err}"
        );
        // The policy of the payload counts.
        let data = r#"{"policyName":"other","defaultCPUSet":"1-3"}"#;
        assert_eq!(
            ok(&v4(data, data_checksum(data)), "none"),
            Err(CheckpointError::PolicyMismatch {
                configured: "none".into(),
                found: "other".into()
            })
        );
    }

    #[test]
    fn round_trip_with_pod_pools() {
        let mut state = CpuManagerState::with_default(CpuSet::from_ids([0, 5, 6, 7]));
        state.set_cpu_set("uid-1", "app", CpuSet::from_ids([1, 2]));
        state.set_cpu_set("uid-1", "side", CpuSet::from_ids([3]));
        state
            .pod_pools
            .insert("uid-1".into(), CpuSet::from_range(1, 4));
        let cp = CpuManagerCheckpoint::from_state("static", &state);
        let bytes = cp.to_json();
        let text = String::from_utf8(bytes.clone()).expect("utf8");
        let data = r#"{"policyName":"static","defaultCpuSet":"0,5-7","entries":{"uid-1":{"app":"1-2","side":"3"}},"podEntries":{"uid-1":{"cpuSet":"1-4"}}}"#;
        assert_eq!(cp.data, data);
        assert_eq!(cp.data_checksum, data_checksum(data));
        assert_eq!(
            text,
            format!(
                r#"{{"policyName":"static","defaultCpuSet":"0,5-7","entries":{{"uid-1":{{"app":"1-2","side":"3"}}}},"podEntries":{{"uid-1":{{"cpuSet":"1-4"}}}},"checksum":0,"data":{},"dataChecksum":{}}}"#,
                serde_json::to_string(data).expect("string"),
                cp.data_checksum
            )
        );
        assert_eq!(decode(&bytes, "static"), Ok(state.clone()));
        // An older kubelet reads the same file as v2 (zero checksum): entries survive.
        let off = ReadOptions {
            pod_level_resource_managers: false,
            trust_missing_checksum: false,
        };
        let mut without_pools = state;
        without_pools.pod_pools.clear();
        assert_eq!(decode_with(&bytes, "static", off), Ok(without_pools));
    }

    #[test]
    fn empty_maps_are_omitted_like_go() {
        let state = CpuManagerState::with_default(CpuSet::from_range(0, 3));
        let cp = CpuManagerCheckpoint::from_state("none", &state);
        let text = String::from_utf8(cp.to_json()).expect("utf8");
        assert_eq!(
            text,
            format!(
                r#"{{"policyName":"none","defaultCpuSet":"0-3","checksum":0,"data":"{{\"policyName\":\"none\",\"defaultCpuSet\":\"0-3\"}}","dataChecksum":{}}}"#,
                cp.data_checksum
            )
        );
        assert_eq!(decode(text.as_bytes(), "none"), Ok(state));
    }

    #[test]
    fn go_escapes_html_characters() {
        let mut state = CpuManagerState::with_default(CpuSet::new());
        state.set_cpu_set("a<b>&c", "x", CpuSet::from_ids([1]));
        let cp = CpuManagerCheckpoint::from_state("static", &state);
        assert!(
            cp.data.contains(r#""a\u003cb\u003e\u0026c""#),
            "{}",
            cp.data
        );
        let text = String::from_utf8(cp.to_json()).expect("utf8");
        assert!(!text.contains(['<', '>', '&']), "{text}");
        assert_eq!(decode(text.as_bytes(), "static"), Ok(state));
    }

    #[test]
    fn hand_written_states_keep_pod_entries_when_trusted() {
        let text = br#"{"policyName":"static","defaultCpuSet":"0","entries":{"p":{"c":"1"}},"podEntries":{"p":{"cpuSet":"1-2"}}}"#;
        let trusted = ReadOptions {
            pod_level_resource_managers: true,
            trust_missing_checksum: true,
        };
        let s = decode_with(text, "static", trusted).expect("trusted");
        assert_eq!(s.pod_pools["p"], CpuSet::from_range(1, 2));
        // The kubelet reads it as v2 (zero checksum) and drops the pod entries.
        let s = decode(text, "static").expect("kubelet");
        assert!(s.pod_pools.is_empty());
        assert_eq!(s.cpu_set("p", "c"), Some(&CpuSet::from_ids([1])));
    }
}
