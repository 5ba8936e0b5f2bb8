//! OpenAPI v3 and v2 documents with real schemas, for `kubectl explain` and kubectl's
//! validation.
//!
//! Key design decision: the schemas are read from allot-api's own source at build time
//! (`include_str!`): every `pub struct` becomes an object schema whose properties are its
//! serde field names (camelCase or `rename`), typed from the Rust type (`Option<T>`, `Vec<T>`,
//! `BTreeMap<String, T>`, integers, strings, quantities, nested structs by reference,
//! `string_enum!`s as string enums) and described by the field's doc comment. So the documents
//! describe exactly the fields allot decodes, with allot's own descriptions, and cannot drift
//! from the types. The cost: a tiny Rust parser that only understands the declaration style
//! allot-api uses (one field per line, attributes on their own lines), tested below against the
//! kinds served; descriptions are allot's, not upstream's wording.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::OnceLock;

use serde_json::{Map, Value, json};

use allot_store::Kind;

use crate::resources::{RESOURCES, ResourceInfo};

/// allot-api's type sources, with the OpenAPI name prefix of their definitions.
const SOURCES: &[(&str, &str)] = &[
    (
        "io.k8s.apimachinery.pkg.apis.meta.v1",
        include_str!("../../allot-api/src/meta/v1.rs"),
    ),
    (
        "io.k8s.api.core.v1",
        include_str!("../../allot-api/src/core/v1.rs"),
    ),
    (
        "io.k8s.api.resource.v1",
        include_str!("../../allot-api/src/resource/v1.rs"),
    ),
    (
        "io.k8s.api.resource.v1alpha3",
        include_str!("../../allot-api/src/resource/v1alpha3.rs"),
    ),
    (
        "io.k8s.api.resource.v1beta1",
        include_str!("../../allot-api/src/resource/v1beta1.rs"),
    ),
    (
        "io.k8s.api.scheduling.v1beta1",
        include_str!("../../allot-api/src/scheduling/v1beta1.rs"),
    ),
    (
        "dev.allot.v1alpha1",
        include_str!("../../allot-api/src/allot/v1alpha1.rs"),
    ),
    (
        "io.k8s.api.rbac.v1",
        include_str!("../../allot-api/src/rbac/v1.rs"),
    ),
    (
        "io.k8s.api.coordination.v1",
        include_str!("../../allot-api/src/coordination/v1.rs"),
    ),
    (
        "io.k8s.api.core.v1",
        include_str!("../../allot-api/src/core/v1/volume.rs"),
    ),
    (
        "io.k8s.api.core.v1",
        include_str!("../../allot-api/src/core/v1/service.rs"),
    ),
    (
        "io.k8s.api.core.v1",
        include_str!("../../allot-api/src/core/v1/workload.rs"),
    ),
    (
        "io.k8s.api.apps.v1",
        include_str!("../../allot-api/src/apps/v1.rs"),
    ),
    (
        "io.k8s.api.batch.v1",
        include_str!("../../allot-api/src/batch/v1.rs"),
    ),
    (
        "io.k8s.api.policy.v1",
        include_str!("../../allot-api/src/policy/v1.rs"),
    ),
    (
        "io.k8s.api.storage.v1",
        include_str!("../../allot-api/src/storage/v1.rs"),
    ),
    (
        "io.k8s.api.scheduling.v1",
        include_str!("../../allot-api/src/scheduling/v1.rs"),
    ),
    (
        "io.k8s.api.core.v1",
        include_str!("../../allot-api/src/core/v1/config.rs"),
    ),
    (
        "io.k8s.api.discovery.v1",
        include_str!("../../allot-api/src/discovery/v1.rs"),
    ),
    (
        "io.k8s.api.autoscaling.v2",
        include_str!("../../allot-api/src/autoscaling/v2.rs"),
    ),
    (
        "io.k8s.api.certificates.v1",
        include_str!("../../allot-api/src/certificates/v1.rs"),
    ),
    (
        "io.k8s.api.admissionregistration.v1",
        include_str!("../../allot-api/src/admissionregistration/v1.rs"),
    ),
    (
        "io.k8s.api.networking.v1",
        include_str!("../../allot-api/src/networking/v1.rs"),
    ),
];

/// One parsed declaration.
#[derive(Debug, Clone, PartialEq)]
enum Decl {
    /// A struct: description and fields `(json name, Rust type, description)`.
    Struct {
        doc: String,
        fields: Vec<(String, String, String)>,
    },
    /// A string enum: description and values.
    Enum { doc: String, values: Vec<String> },
    /// A type alias.
    Alias(String),
}

/// Declarations by `(module, name)`.
type Decls = BTreeMap<(String, String), Decl>;

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.trim_start_matches("r#").chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

/// The value of `key = "..."` inside an attribute.
fn attr_value(attrs: &str, key: &str) -> Option<String> {
    let at = attrs.find(&format!("{key} = \""))?;
    let rest = &attrs[at + key.len() + 4..];
    rest.split('"').next().map(str::to_string)
}

/// Whether an attribute list has a bare word (`flatten`, `skip`).
fn attr_flag(attrs: &str, word: &str) -> bool {
    attrs
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .any(|w| w == word)
}

/// Parses one source file's declarations.
fn parse(module: &str, text: &str, out: &mut Decls) {
    let mut doc: Vec<String> = Vec::new();
    let mut attrs = String::new();
    let mut depth = 0i32; // brackets of an attribute being read
    let mut current: Option<(String, Decl)> = None;
    let mut in_enum_macro = false;
    for line in text.lines() {
        let t = line.trim();
        if depth > 0 {
            attrs.push_str(t);
            depth += bracket_balance(t);
            continue;
        }
        if let Some(d) = t.strip_prefix("///") {
            doc.push(d.trim().to_string());
            continue;
        }
        if t.starts_with("#[") {
            attrs.push_str(t);
            depth = bracket_balance(t);
            continue;
        }
        if t.starts_with("string_enum!") {
            in_enum_macro = true;
            doc.clear();
            attrs.clear();
            continue;
        }
        let flush = |doc: &mut Vec<String>, attrs: &mut String| {
            let d = doc.join(" ");
            doc.clear();
            attrs.clear();
            d
        };
        match &mut current {
            None => {
                if let Some(rest) = t.strip_prefix("pub struct ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    let d = flush(&mut doc, &mut attrs);
                    if rest.trim_end().ends_with('{') {
                        current = Some((
                            name,
                            Decl::Struct {
                                doc: d,
                                fields: Vec::new(),
                            },
                        ));
                    }
                } else if let Some(rest) = t.strip_prefix("pub enum ") {
                    let name: String = rest
                        .chars()
                        .take_while(|c| c.is_alphanumeric() || *c == '_')
                        .collect();
                    let d = flush(&mut doc, &mut attrs);
                    current = Some((
                        name,
                        Decl::Enum {
                            doc: d,
                            values: Vec::new(),
                        },
                    ));
                } else if let Some(rest) = t.strip_prefix("pub type ") {
                    if let Some((name, target)) = rest.trim_end_matches(';').split_once('=') {
                        out.insert(
                            (module.to_string(), name.trim().to_string()),
                            Decl::Alias(target.trim().to_string()),
                        );
                    }
                    flush(&mut doc, &mut attrs);
                } else if !t.is_empty() {
                    flush(&mut doc, &mut attrs);
                }
            }
            Some((name, decl)) => {
                if t == "}" || t == "}," {
                    let (name, decl) = (name.clone(), decl.clone());
                    out.insert((module.to_string(), name), decl);
                    current = None;
                    if in_enum_macro {
                        in_enum_macro = false;
                    }
                    doc.clear();
                    attrs.clear();
                    continue;
                }
                match decl {
                    Decl::Struct { fields, .. } => {
                        if let Some(rest) = t.strip_prefix("pub ")
                            && let Some((field, ty)) = rest.split_once(':')
                        {
                            let skip = attr_flag(&attrs, "skip") || attr_flag(&attrs, "flatten");
                            let json_name =
                                attr_value(&attrs, "rename").unwrap_or_else(|| camel(field.trim()));
                            let d = flush(&mut doc, &mut attrs);
                            if !skip {
                                fields.push((
                                    json_name,
                                    ty.trim().trim_end_matches(',').to_string(),
                                    d,
                                ));
                            }
                        } else if !t.is_empty() {
                            flush(&mut doc, &mut attrs);
                        }
                    }
                    Decl::Enum { values, .. } => {
                        if let Some((_, text)) = t.split_once("= \"") {
                            values.push(text.split('"').next().unwrap_or_default().to_string());
                        } else if let Some(text) = attr_value(&attrs, "rename")
                            && !t.is_empty()
                        {
                            values.push(text);
                        }
                        if !t.is_empty() {
                            doc.clear();
                            attrs.clear();
                        }
                    }
                    Decl::Alias(_) => {}
                }
            }
        }
    }
}

fn bracket_balance(text: &str) -> i32 {
    text.chars().fold(0, |n, c| match c {
        '[' => n + 1,
        ']' => n - 1,
        _ => n,
    })
}

/// Every declaration of allot-api's served modules.
fn decls() -> &'static Decls {
    static DECLS: OnceLock<Decls> = OnceLock::new();
    DECLS.get_or_init(|| {
        let mut out = Decls::new();
        for (module, text) in SOURCES {
            parse(module, text, &mut out);
        }
        out
    })
}

/// Splits `Outer<Inner>` into `("Outer", "Inner")`.
fn generic(ty: &str) -> Option<(&str, &str)> {
    let open = ty.find('<')?;
    let inner = ty.get(open + 1..ty.len().checked_sub(1)?)?;
    ty.ends_with('>').then_some((&ty[..open], inner))
}

/// Where a type name is declared: the same module first, then any.
fn resolve(module: &str, name: &str) -> Option<(String, &'static Decl)> {
    let decls = decls();
    if let Some(d) = decls.get(&(module.to_string(), name.to_string())) {
        return Some((module.to_string(), d));
    }
    SOURCES.iter().find_map(|(m, _)| {
        decls
            .get(&(m.to_string(), name.to_string()))
            .map(|d| (m.to_string(), d))
    })
}

/// Which reference syntax: OpenAPI v3 (`#/components/schemas/`) or v2 (`#/definitions/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dialect {
    V3,
    V2,
}

impl Dialect {
    fn reference(self, name: &str) -> Value {
        match self {
            Dialect::V3 => json!({ "$ref": format!("#/components/schemas/{name}") }),
            Dialect::V2 => json!({ "$ref": format!("#/definitions/{name}") }),
        }
    }
}

/// The schema of a Rust type; named types it refers to are added to `wanted`.
fn type_schema(module: &str, ty: &str, dialect: Dialect, wanted: &mut BTreeSet<String>) -> Value {
    let ty = ty.trim();
    if let Some((outer, inner)) = generic(ty) {
        let outer = outer.rsplit("::").next().unwrap_or(outer);
        return match outer {
            "Option" | "Box" => type_schema(module, inner, dialect, wanted),
            "Vec" | "BTreeSet" => {
                json!({"type": "array", "items": type_schema(module, inner, dialect, wanted)})
            }
            "BTreeMap" | "HashMap" => {
                let value = inner.split_once(',').map_or(inner, |(_, v)| v);
                json!({"type": "object", "additionalProperties": type_schema(module, value, dialect, wanted)})
            }
            _ => json!({"type": "object"}),
        };
    }
    let name = ty.rsplit("::").next().unwrap_or(ty);
    match name {
        "String" | "str" => return json!({"type": "string"}),
        "bool" => return json!({"type": "boolean"}),
        "i32" | "u32" | "u16" | "u8" | "i16" | "i8" => {
            return json!({"type": "integer", "format": "int32"});
        }
        "i64" | "u64" | "usize" | "isize" => return json!({"type": "integer", "format": "int64"}),
        "f64" | "f32" => return json!({"type": "number", "format": "double"}),
        "Quantity" => {
            return json!({"type": "string", "description": "A quantity, e.g. 1, 500m, 8Gi."});
        }
        "IntOrString" => {
            return json!({"type": "string", "format": "int-or-string", "x-kubernetes-int-or-string": true});
        }
        "Value" | "Opaque" => {
            return json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true});
        }
        "Time" | "MicroTime" => return json!({"type": "string", "format": "date-time"}),
        _ => {}
    }
    match resolve(module, name) {
        Some((m, Decl::Alias(target))) => type_schema(&m, target, dialect, wanted),
        Some((m, _)) => {
            let full = format!("{m}.{name}");
            wanted.insert(full.clone());
            dialect.reference(&full)
        }
        None => json!({"type": "object"}),
    }
}

/// The schema of one named declaration (`module.Name`).
fn named_schema(full: &str, dialect: Dialect, wanted: &mut BTreeSet<String>) -> Option<Value> {
    if full == EVENTS_V1 {
        // The core/v1 Event's schema under events.k8s.io/v1's field names.
        let mut schema = named_schema("io.k8s.api.core.v1.Event", dialect, wanted)?;
        if let Some(properties) = schema.get_mut("properties").and_then(Value::as_object_mut) {
            let core = std::mem::take(properties);
            let renamed = crate::events_v1::from_core(&Value::Object(core));
            if let Value::Object(map) = renamed {
                *properties = map;
            }
            properties.remove("apiVersion");
            properties.insert(
                "apiVersion".into(),
                json!({"type": "string", "description": "APIVersion defines the versioned schema of this representation of an object."}),
            );
        }
        return Some(schema);
    }
    let (module, name) = full.rsplit_once('.')?;
    match decls().get(&(module.to_string(), name.to_string()))? {
        Decl::Struct { doc, fields } => {
            let mut properties = Map::new();
            for (json_name, ty, description) in fields {
                let schema = type_schema(module, ty, dialect, wanted);
                let mut property = if schema.get("$ref").is_some() && dialect == Dialect::V3 {
                    json!({"allOf": [schema]})
                } else {
                    schema
                };
                if !description.is_empty() {
                    property["description"] = Value::String(description.clone());
                }
                // The patch facts kubectl's client-side apply reads (merge keys, list types).
                if let Some(meta) = crate::patch::type_field(name, json_name) {
                    for (key, value) in crate::patch::openapi_extensions(&meta) {
                        property[key] = value;
                    }
                }
                properties.insert(json_name.clone(), property);
            }
            Some(json!({"description": doc, "type": "object", "properties": properties}))
        }
        Decl::Enum { doc, values } if !values.is_empty() => {
            Some(json!({"description": doc, "type": "string", "enum": values}))
        }
        Decl::Enum { doc, .. } => Some(json!({"description": doc, "type": "object"})),
        Decl::Alias(target) => Some(type_schema(module, target, dialect, wanted)),
    }
}

/// The definition name of a served kind's type.
/// The definition of events.k8s.io/v1 Event (made from core/v1's, see `named_schema`).
const EVENTS_V1: &str = "io.k8s.api.events.v1.Event";

fn kind_definition(info: &ResourceInfo) -> Option<String> {
    let kind = info.kind.name();
    if info.group == "events.k8s.io" {
        return Some(EVENTS_V1.to_string());
    }
    let module = match info.group {
        "" => "io.k8s.api.core.v1",
        "resource.k8s.io" if kind == "ResourcePoolStatusRequest" => "io.k8s.api.resource.v1alpha3",
        // v1beta1's own shapes; its DeviceClass and every v1beta2 kind have v1's.
        "resource.k8s.io" if info.version == "v1beta1" && kind != "DeviceClass" => {
            "io.k8s.api.resource.v1beta1"
        }
        "resource.k8s.io" => "io.k8s.api.resource.v1",
        "scheduling.k8s.io" if info.version == "v1" => "io.k8s.api.scheduling.v1",
        "scheduling.k8s.io" => "io.k8s.api.scheduling.v1beta1",
        "apps" => "io.k8s.api.apps.v1",
        "batch" => "io.k8s.api.batch.v1",
        "policy" => "io.k8s.api.policy.v1",
        "storage.k8s.io" => "io.k8s.api.storage.v1",
        "discovery.k8s.io" => "io.k8s.api.discovery.v1",
        "autoscaling" => "io.k8s.api.autoscaling.v2",
        "certificates.k8s.io" => "io.k8s.api.certificates.v1",
        "admissionregistration.k8s.io" => "io.k8s.api.admissionregistration.v1",
        "networking.k8s.io" => "io.k8s.api.networking.v1",
        "allot.dev" => "dev.allot.v1alpha1",
        "rbac.authorization.k8s.io" => "io.k8s.api.rbac.v1",
        "coordination.k8s.io" => "io.k8s.api.coordination.v1",
        _ => return None,
    };
    let full = format!("{module}.{kind}");
    decls()
        .contains_key(&(module.to_string(), kind.to_string()))
        .then_some(full)
}

/// Definitions for `resources` and everything they refer to, with each kind's
/// `x-kubernetes-group-version-kind` naming the group versions it is served at.
fn definitions(resources: &[&ResourceInfo], dialect: Dialect) -> Map<String, Value> {
    let mut gvks: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for info in resources {
        if let Some(full) = kind_definition(info) {
            gvks.entry(full).or_default().push(
                json!({"group": info.group, "version": info.version, "kind": info.kind.name()}),
            );
        }
    }
    let mut wanted: BTreeSet<String> = gvks.keys().cloned().collect();
    let mut out = Map::new();
    while let Some(full) = wanted.pop_first() {
        if out.contains_key(&full) {
            continue;
        }
        let mut more = BTreeSet::new();
        if let Some(mut schema) = named_schema(&full, dialect, &mut more) {
            if let Some(gvk) = gvks.get(&full) {
                schema["x-kubernetes-group-version-kind"] = Value::Array(gvk.clone());
            }
            out.insert(full, schema);
        }
        wanted.extend(more.into_iter().filter(|m| !out.contains_key(m)));
    }
    out.entry(DELETE_OPTIONS).or_insert_with(|| {
        json!({
            "description": "The options of a delete (the body of a DELETE request).",
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "dryRun": {"type": "array", "items": {"type": "string"}},
                "gracePeriodSeconds": {"type": "integer", "format": "int64"},
                "orphanDependents": {"type": "boolean"},
                "preconditions": {
                    "type": "object",
                    "properties": {
                        "resourceVersion": {"type": "string"},
                        "uid": {"type": "string"},
                    },
                },
                "propagationPolicy": {"type": "string"},
            },
        })
    });
    out
}

/// The definition a DELETE's body refers to.
const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";

fn gv_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

/// A parameter of an operation or path, in the dialect's form (`schema` in v3, `type` in v2).
fn parameter(dialect: Dialect, name: &str, place: &str, ty: &str) -> Value {
    let mut p = json!({"name": name, "in": place, "uniqueItems": true});
    if place == "path" {
        p["required"] = json!(true);
    }
    match dialect {
        Dialect::V3 => p["schema"] = json!({"type": ty, "uniqueItems": true}),
        Dialect::V2 => p["type"] = json!(ty),
    }
    p
}

/// The query parameters of an action, as kube-apiserver's OpenAPI lists them.
fn action_queries(action: &str) -> &'static [(&'static str, &'static str)] {
    const WRITE: &[(&str, &str)] = &[
        ("dryRun", "string"),
        ("fieldManager", "string"),
        ("fieldValidation", "string"),
    ];
    match action {
        "list" => &[
            ("allowWatchBookmarks", "boolean"),
            ("continue", "string"),
            ("fieldSelector", "string"),
            ("labelSelector", "string"),
            ("limit", "integer"),
            ("resourceVersion", "string"),
            ("resourceVersionMatch", "string"),
            ("sendInitialEvents", "boolean"),
            ("timeoutSeconds", "integer"),
            ("watch", "boolean"),
        ],
        "post" | "put" => WRITE,
        "patch" => &[
            ("dryRun", "string"),
            ("fieldManager", "string"),
            ("fieldValidation", "string"),
            ("force", "boolean"),
        ],
        "delete" => &[
            ("dryRun", "string"),
            ("gracePeriodSeconds", "integer"),
            ("orphanDependents", "boolean"),
            ("propagationPolicy", "string"),
        ],
        "deletecollection" => &[
            ("continue", "string"),
            ("dryRun", "string"),
            ("fieldSelector", "string"),
            ("gracePeriodSeconds", "integer"),
            ("labelSelector", "string"),
            ("limit", "integer"),
            ("orphanDependents", "boolean"),
            ("propagationPolicy", "string"),
            ("resourceVersion", "string"),
            ("resourceVersionMatch", "string"),
            ("sendInitialEvents", "boolean"),
            ("timeoutSeconds", "integer"),
        ],
        _ => &[],
    }
}

/// The patch media types the server accepts (`PATCH` bodies).
const PATCH_TYPES: [&str; 4] = [
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
];

/// The paths of one resource, shaped as kube-apiserver's: path parameters (`namespace`,
/// `name`) and `pretty` on each path, and per operation its query parameters and its request
/// body (the kind for create and replace, a patch document for patch, `DeleteOptions` for
/// delete), so that the document is valid OpenAPI a client generator or API tester can use.
/// kubectl looks for the `fieldValidation` parameter to know the server validates fields itself.
fn resource_paths(info: &ResourceInfo, dialect: Dialect, paths: &mut Map<String, Value>) {
    let gvk = json!({"group": info.group, "version": info.version, "kind": info.kind.name()});
    let body_ref = kind_definition(info).map(|full| dialect.reference(&full));
    let delete_options = dialect.reference(DELETE_OPTIONS);
    let op = |id: String, action: &str| {
        let mut parameters: Vec<Value> = action_queries(action)
            .iter()
            .map(|(name, ty)| parameter(dialect, name, "query", ty))
            .collect();
        let body = match action {
            "post" | "put" => Some((body_ref.clone().unwrap_or(json!({"type": "object"})), true)),
            "patch" => Some((json!({"type": "object"}), true)),
            "delete" | "deletecollection" => Some((delete_options.clone(), false)),
            _ => None,
        };
        let consumes: Vec<&str> = if action == "patch" {
            PATCH_TYPES.to_vec()
        } else {
            vec!["*/*"]
        };
        let mut op = json!({
            "operationId": id,
            "x-kubernetes-action": action,
            "x-kubernetes-group-version-kind": gvk.clone(),
            "responses": {"200": {"description": "OK"}, "401": {"description": "Unauthorized"}},
        });
        if action == "post" {
            op["responses"]["201"] = json!({"description": "Created"});
            op["responses"]["202"] = json!({"description": "Accepted"});
        }
        match (dialect, body) {
            (Dialect::V2, Some((schema, required))) => {
                parameters.insert(
                    0,
                    json!({"name": "body", "in": "body", "required": required, "schema": schema}),
                );
            }
            (Dialect::V3, Some((schema, required))) => {
                let content: Map<String, Value> = consumes
                    .iter()
                    .map(|media| (media.to_string(), json!({"schema": schema})))
                    .collect();
                op["requestBody"] = json!({"content": content, "required": required});
            }
            (_, None) => {}
        }
        if dialect == Dialect::V2 {
            op["consumes"] = json!(consumes);
            op["produces"] = json!([
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf"
            ]);
            op["schemes"] = json!(["https"]);
        }
        if let (Some(schema), Dialect::V3, false) =
            (&body_ref, dialect, action.starts_with("delete"))
        {
            op["responses"]["200"]["content"] = json!({"application/json": {"schema": schema}});
        }
        op["parameters"] = json!(parameters);
        op
    };
    let kind = info.kind.name();
    let namespaced = info.kind.namespaced();
    let base = format!(
        "/{}/{}",
        gv_path(info.group, info.version),
        if namespaced {
            "namespaces/{namespace}/"
        } else {
            ""
        }
    );
    let path_parameters = |named: bool| {
        let mut list = Vec::new();
        if named {
            let mut name = parameter(dialect, "name", "path", "string");
            name["description"] = json!(format!("name of the {kind}"));
            list.push(name);
        }
        if namespaced {
            let mut namespace = parameter(dialect, "namespace", "path", "string");
            namespace["description"] =
                json!("object name and auth scope, such as for teams and projects");
            list.push(namespace);
        }
        list.push(parameter(dialect, "pretty", "query", "string"));
        json!(list)
    };
    let mut collection = json!({
        "post": op(format!("create{kind}"), "post"),
        "get": op(format!("list{kind}"), "list"),
        "parameters": path_parameters(false),
    });
    if crate::resources::deletes_collections(info.kind) {
        collection["delete"] = op(format!("deleteCollection{kind}"), "deletecollection");
    }
    paths.insert(format!("{base}{}", info.plural), collection);
    paths.insert(
        format!("{base}{}/{{name}}", info.plural),
        json!({
            "get": op(format!("read{kind}"), "get"),
            "put": op(format!("replace{kind}"), "put"),
            "patch": op(format!("patch{kind}"), "patch"),
            "delete": op(format!("delete{kind}"), "delete"),
            "parameters": path_parameters(true),
        }),
    );
    if info.kind == Kind::Namespace {
        paths.insert(
            format!("{base}{}/{{name}}/finalize", info.plural),
            json!({
                "put": op(format!("replace{kind}Finalize"), "put"),
                "parameters": path_parameters(true),
            }),
        );
    }
    if info.status {
        paths.insert(
            format!("{base}{}/{{name}}/status", info.plural),
            json!({
                "get": op(format!("read{kind}Status"), "get"),
                "put": op(format!("replace{kind}Status"), "put"),
                "patch": op(format!("patch{kind}Status"), "patch"),
                "parameters": path_parameters(true),
            }),
        );
    }
}

/// A stable hash of a document, for the v3 root's `serverRelativeURL`.
fn hash(value: &Value) -> String {
    let text = value.to_string();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{h:016X}")
}

/// `/openapi/v3`: one entry per served group version.
pub fn v3_root() -> Value {
    let mut paths = Map::new();
    for (group, version) in crate::resources::group_versions() {
        let path = gv_path(group, version);
        let doc = v3_group(group, version).unwrap_or(Value::Null);
        paths.insert(
            path.clone(),
            json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash={}", hash(&doc))}),
        );
    }
    json!({ "paths": paths })
}

/// `/openapi/v3/{api/v1|apis/group/version}`.
pub fn v3_group(group: &str, version: &str) -> Option<Value> {
    let served: Vec<&ResourceInfo> = RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if served.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for info in &served {
        resource_paths(info, Dialect::V3, &mut paths);
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "allot", "version": "v1.37.0"},
        "paths": paths,
        "components": {"schemas": definitions(&served, Dialect::V3)},
    }))
}

/// `/openapi/v2`: every served kind in one Swagger 2.0 document.
pub fn v2() -> Value {
    let served: Vec<&ResourceInfo> = RESOURCES.iter().collect();
    let mut paths = Map::new();
    for info in &served {
        resource_paths(info, Dialect::V2, &mut paths);
    }
    json!({
        "swagger": "2.0",
        "info": {"title": "allot", "version": "v1.37.0"},
        "paths": paths,
        "definitions": definitions(&served, Dialect::V2),
    })
}

/// `/openapi/v2` in the form the `Accept` header asks for: gnostic's protobuf Document (what
/// kubectl asks for before it validates), or JSON (`application/json`, `*/*`, no header); 406
/// naming both otherwise, as kube-apiserver's handler answers.
pub fn v2_response(accept: &str) -> axum::response::Response {
    use axum::http::{StatusCode, header};
    use axum::response::IntoResponse;
    let mut wants = None;
    let mut clauses: Vec<(f32, &str)> = accept
        .split(',')
        .filter_map(|clause| {
            let mut parts = clause.split(';');
            let media = parts.next()?.trim();
            let q = parts
                .filter_map(|p| p.trim().strip_prefix("q="))
                .find_map(|q| q.parse::<f32>().ok())
                .unwrap_or(1.0);
            (!media.is_empty()).then_some((q, media))
        })
        .collect();
    clauses.sort_by(|a, b| b.0.total_cmp(&a.0));
    if clauses.is_empty() {
        wants = Some(false);
    }
    for (_, media) in clauses {
        match media {
            crate::openapi_pb::MEDIA_TYPE | crate::openapi_pb::MEDIA_TYPE_ASKED => {
                wants = Some(true)
            }
            "application/json" | "application/*" | "*/*" => wants = Some(false),
            _ => continue,
        }
        break;
    }
    let document = v2();
    match wants {
        Some(true) => match crate::openapi_pb::encode(&document) {
            Ok(bytes) => (
                StatusCode::OK,
                [(header::CONTENT_TYPE, crate::openapi_pb::MEDIA_TYPE)],
                bytes,
            )
                .into_response(),
            Err(message) => {
                tracing::error!("{message}");
                (StatusCode::INTERNAL_SERVER_ERROR, message).into_response()
            }
        },
        Some(false) => (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&document).unwrap_or_default(),
        )
            .into_response(),
        // As kube-openapi's handler: 406 without a body.
        None => StatusCode::NOT_ACCEPTABLE.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema<'a>(doc: &'a Value, name: &str) -> &'a Value {
        doc.pointer(&format!("/components/schemas/{name}"))
            .unwrap_or_else(|| panic!("{name} missing"))
    }

    #[test]
    fn every_served_kind_has_a_schema_with_its_gvk() {
        for info in RESOURCES {
            let doc = v3_group(info.group, info.version).expect("a document");
            let full = kind_definition(info).unwrap_or_else(|| panic!("{info:?}"));
            let gvks = schema(&doc, &full)["x-kubernetes-group-version-kind"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert!(
                gvks.iter().any(|g| g["kind"] == info.kind.name()
                    && g["version"] == info.version
                    && g["group"] == info.group),
                "{full}: {gvks:?}"
            );
        }
    }

    #[test]
    fn resource_claim_fields_follow_the_types() {
        let doc = v3_group("resource.k8s.io", "v1").expect("served");
        let claim = schema(&doc, "io.k8s.api.resource.v1.ResourceClaim");
        assert_eq!(
            claim.pointer("/properties/spec/allOf/0/$ref"),
            Some(&json!(
                "#/components/schemas/io.k8s.api.resource.v1.ResourceClaimSpec"
            ))
        );
        assert!(
            claim["properties"]["metadata"]["allOf"][0]["$ref"]
                .as_str()
                .is_some_and(|r| r.ends_with("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"))
        );
        let request = schema(&doc, "io.k8s.api.resource.v1.ExactDeviceRequest");
        assert_eq!(
            request.pointer("/properties/deviceClassName/type"),
            Some(&json!("string"))
        );
        assert_eq!(
            request.pointer("/properties/count/type"),
            Some(&json!("integer"))
        );
        assert_eq!(
            request.pointer("/properties/selectors/type"),
            Some(&json!("array"))
        );
        let mode = schema(&doc, "io.k8s.api.resource.v1.DeviceAllocationMode");
        assert_eq!(mode["enum"], json!(["All", "ExactCount"]));
        // Every reference resolves within the document.
        let text = doc.to_string();
        for part in text.split("#/components/schemas/").skip(1) {
            let name = part.split('"').next().unwrap_or_default();
            assert!(
                doc.pointer(&format!("/components/schemas/{name}"))
                    .is_some(),
                "dangling {name}"
            );
        }
        // Descriptions come from the doc comments.
        assert!(
            schema(&doc, "io.k8s.api.resource.v1.ResourceSlice")["description"]
                .as_str()
                .is_some_and(|d| !d.is_empty())
        );
    }

    #[test]
    fn patch_facts_are_published() {
        let doc = v3_group("", "v1").expect("core");
        let spec = schema(&doc, "io.k8s.api.core.v1.PodSpec");
        assert_eq!(
            spec.pointer("/properties/containers/x-kubernetes-patch-merge-key"),
            Some(&json!("name"))
        );
        assert_eq!(
            spec.pointer("/properties/containers/x-kubernetes-patch-strategy"),
            Some(&json!("merge"))
        );
    }

    #[test]
    fn renamed_fields_and_v2_references() {
        let doc = v2();
        let event = doc
            .pointer("/definitions/io.k8s.api.core.v1.Event/properties")
            .expect("Event defined");
        assert!(event.get("type").is_some() && event.get("type_").is_none());
        assert!(event.get("involvedObject").is_some());
        assert!(
            doc.to_string()
                .contains("#/definitions/io.k8s.api.core.v1.ObjectReference")
        );
        assert!(!doc.to_string().contains("#/components/"));
    }

    #[test]
    fn v2_is_served_in_the_form_asked_for() {
        let content_type = |accept: &str| {
            let response = v2_response(accept);
            (
                response.status().as_u16(),
                response
                    .headers()
                    .get(axum::http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_string(),
            )
        };
        let protobuf = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
        let asked = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
        assert_eq!(content_type(asked), (200, protobuf.to_string()));
        assert_eq!(content_type(protobuf), (200, protobuf.to_string()));
        assert_eq!(
            content_type("application/json"),
            (200, "application/json".to_string())
        );
        assert_eq!(content_type(""), (200, "application/json".to_string()));
        assert_eq!(
            content_type(&format!("application/json;q=0.5, {asked}")),
            (200, protobuf.to_string())
        );
        assert_eq!(content_type("text/html").0, 406);
    }

    /// Every group version in the OpenAPI v3 root is one discovery serves resources for.
    #[test]
    fn v3_lists_only_what_discovery_serves() {
        let root = v3_root();
        for path in root["paths"].as_object().expect("paths").keys() {
            let parts: Vec<&str> = path.split('/').collect();
            let (group, version) = match parts.as_slice() {
                ["api", v] => ("", *v),
                ["apis", g, v] => (*g, *v),
                _ => panic!("{path}"),
            };
            let list = crate::resources::api_resource_list(group, version)
                .unwrap_or_else(|| panic!("{path} is not in discovery"));
            assert!(
                list["resources"].as_array().is_some_and(|r| !r.is_empty()),
                "{path}: discovery has no resources"
            );
        }
    }

    #[test]
    fn root_lists_every_group_version() {
        let root = v3_root();
        for path in [
            "api/v1",
            "apis/resource.k8s.io/v1",
            "apis/allot.dev/v1alpha1",
        ] {
            assert!(
                root.pointer(&format!("/paths/{}", path.replace('/', "~1")))
                    .is_some(),
                "{path}"
            );
        }
    }
}

/// The documents are valid OpenAPI for tools that check them (client generators, API testers
/// such as schemathesis, which refused every path before): each path template parameter is
/// declared, each reference resolves, each write has its request body.
#[cfg(test)]
mod validity {
    use super::*;

    fn refs(value: &Value, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                if let Some(Value::String(r)) = map.get("$ref") {
                    out.push(r.clone());
                }
                map.values().for_each(|v| refs(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
            _ => {}
        }
    }

    fn check(doc: &Value, dialect: Dialect) {
        let paths = doc["paths"].as_object().expect("paths");
        assert!(paths.len() >= 3, "{} paths", paths.len());
        for (path, item) in paths {
            let declared: Vec<&str> = item["parameters"]
                .as_array()
                .unwrap_or_else(|| panic!("{path}: no path parameters"))
                .iter()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().expect("a name"))
                .collect();
            let templated: Vec<&str> = path
                .split('/')
                .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
                .collect();
            let mut sorted = templated.clone();
            sorted.sort_unstable();
            let mut declared_sorted = declared.clone();
            declared_sorted.sort_unstable();
            assert_eq!(declared_sorted, sorted, "{path}");
            for (method, op) in item.as_object().expect("a path item") {
                if method == "parameters" {
                    continue;
                }
                let has_body = match dialect {
                    Dialect::V2 => op["parameters"]
                        .as_array()
                        .expect("parameters")
                        .iter()
                        .any(|p| p["in"] == "body"),
                    Dialect::V3 => op.get("requestBody").is_some(),
                };
                let wants_body = matches!(method.as_str(), "post" | "put" | "patch" | "delete");
                assert_eq!(has_body, wants_body, "{method} {path}");
            }
        }
        let mut all = Vec::new();
        refs(doc, &mut all);
        let prefix = match dialect {
            Dialect::V2 => "#/definitions/",
            Dialect::V3 => "#/components/schemas/",
        };
        let definitions = match dialect {
            Dialect::V2 => &doc["definitions"],
            Dialect::V3 => &doc["components"]["schemas"],
        };
        for r in all {
            let name = r.strip_prefix(prefix).unwrap_or_else(|| panic!("{r}"));
            assert!(definitions.get(name).is_some(), "{r} does not resolve");
        }
    }

    #[test]
    fn every_path_parameter_is_declared_and_every_reference_resolves() {
        check(&v2(), Dialect::V2);
        let pods = v3_group("", "v1").expect("core v1");
        check(&pods, Dialect::V3);
        check(
            &v3_group("resource.k8s.io", "v1").expect("resource v1"),
            Dialect::V3,
        );
        let list = &pods["paths"]["/api/v1/namespaces/{namespace}/pods"]["get"]["parameters"];
        let names: Vec<&str> = list
            .as_array()
            .expect("parameters")
            .iter()
            .filter_map(|p| p["name"].as_str())
            .collect();
        for wanted in [
            "labelSelector",
            "fieldSelector",
            "limit",
            "continue",
            "watch",
        ] {
            assert!(names.contains(&wanted), "{wanted} in {names:?}");
        }
    }
}
