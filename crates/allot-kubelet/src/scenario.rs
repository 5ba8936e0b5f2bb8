//! A node-admission scenario: one multi-document YAML (or JSON) stream with a `NodeTopology`, a
//! `KubeletConfiguration`, optionally a `NodeState` (the managers' checkpoints) and the pods to
//! admit, in document order.

use allot_api::core::v1::Pod;
use allot_kubelet_config::KubeletConfiguration;
use allot_topology::NodeTopology;
use serde::{Deserialize, Serialize};

use crate::KubeletError;

/// `kind: NodeState` (allot.dev/v1alpha1): the CPU and Memory Manager checkpoints a node starts
/// from, in the kubelet's checkpoint shapes (any version the kubelet reads: the current ones with
/// `data` and `dataChecksum`, or the older inline ones). A checkpoint without any checksum field
/// is taken as written, `podEntries` included; one with a checksum is checked as the kubelet
/// checks it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeState {
    /// `allot.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// `NodeState`.
    #[serde(default)]
    pub kind: String,
    /// Optional metadata (ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<serde_json::Value>,
    /// The `cpu_manager_state` content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_manager: Option<serde_json::Value>,
    /// The `memory_manager_state` content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_manager: Option<serde_json::Value>,
    /// In-memory policy state some upstream tests inject (not part of any checkpoint). A kubelet
    /// starting from checkpoints has none, so admission ignores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_manager_policy_internal: Option<serde_json::Value>,
}

/// A decoded scenario.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The machine.
    pub topology: NodeTopology,
    /// The kubelet configuration.
    pub config: KubeletConfiguration,
    /// The starting state, if given.
    pub node_state: Option<NodeState>,
    /// Pods in document order.
    pub pods: Vec<Pod>,
}

/// Kinds that conformance files carry for their own runners; a scenario reader skips them.
const ANNOTATION_KINDS: &[&str] = &["Expected", "TopologyHint"];

impl Scenario {
    /// Reads a scenario from text; `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Self, KubeletError> {
        Self::parse_texts(&[(file, text)])
    }

    /// Reads one scenario from several texts, `(file, text)`, their documents in order (a
    /// directory of files, say); errors name the file and line.
    pub fn parse_texts(texts: &[(&str, &str)]) -> Result<Self, KubeletError> {
        let mut docs = Vec::new();
        for (file, text) in texts {
            docs.extend(
                allot_api::load::parse_str(file, text)
                    .map_err(|e| KubeletError::Scenario(e.to_string()))?,
            );
        }
        let file = texts
            .iter()
            .map(|(file, _)| *file)
            .collect::<Vec<_>>()
            .join(", ");
        let mut topology = None;
        let mut config = None;
        let mut node_state = None;
        let mut pods = Vec::new();
        for raw in &docs {
            let at = format!("{}:{}", raw.file, raw.line);
            let bad = |e: String| KubeletError::Scenario(format!("{at}: {e}"));
            match raw.kind.as_str() {
                "NodeTopology" => {
                    let t: NodeTopology =
                        allot_api::load::decode(raw).map_err(|e| bad(e.to_string()))?;
                    t.validate().map_err(|e| bad(e.to_string()))?;
                    if topology.replace(t).is_some() {
                        return Err(bad("a second NodeTopology".into()));
                    }
                }
                "KubeletConfiguration" => {
                    let c: KubeletConfiguration =
                        allot_api::load::decode(raw).map_err(|e| bad(e.to_string()))?;
                    if config.replace(c).is_some() {
                        return Err(bad("a second KubeletConfiguration".into()));
                    }
                }
                "NodeState" => {
                    let s: NodeState =
                        allot_api::load::decode(raw).map_err(|e| bad(e.to_string()))?;
                    if node_state.replace(s).is_some() {
                        return Err(bad("a second NodeState".into()));
                    }
                }
                "Pod" => pods.push(allot_api::load::decode(raw).map_err(|e| bad(e.to_string()))?),
                kind if ANNOTATION_KINDS.contains(&kind) => {}
                other => {
                    return Err(bad(format!(
                        "unexpected kind {other:?}: a scenario holds NodeTopology, KubeletConfiguration, NodeState and Pod documents"
                    )));
                }
            }
        }
        Ok(Scenario {
            topology: topology.ok_or_else(|| {
                KubeletError::Scenario(format!("{file}: no NodeTopology document"))
            })?,
            config: config.ok_or_else(|| {
                KubeletError::Scenario(format!("{file}: no KubeletConfiguration document"))
            })?,
            node_state,
            pods,
        })
    }
}
