//! RBAC: `rbac.authorization.k8s.io/v1` Role, ClusterRole, RoleBinding and ClusterRoleBinding
//! evaluated with upstream's rules.
//!
//! Design: the four kinds are ordinary kinds of the store (the embedded log, or etcd under
//! `/registry/rbac.authorization.k8s.io/<resource>/...`), served by the generic REST paths with
//! watch, resourceVersions and optimistic concurrency like every other kind, validated by
//! `allot-validation`. This module adds what is RBAC-specific:
//! - the authorizer's cache ([`RbacStore`]): the rules and bindings of the store, rebuilt when
//!   the store's RBAC objects changed (the server calls [`RbacStore::refresh`] before it
//!   authorizes a request whenever the store moved on), so a role written through one server
//!   takes effect on every server sharing its etcd once their mirrors have the change;
//! - admission of RBAC writes ([`admit`]): upstream's escalation prevention (creating a role
//!   needs every permission it grants, or `escalate`; binding a role needs its permissions, or
//!   `bind`; an `aggregationRule` needs full authority) and the immutable `roleRef`;
//! - the bootstrap objects ([`bootstrap`], upstream's defaults trimmed to what allot serves),
//!   created when missing, one commit each, so that servers starting together on one etcd
//!   each create what the other has not;
//! - the one-time import of `DATA_DIR/rbac.json`, where earlier versions kept these objects
//!   ([`import_file`]).
//!
//! Evaluation (upstream's RBAC authorizer): a ClusterRoleBinding's subjects get its ClusterRole's
//! rules everywhere; a RoleBinding's subjects get its Role's (or ClusterRole's) rules in its
//! namespace. A rule allows a request when the verb, API group, resource (`resource/subresource`
//! or `*/subresource`) and resource name match, `*` matching anything; non-resource URLs match
//! exactly or by a trailing `*` prefix. Subjects: `User` by name, `Group` by membership,
//! `ServiceAccount` as `system:serviceaccount:NS:NAME` (a RoleBinding's own namespace when the
//! subject names none). Aggregated ClusterRoles get their rules from [`crate::aggregation`].

use std::collections::BTreeMap;
use std::path::Path;

use allot_store::{Kind, ObjectKey, Store, Stored};
use allot_validation::{BadValue, FieldError};
use serde_json::{Value, json};

pub use allot_api::rbac::v1::{PolicyRule, RoleRef, Subject};

use crate::Error;
use crate::auth::{Attributes, Decision, Security, User};

/// The API group.
pub const GROUP: &str = "rbac.authorization.k8s.io";
/// The served version.
pub const VERSION: &str = "v1";
/// The file earlier versions kept RBAC objects in, under the data directory.
pub const LEGACY_FILE: &str = "rbac.json";

/// The RBAC kinds of the store.
pub const KINDS: [Kind; 4] = [
    Kind::Role,
    Kind::ClusterRole,
    Kind::RoleBinding,
    Kind::ClusterRoleBinding,
];

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

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_string()).collect()
}

fn resource_rule(verbs: &[&str], groups: &[&str], resources: &[&str]) -> PolicyRule {
    PolicyRule {
        verbs: strings(verbs),
        api_groups: strings(groups),
        resources: strings(resources),
        ..PolicyRule::default()
    }
}

/// Upstream's `Read` verbs.
const READ: &[&str] = &["get", "list", "watch"];
/// Upstream's `Write` verbs.
const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
/// What upstream's scheduler may do with claims: read and update.
const READ_UPDATE: &[&str] = &["get", "list", "patch", "update", "watch"];
/// Upstream's `eventsRule()` verbs.
const EVENTS: &[&str] = &["create", "patch", "update"];
const RESOURCE: &str = "resource.k8s.io";
const COORDINATION: &str = "coordination.k8s.io";
/// Upstream's `ReadWrite` verbs.
const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];

/// Upstream's default ClusterRoles and ClusterRoleBindings (bootstrappolicy), trimmed to the
/// kinds allot serves: `cluster-admin`; the user-facing `admin`, `edit` and `view`, aggregated
/// from the `rbac.authorization.k8s.io/aggregate-to-*` labelled roles, with upstream's
/// `system:aggregate-to-*` roles (core pods, events and namespaces, and resource.k8s.io claims
/// and claim templates as upstream grants them with DynamicResourceAllocation on); discovery,
/// basic-user and public-info roles with their bindings; `system:kube-scheduler` and the DRA
/// controllers' `system:controller:*` roles, bound to the scheduler user and to the
/// controllers' kube-system service accounts.
pub fn bootstrap_objects() -> Vec<Value> {
    let meta = |name: &str, labels: &[(&str, &str)]| {
        let mut all = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
        for (k, v) in labels {
            all[*k] = json!(v);
        }
        json!({"name": name, "labels": all,
               "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}})
    };
    let role = |name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": meta(name, labels), "rules": rules})
    };
    let aggregated = |name: &str, labels: &[(&str, &str)], selector: &str| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": meta(name, labels), "rules": [],
               "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {selector: "true"}}]}})
    };
    let binding = |name: &str, groups: &[&str]| {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"kind": "Group", "apiGroup": GROUP, "name": g}))
            .collect();
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": meta(name, &[]), "subjects": subjects,
               "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}})
    };
    let bound = |name: &str, subject: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": meta(name, &[]), "subjects": [subject],
               "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": name}})
    };
    // Upstream's controller roles, bound to the controller's service account in kube-system.
    let controller = |name: &str| {
        bound(
            &format!("system:controller:{name}"),
            json!({"kind": "ServiceAccount", "name": name, "namespace": "kube-system"}),
        )
    };
    let urls = |verbs: &[&str], urls: &[&str]| PolicyRule {
        verbs: strings(verbs),
        non_resource_urls: strings(urls),
        ..PolicyRule::default()
    };
    const TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
    const TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
    const TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
    let mut objects = vec![
        role(
            "cluster-admin",
            &[],
            vec![resource_rule(&["*"], &["*"], &["*"]), urls(&["*"], &["*"])],
        ),
        aggregated("admin", &[], TO_ADMIN),
        aggregated("edit", &[(TO_ADMIN, "true")], TO_EDIT),
        aggregated("view", &[(TO_EDIT, "true")], TO_VIEW),
        role(
            "system:aggregate-to-admin",
            &[(TO_ADMIN, "true")],
            vec![
                resource_rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["localsubjectaccessreviews"],
                ),
                resource_rule(READ_WRITE, &[GROUP], &["roles", "rolebindings"]),
            ],
        ),
        role(
            "system:aggregate-to-edit",
            &[(TO_EDIT, "true")],
            vec![
                resource_rule(WRITE, &[""], &["pods"]),
                resource_rule(
                    WRITE,
                    &["resource.k8s.io"],
                    &["resourceclaims", "resourceclaimtemplates"],
                ),
            ],
        ),
        role(
            "system:aggregate-to-view",
            &[(TO_VIEW, "true")],
            vec![
                resource_rule(READ, &[""], &["pods"]),
                resource_rule(READ, &[""], &["events", "pods/status", "namespaces/status"]),
                resource_rule(READ, &[""], &["namespaces"]),
                resource_rule(
                    READ,
                    &["resource.k8s.io"],
                    &[
                        "resourceclaims",
                        "resourceclaims/status",
                        "resourceclaimtemplates",
                    ],
                ),
            ],
        ),
        role(
            "system:discovery",
            &[],
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
            &[],
            vec![urls(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
        ),
        role(
            "system:monitoring",
            &[],
            vec![urls(
                &["get"],
                &[
                    "/healthz",
                    "/healthz/*",
                    "/livez",
                    "/livez/*",
                    "/metrics",
                    "/metrics/slis",
                    "/readyz",
                    "/readyz/*",
                ],
            )],
        ),
        role(
            "system:basic-user",
            &[],
            vec![
                resource_rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
                resource_rule(
                    &["create"],
                    &["authentication.k8s.io"],
                    &["selfsubjectreviews"],
                ),
            ],
        ),
        role(
            "system:kube-scheduler",
            &[],
            vec![
                resource_rule(EVENTS, &["", "events.k8s.io"], &["events"]),
                resource_rule(&["create"], &[COORDINATION], &["leases"]),
                PolicyRule {
                    resource_names: strings(&["kube-scheduler"]),
                    ..resource_rule(
                        &["get", "list", "update", "watch"],
                        &[COORDINATION],
                        &["leases"],
                    )
                },
                resource_rule(READ, &[""], &["nodes"]),
                resource_rule(&["delete", "get", "list", "watch"], &[""], &["pods"]),
                resource_rule(&["create"], &[""], &["bindings", "pods/binding"]),
                resource_rule(&["patch", "update"], &[""], &["pods/status"]),
                resource_rule(&["create"], &["authentication.k8s.io"], &["tokenreviews"]),
                resource_rule(
                    &["create"],
                    &["authorization.k8s.io"],
                    &["subjectaccessreviews"],
                ),
                resource_rule(READ, &[""], &["namespaces"]),
                resource_rule(READ, &[RESOURCE], &["deviceclasses"]),
                resource_rule(READ_UPDATE, &[RESOURCE], &["resourceclaims"]),
                resource_rule(READ_UPDATE, &[RESOURCE], &["resourceclaims/status"]),
                resource_rule(READ_UPDATE, &[""], &["pods/finalizers"]),
                resource_rule(READ, &[RESOURCE], &["resourceslices"]),
                resource_rule(READ, &[RESOURCE], &["devicetaintrules"]),
                // What allot's claim status authorization asks of an allocating writer, as
                // upstream's resource-claim-controller role grants it.
                resource_rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["resourceclaims/binding"],
                ),
            ],
        ),
        role(
            "system:controller:resource-claim-controller",
            &[],
            vec![
                resource_rule(READ, &[""], &["pods"]),
                resource_rule(&["update"], &[""], &["pods/finalizers"]),
                resource_rule(
                    &["create", "delete", "get", "list", "watch"],
                    &[RESOURCE],
                    &["resourceclaims"],
                ),
                resource_rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["resourceclaims", "resourceclaims/status"],
                ),
                resource_rule(&["patch", "update"], &[""], &["pods/status"]),
                resource_rule(EVENTS, &["", "events.k8s.io"], &["events"]),
                resource_rule(READ, &["scheduling.k8s.io"], &["podgroups"]),
                resource_rule(
                    &["patch", "update"],
                    &["scheduling.k8s.io"],
                    &["podgroups/status"],
                ),
                resource_rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["resourceclaims/binding"],
                ),
            ],
        ),
        role(
            "system:controller:device-taint-eviction-controller",
            &[],
            vec![
                resource_rule(&["delete", "get", "list", "watch"], &[""], &["pods"]),
                resource_rule(&["patch", "update"], &[""], &["pods/status"]),
                resource_rule(READ, &[RESOURCE], &["resourceclaims"]),
                resource_rule(READ, &[RESOURCE], &["resourceslices"]),
                resource_rule(READ, &[RESOURCE], &["deviceclasses"]),
                resource_rule(EVENTS, &["", "events.k8s.io"], &["events"]),
                resource_rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["devicetaintrules/status"],
                ),
                resource_rule(READ, &[RESOURCE], &["devicetaintrules"]),
            ],
        ),
        role(
            "system:controller:resourcepoolstatusrequest-controller",
            &[],
            vec![
                resource_rule(
                    &["delete", "get", "list", "watch"],
                    &[RESOURCE],
                    &["resourcepoolstatusrequests"],
                ),
                resource_rule(
                    &["patch", "update"],
                    &[RESOURCE],
                    &["resourcepoolstatusrequests/status"],
                ),
                resource_rule(READ, &[RESOURCE], &["resourceslices"]),
                resource_rule(READ, &[RESOURCE], &["resourceclaims"]),
                resource_rule(READ, &[RESOURCE], &["devicetaintrules"]),
                resource_rule(EVENTS, &["", "events.k8s.io"], &["events"]),
            ],
        ),
        binding("cluster-admin", &["system:masters"]),
        binding("system:basic-user", &["system:authenticated"]),
        binding("system:discovery", &["system:authenticated"]),
        binding("system:monitoring", &["system:monitoring"]),
        binding(
            "system:public-info-viewer",
            &["system:authenticated", "system:unauthenticated"],
        ),
        bound(
            "system:kube-scheduler",
            json!({"kind": "User", "apiGroup": GROUP, "name": "system:kube-scheduler"}),
        ),
        controller("resource-claim-controller"),
        controller("device-taint-eviction-controller"),
        controller("resourcepoolstatusrequest-controller"),
    ];
    // The workload, storage, service and policy kinds' rules, roles and bindings.
    crate::rbac_kinds::extend(&mut objects);
    objects
}

fn key_of_json(value: &Value) -> Option<ObjectKey> {
    let kind = value.get("kind").and_then(Value::as_str)?;
    let kind = KINDS.into_iter().find(|k| k.name() == kind)?;
    let namespace = if kind.namespaced() {
        value
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)?
    } else {
        ""
    };
    let name = value.pointer("/metadata/name").and_then(Value::as_str)?;
    Some(ObjectKey::new(kind, namespace, name))
}

/// A stored default ClusterRole with the rules of its bootstrap version that it lacks added, as
/// kube-apiserver reconciles its bootstrap roles at start (adding permissions, never removing
/// any), unless the role's `rbac.authorization.kubernetes.io/autoupdate` annotation is "false";
/// `None` when nothing is missing.
fn with_missing_default_rules(existing: &Stored, default: &Value) -> Option<Stored> {
    let Stored::ClusterRole(role) = existing else {
        return None;
    };
    if role
        .metadata
        .annotations
        .get(AUTOUPDATE)
        .map(String::as_str)
        == Some("false")
    {
        return None;
    }
    let wanted: Vec<PolicyRule> = default
        .get("rules")
        .cloned()
        .and_then(|rules| serde_json::from_value(rules).ok())
        .unwrap_or_default();
    let missing: Vec<PolicyRule> = wanted
        .into_iter()
        .filter(|rule| !role.rules.contains(rule))
        .collect();
    if missing.is_empty() {
        return None;
    }
    let mut updated = existing.clone();
    if let Stored::ClusterRole(role) = &mut updated {
        std::sync::Arc::make_mut(role).rules.extend(missing);
    }
    Some(updated)
}

/// The annotation that lets kube-apiserver reconcile a default role at start.
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// Adds to `store` the bootstrap objects it lacks, one at a time, and the rules a default
/// ClusterRole lacks: `commit` makes each durable (another server may have created it first:
/// that is not an error). Returns how many were created here.
pub fn bootstrap(
    store: &mut Store,
    now: &str,
    commit: &mut dyn FnMut(&mut Store) -> Result<(), Error>,
) -> Result<usize, Error> {
    let mut created = 0;
    for object in bootstrap_objects() {
        let Some(key) = key_of_json(&object) else {
            continue;
        };
        if let Some(existing) = store.get_stored(&key) {
            if let Some(updated) = with_missing_default_rules(existing, &object)
                && store.update_stored(updated).is_ok()
            {
                commit(store)?;
            }
            continue;
        }
        let stored =
            crate::storage::stored_from_json(&object).map_err(|message| Error::Replay {
                rv: 0,
                message: format!("bootstrap {key}: {message}"),
            })?;
        if store.create_stored(stored, now).is_ok() {
            commit(store)?;
            created += 1;
        }
    }
    Ok(created)
}

/// Imports `DATA_DIR/rbac.json` of an earlier version into `store` (objects the store lacks,
/// each made durable by `commit`), then renames the file to `rbac.json.imported`. A crash in
/// between leaves the file in place: the next start imports what is still missing. Returns
/// how many objects were imported; a file that does not parse is an error naming it.
pub fn import_file(
    data_dir: &Path,
    store: &mut Store,
    now: &str,
    commit: &mut dyn FnMut(&mut Store) -> Result<(), Error>,
) -> Result<usize, Error> {
    let path = data_dir.join(LEGACY_FILE);
    let corrupt = |message: String| Error::CorruptLog {
        path: path.clone(),
        offset: 0,
        message,
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(text) => text,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(source) => return Err(Error::Io { path, source }),
    };
    let file: Value = serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
    let items = file
        .get("items")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut imported = 0;
    let mut missing = Vec::new();
    for (i, mut item) in items.into_iter().enumerate() {
        if let Some(metadata) = item.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["uid", "resourceVersion", "managedFields", "generation"] {
                metadata.remove(field);
            }
        }
        let key =
            key_of_json(&item).ok_or_else(|| corrupt(format!("items[{i}]: not an RBAC object")))?;
        if store.get_stored(&key).is_some() {
            continue;
        }
        let mut stored = crate::storage::stored_from_json(&item)
            .map_err(|message| corrupt(format!("items[{i}] ({key}): {message}")))?;
        let created = stored
            .meta()
            .creation_timestamp
            .clone()
            .unwrap_or_else(|| now.to_string());
        stored.meta_mut().creation_timestamp = None;
        if store.create_stored(stored, &created).is_ok() {
            commit(store)?;
            imported += 1;
        }
        if store.get_stored(&key).is_none() {
            missing.push(key.to_string());
        }
    }
    if missing.is_empty() {
        let done = data_dir.join(format!("{LEGACY_FILE}.imported"));
        std::fs::rename(&path, &done).map_err(|source| Error::Io {
            path: path.clone(),
            source,
        })?;
        if let Ok(dir) = std::fs::File::open(data_dir) {
            let _ = dir.sync_all();
        }
    } else {
        tracing::warn!(
            "{}: not imported yet (kept for the next start): {}",
            path.display(),
            missing.join(", ")
        );
    }
    Ok(imported)
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

/// One binding as the authorizer reads it.
#[derive(Debug, Clone, PartialEq)]
struct Binding {
    /// The binding's namespace ("" for a ClusterRoleBinding).
    namespace: String,
    role_ref: RoleRef,
    subjects: Vec<Subject>,
}

/// The authorizer's view of the store's RBAC objects: roles' rules by (kind, namespace, name),
/// bindings (ClusterRoleBindings first, as upstream visits them), and what they were built
/// from (every RBAC object's key and resourceVersion), to know when to rebuild.
#[derive(Debug, Default)]
pub struct RbacStore {
    rules: BTreeMap<(Kind, String, String), Vec<PolicyRule>>,
    bindings: Vec<Binding>,
    built_from: Vec<(ObjectKey, String)>,
    /// The server's resourceVersion the cache was last checked at (`None`: never).
    checked_at: Option<u64>,
}

/// The RBAC objects of a store with their resourceVersions, in key order.
fn fingerprint(store: &Store) -> Vec<(ObjectKey, String)> {
    KINDS
        .into_iter()
        .flat_map(|kind| store.list_kind(kind))
        .map(|o| (crate::storage::key_of(o), o.meta().resource_version.clone()))
        .collect()
}

/// The rules of a stored role.
pub fn rules_of_stored(object: &Stored) -> Option<&[PolicyRule]> {
    match object {
        Stored::Role(r) => Some(&r.rules),
        Stored::ClusterRole(r) => Some(&r.rules),
        _ => None,
    }
}

impl RbacStore {
    /// An empty cache (nothing is allowed but `system:masters`' requests until the first
    /// [`RbacStore::refresh`]).
    pub fn new() -> RbacStore {
        RbacStore::default()
    }

    /// A cache of `store`'s RBAC objects.
    pub fn of(store: &Store) -> RbacStore {
        let mut cache = RbacStore::new();
        cache.refresh(store, store.resource_version());
        cache
    }

    /// Whether the cache was last checked at the server's resourceVersion `rv`.
    pub fn checked_at(&self, rv: u64) -> bool {
        self.checked_at == Some(rv)
    }

    /// Rebuilds the cache when `store`'s RBAC objects differ from what it was built from;
    /// `rv` is the server's resourceVersion the caller saw. Returns whether it rebuilt.
    pub fn refresh(&mut self, store: &Store, rv: u64) -> bool {
        self.checked_at = Some(rv);
        let now = fingerprint(store);
        if now == self.built_from {
            return false;
        }
        self.rules.clear();
        self.bindings.clear();
        for kind in KINDS {
            for object in store.list_kind(kind) {
                let meta = object.meta();
                match object {
                    Stored::Role(_) | Stored::ClusterRole(_) => {
                        let rules = rules_of_stored(object).unwrap_or_default().to_vec();
                        let namespace = if kind.namespaced() {
                            meta.namespace.clone()
                        } else {
                            String::new()
                        };
                        self.rules
                            .insert((kind, namespace, meta.name.clone()), rules);
                    }
                    Stored::ClusterRoleBinding(b) => self.bindings.push(Binding {
                        namespace: String::new(),
                        role_ref: b.role_ref.clone(),
                        subjects: b.subjects.clone(),
                    }),
                    Stored::RoleBinding(b) => self.bindings.push(Binding {
                        namespace: meta.namespace.clone(),
                        role_ref: b.role_ref.clone(),
                        subjects: b.subjects.clone(),
                    }),
                    _ => {}
                }
            }
        }
        // Cluster role bindings first, as upstream.
        self.bindings.sort_by_key(|b| !b.namespace.is_empty());
        self.built_from = now;
        true
    }

    fn rules_of(&self, kind: &str, namespace: &str, name: &str) -> Result<&[PolicyRule], String> {
        let (key, label) = match kind {
            "ClusterRole" => (
                (Kind::ClusterRole, String::new(), name.to_string()),
                "clusterrole",
            ),
            "Role" => (
                (Kind::Role, namespace.to_string(), name.to_string()),
                "role",
            ),
            other => return Err(format!("unknown role kind {other:?}")),
        };
        self.rules
            .get(&key)
            .map(Vec::as_slice)
            .ok_or_else(|| format!("{label}.{GROUP} {name:?} not found"))
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
        for binding in &self.bindings {
            let applies_here = binding.namespace.is_empty()
                || (!namespace.is_empty() && binding.namespace == namespace);
            if !applies_here
                || !binding
                    .subjects
                    .iter()
                    .any(|s| subject_applies(s, user, &binding.namespace))
            {
                continue;
            }
            match self.rules_of(
                &binding.role_ref.kind,
                &binding.namespace,
                &binding.role_ref.name,
            ) {
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

    /// Every rule that applies to `user` in `namespace` (cluster-wide bindings first), and the
    /// bindings whose roles are missing, as upstream's rule resolver lists them for
    /// SelfSubjectRulesReview.
    pub fn rules_for(&self, user: &User, namespace: &str) -> (Vec<PolicyRule>, Vec<String>) {
        let mut rules = Vec::new();
        let (_, errors) = self.visit_rules(user, namespace, &mut |rule| {
            rules.push(rule.clone());
            false
        });
        (rules, errors)
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
}

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

/// Why an RBAC write is refused.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// 422: field errors (a changed `roleRef`).
    Invalid(Vec<FieldError>),
    /// 403: an escalation; the message as upstream words it.
    Forbidden(String),
}

fn qualified(kind: Kind) -> String {
    let plural = crate::resources::info_of(kind).map_or("", |i| i.plural);
    format!("{plural}.{GROUP}")
}

fn escalation_message(
    requester: &Attributes,
    kind: Kind,
    name: &str,
    missing: &[String],
) -> String {
    let user = &requester.user;
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    format!(
        "{} {name:?} is forbidden: user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        qualified(kind),
        user.name,
        groups.join(" "),
        missing.join("\n")
    )
}

/// Whether only what the garbage collector needs to delete an object changed (upstream's
/// `IsOnlyMutatingGCFields`): such updates skip the escalation check.
fn only_gc_fields(old: &Stored, new: &Stored) -> bool {
    let strip = |o: &Stored| {
        let mut o = o.clone();
        let meta = o.meta_mut();
        meta.owner_references = Default::default();
        meta.finalizers = Default::default();
        meta.resource_version.clear();
        meta.managed_fields = Default::default();
        o
    };
    strip(old) == strip(new)
}

/// Upstream's admission of RBAC writes by `requester` (API writes; the server's own writes are
/// not checked): a binding's `roleRef` cannot change; a role's rules, and a bound role's rules,
/// must be held by the requester (in the object's namespace) unless it may `escalate` the role
/// or `bind` the role; an `aggregationRule` needs full authority. `system:masters` may do
/// anything. Other kinds pass.
pub fn admit(
    requester: &Attributes,
    security: &Security,
    store: &Store,
    old: Option<&Stored>,
    new: &Stored,
) -> Result<(), Refusal> {
    let kind = new.kind();
    if !KINDS.contains(&kind) {
        return Ok(());
    }
    let role_ref = match new {
        Stored::RoleBinding(b) => Some(&b.role_ref),
        Stored::ClusterRoleBinding(b) => Some(&b.role_ref),
        _ => None,
    };
    let old_ref = match old {
        Some(Stored::RoleBinding(b)) => Some(&b.role_ref),
        Some(Stored::ClusterRoleBinding(b)) => Some(&b.role_ref),
        _ => None,
    };
    if let (Some(new_ref), Some(old_ref)) = (role_ref, old_ref)
        && new_ref != old_ref
    {
        return Err(Refusal::Invalid(vec![FieldError::invalid(
            "roleRef",
            BadValue::Raw(format!(
                "rbac.RoleRef{{APIGroup:{:?}, Kind:{:?}, Name:{:?}}}",
                new_ref.api_group, new_ref.kind, new_ref.name
            )),
            "cannot change roleRef",
        )]));
    }
    if requester.user.in_group(crate::auth::SYSTEM_MASTERS) {
        return Ok(());
    }
    if let Some(old) = old
        && only_gc_fields(old, new)
    {
        return Ok(());
    }
    let meta = new.meta();
    let namespace = if kind.namespaced() {
        meta.namespace.as_str()
    } else {
        ""
    };
    let name = meta.name.as_str();
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
        security.authorize(&a).allowed
    };
    let plural = crate::resources::info_of(kind).map_or("", |i| i.plural);
    let rules: Vec<PolicyRule> = match (new, role_ref) {
        (_, Some(role_ref)) => {
            let (role_plural, role_ns, role_kind) = if role_ref.kind == "Role" {
                ("roles", namespace, Kind::Role)
            } else {
                ("clusterroles", "", Kind::ClusterRole)
            };
            if authorized("bind", role_plural, role_ns, &role_ref.name) {
                return Ok(());
            }
            let role =
                store.get_stored(&ObjectKey::new(role_kind, role_ns, role_ref.name.as_str()));
            match role.and_then(rules_of_stored) {
                Some(rules) => rules.to_vec(),
                None => {
                    let label = if role_kind == Kind::Role {
                        "role"
                    } else {
                        "clusterrole"
                    };
                    return Err(Refusal::Forbidden(format!(
                        "{} {name:?} is forbidden: {label}.{GROUP} {:?} not found",
                        qualified(kind),
                        role_ref.name
                    )));
                }
            }
        }
        _ => {
            if authorized("escalate", plural, namespace, name) {
                return Ok(());
            }
            rules_of_stored(new).unwrap_or_default().to_vec()
        }
    };
    let missing = missing_permissions(security, requester, namespace, &rules);
    if !missing.is_empty() {
        return Err(Refusal::Forbidden(escalation_message(
            requester, kind, name, &missing,
        )));
    }
    let aggregates = |o: Option<&Stored>| matches!(o, Some(Stored::ClusterRole(r)) if r.aggregation_rule.is_some());
    if aggregates(Some(new)) || aggregates(old) {
        let full = [
            resource_rule(&["*"], &["*"], &["*"]),
            PolicyRule {
                verbs: strings(&["*"]),
                non_resource_urls: strings(&["*"]),
                ..PolicyRule::default()
            },
        ];
        if !missing_permissions(security, requester, "", &full).is_empty() {
            return Err(Refusal::Forbidden(format!(
                "{} {name:?} is forbidden: must have cluster-admin privileges to use the aggregationRule",
                qualified(kind)
            )));
        }
    }
    Ok(())
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

    fn stored(value: Value) -> Stored {
        crate::storage::stored_from_json(&value).expect("decodes")
    }

    const NOW: &str = "2026-01-01T00:00:00Z";

    /// Issue 15: system:basic-user gained `create selfsubjectreviews` (`kubectl auth whoami`);
    /// a data directory made before keeps its old role, so start-up adds the rules a default
    /// ClusterRole lacks, as kube-apiserver reconciles them, unless autoupdate is "false".
    #[test]
    fn bootstrap_adds_the_rules_a_stored_default_role_lacks() {
        let mut store = Store::new();
        bootstrap(&mut store, NOW, &mut |_| Ok(())).expect("bootstraps");
        let key = ObjectKey::new(Kind::ClusterRole, "", "system:basic-user");
        let strip = |store: &mut Store, autoupdate: Option<&str>| {
            let mut old = store.get_stored(&key).expect("the role").clone();
            if let Stored::ClusterRole(role) = &mut old {
                let role = Arc::make_mut(role);
                role.rules
                    .retain(|r| !r.api_groups.contains(&"authentication.k8s.io".to_string()));
                if let Some(value) = autoupdate {
                    role.metadata
                        .annotations
                        .insert(AUTOUPDATE.to_string(), value.to_string());
                }
            }
            store.update_stored(old).expect("updates");
        };
        let whoami_allowed = |store: &Store| {
            let user = Arc::new(User {
                name: "alice".into(),
                groups: strings(&["system:authenticated"]),
                ..User::default()
            });
            RbacStore::of(store)
                .authorize(&Attributes {
                    user,
                    verb: "create".into(),
                    resource_request: true,
                    api_group: "authentication.k8s.io".into(),
                    api_version: "v1".into(),
                    resource: "selfsubjectreviews".into(),
                    ..Attributes::default()
                })
                .allowed
        };
        assert!(whoami_allowed(&store));
        strip(&mut store, None);
        assert!(!whoami_allowed(&store));
        let mut commits = 0;
        bootstrap(&mut store, NOW, &mut |_| {
            commits += 1;
            Ok(())
        })
        .expect("reconciles");
        assert_eq!(commits, 1, "one update");
        assert!(whoami_allowed(&store));
        // Reconciled once: the next start changes nothing.
        bootstrap(&mut store, NOW, &mut |_| panic!("nothing to commit")).expect("again");
        strip(&mut store, Some("false"));
        bootstrap(&mut store, NOW, &mut |_| panic!("autoupdate false")).expect("kept");
        assert!(!whoami_allowed(&store));
    }

    #[test]
    fn the_cache_follows_the_store_and_bootstrap_is_idempotent() {
        let mut store = Store::new();
        let mut commits = 0;
        let created = bootstrap(&mut store, NOW, &mut |_| {
            commits += 1;
            Ok(())
        })
        .expect("bootstraps");
        assert_eq!(created, bootstrap_objects().len());
        assert_eq!(commits, created, "one commit per object");
        assert_eq!(
            bootstrap(&mut store, NOW, &mut |_| Ok(())).expect("again"),
            0,
            "nothing twice"
        );
        let mut cache = RbacStore::of(&store);
        let bob = Arc::new(User {
            name: "bob".into(),
            groups: strings(&["system:authenticated"]),
            ..User::default()
        });
        let mut list_claims = request("list", "resource.k8s.io", "resourceclaims", "", "");
        list_claims.user = bob.clone();
        list_claims.namespace = "team".into();
        assert!(!cache.authorize(&list_claims).allowed);
        let discovery = Attributes {
            user: bob.clone(),
            verb: "get".into(),
            path: "/apis".into(),
            ..Attributes::default()
        };
        assert!(cache.authorize(&discovery).allowed, "system:discovery");
        store
            .create_stored(
                stored(
                    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                    "metadata": {"name": "b", "namespace": "team"},
                    "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "bob"}],
                    "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "claims"}}),
                ),
                NOW,
            )
            .expect("creates");
        assert!(!cache.checked_at(store.resource_version()));
        assert!(cache.refresh(&store, store.resource_version()), "rebuilt");
        assert!(
            !cache.refresh(&store, store.resource_version()),
            "nothing changed"
        );
        assert_eq!(
            cache.authorize(&list_claims).reason,
            "RBAC: role.rbac.authorization.k8s.io \"claims\" not found"
        );
        store
            .create_stored(
                stored(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                    "metadata": {"name": "claims", "namespace": "team"},
                    "rules": [{"verbs": ["list"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]}]})),
                NOW,
            )
            .expect("creates");
        cache.refresh(&store, store.resource_version());
        assert!(cache.authorize(&list_claims).allowed);
        let mut elsewhere = list_claims.clone();
        elsewhere.namespace = "other".into();
        assert!(
            !cache.authorize(&elsewhere).allowed,
            "a RoleBinding grants only its namespace"
        );
        store
            .delete(&ObjectKey::new(Kind::Role, "team", "claims"))
            .expect("deletes");
        cache.refresh(&store, store.resource_version());
        assert!(
            !cache.authorize(&list_claims).allowed,
            "a deleted role grants nothing"
        );
    }

    #[test]
    fn an_old_rbac_json_is_imported_once() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut store = Store::new();
        assert_eq!(
            import_file(dir.path(), &mut store, NOW, &mut |_| Ok(())).expect("no file"),
            0
        );
        let file = json!({"resourceVersion": "7", "items": [
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
             "metadata": {"name": "claims", "namespace": "team", "uid": "u", "resourceVersion": "3",
                          "creationTimestamp": "2025-05-05T00:00:00Z"},
             "rules": [{"verbs": ["list"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
             "metadata": {"name": "cluster-admin", "resourceVersion": "1"},
             "rules": [{"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]}]}]});
        std::fs::write(dir.path().join(LEGACY_FILE), file.to_string()).expect("writes");
        let imported = import_file(dir.path(), &mut store, NOW, &mut |_| Ok(())).expect("imports");
        assert_eq!(imported, 2);
        assert!(!dir.path().join(LEGACY_FILE).exists());
        assert!(dir.path().join("rbac.json.imported").exists());
        let role = store
            .get_stored(&ObjectKey::new(Kind::Role, "team", "claims"))
            .expect("imported");
        assert_eq!(
            role.meta().creation_timestamp.as_deref(),
            Some("2025-05-05T00:00:00Z"),
            "creation time kept"
        );
        // The customised default wins over the bootstrap one.
        bootstrap(&mut store, NOW, &mut |_| Ok(())).expect("bootstraps");
        let admin = store
            .get_stored(&ObjectKey::new(Kind::ClusterRole, "", "cluster-admin"))
            .and_then(rules_of_stored)
            .expect("exists");
        assert_eq!(admin[0].verbs, vec!["get".to_string()]);
        std::fs::write(dir.path().join(LEGACY_FILE), "{not json").expect("writes");
        let err = import_file(dir.path(), &mut store, NOW, &mut |_| Ok(())).expect_err("corrupt");
        assert!(err.to_string().contains("rbac.json"), "{err}");
    }

    #[test]
    fn writes_need_the_permissions_they_grant() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("t.csv");
        std::fs::write(&file, "b,bob,1\n").expect("w");
        let security = Security::open(dir.path(), Some(&file)).expect("opens");
        let bob = Arc::new(security.authenticate(Some(b"Bearer b")).expect("bob"));
        let mut store = Store::new();
        bootstrap(&mut store, NOW, &mut |_| Ok(())).expect("bootstraps");
        for value in [
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "claims", "namespace": "team"},
                "rules": [{"verbs": ["get", "list"], "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]},
                          {"verbs": ["create"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles", "rolebindings"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "bob", "namespace": "team"},
                "subjects": [{"kind": "User", "apiGroup": GROUP, "name": "bob"}],
                "roleRef": {"apiGroup": GROUP, "kind": "Role", "name": "claims"}}),
        ] {
            store.create_stored(stored(value), NOW).expect("creates");
        }
        *security.rbac.write().expect("lock") = RbacStore::of(&store);
        let requester = Attributes {
            user: bob,
            ..Attributes::default()
        };
        let role = |verbs: &[&str]| {
            stored(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "r", "namespace": "team"},
                "rules": [{"verbs": verbs, "apiGroups": ["resource.k8s.io"], "resources": ["resourceclaims"]}]}),
            )
        };
        admit(&requester, &security, &store, None, &role(&["list"])).expect("held");
        let Err(Refusal::Forbidden(message)) =
            admit(&requester, &security, &store, None, &role(&["delete"]))
        else {
            panic!("an escalation is refused");
        };
        assert!(
            message.contains("is attempting to grant RBAC permissions not currently held")
                && message.contains("Verbs:[\"delete\"]"),
            "{message}"
        );
        let bind = |role: &str| {
            stored(
                json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "x", "namespace": "team"},
                "roleRef": {"apiGroup": GROUP, "kind": "ClusterRole", "name": role}}),
            )
        };
        assert!(
            matches!(
                admit(&requester, &security, &store, None, &bind("cluster-admin")),
                Err(Refusal::Forbidden(_))
            ),
            "binding cluster-admin needs its permissions"
        );
        let old = bind("view");
        assert!(
            matches!(
                admit(&requester, &security, &store, Some(&old), &bind("edit")),
                Err(Refusal::Invalid(_))
            ),
            "roleRef is immutable"
        );
    }
}
