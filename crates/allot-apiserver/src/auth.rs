//! Authentication and authorization, as kube-apiserver does them with `--token-auth-file`,
//! `--authorization-mode=RBAC` and the DRA admission rules.
//!
//! - **Authentication**: a bearer token must be in the tokens file (kube-apiserver's CSV format
//!   `token,user,uid,"group1,group2"`); a token that is not there is 401 (never anonymous).
//!   A request without credentials is `system:anonymous` in `system:unauthenticated`, which the
//!   default roles allow only `/livez`, `/readyz`, `/healthz` and `/version`. Authenticated users
//!   get `system:authenticated` added, as upstream does.
//! - **Request attributes** follow upstream's RequestInfoFactory: verbs get/list/watch/create/
//!   update/patch/delete/deletecollection, the API group, resource, subresource, namespace and name
//!   (a list with `fieldSelector=metadata.name=X` is about X); other paths are non-resource URLs
//!   with the lower-cased HTTP method as verb.
//! - **Authorization**: members of `system:masters` may do anything (upstream's privileged-group
//!   authorizer); everyone else through [`crate::rbac`]. Denials are 403 `Forbidden` Status errors
//!   worded as upstream's.
//! - **Admission** (write paths call these): `adminAccess` only in namespaces labelled
//!   `resource.kubernetes.io/admin-access: "true"` (claims, templates and allocation results), and
//!   DRA's granular ResourceClaim status authorization: changing `status.allocation` or
//!   `status.reservedFor` needs the request's verb on the synthetic subresource
//!   `resourceclaims/binding` (cluster-wide); changing a driver's entries in `status.devices` needs
//!   `arbitrary-node:<verb>` (or `associated-node:<verb>` for a service account bound to the
//!   claim's node) on `resourceclaims/driver` with the driver's name as resource name.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use allot_validation::FieldError;
use serde_json::{Value, json};

use crate::Error;
use crate::rbac::RbacStore;

/// The group whose members may do anything.
pub const SYSTEM_MASTERS: &str = "system:masters";
/// Added to every authenticated user.
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";
/// The group of requests without credentials.
pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";
/// The user of requests without credentials.
pub const ANONYMOUS: &str = "system:anonymous";
/// The namespace label that allows `adminAccess`.
pub const ADMIN_ACCESS_LABEL: &str = "resource.kubernetes.io/admin-access";
/// The user-info extra key naming the node a service account token is bound to.
pub const NODE_NAME_EXTRA: &str = "authentication.kubernetes.io/node-name";

/// An authenticated (or anonymous) user.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct User {
    /// The user name.
    pub name: String,
    /// The uid from the tokens file.
    pub uid: String,
    /// The groups, including `system:authenticated` / `system:unauthenticated`.
    pub groups: Vec<String>,
    /// Extra attributes (service-account node binding).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl User {
    /// The anonymous user.
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.into(),
            groups: vec![SYSTEM_UNAUTHENTICATED.into()],
            ..User::default()
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// One record of a tokens file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenEntry {
    /// The bearer token.
    pub token: String,
    /// Who it authenticates.
    pub user: User,
}

/// Splits one CSV line (RFC 4180 quoting, as Go's encoding/csv reads the tokens file).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_start = true;
    while let Some(c) = chars.next() {
        if quoted {
            if c == '"' {
                if chars.peek() == Some(&'"') {
                    chars.next();
                    field.push('"');
                } else {
                    quoted = false;
                    match chars.peek() {
                        None | Some(',') => {}
                        Some(other) => {
                            return Err(format!("extraneous {other:?} after a closing quote"));
                        }
                    }
                }
            } else {
                field.push(c);
            }
            continue;
        }
        match c {
            '"' if at_start => {
                quoted = true;
                at_start = false;
            }
            '"' => return Err("bare \" in a non-quoted field".into()),
            ',' => {
                fields.push(std::mem::take(&mut field));
                at_start = true;
            }
            c => {
                field.push(c);
                at_start = false;
            }
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

/// Parses a tokens file: `token,user,uid[,"group1,group2"]` per line, as kube-apiserver's
/// `--token-auth-file`. Blank lines are skipped; a record with fewer than three fields is an
/// error naming the line; empty tokens are skipped; a later duplicate token wins (upstream warns).
pub fn parse_tokens(path: &Path, text: &str) -> Result<Vec<TokenEntry>, Error> {
    let mut entries: Vec<TokenEntry> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim_end_matches('\r');
        if line.trim().is_empty() {
            continue;
        }
        let bad = |message: String| Error::TokenFile {
            path: path.to_path_buf(),
            line: index + 1,
            message,
        };
        let fields = csv_fields(line).map_err(bad)?;
        if fields.len() < 3 {
            return Err(bad(format!(
                "must have at least 3 columns (token, user name, user uid), found {}",
                fields.len()
            )));
        }
        if fields[0].is_empty() {
            tracing::warn!("{}:{}: empty token skipped", path.display(), index + 1);
            continue;
        }
        let groups = match fields.get(3) {
            Some(g) if !g.is_empty() => g.split(',').map(str::to_string).collect(),
            _ => Vec::new(),
        };
        let entry = TokenEntry {
            token: fields[0].clone(),
            user: User {
                name: fields[1].clone(),
                uid: fields[2].clone(),
                groups,
                extra: BTreeMap::new(),
            },
        };
        if let Some(existing) = entries.iter_mut().find(|e| e.token == entry.token) {
            tracing::warn!("{}:{}: duplicate token", path.display(), index + 1);
            *existing = entry;
        } else {
            entries.push(entry);
        }
    }
    Ok(entries)
}

/// Formats a token entry as a tokens-file line.
pub fn token_line(entry: &TokenEntry) -> String {
    format!(
        "{},{},{},\"{}\"\n",
        entry.token,
        entry.user.name,
        entry.user.uid,
        entry.user.groups.join(",")
    )
}

/// Why a request was not authenticated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unauthorized;

/// The authentication and authorization state of a server.
pub struct Security {
    tokens: HashMap<String, User>,
    /// The admin token written into the kubeconfig (the first `system:masters` user).
    pub admin_token: Option<String>,
    /// The tokens file in use.
    pub tokens_path: PathBuf,
    /// Roles and bindings.
    pub rbac: RwLock<RbacStore>,
}

impl std::fmt::Debug for Security {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Security")
            .field("tokens", &self.tokens.len())
            .field("tokens_path", &self.tokens_path)
            .finish()
    }
}

fn random_token() -> std::io::Result<String> {
    use std::io::Read;
    let mut bytes = [0u8; 16];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

impl Security {
    /// Loads the tokens file and the RBAC objects. Without `token_file`, `DATA_DIR/tokens.csv`
    /// is used and created with an `admin` user in `system:masters` when missing; an explicit
    /// file must exist.
    pub fn open(data_dir: &Path, token_file: Option<&Path>) -> Result<Security, Error> {
        let default_path = data_dir.join("tokens.csv");
        let tokens_path = token_file.map_or(default_path.clone(), Path::to_path_buf);
        let io = |source| Error::Io {
            path: tokens_path.clone(),
            source,
        };
        let text = match std::fs::read_to_string(&tokens_path) {
            Ok(text) => text,
            Err(err) if err.kind() == std::io::ErrorKind::NotFound && token_file.is_none() => {
                let entry = TokenEntry {
                    token: random_token().map_err(io)?,
                    user: User {
                        name: "admin".into(),
                        uid: "admin".into(),
                        groups: vec![SYSTEM_MASTERS.into()],
                        extra: BTreeMap::new(),
                    },
                };
                let text = token_line(&entry);
                crate::rbac::write_private(&tokens_path, &text)?;
                text
            }
            Err(err) => return Err(io(err)),
        };
        let entries = parse_tokens(&tokens_path, &text)?;
        let admin_token = entries
            .iter()
            .find(|e| e.user.in_group(SYSTEM_MASTERS))
            .map(|e| e.token.clone());
        let tokens = entries.into_iter().map(|e| (e.token, e.user)).collect();
        let rbac = RbacStore::new();
        Ok(Security {
            tokens,
            admin_token,
            tokens_path,
            rbac: RwLock::new(rbac),
        })
    }

    /// Who sent the request: the bearer token's user (plus `system:authenticated`), anonymous
    /// without credentials, 401 for a token that is not known. Other schemes are not credentials.
    pub fn authenticate(&self, authorization: Option<&[u8]>) -> Result<User, Unauthorized> {
        let Some(header) = authorization else {
            return Ok(User::anonymous());
        };
        let header = std::str::from_utf8(header).map_err(|_| Unauthorized)?;
        let mut parts = header.splitn(3, ' ');
        let scheme = parts.next().unwrap_or_default();
        let Some(token) = parts.next() else {
            return Ok(User::anonymous());
        };
        if !scheme.eq_ignore_ascii_case("bearer") {
            return Ok(User::anonymous());
        }
        let token = token.trim();
        if token.is_empty() {
            return Err(Unauthorized);
        }
        let mut user = self.tokens.get(token).cloned().ok_or(Unauthorized)?;
        if !user.in_group(SYSTEM_AUTHENTICATED) {
            user.groups.push(SYSTEM_AUTHENTICATED.into());
        }
        Ok(user)
    }

    /// Whether `attributes` are allowed, and the authorizer's reason when not.
    pub fn authorize(&self, attributes: &Attributes) -> Decision {
        if attributes.user.in_group(SYSTEM_MASTERS) {
            return Decision::allow();
        }
        self.rbac
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .authorize(attributes)
    }

    /// Authorizes a request: `None` when allowed, the 403 `Status` otherwise.
    pub fn check(&self, attributes: &Attributes) -> Option<Value> {
        let decision = self.authorize(attributes);
        (!decision.allowed).then(|| forbidden_status(attributes, &decision.reason))
    }
}

/// The API group of the access reviews.
pub const REVIEW_GROUP: &str = "authorization.k8s.io";

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = (bytes[i] == b'%')
            .then(|| bytes.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match hex {
            Some(b) => {
                out.push(b);
                i += 3;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl Security {
    /// Upstream's impersonation filter: with `Impersonate-User` (and optionally
    /// `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-<key>`) the request runs as
    /// that user, when the requester may `impersonate` each of them (users, groups,
    /// serviceaccounts in the core group; uids and userextras/<key> in authentication.k8s.io).
    /// Returns the effective user, or the 403/400 `Status`.
    pub fn impersonate(
        &self,
        requester: User,
        headers: &axum::http::HeaderMap,
    ) -> Result<User, (u16, Value)> {
        let values = |name: &str| -> Vec<String> {
            headers
                .get_all(name)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .map(str::to_string)
                .collect()
        };
        let users = values("impersonate-user");
        let groups = values("impersonate-group");
        let uids = values("impersonate-uid");
        let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (name, value) in headers {
            if let Some(key) = name.as_str().strip_prefix("impersonate-extra-")
                && let Ok(value) = value.to_str()
            {
                extra
                    .entry(percent_decode(key).to_ascii_lowercase())
                    .or_default()
                    .push(value.to_string());
            }
        }
        if users.is_empty() {
            if groups.is_empty() && uids.is_empty() && extra.is_empty() {
                return Ok(requester);
            }
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "requested impersonation of groups, a uid or extra fields without impersonating a user",
                "reason": "BadRequest", "code": 400});
            return Err((400, status));
        }
        let requester = Arc::new(requester);
        let check = |verb: &str, group: &str, resource: &str, namespace: &str, name: &str| {
            let attributes = Attributes {
                user: requester.clone(),
                verb: verb.into(),
                resource_request: true,
                api_group: group.into(),
                api_version: String::new(),
                resource: resource.into(),
                subresource: String::new(),
                namespace: namespace.into(),
                name: name.into(),
                path: String::new(),
            };
            match self.check(&attributes) {
                None => Ok(()),
                Some(status) => Err((403, status)),
            }
        };
        let name = users[users.len() - 1].clone();
        let service_account = name
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'));
        let mut effective = User {
            name: name.clone(),
            ..User::default()
        };
        match service_account {
            Some((namespace, account)) => {
                check("impersonate", "", "serviceaccounts", namespace, account)?;
                effective.groups = vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{namespace}"),
                ];
            }
            None => check("impersonate", "", "users", "", &name)?,
        }
        for group in &groups {
            check("impersonate", "", "groups", "", group)?;
            if !effective.in_group(group) {
                effective.groups.push(group.clone());
            }
        }
        if let Some(uid) = uids.last() {
            check("impersonate", "authentication.k8s.io", "uids", "", uid)?;
            effective.uid = uid.clone();
        }
        for (key, values) in &extra {
            for value in values {
                check(
                    "impersonate",
                    "authentication.k8s.io",
                    &format!("userextras/{key}"),
                    "",
                    value,
                )?;
            }
        }
        effective.extra = extra;
        if name != ANONYMOUS && !effective.in_group(SYSTEM_AUTHENTICATED) {
            effective.groups.push(SYSTEM_AUTHENTICATED.into());
        }
        if name == ANONYMOUS && !effective.in_group(SYSTEM_UNAUTHENTICATED) {
            effective.groups.push(SYSTEM_UNAUTHENTICATED.into());
        }
        Ok(effective)
    }

    /// `SelfSubjectAccessReview` and `SubjectAccessReview` (authorization.k8s.io/v1, create
    /// only): whether the requester (or `spec.user`/`spec.groups`) may do what
    /// `spec.resourceAttributes` or `spec.nonResourceAttributes` describe. 201 with the review
    /// and its `status`, as upstream answers `kubectl auth can-i`.
    pub fn review(
        &self,
        requester: &Attributes,
        body: Option<Value>,
    ) -> Result<(u16, Value), (u16, Value)> {
        let bad = |message: String| {
            (
                400,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                       "message": message, "reason": "BadRequest", "code": 400}),
            )
        };
        if requester.api_group == AUTHENTICATION_GROUP {
            return self.self_subject_review(requester, body);
        }
        let kind = match requester.resource.as_str() {
            "selfsubjectaccessreviews" => "SelfSubjectAccessReview",
            "selfsubjectrulesreviews" => "SelfSubjectRulesReview",
            "subjectaccessreviews" => "SubjectAccessReview",
            _ => {
                let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                    "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404});
                return Err((404, status));
            }
        };
        if requester.verb != "create" || !requester.name.is_empty() {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("{} is not supported on {}", requester.verb, requester.resource),
                "reason": "MethodNotAllowed", "code": 405});
            return Err((405, status));
        }
        let mut review = body.ok_or_else(|| bad("the request body is empty".into()))?;
        if review
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k != kind)
        {
            return Err(bad(format!("the body is not a {kind}")));
        }
        let spec = review.get("spec").cloned().unwrap_or(Value::Null);
        if kind == "SelfSubjectRulesReview" {
            let namespace = spec
                .get("namespace")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if namespace.is_empty() {
                return Err(bad("no namespace on request".into()));
            }
            review["apiVersion"] = json!(format!("{REVIEW_GROUP}/v1"));
            review["kind"] = json!(kind);
            review["status"] = self.rules_review_status(&requester.user, namespace);
            return Ok((201, review));
        }
        let text = |v: &Value, k: &str| {
            v.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        let user = if kind == "SelfSubjectAccessReview" {
            requester.user.clone()
        } else {
            let groups = spec
                .get("groups")
                .and_then(Value::as_array)
                .map(|g| {
                    g.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let user = User {
                name: text(&spec, "user"),
                uid: text(&spec, "uid"),
                groups,
                extra: BTreeMap::new(),
            };
            if user.name.is_empty() && user.groups.is_empty() {
                return Err(bad("spec.user or spec.groups is required".into()));
            }
            Arc::new(user)
        };
        let attributes = if let Some(r) = spec.get("resourceAttributes").filter(|v| v.is_object()) {
            Attributes {
                user,
                verb: text(r, "verb"),
                resource_request: true,
                api_group: text(r, "group"),
                api_version: text(r, "version"),
                resource: text(r, "resource"),
                subresource: text(r, "subresource"),
                namespace: text(r, "namespace"),
                name: text(r, "name"),
                path: String::new(),
            }
        } else if let Some(n) = spec.get("nonResourceAttributes").filter(|v| v.is_object()) {
            Attributes {
                user,
                verb: text(n, "verb"),
                resource_request: false,
                path: text(n, "path"),
                ..Attributes::default()
            }
        } else {
            return Err(bad(
                "spec.resourceAttributes or spec.nonResourceAttributes is required".into(),
            ));
        };
        let decision = self.authorize(&attributes);
        review["apiVersion"] = json!(format!("{REVIEW_GROUP}/v1"));
        review["kind"] = json!(kind);
        let mut status = json!({"allowed": decision.allowed});
        if !decision.reason.is_empty() {
            status["reason"] = json!(decision.reason);
        }
        review["status"] = status;
        Ok((201, review))
    }
}

impl Security {
    /// A SelfSubjectRulesReview's status: the rules `user` holds in `namespace`, as upstream's
    /// authorizers list them (`system:masters` first: everything; then RBAC, cluster-wide
    /// bindings before the namespace's). A binding to a missing role makes the list
    /// incomplete, with the reason in `evaluationError`.
    fn rules_review_status(&self, user: &User, namespace: &str) -> Value {
        let mut resource_rules = Vec::new();
        let mut non_resource_rules = Vec::new();
        if user.in_group(SYSTEM_MASTERS) {
            resource_rules.push(json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}));
            non_resource_rules.push(json!({"verbs": ["*"], "nonResourceURLs": ["*"]}));
        }
        let (rules, errors) = self
            .rbac
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .rules_for(user, namespace);
        for rule in rules {
            if rule.non_resource_urls.is_empty() {
                let mut entry = json!({"verbs": rule.verbs});
                if !rule.api_groups.is_empty() {
                    entry["apiGroups"] = json!(rule.api_groups);
                }
                if !rule.resources.is_empty() {
                    entry["resources"] = json!(rule.resources);
                }
                if !rule.resource_names.is_empty() {
                    entry["resourceNames"] = json!(rule.resource_names);
                }
                resource_rules.push(entry);
            } else {
                non_resource_rules
                    .push(json!({"verbs": rule.verbs, "nonResourceURLs": rule.non_resource_urls}));
            }
        }
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": !errors.is_empty(),
        });
        if !errors.is_empty() {
            status["evaluationError"] = json!(errors.join(", "));
        }
        status
    }

    /// `authentication.k8s.io/v1` SelfSubjectReview (`kubectl auth whoami`): 201 with the
    /// requester's user info.
    fn self_subject_review(
        &self,
        requester: &Attributes,
        body: Option<Value>,
    ) -> Result<(u16, Value), (u16, Value)> {
        if requester.resource != "selfsubjectreviews" || requester.api_version != "v1" {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": "the server could not find the requested resource", "reason": "NotFound", "code": 404});
            return Err((404, status));
        }
        if requester.verb != "create" || !requester.name.is_empty() {
            let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                "message": format!("{} is not supported on {}", requester.verb, requester.resource),
                "reason": "MethodNotAllowed", "code": 405});
            return Err((405, status));
        }
        let user = &requester.user;
        let mut info = json!({"username": user.name, "groups": user.groups});
        if !user.uid.is_empty() {
            info["uid"] = json!(user.uid);
        }
        if !user.extra.is_empty() {
            info["extra"] = json!(user.extra);
        }
        let mut review = body.unwrap_or_else(|| json!({}));
        review["apiVersion"] = json!(format!("{AUTHENTICATION_GROUP}/v1"));
        review["kind"] = json!("SelfSubjectReview");
        if review.get("metadata").is_none_or(|m| !m.is_object()) {
            review["metadata"] = json!({});
        }
        review["metadata"]["creationTimestamp"] = Value::Null;
        review["status"] = json!({"userInfo": info});
        Ok((201, review))
    }
}

/// The API group of `kubectl auth whoami`'s SelfSubjectReview.
pub const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// The `authentication.k8s.io/v1` resource list.
pub fn authentication_resource_list() -> Value {
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{AUTHENTICATION_GROUP}/v1"),
    "resources": [
        {"name": "selfsubjectreviews", "singularName": "selfsubjectreview", "namespaced": false, "kind": "SelfSubjectReview", "verbs": ["create"]},
    ]})
}

/// The APIGroup entry of `authentication.k8s.io` for `/apis`.
pub fn authentication_api_group() -> Value {
    let gv = json!({"groupVersion": format!("{AUTHENTICATION_GROUP}/v1"), "version": "v1"});
    json!({"name": AUTHENTICATION_GROUP, "versions": [gv.clone()], "preferredVersion": gv})
}

/// The `authorization.k8s.io/v1` resource list.
pub fn review_resource_list() -> Value {
    let resource = |plural: &str, kind: &str, namespaced: bool| json!({"name": plural, "singularName": "", "namespaced": namespaced, "kind": kind, "verbs": ["create"]});
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": format!("{REVIEW_GROUP}/v1"),
    "resources": [
        resource("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
        resource("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
        resource("subjectaccessreviews", "SubjectAccessReview", false),
    ]})
}

/// The APIGroup entry of `authorization.k8s.io` for `/apis`.
pub fn review_api_group() -> Value {
    let gv = json!({"groupVersion": format!("{REVIEW_GROUP}/v1"), "version": "v1"});
    json!({"name": REVIEW_GROUP, "versions": [gv.clone()], "preferredVersion": gv})
}

/// An authorization decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Allowed or not (no opinion is not allowed).
    pub allowed: bool,
    /// Why not, when the authorizer says (e.g. a binding naming a missing role).
    pub reason: String,
}

impl Decision {
    /// Allowed.
    pub fn allow() -> Decision {
        Decision {
            allowed: true,
            reason: String::new(),
        }
    }
}

/// What a request does, as upstream's authorizer attributes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Attributes {
    /// The requesting user.
    pub user: Arc<User>,
    /// The verb.
    pub verb: String,
    /// A REST resource (true) or a non-resource URL (false).
    pub resource_request: bool,
    /// The API group ("" for core).
    pub api_group: String,
    /// The API version.
    pub api_version: String,
    /// The resource (plural).
    pub resource: String,
    /// The subresource, e.g. `status`.
    pub subresource: String,
    /// The namespace ("" for cluster scope).
    pub namespace: String,
    /// The object name ("" for collections).
    pub name: String,
    /// The URL path.
    pub path: String,
}

fn valid_path_segment(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains('/') && !name.contains('%')
}

impl Attributes {
    /// Resolves a request as upstream's RequestInfoFactory does.
    pub fn of_request(
        user: Arc<User>,
        method: &str,
        path: &str,
        query: &[(String, String)],
    ) -> Attributes {
        let mut attributes = Attributes {
            user,
            verb: method.to_ascii_lowercase(),
            path: path.to_string(),
            ..Attributes::default()
        };
        let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
            return attributes;
        }
        let prefix = parts.remove(0);
        if prefix == "apis" {
            if parts.len() < 3 {
                return attributes;
            }
            attributes.api_group = parts.remove(0).to_string();
        }
        attributes.resource_request = true;
        attributes.api_version = parts.remove(0).to_string();
        let query_value = |key: &str| {
            query
                .iter()
                .rev()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
        };
        attributes.verb = match method {
            "POST" => "create",
            "GET" | "HEAD" => "get",
            "PUT" => "update",
            "PATCH" => "patch",
            "DELETE" => "delete",
            _ => "",
        }
        .to_string();
        if parts.first() == Some(&"namespaces") && parts.len() > 1 {
            attributes.namespace = parts[1].to_string();
            if parts.len() > 2 && !matches!(parts[2], "status" | "finalize") {
                parts.drain(..2);
            }
        }
        if parts.len() >= 3 {
            attributes.subresource = parts[2].to_string();
        }
        if parts.len() >= 2 {
            attributes.name = parts[1].to_string();
        }
        if let Some(resource) = parts.first() {
            attributes.resource = (*resource).to_string();
        }
        if attributes.name.is_empty() && attributes.verb == "get" {
            let watch = query_value("watch").is_some_and(|v| v == "true" || v == "1");
            attributes.verb = if watch { "watch" } else { "list" }.into();
            if let Some(selector) = query_value("fieldSelector")
                && let Some(name) = exact_name(selector)
                && valid_path_segment(name)
            {
                attributes.name = name.to_string();
            }
        }
        if attributes.name.is_empty() && attributes.verb == "delete" {
            attributes.verb = "deletecollection".into();
        }
        attributes
    }

    /// The same request, re-targeted at a synthetic subresource.
    pub fn synthetic(&self, verb: &str, subresource: &str, namespace: &str, name: &str) -> Self {
        Attributes {
            verb: verb.into(),
            subresource: subresource.into(),
            namespace: namespace.into(),
            name: name.into(),
            ..self.clone()
        }
    }
}

/// `metadata.name=X` (or `==`) as the only requirement of a field selector.
fn exact_name(selector: &str) -> Option<&str> {
    let selector = selector.trim();
    if selector.contains(',') {
        return None;
    }
    let (key, value) = selector
        .split_once("==")
        .or_else(|| selector.split_once('='))?;
    (key.trim() == "metadata.name" && !value.starts_with('=')).then(|| value.trim())
}

/// Upstream's wording of a denial: `User "u" cannot VERB resource "r/sub" in API group "g" in
/// the namespace "ns"` (or `at the cluster scope`, or `cannot VERB path "/p"`).
pub fn forbidden_message(attributes: &Attributes) -> String {
    let user = &attributes.user.name;
    let verb = &attributes.verb;
    if !attributes.resource_request {
        return format!("User {user:?} cannot {verb} path {:?}", attributes.path);
    }
    let mut resource = attributes.resource.clone();
    if !attributes.subresource.is_empty() {
        resource = format!("{resource}/{}", attributes.subresource);
    }
    let group = &attributes.api_group;
    if attributes.namespace.is_empty() {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
        )
    } else {
        format!(
            "User {user:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {:?}",
            attributes.namespace
        )
    }
}

/// The message of upstream's `NewForbidden` for a denial with `reason`.
pub fn forbidden_error_message(attributes: &Attributes, reason: &str) -> String {
    let mut message = forbidden_message(attributes);
    if !reason.is_empty() {
        message = format!("{message}: {reason}");
    }
    let qualified = if attributes.api_group.is_empty() {
        attributes.resource.clone()
    } else {
        format!("{}.{}", attributes.resource, attributes.api_group)
    };
    if qualified.is_empty() {
        format!("forbidden: {message}")
    } else if attributes.name.is_empty() {
        format!("{qualified} is forbidden: {message}")
    } else {
        format!("{qualified} {:?} is forbidden: {message}", attributes.name)
    }
}

/// The 403 `Status` for a denial.
pub fn forbidden_status(attributes: &Attributes, reason: &str) -> Value {
    let mut details = json!({"group": attributes.api_group, "kind": attributes.resource});
    if !attributes.name.is_empty() {
        details["name"] = json!(attributes.name);
    }
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": forbidden_error_message(attributes, reason),
        "reason": "Forbidden", "details": details, "code": 403,
    })
}

/// The 401 `Status`.
pub fn unauthorized_status() -> Value {
    json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "Unauthorized", "reason": "Unauthorized", "code": 401,
    })
}

/// Who is writing, for the admission checks that authorize parts of an object.
#[derive(Clone)]
pub struct Requester {
    /// The server's authorizer.
    pub security: Arc<Security>,
    /// The request's attributes.
    pub attributes: Attributes,
}

impl std::fmt::Debug for Requester {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Requester")
            .field("attributes", &self.attributes)
            .finish()
    }
}

fn namespace_allows_admin(labels: Option<&BTreeMap<String, String>>) -> bool {
    labels
        .and_then(|l| l.get(ADMIN_ACCESS_LABEL))
        .is_some_and(|v| v == "true")
}

/// The admin-access rule for a new claim or template, through allot-validation's
/// [`allot_validation::admit_admin_access`]: requests with `adminAccess: true` only in a
/// namespace labelled `resource.kubernetes.io/admin-access=true`. Other kinds pass.
pub fn admit_admin_access(
    store: &allot_store::Store,
    object: &allot_store::Stored,
) -> Vec<FieldError> {
    use allot_api::core::v1::Namespace;
    let (spec, path) = match object {
        allot_store::Stored::ResourceClaim(claim) => (&claim.spec, "spec"),
        allot_store::Stored::ResourceClaimTemplate(template) => (&template.spec.spec, "spec.spec"),
        _ => return Vec::new(),
    };
    let namespace = object.meta().namespace.as_str();
    let namespaces: BTreeMap<String, Namespace> = store
        .get::<Namespace>("", namespace)
        .map(|n| (namespace.to_string(), n.clone()))
        .into_iter()
        .collect();
    allot_validation::admit_admin_access(spec, namespace, path, &namespaces)
}

/// The admin-access rule for an update of a claim or template whose spec changes (`current`
/// is the stored object's JSON). Upstream needs no such check because both specs are immutable
/// there; allot's API server accepts spec updates, so a spec that gains `adminAccess` is
/// checked like a new one.
pub fn admit_admin_access_update(
    store: &allot_store::Store,
    current: &Value,
    object: &allot_store::Stored,
) -> Vec<FieldError> {
    if !matches!(
        object.kind(),
        allot_store::Kind::ResourceClaim | allot_store::Kind::ResourceClaimTemplate
    ) || current.get("spec") == object.to_json().get("spec")
    {
        return Vec::new();
    }
    admit_admin_access(store, object)
}

/// The labels of namespace `name`, when it exists.
pub fn namespace_labels(
    store: &allot_store::Store,
    name: &str,
) -> Option<BTreeMap<String, String>> {
    store
        .get::<allot_api::core::v1::Namespace>("", name)
        .map(|n| n.metadata.labels.clone())
}

/// The single node a claim's allocation is restricted to (one term, one
/// `metadata.name In [node]` field requirement), as upstream reads it.
fn allocated_node(status: &Value) -> Option<&str> {
    let terms = status
        .pointer("/allocation/nodeSelector/nodeSelectorTerms")?
        .as_array()?;
    let [term] = terms.as_slice() else {
        return None;
    };
    let expressions = term
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let fields = term.get("matchFields").and_then(Value::as_array)?;
    let [field] = fields.as_slice() else {
        return None;
    };
    if expressions != 0
        || field.get("key").and_then(Value::as_str) != Some("metadata.name")
        || field.get("operator").and_then(Value::as_str) != Some("In")
    {
        return None;
    }
    match field
        .get("values")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([Value::String(node)]) => Some(node),
        _ => None,
    }
}

/// Whether the user is a service account bound to exactly `node`.
fn service_account_on_node(user: &User, node: Option<&str>) -> bool {
    let Some(node) = node.filter(|n| !n.is_empty()) else {
        return false;
    };
    let service_account = user
        .name
        .strip_prefix("system:serviceaccount:")
        .and_then(|rest| rest.split_once(':'))
        .is_some_and(|(ns, name)| !ns.is_empty() && !name.is_empty() && !name.contains(':'));
    if !service_account {
        return false;
    }
    match user.extra.get(NODE_NAME_EXTRA).map(Vec::as_slice) {
        Some([bound]) => bound == node,
        _ => false,
    }
}

/// The drivers whose `status.devices` entries were added, removed or changed (entries are keyed
/// by driver, pool, device and shareID).
pub fn modified_drivers(new_status: &Value, old_status: &Value) -> BTreeSet<String> {
    let devices = |status: &Value| -> Vec<Value> {
        status
            .get("devices")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let key = |d: &Value| -> (String, String, String, String) {
        let s = |k: &str| {
            d.get(k)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        (s("driver"), s("pool"), s("device"), s("shareID"))
    };
    let mut old: BTreeMap<_, Value> = devices(old_status)
        .into_iter()
        .map(|d| (key(&d), d))
        .collect();
    let mut drivers = BTreeSet::new();
    for device in devices(new_status) {
        let k = key(&device);
        match old.remove(&k) {
            Some(previous) if previous == device => {}
            _ => {
                drivers.insert(k.0);
            }
        }
    }
    drivers.extend(old.into_keys().map(|k| k.0));
    drivers
}

/// DRA's granular authorization of a ResourceClaim status write (`old` and `new` are the
/// claim's JSON before and after, both normalised), plus the admin-access rule for new
/// allocation results. `namespace_labels` are the labels of the claim's namespace.
pub fn admit_claim_status(
    requester: &Requester,
    old: &Value,
    new: &Value,
    namespace_labels: Option<&BTreeMap<String, String>>,
) -> Vec<FieldError> {
    let null = Value::Null;
    let old_status = old.get("status").unwrap_or(&null);
    let new_status = new.get("status").unwrap_or(&null);
    let mut errors = Vec::new();
    let base = &requester.attributes;
    let verb = base.verb.clone();
    // Binding: allocation and reservedFor belong to the scheduler.
    if old_status.get("allocation") != new_status.get("allocation")
        || old_status.get("reservedFor") != new_status.get("reservedFor")
    {
        let attributes = base.synthetic(&verb, "binding", "", "");
        let decision = requester.security.authorize(&attributes);
        if !decision.allowed {
            errors.push(FieldError::forbidden(
                "status",
                format!(
                    "changing status.allocation or status.reservedFor requires resource=\"resourceclaims/binding\", verb=\"{verb}\" permission: {}",
                    forbidden_error_message(&attributes, &decision.reason)
                ),
            ));
        }
    }
    // Driver: each driver's device entries, with node-aware verbs.
    let drivers = modified_drivers(new_status, old_status);
    if !drivers.is_empty() {
        let verbs: Vec<String> = if service_account_on_node(&base.user, allocated_node(new_status))
        {
            vec![
                format!("associated-node:{verb}"),
                format!("arbitrary-node:{verb}"),
            ]
        } else {
            vec![format!("arbitrary-node:{verb}")]
        };
        for driver in &drivers {
            let mut first_denial = None;
            let allowed = verbs.iter().any(|v| {
                let attributes = base.synthetic(v, "driver", &base.namespace, driver);
                let decision = requester.security.authorize(&attributes);
                if !decision.allowed && first_denial.is_none() {
                    first_denial = Some(forbidden_error_message(&attributes, &decision.reason));
                }
                decision.allowed
            });
            if !allowed {
                errors.push(FieldError::forbidden(
                    "status.devices",
                    format!(
                        "changing status.devices requires resource=\"resourceclaims/driver\", verb=\"[{}]\" permission: {}",
                        verbs.join(" "),
                        first_denial.unwrap_or_default()
                    ),
                ));
            }
        }
    }
    // Admin access granted by an allocation needs the namespace label too.
    let admin = |status: &Value| -> Option<usize> {
        status
            .pointer("/allocation/devices/results")
            .and_then(Value::as_array)?
            .iter()
            .position(|r| r.get("adminAccess").and_then(Value::as_bool) == Some(true))
    };
    if admin(old_status).is_none()
        && let Some(index) = admin(new_status)
        && !namespace_allows_admin(namespace_labels)
    {
        errors.push(FieldError::forbidden(
            &format!("status.allocation.devices.results[{index}].adminAccess"),
            format!("admin access to devices requires the `{ADMIN_ACCESS_LABEL}: true` label on the containing namespace"),
        ));
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(name: &str, groups: &[&str]) -> Arc<User> {
        Arc::new(User {
            name: name.into(),
            groups: groups.iter().map(|g| (*g).to_string()).collect(),
            ..User::default()
        })
    }

    fn query(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
            .collect()
    }

    #[test]
    fn tokens_file_reads_kube_apiserver_csv() {
        let path = Path::new("tokens.csv");
        let text =
            "t1,alice,u1,\"dev,ops\"\n\nt2,bob,u2\n,empty,u3\nt3,carol,u3,admins\nt2,bob2,u4\n";
        let entries = parse_tokens(path, text).expect("parses");
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].user.groups, vec!["dev", "ops"]);
        assert!(entries[1].user.groups.is_empty());
        assert_eq!(entries[1].user.name, "bob2", "a later duplicate wins");
        assert_eq!(entries[2].user.groups, vec!["admins"]);
        let err = parse_tokens(path, "ok,a,b\nshort,x\n").expect_err("too few columns");
        assert_eq!(
            err.to_string(),
            "tokens.csv:2: must have at least 3 columns (token, user name, user uid), found 2"
        );
        let err = parse_tokens(path, "t,a,b,\"open\n").expect_err("unterminated");
        assert!(err.to_string().starts_with("tokens.csv:1: "), "{err}");
        let round = token_line(&entries[0]);
        assert_eq!(round, "t1,alice,u1,\"dev,ops\"\n");
        assert_eq!(parse_tokens(path, &round).expect("parses")[0], entries[0]);
    }

    #[test]
    fn authentication_is_token_or_anonymous_never_a_bad_token() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("t.csv");
        std::fs::write(&file, "good,alice,1,\"dev\"\nroot,admin,0,system:masters\n").expect("w");
        let security = Security::open(dir.path(), Some(&file)).expect("opens");
        assert_eq!(security.admin_token.as_deref(), Some("root"));
        let alice = security.authenticate(Some(b"Bearer good")).expect("known");
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.groups, vec!["dev", SYSTEM_AUTHENTICATED]);
        assert_eq!(
            security
                .authenticate(Some(b"bearer good"))
                .expect("case")
                .name,
            "alice"
        );
        assert_eq!(
            security.authenticate(Some(b"Bearer nope")),
            Err(Unauthorized)
        );
        assert_eq!(security.authenticate(Some(b"Bearer ")), Err(Unauthorized));
        assert_eq!(
            security.authenticate(None).expect("anonymous"),
            User::anonymous()
        );
        assert_eq!(
            security
                .authenticate(Some(b"Basic abc"))
                .expect("not ours")
                .name,
            ANONYMOUS
        );
        // An explicit tokens file must exist; the default one is created with an admin.
        let missing = dir.path().join("missing.csv");
        assert!(Security::open(dir.path(), Some(&missing)).is_err());
        let created = Security::open(dir.path(), None).expect("creates");
        let text = std::fs::read_to_string(dir.path().join("tokens.csv")).expect("written");
        assert!(
            text.ends_with(",admin,admin,\"system:masters\"\n"),
            "{text}"
        );
        let token = created.admin_token.clone().expect("admin");
        let admin = created
            .authenticate(Some(format!("Bearer {token}").as_bytes()))
            .expect("admin");
        assert!(admin.in_group(SYSTEM_MASTERS));
    }

    #[test]
    fn request_attributes_follow_upstream_request_info() {
        // method, path, query, verb, group, resource, subresource, namespace, name
        type Case = (
            &'static str,
            &'static str,
            &'static [(&'static str, &'static str)],
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
            &'static str,
        );
        let u = user("u", &[]);
        let cases: &[Case] = &[
            // method, path, query, verb, group, resource, subresource, namespace, name
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                &[],
                "list",
                "",
                "pods",
                "",
                "ns",
                "",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns/pods",
                &[("watch", "true")],
                "watch",
                "",
                "pods",
                "",
                "ns",
                "",
            ),
            ("GET", "/api/v1/pods", &[], "list", "", "pods", "", "", ""),
            (
                "GET",
                "/api/v1/namespaces/ns/pods/p",
                &[],
                "get",
                "",
                "pods",
                "",
                "ns",
                "p",
            ),
            (
                "PUT",
                "/api/v1/namespaces/ns/pods/p/status",
                &[],
                "update",
                "",
                "pods",
                "status",
                "ns",
                "p",
            ),
            (
                "GET",
                "/api/v1/namespaces/ns",
                &[],
                "get",
                "",
                "namespaces",
                "",
                "ns",
                "ns",
            ),
            (
                "PUT",
                "/api/v1/namespaces/ns/status",
                &[],
                "update",
                "",
                "namespaces",
                "status",
                "ns",
                "ns",
            ),
            (
                "POST",
                "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims",
                &[],
                "create",
                "resource.k8s.io",
                "resourceclaims",
                "",
                "a",
                "",
            ),
            (
                "PATCH",
                "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c/status",
                &[],
                "patch",
                "resource.k8s.io",
                "resourceclaims",
                "status",
                "a",
                "c",
            ),
            (
                "DELETE",
                "/apis/resource.k8s.io/v1/deviceclasses",
                &[],
                "deletecollection",
                "resource.k8s.io",
                "deviceclasses",
                "",
                "",
                "",
            ),
            (
                "DELETE",
                "/apis/resource.k8s.io/v1/deviceclasses/gpu",
                &[],
                "delete",
                "resource.k8s.io",
                "deviceclasses",
                "",
                "",
                "gpu",
            ),
            (
                "GET",
                "/apis/resource.k8s.io/v1alpha3/resourcepoolstatusrequests",
                &[("fieldSelector", "metadata.name=check")],
                "list",
                "resource.k8s.io",
                "resourcepoolstatusrequests",
                "",
                "",
                "check",
            ),
            (
                "GET",
                "/apis/resource.k8s.io/v1/resourceslices",
                &[("fieldSelector", "metadata.name=a,spec.driver=b")],
                "list",
                "resource.k8s.io",
                "resourceslices",
                "",
                "",
                "",
            ),
        ];
        for (method, path, q, verb, group, resource, sub, ns, name) in cases {
            let a = Attributes::of_request(u.clone(), method, path, &query(q));
            assert!(a.resource_request, "{path}");
            assert_eq!(
                (
                    a.verb.as_str(),
                    a.api_group.as_str(),
                    a.resource.as_str(),
                    a.subresource.as_str(),
                    a.namespace.as_str(),
                    a.name.as_str()
                ),
                (*verb, *group, *resource, *sub, *ns, *name),
                "{method} {path}"
            );
        }
        for path in [
            "/api",
            "/apis",
            "/apis/resource.k8s.io",
            "/version",
            "/openapi/v3",
            "/livez",
        ] {
            let a = Attributes::of_request(u.clone(), "GET", path, &[]);
            assert!(!a.resource_request, "{path}");
            assert_eq!(a.verb, "get");
        }
        assert!(!Attributes::of_request(u, "GET", "/api/v1", &[]).resource_request);
    }

    #[test]
    fn forbidden_messages_are_upstreams() {
        let u = user("bob", &[]);
        let a = Attributes::of_request(u.clone(), "GET", "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!(
            forbidden_error_message(&a, ""),
            "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"ns\""
        );
        let a = Attributes::of_request(
            u.clone(),
            "PUT",
            "/apis/resource.k8s.io/v1/namespaces/ns/resourceclaims/c/status",
            &[],
        );
        assert_eq!(
            forbidden_error_message(&a, ""),
            "resourceclaims.resource.k8s.io \"c\" is forbidden: User \"bob\" cannot update resource \"resourceclaims/status\" in API group \"resource.k8s.io\" in the namespace \"ns\""
        );
        let b = a.synthetic("update", "binding", "", "");
        assert_eq!(
            forbidden_error_message(&b, ""),
            "resourceclaims.resource.k8s.io is forbidden: User \"bob\" cannot update resource \"resourceclaims/binding\" in API group \"resource.k8s.io\" at the cluster scope"
        );
        let a = Attributes::of_request(u, "GET", "/apis", &[]);
        let status = forbidden_status(&a, "");
        assert_eq!(
            status["message"],
            "forbidden: User \"bob\" cannot get path \"/apis\""
        );
        assert_eq!(status["code"], 403);
        assert_eq!(status["reason"], "Forbidden");
    }

    #[test]
    fn admin_access_needs_the_namespace_label() {
        let stored = |v: Value| crate::storage::stored_from_json(&v).expect("decodes");
        let mut store = allot_store::Store::new();
        for (name, labels) in [
            ("plain", json!({})),
            ("wrong-case", json!({ADMIN_ACCESS_LABEL: "True"})),
            ("admin", json!({ADMIN_ACCESS_LABEL: "true"})),
        ] {
            let ns = stored(
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": labels}}),
            );
            store
                .create_stored(ns, "2026-01-01T00:00:00Z")
                .expect("creates");
        }
        let claim = |ns: &str, admin: bool| {
            stored(
                json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "c", "namespace": ns},
                "spec": {"devices": {"requests": [
                    {"name": "a", "exactly": {"deviceClassName": "c"}},
                    {"name": "b", "exactly": {"deviceClassName": "c", "adminAccess": admin}}]}}}),
            )
        };
        let errors = admit_admin_access(&store, &claim("plain", true));
        assert_eq!(errors.len(), 1);
        assert_eq!(
            errors[0].to_string(),
            "spec.devices.requests[1].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
        );
        assert_eq!(
            admit_admin_access(&store, &claim("wrong-case", true)).len(),
            1,
            "case-sensitive"
        );
        assert!(admit_admin_access(&store, &claim("admin", true)).is_empty());
        assert!(admit_admin_access(&store, &claim("plain", false)).is_empty());
        // Updates: only a changed spec is checked.
        let with_admin = claim("plain", true);
        let without = claim("plain", false);
        assert!(admit_admin_access_update(&store, &with_admin.to_json(), &with_admin).is_empty());
        assert_eq!(
            admit_admin_access_update(&store, &without.to_json(), &with_admin).len(),
            1
        );
        let template = stored(
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "t", "namespace": "plain"},
            "spec": {"spec": {"devices": {"requests": [
                {"name": "b", "exactly": {"deviceClassName": "c", "adminAccess": true}}]}}}}),
        );
        assert_eq!(
            admit_admin_access(&store, &template)[0].path,
            "spec.spec.devices.requests[0].exactly.adminAccess"
        );
        assert_eq!(
            namespace_labels(&store, "admin")
                .and_then(|l| l.get(ADMIN_ACCESS_LABEL).cloned())
                .as_deref(),
            Some("true")
        );
        assert!(namespace_labels(&store, "nope").is_none());
    }

    #[test]
    fn modified_drivers_match_upstreams_table() {
        let dev = |driver: &str, device: &str, extra: Value| {
            let mut d = json!({"driver": driver, "pool": "pool-1", "device": device});
            if !extra.is_null() {
                d["networkData"] = extra;
            }
            d
        };
        let status = |devices: Vec<Value>| json!({"devices": devices});
        let names = |s: BTreeSet<String>| s.into_iter().collect::<Vec<_>>();
        let a1 = dev("driver-a", "dev-1", Value::Null);
        let b2 = dev("driver-b", "dev-2", Value::Null);
        assert!(
            modified_drivers(
                &status(vec![a1.clone(), b2.clone()]),
                &status(vec![a1.clone(), b2.clone()])
            )
            .is_empty()
        );
        assert_eq!(
            names(modified_drivers(
                &status(vec![a1.clone(), b2.clone()]),
                &status(vec![a1.clone()])
            )),
            vec!["driver-b"]
        );
        assert_eq!(
            names(modified_drivers(
                &status(vec![a1.clone()]),
                &status(vec![a1.clone(), b2.clone()])
            )),
            vec!["driver-b"]
        );
        let a1_ip = dev(
            "driver-a",
            "dev-1",
            json!({"interfaceName": "eth0", "ips": ["192.168.7.1/24"]}),
        );
        let a1_eth = dev("driver-a", "dev-1", json!({"interfaceName": "eth0"}));
        assert_eq!(
            names(modified_drivers(
                &status(vec![a1_ip.clone()]),
                &status(vec![a1_eth.clone()])
            )),
            vec!["driver-a"]
        );
        let c3 = dev("driver-c", "dev-3", Value::Null);
        let d4 = dev("driver-d", "dev-4", Value::Null);
        assert_eq!(
            names(modified_drivers(
                &status(vec![a1_ip, b2.clone(), c3]),
                &status(vec![a1_eth, b2, d4])
            )),
            vec!["driver-a", "driver-c", "driver-d"]
        );
        assert!(modified_drivers(&json!({}), &Value::Null).is_empty());
    }

    #[test]
    fn impersonation_needs_the_impersonate_verb() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("t.csv");
        std::fs::write(&file, "root,admin,0,system:masters\nb,bob,1\n").expect("w");
        let security = Security::open(dir.path(), Some(&file)).expect("opens");
        let admin = security.authenticate(Some(b"Bearer root")).expect("admin");
        let bob = security.authenticate(Some(b"Bearer b")).expect("bob");
        let headers = |pairs: &[(&str, &str)]| {
            let mut map = axum::http::HeaderMap::new();
            for (k, v) in pairs {
                map.append(
                    axum::http::HeaderName::from_bytes(k.as_bytes()).expect("name"),
                    axum::http::HeaderValue::from_str(v).expect("value"),
                );
            }
            map
        };
        assert_eq!(
            security
                .impersonate(bob.clone(), &headers(&[]))
                .expect("none"),
            bob
        );
        let sa = security
            .impersonate(
                admin.clone(),
                &headers(&[
                    ("Impersonate-User", "system:serviceaccount:kube-system:drv"),
                    ("Impersonate-Group", "extra-group"),
                    (
                        "Impersonate-Extra-authentication.kubernetes.io%2fnode-name",
                        "node-1",
                    ),
                ]),
            )
            .expect("admin may impersonate");
        assert_eq!(sa.name, "system:serviceaccount:kube-system:drv");
        assert_eq!(
            sa.groups,
            vec![
                "system:serviceaccounts",
                "system:serviceaccounts:kube-system",
                "extra-group",
                SYSTEM_AUTHENTICATED
            ]
        );
        assert_eq!(
            sa.extra.get(NODE_NAME_EXTRA),
            Some(&vec!["node-1".to_string()])
        );
        let (code, status) = security
            .impersonate(bob.clone(), &headers(&[("Impersonate-User", "admin")]))
            .expect_err("bob may not");
        assert_eq!(code, 403);
        assert_eq!(
            status["message"],
            "users \"admin\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        let (code, _) = security
            .impersonate(admin, &headers(&[("Impersonate-Group", "g")]))
            .expect_err("groups without a user");
        assert_eq!(code, 400);
    }

    #[test]
    fn access_reviews_answer_for_the_requester_or_the_named_user() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file = dir.path().join("t.csv");
        std::fs::write(&file, "root,admin,0,system:masters\nb,bob,1\n").expect("w");
        let security = Security::open(dir.path(), Some(&file)).expect("opens");
        let mut store = allot_store::Store::new();
        crate::rbac::bootstrap(&mut store, "2026-01-01T00:00:00Z", &mut |_| Ok(()))
            .expect("bootstraps");
        *security.rbac.write().expect("lock") = crate::rbac::RbacStore::of(&store);
        let bob = Arc::new(security.authenticate(Some(b"Bearer b")).expect("bob"));
        let create = |user: &Arc<User>, resource: &str| Attributes {
            user: user.clone(),
            verb: "create".into(),
            resource_request: true,
            api_group: REVIEW_GROUP.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            ..Attributes::default()
        };
        let review = |spec: Value| json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "spec": spec});
        let (code, answer) = security
            .review(
                &create(&bob, "selfsubjectaccessreviews"),
                Some(review(
                    json!({"nonResourceAttributes": {"path": "/version", "verb": "get"}}),
                )),
            )
            .expect("answers");
        assert_eq!(code, 201);
        assert_eq!(answer["status"]["allowed"], true);
        let (_, answer) = security
            .review(
                &create(&bob, "selfsubjectaccessreviews"),
                Some(review(json!({"resourceAttributes": {"verb": "list", "group": "resource.k8s.io", "resource": "resourcepoolstatusrequests"}}))),
            )
            .expect("answers");
        assert_eq!(answer["status"]["allowed"], false);
        let sar = json!({"kind": "SubjectAccessReview", "spec": {"user": "admin", "groups": ["system:masters"],
            "resourceAttributes": {"verb": "delete", "resource": "nodes"}}});
        let (_, answer) = security
            .review(&create(&bob, "subjectaccessreviews"), Some(sar))
            .expect("answers");
        assert_eq!(
            answer["status"]["allowed"], true,
            "about the named user, not the requester"
        );
        let (code, _) = security
            .review(
                &create(&bob, "selfsubjectaccessreviews"),
                Some(review(json!({}))),
            )
            .expect_err("no attributes");
        assert_eq!(code, 400);
    }

    #[test]
    fn node_association_needs_a_service_account_bound_to_the_allocated_node() {
        let status = json!({"allocation": {"nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}});
        assert_eq!(allocated_node(&status), Some("node-1"));
        assert_eq!(allocated_node(&json!({"allocation": {}})), None);
        let mut sa = User {
            name: "system:serviceaccount:kube-system:driver".into(),
            ..User::default()
        };
        assert!(
            !service_account_on_node(&sa, Some("node-1")),
            "no node binding"
        );
        sa.extra
            .insert(NODE_NAME_EXTRA.into(), vec!["node-1".into()]);
        assert!(service_account_on_node(&sa, Some("node-1")));
        assert!(!service_account_on_node(&sa, Some("node-2")));
        assert!(!service_account_on_node(&sa, None));
        let mut person = sa.clone();
        person.name = "alice".into();
        assert!(!service_account_on_node(&person, Some("node-1")));
    }
}
