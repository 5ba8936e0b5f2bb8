//! Scenario files: Kubernetes objects plus an optional `allot.dev/v1alpha1 AllocationOptions`
//! document (and, in test data, a `kind: Expected` document), parsed from text.

use std::collections::BTreeMap;

use allot_api::core::v1::{Namespace, Node};
use allot_api::resource::v1::{DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice};
use serde::Deserialize;

use crate::search::claim_name;
use crate::{AllocationInput, Budget, Error, Features};

/// The `allot.dev/v1alpha1` `AllocationOptions` document.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AllocationOptions {
    /// Always `allot.dev/v1alpha1`.
    #[serde(default)]
    pub api_version: String,
    /// Always `AllocationOptions`.
    #[serde(default)]
    pub kind: String,
    /// The node to allocate for; default: the only Node in the input.
    #[serde(default)]
    pub node: Option<String>,
    /// Feature gates by upstream name; unlisted gates take their Kubernetes 1.37 defaults.
    #[serde(default)]
    pub feature_gates: BTreeMap<String, bool>,
    /// The claims to allocate, in order, as `name` or `namespace/name`; default: every claim
    /// without an allocation, in file order.
    #[serde(default)]
    pub claims: Vec<String>,
    /// Search steps after which the allocation gives up (see [`Budget`]); default
    /// [`Budget::DEFAULT_STEPS`].
    #[serde(default)]
    pub max_search_steps: Option<u64>,
    /// Memory the search may spend remembering failed states, as a quantity of bytes
    /// (`64Mi`); default [`Budget::DEFAULT_MEMO_BYTES`].
    #[serde(default)]
    pub max_search_memory: Option<allot_quantity::Quantity>,
}

/// The objects of one scenario file.
#[derive(Debug, Clone, Default)]
pub struct Scenario {
    /// The options document, if any.
    pub options: AllocationOptions,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// Namespaces.
    pub namespaces: Vec<Namespace>,
    /// Device classes.
    pub classes: Vec<DeviceClass>,
    /// Resource slices.
    pub slices: Vec<ResourceSlice>,
    /// Resource claims, allocated or not, in file order.
    pub claims: Vec<ResourceClaim>,
    /// Device taint rules.
    pub taint_rules: Vec<DeviceTaintRule>,
    /// The `kind: Expected` document of test data, kept as JSON.
    pub expected: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct KindOnly {
    #[serde(default)]
    kind: String,
}

fn decode<T: serde::de::DeserializeOwned>(
    index: usize,
    kind: &str,
    (first_line, text): &(usize, String),
) -> Result<T, Error> {
    // Aliases as Kubernetes' YAML decoder limits them (checked before the parse, see
    // `Scenario::parse`), not by the parser's own ratio of aliases to anchors; repeated keys
    // and booleans as the parser reads them by default.
    let mut options = allot_api::load::yaml_reader_options(text.len());
    options.strict_booleans = false;
    options.duplicate_keys = serde_saphyr::DuplicateKeyPolicy::Error;
    serde_saphyr::from_str_with_options(text, options).map_err(|err| {
        // The line in the file, and the parser's message without its internals.
        let line = err
            .location()
            .map(|l| l.line() as usize)
            .filter(|line| *line > 0)
            .map_or(*first_line, |line| first_line + line - 1);
        Error::ScenarioDocument {
            index,
            kind: kind.to_string(),
            message: format!("line {line}: {}", allot_api::load::yaml_error_message(&err)),
        }
    })
}

/// Splits a YAML stream at document markers, so that each document decodes into its own type
/// (decoding through an untyped value would turn `Y` into a boolean); each document with the
/// line of the file where it starts.
fn split_documents(text: &str) -> Vec<(usize, String)> {
    let mut documents = vec![(1, String::new())];
    for (number, line) in text.lines().enumerate() {
        if line == "---" || line.starts_with("--- ") || line.starts_with("---\t") {
            documents.push((number + 2, String::new()));
            continue;
        }
        if let Some((_, current)) = documents.last_mut() {
            current.push_str(line);
            current.push('\n');
        }
    }
    documents
        .into_iter()
        .filter(|(_, doc)| {
            doc.lines()
                .any(|line| !line.trim().is_empty() && !line.trim_start().starts_with('#'))
        })
        .collect()
}

impl Scenario {
    /// Parses a multi-document YAML (or JSON) scenario.
    pub fn parse(text: &str) -> Result<Self, Error> {
        let mut scenario = Scenario::default();
        if let Err((line, message)) = allot_api::load::check_yaml_aliases(text) {
            return Err(Error::ScenarioDocument {
                index: 0,
                kind: String::new(),
                message: format!("line {line}: {message}"),
            });
        }
        for (index, document) in split_documents(text).iter().enumerate() {
            let kind = decode::<KindOnly>(index, "", document)?.kind;
            match kind.as_str() {
                "AllocationOptions" => scenario.options = decode(index, &kind, document)?,
                "Expected" => scenario.expected = Some(decode(index, &kind, document)?),
                "Node" => scenario.nodes.push(decode(index, &kind, document)?),
                "Namespace" => scenario.namespaces.push(decode(index, &kind, document)?),
                "DeviceClass" => scenario.classes.push(decode(index, &kind, document)?),
                "ResourceSlice" => scenario.slices.push(decode(index, &kind, document)?),
                "ResourceClaim" => scenario.claims.push(decode(index, &kind, document)?),
                "DeviceTaintRule" => scenario.taint_rules.push(decode(index, &kind, document)?),
                _ => {
                    return Err(Error::ScenarioDocument {
                        index,
                        kind,
                        message: "unsupported kind in an allocation scenario, which holds \
                                  AllocationOptions, DeviceClass, DeviceTaintRule, Namespace, \
                                  Node, ResourceClaim and ResourceSlice documents"
                            .to_string(),
                    });
                }
            }
        }
        Ok(scenario)
    }

    /// Gives every ResourceSlice, DeviceClass and ResourceClaim without a `metadata.uid` or
    /// `metadata.resourceVersion` one, as a store assigns them when it admits objects: the
    /// allocator recognises slices, classes and claim specs it already prepared by these two
    /// (see [`crate::CelCache`]), so callers that keep a cache across calls over the same
    /// objects (benchmarks, simulations) should call this first.
    pub fn assign_identities(&mut self) {
        let slices = self.slices.iter_mut().map(|s| ("slice", &mut s.metadata));
        let classes = self.classes.iter_mut().map(|c| ("class", &mut c.metadata));
        let claims = self.claims.iter_mut().map(|c| ("claim", &mut c.metadata));
        for (index, (kind, meta)) in slices.chain(classes).chain(claims).enumerate() {
            if meta.uid.is_empty() {
                meta.uid = format!("scenario-{kind}-{index}");
            }
            if meta.resource_version.is_empty() {
                meta.resource_version = "1".to_string();
            }
        }
    }

    /// The feature gates: Kubernetes 1.37 defaults, then the options document.
    pub fn features(&self) -> Result<Features, Error> {
        let mut features = Features::default();
        for (gate, enabled) in &self.options.feature_gates {
            features.set(gate, *enabled)?;
        }
        Ok(features)
    }

    /// The search's budget: the defaults, then the options document's limits.
    pub fn budget(&self) -> Result<Budget, Error> {
        let mut budget = Budget::default();
        if let Some(steps) = self.options.max_search_steps {
            budget.max_steps = steps;
        }
        if let Some(memory) = &self.options.max_search_memory {
            let (mantissa, scale) = memory.to_parts();
            let bytes = if scale >= 0 {
                10i128
                    .checked_pow(scale.unsigned_abs())
                    .and_then(|power| mantissa.checked_mul(power))
            } else {
                10i128
                    .checked_pow(scale.unsigned_abs())
                    .filter(|power| mantissa % power == 0)
                    .map(|power| mantissa / power)
            };
            budget.max_memo_bytes = bytes
                .and_then(|bytes| u64::try_from(bytes).ok())
                .ok_or_else(|| Error::BadOption {
                    field: "maxSearchMemory",
                    message: format!("{memory} is not a whole, non-negative number of bytes"),
                })?;
        }
        Ok(budget)
    }

    /// The node to allocate for: `name`, else the options' node, else the only node.
    pub fn node(&self, name: Option<&str>) -> Result<&Node, Error> {
        match name.or(self.options.node.as_deref()) {
            Some(name) => self
                .nodes
                .iter()
                .find(|node| node.metadata.name == name)
                .ok_or_else(|| Error::UnknownNode {
                    node: name.to_string(),
                }),
            None => match self.nodes.as_slice() {
                [only] => Ok(only),
                nodes => Err(Error::NodeNotChosen { nodes: nodes.len() }),
            },
        }
    }

    /// The claims to allocate, in order.
    pub fn claims_to_allocate(&self) -> Result<Vec<ResourceClaim>, Error> {
        if self.options.claims.is_empty() {
            return Ok(self
                .claims
                .iter()
                .filter(|claim| claim.status.allocation.is_none())
                .cloned()
                .collect());
        }
        // The same name may be listed twice for two claims of that name (in different
        // namespaces, or in test data); each entry takes the next claim not taken yet.
        let mut taken = vec![false; self.claims.len()];
        let mut out = Vec::with_capacity(self.options.claims.len());
        for wanted in &self.options.claims {
            let found = self.claims.iter().enumerate().position(|(i, claim)| {
                !taken[i]
                    && match wanted.split_once('/') {
                        Some((namespace, name)) => {
                            claim.metadata.namespace == namespace && claim.metadata.name == name
                        }
                        None => claim.metadata.name == *wanted,
                    }
            });
            let Some(index) = found else {
                return Err(Error::UnknownClaim {
                    claim: wanted.clone(),
                });
            };
            taken[index] = true;
            out.push(self.claims[index].clone());
        }
        Ok(out)
    }

    /// Claims that already hold an allocation and are not being allocated again, with the
    /// scenario's slices: what [`Scenario::input`] borrows besides the scenario.
    pub fn allocated_claims(&self, to_allocate: &[ResourceClaim]) -> InputRefs<'_> {
        InputRefs {
            allocated: self
                .claims
                .iter()
                .filter(|claim| claim.status.allocation.is_some())
                .filter(|claim| {
                    !to_allocate
                        .iter()
                        .any(|other| claim_name(other) == claim_name(claim))
                })
                .collect(),
            slices: self.slices.iter().collect(),
        }
    }

    /// The allocation input for `node`, `claims` and `refs` (from
    /// [`Scenario::allocated_claims`]).
    pub fn input<'a>(
        &'a self,
        node: &'a Node,
        claims: &'a [ResourceClaim],
        refs: &'a InputRefs<'a>,
    ) -> AllocationInput<'a> {
        AllocationInput {
            node,
            classes: &self.classes,
            slices: &refs.slices,
            allocated_claims: &refs.allocated,
            claims,
            taint_rules: &self.taint_rules,
            namespaces: &self.namespaces,
        }
    }
}

/// The references an [`AllocationInput`] of a [`Scenario`] holds: the claims already allocated
/// and every slice.
#[derive(Debug, Clone)]
pub struct InputRefs<'a> {
    /// Claims that already hold an allocation.
    pub allocated: Vec<&'a ResourceClaim>,
    /// The scenario's slices, in input order.
    pub slices: Vec<&'a ResourceSlice>,
}

/// `namespace/name`, or `name` for a claim without a namespace.
pub fn display_claim(claim: &ResourceClaim) -> String {
    claim_name(claim)
}
