//! Loading manifests: multi-document YAML and JSON files (and directories) into documents that
//! know their file, start line and the line of every field, then strict decoding into types.
//!
//! Loading happens in two steps. [`parse_str`] turns text into [`RawDocument`]s: untyped JSON
//! values plus a [`SourceMap`] from field path to line. [`decode`] then turns a raw document into
//! any `DeserializeOwned` type, reporting an unknown field or a type mismatch with the field path
//! and its line. [`decode_object`] does this for the kinds this crate knows; other crates decode
//! their own kinds (NodeTopology, KubeletConfiguration, ...) with [`decode`], after registering
//! them in [`LoadOptions::extra_kinds`] so that loading does not reject them as unknown.

mod aliases;
mod files;
mod stream;
mod suggest;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

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

pub use files::{
    DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_ENV, STDIN_NAME, human_bytes, parse_byte_count,
};
pub use stream::LoadEvent;

/// An error while reading, parsing or decoding manifests. Every variant names the file and,
/// where known, the line.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// A file or directory could not be read (or is too large, or a symbolic link leads
    /// nowhere).
    #[error("{file}: {message}")]
    Io {
        /// The path.
        file: String,
        /// What is wrong, for people.
        message: String,
    },
    /// The text is not valid YAML or JSON (or not UTF-8, or an alias bomb).
    #[error("{file}:{line}: {message}")]
    Syntax {
        /// The file.
        file: String,
        /// The line (1-based).
        line: u32,
        /// What is wrong, for people.
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
    #[error(
        "{file}:{line}: no kind \"{kind}\" is registered for version \"{api_version}\"; {supported}"
    )]
    UnknownKind {
        /// The file.
        file: String,
        /// The document's start line.
        line: u32,
        /// The document's `apiVersion`.
        api_version: String,
        /// The document's `kind`.
        kind: String,
        /// The kinds that are, for people: `supported kinds: v1: Namespace, Node; ...`.
        supported: String,
    },
    /// A mapping has the same key twice.
    #[error(
        "{file}:{line}: {}: duplicate field \"{path}\": already set at line {first_line}",
        subject(kind, object)
    )]
    DuplicateField {
        /// The file.
        file: String,
        /// The line of the second occurrence.
        line: u32,
        /// The line of the first.
        first_line: u32,
        /// The document's kind.
        kind: String,
        /// The object, `namespace/name` or `name`.
        object: String,
        /// The field path.
        path: String,
    },
    /// A field is not part of the schema (kubectl's strict validation).
    #[error(
        "{file}:{line}: {}: unknown field \"{path}\"{}",
        subject(kind, object),
        hint_suffix(hint)
    )]
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
        /// What was probably meant: a close field name, or where a field moved between
        /// releases.
        hint: Option<String>,
    },
    /// A field has the wrong type or an invalid value (e.g. a malformed quantity).
    #[error("{file}:{line}: {}: {path}: {message}", subject(kind, object))]
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

/// `Kind namespace/name`, or `Kind` for an object without a name.
fn subject(kind: &str, object: &str) -> String {
    if object.is_empty() {
        kind.to_string()
    } else {
        format!("{kind} {object}")
    }
}

fn hint_suffix(hint: &Option<String>) -> String {
    hint.as_ref().map(|h| format!("; {h}")).unwrap_or_default()
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

    /// The line the error is about (0 for errors about a whole file: it cannot be read).
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

    /// The kind of the document the error is about (empty when it is not about a document).
    pub fn kind(&self) -> &str {
        match self {
            LoadError::DuplicateField { kind, .. }
            | LoadError::UnknownField { kind, .. }
            | LoadError::InvalidField { kind, .. } => kind,
            _ => "",
        }
    }

    /// The object the error is about, `namespace/name` or `name` (or empty).
    pub fn object(&self) -> &str {
        match self {
            LoadError::DuplicateField { object, .. }
            | LoadError::UnknownField { object, .. }
            | LoadError::InvalidField { object, .. } => object,
            _ => "",
        }
    }

    /// The field path the error is about (or empty).
    pub fn field(&self) -> &str {
        match self {
            LoadError::DuplicateField { path, .. }
            | LoadError::UnknownField { path, .. }
            | LoadError::InvalidField { path, .. } => path,
            _ => "",
        }
    }

    /// What is wrong, without the file, line, object and field: `unknown field; did you mean
    /// "name"?`, `invalid type: ...`.
    pub fn detail(&self) -> String {
        match self {
            LoadError::Io { message, .. }
            | LoadError::Syntax { message, .. }
            | LoadError::NotAnObject { message, .. }
            | LoadError::InvalidField { message, .. } => message.clone(),
            LoadError::UnknownKind {
                api_version,
                kind,
                supported,
                ..
            } => format!(
                "no kind \"{kind}\" is registered for version \"{api_version}\"; {supported}"
            ),
            LoadError::DuplicateField { first_line, .. } => {
                format!("duplicate field: already set at line {first_line}")
            }
            LoadError::UnknownField { hint, .. } => format!("unknown field{}", hint_suffix(hint)),
        }
    }
}

/// Field path to source line, for one document.
///
/// Paths are written like upstream's field paths: `spec.devices[0].name`; map keys are written
/// as `.key` or `[key]` and looked up either way (`attributes[dra.example.com/model]` finds
/// `attributes.dra.example.com/model`).
///
/// Loading records the line of every node of the document's value as one number per node, in
/// depth-first order (the root first; a map entry has its key's line), not as a map from path
/// strings: a path is found by walking the value along it ([`RawDocument::line_of`]), which
/// costs a walk of the document for each error, and keeps the map at four bytes per node.
/// Lines recorded with [`SourceMap::insert`] take precedence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SourceMap {
    lines: BTreeMap<String, u32>,
    nodes: Vec<u32>,
}

impl SourceMap {
    /// Records the line of a path.
    pub fn insert(&mut self, path: String, line: u32) {
        self.lines.entry(path).or_insert(line);
    }

    /// The line of `path`, or of its nearest ancestor that has one, among the lines recorded
    /// with [`SourceMap::insert`] (the lines of a loaded document's nodes need the document:
    /// see [`RawDocument::line_of`]).
    pub fn line_of(&self, path: &str) -> Option<u32> {
        let mut segments = split_path(path);
        loop {
            if let Some(line) = self.lines.get(&join_path(&segments)) {
                return Some(*line);
            }
            segments.pop()?;
        }
    }

    /// The line of `path` in `value`, the document this map belongs to: a line recorded with
    /// [`SourceMap::insert`], else the line of the deepest node of `value` along `path`.
    fn line_in(&self, value: &serde_json::Value, path: &str) -> Option<u32> {
        if let Some(line) = self.line_of(path) {
            return Some(line);
        }
        node_line(value, &self.nodes, &split_path(path))
    }

    /// The number of recorded lines.
    pub fn len(&self) -> usize {
        self.lines.len() + self.nodes.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty() && self.nodes.is_empty()
    }
}

/// The number of nodes of `value` (itself included), as [`SourceMap`] counts them.
fn node_count(value: &serde_json::Value) -> usize {
    match value {
        serde_json::Value::Array(items) => 1 + items.iter().map(node_count).sum::<usize>(),
        serde_json::Value::Object(map) => 1 + map.values().map(node_count).sum::<usize>(),
        _ => 1,
    }
}

/// The line of the deepest node of `value` along `segments`, from `lines` (one per node, in
/// depth-first order).
fn node_line(value: &serde_json::Value, lines: &[u32], segments: &[Segment]) -> Option<u32> {
    walk(value, lines, segments).map(|w| w.line)
}

/// Where a walk along a path ended: the deepest node reached, its index among the nodes in
/// depth-first order, its line (or its nearest ancestor's), and whether the whole path was
/// walked.
struct Walked<'a> {
    node: &'a serde_json::Value,
    at: usize,
    line: u32,
    complete: bool,
}

/// Walks `value` along `segments` as far as it goes (see [`node_line`]).
fn walk<'a>(
    value: &'a serde_json::Value,
    lines: &[u32],
    segments: &[Segment],
) -> Option<Walked<'a>> {
    let (mut node, mut at, mut rest) = (value, 0usize, segments);
    let mut line = *lines.first()?;
    let complete = loop {
        let (skip, next, used) = match (node, rest.first()) {
            (_, None) => break true,
            (serde_json::Value::Array(items), Some(Segment::Index(i))) if *i < items.len() => (
                items[..*i].iter().map(node_count).sum::<usize>(),
                &items[*i],
                1,
            ),
            (serde_json::Value::Object(map), Some(_)) => {
                let Some((position, used)) = key_at(map, rest) else {
                    break false;
                };
                let before = map.values().take(position).map(node_count).sum::<usize>();
                let Some((_, next)) = map.iter().nth(position) else {
                    break false;
                };
                (before, next, used)
            }
            _ => break false,
        };
        at += 1 + skip;
        node = next;
        rest = &rest[used..];
        match lines.get(at) {
            Some(found) => line = *found,
            None => break false,
        }
    };
    Some(Walked {
        node,
        at,
        line,
        complete,
    })
}

/// The entry of `map` that the first segments of `rest` name, and how many segments that
/// takes: a key may hold dots (`dra.example.com/model`), so the longest run of key segments
/// that joins into a key wins; an index names a key of its digits.
fn key_at(
    map: &serde_json::Map<String, serde_json::Value>,
    rest: &[Segment],
) -> Option<(usize, usize)> {
    let keys = rest
        .iter()
        .take_while(|s| matches!(s, Segment::Key(_)))
        .count();
    let position = |key: &str| map.keys().position(|k| k == key);
    for used in (1..=keys).rev() {
        let joined: Vec<&str> = rest[..used]
            .iter()
            .map(|s| match s {
                Segment::Key(k) => k.as_str(),
                Segment::Index(_) => "",
            })
            .collect();
        if let Some(found) = position(&joined.join(".")) {
            return Some((found, used));
        }
    }
    match rest.first() {
        Some(Segment::Index(i)) if keys == 0 => position(&i.to_string()).map(|p| (p, 1)),
        _ => None,
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
        self.source_map
            .line_in(&self.value, path)
            .unwrap_or(self.line)
    }

    /// The line of each of the first `count` items of the list at `path`: what
    /// [`RawDocument::line_of`] gives for `path[0]`, `path[1]`, ..., in one walk of the
    /// document rather than one per item (a list of thousands of manifests would otherwise
    /// cost a walk over all the items before each).
    pub fn item_lines(&self, path: &str, count: usize) -> Vec<u32> {
        let item_path = |j: usize| format!("{path}[{j}]");
        let segments = split_path(path);
        let walked = walk(&self.value, &self.source_map.nodes, &segments);
        let Some(Walked {
            node: serde_json::Value::Array(items),
            at,
            complete: true,
            ..
        }) = walked
        else {
            return (0..count).map(|j| self.line_of(&item_path(j))).collect();
        };
        let mut lines = Vec::with_capacity(count);
        let mut next = at + 1;
        let recorded_any = !self.source_map.lines.is_empty();
        for j in 0..count {
            let recorded = recorded_any
                .then(|| self.source_map.line_of(&item_path(j)))
                .flatten();
            let node = items.get(j).map(|item| {
                let line = self.source_map.nodes.get(next).copied();
                next += node_count(item);
                line
            });
            let line = match (recorded, node) {
                (Some(line), _) => line,
                (None, Some(Some(line))) => line,
                (None, _) => self.line_of(&item_path(j)),
            };
            lines.push(line);
        }
        lines
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

/// A YAML node read and dropped, with every check [`YNode`] makes (string keys, integers in
/// range), so that a text fails here exactly where it fails to become a tree.
struct Skip;

impl<'de> Deserialize<'de> for Skip {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(SkipVisitor)
    }
}

struct SkipVisitor;

impl<'de> Visitor<'de> for SkipVisitor {
    type Value = Skip;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any YAML value")
    }

    fn visit_unit<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_none<E>(self) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Skip, D::Error> {
        Skip::deserialize(d)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_i128<E: serde::de::Error>(self, v: i128) -> Result<Skip, E> {
        YNodeVisitor.visit_i128(v).map(|_| Skip)
    }
    fn visit_u128<E: serde::de::Error>(self, v: u128) -> Result<Skip, E> {
        YNodeVisitor.visit_u128(v).map(|_| Skip)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_str<E>(self, _: &str) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_string<E>(self, _: String) -> Result<Skip, E> {
        Ok(Skip)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Skip, A::Error> {
        while seq.next_element::<Spanned<Skip>>()?.is_some() {}
        Ok(Skip)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Skip, A::Error> {
        while map.next_key::<Spanned<String>>()?.is_some() {
            map.next_value::<Spanned<Skip>>()?;
        }
        Ok(Skip)
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

/// A key met twice in one mapping: its path and the lines of both.
struct Duplicate {
    path: String,
    first_line: u32,
    line: u32,
}

/// Converts a YAML tree to JSON, recording the line of each node below the root in depth-first
/// order (see [`SourceMap`]); reports the first duplicate key. `path` is the canonical path of
/// `node` (see [`join_path`]), extended and truncated in place, for that report.
fn to_json(
    node: YNode,
    offset: LineOffset,
    path: &mut String,
    lines: &mut Vec<u32>,
    duplicate: &mut Option<Duplicate>,
) -> serde_json::Value {
    use std::fmt::Write as _;
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
                let _ = write!(path, "[{index}]");
                lines.push(offset.of(&item.referenced));
                out.push(to_json(item.value, offset, path, lines, duplicate));
                path.truncate(base);
            }
            serde_json::Value::Array(out)
        }
        YNode::Map(entries) => {
            let mut out = serde_json::Map::with_capacity(entries.len());
            // The line of each distinct key, in the map's order, for a repeat's report.
            let mut key_lines: Vec<u32> = Vec::new();
            let base = path.len();
            for (key, value) in entries {
                if base > 0 {
                    path.push('.');
                }
                path.push_str(&key.value);
                let line = offset.of(&key.referenced);
                // Only a repeat needs the search for its first place; repeats are rare.
                let repeated = if out.contains_key(&key.value) {
                    out.keys().position(|k| *k == key.value)
                } else {
                    None
                };
                match repeated {
                    Some(first) if duplicate.is_none() => {
                        *duplicate = Some(Duplicate {
                            path: path.clone(),
                            first_line: key_lines.get(first).copied().unwrap_or(line),
                            line,
                        });
                    }
                    Some(_) => {}
                    None => key_lines.push(line),
                }
                lines.push(line);
                let converted = to_json(value.value, offset, path, lines, duplicate);
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

/// The YAML reader's options for a text of `size` bytes.
///
/// The parser's default budget stops a stream at 1,024 documents and 250,000 nodes, which a
/// cluster's worth of Pods in one file passes. Those counts are bounded by the text's size anyway
/// (every document and node takes at least a byte), so they grow with it. Aliases are limited as
/// Kubernetes' YAML decoder limits them, by [`aliases::check`] before the parse, so the parser's
/// own alias heuristics (a fixed ratio of aliases to anchors, a fixed number of replayed events)
/// are off; the limits that guard against deep nesting stay as they are.
fn yaml_options(size: usize) -> serde_saphyr::Options {
    let budget = serde_saphyr::budget! {
        max_documents: size.max(1_024),
        max_nodes: size.saturating_mul(2).max(250_000),
        max_events: size.saturating_mul(8).max(1_000_000),
        max_total_scalar_bytes: size.max(64 * 1024 * 1024),
        max_aliases: size.max(50_000),
        max_anchors: size.max(50_000),
        max_recorded_anchor_events: size.saturating_mul(8).max(1_000_000),
        max_recorded_anchor_bytes: size.max(64 * 1024 * 1024),
        enforce_alias_anchor_ratio: false,
    };
    let alias_limits = serde_saphyr::alias_limits! {
        max_total_replayed_events: usize::MAX,
    };
    // YAML 1.2 booleans (only true/false), as Kubernetes' YAML reader treats `y`/`on` as text
    // in the places this domain uses them. Repeated keys reach the converter, which names the
    // field and both lines.
    serde_saphyr::options! {
        strict_booleans: true,
        budget: budget,
        alias_limits: alias_limits,
        duplicate_keys: serde_saphyr::DuplicateKeyPolicy::PassThrough,
    }
}

/// The YAML parser's step: the documents of `text` as trees with positions, or the first
/// syntax error.
fn parse_yaml(
    file: &str,
    text: &str,
    offset: LineOffset,
) -> Result<Vec<Spanned<YNode>>, LoadError> {
    check_aliases(file, text, offset)?;
    serde_saphyr::from_multiple_with_options(text, yaml_options(text.len()))
        .map_err(|err| syntax_error(file, text, offset, &err))
}

/// Whether `text` parses, without keeping anything of it: the first syntax error, as
/// [`parse_yaml`] reports it.
fn check_syntax(file: &str, text: &str, offset: LineOffset) -> Result<(), LoadError> {
    check_aliases(file, text, offset)?;
    serde_saphyr::from_multiple_with_options::<Spanned<Skip>>(text, yaml_options(text.len()))
        .map(drop)
        .map_err(|err| syntax_error(file, text, offset, &err))
}

/// Refuses a YAML text that Kubernetes' YAML decoder refuses for its aliases (an alias bomb:
/// a document whose aliases make up more than 99% of what it decodes to, less for large
/// documents), in one pass over its events and before anything is expanded. `Err` holds the
/// 1-based line and the message. Texts without both `&` and `*` are not even parsed.
pub fn check_yaml_aliases(text: &str) -> Result<(), (u32, String)> {
    aliases::check(text).map_err(|refusal| (refusal.line, refusal.message()))
}

/// The options this crate reads YAML with, for a text of `size` bytes: YAML 1.2 booleans,
/// repeated keys handed to the visitor, budgets that grow with the text, and no alias limits
/// of the parser's own (call [`check_yaml_aliases`] first, as [`parse_str`] does).
pub fn yaml_reader_options(size: usize) -> serde_saphyr::Options {
    yaml_options(size)
}

/// Refuses a document that Kubernetes' YAML decoder refuses for its aliases, before anything
/// is expanded.
fn check_aliases(file: &str, text: &str, offset: LineOffset) -> Result<(), LoadError> {
    aliases::check(text).map_err(|refusal| LoadError::Syntax {
        file: file.to_string(),
        line: refusal.line.saturating_add(offset.0),
        message: refusal.message(),
    })
}

/// A parser error for people: the line (the last line of the text when the parser does not
/// say), and the message without the parser's position or internal names.
fn syntax_error(
    file: &str,
    text: &str,
    offset: LineOffset,
    err: &serde_saphyr::Error,
) -> LoadError {
    let line = match err.location().map(|l| line_of_location(&l)) {
        Some(line) if line > 0 => line,
        _ => stream::count_lines(text.as_bytes()).max(1),
    };
    LoadError::Syntax {
        file: file.to_string(),
        line: line.saturating_add(offset.0),
        message: syntax_message(err),
    }
}

/// A YAML parser's error for people: without the parser's position (report the line apart) or
/// its internal names ("set DuplicateKeyPolicy", "use from_str_multiple", Rust debug output
/// of budgets).
pub fn yaml_error_message(err: &serde_saphyr::Error) -> String {
    syntax_message(err)
}

fn syntax_message(err: &serde_saphyr::Error) -> String {
    use serde_saphyr::budget::BudgetBreach;
    if let serde_saphyr::Error::Budget { breach, .. } = err.without_snippet() {
        return match breach {
            BudgetBreach::Depth { depth } => format!(
                "the document nests {depth} levels deep; at most 64 levels of lists and maps are read"
            ),
            other => format!(
                "the document is too large or too complex to read ({})",
                budget_words(other)
            ),
        };
    }
    let message = err.without_snippet().to_string();
    let message =
        strip_position(&message).replace(", set DuplicateKeyPolicy in Options if acceptable", "");
    let message = match message.find("; use from_") {
        Some(at) => message[..at].to_string(),
        None => message,
    };
    match message.strip_prefix("multiple YAML documents detected") {
        Some(_) => "more than one YAML document where one is expected (documents are separated \
                    by a line of ---)"
            .to_string(),
        None => message,
    }
}

/// A budget breach in words: what was counted and how much.
fn budget_words(breach: &serde_saphyr::budget::BudgetBreach) -> String {
    use serde_saphyr::budget::BudgetBreach as B;
    match breach {
        B::Events { events } => format!("{events} parser events"),
        B::Aliases { aliases } => format!("{aliases} aliases"),
        B::Anchors { anchors } => format!("{anchors} anchors"),
        B::Documents { documents } => format!("{documents} documents"),
        B::Nodes { nodes } => format!("{nodes} values"),
        B::ScalarBytes { total_scalar_bytes } => format!("{total_scalar_bytes} bytes of text"),
        B::MergeKeys { merge_keys } => format!("{merge_keys} merge keys"),
        B::RecordedAnchorEvents {
            recorded_anchor_events,
        } => format!("{recorded_anchor_events} values kept for anchors"),
        B::RecordedAnchorBytes {
            recorded_anchor_bytes,
        } => format!("{recorded_anchor_bytes} bytes kept for anchors"),
        B::InputBytes { input_bytes } => format!("{input_bytes} bytes"),
        _ => "a parser limit".to_string(),
    }
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
        documents.extend(convert_one(file, node, offset)?);
    }
    Ok(documents)
}

/// One parsed tree as raw documents: none for an empty document, the items of a `List`, or
/// the document itself.
fn convert_one(
    file: &str,
    node: Spanned<YNode>,
    offset: LineOffset,
) -> Result<Vec<RawDocument>, LoadError> {
    let line = offset.of(&node.referenced);
    if matches!(node.value, YNode::Null) {
        return Ok(Vec::new());
    }
    let mut lines = vec![line];
    let mut duplicate = None;
    let value = to_json(
        node.value,
        offset,
        &mut String::new(),
        &mut lines,
        &mut duplicate,
    );
    let source_map = SourceMap {
        lines: BTreeMap::new(),
        nodes: lines,
    };
    let document = new_document(file, line, value, source_map)?;
    if let Some(Duplicate {
        path,
        first_line,
        line,
    }) = duplicate
    {
        return Err(LoadError::DuplicateField {
            file: file.to_string(),
            line,
            first_line,
            kind: document.kind.clone(),
            object: document.object_name(),
            path,
        });
    }
    if document.kind.ends_with("List") && document.value.get("items").is_some() {
        expand_list(document)
    } else {
        Ok(vec![document])
    }
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

/// Splits a `List` document into its items, each with its own source map (its slice of the
/// list's node lines). The items are moved out of the list, not copied.
fn expand_list(mut list: RawDocument) -> Result<Vec<RawDocument>, LoadError> {
    let nodes = std::mem::take(&mut list.source_map.nodes);
    let Some(root) = list.value.as_object_mut() else {
        return Ok(Vec::new());
    };
    let Some(position) = root.keys().position(|k| k == "items") else {
        return Ok(Vec::new());
    };
    // The node of `items`: after the root and the entries before it.
    let mut at = 1 + root.values().take(position).map(node_count).sum::<usize>();
    let items = match root.get_mut("items").map(serde_json::Value::take) {
        Some(serde_json::Value::Array(items)) => items,
        _ => Vec::new(),
    };
    at += 1;
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let size = node_count(&item);
        let item_nodes = nodes
            .get(at..at + size)
            .map(<[u32]>::to_vec)
            .unwrap_or_default();
        at += size;
        let line = item_nodes.first().copied().unwrap_or(list.line);
        let source_map = SourceMap {
            lines: BTreeMap::new(),
            nodes: item_nodes,
        };
        out.push(new_document(&list.file, line, item, source_map)?);
    }
    Ok(out)
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
        let expected = suggest::expected_fields(&message);
        return LoadError::UnknownField {
            file: raw.file.clone(),
            line: raw.line_of(&full),
            kind: raw.kind.clone(),
            object: raw.object_name(),
            hint: suggest::unknown_field_hint(&raw.kind, &full, &expected),
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadOptions {
    /// `(apiVersion, kind)` pairs other crates decode themselves; they load as
    /// [`Object::Extension`] instead of being rejected.
    pub extra_kinds: Vec<(String, String)>,
    /// The largest file (or standard input) that is read, in bytes; a larger one is an error
    /// naming it and the limit. Loading holds one file's text at a time, plus a bounded working
    /// set, so this bounds its memory. The default is [`DEFAULT_MAX_FILE_BYTES`], or
    /// [`MAX_FILE_BYTES_ENV`] when set.
    pub max_file_bytes: u64,
    /// Whether directories are read with their subdirectories (kubectl's `-R`).
    pub recursive: bool,
    /// Why [`MAX_FILE_BYTES_ENV`] could not be used, reported by [`load`] as an input error.
    pub settings_error: Option<String>,
}

impl Default for LoadOptions {
    fn default() -> Self {
        let (max_file_bytes, settings_error) = match files::max_file_bytes_from_env() {
            Ok(limit) => (limit, None),
            Err(message) => (DEFAULT_MAX_FILE_BYTES, Some(message)),
        };
        LoadOptions {
            extra_kinds: Vec::new(),
            max_file_bytes,
            recursive: false,
            settings_error,
        }
    }
}

impl LoadOptions {
    /// Accepts one more `(apiVersion, kind)`.
    pub fn with_kind(mut self, api_version: &str, kind: &str) -> Self {
        self.extra_kinds
            .push((api_version.to_string(), kind.to_string()));
        self
    }

    /// The kinds that load, for people: grouped by API version, e.g.
    /// `supported kinds: v1: Event, Namespace, Node, Pod; resource.k8s.io/v1: DeviceClass, ...`.
    pub fn supported_kinds(&self) -> String {
        let mut groups: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
        let extra = self
            .extra_kinds
            .iter()
            .map(|(v, k)| (v.as_str(), k.as_str()));
        for (version, kind) in KNOWN_KINDS.iter().copied().chain(extra) {
            let kinds = groups.entry(version).or_default();
            if !kinds.contains(&kind) {
                kinds.push(kind);
            }
        }
        // Core first, as kubectl lists it, then the groups by name.
        let mut versions: Vec<&str> = groups.keys().copied().collect();
        versions.sort_by_key(|v| (v.contains('/'), *v));
        let parts: Vec<String> = versions
            .into_iter()
            .map(|version| {
                let mut kinds = groups[version].clone();
                kinds.sort_unstable();
                format!("{version}: {}", kinds.join(", "))
            })
            .collect();
        format!("supported kinds: {}", parts.join("; "))
    }

    /// The unknown-kind error for `raw`, naming the kinds that are supported (first the API
    /// versions that serve the same kind, when there are some).
    fn unknown_kind(&self, raw: &RawDocument) -> LoadError {
        let other_versions: Vec<&str> = KNOWN_KINDS
            .iter()
            .copied()
            .chain(
                self.extra_kinds
                    .iter()
                    .map(|(v, k)| (v.as_str(), k.as_str())),
            )
            .filter(|(_, kind)| *kind == raw.kind)
            .map(|(version, _)| version)
            .collect();
        let supported = if other_versions.is_empty() {
            self.supported_kinds()
        } else {
            format!(
                "{} is supported as {}",
                raw.kind,
                other_versions
                    .iter()
                    .map(|v| format!("apiVersion {v}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        };
        LoadError::UnknownKind {
            file: raw.file.clone(),
            line: raw.line,
            api_version: raw.api_version.clone(),
            kind: raw.kind.clone(),
            supported,
        }
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
        ("resource.k8s.io/v1", "DeviceTaintRule") => Object::DeviceTaintRule(decode(raw)?),
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
        // An older version of a stored kind converts to the storage version (`versions`).
        _ => match crate::versions::decode_older(raw) {
            Some(converted) => converted?,
            None => return Err(options.unknown_kind(raw)),
        },
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
                    LoadError::UnknownField { path, hint, .. } => {
                        let full = format!("{prefix}.{path}");
                        LoadError::UnknownField {
                            file: raw.file.clone(),
                            line: raw.line_of(&full),
                            kind: raw.kind.clone(),
                            object: raw.object_name(),
                            path: full,
                            hint,
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

/// Reads, parses and decodes files and directories (see [`load_stream`]); collects all errors,
/// so one bad file does not hide the others: unreadable paths and files, then each file's
/// syntax error, in file order, then the documents' decode errors in document order. A file
/// with a syntax error gives no documents.
pub fn load<P: AsRef<Path>>(paths: &[P], options: &LoadOptions) -> Loaded {
    let mut collector = Collector::default();
    load_stream(paths, options, |event| collector.push(event));
    collector.finish()
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
    let total: u64 = texts.iter().map(|(_, text)| text.len() as u64).sum();
    load_texts_on(texts, options, stream::threads_for(total))
}

fn load_texts_on(texts: &[(&str, &str)], options: &LoadOptions, threads: usize) -> Loaded {
    let mut collector = Collector::default();
    load_texts_stream_on(texts, options, threads, |event| collector.push(event));
    collector.finish()
}

/// Reads, parses and decodes files and directories, handing each document (or its error) to
/// `sink` as soon as it is decoded, in input order, so that a caller that does not keep the
/// documents needs memory for one file's text and a few pieces of it in flight, whatever the
/// input's size.
///
/// `-` is standard input (named `STDIN`); a file is read whatever its extension; a directory
/// gives its `.yaml`, `.yml` and `.json` files in name order (with subdirectories when
/// [`LoadOptions::recursive`]). A symbolic link in a directory that leads nowhere or loops is an
/// error, as is a file larger than [`LoadOptions::max_file_bytes`] (checked before reading it)
/// or text that is not UTF-8 (reported at the line of the first bad byte).
pub fn load_stream<P: AsRef<Path>>(
    paths: &[P],
    options: &LoadOptions,
    sink: impl FnMut(LoadEvent),
) {
    let paths: Vec<PathBuf> = paths.iter().map(|p| p.as_ref().to_path_buf()).collect();
    let mut inputs = files::expand(&paths, options.recursive);
    if let Some(message) = &options.settings_error {
        let file = files::MAX_FILE_BYTES_ENV.to_string();
        inputs.insert(
            0,
            files::Input::Error(LoadError::Io {
                file,
                message: message.clone(),
            }),
        );
    }
    let total = files::total_size(&inputs);
    let limit = options.max_file_bytes;
    let sources = inputs
        .into_iter()
        .map(move |input| files::read(input, limit));
    stream::run(sources, None, options, stream::threads_for(total), sink);
}

/// [`load_stream`] over texts in memory, `(file name, text)`.
pub fn load_texts_stream(
    texts: &[(&str, &str)],
    options: &LoadOptions,
    sink: impl FnMut(LoadEvent),
) {
    let total: u64 = texts.iter().map(|(_, text)| text.len() as u64).sum();
    load_texts_stream_on(texts, options, stream::threads_for(total), sink);
}

fn load_texts_stream_on(
    texts: &[(&str, &str)],
    options: &LoadOptions,
    threads: usize,
    sink: impl FnMut(LoadEvent),
) {
    let sources = texts.iter().map(|(name, text)| stream::Source {
        name: name.to_string(),
        text: Ok(Arc::new(text.to_string())),
    });
    stream::run(sources, None, options, threads, sink);
}

/// Parses and decodes `bytes` as the content of a file named `file`: UTF-8 text (or UTF-16 with
/// a byte order mark), reported at the line of the first bad byte otherwise.
pub fn load_bytes(file: &str, bytes: Vec<u8>, options: &LoadOptions) -> Loaded {
    let source = stream::Source {
        name: file.to_string(),
        text: files::decode_text(file, bytes),
    };
    let threads = stream::threads_for(source.text.as_ref().map_or(0, |t| t.len() as u64));
    let mut collector = Collector::default();
    stream::run(std::iter::once(source), None, options, threads, |event| {
        collector.push(event)
    });
    collector.finish()
}

/// [`load_bytes`] on `threads` threads with texts cut into pieces of about `piece_bytes`, for
/// tests and fuzzing that check that any cut gives what one pass gives.
#[doc(hidden)]
pub fn load_bytes_in_pieces(
    file: &str,
    bytes: Vec<u8>,
    options: &LoadOptions,
    threads: usize,
    piece_bytes: usize,
) -> Loaded {
    let source = stream::Source {
        name: file.to_string(),
        text: files::decode_text(file, bytes),
    };
    let mut collector = Collector::default();
    stream::run(
        std::iter::once(source),
        Some(piece_bytes.max(1)),
        options,
        threads.max(1),
        |event| collector.push(event),
    );
    collector.finish()
}

/// Collects a stream of events into [`Loaded`], dropping what a file gave before it failed.
#[derive(Default)]
struct Collector {
    documents: Vec<Document>,
    file_errors: Vec<LoadError>,
    decode_errors: Vec<LoadError>,
    /// Where the current file's documents and decode errors start.
    marks: (usize, usize),
}

impl Collector {
    fn push(&mut self, event: LoadEvent) {
        match event {
            LoadEvent::FileStart(_) => {
                self.marks = (self.documents.len(), self.decode_errors.len());
            }
            LoadEvent::Document(document) => self.documents.push(*document),
            LoadEvent::DocumentError(err) => self.decode_errors.push(err),
            LoadEvent::FileError(err) => {
                self.documents.truncate(self.marks.0);
                self.decode_errors.truncate(self.marks.1);
                self.file_errors.push(err);
            }
        }
    }

    fn finish(mut self) -> Loaded {
        self.file_errors.append(&mut self.decode_errors);
        Loaded {
            documents: self.documents,
            errors: self.file_errors,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::stream::document_cuts;
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
        // Directives belong to the document after them: never cut between the two.
        let documents = many_documents(2000);
        let middle = documents.len() / 2;
        let middle = middle + documents[middle..].find("\n---\n").unwrap() + 1;
        let directive = format!(
            "%YAML 1.2\n---\n{}...\n%YAML 1.2\n# the second half\n{}",
            &documents[..middle],
            &documents[middle..]
        );
        let cuts = document_cuts(&directive, 1024);
        assert!(cuts.len() > 10, "{cuts:?}");
        for &(at, _) in &cuts[1..] {
            let before = directive[..at].trim_end_matches('\n');
            assert!(
                !before.ends_with("%YAML 1.2") && !before.ends_with("# the second half"),
                "cut after a directive at {at}"
            );
        }
        let texts = [("d.yaml", directive.as_str())];
        let one = load_texts_on(&texts, &LoadOptions::default(), 1);
        assert!(one.documents.len() > 1900, "{:?}", one.errors.first());
        assert_eq!(one, load_texts_on(&texts, &LoadOptions::default(), 4));
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
        // Decoders write map keys with dots: the longest key that matches wins.
        assert_eq!(
            docs[0].line_of("spec.devices[0].attributes.gpu.example.com/model.string"),
            17
        );
        assert_eq!(docs[0].line_of("spec.pool.generation"), 11);
        assert_eq!(docs[0].line_of("spec.pool.nope.deeper"), 9);
        assert_eq!(docs[0].line_of("spec.devices[7]"), 13);
        assert_eq!(docs[0].line_of(""), 2);
        assert_eq!(docs[0].source_map.len(), 18);
        assert_eq!(docs[1].line, 19);
        assert_eq!(docs[1].name(), "ns");
    }

    #[test]
    fn item_lines_are_the_lines_of_each_item() {
        let text = "\
apiVersion: v1
kind: Timeline
events:
- at: 0s
  create:
  - {kind: Pod, metadata: {name: a, labels: {x: y}}}
  - kind: Pod
    metadata:
      name: b

  - kind: Pod
- at: 1m
  create: [{kind: Pod}]
";
        let mut doc = parse_str("t.yaml", text).unwrap().remove(0);
        let each = |doc: &RawDocument, path: &str, count: usize| {
            (0..count)
                .map(|j| doc.line_of(&format!("{path}[{j}]")))
                .collect::<Vec<_>>()
        };
        for (path, count) in [
            ("events", 2),
            ("events", 3),
            ("events[0].create", 3),
            ("events[1].create", 1),
            ("events[0].at", 2),
            ("nope", 2),
        ] {
            assert_eq!(
                doc.item_lines(path, count),
                each(&doc, path, count),
                "{path}"
            );
        }
        assert_eq!(doc.item_lines("events[0].create", 3), vec![6, 7, 11]);
        assert_eq!(doc.item_lines("events", 3), vec![4, 12, 3]);
        // A recorded line wins, for its path and the paths below it.
        doc.source_map.insert("events[0].create[1]".to_string(), 40);
        assert_eq!(doc.item_lines("events[0].create", 3), vec![6, 40, 11]);
        assert_eq!(
            doc.item_lines("events[0].create", 3),
            each(&doc, "events[0].create", 3)
        );
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
                hint: None,
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
            LoadError::DuplicateField {
                file: "f.yaml".into(),
                line: 3,
                first_line: 2,
                kind: "Node".into(),
                object: String::new(),
                path: "kind".into(),
            }
        );
        assert_eq!(
            err.to_string(),
            "f.yaml:3: Node: duplicate field \"kind\": already set at line 2"
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
