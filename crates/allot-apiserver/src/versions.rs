//! The versions `allot serve` serves: `--runtime-config` as kube-apiserver takes it, and
//! conversion at the request boundary.
//!
//! Key design decision: storage keeps one version per kind (allot-api's storage version) and
//! every request at another version converts at the edge: an object read, listed or watched at
//! `resource.k8s.io/v1beta1` is converted from the stored v1 object as it is rendered
//! ([`render`]); a body written at v1beta1 decodes through allot-api's conversion
//! (`load::decode_object`), so creates, updates, patches (applied to the v1beta1 rendering of
//! the stored object) and server-side applies all meet v1 validation and storage. Which group
//! versions and resources answer is decided per row of `resources::RESOURCES` by a
//! [`RuntimeConfig`]; the discovery and OpenAPI documents are filtered by it in one place
//! ([`RuntimeConfig::filter_document`]), so `resources` and `openapi` stay tables. The cost:
//! managed fields recorded at one version are compared as written when another version
//! applies (kube-apiserver converts them); for the DRA kinds the paths differ only under
//! `exactly` and `basic`, in specs that are immutable for claims.
//!
//! Defaults: Kubernetes 1.37's (every GA version on; `resource.k8s.io/v1beta1` and `v1beta2`
//! off), except allot's documented extensions, the alpha and beta APIs of features allot turns
//! on by default: `resource.k8s.io/v1alpha3` (DeviceTaintRule, ResourcePoolStatusRequest),
//! `resource.k8s.io/v1beta2/devicetaintrules` and `scheduling.k8s.io/v1beta1/podgroups`.
//! `--runtime-config=api/alpha=false,api/beta=false` gives upstream's defaults exactly.

use std::collections::BTreeSet;

use allot_store::Stored;
use serde_json::Value;

use crate::resources::{RESOURCES, ResourceInfo};

/// Served rows that upstream 1.37 leaves off by default but allot serves (its extensions).
const ALLOT_ON: &[(&str, &str, &str)] = &[
    ("resource.k8s.io", "v1alpha3", "*"),
    ("resource.k8s.io", "v1beta2", "devicetaintrules"),
    ("scheduling.k8s.io", "v1beta1", "podgroups"),
];

/// Group versions served only when asked for, as kube-apiserver 1.37 (besides `ALLOT_ON`,
/// every alpha and beta version of upstream is off; these are the ones allot has).
const UPSTREAM_OFF: &[(&str, &str)] = &[
    ("resource.k8s.io", "v1beta1"),
    ("resource.k8s.io", "v1beta2"),
    ("resource.k8s.io", "v1alpha3"),
    ("scheduling.k8s.io", "v1beta1"),
];

/// Groups served outside `RESOURCES` (reviews), always at v1.
const REVIEW_GROUPS: &[&str] = &["authorization.k8s.io", "authentication.k8s.io"];

/// allot's own groups: like a CustomResourceDefinition's in kube-apiserver, the stage keys
/// (`api/alpha`, ...) leave them alone; a `group/version` key still applies.
const OWN_GROUPS: &[&str] = &["allot.dev"];

/// Whether `version` is GA (`v1`), beta (`v1beta2`) or alpha (`v1alpha3`).
fn stage(version: &str) -> &'static str {
    if version.contains("alpha") {
        "alpha"
    } else if version.contains("beta") {
        "beta"
    } else {
        "ga"
    }
}

fn row_key(info: &ResourceInfo) -> (&'static str, &'static str, &'static str) {
    (info.group, info.version, info.plural)
}

/// Upstream 1.37's default for one served row.
fn upstream_default(info: &ResourceInfo) -> bool {
    !UPSTREAM_OFF
        .iter()
        .any(|(g, v)| *g == info.group && *v == info.version)
}

/// allot's default for one served row.
fn allot_default(info: &ResourceInfo) -> bool {
    upstream_default(info)
        || ALLOT_ON.iter().any(|(g, v, r)| {
            *g == info.group && *v == info.version && (*r == "*" || *r == info.plural)
        })
}

/// Which served rows (`group/version/resource`) answer: allot's defaults adjusted by
/// `--runtime-config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeConfig {
    /// The rows switched off, by `(group, version, plural)`.
    off: BTreeSet<(&'static str, &'static str, &'static str)>,
}

impl Default for RuntimeConfig {
    fn default() -> Self {
        Self::defaults()
    }
}

impl RuntimeConfig {
    /// allot's defaults (see the module documentation).
    pub fn defaults() -> Self {
        RuntimeConfig {
            off: RESOURCES
                .iter()
                .filter(|r| !allot_default(r))
                .map(row_key)
                .collect(),
        }
    }

    /// Kubernetes 1.37's defaults.
    pub fn upstream() -> Self {
        RuntimeConfig {
            off: RESOURCES
                .iter()
                .filter(|r| !upstream_default(r))
                .map(row_key)
                .collect(),
        }
    }

    /// allot's defaults with a `--runtime-config` value applied, as kube-apiserver applies
    /// one: `api/all`, `api/ga`, `api/beta`, `api/alpha` first (in that order), then
    /// `group/version` keys, then `group/version/resource` keys; a key without a value means
    /// `true`; the core group is `api/v1`.
    pub fn parse(flag: &str) -> Result<Self, String> {
        let mut config = Self::defaults();
        config.apply(flag)?;
        Ok(config)
    }

    /// Applies a `--runtime-config` value over this configuration.
    pub fn apply(&mut self, flag: &str) -> Result<(), String> {
        let mut entries: Vec<(&str, &str)> = Vec::new();
        for item in flag.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            entries.push((key.trim(), value.trim()));
        }
        for matcher in ["api/all", "api/ga", "api/beta", "api/alpha"] {
            let Some((_, value)) = entries.iter().rev().find(|(k, _)| *k == matcher) else {
                continue;
            };
            let enable = match *value {
                "true" => true,
                "false" => false,
                other => return Err(format!("invalid value {matcher}={other}")),
            };
            for info in RESOURCES.iter().filter(|r| !OWN_GROUPS.contains(&r.group)) {
                if matcher == "api/all" || matcher == format!("api/{}", stage(info.version)) {
                    self.set(info, enable);
                }
            }
        }
        let mut versions = Vec::new();
        let mut resources = Vec::new();
        for (key, value) in &entries {
            if matches!(*key, "api/all" | "api/ga" | "api/beta" | "api/alpha") {
                continue;
            }
            let tokens: Vec<&str> = key.split('/').collect();
            if tokens.len() < 2 || tokens.len() > 3 || tokens.iter().any(|t| t.is_empty()) {
                return Err(format!("runtime-config invalid key {key}"));
            }
            let group = if tokens[0] == "api" { "" } else { tokens[0] };
            let version = tokens[1];
            let enable = parse_bool(key, value)?;
            if REVIEW_GROUPS.contains(&group) {
                if version != "v1" {
                    return Err(format!(
                        "group version {group}/{version} that has not been registered"
                    ));
                }
                if !enable {
                    return Err(format!(
                        "{key}: allot always serves {group}/v1 (the access and token reviews)"
                    ));
                }
                continue;
            }
            if !RESOURCES.iter().any(|r| r.group == group) {
                // As kube-apiserver: a group this server does not have is skipped.
                continue;
            }
            if !RESOURCES
                .iter()
                .any(|r| r.group == group && r.version == version)
            {
                let gv = if group.is_empty() {
                    version.to_string()
                } else {
                    format!("{group}/{version}")
                };
                return Err(format!("group version {gv} that has not been registered"));
            }
            match tokens.get(2) {
                None => versions.push((group, version, enable)),
                Some(resource) => {
                    if resource.to_lowercase() != *resource {
                        return Err(format!(
                            "invalid key {key}: group/version/resource and resource is always lowercase plural, not {resource:?}"
                        ));
                    }
                    resources.push((group, version, resource.to_string(), enable));
                }
            }
        }
        for (group, version, enable) in versions {
            for info in RESOURCES
                .iter()
                .filter(|r| r.group == group && r.version == version)
            {
                self.set(info, enable);
            }
        }
        for (group, version, resource, enable) in resources {
            for info in RESOURCES
                .iter()
                .filter(|r| r.group == group && r.version == version && r.plural == resource)
            {
                self.set(info, enable);
            }
        }
        Ok(())
    }

    fn set(&mut self, info: &ResourceInfo, enable: bool) {
        if enable {
            self.off.remove(&row_key(info));
        } else {
            self.off.insert(row_key(info));
        }
    }

    /// Whether a served row answers.
    pub fn serves(&self, info: &ResourceInfo) -> bool {
        !self.off.contains(&row_key(info))
    }

    /// Whether any resource of `group/version` answers.
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        RESOURCES
            .iter()
            .any(|r| r.group == group && r.version == version && self.serves(r))
    }

    /// The rows that answer.
    pub fn served(&self) -> impl Iterator<Item = &'static ResourceInfo> + '_ {
        RESOURCES.iter().filter(|r| self.serves(r))
    }

    /// What differs from Kubernetes 1.37's defaults, for the start-up line: `+g/v/r` served
    /// beyond them, `-g/v/r` not served although upstream would.
    pub fn summary(&self) -> String {
        let upstream = Self::upstream();
        let mut parts = Vec::new();
        for info in RESOURCES {
            let (ours, theirs) = (self.serves(info), upstream.serves(info));
            if ours != theirs {
                let gv = info.group_version();
                parts.push(format!(
                    "{}{gv}/{}",
                    if ours { "+" } else { "-" },
                    info.plural
                ));
            }
        }
        if parts.is_empty() {
            "Kubernetes 1.37's defaults".into()
        } else {
            format!("Kubernetes 1.37's defaults {}", parts.join(" "))
        }
    }

    /// A discovery or OpenAPI document (`path`, as `server` produces it for every served row)
    /// with what this configuration switches off removed: versions and groups from
    /// `/apis`, resources from `/api/v1` and `/apis/g/v` (`None` when none is left), group
    /// versions from `/openapi/v3` and their documents, paths and versions of kinds from
    /// `/openapi/v2`.
    pub fn filter_document(&self, path: &str, document: Option<Value>) -> Option<Value> {
        let mut document = document?;
        match path {
            "/apis" => self.filter_group_list(&mut document),
            "/openapi/v3" => {
                if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
                    paths.retain(|gv_path, _| {
                        split_gv(gv_path).is_none_or(|(g, v)| {
                            REVIEW_GROUPS.contains(&g) || self.serves_group_version(g, v)
                        })
                    });
                }
            }
            "/openapi/v2" => self.filter_paths_and_kinds(&mut document, "definitions"),
            _ => {
                if let Some(rest) = path.strip_prefix("/openapi/v3/") {
                    let (group, version) = split_gv(rest)?;
                    if !self.serves_group_version(group, version) {
                        return None;
                    }
                    if let Some(components) = document.get_mut("components") {
                        self.filter_kinds(components, "schemas");
                    }
                    self.filter_paths_and_kinds(&mut document, "");
                } else if let Some((group, version)) = split_gv(path.trim_start_matches('/')) {
                    if REVIEW_GROUPS.contains(&group) {
                        return Some(document);
                    }
                    if !self.serves_group_version(group, version) {
                        return None;
                    }
                    if let Some(list) = document.get_mut("resources").and_then(Value::as_array_mut)
                    {
                        list.retain(|entry| {
                            let name = entry["name"].as_str().unwrap_or_default();
                            let plural = name.split('/').next().unwrap_or_default();
                            RESOURCES.iter().any(|r| {
                                r.group == group
                                    && r.version == version
                                    && r.plural == plural
                                    && self.serves(r)
                            }) || !RESOURCES.iter().any(|r| {
                                r.group == group && r.version == version && r.plural == plural
                            })
                        });
                    }
                }
            }
        }
        Some(document)
    }

    fn filter_group_list(&self, document: &mut Value) {
        let Some(groups) = document.get_mut("groups").and_then(Value::as_array_mut) else {
            return;
        };
        groups.retain_mut(|group| {
            let name = group["name"].as_str().unwrap_or_default().to_string();
            if REVIEW_GROUPS.contains(&name.as_str()) {
                return true;
            }
            let Some(versions) = group.get_mut("versions").and_then(Value::as_array_mut) else {
                return true;
            };
            versions.retain(|v| {
                self.serves_group_version(&name, v["version"].as_str().unwrap_or_default())
            });
            let left: Vec<&str> = versions
                .iter()
                .filter_map(|v| v["version"].as_str())
                .collect();
            if left.is_empty() {
                return false;
            }
            let preferred = crate::resources::preferred_version(&left).to_string();
            group["preferredVersion"] = serde_json::json!({
                "groupVersion": format!("{name}/{preferred}"),
                "version": preferred,
            });
            true
        });
    }

    /// Removes the paths of rows switched off, and the group versions of kinds
    /// (`x-kubernetes-group-version-kind`) under `definitions` (`""`: none) no longer served.
    fn filter_paths_and_kinds(&self, document: &mut Value, definitions: &str) {
        if let Some(paths) = document.get_mut("paths").and_then(Value::as_object_mut) {
            paths.retain(|path, _| {
                !RESOURCES
                    .iter()
                    .any(|r| !self.serves(r) && is_path_of(path, r))
            });
        }
        if !definitions.is_empty() {
            self.filter_kinds(document, definitions);
        }
    }

    fn filter_kinds(&self, document: &mut Value, field: &str) {
        let Some(definitions) = document.get_mut(field).and_then(Value::as_object_mut) else {
            return;
        };
        for schema in definitions.values_mut() {
            let Some(gvks) = schema
                .get_mut("x-kubernetes-group-version-kind")
                .and_then(Value::as_array_mut)
            else {
                continue;
            };
            gvks.retain(|gvk| {
                let (group, version, kind) = (
                    gvk["group"].as_str().unwrap_or_default(),
                    gvk["version"].as_str().unwrap_or_default(),
                    gvk["kind"].as_str().unwrap_or_default(),
                );
                let rows: Vec<&ResourceInfo> = RESOURCES
                    .iter()
                    .filter(|r| r.group == group && r.version == version && r.kind.name() == kind)
                    .collect();
                rows.is_empty() || rows.iter().any(|r| self.serves(r))
            });
        }
    }
}

/// kube-apiserver's `strconv.ParseBool` reading of a value; empty means `true`.
fn parse_bool(key: &str, value: &str) -> Result<bool, String> {
    match value {
        "" | "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(format!(
            "invalid value of {key}: {other}, err: strconv.ParseBool: parsing {other:?}: invalid syntax"
        )),
    }
}

/// `api/v1` → `("", "v1")`, `apis/g/v` → `(g, v)`.
fn split_gv(path: &str) -> Option<(&str, &str)> {
    let segments: Vec<&str> = path.split('/').collect();
    match segments.as_slice() {
        ["api", version] => Some(("", version)),
        ["apis", group, version] => Some((group, version)),
        _ => None,
    }
}

/// Whether an OpenAPI path (`/apis/g/v/[namespaces/{namespace}/]plural[/...]`) is one of
/// `info`'s.
fn is_path_of(path: &str, info: &ResourceInfo) -> bool {
    let prefix = if info.group.is_empty() {
        format!("/api/{}/", info.version)
    } else {
        format!("/apis/{}/{}/", info.group, info.version)
    };
    let Some(rest) = path.strip_prefix(&prefix) else {
        return false;
    };
    let rest = rest.strip_prefix("namespaces/{namespace}/").unwrap_or(rest);
    rest == info.plural || rest.starts_with(&format!("{}/", info.plural))
}

/// An object as served at `info`'s version: the stored object's JSON, converted from the
/// storage version when `info` is an older version of its kind (allot-api's `versions`).
pub fn render(info: &ResourceInfo, object: &Stored) -> Value {
    let mut json = object.to_json();
    let api_version = info.group_version();
    if allot_api::versions::older_version(&api_version, info.kind.name()).is_some() {
        match allot_api::versions::encode_as(info.kind.name(), json.clone(), &api_version) {
            Ok(converted) => return converted,
            // A stored object always decodes as its storage version; should one not, it is
            // served as stored rather than not at all.
            Err(err) => tracing::error!("converting to {api_version}: {err}"),
        }
    }
    json["apiVersion"] = Value::String(api_version);
    json
}

/// The `--runtime-config` help: the syntax and every served group version with both
/// defaults.
pub fn help() -> String {
    let mut out = String::from(
        "Switch served API versions on or off, as kube-apiserver takes them: \
         `group/version=true|false`, `group/version/resource=...`, `api/all`, `api/ga`, \
         `api/beta`, `api/alpha` (the core group is `api/v1`). allot's defaults are Kubernetes \
         1.37's except the alpha and beta APIs of features allot turns on; \
         `api/alpha=false,api/beta=false` gives upstream's. Served versions (upstream 1.37 \
         default / allot default):\n",
    );
    let mut seen = BTreeSet::new();
    for info in RESOURCES {
        if !seen.insert((info.group, info.version, info.plural)) {
            continue;
        }
        if stage(info.version) == "ga" {
            continue;
        }
        let onoff = |b: bool| if b { "on" } else { "off" };
        out.push_str(&format!(
            "  {}/{}: {} / {}\n",
            info.group_version(),
            info.plural,
            onoff(upstream_default(info)),
            onoff(allot_default(info)),
        ));
    }
    out.push_str("  every GA version (v1): on / on");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_store::Kind;
    use serde_json::json;

    fn row(group: &str, version: &str, plural: &str) -> &'static ResourceInfo {
        crate::resources::lookup(group, version, plural).expect("a served row")
    }

    #[test]
    fn defaults_are_upstreams_but_for_allots_extensions() {
        let config = RuntimeConfig::defaults();
        assert!(config.serves(row("resource.k8s.io", "v1", "resourceclaims")));
        assert!(!config.serves(row("resource.k8s.io", "v1beta1", "resourceclaims")));
        assert!(!config.serves(row("resource.k8s.io", "v1beta2", "resourceslices")));
        assert!(config.serves(row("resource.k8s.io", "v1beta2", "devicetaintrules")));
        assert!(config.serves(row(
            "resource.k8s.io",
            "v1alpha3",
            "resourcepoolstatusrequests"
        )));
        assert!(config.serves(row("scheduling.k8s.io", "v1beta1", "podgroups")));
        let upstream = RuntimeConfig::parse("api/alpha=false,api/beta=false").expect("parses");
        assert_eq!(upstream, RuntimeConfig::upstream());
        assert!(!upstream.serves(row("scheduling.k8s.io", "v1beta1", "podgroups")));
        assert!(upstream.serves(row("", "v1", "pods")));
        assert_eq!(
            RuntimeConfig::upstream().summary(),
            "Kubernetes 1.37's defaults"
        );
        assert!(
            config
                .summary()
                .contains("+scheduling.k8s.io/v1beta1/podgroups")
        );
    }

    #[test]
    fn keys_apply_in_kube_apiservers_order() {
        let config = RuntimeConfig::parse("resource.k8s.io/v1beta1=true").expect("parses");
        assert!(config.serves(row("resource.k8s.io", "v1beta1", "resourceclaims")));
        assert!(config.serves_group_version("resource.k8s.io", "v1beta1"));
        // No value means true; resources win over versions, whatever the order written.
        let config = RuntimeConfig::parse(
            "resource.k8s.io/v1beta1/resourceslices=false,resource.k8s.io/v1beta1",
        )
        .expect("parses");
        assert!(config.serves(row("resource.k8s.io", "v1beta1", "deviceclasses")));
        assert!(!config.serves(row("resource.k8s.io", "v1beta1", "resourceslices")));
        // api/beta=true turns on every beta version; a version key still wins.
        let config =
            RuntimeConfig::parse("resource.k8s.io/v1beta2=false,api/beta=true").expect("parses");
        assert!(config.serves(row("resource.k8s.io", "v1beta1", "resourceclaims")));
        assert!(!config.serves(row("resource.k8s.io", "v1beta2", "resourceclaims")));
        // api/all=false leaves nothing but what is named.
        let config = RuntimeConfig::parse("api/all=false,api/v1=true").expect("parses");
        assert!(config.serves(row("", "v1", "pods")));
        assert!(!config.serves(row("resource.k8s.io", "v1", "resourceclaims")));
        // allot's own group is left alone by the stage keys, not by its own key.
        assert!(config.serves(row("allot.dev", "v1alpha1", "nodetopologies")));
        let config = RuntimeConfig::parse("allot.dev/v1alpha1=false").expect("parses");
        assert!(!config.serves(row("allot.dev", "v1alpha1", "nodetopologies")));
        // A group allot does not have is skipped, as kube-apiserver skips it.
        assert!(RuntimeConfig::parse("flowcontrol.apiserver.k8s.io/v1=false").is_ok());
    }

    #[test]
    fn bad_keys_and_values_are_refused_as_kube_apiserver_words_them() {
        let cases = [
            ("api/beta=maybe", "invalid value api/beta=maybe"),
            (
                "resource.k8s.io/v1beta1=yes",
                "invalid value of resource.k8s.io/v1beta1: yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax",
            ),
            (
                "resource.k8s.io/v9=true",
                "group version resource.k8s.io/v9 that has not been registered",
            ),
            (
                "resource.k8s.io/v1beta1/ResourceClaims=true",
                "invalid key resource.k8s.io/v1beta1/ResourceClaims: group/version/resource and resource is always lowercase plural, not \"ResourceClaims\"",
            ),
            (
                "resource.k8s.io",
                "runtime-config invalid key resource.k8s.io",
            ),
        ];
        for (flag, want) in cases {
            assert_eq!(RuntimeConfig::parse(flag).unwrap_err(), want, "{flag}");
        }
    }

    #[test]
    fn documents_lose_what_is_switched_off() {
        let config = RuntimeConfig::defaults();
        let groups = config
            .filter_document("/apis", Some(crate::resources::api_group_list()))
            .expect("a list");
        let resource = groups["groups"]
            .as_array()
            .and_then(|g| g.iter().find(|g| g["name"] == "resource.k8s.io"))
            .expect("resource.k8s.io");
        let versions: Vec<&str> = resource["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .filter_map(|v| v["version"].as_str())
            .collect();
        assert!(versions.contains(&"v1") && versions.contains(&"v1beta2"));
        assert!(!versions.contains(&"v1beta1"), "{versions:?}");
        assert_eq!(resource["preferredVersion"]["version"], json!("v1"));
        // v1beta2 answers with its DeviceTaintRules only.
        let list = config
            .filter_document(
                "/apis/resource.k8s.io/v1beta2",
                crate::resources::api_resource_list("resource.k8s.io", "v1beta2"),
            )
            .expect("v1beta2 is served");
        let names: Vec<&str> = list["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .filter_map(|r| r["name"].as_str())
            .collect();
        assert_eq!(names, ["devicetaintrules", "devicetaintrules/status"]);
        assert_eq!(
            config.filter_document(
                "/apis/resource.k8s.io/v1beta1",
                crate::resources::api_resource_list("resource.k8s.io", "v1beta1")
            ),
            None
        );
        // Once asked for, v1beta1 is discovered with its kinds.
        let on = RuntimeConfig::parse("resource.k8s.io/v1beta1=true").expect("parses");
        let list = on
            .filter_document(
                "/apis/resource.k8s.io/v1beta1",
                crate::resources::api_resource_list("resource.k8s.io", "v1beta1"),
            )
            .expect("served");
        assert!(list["resources"].as_array().is_some_and(|r| r.len() >= 5));
        let root = on
            .filter_document("/openapi/v3", Some(crate::openapi::v3_root()))
            .expect("root");
        assert!(root["paths"].get("apis/resource.k8s.io/v1beta1").is_some());
        let root = config
            .filter_document("/openapi/v3", Some(crate::openapi::v3_root()))
            .expect("root");
        assert!(root["paths"].get("apis/resource.k8s.io/v1beta1").is_none());
        assert!(root["paths"].get("apis/resource.k8s.io/v1beta2").is_some());
        let v2 = config
            .filter_document("/openapi/v2", Some(crate::openapi::v2()))
            .expect("v2");
        assert!(
            v2["paths"]
                .get("/apis/resource.k8s.io/v1beta1/namespaces/{namespace}/resourceclaims")
                .is_none()
        );
        assert!(
            v2["paths"]
                .get("/apis/resource.k8s.io/v1/namespaces/{namespace}/resourceclaims")
                .is_some()
        );
        let gvks = &v2["definitions"]["io.k8s.api.resource.v1.ResourceClaim"]["x-kubernetes-group-version-kind"];
        assert_eq!(
            gvks,
            &json!([{"group": "resource.k8s.io", "version": "v1", "kind": "ResourceClaim"}])
        );
    }

    #[test]
    fn objects_render_at_the_requested_version() {
        let claim: allot_api::resource::v1::ResourceClaim = serde_json::from_value(json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "c", "namespace": "ns"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "g", "count": 2}}]}},
        }))
        .expect("a claim");
        let stored =
            Stored::from_object(allot_api::load::Object::ResourceClaim(claim)).expect("stored");
        let beta = render(row("resource.k8s.io", "v1beta1", "resourceclaims"), &stored);
        assert_eq!(beta["apiVersion"], json!("resource.k8s.io/v1beta1"));
        assert_eq!(
            beta["spec"]["devices"]["requests"][0],
            json!({"name": "gpu", "deviceClassName": "g", "count": 2})
        );
        let v1 = render(row("resource.k8s.io", "v1", "resourceclaims"), &stored);
        assert_eq!(
            v1["spec"]["devices"]["requests"][0]["exactly"]["count"],
            json!(2)
        );
        let v1beta2 = render(row("resource.k8s.io", "v1beta2", "resourceclaims"), &stored);
        assert_eq!(v1beta2["apiVersion"], json!("resource.k8s.io/v1beta2"));
        assert_eq!(v1beta2["spec"], v1["spec"]);
        assert_eq!(Kind::ResourceClaim.name(), "ResourceClaim");
    }
}
