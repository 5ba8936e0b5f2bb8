//! Aggregated discovery (`apidiscovery.k8s.io/v2` `APIGroupDiscoveryList`) for `/api` and
//! `/apis`: kubectl asks for it first and, when the answer has that content type, learns every
//! group, version and resource from two requests instead of one per group version.
//!
//! Key design decision: the aggregated documents are built from the legacy ones the server
//! already serves (`APIGroupList`, `APIResourceList` per group version), through a lookup the
//! caller passes in, so groups served elsewhere (RBAC) appear in both forms without a second
//! table. The cost: one conversion per request (a few dozen resources).

use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// Which aggregated discovery version the `Accept` header asks for first, if any.
pub fn requested_version(accept: &str) -> Option<&'static str> {
    for media in accept.split(',') {
        let params: Vec<&str> = media.split(';').map(str::trim).collect();
        let wants = |p: &str| params.contains(&p);
        if !wants("g=apidiscovery.k8s.io") || !wants("as=APIGroupDiscoveryList") {
            if params
                .first()
                .is_some_and(|m| *m == "application/json" || *m == "*/*")
                && params.len() == 1
            {
                // Plain JSON ranks before any aggregated form listed after it.
                return None;
            }
            continue;
        }
        if wants("v=v2") {
            return Some("v2");
        }
        if wants("v=v2beta1") {
            return Some("v2beta1");
        }
    }
    None
}

/// One `APIResourceList` entry converted; `None` for subresources (they join their parent).
fn resource(group: &str, version: &str, entry: &Value) -> Option<Value> {
    let name = entry.get("name")?.as_str()?;
    if name.contains('/') {
        return None;
    }
    let kind = entry
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let namespaced = entry
        .get("namespaced")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut out = json!({
        "resource": name,
        "responseKind": {"group": group, "version": version, "kind": kind},
        "scope": if namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": entry.get("singularName").cloned().unwrap_or(json!("")),
        "verbs": entry.get("verbs").cloned().unwrap_or(json!([])),
    });
    for key in ["shortNames", "categories"] {
        if let Some(list) = entry
            .get(key)
            .and_then(Value::as_array)
            .filter(|l| !l.is_empty())
        {
            out[key] = Value::Array(list.clone());
        }
    }
    Some(out)
}

/// An `APIResourceList` as an aggregated version entry.
fn version_entry(group: &str, version: &str, list: &Value) -> Value {
    let entries = list
        .get("resources")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut resources: Vec<Value> = entries
        .iter()
        .filter_map(|e| resource(group, version, e))
        .collect();
    for entry in &entries {
        let Some((parent, sub)) = entry
            .get("name")
            .and_then(Value::as_str)
            .and_then(|n| n.split_once('/'))
        else {
            continue;
        };
        let kind = entry
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if let Some(r) = resources.iter_mut().find(|r| r["resource"] == parent)
            && let Some(map) = r.as_object_mut()
        {
            let subs = map.entry("subresources").or_insert_with(|| json!([]));
            if let Some(subs) = subs.as_array_mut() {
                // A subresource of another group's kind (a Scale) names its group and version.
                let sub_group = entry.get("group").and_then(Value::as_str).unwrap_or(group);
                let sub_version = entry
                    .get("version")
                    .and_then(Value::as_str)
                    .unwrap_or(version);
                subs.push(json!({
                    "subresource": sub,
                    "responseKind": {"group": sub_group, "version": sub_version, "kind": kind},
                    "verbs": entry.get("verbs").cloned().unwrap_or(json!([])),
                }));
            }
        }
    }
    json!({"version": version, "resources": resources, "freshness": "Current"})
}

/// The `APIGroupDiscoveryList` for `/api` (core) or `/apis` (named groups). `legacy` answers
/// a legacy discovery path (`/api`, `/apis`, `/api/v1`, `/apis/g/v`) with its JSON.
pub fn document(
    path: &str,
    version: &str,
    legacy: &dyn Fn(&str) -> Option<Value>,
) -> Option<Value> {
    let groups: Vec<(String, Vec<String>)> = match path {
        "/api" => {
            let versions = legacy("/api")?
                .get("versions")
                .and_then(Value::as_array)
                .map(|v| {
                    v.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            vec![(String::new(), versions)]
        }
        "/apis" => legacy("/apis")?
            .get("groups")
            .and_then(Value::as_array)
            .map(|groups| {
                groups
                    .iter()
                    .map(|g| {
                        let name = g["name"].as_str().unwrap_or_default().to_string();
                        let preferred = g["preferredVersion"]["version"]
                            .as_str()
                            .unwrap_or_default()
                            .to_string();
                        let mut versions: Vec<String> = g["versions"]
                            .as_array()
                            .map(|v| {
                                v.iter()
                                    .filter_map(|v| v["version"].as_str().map(str::to_string))
                                    .collect()
                            })
                            .unwrap_or_default();
                        // The preferred version comes first.
                        versions.sort_by_key(|v| *v != preferred);
                        (name, versions)
                    })
                    .collect()
            })
            .unwrap_or_default(),
        _ => return None,
    };
    let items: Vec<Value> = groups
        .iter()
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .filter_map(|v| {
                    let path = if group.is_empty() {
                        format!("/api/{v}")
                    } else {
                        format!("/apis/{group}/{v}")
                    };
                    legacy(&path).map(|list| version_entry(group, v, &list))
                })
                .collect();
            let metadata = if group.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": group, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    Some(json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    }))
}

/// The aggregated answer for `/api` or `/apis` when the `Accept` header asks for it.
pub fn respond(
    path: &str,
    accept: &str,
    legacy: &dyn Fn(&str) -> Option<Value>,
) -> Option<Response> {
    let version = requested_version(accept)?;
    let value = document(path, version, legacy)?;
    let body = serde_json::to_vec(&value).unwrap_or_default();
    let content_type =
        format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    Some(
        (
            StatusCode::OK,
            [
                (header::CONTENT_TYPE, content_type),
                (header::VARY, "Accept".to_string()),
            ],
            body,
        )
            .into_response(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECTL_ACCEPT: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

    fn legacy(path: &str) -> Option<Value> {
        match path {
            "/api" => Some(json!({"versions": ["v1"]})),
            "/apis" => Some(crate::resources::api_group_list()),
            other => {
                let rest = other.trim_start_matches('/');
                let parts: Vec<&str> = rest.split('/').collect();
                match parts.as_slice() {
                    ["api", v] => crate::resources::api_resource_list("", v),
                    ["apis", g, v] => crate::resources::api_resource_list(g, v),
                    _ => None,
                }
            }
        }
    }

    #[test]
    fn accept_headers_choose_the_form() {
        assert_eq!(requested_version(KUBECTL_ACCEPT), Some("v2"));
        assert_eq!(
            requested_version(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            ),
            Some("v2beta1")
        );
        assert_eq!(requested_version("application/json"), None);
        assert_eq!(requested_version(""), None);
        assert_eq!(
            requested_version(
                "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            ),
            None
        );
    }

    #[test]
    fn groups_list_their_resources_with_subresources_and_preferred_version_first() {
        let doc = document("/apis", "v2", &legacy).expect("served");
        let items = doc["items"].as_array().expect("items");
        let resource = items
            .iter()
            .find(|g| g["metadata"]["name"] == "resource.k8s.io")
            .expect("resource.k8s.io");
        assert_eq!(resource["versions"][0]["version"], "v1");
        let v1 = &resource["versions"][0]["resources"];
        let claims = v1
            .as_array()
            .and_then(|r| r.iter().find(|r| r["resource"] == "resourceclaims"))
            .expect("resourceclaims");
        assert_eq!(claims["scope"], "Namespaced");
        assert_eq!(claims["responseKind"]["kind"], "ResourceClaim");
        assert_eq!(claims["subresources"][0]["subresource"], "status");
        let versions: Vec<&str> = resource["versions"]
            .as_array()
            .expect("versions")
            .iter()
            .filter_map(|v| v["version"].as_str())
            .collect();
        assert!(versions.contains(&"v1alpha3") && versions.contains(&"v1beta2"));
        let core = document("/api", "v2", &legacy).expect("served");
        let core_resources = &core["items"][0]["versions"][0]["resources"];
        assert!(core_resources.as_array().is_some_and(|r| {
            r.iter()
                .any(|r| r["resource"] == "events" && r["shortNames"] == json!(["ev"]))
        }));
        assert!(core["items"][0]["metadata"].get("name").is_none());
        // kube-controller-manager's namespace deleter reads these: every resource but
        // namespaces deletes by collection, and namespaces have `finalize`.
        let core_resource = |name: &str| {
            core_resources
                .as_array()
                .and_then(|r| r.iter().find(|r| r["resource"] == name))
                .cloned()
                .expect("a core resource")
        };
        let deletes_collections = |r: &Value| {
            r["verbs"]
                .as_array()
                .is_some_and(|v| v.iter().any(|v| v == "deletecollection"))
        };
        assert!(deletes_collections(&core_resource("configmaps")));
        assert!(deletes_collections(claims));
        let namespaces = core_resource("namespaces");
        assert!(!deletes_collections(&namespaces));
        let finalize = namespaces["subresources"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["subresource"] == "finalize"))
            .expect("namespaces/finalize");
        assert_eq!(finalize["verbs"], json!(["update"]));
    }
}
