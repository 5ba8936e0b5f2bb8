//! Loading manifests: multi-document YAML and JSON files (and directories) into documents that
//! know their file, start line and the line of every field, then strict decoding into types.
//!
//! Loading happens in two steps. [`parse_str`] turns text into [`RawDocument`]s: untyped JSON
//! values plus a [`SourceMap`] from field path to line. [`decode`] then turns a raw document into
//! any `DeserializeOwned` type, reporting an unknown field or a type mismatch with the field path
//! and its line. [`decode_object`] does this for the kinds this crate knows; other crates decode
//! their own kinds (NodeTopology, KubeletConfiguration, ...) with [`decode`], after registering
//! them in [`LoadOptions::extra_kinds`] so that loading does not reject them as unknown.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{DeserializeOwned, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_saphyr::Spanned;

use crate::allot::v1alpha1::{AllocationOptions, NodeTopology};
use crate::apps::v1::{ControllerRevision, DaemonSet, Deployment, ReplicaSet, StatefulSet};
use crate::batch::v1::{CronJob, Job};
use crate::coordination::v1::Lease;
use crate::core::v1::{
    Event, Namespace, Node, PersistentVolume, PersistentVolumeClaim, Pod, ReplicationController,
    Service,
};
use crate::kubescheduler::v1::{DynamicResourcesArgs, KubeSchedulerConfiguration};
use crate::policy::v1::PodDisruptionBudget;
use crate::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use crate::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimTemplate, ResourceSlice,
};
use crate::resource::v1alpha3::ResourcePoolStatusRequest;
use crate::scheduling::v1::PriorityClass;
use crate::scheduling::v1beta1::PodGroup;
use crate::storage::v1::{CSIDriver, CSINode, CSIStorageCapacity, StorageClass, VolumeAttachment};

/// An error while reading, parsing or decoding manifests. Every variant names the file and,
/// where known, the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read.
    #[error("{file}: {message}")]
    Io {
        /// The path.
        file: String,
        /// The operating system's message.
        message: String,
    },
    /// The text is not valid YAML or JSON.
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The line (1-based; 0 when unknown).
        line: u32,
        /// The parser's message.
        message: String,
    },
    /// A document is not a mapping, or lacks `apiVersion` or `kind`.
    #[error("{file}:{line}: {message}")]
    NotAnObject {
        /// The file.
        file: String,
        /// The document's start line.
        line: u32,
        /// What is wrong.
        message: String,
    },
    /// The `apiVersion` and `kind` are not known.
    #[error("{file}:{line}: no kind \"{kind}\" is registered for version \"{api_version}\"")]
    UnknownKind {
        /// The file.
        file: String,
        /// The document's start line.
        line: u32,
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
    },
    /// A mapping has the same key twice.
    #[error("{file}:{line}: {kind}: duplicate field \"{path}\"")]
    DuplicateField {
        /// The file.
        file: String,
        /// The line of the second occurrence.
        line: u32,
        /// The document's kind.
        kind: String,
        /// The field path.
        path: String,
    },
    /// A field is not part of the schema (kubectl's strict validation).
    #[error("{file}:{line}: {kind} {object}: unknown field \"{path}\"")]
    UnknownField {
        /// The file.
        file: String,
        /// The line of the field.
        line: u32,
        /// The document's kind.
        kind: String,
        /// The object, `namespace/name` or `name`.
        object: String,
        /// The full field path, e.g. `spec.devices[0].colour`.
        path: String,
    },
    /// A field has the wrong type or an invalid value (e.g. a malformed quantity).
    #[error("{file}:{line}: {kind} {object}: {path}: {message}")]
    InvalidField {
        /// The file.
        file: String,
        /// The line of the field.
        line: u32,
        /// The document's kind.
        kind: String,
        /// The object, `namespace/name` or `name`.
        object: String,
        /// The field path.
        path: String,
        /// The decoder's message.
        message: String,
    },
}

impl LoadError {
    /// The file the error is about.
    pub fn file(&self) -> &str {
        match self {
            LoadError::Io { file, .. }
            | LoadError::Syntax { file, .. }
            | LoadError::NotAnObject { file, .. }
            | LoadError::UnknownKind { file, .. }
            | LoadError::DuplicateField { file, .. }
            | LoadError::UnknownField { file, .. }
            | LoadError::InvalidField { file, .. } => file,
        }
    }

    /// The line the error is about (0 when unknown).
    pub fn line(&self) -> u32 {
        match self {
            LoadError::Io { .. } => 0,
            LoadError::Syntax { line, .. }
            | LoadError::NotAnObject { line, .. }
            | LoadError::UnknownKind { line, .. }
            | LoadError::DuplicateField { line, .. }
            | LoadError::UnknownField { line, .. }
            | LoadError::InvalidField { line, .. } => *line,
        }
    }
}

/// Field path to source line, for one document.
///
/// Paths are written like upstream's field paths: `spec.devices[0].name`; map keys are written
/// as `.key` here and looked up either way (`attributes[dra.example.com/model]` finds
/// `attributes.dra.example.com/model`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    lines: BTreeMap<String, u32>,
}

impl SourceMap {
    /// Records the line of a path.
    pub fn insert(&mut self, path: String, line: u32) {
        self.lines.entry(path).or_insert(line);
    }

    /// The line of `path`, or of its nearest ancestor that has one (e.g. the parent of a
    /// missing required field).
    pub fn line_of(&self, path: &str) -> Option<u32> {
        let mut segments = split_path(path);
        loop {
            if let Some(line) = self.lines.get(&join_path(&segments)) {
                return Some(*line);
            }
            segments.pop()?;
        }
    }

    /// The number of recorded paths.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }
}

/// One path segment: a field or map key, or a list index.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Segment {
    Key(String),
    Index(usize),
}

/// Splits `a.b[0].c[key.with.dots]` into segments. Bracketed non-numeric text is a map key.
fn split_path(path: &str) -> Vec<Segment> {
    let mut segments = Vec::new();
    let mut current = String::new();
    let mut chars = path.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '.' => {
                if !current.is_empty() {
                    segments.push(Segment::Key(std::mem::take(&mut current)));
                }
            }
            '[' => {
                if !current.is_empty() {
                    segments.push(Segment::Key(std::mem::take(&mut current)));
                }
                let mut inner = String::new();
                for c in chars.by_ref() {
                    if c == ']' {
                        break;
                    }
                    inner.push(c);
                }
                match inner.parse::<usize>() {
                    Ok(index) => segments.push(Segment::Index(index)),
                    Err(_) => segments.push(Segment::Key(inner)),
                }
            }
            _ => current.push(c),
        }
    }
    if !current.is_empty() {
        segments.push(Segment::Key(current));
    }
    segments
}

/// The canonical form used as [`SourceMap`] key: keys joined by `.`, indices as `[i]`.
fn join_path(segments: &[Segment]) -> String {
    let mut out = String::new();
    for segment in segments {
        match segment {
            Segment::Key(key) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(key);
            }
            Segment::Index(index) => {
                out.push('[');
                out.push_str(&index.to_string());
                out.push(']');
            }
        }
    }
    out
}

/// One document as read: untyped, with its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct RawDocument {
    /// The file it came from (as given, or inside a given directory).
    pub file: String,
    /// The line where the document starts (1-based).
    pub line: u32,
    /// The document's `apiVersion`.
    pub api_version: String,
    /// The document's `kind`.
    pub kind: String,
    /// The document as JSON.
    pub value: serde_json::Value,
    /// Field path to line.
    pub source_map: SourceMap,
}

impl RawDocument {
    /// `metadata.name`, or empty.
    pub fn name(&self) -> &str {
        self.value
            .pointer("/metadata/name")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    }

    /// `metadata.namespace`, or empty.
    pub fn namespace(&self) -> &str {
        self.value
            .pointer("/metadata/namespace")
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
    }

    /// `namespace/name`, or `name` when there is no namespace.
    pub fn object_name(&self) -> String {
        match (self.namespace(), self.name()) {
            ("", name) => name.to_string(),
            (namespace, name) => format!("{namespace}/{name}"),
        }
    }

    /// The line of a field path, falling back to the nearest ancestor and then the document.
    pub fn line_of(&self, path: &str) -> u32 {
        self.source_map.line_of(path).unwrap_or(self.line)
    }
}

/// A YAML node with the locations of its children.
enum YNode {
    Null,
    Bool(bool),
    I64(i64),
    U64(u64),
    F64(f64),
    Str(String),
    Seq(Vec<Spanned<YNode>>),
    Map(Vec<(Spanned<String>, Spanned<YNode>)>),
}

impl<'de> Deserialize<'de> for YNode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(YNodeVisitor)
    }
}

struct YNodeVisitor;

impl<'de> Visitor<'de> for YNodeVisitor {
    type Value = YNode;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<YNode, E> {
        Ok(YNode::Null)
    }
    fn visit_none<E>(self) -> Result<YNode, E> {
        Ok(YNode::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<YNode, D::Error> {
        YNode::deserialize(d)
    }
    fn visit_bool<E>(self, v: bool) -> Result<YNode, E> {
        Ok(YNode::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<YNode, E> {
        Ok(YNode::I64(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<YNode, E> {
        Ok(YNode::U64(v))
    }
    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<YNode, E> {
        i64::try_from(v)
            .map(YNode::I64)
            .map_err(|_| E::custom(format!("integer {v} is out of range")))
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<YNode, E> {
        u64::try_from(v)
            .map(YNode::U64)
            .map_err(|_| E::custom(format!("integer {v} is out of range")))
    }
    fn visit_f64<E>(self, v: f64) -> Result<YNode, E> {
        Ok(YNode::F64(v))
    }
    fn visit_str<E>(self, v: &str) -> Result<YNode, E> {
        Ok(YNode::Str(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<YNode, E> {
        Ok(YNode::Str(v))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<YNode, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element::<Spanned<YNode>>()? {
            items.push(item);
        }
        Ok(YNode::Seq(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<YNode, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key::<Spanned<String>>()? {
            let value = map.next_value::<Spanned<YNode>>()?;
            entries.push((key, value));
        }
        Ok(YNode::Map(entries))
    }
}

fn line_of_location(location: &serde_saphyr::Location) -> u32 {
    u32::try_from(location.line()).unwrap_or(u32::MAX)
}

/// Where a piece of a file starts: the number of lines before it, added to every line the
/// parser reports for the piece.
#[derive(Debug, Clone, Copy, Default)]
struct LineOffset(u32);

impl LineOffset {
    fn of(self, location: &serde_saphyr::Location) -> u32 {
        line_of_location(location).saturating_add(self.0)
    }
}

/// Converts a YAML tree to JSON, recording each path's line; reports the first duplicate key.
/// `path` is the canonical path of `node` (see [`join_path`]), extended and truncated in place.
fn to_json(
    node: YNode,
    offset: LineOffset,
    path: &mut String,
    map: &mut SourceMap,
    duplicate: &mut Option<(String, u32)>,
) -> serde_json::Value {
    match node {
        YNode::Null => serde_json::Value::Null,
        YNode::Bool(v) => serde_json::Value::Bool(v),
        YNode::I64(v) => serde_json::Value::from(v),
        YNode::U64(v) => serde_json::Value::from(v),
        YNode::F64(v) => serde_json::Number::from_f64(v)
            .map(serde_json::Value::Number)
            .unwrap_or(serde_json::Value::Null),
        YNode::Str(v) => serde_json::Value::String(v),
        YNode::Seq(items) => {
            let mut out = Vec::with_capacity(items.len());
            let base = path.len();
            for (index, item) in items.into_iter().enumerate() {
                path.push('[');
                path.push_str(&index.to_string());
                path.push(']');
                map.insert(path.clone(), offset.of(&item.referenced));
                out.push(to_json(item.value, offset, path, map, duplicate));
                path.truncate(base);
            }
            serde_json::Value::Array(out)
        }
        YNode::Map(entries) => {
            let mut out = serde_json::Map::with_capacity(entries.len());
            let base = path.len();
            for (key, value) in entries {
                if base > 0 {
                    path.push('.');
                }
                path.push_str(&key.value);
                let line = offset.of(&key.referenced);
                if out.contains_key(&key.value) {
                    if duplicate.is_none() {
                        *duplicate = Some((path.clone(), line));
                    }
                } else {
                    map.insert(path.clone(), line);
                }
                let converted = to_json(value.value, offset, path, map, duplicate);
                path.truncate(base);
                out.insert(key.value, converted);
            }
            serde_json::Value::Object(out)
        }
    }
}

/// Parses one file's text (YAML, possibly multi-document, or JSON) into raw documents.
/// A `kind: List` (or `*List`) document is expanded into its items.
pub fn parse_str(file: &str, text: &str) -> Result<Vec<RawDocument>, LoadError> {
    let nodes = parse_yaml(file, text, LineOffset::default())?;
    convert(file, nodes, LineOffset::default())
}

/// The YAML parser's step: the documents of `text` as trees with positions, or the first
/// syntax error.
fn parse_yaml(
    file: &str,
    text: &str,
    offset: LineOffset,
) -> Result<Vec<Spanned<YNode>>, LoadError> {
    // The parser's default budget stops a stream at 1,024 documents and 250,000 nodes, which
    // a cluster's worth of Pods in one file passes. Those counts are bounded by the text's
    // size anyway (every document and node takes at least a byte), so they grow with it;
    // the limits that guard against amplification (aliases, anchors, depth) stay as they are.
    let size = text.len();
    let budget = serde_saphyr::budget! {
        max_documents: size.max(1_024),
        max_nodes: size.saturating_mul(2).max(250_000),
        max_events: size.saturating_mul(8).max(1_000_000),
        max_total_scalar_bytes: size.max(64 * 1024 * 1024),
    };
    // YAML 1.2 booleans (only true/false), as Kubernetes' YAML reader treats `y`/`on` as text
    // in the places this domain uses them.
    let options = serde_saphyr::options! { strict_booleans: true, budget: budget };
    serde_saphyr::from_multiple_with_options(text, options).map_err(|err| LoadError::Syntax {
        file: file.to_string(),
        line: err.location().map(|l| offset.of(&l)).unwrap_or_default(),
        message: strip_position(
            &err.without_snippet()
                .to_string()
                .replace(", set DuplicateKeyPolicy in Options if acceptable", ""),
        ),
    })
}

/// The second step: parsed trees into raw documents (JSON values with source maps), stopping
/// at the first document that is not an object or repeats a key.
fn convert(
    file: &str,
    nodes: Vec<Spanned<YNode>>,
    offset: LineOffset,
) -> Result<Vec<RawDocument>, LoadError> {
    let mut documents = Vec::new();
    for node in nodes {
        let line = offset.of(&node.referenced);
        if matches!(node.value, YNode::Null) {
            continue;
        }
        let mut source_map = SourceMap::default();
        let mut duplicate = None;
        let value = to_json(
            node.value,
            offset,
            &mut String::new(),
            &mut source_map,
            &mut duplicate,
        );
        let document = new_document(file, line, value, source_map)?;
        if let Some((path, line)) = duplicate {
            return Err(LoadError::DuplicateField {
                file: file.to_string(),
                line,
                kind: document.kind.clone(),
                path,
            });
        }
        if document.kind.ends_with("List") && document.value.get("items").is_some() {
            documents.extend(expand_list(document)?);
        } else {
            documents.push(document);
        }
    }
    Ok(documents)
}

fn new_document(
    file: &str,
    line: u32,
    value: serde_json::Value,
    source_map: SourceMap,
) -> Result<RawDocument, LoadError> {
    let not_an_object = |message: &str| LoadError::NotAnObject {
        file: file.to_string(),
        line,
        message: message.to_string(),
    };
    let object = value
        .as_object()
        .ok_or_else(|| not_an_object("a document must be a mapping with apiVersion and kind"))?;
    let field = |name: &str| object.get(name).and_then(serde_json::Value::as_str);
    let kind = field("kind")
        .filter(|k| !k.is_empty())
        .ok_or_else(|| not_an_object("Object 'Kind' is missing"))?
        .to_string();
    let api_version = field("apiVersion")
        .filter(|v| !v.is_empty())
        .ok_or_else(|| not_an_object("Object 'apiVersion' is missing"))?
        .to_string();
    Ok(RawDocument {
        file: file.to_string(),
        line,
        api_version,
        kind,
        value,
        source_map,
    })
}

/// Splits a `List` document into its items, each with its own source map.
fn expand_list(list: RawDocument) -> Result<Vec<RawDocument>, LoadError> {
    let items = match list.value.get("items") {
        Some(serde_json::Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let mut out = Vec::new();
    for (index, item) in items.into_iter().enumerate() {
        let prefix = format!("items[{index}]");
        let mut source_map = SourceMap::default();
        for (path, line) in &list.source_map.lines {
            if let Some(rest) = path.strip_prefix(&prefix) {
                let rest = rest.strip_prefix('.').unwrap_or(rest);
                source_map.insert(rest.to_string(), *line);
            }
        }
        let line = list.source_map.line_of(&prefix).unwrap_or(list.line);
        out.push(new_document(&list.file, line, item, source_map)?);
    }
    Ok(out)
}

fn expand_paths<P: AsRef<Path>>(paths: &[P], errors: &mut Vec<LoadError>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for path in paths {
        let path = path.as_ref();
        if path.is_dir() {
            match std::fs::read_dir(path) {
                Ok(entries) => {
                    let mut found: Vec<PathBuf> = entries
                        .filter_map(Result::ok)
                        .map(|entry| entry.path())
                        .filter(|p| {
                            p.is_file()
                                && matches!(
                                    p.extension().and_then(|e| e.to_str()),
                                    Some("yaml" | "yml" | "json")
                                )
                        })
                        .collect();
                    found.sort();
                    files.extend(found);
                }
                Err(err) => errors.push(LoadError::Io {
                    file: path.display().to_string(),
                    message: err.to_string(),
                }),
            }
        } else {
            files.push(path.to_path_buf());
        }
    }
    files
}

/// Decodes a raw document into `T`, strictly: unknown fields and type mismatches are errors
/// naming the field path and its line.
pub fn decode<T: DeserializeOwned>(raw: &RawDocument) -> Result<T, LoadError> {
    let result: Result<T, serde_path_to_error::Error<serde_json::Error>> =
        serde_path_to_error::deserialize(&raw.value);
    result.map_err(|err| decode_error(raw, &err))
}

fn decode_error(
    raw: &RawDocument,
    err: &serde_path_to_error::Error<serde_json::Error>,
) -> LoadError {
    let path = err.path().to_string();
    let path = if path == "." { String::new() } else { path };
    let message = err.inner().to_string();
    if let Some(field) = unknown_field_name(&message) {
        let full = if path.is_empty() {
            field.to_string()
        } else if path == field || path.ends_with(&format!(".{field}")) {
            path.clone()
        } else {
            format!("{path}.{field}")
        };
        return LoadError::UnknownField {
            file: raw.file.clone(),
            line: raw.line_of(&full),
            kind: raw.kind.clone(),
            object: raw.object_name(),
            path: full,
        };
    }
    LoadError::InvalidField {
        file: raw.file.clone(),
        line: raw.line_of(&path),
        kind: raw.kind.clone(),
        object: raw.object_name(),
        path,
        message: strip_position(&message),
    }
}

/// Extracts `foo` from serde's "unknown field `foo`, expected ...".
fn unknown_field_name(message: &str) -> Option<&str> {
    let rest = message.strip_prefix("unknown field `")?;
    rest.split('`').next()
}

/// Parsers append "at line L column C"; the line is reported separately, so drop it.
fn strip_position(message: &str) -> String {
    match message.find(" at line ") {
        Some(index) => message[..index].to_string(),
        None => message.to_string(),
    }
}

/// A typed object of a kind this crate knows.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Object {
    /// `resource.k8s.io/v1 DeviceClass`.
    DeviceClass(DeviceClass),
    /// `resource.k8s.io/v1 ResourceClaim`.
    ResourceClaim(ResourceClaim),
    /// `resource.k8s.io/v1 ResourceClaimTemplate`.
    ResourceClaimTemplate(ResourceClaimTemplate),
    /// `resource.k8s.io/v1 ResourceSlice`.
    ResourceSlice(ResourceSlice),
    /// `resource.k8s.io/{v1,v1beta2,v1alpha3} DeviceTaintRule`.
    DeviceTaintRule(DeviceTaintRule),
    /// `resource.k8s.io/v1alpha3 ResourcePoolStatusRequest`.
    ResourcePoolStatusRequest(ResourcePoolStatusRequest),
    /// `v1 Node`.
    Node(Node),
    /// `v1 Pod`.
    Pod(Pod),
    /// `v1 Namespace`.
    Namespace(Namespace),
    /// `scheduling.k8s.io/v1beta1 PodGroup`.
    PodGroup(PodGroup),
    /// `allot.dev/v1alpha1 AllocationOptions`.
    AllocationOptions(AllocationOptions),
    /// `kubescheduler.config.k8s.io/v1 KubeSchedulerConfiguration`.
    KubeSchedulerConfiguration(KubeSchedulerConfiguration),
    /// `v1 Event`.
    Event(Event),
    /// `allot.dev/v1alpha1 NodeTopology` as the API server stores it (unless a loader
    /// registers the kind in [`LoadOptions::extra_kinds`] to decode it itself).
    NodeTopology(NodeTopology),
    /// `rbac.authorization.k8s.io/v1 Role`.
    Role(Role),
    /// `rbac.authorization.k8s.io/v1 ClusterRole`.
    ClusterRole(ClusterRole),
    /// `rbac.authorization.k8s.io/v1 RoleBinding`.
    RoleBinding(RoleBinding),
    /// `rbac.authorization.k8s.io/v1 ClusterRoleBinding`.
    ClusterRoleBinding(ClusterRoleBinding),
    /// `coordination.k8s.io/v1 Lease`.
    Lease(Lease),
    /// `scheduling.k8s.io/v1 PriorityClass`.
    PriorityClass(PriorityClass),
    /// `storage.k8s.io/v1 StorageClass`.
    StorageClass(StorageClass),
    /// `storage.k8s.io/v1 CSIDriver`.
    CSIDriver(CSIDriver),
    /// `storage.k8s.io/v1 CSINode`.
    CSINode(CSINode),
    /// `v1 PersistentVolume`.
    PersistentVolume(PersistentVolume),
    /// `storage.k8s.io/v1 VolumeAttachment`.
    VolumeAttachment(VolumeAttachment),
    /// `storage.k8s.io/v1 CSIStorageCapacity`.
    CSIStorageCapacity(CSIStorageCapacity),
    /// `v1 PersistentVolumeClaim`.
    PersistentVolumeClaim(PersistentVolumeClaim),
    /// `v1 Service`.
    Service(Service),
    /// `policy/v1 PodDisruptionBudget`.
    PodDisruptionBudget(PodDisruptionBudget),
    /// `apps/v1 Deployment`.
    Deployment(Deployment),
    /// `apps/v1 ReplicaSet`.
    ReplicaSet(ReplicaSet),
    /// `apps/v1 StatefulSet`.
    StatefulSet(StatefulSet),
    /// `apps/v1 DaemonSet`.
    DaemonSet(DaemonSet),
    /// `apps/v1 ControllerRevision`.
    ControllerRevision(ControllerRevision),
    /// `batch/v1 Job`.
    Job(Job),
    /// `batch/v1 CronJob`.
    CronJob(CronJob),
    /// `v1 ReplicationController`.
    ReplicationController(ReplicationController),
    /// `v1 ServiceAccount`.
    ServiceAccount(crate::core::v1::ServiceAccount),
    /// `v1 Secret`.
    Secret(crate::core::v1::Secret),
    /// `v1 ConfigMap`.
    ConfigMap(crate::core::v1::ConfigMap),
    /// `v1 Endpoints`.
    Endpoints(crate::core::v1::Endpoints),
    /// `v1 ResourceQuota`.
    ResourceQuota(crate::core::v1::ResourceQuota),
    /// `v1 LimitRange`.
    LimitRange(crate::core::v1::LimitRange),
    /// `v1 PodTemplate`.
    PodTemplate(crate::core::v1::PodTemplate),
    /// `discovery.k8s.io/v1 EndpointSlice`.
    EndpointSlice(crate::discovery::v1::EndpointSlice),
    /// `autoscaling/v2 HorizontalPodAutoscaler`.
    HorizontalPodAutoscaler(crate::autoscaling::v2::HorizontalPodAutoscaler),
    /// `certificates.k8s.io/v1 CertificateSigningRequest`.
    CertificateSigningRequest(crate::certificates::v1::CertificateSigningRequest),
    /// `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy`.
    ValidatingAdmissionPolicy(crate::admissionregistration::v1::ValidatingAdmissionPolicy),
    /// `admissionregistration.k8s.io/v1 ValidatingAdmissionPolicyBinding`.
    ValidatingAdmissionPolicyBinding(
        crate::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    ),
    /// `networking.k8s.io/v1 ServiceCIDR`.
    ServiceCIDR(crate::networking::v1::ServiceCIDR),
    /// `networking.k8s.io/v1 IPAddress`.
    IPAddress(crate::networking::v1::IPAddress),
    /// `storage.k8s.io/v1 VolumeAttributesClass`.
    VolumeAttributesClass(crate::storage::v1::VolumeAttributesClass),
    /// A kind registered in [`LoadOptions::extra_kinds`]; decode it with [`decode`].
    Extension,
}

impl Object {
    /// The kind name.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::DeviceClass(_) => "DeviceClass",
            Object::ResourceClaim(_) => "ResourceClaim",
            Object::ResourceClaimTemplate(_) => "ResourceClaimTemplate",
            Object::ResourceSlice(_) => "ResourceSlice",
            Object::DeviceTaintRule(_) => "DeviceTaintRule",
            Object::ResourcePoolStatusRequest(_) => "ResourcePoolStatusRequest",
            Object::Node(_) => "Node",
            Object::Pod(_) => "Pod",
            Object::Namespace(_) => "Namespace",
            Object::PodGroup(_) => "PodGroup",
            Object::AllocationOptions(_) => "AllocationOptions",
            Object::KubeSchedulerConfiguration(_) => "KubeSchedulerConfiguration",
            Object::Event(_) => "Event",
            Object::NodeTopology(_) => "NodeTopology",
            Object::Role(_) => "Role",
            Object::ClusterRole(_) => "ClusterRole",
            Object::RoleBinding(_) => "RoleBinding",
            Object::ClusterRoleBinding(_) => "ClusterRoleBinding",
            Object::Lease(_) => "Lease",
            Object::PriorityClass(_) => "PriorityClass",
            Object::StorageClass(_) => "StorageClass",
            Object::CSIDriver(_) => "CSIDriver",
            Object::CSINode(_) => "CSINode",
            Object::PersistentVolume(_) => "PersistentVolume",
            Object::VolumeAttachment(_) => "VolumeAttachment",
            Object::CSIStorageCapacity(_) => "CSIStorageCapacity",
            Object::PersistentVolumeClaim(_) => "PersistentVolumeClaim",
            Object::Service(_) => "Service",
            Object::PodDisruptionBudget(_) => "PodDisruptionBudget",
            Object::Deployment(_) => "Deployment",
            Object::ReplicaSet(_) => "ReplicaSet",
            Object::StatefulSet(_) => "StatefulSet",
            Object::DaemonSet(_) => "DaemonSet",
            Object::ControllerRevision(_) => "ControllerRevision",
            Object::Job(_) => "Job",
            Object::CronJob(_) => "CronJob",
            Object::ReplicationController(_) => "ReplicationController",
            Object::ServiceAccount(_) => "ServiceAccount",
            Object::Secret(_) => "Secret",
            Object::ConfigMap(_) => "ConfigMap",
            Object::Endpoints(_) => "Endpoints",
            Object::ResourceQuota(_) => "ResourceQuota",
            Object::LimitRange(_) => "LimitRange",
            Object::PodTemplate(_) => "PodTemplate",
            Object::EndpointSlice(_) => "EndpointSlice",
            Object::HorizontalPodAutoscaler(_) => "HorizontalPodAutoscaler",
            Object::CertificateSigningRequest(_) => "CertificateSigningRequest",
            Object::ValidatingAdmissionPolicy(_) => "ValidatingAdmissionPolicy",
            Object::ValidatingAdmissionPolicyBinding(_) => "ValidatingAdmissionPolicyBinding",
            Object::ServiceCIDR(_) => "ServiceCIDR",
            Object::IPAddress(_) => "IPAddress",
            Object::VolumeAttributesClass(_) => "VolumeAttributesClass",
            Object::Extension => "Extension",
        }
    }
}

/// The `(apiVersion, kind)` pairs this crate decodes.
pub const KNOWN_KINDS: &[(&str, &str)] = &[
    ("resource.k8s.io/v1", "DeviceClass"),
    ("resource.k8s.io/v1", "ResourceClaim"),
    ("resource.k8s.io/v1", "ResourceClaimTemplate"),
    ("resource.k8s.io/v1", "ResourceSlice"),
    ("resource.k8s.io/v1", "DeviceTaintRule"),
    ("resource.k8s.io/v1beta2", "DeviceTaintRule"),
    ("resource.k8s.io/v1alpha3", "DeviceTaintRule"),
    ("resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest"),
    ("v1", "Node"),
    ("v1", "Pod"),
    ("v1", "Namespace"),
    ("scheduling.k8s.io/v1beta1", "PodGroup"),
    ("v1", "Event"),
    ("allot.dev/v1alpha1", "AllocationOptions"),
    ("allot.dev/v1alpha1", "NodeTopology"),
    ("rbac.authorization.k8s.io/v1", "Role"),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
    ("coordination.k8s.io/v1", "Lease"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("storage.k8s.io/v1", "StorageClass"),
    ("storage.k8s.io/v1", "CSIDriver"),
    ("storage.k8s.io/v1", "CSINode"),
    ("v1", "PersistentVolume"),
    ("storage.k8s.io/v1", "VolumeAttachment"),
    ("storage.k8s.io/v1", "CSIStorageCapacity"),
    ("v1", "PersistentVolumeClaim"),
    ("v1", "Service"),
    ("policy/v1", "PodDisruptionBudget"),
    ("apps/v1", "Deployment"),
    ("apps/v1", "ReplicaSet"),
    ("apps/v1", "StatefulSet"),
    ("apps/v1", "DaemonSet"),
    ("apps/v1", "ControllerRevision"),
    ("batch/v1", "Job"),
    ("batch/v1", "CronJob"),
    ("v1", "ReplicationController"),
    ("v1", "ServiceAccount"),
    ("v1", "Secret"),
    ("v1", "ConfigMap"),
    ("v1", "Endpoints"),
    ("v1", "ResourceQuota"),
    ("v1", "LimitRange"),
    ("v1", "PodTemplate"),
    ("discovery.k8s.io/v1", "EndpointSlice"),
    ("autoscaling/v2", "HorizontalPodAutoscaler"),
    ("certificates.k8s.io/v1", "CertificateSigningRequest"),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
    ),
    (
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
    ),
    ("networking.k8s.io/v1", "ServiceCIDR"),
    ("networking.k8s.io/v1", "IPAddress"),
    ("storage.k8s.io/v1", "VolumeAttributesClass"),
    (
        "kubescheduler.config.k8s.io/v1",
        "KubeSchedulerConfiguration",
    ),
];

/// Options for [`load`] and [`decode_object`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `(apiVersion, kind)` pairs other crates decode themselves; they load as
    /// [`Object::Extension`] instead of being rejected.
    pub extra_kinds: Vec<(String, String)>,
}

impl LoadOptions {
    /// Accepts one more `(apiVersion, kind)`.
    pub fn with_kind(mut self, api_version: &str, kind: &str) -> Self {
        self.extra_kinds
            .push((api_version.to_string(), kind.to_string()));
        self
    }
}

/// Decodes a raw document of a known (or registered) kind.
pub fn decode_object(raw: &RawDocument, options: &LoadOptions) -> Result<Object, LoadError> {
    let registered = options
        .extra_kinds
        .iter()
        .any(|(v, k)| *v == raw.api_version && *k == raw.kind);
    let object = match (raw.api_version.as_str(), raw.kind.as_str()) {
        // A registered kind is the caller's to decode, even where this crate has a type.
        _ if registered => Object::Extension,
        ("resource.k8s.io/v1", "DeviceClass") => Object::DeviceClass(decode(raw)?),
        ("resource.k8s.io/v1", "ResourceClaim") => Object::ResourceClaim(decode(raw)?),
        ("resource.k8s.io/v1", "ResourceClaimTemplate") => {
            Object::ResourceClaimTemplate(decode(raw)?)
        }
        ("resource.k8s.io/v1", "ResourceSlice") => Object::ResourceSlice(decode(raw)?),
        (
            "resource.k8s.io/v1" | "resource.k8s.io/v1beta2" | "resource.k8s.io/v1alpha3",
            "DeviceTaintRule",
        ) => Object::DeviceTaintRule(decode(raw)?),
        ("resource.k8s.io/v1alpha3", "ResourcePoolStatusRequest") => {
            Object::ResourcePoolStatusRequest(decode(raw)?)
        }
        ("v1", "Node") => Object::Node(decode(raw)?),
        ("v1", "Pod") => Object::Pod(decode(raw)?),
        ("v1", "Namespace") => Object::Namespace(decode(raw)?),
        ("scheduling.k8s.io/v1beta1", "PodGroup") => Object::PodGroup(decode(raw)?),
        ("v1", "Event") => Object::Event(decode(raw)?),
        ("allot.dev/v1alpha1", "AllocationOptions") => Object::AllocationOptions(decode(raw)?),
        ("allot.dev/v1alpha1", "NodeTopology") => Object::NodeTopology(decode(raw)?),
        ("rbac.authorization.k8s.io/v1", "Role") => Object::Role(decode(raw)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => Object::ClusterRole(decode(raw)?),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => Object::RoleBinding(decode(raw)?),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => {
            Object::ClusterRoleBinding(decode(raw)?)
        }
        ("coordination.k8s.io/v1", "Lease") => Object::Lease(decode(raw)?),
        ("scheduling.k8s.io/v1", "PriorityClass") => Object::PriorityClass(decode(raw)?),
        ("storage.k8s.io/v1", "StorageClass") => Object::StorageClass(decode(raw)?),
        ("storage.k8s.io/v1", "CSIDriver") => Object::CSIDriver(decode(raw)?),
        ("storage.k8s.io/v1", "CSINode") => Object::CSINode(decode(raw)?),
        ("v1", "PersistentVolume") => Object::PersistentVolume(decode(raw)?),
        ("storage.k8s.io/v1", "VolumeAttachment") => Object::VolumeAttachment(decode(raw)?),
        ("storage.k8s.io/v1", "CSIStorageCapacity") => Object::CSIStorageCapacity(decode(raw)?),
        ("v1", "PersistentVolumeClaim") => Object::PersistentVolumeClaim(decode(raw)?),
        ("v1", "Service") => Object::Service(decode(raw)?),
        ("policy/v1", "PodDisruptionBudget") => Object::PodDisruptionBudget(decode(raw)?),
        ("apps/v1", "Deployment") => Object::Deployment(decode(raw)?),
        ("apps/v1", "ReplicaSet") => Object::ReplicaSet(decode(raw)?),
        ("apps/v1", "StatefulSet") => Object::StatefulSet(decode(raw)?),
        ("apps/v1", "DaemonSet") => Object::DaemonSet(decode(raw)?),
        ("apps/v1", "ControllerRevision") => Object::ControllerRevision(decode(raw)?),
        ("batch/v1", "Job") => Object::Job(decode(raw)?),
        ("batch/v1", "CronJob") => Object::CronJob(decode(raw)?),
        ("v1", "ReplicationController") => Object::ReplicationController(decode(raw)?),
        ("v1", "ServiceAccount") => Object::ServiceAccount(decode(raw)?),
        ("v1", "Secret") => Object::Secret(decode(raw)?),
        ("v1", "ConfigMap") => Object::ConfigMap(decode(raw)?),
        ("v1", "Endpoints") => Object::Endpoints(decode(raw)?),
        ("v1", "ResourceQuota") => Object::ResourceQuota(decode(raw)?),
        ("v1", "LimitRange") => Object::LimitRange(decode(raw)?),
        ("v1", "PodTemplate") => Object::PodTemplate(decode(raw)?),
        ("discovery.k8s.io/v1", "EndpointSlice") => Object::EndpointSlice(decode(raw)?),
        ("autoscaling/v2", "HorizontalPodAutoscaler") => {
            Object::HorizontalPodAutoscaler(decode(raw)?)
        }
        ("certificates.k8s.io/v1", "CertificateSigningRequest") => {
            Object::CertificateSigningRequest(decode(raw)?)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy") => {
            Object::ValidatingAdmissionPolicy(decode(raw)?)
        }
        ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding") => {
            Object::ValidatingAdmissionPolicyBinding(decode(raw)?)
        }
        ("networking.k8s.io/v1", "ServiceCIDR") => Object::ServiceCIDR(decode(raw)?),
        ("networking.k8s.io/v1", "IPAddress") => Object::IPAddress(decode(raw)?),
        ("storage.k8s.io/v1", "VolumeAttributesClass") => {
            Object::VolumeAttributesClass(decode(raw)?)
        }
        ("kubescheduler.config.k8s.io/v1", "KubeSchedulerConfiguration") => {
            let config: KubeSchedulerConfiguration = decode(raw)?;
            decode_dynamic_resources_args(raw, &config)?;
            Object::KubeSchedulerConfiguration(config)
        }
        (api_version, kind) => {
            return Err(LoadError::UnknownKind {
                file: raw.file.clone(),
                line: raw.line,
                api_version: api_version.to_string(),
                kind: kind.to_string(),
            });
        }
    };
    Ok(object)
}

/// Strictly decodes the `DynamicResources` plugin arguments of every profile, so that a typo in
/// them is reported with its path like any other field.
fn decode_dynamic_resources_args(
    raw: &RawDocument,
    config: &KubeSchedulerConfiguration,
) -> Result<(), LoadError> {
    for (p, profile) in config.profiles.iter().enumerate() {
        for (c, plugin) in profile.plugin_config.iter().enumerate() {
            if plugin.name != "DynamicResources" {
                continue;
            }
            let Some(args) = &plugin.args else { continue };
            let prefix = format!("profiles[{p}].pluginConfig[{c}].args");
            let result: Result<DynamicResourcesArgs, _> = serde_path_to_error::deserialize(args);
            if let Err(err) = result {
                let mut nested = raw.clone();
                nested.value = args.clone();
                let error = decode_error(&nested, &err);
                return Err(match error {
                    LoadError::UnknownField { path, .. } => {
                        let full = format!("{prefix}.{path}");
                        LoadError::UnknownField {
                            file: raw.file.clone(),
                            line: raw.line_of(&full),
                            kind: raw.kind.clone(),
                            object: raw.object_name(),
                            path: full,
                        }
                    }
                    other => other,
                });
            }
        }
    }
    Ok(())
}

/// A decoded document with its origin.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The raw document (file, line, source map, JSON).
    pub raw: RawDocument,
    /// The typed object.
    pub object: Object,
}

/// The result of [`load`]: every document that decoded, and every error.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Loaded {
    /// Documents in input order.
    pub documents: Vec<Document>,
    /// Errors in input order.
    pub errors: Vec<LoadError>,
}

/// Reads, parses and decodes files and directories (their `.yaml`, `.yml` and `.json` files,
/// sorted by name, not recursing); collects all errors, so one bad file does not hide the
/// others: unreadable paths and files, then each file's syntax error, in file order, then the
/// documents' decode errors in document order.
pub fn load<P: AsRef<Path>>(paths: &[P], options: &LoadOptions) -> Loaded {
    let mut errors = Vec::new();
    let mut texts = Vec::new();
    // Per file, in order: its text's index, or the error reading it.
    let mut files = Vec::new();
    for file in expand_paths(paths, &mut errors) {
        let name = file.display().to_string();
        match std::fs::read_to_string(&file) {
            Ok(text) => {
                files.push(Ok(texts.len()));
                texts.push((name, text));
            }
            Err(err) => files.push(Err(LoadError::Io {
                file: name,
                message: err.to_string(),
            })),
        }
    }
    let borrowed: Vec<(&str, &str)> = texts
        .iter()
        .map(|(f, t)| (f.as_str(), t.as_str()))
        .collect();
    let mut results: Vec<Option<TextLoaded>> =
        load_each(&borrowed, options, threads_for(&borrowed))
            .into_iter()
            .map(Some)
            .collect();
    let mut documents = Vec::new();
    let mut decode_errors = Vec::new();
    for file in files {
        match file.map(|index| results[index].take()) {
            Err(err) => errors.push(err),
            Ok(None) => {}
            Ok(Some(TextLoaded::Unparsable(err))) => errors.push(err),
            Ok(Some(TextLoaded::Parsed(entries))) => {
                for entry in entries {
                    match entry {
                        Ok(document) => documents.push(document),
                        Err(err) => decode_errors.push(err),
                    }
                }
            }
        }
    }
    errors.extend(decode_errors);
    Loaded { documents, errors }
}

/// Parses and decodes one text; collects all decode errors.
pub fn load_str(file: &str, text: &str, options: &LoadOptions) -> Loaded {
    load_texts(&[(file, text)], options)
}

/// Parses and decodes several texts, `(file name, text)`; the documents in order, and per
/// text either its syntax error or its documents' decode errors. Large inputs are parsed on
/// every core: a text is cut at document markers into pieces parsed side by side, with the
/// same documents, lines and errors as one pass over it.
pub fn load_texts(texts: &[(&str, &str)], options: &LoadOptions) -> Loaded {
    load_texts_on(texts, options, threads_for(texts))
}

fn load_texts_on(texts: &[(&str, &str)], options: &LoadOptions, threads: usize) -> Loaded {
    let mut loaded = Loaded::default();
    for result in load_each(texts, options, threads) {
        match result {
            TextLoaded::Unparsable(err) => loaded.errors.push(err),
            TextLoaded::Parsed(entries) => {
                for entry in entries {
                    match entry {
                        Ok(document) => loaded.documents.push(document),
                        Err(err) => loaded.errors.push(err),
                    }
                }
            }
        }
    }
    loaded
}

/// What one text gave.
enum TextLoaded {
    /// A syntax error, or a document that is not an object or repeats a key: nothing of the
    /// text is used.
    Unparsable(LoadError),
    /// Each document, decoded or the reason it could not be.
    Parsed(Vec<Result<Document, LoadError>>),
}

/// A document-aligned piece of one text.
struct Piece<'a> {
    text: usize,
    body: &'a str,
    offset: LineOffset,
}

/// What one piece gave.
enum PieceLoaded {
    Syntax,
    Invalid(LoadError),
    Parsed(Vec<Result<Document, LoadError>>),
}

/// Below this many bytes in all, texts are loaded on the calling thread.
const PARALLEL_BYTES: usize = 256 * 1024;

/// How many threads loading `texts` is worth: every core for large inputs.
fn threads_for(texts: &[(&str, &str)]) -> usize {
    let total: usize = texts.iter().map(|(_, text)| text.len()).sum();
    if total < PARALLEL_BYTES {
        1
    } else {
        std::thread::available_parallelism().map_or(1, usize::from)
    }
}

/// Loads each text, its pieces spread over `threads` threads.
fn load_each(texts: &[(&str, &str)], options: &LoadOptions, threads: usize) -> Vec<TextLoaded> {
    let total: usize = texts.iter().map(|(_, text)| text.len()).sum();
    // Several pieces per thread, so that one slow piece does not hold the others up.
    let piece_bytes = (total / (threads * 8)).max(64 * 1024);
    let pieces: Vec<Piece> = texts
        .iter()
        .enumerate()
        .flat_map(|(index, (_, text))| {
            let cuts = if threads > 1 {
                document_cuts(text, piece_bytes)
            } else {
                vec![(0, 0)]
            };
            let ends: Vec<usize> = cuts.iter().skip(1).map(|&(at, _)| at).collect();
            cuts.into_iter()
                .zip(ends.into_iter().chain([text.len()]))
                .map(move |((start, lines), end)| Piece {
                    text: index,
                    body: &text[start..end],
                    offset: LineOffset(lines),
                })
        })
        .collect();
    let loaded = map_on_threads(&pieces, threads, |piece| {
        let file = texts[piece.text].0;
        match parse_yaml(file, piece.body, piece.offset) {
            Err(_) => PieceLoaded::Syntax,
            Ok(nodes) => match convert(file, nodes, piece.offset) {
                Err(err) => PieceLoaded::Invalid(err),
                Ok(raws) => PieceLoaded::Parsed(
                    raws.into_iter()
                        .map(|raw| {
                            decode_object(&raw, options).map(|object| Document { raw, object })
                        })
                        .collect(),
                ),
            },
        }
    });
    let mut out: Vec<Option<TextLoaded>> = (0..texts.len()).map(|_| None).collect();
    for (piece, result) in pieces.iter().zip(loaded) {
        let slot = &mut out[piece.text];
        match (slot.as_mut(), result) {
            (Some(TextLoaded::Unparsable(LoadError::Syntax { .. })), _) => {}
            (_, PieceLoaded::Syntax) => {
                // The error exactly as one pass over the whole text reports it (a piece ends
                // where the text did not, which can move the error's line).
                let (file, text) = texts[piece.text];
                if let Err(err) = parse_yaml(file, text, LineOffset::default()) {
                    *slot = Some(TextLoaded::Unparsable(err));
                }
            }
            (Some(TextLoaded::Unparsable(_)), _) => {}
            (_, PieceLoaded::Invalid(err)) => *slot = Some(TextLoaded::Unparsable(err)),
            (Some(TextLoaded::Parsed(entries)), PieceLoaded::Parsed(more)) => entries.extend(more),
            (None, PieceLoaded::Parsed(entries)) => *slot = Some(TextLoaded::Parsed(entries)),
        }
    }
    out.into_iter()
        .map(|slot| slot.unwrap_or(TextLoaded::Parsed(Vec::new())))
        .collect()
}

/// Where `text` may be cut into pieces of about `piece_bytes` that parse on their own: the
/// start of a line `---` (a document marker, which YAML forbids inside any content), with the
/// number of lines before it. The first cut is the start of the text. A text with directives
/// (`%YAML`, `%TAG`, which apply to the document after them) is not cut.
fn document_cuts(text: &str, piece_bytes: usize) -> Vec<(usize, u32)> {
    let mut cuts = vec![(0, 0)];
    if text.len() <= piece_bytes || text.starts_with('%') || text.contains("\n%") {
        return cuts;
    }
    let bytes = text.as_bytes();
    let (mut at, mut lines) = (0usize, 0u32);
    let mut search = piece_bytes;
    while search < text.len() {
        let Some(found) = text[search..].find("\n---") else {
            break;
        };
        let start = search + found + 1;
        let marker_ends = matches!(
            bytes.get(start + 3),
            None | Some(b' ' | b'\t' | b'\r' | b'\n')
        );
        if marker_ends {
            lines += count_lines(&bytes[at..start]);
            at = start;
            cuts.push((at, lines));
            search = start + piece_bytes;
        } else {
            search = start + 3;
        }
    }
    cuts
}

fn count_lines(bytes: &[u8]) -> u32 {
    u32::try_from(bytes.iter().filter(|&&b| b == b'\n').count()).unwrap_or(u32::MAX)
}

/// `work` over `items` on up to `threads` threads; results in the items' order.
fn map_on_threads<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    work: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let threads = threads.min(items.len());
    if threads <= 1 {
        return items.iter().map(work).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let mut results: Vec<Option<R>> = (0..items.len()).map(|_| None).collect();
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut done = Vec::new();
                    loop {
                        let index = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(item) = items.get(index) else {
                            break;
                        };
                        done.push((index, work(item)));
                    }
                    done
                })
            })
            .collect();
        for worker in workers {
            let done = worker
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            for (index, result) in done {
                results[index] = Some(result);
            }
        }
    });
    results.into_iter().flatten().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many small documents, some that fail to decode, with a list and comments between.
    fn many_documents(count: usize) -> String {
        let mut text = String::from("# generated\n");
        for i in 0..count {
            if i > 0 {
                text.push_str("---\n");
            }
            if i % 97 == 5 {
                text.push_str(&format!(
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{i}\n  colour: red\n"
                ));
            } else if i % 211 == 7 {
                text.push_str(&format!(
                    "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: a-{i}\n- apiVersion: v1\n  kind: Namespace\n  metadata: {{name: b-{i}}}\n"
                ));
            } else {
                text.push_str(&format!(
                    "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns-{i}\n  labels:\n    index: \"{i}\"\n"
                ));
            }
        }
        text
    }

    #[test]
    fn pieces_parsed_side_by_side_give_what_one_pass_gives() {
        let big = many_documents(2000);
        let small = many_documents(10);
        let texts = [("a.yaml", big.as_str()), ("b.yaml", small.as_str())];
        assert!(document_cuts(&big, 64 * 1024).len() > 2, "the text is cut");
        let options = LoadOptions::default();
        let one = load_texts_on(&texts, &options, 1);
        let four = load_texts_on(&texts, &options, 4);
        assert!(
            one.documents.len() > 1950 && !one.errors.is_empty(),
            "{} documents, {:?}",
            one.documents.len(),
            one.errors.first()
        );
        assert_eq!(one, four);
        // Lines count from the start of the file, not of the piece.
        let last = four
            .documents
            .iter()
            .rfind(|d| d.raw.file == "a.yaml")
            .unwrap();
        assert_eq!(last.raw.line as usize, big.lines().count() - 5);
        assert_eq!(
            last.raw.line_of("metadata.labels.index") as usize,
            big.lines().count()
        );
    }

    #[test]
    fn a_syntax_error_in_a_late_piece_is_the_one_pass_error() {
        for broken in ["  labels: [unclosed\n", "metadata:\n\tname: tab\n"] {
            let mut big = many_documents(1200);
            assert!(document_cuts(&big, 64 * 1024).len() > 1, "the text is cut");
            let at = big.len() - 100;
            let at = at + big[at..].find("\n").unwrap() + 1;
            big.insert_str(at, broken);
            let texts = [("a.yaml", big.as_str())];
            let one = load_texts_on(&texts, &LoadOptions::default(), 1);
            let four = load_texts_on(&texts, &LoadOptions::default(), 4);
            assert!(one.documents.is_empty(), "{broken:?}");
            assert!(
                matches!(one.errors[..], [LoadError::Syntax { .. }]),
                "{broken:?}"
            );
            assert_eq!(one, four, "{broken:?}");
        }
    }

    #[test]
    fn a_repeated_key_anywhere_rejects_the_whole_text() {
        let mut big = many_documents(1200);
        let at = big.rfind("kind: Namespace\n").unwrap();
        big.insert_str(at, "kind: Namespace\n");
        let texts = [("a.yaml", big.as_str())];
        let four = load_texts_on(&texts, &LoadOptions::default(), 4);
        assert!(four.documents.is_empty());
        assert_eq!(four.errors.len(), 1, "{:?}", four.errors);
        assert!(
            four.errors[0].to_string().contains("duplicate"),
            "{:?}",
            four.errors
        );
        assert_eq!(four, load_texts_on(&texts, &LoadOptions::default(), 1));
    }

    #[test]
    fn files_load_in_order_with_read_and_syntax_errors_before_decode_errors() {
        let dir = tempfile::tempdir().unwrap();
        let big = many_documents(1500);
        std::fs::write(dir.path().join("a.yaml"), &big).unwrap();
        std::fs::write(dir.path().join("b.yaml"), "a: [1\n").unwrap();
        std::fs::write(dir.path().join("c.yaml"), many_documents(10)).unwrap();
        let missing = dir.path().join("missing.yaml");
        let loaded = load(
            &[dir.path().to_path_buf(), missing],
            &LoadOptions::default(),
        );
        // More than the parser's default budget of 1,024 documents in one file.
        let from_a = loaded
            .documents
            .iter()
            .filter(|d| d.raw.file.ends_with("a.yaml"));
        assert!(from_a.count() > 1_024);
        let kinds: Vec<(&str, u32)> = loaded
            .errors
            .iter()
            .map(|e| match e {
                LoadError::Syntax { file, line, .. } if file.ends_with("b.yaml") => {
                    ("syntax", *line)
                }
                LoadError::Io { .. } => ("io", 0),
                LoadError::UnknownField { .. } => ("field", e.line()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(kinds[..2], [("syntax", 1), ("io", 0)], "{kinds:?}");
        assert!(kinds[2..].iter().all(|(k, _)| *k == "field") && kinds.len() > 10);
        // Decode errors in document order: file a's, then file c's.
        let files: Vec<&str> = loaded.errors[2..].iter().map(LoadError::file).collect();
        assert!(files.is_sorted(), "{files:?}");
    }

    #[test]
    fn cuts_are_document_markers_only() {
        let text = "a: 1\n---x: 1\n".repeat(10_000) + "---\nb: 2\n--- \nc: 3\n";
        let cuts = document_cuts(&text, 1024);
        assert_eq!(cuts.len(), 2, "only a real marker is a cut: {cuts:?}");
        assert!(text[cuts[1].0..].starts_with("---\nb: 2"));
        assert_eq!(cuts[1].1, 20_000);
        // Directives apply to the next document: such a text stays whole.
        let directive = format!("%YAML 1.2\n---\n{}", many_documents(2000));
        assert_eq!(document_cuts(&directive, 1024).len(), 1);
    }

    const SLICE: &str = "\
# a comment
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: slice
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool:
    name: pool
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    attributes:
      gpu.example.com/model:
        string: A100
---
apiVersion: v1
kind: Namespace
metadata:
  name: ns
";

    #[test]
    fn documents_know_their_start_line_and_field_lines() {
        let docs = parse_str("f.yaml", SLICE).unwrap();
        assert_eq!(docs.len(), 2);
        assert_eq!(docs[0].line, 2);
        assert_eq!(docs[0].line_of("spec.devices[0].name"), 14);
        assert_eq!(
            docs[0].line_of("spec.devices[0].attributes[gpu.example.com/model].string"),
            17
        );
        assert_eq!(docs[0].line_of("spec.devices[0].capacity"), 14);
        assert_eq!(docs[1].line, 19);
        assert_eq!(docs[1].name(), "ns");
    }

    #[test]
    fn unknown_field_names_path_and_line() {
        let text = SLICE.replace("    attributes:", "    colour: red\n    attributes:");
        let loaded = load_str("f.yaml", &text, &LoadOptions::default());
        assert_eq!(
            loaded.errors,
            vec![LoadError::UnknownField {
                file: "f.yaml".into(),
                line: 15,
                kind: "ResourceSlice".into(),
                object: "slice".into(),
                path: "spec.devices[0].colour".into(),
            }]
        );
        assert_eq!(loaded.documents.len(), 1);
    }

    #[test]
    fn invalid_quantity_names_path() {
        let text = SLICE.replace(
            "    attributes:",
            "    capacity:\n      memory:\n        value: 12X\n    attributes:",
        );
        let loaded = load_str("f.yaml", &text, &LoadOptions::default());
        match &loaded.errors[..] {
            [LoadError::InvalidField { line, path, .. }] => {
                assert_eq!(path, "spec.devices[0].capacity.memory.value");
                assert_eq!(*line, 17);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn unknown_kind_and_missing_kind_are_errors() {
        let loaded = load_str(
            "f.yaml",
            "apiVersion: v1\nkind: Gadget\n",
            &LoadOptions::default(),
        );
        assert!(matches!(
            loaded.errors[..],
            [LoadError::UnknownKind { line: 1, .. }]
        ));
        let loaded = load_str("f.yaml", "apiVersion: v1\n", &LoadOptions::default());
        assert!(matches!(loaded.errors[..], [LoadError::NotAnObject { .. }]));
    }

    #[test]
    fn extra_kinds_load_as_extensions() {
        let options = LoadOptions::default().with_kind("allot.dev/v1alpha1", "Expected");
        let loaded = load_str(
            "f.yaml",
            "apiVersion: allot.dev/v1alpha1\nkind: Expected\nresult: allocated\n",
            &options,
        );
        assert!(loaded.errors.is_empty());
        assert_eq!(loaded.documents[0].object, Object::Extension);
    }

    #[test]
    fn registered_kinds_win_over_built_in_types() {
        let text = "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: n1\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n";
        let built_in = load_str("f.yaml", text, &LoadOptions::default());
        assert!(built_in.errors.is_empty(), "{:?}", built_in.errors);
        match &built_in.documents[0].object {
            Object::NodeTopology(t) => {
                assert_eq!(t.metadata.name, "n1");
                assert_eq!(t.cpus.len(), 1);
            }
            other => panic!("got {other:?}"),
        }
        let registered = LoadOptions::default().with_kind("allot.dev/v1alpha1", "NodeTopology");
        let loaded = load_str("f.yaml", text, &registered);
        assert_eq!(loaded.documents[0].object, Object::Extension);
        let event = load_str(
            "e.yaml",
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: e\n  namespace: ns\ninvolvedObject:\n  kind: Pod\n  name: p\nreason: FailedScheduling\ntype: Warning\ncount: 2\n",
            &LoadOptions::default(),
        );
        match &event.documents[0].object {
            Object::Event(e) => {
                assert_eq!(e.reason.as_deref(), Some("FailedScheduling"));
                assert_eq!(e.type_.as_deref(), Some("Warning"));
                assert_eq!(e.involved_object.name.as_deref(), Some("p"));
            }
            other => panic!("got {other:?}"),
        }
    }

    #[test]
    fn duplicate_keys_are_rejected() {
        let err = parse_str("f.yaml", "apiVersion: v1\nkind: Node\nkind: Node\n").unwrap_err();
        assert_eq!(
            err,
            LoadError::Syntax {
                file: "f.yaml".into(),
                line: 3,
                message: "duplicate mapping key: kind".into()
            }
        );
    }

    #[test]
    fn syntax_errors_name_the_line() {
        let err = parse_str("f.yaml", "apiVersion: v1\nkind: [Node\n").unwrap_err();
        assert!(matches!(err, LoadError::Syntax { .. }), "{err:?}");
        assert!(err.line() >= 2, "{err:?}");
    }

    #[test]
    fn json_and_lists_are_read() {
        let text = r#"{"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "b"}}]}"#;
        let loaded = load_str("f.json", text, &LoadOptions::default());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
        let names: Vec<_> = loaded.documents.iter().map(|d| d.raw.name()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(loaded.documents[1].raw.line, 3);
    }

    #[test]
    fn plain_y_is_a_string() {
        let text = SLICE.replace("string: A100", "string: Y");
        let loaded = load_str("f.yaml", &text, &LoadOptions::default());
        assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    }

    #[test]
    fn bracketed_map_keys_split_like_fields() {
        assert_eq!(
            split_path("a.b[0].c[x.y/z]"),
            vec![
                Segment::Key("a".into()),
                Segment::Key("b".into()),
                Segment::Index(0),
                Segment::Key("c".into()),
                Segment::Key("x.y/z".into()),
            ]
        );
    }
}
