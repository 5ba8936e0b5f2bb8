//! The `memory_manager_state` checkpoint: JSON as the kubelet writes it, with its checksum.
//!
//! The kubelet's checksum is FNV-32a over a Go `spew` rendering (`%#v`, sorted keys, no
//! pointer addresses) of the checkpoint struct with the checksum field zeroed. This module
//! renders the same text for the two struct layouts the kubelet has used: v1 (policyName,
//! machineState, entries) and v2 (with podEntries).

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use std::collections::BTreeMap;

use crate::Error;
use crate::state::{
    Block, ContainerMemoryAssignments, MemoryState, NumaNodeMap, PodEntry, null_as_default,
};

/// The checkpoint file's content.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    /// `Static` or `None`.
    pub policy_name: String,
    /// Per-NUMA-node memory.
    #[serde(default, deserialize_with = "null_as_default")]
    pub machine_state: NumaNodeMap,
    /// Per-container blocks (omitted when empty, as the kubelet does).
    #[serde(
        default,
        skip_serializing_if = "ContainerMemoryAssignments::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub entries: ContainerMemoryAssignments,
    /// Pod-level assignments (PodLevelResourceManagers), pod UID to entry; omitted when empty.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "null_as_default"
    )]
    pub pod_entries: BTreeMap<String, PodEntry>,
    /// FNV-32a of the content; 0 means "not checked" for compatibility.
    #[serde(default)]
    pub checksum: u64,
}

impl Checkpoint {
    /// A checkpoint of `state` under `policy_name`, with its (v2) checksum.
    pub fn new(policy_name: &str, state: &MemoryState) -> Self {
        let mut cp = Self {
            policy_name: policy_name.to_string(),
            machine_state: state.machine_state.clone(),
            entries: state.entries.clone(),
            pod_entries: state.pod_entries.clone(),
            checksum: 0,
        };
        cp.checksum = checksum_v2(&cp);
        cp
    }

    /// The JSON the kubelet writes.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Decodes a checkpoint and verifies its checksum (either layout; 0 is accepted unchecked),
    /// and that it was written by `configured_policy`.
    pub fn from_json(text: &str, configured_policy: &str) -> Result<Self, Error> {
        let cp: Checkpoint = serde_json::from_str(text).map_err(|e| Error::CheckpointDecode {
            message: e.to_string(),
        })?;
        if cp.checksum != 0 {
            let v2 = checksum_v2(&cp);
            if cp.checksum != v2 && cp.checksum != checksum_v1(&cp) {
                return Err(Error::CorruptCheckpoint {
                    expected: cp.checksum,
                    actual: v2,
                });
            }
        }
        if cp.policy_name != configured_policy {
            return Err(Error::PolicyMismatch {
                configured: configured_policy.to_string(),
                stored: cp.policy_name.clone(),
            });
        }
        Ok(cp)
    }

    /// The state held by the checkpoint.
    pub fn into_state(self) -> MemoryState {
        MemoryState {
            machine_state: self.machine_state,
            entries: self.entries,
            pod_entries: self.pod_entries,
        }
    }
}

/// The checksum of the v1 layout (no podEntries), as older kubelets wrote it.
pub fn checksum_v1(cp: &Checkpoint) -> u64 {
    u64::from(fnv32a(spew(cp, false).as_bytes()))
}

/// The checksum of the v2 layout (with podEntries), as current kubelets write it.
pub fn checksum_v2(cp: &Checkpoint) -> u64 {
    u64::from(fnv32a(spew(cp, true).as_bytes()))
}

fn fnv32a(data: &[u8]) -> u32 {
    let mut hash: u32 = 0x811c_9dc5;
    for &b in data {
        hash ^= u32::from(b);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    hash
}

/// The `spew` rendering of `*state.MemoryManagerCheckpoint` with the checksum zeroed. Map keys
/// are sorted (numerically for NUMA ids, bytewise for names), as spew's `SortKeys` does; slices
/// decoded or built by the kubelet are never nil, so they print as `[...]`.
fn spew(cp: &Checkpoint, with_pod_entries: bool) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "(*state.MemoryManagerCheckpoint){{PolicyName:(string){} MachineState:(state.NUMANodeMap)map[",
        cp.policy_name
    );
    for (i, (id, node)) in cp.machine_state.iter().enumerate() {
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
    s.push_str("] Entries:(state.ContainerMemoryAssignments)map[");
    for (i, (pod, containers)) in cp.entries.iter().enumerate() {
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
    if with_pod_entries {
        s.push_str(" PodEntries:(state.PodMemoryAssignments)map[");
        for (i, (pod, entry)) in cp.pod_entries.iter().enumerate() {
            if i > 0 {
                s.push(' ');
            }
            let _ = write!(s, "{pod}:{{MemoryBlocks:([]state.Block)[");
            push_blocks(&mut s, &entry.memory_blocks);
            s.push_str("]}");
        }
        s.push(']');
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The v1 checkpoint of upstream's state_checkpoint_test.go ("Restore checkpoint from v1
    /// (migration)"), checksum as the kubelet computed it.
    const UPSTREAM_V1: &str = r#"{
        "policyName":"static",
        "machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
        "entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
        "checksum": 4215593881
    }"#;

    #[test]
    fn upstream_v1_checksum_verifies() {
        let cp = Checkpoint::from_json(UPSTREAM_V1, "static").expect("valid checkpoint");
        assert_eq!(checksum_v1(&cp), 4215593881);
    }

    /// The v2 checkpoint with pod entries of upstream's state_checkpoint_test.go ("Restore
    /// checkpoint from v2 with PodLevelResourceManagers enabled").
    #[test]
    fn upstream_v2_checksum_verifies() {
        let text = r#"{
            "policyName":"static",
            "machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
            "entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
            "podEntries":{"pod":{"memoryBlocks":[{"numaAffinity":[0],"type":"memory","size":512}]}},
            "checksum": 1278640530
        }"#;
        let cp = Checkpoint::from_json(text, "static").expect("valid checkpoint");
        assert_eq!(checksum_v2(&cp), 1278640530);
        assert_eq!(cp.pod_entries["pod"].memory_blocks.len(), 1);
    }

    #[test]
    fn corrupt_and_foreign_checkpoints_are_refused() {
        let corrupt = UPSTREAM_V1.replace("4215593881", "101010");
        assert!(matches!(
            Checkpoint::from_json(&corrupt, "static"),
            Err(Error::CorruptCheckpoint {
                expected: 101010,
                ..
            })
        ));
        assert!(matches!(
            Checkpoint::from_json(UPSTREAM_V1, "none"),
            Err(Error::PolicyMismatch { .. })
        ));
        let unchecked = UPSTREAM_V1.replace("4215593881", "0");
        assert!(Checkpoint::from_json(&unchecked, "static").is_ok());
    }

    #[test]
    fn written_checkpoints_read_back() {
        let cp = Checkpoint::from_json(UPSTREAM_V1, "static").expect("valid");
        let state = cp.into_state();
        let written = Checkpoint::new("Static", &state);
        let back = Checkpoint::from_json(&written.to_json(), "Static").expect("round trip");
        assert_eq!(back.into_state(), state);
    }
}
