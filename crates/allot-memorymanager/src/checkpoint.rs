//! The `memory_manager_state` checkpoint, byte-compatible with the kubelet's, including the
//! pod-level entries of the pod-level resource managers (KEP-5526).
//!
//! # Which format
//!
//! allot writes the **v3** layout, the one upstream's kubelet writes since the pod-level
//! resource managers switched to a serialized payload (`pkg/kubelet/cm/memorymanager/state/
//! checkpoint.go`, types `MemoryManagerCheckpoint` = `MemoryManagerCheckpointV3`,
//! `MemoryManagerCheckpointData`; reading order in `state_checkpoint.go`,
//! `loadAndMigrateCheckpointV3`):
//!
//! ```json
//! {"policyName":"Static","machineState":{"0":{...}},"entries":{"uid":{"app":[...]}},
//!  "checksum":4215593881,
//!  "data":"{\"policyName\":\"Static\",\"machineState\":{...},\"entries\":{...},\"podEntries\":{...}}",
//!  "dataChecksum":637296054}
//! ```
//!
//! `data` (the JSON of `policyName`, `machineState`, `entries`, `podEntries`) with
//! `dataChecksum` is the authoritative payload. Beside it the kubelet keeps the v1 fields
//! (`policyName`, `machineState`, `entries`) with a real v1 `checksum`, so that a kubelet that
//! only knows v1 reads the same file (without pod entries). Unlike the CPU Manager's v4, the
//! legacy checksum here is not zero.
//!
//! Reading follows the kubelet: v3 first; a file with a `data` or a `dataChecksum` that does not
//! load is an error ("could not load v3 checkpoint: ...") and never falls back; otherwise v2
//! (`podEntries` beside the entries; its checksum is required), then v1 (a zero checksum means
//! "unchecked"). Pod entries are restored only with the PodLevelResourceManagers gate on.
//!
//! # Checksums
//!
//! FNV-1a (32 bit) over go-spew's `%#v` text with the kubelet's hashing configuration (types in
//! parentheses, sorted keys, no pointer addresses), checksum zeroed: `dataChecksum` hashes
//! `(string)` followed by `data`; v1 and v2 hash the struct under the legacy type name
//! `MemoryManagerCheckpoint` (v1 also under `MemoryManagerCheckpointV1`, which the v2-era
//! kubelet accepted with the gate off). The tests check the text against checksums computed by
//! upstream's kubelet.

use std::fmt::Write as _;

use serde::de::DeserializeOwned;
use serde::{Serialize, Serializer};
use serde_json::{Map, Value};

use std::collections::BTreeMap;

pub use allot_checkpoint::data_checksum;
use allot_checkpoint::{
    checksum_of, go_checksum, go_field, go_json_escape, json_error, json_kind, type_error,
};

use crate::Error;
use crate::state::{Block, ContainerMemoryAssignments, MemoryState, NumaNodeMap, PodEntry};

/// The file name the kubelet uses.
pub const CHECKPOINT_FILE: &str = "memory_manager_state";

/// How a checkpoint is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The PodLevelResourceManagers feature gate: pod entries are restored only with it on.
    pub pod_level_resource_managers: bool,
    /// A checkpoint without any of `checksum`, `data` and `dataChecksum` is taken as written,
    /// pod entries included. For hand-written states (`kind: NodeState`); the kubelet itself
    /// would read such a file as v1 and drop its pod entries.
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

/// Upstream's `MemoryManagerCheckpointData`: the v3 payload, serialized into `data`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckpointData {
    /// `Static` or `None`.
    pub policy_name: String,
    /// Per-NUMA-node memory.
    #[serde(serialize_with = "go_int_keys")]
    pub machine_state: NumaNodeMap,
    /// Per-container blocks (omitted when empty, as Go's `omitempty`).
    #[serde(skip_serializing_if = "ContainerMemoryAssignments::is_empty")]
    pub entries: ContainerMemoryAssignments,
    /// Pod-level blocks (omitted when empty).
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub pod_entries: BTreeMap<String, PodEntry>,
}

/// The v3 checkpoint file as the kubelet writes it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// v1 copy: the policy.
    pub policy_name: String,
    /// v1 copy: per-NUMA-node memory.
    #[serde(serialize_with = "go_int_keys")]
    pub machine_state: NumaNodeMap,
    /// v1 copy: per-container blocks (omitted when empty).
    #[serde(skip_serializing_if = "ContainerMemoryAssignments::is_empty")]
    pub entries: ContainerMemoryAssignments,
    /// The v1 checksum of the v1 copy, for kubelets that only read v1.
    pub checksum: u64,
    /// The JSON of [`CheckpointData`].
    pub data: String,
    /// The checksum of `data`.
    pub data_checksum: u64,
    /// The state the checkpoint holds (pod entries included).
    #[serde(skip)]
    state: MemoryState,
}

/// Go's `encoding/json` writes the keys of a `map[int]T` as strings sorted as strings ("10"
/// before "2").
fn go_int_keys<S: Serializer>(map: &NumaNodeMap, serializer: S) -> Result<S::Ok, S::Error> {
    let mut keyed: Vec<(String, _)> = map.iter().map(|(k, v)| (k.to_string(), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    serializer.collect_map(keyed)
}

impl Checkpoint {
    /// The v3 checkpoint of `state` under `policy_name`, with both checksums.
    pub fn new(policy_name: &str, state: &MemoryState) -> Self {
        let payload = CheckpointData {
            policy_name: policy_name.to_string(),
            machine_state: state.machine_state.clone(),
            entries: state.entries.clone(),
            pod_entries: state.pod_entries.clone(),
        };
        // Serializing strings, maps and integers cannot fail.
        let data = go_json_escape(serde_json::to_string(&payload).unwrap_or_default());
        let fields = Fields {
            policy_name: policy_name.to_string(),
            machine_state: Some(state.machine_state.clone()),
            entries: Some(state.entries.clone()),
            pod_entries: None,
            checksum: 0,
        };
        Checkpoint {
            policy_name: payload.policy_name,
            machine_state: payload.machine_state,
            entries: payload.entries,
            checksum: checksum_of(&spew(LEGACY, &fields, false)),
            data_checksum: data_checksum(&data),
            data,
            state: state.clone(),
        }
    }

    /// The JSON the kubelet writes.
    pub fn to_json(&self) -> String {
        go_json_escape(serde_json::to_string(self).unwrap_or_default())
    }

    /// Reads a checkpoint of any version as the kubelet with the PodLevelResourceManagers gate
    /// on does, checking checksums and that it was written by `configured_policy`; the result is
    /// the same state as a v3 checkpoint.
    pub fn from_json(text: &str, configured_policy: &str) -> Result<Self, Error> {
        Self::from_json_with(text, configured_policy, ReadOptions::KUBELET)
    }

    /// [`Checkpoint::from_json`] with explicit options.
    pub fn from_json_with(
        text: &str,
        configured_policy: &str,
        opts: ReadOptions,
    ) -> Result<Self, Error> {
        let state = decode_with(text.as_bytes(), configured_policy, opts)?;
        Ok(Checkpoint::new(configured_policy, &state))
    }

    /// The state held by the checkpoint.
    pub fn into_state(self) -> MemoryState {
        self.state
    }
}

const LEGACY: &str = "MemoryManagerCheckpoint";

/// The kubelet's v1 checksum (legacy type name, no pod entries) of a state.
pub fn checksum_v1(policy_name: &str, state: &MemoryState) -> u64 {
    checksum_of(&spew(LEGACY, &Fields::of(policy_name, state), false))
}

/// The kubelet's v2 checksum (legacy type name, with pod entries) of a state.
pub fn checksum_v2(policy_name: &str, state: &MemoryState) -> u64 {
    checksum_of(&spew(LEGACY, &Fields::of(policy_name, state), true))
}

/// The fields of a v1/v2 checkpoint or of the v3 payload, decoded as Go's `encoding/json` does
/// into the kubelet's freshly made structs: absent maps stay empty, `null` makes them nil
/// (`None`), which go-spew prints differently.
#[derive(Debug, Clone, Default)]
struct Fields {
    policy_name: String,
    machine_state: Option<NumaNodeMap>,
    entries: Option<ContainerMemoryAssignments>,
    pod_entries: Option<BTreeMap<String, PodEntry>>,
    checksum: u64,
}

impl Fields {
    fn of(policy_name: &str, state: &MemoryState) -> Fields {
        Fields {
            policy_name: policy_name.to_string(),
            machine_state: Some(state.machine_state.clone()),
            entries: Some(state.entries.clone()),
            pod_entries: Some(state.pod_entries.clone()),
            checksum: 0,
        }
    }

    /// Decodes the fields of struct `ty`; `pods` says whether the struct has `podEntries`.
    fn parse(obj: &Map<String, Value>, ty: &str, pods: bool) -> Result<Fields, String> {
        Ok(Fields {
            policy_name: match go_field(obj, "policyName") {
                None | Some(Value::Null) => String::new(),
                Some(Value::String(s)) => s.clone(),
                Some(other) => return Err(type_error(other, ty, "policyName", "string")),
            },
            machine_state: go_map(obj, ty, "machineState", "state.NUMANodeMap")?,
            entries: go_map(obj, ty, "entries", "state.ContainerMemoryAssignments")?,
            pod_entries: if pods {
                go_map(obj, ty, "podEntries", "state.PodMemoryAssignments")?
            } else {
                None
            },
            checksum: go_checksum(obj, ty, "checksum")?,
        })
    }
}

/// The `spew` rendering of `*state.<type_name>` with the checksum zeroed. Map keys are sorted
/// (numerically for NUMA ids, bytewise for names), as spew's `SortKeys` does; slices decoded or
/// built by the kubelet are never nil, so they print as `[...]`.
fn spew(type_name: &str, f: &Fields, with_pod_entries: bool) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "(*state.{type_name}){{PolicyName:(string){} MachineState:(state.NUMANodeMap)",
        f.policy_name
    );
    match &f.machine_state {
        None => s.push_str("<nil>"),
        Some(machine) => {
            s.push_str("map[");
            for (i, (id, node)) in machine.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                let _ = write!(
                    s,
                    "{id}:<*>{{NumberOfAssignments:(int){} MemoryMap:(map[v1.ResourceName]*state.MemoryTable)map[",
                    node.number_of_assignments
                );
                for (j, (resource, t)) in node.memory_map.iter().enumerate() {
                    if j > 0 {
                        s.push(' ');
                    }
                    let _ = write!(
                        s,
                        "{resource}:<*>{{TotalMemSize:(uint64){} SystemReserved:(uint64){} Allocatable:(uint64){} Reserved:(uint64){} Free:(uint64){}}}",
                        t.total, t.system_reserved, t.allocatable, t.reserved, t.free
                    );
                }
                s.push_str("] Cells:([]int)[");
                push_ints(&mut s, &node.cells);
                s.push_str("]}");
            }
            s.push(']');
        }
    }
    s.push_str(" Entries:(state.ContainerMemoryAssignments)");
    match &f.entries {
        None => s.push_str("<nil>"),
        Some(entries) => {
            s.push_str("map[");
            for (i, (pod, containers)) in entries.iter().enumerate() {
                if i > 0 {
                    s.push(' ');
                }
                let _ = write!(s, "{pod}:map[");
                for (j, (container, blocks)) in containers.iter().enumerate() {
                    if j > 0 {
                        s.push(' ');
                    }
                    let _ = write!(s, "{container}:[");
                    push_blocks(&mut s, blocks);
                    s.push(']');
                }
                s.push(']');
            }
            s.push(']');
        }
    }
    if with_pod_entries {
        s.push_str(" PodEntries:(state.PodMemoryAssignments)");
        match &f.pod_entries {
            None => s.push_str("<nil>"),
            Some(pods) => {
                s.push_str("map[");
                for (i, (pod, entry)) in pods.iter().enumerate() {
                    if i > 0 {
                        s.push(' ');
                    }
                    let _ = write!(s, "{pod}:{{MemoryBlocks:([]state.Block)[");
                    push_blocks(&mut s, &entry.memory_blocks);
                    s.push_str("]}");
                }
                s.push(']');
            }
        }
    }
    s.push_str(" Checksum:(checksum.Checksum)0}");
    s
}

fn push_blocks(s: &mut String, blocks: &[Block]) {
    for (k, b) in blocks.iter().enumerate() {
        if k > 0 {
            s.push(' ');
        }
        s.push_str("{NUMAAffinity:([]int)[");
        push_ints(s, &b.numa_affinity);
        let _ = write!(
            s,
            "] Type:(v1.ResourceName){} Size:(uint64){}}}",
            b.resource, b.size
        );
    }
}

fn push_ints(s: &mut String, values: &[usize]) {
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            s.push(' ');
        }
        let _ = write!(s, "{v}");
    }
}

/// A map field into a map the kubelet made beforehand: absent stays empty, `null` is nil.
fn go_map<T: DeserializeOwned + Default>(
    obj: &Map<String, Value>,
    ty: &str,
    field: &str,
    go_type: &str,
) -> Result<Option<T>, String> {
    match go_field(obj, field) {
        None => Ok(Some(T::default())),
        Some(Value::Null) => Ok(None),
        Some(v @ Value::Object(_)) => serde_json::from_value(v.clone())
            .map(Some)
            .map_err(|e| format!("json: cannot unmarshal {ty}.{field}: {e}")),
        Some(other) => Err(type_error(other, ty, field, go_type)),
    }
}

fn restore(f: Fields, configured_policy: &str, opts: ReadOptions) -> Result<MemoryState, Error> {
    if f.policy_name != configured_policy {
        return Err(Error::PolicyMismatch {
            configured: configured_policy.to_string(),
            stored: f.policy_name,
        });
    }
    Ok(MemoryState {
        machine_state: f.machine_state.unwrap_or_default(),
        entries: f.entries.unwrap_or_default(),
        pod_entries: if opts.pod_level_resource_managers {
            f.pod_entries.unwrap_or_default()
        } else {
            BTreeMap::new()
        },
    })
}

/// Reads checkpoint bytes: v3, v2, then v1, as the kubelet does (see the module docs).
pub fn decode_with(
    bytes: &[u8],
    configured_policy: &str,
    opts: ReadOptions,
) -> Result<MemoryState, Error> {
    let decode_error = |message: String| Error::CheckpointDecode { message };
    let value: Value = serde_json::from_slice(bytes).map_err(|e| decode_error(json_error(&e)))?;
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Null => Map::new(),
        other => {
            return Err(decode_error(format!(
                "json: cannot unmarshal {} into Go value of type state.MemoryManagerCheckpointV1",
                json_kind(&other)
            )));
        }
    };

    if opts.trust_missing_checksum
        && ["checksum", "data", "dataChecksum"]
            .iter()
            .all(|k| go_field(&obj, k).is_none())
        && let Ok(f) = Fields::parse(&obj, "MemoryManagerCheckpointV2", true)
    {
        return restore(f, configured_policy, opts);
    }

    // Version 3: the payload in `data`, checked by `dataChecksum`.
    let data = match go_field(&obj, "data") {
        Some(Value::String(s)) => s.as_str(),
        _ => "",
    };
    let data_sum = go_field(&obj, "dataChecksum")
        .and_then(Value::as_u64)
        .unwrap_or(0);
    if !data.is_empty() || data_sum != 0 {
        return decode_v3(&obj, data, data_sum, configured_policy, opts);
    }

    // Version 2: pod entries beside the entries; the checksum is required.
    if let Ok(f) = Fields::parse(&obj, "MemoryManagerCheckpointV2", true)
        && f.checksum == checksum_of(&spew(LEGACY, &f, true))
    {
        return restore(f, configured_policy, opts);
    }

    // Version 1: no pod entries; zero means "unchecked".
    let f = Fields::parse(&obj, "MemoryManagerCheckpointV1", false).map_err(decode_error)?;
    let actual = checksum_of(&spew(LEGACY, &f, false));
    if f.checksum != 0
        && f.checksum != actual
        && f.checksum != checksum_of(&spew("MemoryManagerCheckpointV1", &f, false))
    {
        return Err(Error::CorruptCheckpoint {
            expected: f.checksum,
            actual,
        });
    }
    restore(f, configured_policy, opts)
}

fn decode_v3(
    obj: &Map<String, Value>,
    data: &str,
    data_sum: u64,
    configured_policy: &str,
    opts: ReadOptions,
) -> Result<MemoryState, Error> {
    let v3_error = |message: String| Error::CheckpointV3 { message };
    let outer = "MemoryManagerCheckpoint";
    let data_type = match go_field(obj, "data") {
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(other) => Some(type_error(other, outer, "data", "string")),
    };
    let checks = [
        Fields::parse(obj, outer, false).err(),
        data_type,
        go_checksum(obj, outer, "dataChecksum").err(),
    ];
    if let Some(e) = checks.into_iter().flatten().next() {
        return Err(v3_error(format!(
            "failed to deserialize memory manager checkpoint: {e}"
        )));
    }
    let data_error = |e: String| {
        v3_error(format!(
            "failed to deserialize memory manager checkpoint data: {e}"
        ))
    };
    let payload: Value = serde_json::from_str(data).map_err(|e| data_error(json_error(&e)))?;
    let payload = match payload {
        Value::Object(m) => m,
        Value::Null => Map::new(),
        other => {
            return Err(data_error(format!(
                "json: cannot unmarshal {} into Go value of type state.MemoryManagerCheckpointData",
                json_kind(&other)
            )));
        }
    };
    let f = Fields::parse(&payload, "MemoryManagerCheckpointData", true).map_err(data_error)?;
    let actual = data_checksum(data);
    if data_sum != actual {
        return Err(v3_error("checkpoint is corrupted".to_string()));
    }
    restore(f, configured_policy, opts)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MACHINE: &str = r#""machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}}"#;
    const ENTRIES: &str =
        r#""entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}}"#;
    const POD_ENTRIES: &str = r#""podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}}"#;

    /// The v1 checkpoint of upstream's state_checkpoint_test.go ("Restore checkpoint from v1
    /// (migration)"), checksum as the kubelet computed it.
    fn upstream_v1() -> String {
        format!(r#"{{"policyName":"static",{MACHINE},{ENTRIES},"checksum":4215593881}}"#)
    }

    fn read(text: &str, policy: &str) -> Result<MemoryState, Error> {
        decode_with(text.as_bytes(), policy, ReadOptions::KUBELET)
    }

    /// A v3 file as upstream's tests write it: a deliberately wrong v1 copy beside the payload.
    fn v3(data: &str, sum: u64) -> String {
        format!(
            r#"{{"policyName":"other","machineState":{{}},"entries":{{"pod":{{"containerX":[]}}}},"checksum":1234,"data":{},"dataChecksum":{sum}}}"#,
            serde_json::to_string(data).expect("string")
        )
    }

    #[test]
    fn upstream_v1_checksum_verifies() {
        let state = read(&upstream_v1(), "static").expect("valid checkpoint");
        assert_eq!(checksum_v1("static", &state), 4215593881);
        assert_eq!(state.entries["pod"]["container1"][0].size, 512);
        // A kubelet-written v1 file restores with the gate off too.
        let off = ReadOptions {
            pod_level_resource_managers: false,
            trust_missing_checksum: false,
        };
        assert_eq!(
            decode_with(upstream_v1().as_bytes(), "static", off),
            Ok(state)
        );
    }

    /// The v2 checkpoint with pod entries of upstream's state_checkpoint_test.go ("Restore
    /// checkpoint from v2 with PodLevelResourceManagers enabled").
    #[test]
    fn upstream_v2_checksum_verifies() {
        let text = format!(
            r#"{{"policyName":"static",{MACHINE},{ENTRIES},{POD_ENTRIES},"checksum":1278640530}}"#
        );
        let state = read(&text, "static").expect("valid checkpoint");
        assert_eq!(checksum_v2("static", &state), 1278640530);
        assert_eq!(state.pod_entries["pod"].memory_blocks.len(), 1);
        // Gate off: restored without pod entries.
        let off = ReadOptions {
            pod_level_resource_managers: false,
            trust_missing_checksum: false,
        };
        let state = decode_with(text.as_bytes(), "static", off).expect("valid");
        assert!(state.pod_entries.is_empty());
        // A zeroed v2 checksum is not accepted for v2: the file reads as v1, without pod entries.
        let zero = text.replace("1278640530", "0");
        assert!(read(&zero, "static").expect("v1").pod_entries.is_empty());
        // A wrong one is corrupt (v1 fails it too).
        let bad = text.replace("1278640530", "101010");
        assert!(matches!(
            read(&bad, "static"),
            Err(Error::CorruptCheckpoint {
                expected: 101010,
                ..
            })
        ));
    }

    // Payload vectors from upstream's state_checkpoint_test.go (v3, dataChecksum computed by the
    // kubelet).
    #[test]
    fn upstream_v3_vectors() {
        let data = format!(r#"{{"policyName":"static",{MACHINE},{ENTRIES}}}"#);
        assert_eq!(data_checksum(&data), 1849615440);
        let state = read(&v3(&data, 1849615440), "static").expect("v3 restores");
        assert_eq!(state.entries["pod"]["container1"][0].size, 512);
        assert!(!state.entries["pod"].contains_key("containerX"));
        assert_eq!(state.machine_state[&0].table("memory").free, 1024);

        let data = format!(r#"{{"policyName":"static",{MACHINE},{ENTRIES},{POD_ENTRIES}}}"#);
        assert_eq!(data_checksum(&data), 637296054);
        let state = read(&v3(&data, 637296054), "static").expect("v3 restores");
        assert_eq!(state.pod_entries["pod"].memory_blocks[0].size, 512);

        let data =
            format!(r#"{{"unknownField":"value","policyName":"static",{MACHINE},{ENTRIES}}}"#);
        assert_eq!(data_checksum(&data), 2100279793);
        assert!(read(&v3(&data, 2100279793), "static").is_ok());
    }

    #[test]
    fn corrupt_v3_does_not_fall_back() {
        let data = format!(r#"{{"policyName":"static",{MACHINE},{ENTRIES}}}"#);
        let text = format!(
            r#"{{"policyName":"static",{MACHINE},{ENTRIES},"checksum":4215593881,"data":{},"dataChecksum":1234}}"#,
            serde_json::to_string(&data).expect("string")
        );
        let err = read(&text, "static").expect_err("corrupt");
        assert_eq!(
            err.to_string(),
            "could not load v3 checkpoint: checkpoint is corrupted"
        );
        // Data without dataChecksum.
        let no_sum = text.replace(r#","dataChecksum":1234"#, "");
        assert_eq!(
            read(&no_sum, "static").expect_err("corrupt").to_string(),
            "could not load v3 checkpoint: checkpoint is corrupted"
        );
        // dataChecksum without data.
        let no_data = format!(
            r#"{{"policyName":"static",{MACHINE},{ENTRIES},"checksum":4215593881,"dataChecksum":1234}}"#
        );
        assert_eq!(
            read(&no_data, "static").expect_err("corrupt").to_string(),
            "could not load v3 checkpoint: failed to deserialize memory manager checkpoint data: unexpected end of JSON input"
        );
        // Data that is not JSON.
        assert_eq!(
            read(&v3("{", 1234), "none")
                .expect_err("corrupt")
                .to_string(),
            "could not load v3 checkpoint: failed to deserialize memory manager checkpoint data: unexpected end of JSON input"
        );
        // Truncated file.
        assert_eq!(
            read("{", "none").expect_err("json").to_string(),
            "unexpected end of JSON input"
        );
        // The payload's policy counts, not the copy's.
        assert_eq!(
            read(&v3(&data, 1849615440), "none")
                .expect_err("policy")
                .to_string(),
            r#"[memorymanager] configured policy "none" differs from state checkpoint policy "static""#
        );
    }

    #[test]
    fn written_checkpoints_read_back_by_every_reader() {
        let mut state = read(&upstream_v1(), "static").expect("valid");
        state.pod_entries.insert(
            "pod".into(),
            PodEntry {
                memory_blocks: state.entries["pod"]["container1"].clone(),
            },
        );
        let written = Checkpoint::new("Static", &state);
        let text = written.to_json();
        assert!(
            text.starts_with(r#"{"policyName":"Static","machineState":{"0":"#),
            "{text}"
        );
        let back = Checkpoint::from_json(&text, "Static").expect("round trip");
        assert_eq!(back.into_state(), state);
        // The v1 copy carries a real v1 checksum: a v1-only kubelet reads the file.
        assert_eq!(written.checksum, checksum_v1("Static", &state));
        let as_v1: Value = serde_json::from_str(&text).expect("json");
        let mut as_v1 = as_v1.as_object().expect("object").clone();
        as_v1.remove("data");
        as_v1.remove("dataChecksum");
        let v1_text = serde_json::to_string(&as_v1).expect("json");
        let v1_state = read(&v1_text, "Static").expect("v1 reader");
        assert_eq!(v1_state.entries, state.entries);
        assert!(v1_state.pod_entries.is_empty());
        // The payload is exactly the JSON of the data, pod entries included.
        assert_eq!(written.data_checksum, data_checksum(&written.data));
        assert!(written.data.contains(r#""podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}}"#));
    }

    #[test]
    fn numa_ids_are_written_in_go_order() {
        let mut state = MemoryState::default();
        for id in [2, 10, 1] {
            state.machine_state.insert(id, Default::default());
        }
        let text = Checkpoint::new("Static", &state).to_json();
        let one = text.find(r#""1":"#).expect("1");
        let ten = text.find(r#""10":"#).expect("10");
        let two = text.find(r#""2":"#).expect("2");
        assert!(one < ten && ten < two, "{text}");
    }

    #[test]
    fn hand_written_states_keep_pod_entries_when_trusted() {
        let text = format!(r#"{{"policyName":"static",{MACHINE},{ENTRIES},{POD_ENTRIES}}}"#);
        let trusted = ReadOptions {
            pod_level_resource_managers: true,
            trust_missing_checksum: true,
        };
        let state = decode_with(text.as_bytes(), "static", trusted).expect("trusted");
        assert_eq!(state.pod_entries.len(), 1);
        // The kubelet reads it as v1 and drops them.
        assert!(read(&text, "static").expect("v1").pod_entries.is_empty());
    }

    #[test]
    fn foreign_policy_is_refused() {
        assert!(matches!(
            read(&upstream_v1(), "none"),
            Err(Error::PolicyMismatch { .. })
        ));
        let unchecked = upstream_v1().replace("4215593881", "0");
        assert!(read(&unchecked, "static").is_ok());
    }
}
