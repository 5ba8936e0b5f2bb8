//! RBAC: `rbac.authorization.k8s.io/v1` Role, ClusterRole, RoleBinding and ClusterRoleBinding
//! served through the API and evaluated with upstream's rules.
//!
//! Design: these four kinds are kept apart from the main object store, in `DATA_DIR/rbac.json`
//! (rewritten atomically on every change, with its own resourceVersion counter), because the
//! authorizer reads them on every request and they change rarely; they are validated and
//! defaulted here as upstream's rbac registry does. Served: get, list, create, update (PUT),
//! patch (JSON, merge and strategic merge patches, and server-side apply with managedFields,
//! through [`crate::patch`] and [`crate::apply`]; `rules` and `subjects` are atomic lists as
//! upstream marks them), delete; not watch.
//!
//! Evaluation (upstream's RBAC authorizer): a ClusterRoleBinding's subjects get its ClusterRole's
//! rules everywhere; a RoleBinding's subjects get its Role's (or ClusterRole's) rules in its
//! namespace. A rule allows a request when the verb, API group, resource (`resource/subresource`
//! or `*/subresource`) and resource name match, `*` matching anything; non-resource URLs match
//! exactly or by a trailing `*` prefix. Subjects: `User` by name, `Group` by membership,
//! `ServiceAccount` as `system:serviceaccount:NS:NAME` (a RoleBinding's own namespace when the
//! subject names none). Privilege escalation is prevented as upstream: creating a role needs
//! every permission it grants (or `escalate` on it); binding a role needs its permissions (or
//! `bind` on it). ClusterRole aggregation is not run: an `aggregationRule` is stored as given.
//!
//! Bootstrap objects created at start when missing (as upstream's defaults, trimmed to what
//! allot serves): ClusterRoles `cluster-admin`, `system:discovery`, `system:basic-user`
//! (access reviews), `system:public-info-viewer` and their ClusterRoleBindings (to
//! `system:masters`, `system:authenticated` twice, and both `system:authenticated` and
//! `system:unauthenticated`). No default role grants anything on
//! `resource.k8s.io`, so ResourcePoolStatusRequests need an explicit grant.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use allot_validation::{BadValue, FieldError};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::Error;
use crate::auth::{Attributes, Decision, Security, User};

/// The API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// The served version.
pub const VERSION: &str = "v1";

/// The four RBAC kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RbacKind {
    /// Namespaced rules.
    Role,
    /// Cluster-wide rules.
    ClusterRole,
    /// Grants a Role or ClusterRole in one namespace.
    RoleBinding,
    /// Grants a ClusterRole everywhere.
    ClusterRoleBinding,
}

impl RbacKind {
    const ALL: [RbacKind; 4] = [
        RbacKind::Role,
        RbacKind::ClusterRole,
        RbacKind::RoleBinding,
        RbacKind::ClusterRoleBinding,
    ];

    /// The kind's name.
    pub fn name(self) -> &'static str {
        match self {
            RbacKind::Role => "Role",
            RbacKind::ClusterRole => "ClusterRole",
            RbacKind::RoleBinding => "RoleBinding",
            RbacKind::ClusterRoleBinding => "ClusterRoleBinding",
        }
    }

    /// The resource name in URLs.
    pub fn plural(self) -> &'static str {
        match self {
            RbacKind::Role => "roles",
            RbacKind::ClusterRole => "clusterroles",
            RbacKind::RoleBinding => "rolebindings",
            RbacKind::ClusterRoleBinding => "clusterrolebindings",
        }
    }

    fn singular(self) -> &'static str {
        match self {
            RbacKind::Role => "role",
            RbacKind::ClusterRole => "clusterrole",
            RbacKind::RoleBinding => "rolebinding",
            RbacKind::ClusterRoleBinding => "clusterrolebinding",
        }
    }

    /// Whether objects live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(self, RbacKind::Role | RbacKind::RoleBinding)
    }

    fn is_binding(self) -> bool {
        matches!(self, RbacKind::RoleBinding | RbacKind::ClusterRoleBinding)
    }

    fn of_plural(plural: &str) -> Option<RbacKind> {
        RbacKind::ALL.into_iter().find(|k| k.plural() == plural)
    }

    fn of_name(name: &str) -> Option<RbacKind> {
        RbacKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The top-level fields an object of this kind may have.
    fn fields(self) -> &'static [&'static str] {
        match self {
            RbacKind::Role => &["apiVersion", "kind", "metadata", "rules"],
            RbacKind::ClusterRole => {
                &["apiVersion", "kind", "metadata", "rules", "aggregationRule"]
            }
            _ => &["apiVersion", "kind", "metadata", "subjects", "roleRef"],
        }
    }
}

/// One rule of a role.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyRule {
    /// Verbs, `*` for all.
    #[serde(default)]
    pub verbs: Vec<String>,
    /// API groups, `*` for all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub api_groups: Vec<String>,
    /// Resources (`r`, `r/sub`, `*`, `*/sub`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<String>,
    /// Object names; empty means all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_names: Vec<String>,
    /// Non-resource URLs (cluster roles only).
    #[serde(
        default,
        rename = "nonResourceURLs",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub non_resource_urls: Vec<String>,
}

/// Who a binding grants to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Subject {
    /// `User`, `Group` or `ServiceAccount`.
    #[serde(default)]
    pub kind: String,
    /// `rbac.authorization.k8s.io` for users and groups, empty for service accounts.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_group: String,
    /// The name.
    #[serde(default)]
    pub name: String,
    /// A service account's namespace.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub namespace: String,
}

/// The role a binding grants.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleRef {
    /// `rbac.authorization.k8s.io`.
    #[serde(default)]
    pub api_group: String,
    /// `Role` or `ClusterRole`.
    #[serde(default)]
    pub kind: String,
    /// The role's name.
    #[serde(default)]
    pub name: String,
}

/// The typed body of a stored object.
#[derive(Debug, Clone, PartialEq)]
enum Body {
    Rules(Vec<PolicyRule>),
    Binding {
        role_ref: RoleRef,
        subjects: Vec<Subject>,
    },
}

#[derive(Debug, Clone, PartialEq)]
struct Entry {
    json: Value,
    body: Body,
}

type Key = (RbacKind, String, String);

/// The RBAC objects, persisted in one JSON file.
#[derive(Debug)]
pub struct RbacStore {
    path: PathBuf,
    objects: BTreeMap<Key, Entry>,
    resource_version: u64,
    /// Announces the resourceVersion after every saved change (watches wait on it).
    changed: tokio::sync::watch::Sender<u64>,
}

/// Writes `text` to `path` atomically (temp file, fsync, rename, fsync of the directory) with
/// mode 0600.
pub fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options.open(&tmp).map_err(io)?;
    file.write_all(text.as_bytes()).map_err(io)?;
    file.sync_all().map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)?;
    if let Some(dir) = path.parent()
        && let Ok(dir) = std::fs::File::open(dir)
    {
        let _ = dir.sync_all();
    }
    Ok(())
}

fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn new_uid() -> String {
    use std::io::Read;
    let mut b = [0u8; 16];
    if std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_err()
    {
        let nanos = chrono::Utc::now().timestamp_nanos_opt().unwrap_or_default();
        b[..8].copy_from_slice(&nanos.to_be_bytes());
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

/// Upstream's default ClusterRoles and ClusterRoleBindings that matter to allot.
fn bootstrap_objects() -> Vec<Value> {
    let meta = |name: &str| {
        json!({"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
               "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
    };
    let role = |name: &str, rules: Vec<PolicyRule>| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": meta(name), "rules": rules})
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"kind": "Group", "apiGroup": GROUP, "name": g}))
            .collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": meta(name), "subjects": subjects,
               "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}})
    };
    let urls = |verbs: &[&str], urls: &[&str]| PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: strings(urls),
        ..PolicyRule::default()
    };
    vec![
        role(
            "cluster-admin",
            vec![
                PolicyRule {
                    verbs: strings(&["*"]),
                    api_groups: strings(&["*"]),
                    resources: strings(&["*"]),
                    ..PolicyRule::default()
                },
                urls(&["*"], &["*"]),
            ],
        ),
        role(
            "system:discovery",
            vec![urls(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
        ),
        role(
            "system:public-info-viewer",
            vec![urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        role(
            "system:basic-user",
            vec![PolicyRule {
                verbs: strings(&["create"]),
                api_groups: strings(&["authorization.k8s.io"]),
                resources: strings(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                ..PolicyRule::default()
            }],
        ),
        binding("cluster-admin", &["system:masters"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding("system:discovery", &["system:authenticated"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
    ]
}

/// A failed RBAC request: HTTP code and `Status` body.
pub type Failure = (u16, Value);

fn status(code: u16, reason: &str, message: impl Into<String>, details: Value) -> Failure {
    let mut s = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message.into(), "reason": reason, "code": code});
    if !details.is_null() {
        s["details"] = details;
    }
    (code, s)
}

fn bad_request(message: impl Into<String>) -> Failure {
    status(400, "BadRequest", message, Value::Null)
}

fn qualified(kind: RbacKind) -> String {
    format!("{}.{GROUP}", kind.plural())
}

fn not_found(kind: RbacKind, name: &str) -> Failure {
    status(
        404,
        "NotFound",
        format!("{} {name:?} not found", qualified(kind)),
        json!({"name": name, "group": GROUP, "kind": kind.plural()}),
    )
}

fn invalid(kind: RbacKind, name: &str, errors: &[FieldError]) -> Failure {
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let list = if rendered.len() == 1 {
        rendered[0].clone()
    } else {
        format!("[{}]", rendered.join(", "))
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| json!({"reason": format!("FieldValue{}", e.kind.as_str().split_whitespace().next().unwrap_or_default()), "message": e.message(), "field": e.path}))
        .collect();
    status(
        422,
        "Invalid",
        format!("{}.{GROUP} {name:?} is invalid: {list}", kind.name()),
        json!({"name": name, "group": GROUP, "kind": kind.name(), "causes": causes}),
    )
}

fn valid_name(name: &str) -> Option<String> {
    if name == "." || name == ".." {
        return Some(format!("may not be '{name}'"));
    }
    for bad in ["/", "%"] {
        if name.contains(bad) {
            return Some(format!("may not contain '{bad}'"));
        }
    }
    None
}

fn raw_list(items: &[String]) -> BadValue {
    let quoted: Vec<String> = items.iter().map(|s| format!("{s:?}")).collect();
    BadValue::Raw(format!("[]string{{{}}}", quoted.join(", ")))
}

/// Validates a rule as upstream's `ValidatePolicyRule`.
fn validate_rule(rule: &PolicyRule, namespaced: bool, path: &str, errors: &mut Vec<FieldError>) {
    if rule.verbs.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.verbs"),
            "verbs must contain at least one value",
        ));
    }
    if !rule.non_resource_urls.is_empty() {
        if namespaced {
            errors.push(FieldError::invalid(
                &format!("{path}.nonResourceURLs"),
                raw_list(&rule.non_resource_urls),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if !rule.api_groups.is_empty()
            || !rule.resources.is_empty()
            || !rule.resource_names.is_empty()
        {
            errors.push(FieldError::invalid(
                &format!("{path}.nonResourceURLs"),
                raw_list(&rule.non_resource_urls),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return;
    }
    if rule.api_groups.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if rule.resources.is_empty() {
        errors.push(FieldError::required(
            &format!("{path}.resources"),
            "resource rules must supply at least one resource",
        ));
    }
}

/// Validates a binding as upstream's `ValidateRoleBinding` / `ValidateClusterRoleBinding`.
fn validate_binding(
    kind: RbacKind,
    role_ref: &RoleRef,
    subjects: &[Subject],
    errors: &mut Vec<FieldError>,
) {
    if role_ref.api_group != GROUP {
        errors.push(FieldError::not_supported(
            "roleRef.apiGroup",
            role_ref.api_group.as_str(),
            &[GROUP],
        ));
    }
    let kinds: &[&str] = if kind == RbacKind::RoleBinding {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&role_ref.kind.as_str()) {
        errors.push(FieldError::not_supported(
            "roleRef.kind",
            role_ref.kind.as_str(),
            kinds,
        ));
    }
    if role_ref.name.is_empty() {
        errors.push(FieldError::required("roleRef.name", ""));
    } else if let Some(message) = valid_name(&role_ref.name) {
        errors.push(FieldError::invalid(
            "roleRef.name",
            role_ref.name.as_str(),
            message,
        ));
    }
    for (i, subject) in subjects.iter().enumerate() {
        let path = format!("subjects[{i}]");
        if subject.name.is_empty() {
            errors.push(FieldError::required(&format!("{path}.name"), ""));
        }
        match subject.kind.as_str() {
            "ServiceAccount" => {
                if !subject.api_group.is_empty() {
                    errors.push(FieldError::not_supported(
                        &format!("{path}.apiGroup"),
                        subject.api_group.as_str(),
                        &[""],
                    ));
                }
                if kind == RbacKind::ClusterRoleBinding && subject.namespace.is_empty() {
                    errors.push(FieldError::required(&format!("{path}.namespace"), ""));
                }
            }
            "User" | "Group" => {
                if subject.api_group != GROUP {
                    errors.push(FieldError::not_supported(
                        &format!("{path}.apiGroup"),
                        subject.api_group.as_str(),
                        &[GROUP],
                    ));
                }
            }
            other => errors.push(FieldError::not_supported(
                &format!("{path}.kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
}

/// Decodes, defaults and validates an object of `kind` (the URL's) from a request body.
/// Returns the normalised JSON (server metadata not yet set) and its typed body.
fn decode(kind: RbacKind, namespace: &str, mut value: Value) -> Result<(Value, Body), Failure> {
    let Some(map) = value.as_object_mut() else {
        return Err(bad_request("the request body must be an object"));
    };
    let api_version = map
        .entry("apiVersion")
        .or_insert_with(|| json!(format!("{GROUP}/{VERSION}")))
        .clone();
    let body_kind = map
        .entry("kind")
        .or_insert_with(|| json!(kind.name()))
        .clone();
    if api_version.as_str() != Some(&format!("{GROUP}/{VERSION}"))
        || body_kind.as_str() != Some(kind.name())
    {
        return Err(bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({GROUP}/{VERSION}) or kind {} is not {}",
            api_version.as_str().unwrap_or_default(),
            body_kind.as_str().unwrap_or_default(),
            kind.name()
        )));
    }
    if let Some(field) = map.keys().find(|k| !kind.fields().contains(&k.as_str())) {
        return Err(bad_request(format!(
            "strict decoding error: unknown field \"{field}\""
        )));
    }
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return Err(bad_request("metadata must be an object"));
    };
    if kind.namespaced() {
        let body_ns = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_ns.is_empty() {
            metadata.insert("namespace".into(), json!(namespace));
        } else if body_ns != namespace {
            return Err(bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    } else {
        metadata.remove("namespace");
    }
    for field in ["managedFields", "selfLink", "generation"] {
        metadata.remove(field);
    }
    let name = metadata
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mut errors = Vec::new();
    if name.is_empty() {
        errors.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    } else if let Some(message) = valid_name(&name) {
        errors.push(FieldError::invalid("metadata.name", name.as_str(), message));
    }
    let body = if kind.is_binding() {
        let mut role_ref: RoleRef = match map.get("roleRef") {
            None | Some(Value::Null) => RoleRef::default(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| bad_request(format!("roleRef: {e}")))?,
        };
        if role_ref.api_group.is_empty() {
            role_ref.api_group = GROUP.into();
        }
        let mut subjects: Vec<Subject> = match map.get("subjects") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => serde_json::from_value(v.clone())
                .map_err(|e| bad_request(format!("subjects: {e}")))?,
        };
        for subject in &mut subjects {
            if subject.api_group.is_empty() && matches!(subject.kind.as_str(), "User" | "Group") {
                subject.api_group = GROUP.into();
            }
        }
        validate_binding(kind, &role_ref, &subjects, &mut errors);
        map.insert("roleRef".into(), json!(role_ref));
        if subjects.is_empty() {
            map.remove("subjects");
        } else {
            map.insert("subjects".into(), json!(subjects));
        }
        Body::Binding { role_ref, subjects }
    } else {
        let rules: Vec<PolicyRule> = match map.get("rules") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => {
                serde_json::from_value(v.clone()).map_err(|e| bad_request(format!("rules: {e}")))?
            }
        };
        for (i, rule) in rules.iter().enumerate() {
            validate_rule(rule, kind.namespaced(), &format!("rules[{i}]"), &mut errors);
        }
        map.insert("rules".into(), json!(rules));
        Body::Rules(rules)
    };
    if !errors.is_empty() {
        return Err(invalid(kind, &name, &errors));
    }
    Ok((value, body))
}

fn subject_applies(subject: &Subject, user: &User, binding_namespace: &str) -> bool {
    match subject.kind.as_str() {
        "User" => subject.name == user.name,
        "Group" => user.in_group(&subject.name),
        "ServiceAccount" => {
            let namespace = if subject.namespace.is_empty() {
                binding_namespace
            } else {
                subject.namespace.as_str()
            };
            !namespace.is_empty()
                && user.name == format!("system:serviceaccount:{namespace}:{}", subject.name)
        }
        _ => false,
    }
}

fn has(items: &[String], wanted: &str) -> bool {
    items.iter().any(|i| i == "*" || i == wanted)
}

/// Whether `rule` allows `attributes` (upstream's `RuleAllows`).
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    if !has(&rule.verbs, &attributes.verb) {
        return false;
    }
    if !attributes.resource_request {
        return rule.non_resource_urls.iter().any(|url| {
            url == "*"
                || *url == attributes.path
                || url
                    .strip_suffix('*')
                    .is_some_and(|prefix| attributes.path.starts_with(prefix))
        });
    }
    if !has(&rule.api_groups, &attributes.api_group) {
        return false;
    }
    let combined = if attributes.subresource.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}/{}", attributes.resource, attributes.subresource)
    };
    let resource_matches = rule.resources.iter().any(|r| {
        r == "*"
            || *r == combined
            || (!attributes.subresource.is_empty() && *r == format!("*/{}", attributes.subresource))
    });
    resource_matches
        && (rule.resource_names.is_empty() || rule.resource_names.contains(&attributes.name))
}

impl RbacStore {
    /// Loads `path` (missing: empty) and adds the bootstrap objects that are missing.
    pub fn open(path: &Path) -> Result<RbacStore, Error> {
        let corrupt = |message: String| Error::CorruptLog {
            path: path.to_path_buf(),
            offset: 0,
            message,
        };
        let mut store = RbacStore {
            path: path.to_path_buf(),
            objects: BTreeMap::new(),
            resource_version: 0,
            changed: tokio::sync::watch::channel(0).0,
        };
        match std::fs::read_to_string(path) {
            Ok(text) => {
                let file: Value =
                    serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
                store.resource_version = file
                    .get("resourceVersion")
                    .and_then(Value::as_str)
                    .and_then(|v| v.parse().ok())
                    .ok_or_else(|| corrupt("resourceVersion missing".into()))?;
                for (i, item) in file
                    .get("items")
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .enumerate()
                {
                    let kind = item
                        .get("kind")
                        .and_then(Value::as_str)
                        .and_then(RbacKind::of_name)
                        .ok_or_else(|| corrupt(format!("items[{i}]: unknown kind")))?;
                    let namespace = item
                        .pointer("/metadata/namespace")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    let (json, body) = decode(kind, &namespace, item)
                        .map_err(|(_, s)| corrupt(format!("items[{i}]: {}", s["message"])))?;
                    let name = json
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    store
                        .objects
                        .insert((kind, namespace, name), Entry { json, body });
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => {
                return Err(Error::Io {
                    path: path.to_path_buf(),
                    source,
                });
            }
        }
        let mut changed = false;
        for object in bootstrap_objects() {
            let kind = object
                .get("kind")
                .and_then(Value::as_str)
                .and_then(RbacKind::of_name)
                .unwrap_or(RbacKind::ClusterRole);
            let name = object
                .pointer("/metadata/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            if store.objects.contains_key(&(kind, String::new(), name)) {
                continue;
            }
            let (json, body) = decode(kind, "", object)
                .map_err(|(_, s)| corrupt(format!("bootstrap object: {}", s["message"])))?;
            store.insert(kind, json, body);
            changed = true;
        }
        if changed {
            store.save()?;
        }
        Ok(store)
    }

    fn save(&self) -> Result<(), Error> {
        let items: Vec<&Value> = self.objects.values().map(|e| &e.json).collect();
        let file = json!({"resourceVersion": self.resource_version.to_string(), "items": items});
        let text = serde_json::to_string_pretty(&file).unwrap_or_default();
        write_private(&self.path, &text)?;
        self.changed.send_replace(self.resource_version);
        Ok(())
    }

    /// Stores a decoded object as new (uid, creation time, resourceVersion).
    fn insert(&mut self, kind: RbacKind, mut json: Value, body: Body) -> Value {
        self.resource_version += 1;
        let metadata = &mut json["metadata"];
        metadata["uid"] = json!(new_uid());
        metadata["creationTimestamp"] = json!(now_rfc3339());
        metadata["resourceVersion"] = json!(self.resource_version.to_string());
        let namespace = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let name = metadata
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        self.objects.insert(
            (kind, namespace, name),
            Entry {
                json: json.clone(),
                body,
            },
        );
        json
    }

    fn rules_of(&self, kind: &str, namespace: &str, name: &str) -> Result<&[PolicyRule], String> {
        let (key, label) = match kind {
            "ClusterRole" => (
                (RbacKind::ClusterRole, String::new(), name.to_string()),
                "clusterrole",
            ),
            "Role" => (
                (RbacKind::Role, namespace.to_string(), name.to_string()),
                "role",
            ),
            other => return Err(format!("unknown role kind {other:?}")),
        };
        match self.objects.get(&key) {
            Some(Entry {
                body: Body::Rules(rules),
                ..
            }) => Ok(rules),
            _ => Err(format!("{label}.{GROUP} {name:?} not found")),
        }
    }

    /// Visits the rules that apply to `user` in `namespace` ("" = cluster-wide bindings only)
    /// until `visit` returns true; returns whether it did and the errors met on the way.
    fn visit_rules(
        &self,
        user: &User,
        namespace: &str,
        visit: &mut dyn FnMut(&PolicyRule) -> bool,
    ) -> (bool, Vec<String>) {
        let mut errors = Vec::new();
        let mut bindings: Vec<(&Key, &RoleRef, &Vec<Subject>)> = Vec::new();
        for (key, entry) in &self.objects {
            let Body::Binding { role_ref, subjects } = &entry.body else {
                continue;
            };
            let applies_here = match key.0 {
                RbacKind::ClusterRoleBinding => true,
                RbacKind::RoleBinding => !namespace.is_empty() && key.1 == namespace,
                _ => false,
            };
            if applies_here {
                bindings.push((key, role_ref, subjects));
            }
        }
        // Cluster role bindings first, as upstream.
        bindings.sort_by_key(|(key, _, _)| key.0 != RbacKind::ClusterRoleBinding);
        for (key, role_ref, subjects) in bindings {
            if !subjects.iter().any(|s| subject_applies(s, user, &key.1)) {
                continue;
            }
            match self.rules_of(&role_ref.kind, &key.1, &role_ref.name) {
                Ok(rules) => {
                    if rules.iter().any(&mut *visit) {
                        return (true, errors);
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        (false, errors)
    }

    /// Upstream's RBAC authorizer: allowed when some applicable rule allows the request.
    pub fn authorize(&self, attributes: &Attributes) -> Decision {
        let (allowed, errors) =
            self.visit_rules(&attributes.user, &attributes.namespace, &mut |rule| {
                rule_allows(attributes, rule)
            });
        if allowed {
            return Decision::allow();
        }
        let reason = match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors[0]),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        };
        Decision {
            allowed: false,
            reason,
        }
    }

    fn list(&self, kind: RbacKind, namespace: &str) -> Vec<Value> {
        self.objects
            .iter()
            .filter(|(k, _)| k.0 == kind && (namespace.is_empty() || k.1 == namespace))
            .map(|(_, e)| e.json.clone())
            .collect()
    }
}

/// The permissions in `rules` the requester does not hold (in `namespace`), as upstream's
/// escalation check; each missing one worded as upstream prints a rule.
fn missing_permissions(
    security: &Security,
    requester: &Attributes,
    namespace: &str,
    rules: &[PolicyRule],
) -> Vec<String> {
    let mut missing = Vec::new();
    let held = |attributes: Attributes| security.authorize(&attributes).allowed;
    for rule in rules {
        for verb in &rule.verbs {
            if !rule.non_resource_urls.is_empty() {
                for url in &rule.non_resource_urls {
                    let a = Attributes {
                        user: requester.user.clone(),
                        verb: verb.clone(),
                        resource_request: false,
                        path: url.clone(),
                        ..Attributes::default()
                    };
                    if !held(a) {
                        missing.push(format!("{{NonResourceURLs:[{url:?}], Verbs:[{verb:?}]}}"));
                    }
                }
                continue;
            }
            for group in &rule.api_groups {
                for resource in &rule.resources {
                    let (res, sub) = resource.split_once('/').unwrap_or((resource, ""));
                    let names: Vec<&str> = if rule.resource_names.is_empty() {
                        vec![""]
                    } else {
                        rule.resource_names.iter().map(String::as_str).collect()
                    };
                    for name in names {
                        let a = Attributes {
                            user: requester.user.clone(),
                            verb: verb.clone(),
                            resource_request: true,
                            api_group: group.clone(),
                            api_version: "*".into(),
                            resource: res.to_string(),
                            subresource: sub.to_string(),
                            namespace: namespace.to_string(),
                            name: name.to_string(),
                            path: String::new(),
                        };
                        if !held(a) {
                            let names = if name.is_empty() {
                                String::new()
                            } else {
                                format!(", ResourceNames:[{name:?}]")
                            };
                            missing.push(format!(
                                "{{APIGroups:[{group:?}], Resources:[{resource:?}]{names}, Verbs:[{verb:?}]}}"
                            ));
                        }
                    }
                }
            }
        }
    }
    missing
}

fn escalation_error(
    requester: &Attributes,
    kind: RbacKind,
    name: &str,
    missing: &[String],
) -> Failure {
    let user = &requester.user;
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    let message = format!(
        "{} {name:?} is forbidden: user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        qualified(kind),
        user.name,
        groups.join(" "),
        missing.join("\n")
    );
    status(
        403,
        "Forbidden",
        message,
        json!({"name": name, "group": GROUP, "kind": kind.plural()}),
    )
}

/// Upstream's escalation prevention for a new or changed role or binding.
fn check_escalation(
    security: &Security,
    store: &RbacStore,
    requester: &Attributes,
    kind: RbacKind,
    namespace: &str,
    name: &str,
    body: &Body,
) -> Result<(), Failure> {
    if requester.user.in_group(crate::auth::SYSTEM_MASTERS) {
        return Ok(());
    }
    let authorized = |verb: &str, plural: &str, ns: &str, object: &str| {
        let a = Attributes {
            verb: verb.into(),
            resource_request: true,
            api_group: GROUP.into(),
            api_version: VERSION.into(),
            resource: plural.into(),
            subresource: String::new(),
            namespace: ns.into(),
            name: object.into(),
            ..requester.clone()
        };
        store.authorize(&a).allowed
    };
    let (rules, scope): (Vec<PolicyRule>, &str) = match body {
        Body::Rules(rules) => {
            if authorized("escalate", kind.plural(), namespace, name) {
                return Ok(());
            }
            (rules.clone(), namespace)
        }
        Body::Binding { role_ref, .. } => {
            let plural = if role_ref.kind == "Role" {
                "roles"
            } else {
                "clusterroles"
            };
            let role_ns = if role_ref.kind == "Role" {
                namespace
            } else {
                ""
            };
            if authorized("bind", plural, role_ns, &role_ref.name) {
                return Ok(());
            }
            let rules = store
                .rules_of(&role_ref.kind, namespace, &role_ref.name)
                .map_err(|e| {
                    status(
                        403,
                        "Forbidden",
                        format!("{} {name:?} is forbidden: {e}", qualified(kind)),
                        json!({"name": name, "group": GROUP, "kind": kind.plural()}),
                    )
                })?
                .to_vec();
            (rules, namespace)
        }
    };
    let missing = missing_permissions(security, requester, scope, &rules);
    if missing.is_empty() {
        Ok(())
    } else {
        Err(escalation_error(requester, kind, name, &missing))
    }
}

fn table(kind: RbacKind, items: &[Value], resource_version: &str) -> Value {
    table_with(kind, items, resource_version, true)
}

fn table_with(
    kind: RbacKind,
    items: &[Value],
    resource_version: &str,
    with_columns: bool,
) -> Value {
    let now = chrono::Utc::now();
    let age = |item: &Value| {
        item.pointer("/metadata/creationTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .map(|t| {
                crate::resources::human_age(
                    (now - t.with_timezone(&chrono::Utc)).num_seconds().max(0),
                )
            })
            .unwrap_or_else(|| "<unknown>".into())
    };
    let (columns, rows): (Vec<Value>, Vec<Value>) = if kind.is_binding() {
        (
            vec![
                json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}),
                json!({"name": "Role", "type": "string", "format": "", "description": "Role", "priority": 0}),
                json!({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0}),
            ],
            items
                .iter()
                .map(|i| {
                    let role = format!(
                        "{}/{}",
                        i.pointer("/roleRef/kind").and_then(Value::as_str).unwrap_or_default(),
                        i.pointer("/roleRef/name").and_then(Value::as_str).unwrap_or_default()
                    );
                    json!({"cells": [i.pointer("/metadata/name"), role, age(i)],
                           "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": i["metadata"]}})
                })
                .collect(),
        )
    } else {
        (
            vec![
                json!({"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}),
                json!({"name": "Created At", "type": "date", "format": "", "description": "Created At", "priority": 0}),
            ],
            items
                .iter()
                .map(|i| {
                    json!({"cells": [i.pointer("/metadata/name"), i.pointer("/metadata/creationTimestamp")],
                           "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": i["metadata"]}})
                })
                .collect(),
        )
    };
    let columns = if with_columns { columns } else { Vec::new() };
    json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": resource_version},
           "columnDefinitions": columns, "rows": rows})
}

/// `/apis/rbac.authorization.k8s.io/v1`: the APIResourceList.
pub fn api_resource_list() -> Value {
    let resources: Vec<Value> = RbacKind::ALL
        .iter()
        .map(|k| {
            json!({"name": k.plural(), "singularName": k.singular(), "namespaced": k.namespaced(),
                   "kind": k.name(), "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]})
        })
        .collect();
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{GROUP}/{VERSION}"), "resources": resources})
}

/// The `/openapi/v3` root entry for the group: path and document URL.
pub fn openapi_v3_path() -> (String, Value) {
    let path = format!("apis/{GROUP}/{VERSION}");
    let url = json!({"serverRelativeURL": format!("/openapi/v3/{path}?hash=allotrbac1")});
    (path, url)
}

/// The OpenAPI v3 document of the group: the write operations with `fieldValidation` (so
/// kubectl leaves field validation to the server) and a schema per kind.
pub fn openapi_v3_document() -> Value {
    let mut paths = serde_json::Map::new();
    let mut schemas = serde_json::Map::new();
    for kind in RbacKind::ALL {
        let gvk = json!({"group": GROUP, "version": VERSION, "kind": kind.name()});
        let params = json!([
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
            {"name": "fieldManager", "in": "query", "schema": {"type": "string"}},
        ]);
        let op = |id: String| {
            json!({"operationId": id, "parameters": params, "x-kubernetes-group-version-kind": gvk,
                   "responses": {"200": {"description": "OK"}}})
        };
        let base = if kind.namespaced() {
            format!("/apis/{GROUP}/{VERSION}/namespaces/{{namespace}}/")
        } else {
            format!("/apis/{GROUP}/{VERSION}/")
        };
        paths.insert(
            format!("{base}{}", kind.plural()),
            json!({"post": op(format!("create{}", kind.name()))}),
        );
        paths.insert(
            format!("{base}{}/{{name}}", kind.plural()),
            json!({"put": op(format!("replace{}", kind.name())), "patch": op(format!("patch{}", kind.name()))}),
        );
        schemas.insert(
            format!("io.k8s.api.rbac.v1.{}", kind.name()),
            json!({"type": "object", "x-kubernetes-group-version-kind": [gvk]}),
        );
    }
    json!({"openapi": "3.0.0", "info": {"title": "allot", "version": "v1.37.0"},
           "paths": paths, "components": {"schemas": schemas}})
}

/// The APIGroup entry for `/apis`.
pub fn api_group() -> Value {
    let gv = json!({"groupVersion": format!("{GROUP}/{VERSION}"), "version": VERSION});
    json!({"name": GROUP, "versions": [gv.clone()], "preferredVersion": gv})
}

/// The label and field selectors of a list or watch.
struct Filter {
    namespace: String,
    labels: crate::selector::Selector,
    fields: crate::selector::Selector,
}

impl Filter {
    fn new(namespace: &str, query: &[(String, String)]) -> Result<Filter, Failure> {
        let get = |key: &str| {
            query
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map_or("", |(_, v)| v.as_str())
        };
        Ok(Filter {
            namespace: namespace.to_string(),
            labels: crate::selector::Selector::parse_labels(get("labelSelector"))
                .map_err(bad_request)?,
            fields: crate::selector::Selector::parse_fields(get("fieldSelector"))
                .map_err(bad_request)?,
        })
    }

    fn matches(&self, object: &Value) -> bool {
        let labels: BTreeMap<String, String> = object
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_string())))
                    .collect()
            })
            .unwrap_or_default();
        (self.namespace.is_empty()
            || object
                .pointer("/metadata/namespace")
                .and_then(Value::as_str)
                == Some(self.namespace.as_str()))
            && self.labels.matches_labels(&labels)
            && (self.fields.requirements.is_empty() || self.fields.matches_fields(object))
    }
}

/// A watch of one RBAC kind: the current objects as ADDED (without a resourceVersion or with
/// "0"), then ADDED/MODIFIED/DELETED as saved changes show them (snapshots compared by
/// resourceVersion), BOOKMARKs when asked for, until `timeoutSeconds`. The objects keep no
/// history, so a watch from an older resourceVersion gets 410 Gone (the client lists again).
pub fn watch(
    security: std::sync::Arc<Security>,
    attributes: &Attributes,
    query: &[(String, String)],
    table_output: bool,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    let respond = |(code, value): Failure| {
        let code = axum::http::StatusCode::from_u16(code)
            .unwrap_or(axum::http::StatusCode::INTERNAL_SERVER_ERROR);
        (
            code,
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            serde_json::to_vec(&value).unwrap_or_default(),
        )
            .into_response()
    };
    let Some(kind) = RbacKind::of_plural(&attributes.resource)
        .filter(|_| attributes.api_version == VERSION && attributes.subresource.is_empty())
    else {
        return respond(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Value::Null,
        ));
    };
    let filter = match Filter::new(&attributes.namespace, query) {
        Ok(filter) => filter,
        Err(failure) => return respond(failure),
    };
    let get = |key: &str| {
        query
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map_or(String::new(), |(_, v)| v.clone())
    };
    let requested = get("resourceVersion");
    let bookmarks = matches!(get("allowWatchBookmarks").as_str(), "true" | "1");
    let initial = matches!(get("sendInitialEvents").as_str(), "true" | "1");
    let timeout = get("timeoutSeconds")
        .parse::<u64>()
        .ok()
        .map(std::time::Duration::from_secs);
    let snapshot = move |store: &RbacStore| -> BTreeMap<Key, Value> {
        store
            .objects
            .iter()
            .filter(|(k, e)| k.0 == kind && filter.matches(&e.json))
            .map(|(k, e)| (k.clone(), e.json.clone()))
            .collect()
    };
    let (mut changed, mut seen, current) = {
        let store = security
            .rbac
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        (
            store.changed.subscribe(),
            snapshot(&store),
            store.resource_version,
        )
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<String, std::io::Error>>(64);
    let mut first = true;
    let mut encode = move |event: &str, object: Value, rv: u64| {
        let object = if table_output && event != "BOOKMARK" && event != "ERROR" {
            let t = table_with(kind, &[object], &rv.to_string(), first);
            first = false;
            t
        } else {
            object
        };
        let mut line =
            serde_json::to_string(&json!({"type": event, "object": object})).unwrap_or_default();
        line.push('\n');
        line
    };
    let bookmark = move |rv: u64| json!({"kind": kind.name(), "apiVersion": API_VERSION, "metadata": {"resourceVersion": rv.to_string()}});
    tokio::spawn(async move {
        let mut lines = Vec::new();
        let from_now = requested.is_empty() || requested == "0" || initial;
        if from_now {
            for object in seen.values() {
                lines.push(encode("ADDED", object.clone(), current));
            }
            if initial && bookmarks {
                let mut b = bookmark(current);
                b["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                lines.push(encode("BOOKMARK", b, current));
            }
        } else if requested.parse::<u64>().ok() != Some(current) {
            let (_, gone) = status(
                410,
                "Expired",
                format!("too old resource version: {requested} ({current})"),
                Value::Null,
            );
            let _ = tx.send(Ok(encode("ERROR", gone, current))).await;
            return;
        }
        for line in lines {
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let mut last_rv = current;
        loop {
            let until_deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                result = changed.changed() => {
                    if result.is_err() {
                        return;
                    }
                }
                () = tokio::time::sleep(std::time::Duration::from_secs(60)) => {
                    if bookmarks && tx.send(Ok(encode("BOOKMARK", bookmark(last_rv), last_rv))).await.is_err() {
                        return;
                    }
                    continue;
                }
                () = until_deadline => return,
                () = tx.closed() => return,
            }
            let (now, rv) = {
                let store = security
                    .rbac
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                (snapshot(&store), store.resource_version)
            };
            let mut events = Vec::new();
            for (key, object) in &now {
                match seen.get(key) {
                    None => events.push(encode("ADDED", object.clone(), rv)),
                    Some(old)
                        if old.pointer("/metadata/resourceVersion")
                            != object.pointer("/metadata/resourceVersion") =>
                    {
                        events.push(encode("MODIFIED", object.clone(), rv));
                    }
                    Some(_) => {}
                }
            }
            for (key, object) in &seen {
                if !now.contains_key(key) {
                    let mut gone = object.clone();
                    gone["metadata"]["resourceVersion"] = json!(rv.to_string());
                    events.push(encode("DELETED", gone, rv));
                }
            }
            seen = now;
            last_rv = rv;
            for line in events {
                if tx.send(Ok(line)).await.is_err() {
                    return;
                }
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    axum::response::Response::builder()
        .status(axum::http::StatusCode::OK)
        .header(axum::http::header::CONTENT_TYPE, "application/json")
        .body(axum::body::Body::from_stream(stream))
        .unwrap_or_else(|_| {
            respond(status(
                500,
                "InternalError",
                "cannot build the watch response",
                Value::Null,
            ))
        })
}

/// One RBAC request (already authenticated and authorized for its verb).
pub struct Request<'a> {
    /// The server's security state.
    pub security: &'a Security,
    /// The request's attributes.
    pub attributes: &'a Attributes,
    /// The HTTP method.
    pub method: &'a str,
    /// The parsed body (JSON or YAML) of a create or update.
    pub body: Option<Value>,
    /// The Content-Type.
    pub content_type: &'a str,
    /// Whether the client asked for a Table.
    pub table: bool,
    /// `?dryRun=All`.
    pub dry_run: bool,
    /// Whether a namespace exists (namespaced objects need theirs).
    pub namespace_exists: &'a dyn Fn(&str) -> bool,
    /// The body as sent (patches are applied to it).
    pub raw: &'a [u8],
    /// The query (label and field selectors of lists).
    pub query: &'a [(String, String)],
    /// The field manager (`?fieldManager=` or the user agent's program).
    pub field_manager: String,
    /// Whether `?fieldManager=` was given (server-side apply needs it).
    pub explicit_manager: bool,
    /// `?force=true`.
    pub force: bool,
}

/// Serves a request under `/apis/rbac.authorization.k8s.io/`; `None` for other paths.
pub fn handle(request: Request<'_>) -> Option<Result<(u16, Value), Failure>> {
    let a = request.attributes;
    if a.resource_request && a.api_group == crate::auth::REVIEW_GROUP && a.api_version == "v1" {
        return Some(request.security.review(a, request.body));
    }
    if !a.resource_request || a.api_group != GROUP {
        return None;
    }
    if a.api_version != VERSION {
        return Some(Err(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Value::Null,
        )));
    }
    let Some(kind) = RbacKind::of_plural(&a.resource) else {
        return Some(Err(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Value::Null,
        )));
    };
    if !a.subresource.is_empty() || (!kind.namespaced() && !a.namespace.is_empty()) {
        return Some(Err(status(
            404,
            "NotFound",
            "the server could not find the requested resource",
            Value::Null,
        )));
    }
    Some(serve(request, kind))
}

/// The server-side-apply schema of the RBAC kinds: metadata as every kind's, and `rules`,
/// `subjects` atomic (upstream marks them `+listType=atomic`), `roleRef` a struct.
struct RbacSchema;

impl crate::patch::Schema for RbacSchema {
    fn field(&self, path: &[String]) -> crate::patch::FieldMeta {
        if path.first().is_some_and(|p| p == "metadata") {
            crate::patch::KindSchema(allot_store::Kind::Namespace).field(path)
        } else {
            crate::patch::FieldMeta::PLAIN
        }
    }
}

fn writer<'a>(request: &'a Request<'_>, now: &'a str) -> crate::apply::Writer<'a> {
    crate::apply::Writer {
        manager: &request.field_manager,
        api_version: API_VERSION,
        scope: crate::apply::Scope::Main,
        now,
    }
}

/// `group/version` of the served kinds.
const API_VERSION: &str = "rbac.authorization.k8s.io/v1";

fn set_managed_fields(json: &mut Value, entries: &[crate::apply::Entry]) {
    if entries.is_empty() {
        if let Some(m) = json["metadata"].as_object_mut() {
            m.remove("managedFields");
        }
    } else {
        json["metadata"]["managedFields"] = json!(crate::apply::entries_json(entries));
    }
}

/// Creates an object from `body`; `entries` are the managed fields an apply computed (an
/// `Update` entry for the request's manager otherwise).
fn create(
    request: &Request<'_>,
    kind: RbacKind,
    mut body: Value,
    entries: Option<Vec<crate::apply::Entry>>,
) -> Result<(u16, Value), Failure> {
    let security = request.security;
    let a = request.attributes;
    let namespace = a.namespace.as_str();
    if let Some(m) = body.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
        ] {
            m.remove(f);
        }
    }
    let (mut json, typed) = decode(kind, namespace, body)?;
    let name = json
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if kind.namespaced() && !(request.namespace_exists)(namespace) {
        return Err(status(
            404,
            "NotFound",
            format!("namespaces {namespace:?} not found"),
            json!({"name": namespace, "kind": "namespaces"}),
        ));
    }
    let now = now_rfc3339();
    let entries = entries.unwrap_or_else(|| {
        crate::apply::record_update(None, &json, &writer(request, &now), &RbacSchema)
    });
    set_managed_fields(&mut json, &entries);
    let key = (kind, namespace.to_string(), name.clone());
    let exists = || {
        status(
            409,
            "AlreadyExists",
            format!("{} {name:?} already exists", qualified(kind)),
            json!({"name": name, "group": GROUP, "kind": kind.plural()}),
        )
    };
    {
        let store = security
            .rbac
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if store.objects.contains_key(&key) {
            return Err(exists());
        }
        check_escalation(security, &store, a, kind, namespace, &name, &typed)?;
    }
    let mut store = security
        .rbac
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if store.objects.contains_key(&key) {
        return Err(exists());
    }
    if request.dry_run {
        json["metadata"]["uid"] = json!(new_uid());
        json["metadata"]["creationTimestamp"] = json!(now);
        return Ok((201, json));
    }
    let saved = store.insert(kind, json, typed);
    store
        .save()
        .map_err(|e| status(500, "InternalError", e.to_string(), Value::Null))?;
    Ok((201, saved))
}

/// Replaces `current` with `new` (server metadata kept, `precondition` a resourceVersion that
/// must match); `entries` are the managed fields an apply computed.
fn replace(
    request: &Request<'_>,
    kind: RbacKind,
    current: &Value,
    mut new: Value,
    precondition: Option<Value>,
    entries: Option<Vec<crate::apply::Entry>>,
) -> Result<(u16, Value), Failure> {
    let security = request.security;
    let a = request.attributes;
    let namespace = a.namespace.as_str();
    let key = (kind, namespace.to_string(), a.name.clone());
    let body_name = new
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if body_name != a.name {
        return Err(bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            a.name
        )));
    }
    // Server-managed metadata comes from the stored object.
    for field in ["uid", "creationTimestamp", "resourceVersion"] {
        new["metadata"][field] = current["metadata"][field].clone();
    }
    let (mut json, typed) = decode(kind, namespace, new)?;
    if let (Body::Binding { role_ref, .. }, Some(old_ref)) = (&typed, current.get("roleRef"))
        && json!(role_ref) != *old_ref
    {
        return Err(invalid(
            kind,
            &a.name,
            &[FieldError::invalid(
                "roleRef",
                BadValue::Raw(format!(
                    "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                    role_ref.api_group, role_ref.kind, role_ref.name
                )),
                "cannot change roleRef",
            )],
        ));
    }
    let now = now_rfc3339();
    let entries = entries.unwrap_or_else(|| {
        crate::apply::record_update(Some(current), &json, &writer(request, &now), &RbacSchema)
    });
    set_managed_fields(&mut json, &entries);
    {
        let store = security
            .rbac
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        check_escalation(security, &store, a, kind, namespace, &a.name, &typed)?;
    }
    let mut store = security
        .rbac
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let stored_rv = store
        .objects
        .get(&key)
        .and_then(|e| e.json.pointer("/metadata/resourceVersion").cloned())
        .ok_or_else(|| not_found(kind, &a.name))?;
    if let Some(wanted) = precondition.filter(|v| v.as_str().is_some_and(|s| !s.is_empty()))
        && wanted != stored_rv
    {
        return Err(status(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {} {:?}: the object has been modified; please apply your changes to the latest version and try again",
                qualified(kind),
                a.name
            ),
            json!({"name": a.name, "group": GROUP, "kind": kind.plural()}),
        ));
    }
    if json == store.objects[&key].json || request.dry_run {
        return Ok((200, json));
    }
    store.resource_version += 1;
    json["metadata"]["resourceVersion"] = json!(store.resource_version.to_string());
    store.objects.insert(
        key,
        Entry {
            json: json.clone(),
            body: typed,
        },
    );
    store
        .save()
        .map_err(|e| status(500, "InternalError", e.to_string(), Value::Null))?;
    Ok((200, json))
}

/// Server-side apply (`application/apply-patch+yaml`) with p5's engine: creates the object when
/// missing, 409 on fields other managers own unless `force`.
fn server_side_apply(
    request: &Request<'_>,
    kind: RbacKind,
    current: Option<Value>,
) -> Result<(u16, Value), Failure> {
    if !request.explicit_manager {
        return Err(status(
            422,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
            Value::Null,
        ));
    }
    let text = std::str::from_utf8(request.raw)
        .map_err(|_| bad_request("the request body is not UTF-8"))?;
    let config: Value = match serde_json::from_str(text) {
        Ok(value) => value,
        Err(_) => {
            let mut documents = allot_api::load::parse_str("request", text)
                .map_err(|e| bad_request(e.to_string()))?;
            if documents.len() != 1 {
                return Err(bad_request("the request body must hold exactly one object"));
            }
            documents.remove(0).value
        }
    };
    let body_name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if body_name != request.attributes.name {
        return Err(bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({})",
            request.attributes.name
        )));
    }
    let now = now_rfc3339();
    let w = writer(request, &now);
    let (merged, entries) =
        crate::apply::apply(current.as_ref(), &config, &w, request.force, &RbacSchema)
            .map_err(|c| status(409, "Conflict", c.message(), json!({"causes": c.causes()})))?;
    match current {
        None => create(request, kind, merged, Some(entries)),
        Some(current) => {
            let precondition = config.pointer("/metadata/resourceVersion").cloned();
            replace(request, kind, &current, merged, precondition, Some(entries))
        }
    }
}

fn serve(request: Request<'_>, kind: RbacKind) -> Result<(u16, Value), Failure> {
    let a = request.attributes;
    let security = request.security;
    let namespace = a.namespace.as_str();
    let key = (kind, namespace.to_string(), a.name.clone());
    match a.verb.as_str() {
        "get" => {
            let store = security
                .rbac
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let object = store
                .objects
                .get(&key)
                .map(|e| e.json.clone())
                .ok_or_else(|| not_found(kind, &a.name))?;
            if request.table {
                return Ok((
                    200,
                    table(kind, &[object], &store.resource_version.to_string()),
                ));
            }
            Ok((200, object))
        }
        "list" => {
            let store = security
                .rbac
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let filter = Filter::new(namespace, request.query)?;
            let mut items = store.list(kind, namespace);
            items.retain(|i| filter.matches(i));
            if !a.name.is_empty() {
                items.retain(|i| {
                    i.pointer("/metadata/name").and_then(Value::as_str) == Some(&a.name)
                });
            }
            let rv = store.resource_version.to_string();
            if request.table {
                return Ok((200, table(kind, &items, &rv)));
            }
            Ok((
                200,
                json!({"kind": format!("{}List", kind.name()), "apiVersion": format!("{GROUP}/{VERSION}"),
                       "metadata": {"resourceVersion": rv}, "items": items}),
            ))
        }
        "watch" => Err(status(
            405,
            "MethodNotAllowed",
            format!("watch is not supported on {}", qualified(kind)),
            Value::Null,
        )),
        "create" => {
            let body = request.body.clone().unwrap_or(Value::Null);
            create(&request, kind, body, None)
        }
        "update" | "patch" => {
            let current = {
                let store = security
                    .rbac
                    .read()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                store.objects.get(&key).map(|e| e.json.clone())
            };
            let patch_type = (a.verb == "patch")
                .then(|| crate::patch::PatchType::from_content_type(request.content_type))
                .map(|t| {
                    t.ok_or_else(|| {
                        status(
                            415,
                            "UnsupportedMediaType",
                            format!(
                                "the body of the request was in an unknown format - accepted media types include: {}",
                                crate::patch::ACCEPTED_PATCH_TYPES
                            ),
                            Value::Null,
                        )
                    })
                })
                .transpose()?;
            if patch_type == Some(crate::patch::PatchType::Apply) {
                return server_side_apply(&request, kind, current);
            }
            let current = current.ok_or_else(|| not_found(kind, &a.name))?;
            let (new, precondition) = match patch_type {
                Some(t) => {
                    let patched = crate::patch::patch_object(t, &current, request.raw, &RbacSchema)
                        .map_err(|e| {
                            let code = if e.malformed { 400 } else { 422 };
                            let reason = if e.malformed { "BadRequest" } else { "Invalid" };
                            status(code, reason, e.message, Value::Null)
                        })?;
                    let patch: Value = serde_json::from_slice(request.raw).unwrap_or(Value::Null);
                    (patched, patch.pointer("/metadata/resourceVersion").cloned())
                }
                None => {
                    let body = request.body.clone().unwrap_or(Value::Null);
                    let precondition = body.pointer("/metadata/resourceVersion").cloned();
                    (body, precondition)
                }
            };
            replace(&request, kind, &current, new, precondition, None)
        }
        "delete" => {
            let mut store = security
                .rbac
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let entry = store
                .objects
                .get(&key)
                .cloned()
                .ok_or_else(|| not_found(kind, &a.name))?;
            if request.dry_run {
                return Ok((200, entry.json));
            }
            store.objects.remove(&key);
            store.resource_version += 1;
            store
                .save()
                .map_err(|e| status(500, "InternalError", e.to_string(), Value::Null))?;
            Ok((
                200,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
                       "details": {"name": a.name, "group": GROUP, "kind": kind.plural(), "uid": entry.json.pointer("/metadata/uid")}}),
            ))
        }
        other => Err(status(
            405,
            "MethodNotAllowed",
            format!("{other} is not supported on {}", qualified(kind)),
            Value::Null,
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn rule(verbs: &[&str], groups: &[&str], resources: &[&str], names: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: strings(verbs),
            api_groups: strings(groups),
            resources: strings(resources),
            resource_names: strings(names),
            non_resource_urls: Vec::new(),
        }
    }

    fn request(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> Attributes {
        Attributes {
            user: Arc::new(User::default()),
            verb: verb.into(),
            resource_request: true,
            api_group: group.into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..Attributes::default()
        }
    }

    #[test]
    fn rules_match_as_upstreams_rule_allows() {
        let claims = rule(
            &["get", "list"],
            &["resource.k8s.io"],
            &["resourceclaims"],
            &[],
        );
        let status = rule(
            &["update"],
            &["resource.k8s.io"],
            &["resourceclaims/status"],
            &[],
        );
        let any_status = rule(&["update"], &["*"], &["*/status"], &[]);
        let named = rule(
            &["arbitrary-node:update"],
            &["resource.k8s.io"],
            &["resourceclaims/driver"],
            &["gpu.example.com"],
        );
        let all = rule(&["*"], &["*"], &["*"], &[]);
        let cases = [
            (
                &claims,
                request("get", "resource.k8s.io", "resourceclaims", "", "c"),
                true,
            ),
            (
                &claims,
                request("list", "resource.k8s.io", "resourceclaims", "", ""),
                true,
            ),
            (
                &claims,
                request("delete", "resource.k8s.io", "resourceclaims", "", "c"),
                false,
            ),
            (
                &claims,
                request("get", "", "resourceclaims", "", "c"),
                false,
            ),
            (
                &claims,
                request("get", "resource.k8s.io", "resourceclaims", "status", "c"),
                false,
            ),
            (
                &status,
                request("update", "resource.k8s.io", "resourceclaims", "status", "c"),
                true,
            ),
            (
                &status,
                request("update", "resource.k8s.io", "resourceclaims", "", "c"),
                false,
            ),
            (
                &any_status,
                request("update", "", "pods", "status", "p"),
                true,
            ),
            (&any_status, request("update", "", "pods", "", "p"), false),
            (
                &named,
                request(
                    "arbitrary-node:update",
                    "resource.k8s.io",
                    "resourceclaims",
                    "driver",
                    "gpu.example.com",
                ),
                true,
            ),
            (
                &named,
                request(
                    "arbitrary-node:update",
                    "resource.k8s.io",
                    "resourceclaims",
                    "driver",
                    "nic.example.com",
                ),
                false,
            ),
            (
                &named,
                request(
                    "associated-node:update",
                    "resource.k8s.io",
                    "resourceclaims",
                    "driver",
                    "gpu.example.com",
                ),
                false,
            ),
            (
                &named,
                request(
                    "update",
                    "resource.k8s.io",
                    "resourceclaims",
                    "driver",
                    "gpu.example.com",
                ),
                false,
            ),
            (
                &all,
                request(
                    "escalate",
                    "rbac.authorization.k8s.io",
                    "clusterroles",
                    "",
                    "x",
                ),
                true,
            ),
        ];
        for (i, (rule, attributes, want)) in cases.iter().enumerate() {
            assert_eq!(
                rule_allows(attributes, rule),
                *want,
                "case {i}: {attributes:?}"
            );
        }
        let urls = PolicyRule {
            verbs: strings(&["get"]),
            non_resource_urls: strings(&["/healthz", "/apis/*"]),
            ..PolicyRule::default()
        };
        let path = |p: &str| Attributes {
            verb: "get".into(),
            path: p.into(),
            ..Attributes::default()
        };
        assert!(rule_allows(&path("/healthz"), &urls));
        assert!(rule_allows(&path("/apis/resource.k8s.io/v1"), &urls));
        assert!(!rule_allows(&path("/apis"), &urls));
        assert!(!rule_allows(&path("/healthz/etcd"), &urls));
        assert!(
            !rule_allows(&path("/healthz"), &claims),
            "resource rules never match paths"
        );
    }

    #[test]
    fn subjects_match_users_groups_and_service_accounts() {
        let user = User {
            name: "system:serviceaccount:ns1:robot".into(),
            groups: strings(&["system:serviceaccounts", "team"]),
            ..User::default()
        };
        let subject = |kind: &str, name: &str, namespace: &str| Subject {
            kind: kind.into(),
            api_group: String::new(),
            name: name.into(),
            namespace: namespace.into(),
        };
        assert!(subject_applies(
            &subject("User", "system:serviceaccount:ns1:robot", ""),
            &user,
            ""
        ));
        assert!(subject_applies(&subject("Group", "team", ""), &user, ""));
        assert!(!subject_applies(&subject("Group", "other", ""), &user, ""));
        assert!(subject_applies(
            &subject("ServiceAccount", "robot", "ns1"),
            &user,
            ""
        ));
        assert!(
            subject_applies(&subject("ServiceAccount", "robot", ""), &user, "ns1"),
            "binding's namespace"
        );
        assert!(!subject_applies(
            &subject("ServiceAccount", "robot", ""),
            &user,
            ""
        ));
        assert!(!subject_applies(
            &subject("ServiceAccount", "robot", "ns2"),
            &user,
            "ns1"
        ));
        assert!(!subject_applies(
            &subject("Robot", "robot", "ns1"),
            &user,
            "ns1"
        ));
    }

    fn decode_yaml_free(kind: RbacKind, ns: &str, value: Value) -> Result<Value, String> {
        decode(kind, ns, value)
            .map(|(json, _)| json)
            .map_err(|(_, status)| status["message"].as_str().unwrap_or_default().to_string())
    }

    #[test]
    fn objects_are_validated_and_defaulted_as_upstream() {
        let binding = decode_yaml_free(
            RbacKind::RoleBinding,
            "ns",
            json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "bob"}, {"kind": "ServiceAccount", "name": "sa"}],
                   "roleRef": {"kind": "Role", "name": "r"}}),
        )
        .expect("valid");
        assert_eq!(
            binding["subjects"][0]["apiGroup"], GROUP,
            "User subjects default the group"
        );
        assert!(binding["subjects"][1].get("apiGroup").is_none());
        assert_eq!(binding["roleRef"]["apiGroup"], GROUP);
        assert_eq!(binding["metadata"]["namespace"], "ns");
        let cases = [
            (
                RbacKind::Role,
                json!({"metadata": {"name": "r"}, "rules": [{"nonResourceURLs": ["/x"], "verbs": ["get"]}]}),
                "Role.rbac.authorization.k8s.io \"r\" is invalid: rules[0].nonResourceURLs: Invalid value: []string{\"/x\"}: namespaced rules cannot apply to non-resource URLs",
            ),
            (
                RbacKind::ClusterRole,
                json!({"metadata": {"name": "c"}, "rules": [{"verbs": ["get"]}]}),
                "ClusterRole.rbac.authorization.k8s.io \"c\" is invalid: [rules[0].apiGroups: Required value: resource rules must supply at least one api group, rules[0].resources: Required value: resource rules must supply at least one resource]",
            ),
            (
                RbacKind::ClusterRoleBinding,
                json!({"metadata": {"name": "b"}, "subjects": [{"kind": "ServiceAccount", "name": "sa"}], "roleRef": {"kind": "Role", "name": "r"}}),
                "ClusterRoleBinding.rbac.authorization.k8s.io \"b\" is invalid: [roleRef.kind: Unsupported value: \"Role\": supported values: \"ClusterRole\", subjects[0].namespace: Required value]",
            ),
            (
                RbacKind::RoleBinding,
                json!({"metadata": {"name": "b"}, "subjects": [{"kind": "Robot", "name": "x"}], "roleRef": {"kind": "Role", "name": ""}}),
                "RoleBinding.rbac.authorization.k8s.io \"b\" is invalid: [roleRef.name: Required value, subjects[0].kind: Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"]",
            ),
            (
                RbacKind::Role,
                json!({"metadata": {"name": "r"}, "subjects": []}),
                "strict decoding error: unknown field \"subjects\"",
            ),
            (
                RbacKind::Role,
                json!({"metadata": {"name": "r"}, "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "colour": "red"}]}),
                "rules: unknown field `colour`",
            ),
            (
                RbacKind::Role,
                json!({"metadata": {"name": "r", "namespace": "other"}}),
                "the namespace of the provided object does not match the namespace sent on the request",
            ),
        ];
        for (kind, value, want) in cases {
            let got = decode_yaml_free(kind, "ns", value).expect_err("invalid");
            assert!(
                got.starts_with(want),
                "{kind:?}: got {got:?}, want {want:?}"
            );
        }
    }

    #[test]
    fn granting_needs_the_permissions_granted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("t.csv");
        std::fs::write(&file, "b,bob,1\n").expect("w");
        let security = Security::open(dir.path(), Some(&file)).expect("opens");
        let bob = Arc::new(security.authenticate(Some(b"Bearer b")).expect("bob"));
        {
            let mut store = security.rbac.write().expect("lock");
            for (kind, ns, value) in [
                (
                    RbacKind::Role,
                    "team",
                    json!({"metadata": {"name": "claims"}, "rules": [
                    {"verbs": ["get", "list"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims", "resourceclaims/status"]}]}),
                ),
                (
                    RbacKind::RoleBinding,
                    "team",
                    json!({"metadata": {"name": "bob"}, "subjects": [{"kind": "User", "name": "bob"}],
                    "roleRef": {"kind": "Role", "name": "claims"}}),
                ),
            ] {
                let (json, body) = decode(kind, ns, value).expect("valid");
                store.insert(kind, json, body);
            }
        }
        let requester = Attributes {
            user: bob,
            ..Attributes::default()
        };
        let held = rule(
            &["get"],
            &["resource.k8s.io"],
            &["resourceclaims/status"],
            &[],
        );
        let not_held = rule(
            &["get", "delete"],
            &["resource.k8s.io", ""],
            &["resourceclaims"],
            &["c"],
        );
        assert!(
            missing_permissions(&security, &requester, "team", std::slice::from_ref(&held))
                .is_empty()
        );
        assert_eq!(
            missing_permissions(&security, &requester, "other", &[held]),
            vec![
                "{APIGroups:[\"resource.k8s.io\"], Resources:[\"resourceclaims/status\"], Verbs:[\"get\"]}"
            ],
            "held only in its namespace"
        );
        assert_eq!(
            missing_permissions(&security, &requester, "team", &[not_held]),
            vec![
                "{APIGroups:[\"\"], Resources:[\"resourceclaims\"], ResourceNames:[\"c\"], Verbs:[\"get\"]}",
                "{APIGroups:[\"resource.k8s.io\"], Resources:[\"resourceclaims\"], ResourceNames:[\"c\"], Verbs:[\"delete\"]}",
                "{APIGroups:[\"\"], Resources:[\"resourceclaims\"], ResourceNames:[\"c\"], Verbs:[\"delete\"]}",
            ]
        );
        let everything = rule(&["*"], &["*"], &["*"], &[]);
        assert_eq!(
            missing_permissions(&security, &requester, "team", &[everything]).len(),
            1,
            "a wildcard is held only through a wildcard"
        );
    }

    #[test]
    fn store_bootstraps_persists_and_explains_missing_roles() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("rbac.json");
        let mut store = RbacStore::open(&path).expect("opens");
        for name in [
            "cluster-admin",
            "system:discovery",
            "system:basic-user",
            "system:public-info-viewer",
        ] {
            assert!(
                store.objects.contains_key(&(
                    RbacKind::ClusterRole,
                    String::new(),
                    name.to_string()
                )),
                "{name}"
            );
        }
        let bob = Arc::new(User {
            name: "bob".into(),
            groups: strings(&["system:authenticated"]),
            ..User::default()
        });
        let mut list_claims = request("list", "resource.k8s.io", "resourceclaims", "", "");
        list_claims.user = bob.clone();
        list_claims.namespace = "team".into();
        assert!(!store.authorize(&list_claims).allowed);
        let discovery = Attributes {
            user: bob.clone(),
            verb: "get".into(),
            path: "/apis".into(),
            ..Attributes::default()
        };
        assert!(store.authorize(&discovery).allowed, "system:discovery");
        let (json, body) = decode(
            RbacKind::RoleBinding,
            "team",
            json!({"metadata": {"name": "b"}, "subjects": [{"kind": "User", "name": "bob"}], "roleRef": {"kind": "Role", "name": "claims"}}),
        )
        .expect("valid");
        store.insert(RbacKind::RoleBinding, json, body);
        let denied = store.authorize(&list_claims);
        assert_eq!(
            denied.reason,
            "RBAC: role.rbac.authorization.k8s.io \"claims\" not found"
        );
        let (json, body) = decode(
            RbacKind::Role,
            "team",
            json!({"metadata": {"name": "claims"}, "rules": [{"verbs": ["list"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]}]}),
        )
        .expect("valid");
        store.insert(RbacKind::Role, json, body);
        assert!(store.authorize(&list_claims).allowed);
        let mut elsewhere = list_claims.clone();
        elsewhere.namespace = "other".into();
        assert!(
            !store.authorize(&elsewhere).allowed,
            "a RoleBinding grants only its namespace"
        );
        store.save().expect("saves");
        let reloaded = RbacStore::open(&path).expect("reloads");
        assert!(reloaded.authorize(&list_claims).allowed);
        assert_eq!(reloaded.resource_version, store.resource_version);
        std::fs::write(&path, "{not json").expect("writes");
        assert!(
            RbacStore::open(&path).is_err(),
            "a corrupt file is an error, not a reset"
        );
    }
}
