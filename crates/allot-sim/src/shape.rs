//! `allot.dev/v1alpha1 NodeShape`: a kind of node that `allot simulate --add-nodes` may add.
//!
//! A shape file holds one `NodeShape` document and the templates of one node of that shape:
//! exactly one `Node`, its `ResourceSlice`s, at most one `NodeTopology` and at most one
//! `KubeletConfiguration`, nothing else. Every occurrence of `$(NODE_NAME)` in the file is
//! replaced by the name of the node made from it (`<shape name>-<n>`, n from 1), so the slices'
//! `nodeName` and pool, the Node's `metadata.name` and hostname label and the topology's name
//! follow the node:
//!
//! ```yaml
//! apiVersion: allot.dev/v1alpha1
//! kind: NodeShape
//! metadata: {name: gpu-8x}
//! spec: {cost: 3.5, maxNodes: 200}    # both optional: cost 1, at most 1000 nodes
//! ---
//! apiVersion: v1
//! kind: Node
//! metadata: {name: $(NODE_NAME), labels: {kubernetes.io/hostname: $(NODE_NAME)}}
//! ...
//! ```
//!
//! The file is checked strictly when it is read: the NodeShape's fields (unknown ones are
//! rejected), the kinds present, and the first node made from it (`<name>-1`) through the
//! simulator's own loading, defaulting and validation, so an error names the shape file and
//! line. The Node's name must be `$(NODE_NAME)` and every slice must be local to the node
//! (`nodeName: $(NODE_NAME)`).

use serde::Deserialize;

use crate::input::{load_error, load_options, raw_error};
use crate::run::session::NewNode;
use crate::{InputError, SimError};
use allot_api::load::{Loaded, Object, decode};
use allot_store::Stored;

/// The kind.
pub const KIND: &str = "NodeShape";

/// The placeholder replaced by the node's name.
pub const NODE_NAME: &str = "$(NODE_NAME)";

/// The default of `spec.maxNodes`.
pub const DEFAULT_MAX_NODES: usize = 1000;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShapeDocument {
    #[allow(dead_code)]
    api_version: String,
    #[allow(dead_code)]
    kind: String,
    metadata: ShapeMeta,
    #[serde(default)]
    spec: ShapeSpec,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShapeMeta {
    name: String,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ShapeSpec {
    cost: Option<f64>,
    max_nodes: Option<usize>,
}

/// A node shape, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeShape {
    /// `metadata.name`: added nodes are `<name>-<n>`.
    pub name: String,
    /// The cost of one node (1 by default).
    pub cost: f64,
    /// At most this many nodes of the shape are added.
    pub max_nodes: usize,
    file: String,
    text: String,
    offset: usize,
}

fn error(file: &str, message: impl Into<String>) -> SimError {
    SimError::Input(vec![InputError {
        file: file.to_string(),
        line: 0,
        kind: KIND.to_string(),
        object: String::new(),
        field: String::new(),
        message: message.into(),
    }])
}

fn is_dns_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 50
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

impl NodeShape {
    /// Reads a shape from its file's text, checking it (see the module's documentation).
    pub fn parse(file: &str, text: &str) -> Result<NodeShape, SimError> {
        let options = load_options().with_kind(crate::timeline::API_VERSION, KIND);
        let loaded = allot_api::load::load_texts(&[(file, text)], &options);
        if !loaded.errors.is_empty() {
            return Err(SimError::Input(
                loaded.errors.iter().map(load_error).collect(),
            ));
        }
        let mut shapes = Vec::new();
        for document in &loaded.documents {
            let raw = &document.raw;
            if raw.kind == KIND && raw.api_version == crate::timeline::API_VERSION {
                let decoded: ShapeDocument =
                    decode(raw).map_err(|err| SimError::Input(vec![load_error(&err)]))?;
                let spec = decoded.spec;
                if !is_dns_label(&decoded.metadata.name) {
                    return Err(SimError::Input(vec![raw_error(
                        raw,
                        "metadata.name",
                        format!(
                            "Invalid value: {:?}: a lowercase DNS label of at most 50 characters",
                            decoded.metadata.name
                        ),
                    )]));
                }
                if let Some(cost) = spec.cost
                    && !(cost.is_finite() && cost >= 0.0)
                {
                    return Err(SimError::Input(vec![raw_error(
                        raw,
                        "spec.cost",
                        format!("Invalid value: {cost}: must be a finite number >= 0"),
                    )]));
                }
                if spec.max_nodes == Some(0) {
                    return Err(SimError::Input(vec![raw_error(
                        raw,
                        "spec.maxNodes",
                        "Invalid value: 0: must be at least 1",
                    )]));
                }
                shapes.push(NodeShape {
                    name: decoded.metadata.name,
                    cost: spec.cost.unwrap_or(1.0),
                    max_nodes: spec.max_nodes.unwrap_or(DEFAULT_MAX_NODES),
                    file: file.to_string(),
                    text: text.to_string(),
                    offset: 0,
                });
            }
        }
        let shape = match <[NodeShape; 1]>::try_from(shapes) {
            Ok([shape]) => shape,
            Err(found) => {
                return Err(error(
                    file,
                    format!(
                        "expected exactly one allot.dev/v1alpha1 NodeShape document, found {}",
                        found.len()
                    ),
                ));
            }
        };
        shape.node(1)?;
        Ok(shape)
    }

    /// Reads a shape file.
    pub fn read(path: &std::path::Path) -> Result<NodeShape, SimError> {
        let file = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|err| error(&file, err.to_string()))?;
        NodeShape::parse(&file, &text)
    }

    /// The shape with its nodes numbered from `taken + 1` (past names already in use).
    pub fn numbered_from(mut self, taken: usize) -> NodeShape {
        self.offset = taken;
        self
    }

    /// The name of the shape's `n`th node (n from 1).
    pub fn node_name(&self, n: usize) -> String {
        format!("{}-{}", self.name, n + self.offset)
    }

    /// The shape's `n`th node (n from 1), made from the templates and validated.
    pub fn node(&self, n: usize) -> Result<NewNode, SimError> {
        let name = self.node_name(n);
        let text = self.text.replace(NODE_NAME, &name);
        let options = load_options().with_kind(crate::timeline::API_VERSION, KIND);
        let loaded = allot_api::load::load_texts(&[(&self.file, &text)], &options);
        let mut documents = Vec::new();
        let mut errors: Vec<InputError> = Vec::new();
        for document in loaded.documents {
            let raw = &document.raw;
            let allowed = match &document.object {
                Object::Node(_) | Object::ResourceSlice(_) => true,
                Object::Extension => {
                    if raw.kind == KIND {
                        continue;
                    }
                    matches!(
                        raw.kind.as_str(),
                        allot_topology::KIND | allot_kubelet_config::KIND
                    )
                }
                _ => false,
            };
            if !allowed {
                errors.push(raw_error(
                    raw,
                    "",
                    format!(
                        "a NodeShape file holds a Node, its ResourceSlices, a NodeTopology and a KubeletConfiguration; not a {}",
                        raw.kind
                    ),
                ));
            }
            documents.push(document);
        }
        if !errors.is_empty() {
            return Err(SimError::Input(errors));
        }
        let input = crate::input::from_loaded(Loaded {
            documents,
            errors: loaded.errors,
        })?;
        if input.topologies.len() > 1 || input.kubelet_configs.len() > 1 {
            return Err(error(
                &self.file,
                "at most one NodeTopology and one KubeletConfiguration",
            ));
        }
        let mut node = None;
        let mut slices = Vec::new();
        for object in &input.objects {
            match object {
                Stored::Node(found) if node.is_none() => node = Some((**found).clone()),
                Stored::Node(_) => return Err(error(&self.file, "more than one Node")),
                Stored::ResourceSlice(slice) => {
                    if slice.spec.node_name.as_deref() != Some(name.as_str()) {
                        return Err(error(
                            &self.file,
                            format!(
                                "ResourceSlice {}: spec.nodeName must be {NODE_NAME}",
                                slice.metadata.name
                            ),
                        ));
                    }
                    slices.push((**slice).clone());
                }
                other => {
                    return Err(error(
                        &self.file,
                        format!("unexpected {}", other.kind().name()),
                    ));
                }
            }
        }
        let Some(node) = node else {
            return Err(error(&self.file, "no Node template"));
        };
        if node.metadata.name != name {
            return Err(error(
                &self.file,
                format!("the Node's metadata.name must be {NODE_NAME}"),
            ));
        }
        let (mut topology, kubelet_config) = input.node_setup(&node);
        topology.metadata.name = name;
        Ok(NewNode {
            node,
            slices,
            topology,
            kubelet_config,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHAPE: &str = "apiVersion: allot.dev/v1alpha1\nkind: NodeShape\nmetadata: {name: big}\nspec: {cost: 2}\n---\napiVersion: v1\nkind: Node\nmetadata: {name: $(NODE_NAME), labels: {kubernetes.io/hostname: $(NODE_NAME)}}\nstatus:\n  capacity: {cpu: '16', memory: 64Gi, pods: '110'}\n  allocatable: {cpu: '16', memory: 64Gi, pods: '110'}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: $(NODE_NAME)-gpus}\nspec:\n  driver: gpu.example.com\n  nodeName: $(NODE_NAME)\n  pool: {name: $(NODE_NAME), generation: 1, resourceSliceCount: 1}\n  devices: [{name: gpu-0}, {name: gpu-1}]\n";

    #[test]
    fn a_shape_makes_named_nodes_with_their_slices() {
        let shape = NodeShape::parse("shape.yaml", SHAPE).expect("valid");
        assert_eq!(
            (shape.name.as_str(), shape.cost, shape.max_nodes),
            ("big", 2.0, 1000)
        );
        let node = shape.node(3).expect("node");
        assert_eq!(node.node.metadata.name, "big-3");
        assert_eq!(node.slices.len(), 1);
        assert_eq!(node.slices[0].spec.node_name.as_deref(), Some("big-3"));
        assert_eq!(node.slices[0].spec.pool.name, "big-3");
        assert_eq!(node.topology.metadata.name, "big-3");
    }

    #[test]
    fn unknown_fields_other_kinds_and_foreign_slices_are_errors() {
        let unknown = SHAPE.replace("spec: {cost: 2}", "spec: {cost: 2, colour: red}");
        let err = NodeShape::parse("shape.yaml", &unknown)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("shape.yaml:4") && err.contains("colour"),
            "{err}"
        );
        let pod = format!(
            "{SHAPE}---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec: {{containers: [{{name: c}}]}}\n"
        );
        let err = NodeShape::parse("shape.yaml", &pod)
            .unwrap_err()
            .to_string();
        assert!(err.contains("not a Pod"), "{err}");
        let foreign = SHAPE.replace("nodeName: $(NODE_NAME)", "nodeName: other");
        let err = NodeShape::parse("shape.yaml", &foreign)
            .unwrap_err()
            .to_string();
        assert!(err.contains("spec.nodeName must be"), "{err}");
        let negative = SHAPE.replace("cost: 2", "cost: -1");
        let err = NodeShape::parse("shape.yaml", &negative)
            .unwrap_err()
            .to_string();
        assert!(err.contains("spec.cost"), "{err}");
        let none = SHAPE.replace("kind: NodeShape", "kind: Timeline");
        assert!(NodeShape::parse("shape.yaml", &none).is_err());
        let bad_slice = SHAPE.replace("generation: 1", "generation: -1");
        let err = NodeShape::parse("shape.yaml", &bad_slice)
            .unwrap_err()
            .to_string();
        assert!(err.contains("shape.yaml:"), "{err}");
    }
}
