//! The document `allot node merge-hints` reads: a Topology Manager configuration and the hint
//! providers' answers, decoded with bounds so that no input can make the merge allocate more
//! than the input's size warrants.
//!
//! ```json
//! {
//!   "policy": "single-numa-node",
//!   "options": {"prefer-closest-numa-nodes": "true"},
//!   "numaNodes": [0, 1],
//!   "distances": {"0": [10, 20], "1": [20, 10]},
//!   "providersHints": [
//!     {"nvidia.com/gpu": [{"affinity": [0], "preferred": true}]},
//!     {"cpu": [{"affinity": [1], "preferred": true}, {"affinity": [0, 1], "preferred": false}]}
//!   ]
//! }
//! ```
//!
//! `policy` and `options` are the kubelet's `topologyManagerPolicy` and
//! `topologyManagerPolicyOptions`; `numaNodes` the machine's NUMA node ids; `distances` (only
//! read with `prefer-closest-numa-nodes`) each node's row of distances, indexed by node id;
//! `providersHints` one entry per hint provider (the kubelet's Device, CPU and Memory Managers
//! ...): a map from resource name to its hints, where `null` for the whole provider or for a
//! resource means "no preference" and `[]` means "no possible NUMA affinity". A hint's
//! `affinity` is a list of NUMA node ids (`null`: any node).
//!
//! Key design decision: NUMA node ids are read as plain integers and checked (each below
//! [`MAX_NUMA_NODE_ID`], each hint's ids among `numaNodes`) before any [`NumaMask`] is built,
//! because a mask is a bitset as wide as its largest id: `[40000000000]` would ask for 5 GB.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Deserialize;

use crate::{Error, NumaInfo, NumaMask, Policy, PolicyOptions, ProviderHints, TopologyHint, merge};

/// NUMA node ids must be below this: Linux's largest `MAX_NUMNODES` (`CONFIG_NODES_SHIFT` is at
/// most 10), so no machine the kubelet runs on has a larger one.
pub const MAX_NUMA_NODE_ID: u64 = 1024;

/// The document as written.
#[derive(Deserialize, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Document {
    policy: String,
    #[serde(default)]
    options: BTreeMap<String, String>,
    numa_nodes: Vec<u64>,
    #[serde(default)]
    distances: Option<BTreeMap<u64, Vec<u64>>>,
    #[serde(default)]
    providers_hints: Vec<Option<BTreeMap<String, Option<Vec<Hint>>>>>,
}

/// A hint as written: NUMA ids not yet checked.
#[derive(Deserialize, Debug)]
#[serde(deny_unknown_fields)]
struct Hint {
    #[serde(default)]
    affinity: Option<Vec<u64>>,
    preferred: bool,
}

/// Why a document was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DocumentError {
    /// Not a JSON document of this shape (the message has the line and column).
    Decode(String),
    /// A field with a value out of bounds: its path (`providersHints[0].cpu[1].affinity[0]`)
    /// and what is wrong.
    Field {
        /// The field path.
        field: String,
        /// What is wrong, as the API server words it (`Invalid value: ...`).
        message: String,
    },
    /// A configuration the kubelet refuses (unknown policy or option, too many NUMA nodes ...).
    Config(Error),
}

impl fmt::Display for DocumentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DocumentError::Decode(message) => f.write_str(message),
            DocumentError::Field { field, message } => write!(f, "{field}: {message}"),
            DocumentError::Config(err) => write!(f, "configuring the Topology Manager: {err}"),
        }
    }
}

impl std::error::Error for DocumentError {}

/// The decision for a document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The policy in force.
    pub policy: Policy,
    /// The merged hint.
    pub best_hint: TopologyHint,
    /// Whether the policy admits.
    pub admit: bool,
    /// The providers' hints as the merge read them (`null` providers as empty maps).
    pub providers: Vec<ProviderHints>,
    /// The machine's NUMA nodes.
    pub numa_nodes: Vec<usize>,
}

fn out_of_range(field: String, id: u64, what: &str) -> DocumentError {
    DocumentError::Field {
        field,
        message: format!("Invalid value: {id}: {what}"),
    }
}

/// Checks `numaNodes` and `distances`, returning the ids as `usize`.
fn numa_nodes(document: &Document) -> Result<Vec<usize>, DocumentError> {
    if document.numa_nodes.is_empty() {
        // Every machine the kubelet runs on has a NUMA node; with none, every hint's mask is
        // empty and so is the best one.
        return Err(DocumentError::Field {
            field: "numaNodes".to_string(),
            message: "Required value: a machine has at least one NUMA node".to_string(),
        });
    }
    let mut ids = Vec::with_capacity(document.numa_nodes.len());
    for (index, &id) in document.numa_nodes.iter().enumerate() {
        if id >= MAX_NUMA_NODE_ID {
            return Err(out_of_range(
                format!("numaNodes[{index}]"),
                id,
                &format!("must be a NUMA node id below {MAX_NUMA_NODE_ID}"),
            ));
        }
        ids.push(id as usize);
    }
    if let Some(distances) = &document.distances {
        let known: BTreeSet<u64> = document.numa_nodes.iter().copied().collect();
        for node in distances.keys() {
            if !known.contains(node) {
                return Err(out_of_range(
                    format!("distances[{node}]"),
                    *node,
                    "not one of numaNodes",
                ));
            }
        }
    }
    Ok(ids)
}

/// The providers' hints, each affinity checked against `numaNodes`.
fn providers(
    document: &Document,
    known: &BTreeSet<usize>,
) -> Result<Vec<ProviderHints>, DocumentError> {
    let mut out = Vec::with_capacity(document.providers_hints.len());
    for (index, provider) in document.providers_hints.iter().enumerate() {
        let mut hints = ProviderHints::new();
        for (resource, list) in provider.iter().flatten() {
            let Some(list) = list else {
                hints.insert(resource.clone(), None);
                continue;
            };
            let mut checked = Vec::with_capacity(list.len());
            for (h, hint) in list.iter().enumerate() {
                let affinity = match &hint.affinity {
                    None => None,
                    Some(ids) => {
                        if ids.is_empty() {
                            return Err(DocumentError::Field {
                                field: format!("providersHints[{index}][{resource}][{h}].affinity"),
                                message: "Invalid value: []: must name at least one NUMA node (null means any node)".to_string(),
                            });
                        }
                        for (i, &id) in ids.iter().enumerate() {
                            let fits = usize::try_from(id).is_ok_and(|id| known.contains(&id));
                            if !fits {
                                return Err(out_of_range(
                                    format!(
                                        "providersHints[{index}][{resource}][{h}].affinity[{i}]"
                                    ),
                                    id,
                                    "not one of numaNodes",
                                ));
                            }
                        }
                        Some(NumaMask::from_ids(ids.iter().map(|&id| id as usize)))
                    }
                };
                checked.push(TopologyHint {
                    affinity,
                    preferred: hint.preferred,
                });
            }
            hints.insert(resource.clone(), Some(checked));
        }
        out.push(hints);
    }
    Ok(out)
}

/// Decodes a document and merges its hints as the kubelet's Topology Manager would.
pub fn decide(text: &str) -> Result<Decision, DocumentError> {
    let document: Document =
        serde_json::from_str(text).map_err(|err| DocumentError::Decode(err.to_string()))?;
    let numa_nodes = numa_nodes(&document)?;
    let policy: Policy = document.policy.parse().map_err(DocumentError::Config)?;
    // The options are checked for every policy (the kubelet skips them only when it does not
    // start a Topology Manager at all): an admin asking about a configuration wants to know.
    let options = PolicyOptions::parse(&document.options).map_err(DocumentError::Config)?;
    let distances: Option<BTreeMap<usize, Vec<u64>>> = document.distances.as_ref().map(|d| {
        d.iter()
            .map(|(node, row)| (*node as usize, row.clone()))
            .collect()
    });
    let numa =
        NumaInfo::new(&numa_nodes, distances.as_ref(), &options).map_err(DocumentError::Config)?;
    if policy != Policy::None && numa.nodes().len() > options.max_allowable_numa_nodes {
        return Err(DocumentError::Config(Error::TooManyNumaNodes {
            count: numa.nodes().len(),
            max: options.max_allowable_numa_nodes,
        }));
    }
    let known: BTreeSet<usize> = numa_nodes.iter().copied().collect();
    let providers = providers(&document, &known)?;
    let (best_hint, admit) = merge(policy, &options, &numa, &providers);
    Ok(Decision {
        policy,
        best_hint,
        admit,
        providers,
        numa_nodes,
    })
}

/// The fuzz target's body (`fuzz/fuzz_targets/merge_hints.rs`), also run by this crate's tests
/// over the committed corpus.
#[doc(hidden)]
pub mod fuzzing {
    use super::*;

    /// Decodes and merges `bytes` as `allot node merge-hints` does, and checks the decision:
    /// the same answer twice; "none" admits with any affinity; a rejection only under
    /// restricted or single-numa-node, and only with a hint that is not preferred; the best
    /// hint's nodes are the machine's; single-numa-node admits one node or any.
    pub fn merge_hints(bytes: &[u8]) {
        let Ok(text) = std::str::from_utf8(bytes) else {
            return;
        };
        let Ok(decision) = decide(text) else {
            return;
        };
        assert_eq!(
            decide(text).as_ref(),
            Ok(&decision),
            "the merge is deterministic"
        );
        let hint = &decision.best_hint;
        match decision.policy {
            Policy::None => assert!(decision.admit && hint.affinity.is_none()),
            Policy::BestEffort => assert!(decision.admit),
            Policy::Restricted | Policy::SingleNumaNode => {
                assert_eq!(decision.admit, hint.preferred, "{hint}")
            }
        }
        if let Some(mask) = &hint.affinity {
            assert!(!mask.is_empty(), "{hint}");
            for id in mask.ids() {
                assert!(decision.numa_nodes.contains(&id), "{hint}");
            }
            if decision.policy == Policy::SingleNumaNode && decision.admit {
                assert_eq!(mask.count(), 1, "{hint}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_error(text: &str) -> String {
        match decide(text) {
            Err(DocumentError::Field { field, .. }) => field,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn huge_numa_ids_are_refused_before_any_mask_is_built() {
        // Each of these once allocated gigabytes for the mask.
        let hint = |id: &str| {
            format!(
                r#"{{"policy": "best-effort", "numaNodes": [0, 1],
                    "providersHints": [{{"cpu": [{{"affinity": [{id}], "preferred": true}}]}}]}}"#
            )
        };
        for id in ["40000000000", "18446744073709551615", "2"] {
            assert_eq!(
                field_error(&hint(id)),
                "providersHints[0][cpu][0].affinity[0]",
                "{id}"
            );
        }
        let nodes = r#"{"policy": "none", "numaNodes": [0, 18446744073709551615]}"#;
        assert_eq!(field_error(nodes), "numaNodes[1]");
        let nodes = r#"{"policy": "none", "numaNodes": [0, 1024]}"#;
        assert_eq!(field_error(nodes), "numaNodes[1]");
        let distances =
            r#"{"policy": "none", "numaNodes": [0], "distances": {"40000000000": [10]}}"#;
        assert_eq!(field_error(distances), "distances[40000000000]");
        // Found by the fuzzer: no NUMA node gave a best hint with an empty mask.
        let none = r#"{"numaNodes": [], "policy": "restricted", "providersHints": [{"r": []}]}"#;
        assert_eq!(field_error(none), "numaNodes");
    }

    #[test]
    fn a_valid_document_merges() {
        let text = r#"{"policy": "single-numa-node", "numaNodes": [0, 1],
            "providersHints": [
                {"gpu": [{"affinity": [1], "preferred": true}]},
                {"cpu": [{"affinity": [0], "preferred": true}, {"affinity": [1], "preferred": true}]}
            ]}"#;
        let decision = decide(text).unwrap();
        assert!(decision.admit);
        assert_eq!(
            decision.best_hint.to_string(),
            "{NUMA [1], preferred: true}"
        );
        fuzzing::merge_hints(text.as_bytes());
    }

    #[test]
    fn the_fuzz_corpus_replays() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fuzz/corpus/merge_hints");
        let mut count = 0;
        for entry in std::fs::read_dir(dir).expect("fuzz/corpus/merge_hints") {
            let path = entry.expect("corpus entry").path();
            let bytes = std::fs::read(&path).expect("corpus file");
            fuzzing::merge_hints(&bytes);
            count += 1;
        }
        assert!(count > 0, "{dir} is empty");
    }
}
