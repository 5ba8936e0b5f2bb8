//! The patch engines of `PATCH`: RFC 6902 JSON patch (`application/json-patch+json`), RFC 7386
//! JSON merge patch (`application/merge-patch+json`) and Kubernetes' strategic merge patch
//! (`application/strategic-merge-patch+json`) with the schema facts of the kinds allot serves.
//!
//! The strategic merge patch follows upstream's server side (`StrategicMergeMapPatch` with
//! `MergeParallelList` and `IgnoreUnmatchedNulls`): lists with `patchStrategy: merge` merge by
//! their `patchMergeKey` (lists of scalars merge as sets), other lists and maps marked `replace`
//! are replaced, and the directives `$patch: replace|delete`, `$retainKeys`,
//! `$deleteFromPrimitiveList/<field>` and `$setElementOrder/<field>` are honoured. The same
//! schema table also tells server-side apply (see [`crate::apply`]) which lists are maps keyed by
//! which fields, which are sets and which are atomic.

use allot_store::Kind;
use serde_json::{Map, Value};

/// A patch that cannot be applied; the message is upstream's wording where it has one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct PatchError {
    /// What is wrong.
    pub message: String,
    /// Whether the patch document itself is malformed (400) rather than not applicable (422).
    pub malformed: bool,
}

impl PatchError {
    fn malformed(message: impl Into<String>) -> Self {
        PatchError {
            message: message.into(),
            malformed: true,
        }
    }
    fn inapplicable(message: impl Into<String>) -> Self {
        PatchError {
            message: message.into(),
            malformed: false,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Schema facts
// ---------------------------------------------------------------------------------------------

/// A field's `patchStrategy` tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// No tag: maps merge key by key, lists are replaced whole.
    Default,
    /// `merge`: lists merge by key (or as sets of scalars).
    Merge,
    /// `replace`: the value is replaced whole even for maps.
    Replace,
}

/// How server-side apply treats a list (`x-kubernetes-list-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListType {
    /// Replaced whole, owned as one field.
    Atomic,
    /// A set of scalars; each value is owned separately.
    Set,
    /// A map keyed by these fields of its elements.
    Map(&'static [&'static str]),
}

/// What the schema says about one field, addressed by its field names from the object root
/// (list elements are transparent: `spec.containers.env`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FieldMeta {
    /// The strategic-merge-patch strategy.
    pub strategy: Strategy,
    /// The strategic-merge-patch merge key of a list of objects.
    pub merge_key: Option<&'static str>,
    /// The server-side-apply list type.
    pub list_type: ListType,
    /// Whether an object value is a free-form map (labels, requests) rather than a struct.
    pub free_form_map: bool,
    /// Whether the tag also says `retainKeys` (clients send `$retainKeys` for its items).
    pub retain_keys: bool,
}

impl FieldMeta {
    /// An untagged field.
    pub const PLAIN: FieldMeta = FieldMeta {
        strategy: Strategy::Default,
        merge_key: None,
        list_type: ListType::Atomic,
        free_form_map: false,
        retain_keys: false,
    };
    pub(crate) const fn merge(key: &'static str, keys: &'static [&'static str]) -> FieldMeta {
        FieldMeta {
            strategy: Strategy::Merge,
            merge_key: Some(key),
            list_type: ListType::Map(keys),
            free_form_map: false,
            retain_keys: false,
        }
    }
    pub(crate) const fn merge_retain(
        key: &'static str,
        keys: &'static [&'static str],
    ) -> FieldMeta {
        FieldMeta {
            retain_keys: true,
            ..FieldMeta::merge(key, keys)
        }
    }
    pub(crate) const fn map_list(keys: &'static [&'static str]) -> FieldMeta {
        FieldMeta {
            strategy: Strategy::Default,
            merge_key: None,
            list_type: ListType::Map(keys),
            free_form_map: false,
            retain_keys: false,
        }
    }
    pub(crate) const fn merge_set() -> FieldMeta {
        FieldMeta {
            strategy: Strategy::Merge,
            merge_key: None,
            list_type: ListType::Set,
            free_form_map: false,
            retain_keys: false,
        }
    }
    pub(crate) const fn free_form() -> FieldMeta {
        FieldMeta {
            strategy: Strategy::Default,
            merge_key: None,
            list_type: ListType::Atomic,
            free_form_map: true,
            retain_keys: false,
        }
    }
}

/// Looks up the schema facts of a field path.
pub trait Schema {
    /// The facts of the field at `path` (field names from the root, list elements skipped).
    fn field(&self, path: &[String]) -> FieldMeta;
}

/// The schema of one served kind, from upstream's Go struct tags (`patchStrategy`,
/// `patchMergeKey`) and list markers (`+listType`, `+listMapKey`).
#[derive(Debug, Clone, Copy)]
pub struct KindSchema(pub Kind);

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

impl Schema for KindSchema {
    fn field(&self, path: &[String]) -> FieldMeta {
        let p: Vec<&str> = path.iter().map(String::as_str).collect();
        let Some(last) = p.last().copied() else {
            return FieldMeta::PLAIN;
        };
        // Object metadata, the same for every kind.
        match p.as_slice() {
            ["metadata", "ownerReferences"] => return FieldMeta::merge("uid", &["uid"]),
            ["metadata", "finalizers"] => return FieldMeta::merge_set(),
            ["metadata", "labels" | "annotations"] => return FieldMeta::free_form(),
            ["metadata", ..] => return FieldMeta::PLAIN,
            _ => {}
        }
        match self.0 {
            Kind::Pod => pod_field(&p),
            Kind::Node => match p.as_slice() {
                ["spec", "podCIDRs"] => FieldMeta::merge_set(),
                ["status", "conditions"] => FieldMeta::merge("type", &["type"]),
                ["status", "addresses"] => FieldMeta::merge("type", &["type"]),
                ["status", "capacity" | "allocatable"] => FieldMeta::free_form(),
                _ => FieldMeta::PLAIN,
            },
            Kind::ResourceClaim => match p.as_slice() {
                ["status", "reservedFor"] => FieldMeta::merge("uid", &["uid"]),
                _ => resource_field(last),
            },
            kind => crate::patch_kinds::field(kind, &p).unwrap_or_else(|| resource_field(last)),
        }
    }
}

pub(crate) fn pod_field(p: &[&str]) -> FieldMeta {
    match p {
        ["spec", list] if CONTAINER_LISTS.contains(list) => FieldMeta::merge("name", &["name"]),
        ["spec", list, field] if CONTAINER_LISTS.contains(list) => match *field {
            "ports" => FieldMeta::merge("containerPort", &["containerPort", "protocol"]),
            "env" => FieldMeta::merge("name", &["name"]),
            "volumeMounts" => FieldMeta::merge("mountPath", &["mountPath"]),
            "volumeDevices" => FieldMeta::merge("devicePath", &["devicePath"]),
            "resizePolicy" => FieldMeta::map_list(&["resourceName"]),
            _ => FieldMeta::PLAIN,
        },
        ["spec", list, "resources", "claims"] if CONTAINER_LISTS.contains(list) => {
            FieldMeta::map_list(&["name"])
        }
        ["spec", list, "resources", "limits" | "requests"] if CONTAINER_LISTS.contains(list) => {
            FieldMeta::free_form()
        }
        ["spec", "volumes"] => FieldMeta::merge_retain("name", &["name"]),
        ["spec", "imagePullSecrets"] => FieldMeta::merge("name", &["name"]),
        ["spec", "hostAliases"] => FieldMeta::merge("ip", &["ip"]),
        ["spec", "topologySpreadConstraints"] => {
            FieldMeta::merge("topologyKey", &["topologyKey", "whenUnsatisfiable"])
        }
        ["spec", "resourceClaims"] => FieldMeta::merge_retain("name", &["name"]),
        ["spec", "schedulingGates"] => FieldMeta::merge("name", &["name"]),
        ["spec", "nodeSelector" | "overhead"] => FieldMeta::free_form(),
        ["spec", "resources", "limits" | "requests"] => FieldMeta::free_form(),
        ["status", "conditions"] => FieldMeta::merge("type", &["type"]),
        ["status", "podIPs" | "hostIPs"] => FieldMeta::merge("ip", &["ip"]),
        ["status", "resourceClaimStatuses"] => FieldMeta::merge_retain("name", &["name"]),
        _ => FieldMeta::PLAIN,
    }
}

/// The same facts by Go type and JSON field name (the Rust types carry the Go names), for
/// OpenAPI documents: kubectl computes its client-side apply patches from the
/// `x-kubernetes-patch-*` extensions when the server publishes a schema for a kind.
pub fn type_field(type_name: &str, field: &str) -> Option<FieldMeta> {
    let meta = match (type_name, field) {
        ("ObjectMeta", "ownerReferences") => FieldMeta::merge("uid", &["uid"]),
        ("ObjectMeta", "finalizers") => FieldMeta::merge_set(),
        ("PodSpec", "containers" | "initContainers" | "ephemeralContainers")
        | ("PodSpec", "imagePullSecrets" | "schedulingGates") => {
            FieldMeta::merge("name", &["name"])
        }
        ("PodSpec", "volumes" | "resourceClaims") => FieldMeta::merge_retain("name", &["name"]),
        ("PodSpec", "hostAliases") => FieldMeta::merge("ip", &["ip"]),
        ("PodSpec", "topologySpreadConstraints") => {
            FieldMeta::merge("topologyKey", &["topologyKey", "whenUnsatisfiable"])
        }
        ("Container", "ports") => FieldMeta::merge("containerPort", &["containerPort", "protocol"]),
        ("Container", "env") => FieldMeta::merge("name", &["name"]),
        ("Container", "volumeMounts") => FieldMeta::merge("mountPath", &["mountPath"]),
        ("Container", "volumeDevices") => FieldMeta::merge("devicePath", &["devicePath"]),
        ("Container", "resizePolicy") => FieldMeta::map_list(&["resourceName"]),
        ("ResourceRequirements", "claims") => FieldMeta::map_list(&["name"]),
        ("PodStatus", "conditions") => FieldMeta::merge("type", &["type"]),
        ("PodStatus", "podIPs" | "hostIPs") => FieldMeta::merge("ip", &["ip"]),
        ("PodStatus", "resourceClaimStatuses") => FieldMeta::merge_retain("name", &["name"]),
        ("NodeSpec", "podCIDRs") => FieldMeta::merge_set(),
        ("NodeStatus", "conditions" | "addresses") => FieldMeta::merge("type", &["type"]),
        ("ResourceClaimStatus", "reservedFor") => FieldMeta::merge("uid", &["uid"]),
        (
            "NamespaceStatus"
            | "DeviceTaintRuleStatus"
            | "PodGroupStatus"
            | "ResourcePoolStatusRequestStatus",
            "conditions",
        ) => FieldMeta::merge("type", &["type"]),
        _ => return crate::patch_kinds::type_field(type_name, field),
    };
    Some(meta)
}

/// The OpenAPI vendor extensions that state a field's facts (`x-kubernetes-patch-strategy`,
/// `x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, `x-kubernetes-list-map-keys`).
pub fn openapi_extensions(meta: &FieldMeta) -> Vec<(&'static str, Value)> {
    let mut out = Vec::new();
    let strategy = match (meta.strategy, meta.retain_keys) {
        (Strategy::Merge, true) => Some("merge,retainKeys"),
        (Strategy::Merge, false) => Some("merge"),
        (Strategy::Replace, _) => Some("replace"),
        (Strategy::Default, _) => None,
    };
    if let Some(strategy) = strategy {
        out.push((
            "x-kubernetes-patch-strategy",
            Value::String(strategy.into()),
        ));
    }
    if let Some(key) = meta.merge_key {
        out.push(("x-kubernetes-patch-merge-key", Value::String(key.into())));
    }
    match meta.list_type {
        ListType::Atomic => {}
        ListType::Set => out.push(("x-kubernetes-list-type", Value::String("set".into()))),
        ListType::Map(keys) => {
            out.push(("x-kubernetes-list-type", Value::String("map".into())));
            out.push((
                "x-kubernetes-list-map-keys",
                Value::Array(keys.iter().map(|k| Value::String((*k).into())).collect()),
            ));
        }
    }
    out
}

/// resource.k8s.io, scheduling and namespace fields: condition lists merge by type, attribute
/// and capacity maps are free-form; device lists are atomic.
pub(crate) fn resource_field(last: &str) -> FieldMeta {
    match last {
        "conditions" => FieldMeta::merge("type", &["type"]),
        "attributes" | "capacity" | "matchLabels" | "labels" | "annotations" | "nodeSelector" => {
            FieldMeta::free_form()
        }
        _ => FieldMeta::PLAIN,
    }
}

// ---------------------------------------------------------------------------------------------
// Patch types
// ---------------------------------------------------------------------------------------------

/// The patch types of `PATCH`, by `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    /// `application/json-patch+json` (RFC 6902).
    Json,
    /// `application/merge-patch+json` (RFC 7386).
    Merge,
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// `application/apply-patch+yaml` (server-side apply, see [`crate::apply`]).
    Apply,
}

/// The accepted patch media types, as upstream lists them in its 415 message.
pub const ACCEPTED_PATCH_TYPES: &str = "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json";

impl PatchType {
    /// The patch type of a `Content-Type` value (parameters ignored).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        match content_type.split(';').next().unwrap_or_default().trim() {
            "application/json-patch+json" => Some(PatchType::Json),
            "application/merge-patch+json" => Some(PatchType::Merge),
            "application/strategic-merge-patch+json" => Some(PatchType::Strategic),
            "application/apply-patch+yaml" | "application/apply-patch+cbor" => {
                Some(PatchType::Apply)
            }
            _ => None,
        }
    }
}

/// Applies a JSON, merge or strategic merge patch (the body as sent) to the current object.
pub fn patch_object(
    patch_type: PatchType,
    current: &Value,
    body: &[u8],
    schema: &dyn Schema,
) -> Result<Value, PatchError> {
    let patch: Value = serde_json::from_slice(body)
        .map_err(|e| PatchError::malformed(format!("error decoding patch: {e}")))?;
    match patch_type {
        PatchType::Json => json_patch(current, &patch),
        PatchType::Merge => {
            if !patch.is_object() {
                return Err(PatchError::malformed(
                    "error decoding patch: the merge patch must be an object",
                ));
            }
            let mut out = current.clone();
            merge_patch(&mut out, &patch);
            Ok(out)
        }
        PatchType::Strategic => strategic_merge_patch(current, &patch, schema),
        PatchType::Apply => Err(PatchError::malformed(
            "an apply patch is not applied by patch_object",
        )),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON merge patch (RFC 7386)
// ---------------------------------------------------------------------------------------------

/// Applies an RFC 7386 JSON merge patch in place.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(patch) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(map) = target {
                for (k, v) in patch {
                    if v.is_null() {
                        map.shift_remove(k);
                    } else {
                        merge_patch(map.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

// ---------------------------------------------------------------------------------------------
// JSON patch (RFC 6902)
// ---------------------------------------------------------------------------------------------

/// Applies an RFC 6902 JSON patch (an array of operations) to a copy of `doc`.
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    let Value::Array(ops) = patch else {
        return Err(PatchError::malformed(
            "json: cannot unmarshal object into Go value of type jsonpatch.Patch",
        ));
    };
    let mut doc = doc.clone();
    for (i, op) in ops.iter().enumerate() {
        let Value::Object(op) = op else {
            return Err(PatchError::malformed(format!(
                "operation {i} is not an object"
            )));
        };
        let kind = op.get("op").and_then(Value::as_str).unwrap_or_default();
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or_else(|| PatchError::malformed(format!("operation {i}: missing path")))?;
        let pointer = parse_pointer(path)?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| PatchError::malformed(format!("operation {i}: missing value")))
        };
        let from = || -> Result<Vec<String>, PatchError> {
            let from = op
                .get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| PatchError::malformed(format!("operation {i}: missing from")))?;
            parse_pointer(from)
        };
        match kind {
            "add" => pointer_add(&mut doc, &pointer, value()?, path)?,
            "remove" => {
                pointer_remove(&mut doc, &pointer, "remove", path)?;
            }
            "replace" => {
                let v = value()?;
                pointer_remove(&mut doc, &pointer, "replace", path)?;
                pointer_add(&mut doc, &pointer, v, path)?;
            }
            "move" => {
                let from_ptr = from()?;
                if pointer.len() > from_ptr.len() && pointer[..from_ptr.len()] == from_ptr[..] {
                    return Err(PatchError::inapplicable(format!(
                        "move operation does not apply: cannot move {path} into its own child"
                    )));
                }
                let v = pointer_remove(&mut doc, &from_ptr, "move", path)?;
                pointer_add(&mut doc, &pointer, v, path)?;
            }
            "copy" => {
                let from_ptr = from()?;
                let v = pointer_get(&doc, &from_ptr).cloned().ok_or_else(|| {
                    PatchError::inapplicable(format!(
                        "copy operation does not apply: doc is missing from path: {path}"
                    ))
                })?;
                pointer_add(&mut doc, &pointer, v, path)?;
            }
            "test" => {
                let want = value()?;
                if pointer_get(&doc, &pointer) != Some(&want) {
                    return Err(PatchError::inapplicable(format!(
                        "testing value {path} failed: test failed"
                    )));
                }
            }
            other => {
                return Err(PatchError::malformed(format!("Unexpected kind: {other}")));
            }
        }
    }
    Ok(doc)
}

fn parse_pointer(path: &str) -> Result<Vec<String>, PatchError> {
    if path.is_empty() {
        return Ok(Vec::new());
    }
    let Some(rest) = path.strip_prefix('/') else {
        return Err(PatchError::malformed(format!(
            "JSON pointer must be empty or start with a \"/\": {path:?}"
        )));
    };
    Ok(rest
        .split('/')
        .map(|t| t.replace("~1", "/").replace("~0", "~"))
        .collect())
}

fn pointer_get<'a>(doc: &'a Value, pointer: &[String]) -> Option<&'a Value> {
    let mut cur = doc;
    for token in pointer {
        cur = match cur {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(cur)
}

fn pointer_parent<'a>(
    doc: &'a mut Value,
    pointer: &[String],
    op: &str,
    path: &str,
) -> Result<&'a mut Value, PatchError> {
    let missing = || {
        PatchError::inapplicable(format!(
            "{op} operation does not apply: doc is missing path: \"{path}\": missing value"
        ))
    };
    let mut cur = doc;
    for token in &pointer[..pointer.len().saturating_sub(1)] {
        cur = match cur {
            Value::Object(map) => map.get_mut(token).ok_or_else(missing)?,
            Value::Array(items) => {
                let i = token.parse::<usize>().map_err(|_| missing())?;
                items.get_mut(i).ok_or_else(missing)?
            }
            _ => return Err(missing()),
        };
    }
    Ok(cur)
}

fn pointer_add(
    doc: &mut Value,
    pointer: &[String],
    value: Value,
    path: &str,
) -> Result<(), PatchError> {
    let Some(last) = pointer.last() else {
        *doc = value;
        return Ok(());
    };
    let parent = pointer_parent(doc, pointer, "add", path)?;
    match parent {
        Value::Object(map) => {
            map.insert(last.clone(), value);
            Ok(())
        }
        Value::Array(items) => {
            let index = if last == "-" {
                items.len()
            } else {
                last.parse::<usize>().map_err(|_| {
                    PatchError::inapplicable(format!(
                        "add operation does not apply: invalid array index {last:?} at {path}"
                    ))
                })?
            };
            if index > items.len() {
                return Err(PatchError::inapplicable(format!(
                    "add operation does not apply: index out of bounds: {index} at {path}"
                )));
            }
            items.insert(index, value);
            Ok(())
        }
        _ => Err(PatchError::inapplicable(format!(
            "add operation does not apply: doc is missing path: \"{path}\": missing value"
        ))),
    }
}

fn pointer_remove(
    doc: &mut Value,
    pointer: &[String],
    op: &str,
    path: &str,
) -> Result<Value, PatchError> {
    let missing = || {
        PatchError::inapplicable(format!(
            "{op} operation does not apply: doc is missing key: {path}: missing value"
        ))
    };
    let Some(last) = pointer.last() else {
        return Ok(std::mem::take(doc));
    };
    match pointer_parent(doc, pointer, op, path)? {
        Value::Object(map) => map.shift_remove(last).ok_or_else(missing),
        Value::Array(items) => {
            let i = last.parse::<usize>().map_err(|_| missing())?;
            if i >= items.len() {
                return Err(missing());
            }
            Ok(items.remove(i))
        }
        _ => Err(missing()),
    }
}

// ---------------------------------------------------------------------------------------------
// Strategic merge patch
// ---------------------------------------------------------------------------------------------

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_FROM_PRIMITIVE_LIST: &str = "$deleteFromPrimitiveList/";
const SET_ELEMENT_ORDER: &str = "$setElementOrder/";

/// Applies a strategic merge patch to `original` as kube-apiserver does for `PATCH` with
/// `application/strategic-merge-patch+json`.
pub fn strategic_merge_patch(
    original: &Value,
    patch: &Value,
    schema: &dyn Schema,
) -> Result<Value, PatchError> {
    let (Value::Object(original), Value::Object(patch)) = (original, patch) else {
        return Err(PatchError::malformed("invalid JSON document"));
    };
    let mut path = Vec::new();
    merge_map(original.clone(), patch.clone(), &mut path, schema).map(Value::Object)
}

fn merge_map(
    mut original: Map<String, Value>,
    mut patch: Map<String, Value>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Map<String, Value>, PatchError> {
    if let Some(directive) = patch.get(DIRECTIVE) {
        return match directive.as_str() {
            Some("replace") => {
                patch.shift_remove(DIRECTIVE);
                Ok(patch)
            }
            Some("delete") => Ok(Map::new()),
            _ => Err(PatchError::malformed(format!(
                "Unknown patch type: {directive} in map: {}",
                Value::Object(patch.clone())
            ))),
        };
    }
    apply_retain_keys(&mut original, &mut patch)?;
    merge_set_element_orders(&mut original, &mut patch, path, schema)?;
    for (key, patch_value) in patch {
        let (key, delete_list) = match key.strip_prefix(DELETE_FROM_PRIMITIVE_LIST) {
            Some(rest) => (rest.to_string(), true),
            None => (key, false),
        };
        if patch_value.is_null() {
            original.shift_remove(&key);
            continue;
        }
        let same_type = original
            .get(&key)
            .is_some_and(|o| json_type(o) == json_type(&patch_value));
        if !same_type {
            if !delete_list {
                let mut value = patch_value;
                discard_nulls(&mut value);
                match remove_directives(value) {
                    Some(v) => {
                        original.insert(key, v);
                    }
                    None => {
                        original.shift_remove(&key);
                    }
                }
            }
            continue;
        }
        path.push(key.clone());
        let meta = schema.field(path);
        let Some(current) = original.get_mut(&key).map(std::mem::take) else {
            path.pop();
            continue;
        };
        let merged = match (current, patch_value) {
            (Value::Object(current), Value::Object(patch_value)) => {
                if meta.strategy == Strategy::Replace {
                    Some(Value::Object(patch_value))
                } else {
                    Some(Value::Object(merge_map(
                        current,
                        patch_value,
                        path,
                        schema,
                    )?))
                }
            }
            (Value::Array(current), Value::Array(patch_value)) => {
                if meta.strategy == Strategy::Merge {
                    Some(Value::Array(merge_list(
                        current,
                        patch_value,
                        meta.merge_key,
                        delete_list,
                        path,
                        schema,
                    )?))
                } else {
                    Some(Value::Array(patch_value))
                }
            }
            (_, patch_value) => remove_directives(patch_value),
        };
        path.pop();
        match merged {
            Some(merged) => {
                original.insert(key, merged);
            }
            None => {
                original.shift_remove(&key);
            }
        }
    }
    Ok(original)
}

fn json_type(value: &Value) -> u8 {
    match value {
        Value::Null => 0,
        Value::Bool(_) => 1,
        Value::Number(_) => 2,
        Value::String(_) => 3,
        Value::Array(_) => 4,
        Value::Object(_) => 5,
    }
}

/// `$retainKeys`: keys of the original missing from the list are cleared; every key the patch
/// sets must be in the list.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<(), PatchError> {
    let Some(retain) = patch.shift_remove(RETAIN_KEYS) else {
        return Ok(());
    };
    let bad = || PatchError::malformed("invalid patch format of retainKeys");
    let Value::Array(retain) = retain else {
        return Err(bad());
    };
    let keep: Vec<&str> = retain.iter().filter_map(Value::as_str).collect();
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST)
            || k.starts_with(SET_ELEMENT_ORDER)
        {
            continue;
        }
        if !keep.contains(&k.as_str()) {
            return Err(bad());
        }
    }
    original.retain(|k, _| keep.contains(&k.as_str()));
    Ok(())
}

/// `$setElementOrder/<field>`: merges that field's list now and orders the result as the
/// directive says (directive order, then patch order, then live order).
fn merge_set_element_orders(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
    path: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<(), PatchError> {
    let keys: Vec<String> = patch
        .keys()
        .filter(|k| k.starts_with(SET_ELEMENT_ORDER))
        .cloned()
        .collect();
    for directive_key in keys {
        let Some(order) = patch.shift_remove(&directive_key) else {
            continue;
        };
        let Value::Array(order) = order else {
            return Err(PatchError::malformed(
                "invalid patch format of setElementOrder list",
            ));
        };
        let field = directive_key[SET_ELEMENT_ORDER.len()..].to_string();
        if field.is_empty() {
            return Err(PatchError::malformed(
                "invalid patch format of setElementOrder list",
            ));
        }
        let original_list = match original.get(&field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => {
                return Err(PatchError::malformed(format!(
                    "expected a list at {field}, got {other}"
                )));
            }
        };
        let patch_list = match patch.get(&field) {
            None => None,
            Some(Value::Array(items)) => Some(items.clone()),
            Some(other) => {
                return Err(PatchError::malformed(format!(
                    "expected a list at {field}, got {other}"
                )));
            }
        };
        path.push(field.clone());
        let meta = schema.field(path);
        let merge_key = meta.merge_key;
        validate_set_order(patch_list.as_deref().unwrap_or(&[]), &order, merge_key)?;
        let merged = match (&original_list, &patch_list) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => p.clone(),
            (Some(o), Some(p)) => {
                if meta.strategy == Strategy::Merge {
                    merge_list(o.clone(), p.clone(), merge_key, false, path, schema)?
                } else {
                    p.clone()
                }
            }
            (None, None) => {
                path.pop();
                continue;
            }
        };
        path.pop();
        let (in_order, server_only) = partition(&merged, &order, merge_key)?;
        let both = normalize_order(
            in_order,
            server_only,
            &order,
            original_list.as_deref().unwrap_or(&[]),
            merge_key,
        )?;
        original.insert(field.clone(), Value::Array(both));
        patch.shift_remove(&field);
    }
    Ok(())
}

fn validate_set_order(
    patch_list: &[Value],
    order: &[Value],
    merge_key: Option<&str>,
) -> Result<(), PatchError> {
    if patch_list.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch_list
        .iter()
        .filter(|v| merge_key.is_none() || v.get(DIRECTIVE).is_none())
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        if items[pi].get(DIRECTIVE).is_some() {
            pi += 1;
            continue;
        }
        if same_element(items[pi], &order[oi], merge_key)? {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(PatchError::malformed(format!(
            "The order in patch list:\n{}\n doesn't match $setElementOrder list:\n{}\n",
            Value::Array(patch_list.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

fn same_element(a: &Value, b: &Value, merge_key: Option<&str>) -> Result<bool, PatchError> {
    match merge_key {
        None => Ok(a == b),
        Some(key) => Ok(key_of(a, key)? == key_of(b, key)?),
    }
}

fn key_of<'a>(item: &'a Value, key: &str) -> Result<&'a Value, PatchError> {
    match item {
        Value::Object(map) => map.get(key).ok_or_else(|| no_merge_key(item, key)),
        other => Err(PatchError::malformed(format!(
            "expected a map, but got {other}"
        ))),
    }
}

fn no_merge_key(item: &Value, key: &str) -> PatchError {
    PatchError::malformed(format!(
        "map: {item} does not contain declared merge key: {key}"
    ))
}

/// Merges two lists of a `patchStrategy: merge` field.
fn merge_list(
    original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: Option<&str>,
    delete_list: bool,
    path: &mut Vec<String>,
    schema: &dyn Schema,
) -> Result<Vec<Value>, PatchError> {
    if original.is_empty() && patch.is_empty() {
        return Ok(original);
    }
    let mut kinds = original.iter().chain(patch.iter()).map(json_type);
    let first = kinds.next().unwrap_or(0);
    if first == 4 {
        return Err(PatchError::malformed("lists of lists are not supported"));
    }
    if kinds.any(|k| k != first) {
        return Err(PatchError::malformed(format!(
            "list element types are not identical: {} {}",
            Value::Array(original.clone()),
            Value::Array(patch.clone())
        )));
    }
    if first != 5 {
        if delete_list {
            return Ok(original
                .into_iter()
                .filter(|v| !patch.contains(v))
                .collect());
        }
        let mut merged: Vec<Value> = Vec::with_capacity(original.len() + patch.len());
        for v in original.iter().chain(patch.iter()) {
            if !merged.contains(v) {
                merged.push(v.clone());
            }
        }
        let (in_patch, server_only) = partition(&merged, &patch, None)?;
        return normalize_order(in_patch, server_only, &patch, &original, None);
    }
    let Some(key) = merge_key else {
        return Err(PatchError::malformed(
            "cannot merge lists without merge key for type map",
        ));
    };
    // Special elements: `$patch: delete` removes matching entries, `$patch: replace` replaces
    // the list with the patch's other elements.
    let mut original = original;
    let mut plain = Vec::with_capacity(patch.len());
    let mut replace = false;
    for item in patch {
        match item.get(DIRECTIVE) {
            None => plain.push(item),
            Some(directive) => match directive.as_str() {
                Some("delete") => {
                    // One directive removes one matching entry (duplicates need one each).
                    let value = key_of(&item, key)?;
                    if let Some(at) = original.iter().position(|o| o.get(key) == Some(value)) {
                        original.remove(at);
                    }
                }
                Some("replace") => replace = true,
                Some("merge") => {
                    return Err(PatchError::malformed(
                        "merging lists cannot yet be specified in the patch",
                    ));
                }
                _ => {
                    return Err(PatchError::malformed(format!(
                        "Unknown patch type: {directive} in map: {item}"
                    )));
                }
            },
        }
    }
    let patch = if replace {
        original = plain;
        Vec::new()
    } else {
        plain
    };
    let mut merged = original.clone();
    for item in &patch {
        let value = key_of(item, key)?;
        match merged.iter().position(|o| o.get(key) == Some(value)) {
            Some(at) => {
                let (Value::Object(current), Value::Object(item)) =
                    (std::mem::take(&mut merged[at]), item.clone())
                else {
                    return Err(PatchError::malformed("expected maps in a merging list"));
                };
                merged[at] = Value::Object(merge_map(current, item, path, schema)?);
            }
            None => {
                let mut item = item.clone();
                discard_nulls(&mut item);
                if let Some(item) = remove_directives(item) {
                    merged.push(item);
                }
            }
        }
    }
    let (in_patch, server_only) = partition(&merged, &patch, Some(key))?;
    normalize_order(in_patch, server_only, &patch, &original, Some(key))
}

/// Splits `items` into those present in `by` (by merge key or value) and the rest.
fn partition(
    items: &[Value],
    by: &[Value],
    merge_key: Option<&str>,
) -> Result<(Vec<Value>, Vec<Value>), PatchError> {
    let mut present = Vec::new();
    let mut rest = Vec::new();
    for item in items {
        let found = match merge_key {
            None => by.contains(item),
            Some(key) => {
                let value = key_of(item, key)?;
                by.iter().any(|b| b.get(key) == Some(value))
            }
        };
        if found {
            present.push(item.clone());
        } else {
            rest.push(item.clone());
        }
    }
    Ok((present, rest))
}

fn position(list: &[Value], item: &Value, merge_key: Option<&str>) -> Option<usize> {
    match merge_key {
        None => list.iter().position(|v| v == item),
        Some(key) => {
            let value = item.get(key)?;
            list.iter().position(|v| v.get(key) == Some(value))
        }
    }
}

/// Sorts the patch's items by `patch_order` and the server-only items by `server_order`, then
/// interleaves them keeping both relative orders (upstream's `normalizeElementOrder`).
fn normalize_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: Option<&str>,
) -> Result<Vec<Value>, PatchError> {
    let sort = |mut items: Vec<Value>, order: &[Value]| -> Result<Vec<Value>, PatchError> {
        let mut deletes = Vec::new();
        if let Some(key) = merge_key {
            for item in items.iter().chain(order.iter()) {
                key_of(item, key)?;
            }
            let (keep, del): (Vec<Value>, Vec<Value>) = items
                .into_iter()
                .partition(|v| v.get(DIRECTIVE).and_then(Value::as_str) != Some("delete"));
            items = keep;
            deletes = del;
        }
        items.sort_by_key(|v| position(order, v, merge_key).unwrap_or(usize::MAX));
        items.extend(deletes);
        Ok(items)
    };
    let right = sort(patch_items, patch_order)?;
    let left = sort(server_only, server_order)?;
    let mut out = Vec::with_capacity(left.len() + right.len());
    let (mut i, mut j) = (0, 0);
    while i < left.len() || j < right.len() {
        if i >= left.len() {
            out.push(right[j].clone());
            j += 1;
        } else if j >= right.len() {
            out.push(left[i].clone());
            i += 1;
        } else {
            let li = position(server_order, &left[i], merge_key);
            let ri = position(server_order, &right[j], merge_key);
            if let (Some(li), Some(ri)) = (li, ri)
                && li < ri
            {
                out.push(left[i].clone());
                i += 1;
            } else {
                out.push(right[j].clone());
                j += 1;
            }
        }
    }
    Ok(out)
}

/// Drops null map values everywhere (a null in a value that is new has nothing to delete).
fn discard_nulls(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(discard_nulls);
        }
        Value::Array(items) => items.iter_mut().for_each(discard_nulls),
        _ => {}
    }
}

/// Strips directives from a value that is taken as is; `None` when the value itself is a
/// directive element (`{"$patch": ...}`) and must not be kept.
fn remove_directives(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE) {
                return None;
            }
            let mut out = Map::new();
            for (k, v) in map {
                if k.starts_with('$') {
                    continue;
                }
                if let Some(v) = remove_directives(v) {
                    out.insert(k, v);
                }
            }
            Some(Value::Object(out))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_follows_rfc_7386() {
        // The RFC's appendix A examples.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (target, patch, want) in cases {
            let mut got = target.clone();
            merge_patch(&mut got, &patch);
            assert_eq!(got, want, "{target} + {patch}");
        }
    }

    #[test]
    fn json_patch_follows_rfc_6902() {
        let doc = json!({"foo": "bar", "baz": ["a", "c"], "m": {"x": 1}});
        let ok = [
            (
                json!([{"op": "add", "path": "/qux", "value": 1}]),
                json!({"foo": "bar", "baz": ["a", "c"], "m": {"x": 1}, "qux": 1}),
            ),
            (
                json!([{"op": "add", "path": "/baz/1", "value": "b"}]),
                json!({"foo": "bar", "baz": ["a", "b", "c"], "m": {"x": 1}}),
            ),
            (
                json!([{"op": "add", "path": "/baz/-", "value": "d"}]),
                json!({"foo": "bar", "baz": ["a", "c", "d"], "m": {"x": 1}}),
            ),
            (
                json!([{"op": "remove", "path": "/baz/0"}]),
                json!({"foo": "bar", "baz": ["c"], "m": {"x": 1}}),
            ),
            (
                json!([{"op": "replace", "path": "/foo", "value": "q"}]),
                json!({"foo": "q", "baz": ["a", "c"], "m": {"x": 1}}),
            ),
            (
                json!([{"op": "move", "from": "/m/x", "path": "/y"}]),
                json!({"foo": "bar", "baz": ["a", "c"], "m": {}, "y": 1}),
            ),
            (
                json!([{"op": "copy", "from": "/foo", "path": "/m/foo"}]),
                json!({"foo": "bar", "baz": ["a", "c"], "m": {"x": 1, "foo": "bar"}}),
            ),
            (
                json!([{"op": "test", "path": "/baz", "value": ["a", "c"]}, {"op": "remove", "path": "/m"}]),
                json!({"foo": "bar", "baz": ["a", "c"]}),
            ),
            (
                json!([{"op": "add", "path": "/a~1b", "value": 1}]),
                json!({"foo": "bar", "baz": ["a", "c"], "m": {"x": 1}, "a/b": 1}),
            ),
        ];
        for (patch, want) in ok {
            assert_eq!(json_patch(&doc, &patch).as_ref(), Ok(&want), "{patch}");
        }
        let bad = [
            json!([{"op": "remove", "path": "/nope"}]),
            json!([{"op": "replace", "path": "/nope", "value": 1}]),
            json!([{"op": "add", "path": "/baz/9", "value": 1}]),
            json!([{"op": "add", "path": "/no/such", "value": 1}]),
            json!([{"op": "test", "path": "/foo", "value": "baz"}]),
            json!([{"op": "move", "from": "/m", "path": "/m/inner"}]),
        ];
        for patch in bad {
            let err = json_patch(&doc, &patch).expect_err("fails");
            assert!(!err.malformed, "{patch}: {err}");
        }
        for patch in [
            json!({"op": "add"}),
            json!([{"op": "frob", "path": "/a"}]),
            json!([{"op": "add", "path": "x", "value": 1}]),
        ] {
            let err = json_patch(&doc, &patch).expect_err("fails");
            assert!(err.malformed, "{patch}: {err}");
        }
    }

    #[test]
    fn pod_schema_knows_upstream_tags() {
        let s = KindSchema(Kind::Pod);
        let f = |p: &str| s.field(&p.split('.').map(str::to_string).collect::<Vec<_>>());
        assert_eq!(f("spec.containers").merge_key, Some("name"));
        assert_eq!(f("spec.initContainers.env").merge_key, Some("name"));
        assert_eq!(f("spec.containers.ports").merge_key, Some("containerPort"));
        assert_eq!(
            f("spec.containers.ports").list_type,
            ListType::Map(&["containerPort", "protocol"])
        );
        assert_eq!(f("spec.volumes").merge_key, Some("name"));
        assert_eq!(f("spec.tolerations").strategy, Strategy::Default);
        assert_eq!(f("status.conditions").merge_key, Some("type"));
        assert_eq!(f("metadata.ownerReferences").merge_key, Some("uid"));
        assert_eq!(f("metadata.finalizers").list_type, ListType::Set);
        assert!(f("metadata.labels").free_form_map);
        let claim = KindSchema(Kind::ResourceClaim);
        assert_eq!(
            claim
                .field(&["status".into(), "reservedFor".into()])
                .merge_key,
            Some("uid")
        );
    }

    #[test]
    fn type_facts_agree_with_path_facts() {
        let pod = KindSchema(Kind::Pod);
        let path = |p: &str| p.split('.').map(str::to_string).collect::<Vec<_>>();
        for (type_name, field, at) in [
            ("ObjectMeta", "ownerReferences", "metadata.ownerReferences"),
            ("ObjectMeta", "finalizers", "metadata.finalizers"),
            ("PodSpec", "containers", "spec.containers"),
            ("PodSpec", "volumes", "spec.volumes"),
            ("PodSpec", "resourceClaims", "spec.resourceClaims"),
            ("Container", "env", "spec.initContainers.env"),
            ("Container", "ports", "spec.containers.ports"),
            (
                "ResourceRequirements",
                "claims",
                "spec.containers.resources.claims",
            ),
            ("PodStatus", "conditions", "status.conditions"),
            (
                "PodStatus",
                "resourceClaimStatuses",
                "status.resourceClaimStatuses",
            ),
        ] {
            assert_eq!(
                type_field(type_name, field),
                Some(pod.field(&path(at))),
                "{at}"
            );
        }
        assert_eq!(type_field("PodSpec", "tolerations"), None);
        let ext = openapi_extensions(&pod.field(&path("spec.volumes")));
        assert_eq!(
            ext,
            vec![
                ("x-kubernetes-patch-strategy", json!("merge,retainKeys")),
                ("x-kubernetes-patch-merge-key", json!("name")),
                ("x-kubernetes-list-type", json!("map")),
                ("x-kubernetes-list-map-keys", json!(["name"])),
            ]
        );
    }

    #[test]
    fn strategic_merge_patch_on_a_pod() {
        let live = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"a": "1", "b": "2"}, "finalizers": ["x", "y"]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:1", "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                    {"name": "side", "image": "side:1"}
                ],
                "tolerations": [{"key": "k1"}, {"key": "k2"}]
            }
        });
        let patch = json!({
            "metadata": {"labels": {"b": null, "c": "3"}, "$deleteFromPrimitiveList/finalizers": ["x"]},
            "spec": {
                "containers": [
                    {"name": "app", "image": "app:2", "env": [{"name": "B", "$patch": "delete"}, {"name": "C", "value": "3"}]},
                    {"name": "new", "image": "new:1"}
                ],
                "tolerations": [{"key": "k3"}]
            }
        });
        let got = strategic_merge_patch(&live, &patch, &KindSchema(Kind::Pod)).expect("applies");
        assert_eq!(got["metadata"]["labels"], json!({"a": "1", "c": "3"}));
        assert_eq!(got["metadata"]["finalizers"], json!(["y"]));
        // Without `$setElementOrder` the patch's items come first where the live order does not
        // say otherwise, as upstream.
        assert_eq!(
            got["spec"]["containers"],
            json!([
                {"name": "app", "image": "app:2", "env": [{"name": "C", "value": "3"}, {"name": "A", "value": "1"}]},
                {"name": "new", "image": "new:1"},
                {"name": "side", "image": "side:1"}
            ])
        );
        // kubectl sends `$setElementOrder` to keep its order.
        let ordered = json!({"spec": {
            "$setElementOrder/containers": [{"name": "app"}, {"name": "side"}, {"name": "new"}],
            "containers": [{"name": "new", "image": "new:1"}]
        }});
        let reordered =
            strategic_merge_patch(&live, &ordered, &KindSchema(Kind::Pod)).expect("applies");
        let names: Vec<&str> = reordered["spec"]["containers"]
            .as_array()
            .map(|a| a.iter().filter_map(|c| c["name"].as_str()).collect())
            .unwrap_or_default();
        assert_eq!(names, ["app", "side", "new"]);
        // Tolerations have no patch strategy upstream: the list is replaced.
        assert_eq!(got["spec"]["tolerations"], json!([{"key": "k3"}]));
    }

    /// Upstream's test struct `MergeItem`, recursively.
    struct MergeItemSchema;

    impl Schema for MergeItemSchema {
        fn field(&self, path: &[String]) -> FieldMeta {
            match path.last().map(String::as_str) {
                Some("mergingList" | "retainKeysMergingList" | "mergeItemPtr") => {
                    FieldMeta::merge("name", &["name"])
                }
                Some("mergingIntList") => FieldMeta::merge_set(),
                Some("replacingItem") => FieldMeta {
                    strategy: Strategy::Replace,
                    ..FieldMeta::PLAIN
                },
                _ => FieldMeta::PLAIN,
            }
        }
    }

    #[test]
    fn upstream_strategic_merge_patch_cases() {
        let data: Value =
            serde_json::from_str(include_str!("../testdata/strategic_merge_patch.json"))
                .expect("test data parses");
        let cases = data["cases"].as_array().expect("cases");
        assert!(cases.len() >= 100, "{} cases", cases.len());
        let mut failures = Vec::new();
        for case in cases {
            let name = case["description"].as_str().unwrap_or_default();
            let got = strategic_merge_patch(&case["original"], &case["patch"], &MergeItemSchema);
            match (
                got,
                case.get("want"),
                case.get("error").and_then(Value::as_str),
            ) {
                (Ok(got), Some(want), _) if &got == want => {}
                (Err(err), _, Some(want)) if err.message.contains(want) => {}
                (got, want, error) => failures.push(format!(
                    "{name}: got {got:?}, want {want:?} / error {error:?}"
                )),
            }
        }
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn strategic_merge_patch_errors_are_bad_requests() {
        let live = json!({"spec": {"containers": [{"name": "a"}]}});
        let s = KindSchema(Kind::Pod);
        for patch in [
            json!({"spec": {"containers": [{"image": "no-name"}]}}),
            json!({"spec": {"containers": [{"name": "a", "$patch": "merge"}]}}),
            json!({"spec": {"$patch": "frob"}}),
            json!({"spec": {"$retainKeys": "x"}}),
            json!({"spec": {"$retainKeys": ["a"], "b": 1}}),
        ] {
            let err = strategic_merge_patch(&live, &patch, &s).expect_err("fails");
            assert!(err.malformed, "{patch}: {err}");
        }
        assert!(strategic_merge_patch(&json!([]), &json!({}), &s).is_err());
    }
}
