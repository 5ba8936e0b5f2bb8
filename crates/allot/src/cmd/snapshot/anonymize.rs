//! `allot snapshot --anonymize`: names, namespaces, label values and annotation values replaced
//! consistently by a keyed hash, so that the snapshot schedules exactly as the cluster did, up
//! to renaming.
//!
//! Key design decision: one function `h(s)` (`a` and 15 hex digits of SHA-256 over the key and
//! `s`) replaces a string wherever it must stay equal to another: a node's name, its
//! `kubernetes.io/hostname` label, a pod's `spec.nodeName` and a `matchFields` value all
//! become the same `h(name)`. What scheduling reads by value is kept (see [`RULE`]).

use std::collections::BTreeSet;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The rule, for `--help` and the documentation.
pub const RULE: &str = "Replace names, namespaces, label values and annotation values \
consistently, keeping what scheduling depends on. Every object's name and namespace becomes \
h(name) (`a` and 15 hex digits of SHA-256 over the key and the name), and so does every other \
field equal to one of those names (spec.nodeName, claim and template references, owner \
references, reservedFor, pool names equal to node names, matchFields values), except the names \
of cluster configuration that workloads refer to by value (DeviceClasses, PriorityClasses, \
StorageClasses, CSIDrivers, VolumeAttributesClasses) and names that CEL expressions or request \
paths contain. Label keys are kept (selectors and topology keys use them); label values become \
h(value), in the labels and in every selector (matchLabels, matchExpressions values, \
nodeSelector, Service selectors) alike, except numbers (Gt/Lt compare them) and the values of \
kubernetes.io, k8s.io and allot.dev keys (os, arch, zone: what scheduling matches), whose \
names are still replaced. Annotation values become h(value) alike (kubernetes.io, k8s.io and \
allot.dev ones keep theirs, names replaced); kubectl's last-applied-configuration and \
generateName are dropped. Kept as they are: uids, resourceVersions, times, quantities, device \
names, attributes and capacities, driver names, container images, commands and environment. \
The same --anonymize-key gives the same names from one snapshot to the next.";

/// Kinds whose objects keep their names: cluster configuration referred to by value.
const KEPT_KINDS: &[&str] = &[
    "DeviceClass",
    "PriorityClass",
    "StorageClass",
    "CSIDriver",
    "VolumeAttributesClass",
];

/// A random key (32 bytes of the kernel's random source).
pub fn random_key() -> anyhow::Result<Vec<u8>> {
    use std::io::Read;
    let mut key = vec![0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut key))
        .map_err(|e| anyhow::anyhow!("--anonymize: reading /dev/urandom: {e}"))?;
    Ok(key)
}

/// The keyed hash of `value`: `a` and 15 hex digits (a valid name, label value and DNS label).
pub fn hash(key: &[u8], value: &str) -> String {
    let mut digest = Sha256::new();
    digest.update((key.len() as u64).to_le_bytes());
    digest.update(key);
    digest.update(value.as_bytes());
    let bytes = digest.finalize();
    let mut out = String::from("a");
    for byte in bytes.iter().take(8) {
        out.push_str(&format!("{byte:02x}"));
    }
    out.truncate(16);
    out
}

/// Whether a label or annotation key's value is kept (names in it still replaced).
fn system_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return key == "metadata.name";
    };
    ["kubernetes.io", "k8s.io", "allot.dev"]
        .iter()
        .any(|d| prefix == *d || prefix.ends_with(&format!(".{d}")))
}

struct Anonymizer<'a> {
    key: &'a [u8],
    names: BTreeSet<String>,
}

impl Anonymizer<'_> {
    fn h(&self, value: &str) -> String {
        hash(self.key, value)
    }

    fn name(&self, value: &str) -> Option<String> {
        self.names.contains(value).then(|| self.h(value))
    }

    /// A label value under `key`, in labels and selectors alike.
    fn label_value(&self, key: &str, value: &str) -> String {
        if value.is_empty() || value.parse::<i64>().is_ok() {
            return value.to_string();
        }
        if system_key(key) {
            return self.name(value).unwrap_or_else(|| value.to_string());
        }
        self.h(value)
    }

    fn annotation_value(&self, key: &str, value: &str) -> String {
        if system_key(key) {
            return self.name(value).unwrap_or_else(|| value.to_string());
        }
        self.h(value)
    }

    /// Walks one value; `field` is the key it is under.
    fn walk(&self, field: &str, value: &mut Value) {
        match value {
            Value::String(text) => {
                if let Some(new) = self.name(text) {
                    *text = new;
                }
            }
            Value::Array(items) => {
                for item in items {
                    self.walk(field, item);
                }
            }
            Value::Object(map) => {
                // A selector requirement: `{key, operator, values}`.
                let requirement = map.get("key").and_then(Value::as_str).map(str::to_string);
                let operator = map
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string();
                for (name, child) in map.iter_mut() {
                    match (name.as_str(), &requirement) {
                        ("values", Some(key)) if operator != "Gt" && operator != "Lt" => {
                            for item in child.as_array_mut().into_iter().flatten() {
                                if let Value::String(text) = item {
                                    *text = self.label_value(key, text);
                                }
                            }
                        }
                        ("labels" | "matchLabels" | "nodeSelector" | "selector", _)
                            if is_string_map(child) =>
                        {
                            for (key, item) in child.as_object_mut().into_iter().flatten() {
                                if let Value::String(text) = item {
                                    *text = self.label_value(key, text);
                                }
                            }
                        }
                        ("annotations", _) if is_string_map(child) => {
                            if let Some(annotations) = child.as_object_mut() {
                                annotations
                                    .remove("kubectl.kubernetes.io/last-applied-configuration");
                                for (key, item) in annotations.iter_mut() {
                                    if let Value::String(text) = item {
                                        *text = self.annotation_value(key, text);
                                    }
                                }
                            }
                        }
                        _ => self.walk(name, child),
                    }
                }
            }
            _ => {}
        }
        let _ = field;
    }
}

fn is_string_map(value: &Value) -> bool {
    value
        .as_object()
        .is_some_and(|m| m.values().all(Value::is_string))
}

/// Collects every string under `field` keys (`expression`, `request`) below `value`.
fn strings_under(value: &Value, field: &str, out: &mut Vec<String>) {
    match value {
        Value::Array(items) => items.iter().for_each(|i| strings_under(i, field, out)),
        Value::Object(map) => {
            for (name, child) in map {
                if name == field
                    && let Value::String(text) = child
                {
                    out.push(text.clone());
                } else {
                    strings_under(child, field, out);
                }
            }
        }
        _ => {}
    }
}

/// Anonymises the objects in place (see [`RULE`]).
pub fn anonymize(objects: &mut [Value], key: &[u8]) {
    let mut names = BTreeSet::new();
    let mut kept = BTreeSet::new();
    for object in objects.iter() {
        let kind = object["kind"].as_str().unwrap_or_default();
        let meta = &object["metadata"];
        if let Some(name) = meta["name"].as_str() {
            if KEPT_KINDS.contains(&kind) {
                kept.insert(name.to_string());
            } else {
                names.insert(name.to_string());
            }
        }
        if let Some(namespace) = meta["namespace"].as_str() {
            names.insert(namespace.to_string());
        }
    }
    let mut expressions = Vec::new();
    let mut requests = Vec::new();
    for object in objects.iter() {
        strings_under(object, "expression", &mut expressions);
        strings_under(object, "request", &mut requests);
    }
    for request in &requests {
        for part in request.split('/') {
            kept.insert(part.to_string());
        }
    }
    names.retain(|name| {
        !name.is_empty()
            && !kept.contains(name)
            && !expressions.iter().any(|e| e.contains(name.as_str()))
    });
    let anonymizer = Anonymizer { key, names };
    for object in objects.iter_mut() {
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("generateName");
        }
        anonymizer.walk("", object);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn objects() -> Vec<Value> {
        vec![
            json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1",
                "labels": {"kubernetes.io/hostname": "node-1", "kubernetes.io/arch": "amd64",
                    "team": "ml", "rank": "5"}}}),
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "prod"}}),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": "gpu.example.com"},
                "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}}),
            json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-0", "namespace": "prod",
                "generateName": "web-", "labels": {"app": "web"},
                "annotations": {"owner": "alice", "kubectl.kubernetes.io/last-applied-configuration": "{}",
                    "resource.kubernetes.io/pod-claim-name": "gpu"}},
                "spec": {"nodeName": "node-1", "nodeSelector": {"team": "ml", "kubernetes.io/arch": "amd64"},
                    "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [
                            {"key": "rank", "operator": "Gt", "values": ["3"]},
                            {"key": "team", "operator": "In", "values": ["ml", "ops"]}],
                          "matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}}},
                    "resourceClaims": [{"name": "gpu", "resourceClaimName": "web-0-gpu"}],
                    "containers": [{"name": "c", "image": "nginx",
                        "resources": {"claims": [{"name": "gpu", "request": "gpu"}]}}]}}),
            json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "web-0-gpu", "namespace": "prod"},
                "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}},
                "status": {"reservedFor": [{"resource": "pods", "name": "web-0", "uid": "u1"}],
                    "allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                        "pool": "node-1", "device": "gpu-0"}]}}}}),
        ]
    }

    #[test]
    fn names_and_labels_are_replaced_consistently_and_what_scheduling_reads_is_kept() {
        let mut objects = objects();
        anonymize(&mut objects, b"k");
        let h = |s: &str| hash(b"k", s);
        let node = &objects[0];
        assert_eq!(node["metadata"]["name"], json!(h("node-1")));
        assert_eq!(
            node["metadata"]["labels"],
            json!({"kubernetes.io/hostname": h("node-1"), "kubernetes.io/arch": "amd64",
                "team": h("ml"), "rank": "5"})
        );
        assert_eq!(objects[1]["metadata"]["name"], json!(h("prod")));
        assert_eq!(objects[2]["metadata"]["name"], json!("gpu.example.com"));
        let pod = &objects[3];
        assert_eq!(pod["metadata"]["name"], json!(h("web-0")));
        assert_eq!(pod["metadata"]["namespace"], json!(h("prod")));
        assert_eq!(pod["metadata"].get("generateName"), None);
        assert_eq!(
            pod["metadata"]["annotations"],
            json!({"owner": h("alice"), "resource.kubernetes.io/pod-claim-name": "gpu"})
        );
        assert_eq!(pod["spec"]["nodeName"], json!(h("node-1")));
        assert_eq!(
            pod["spec"]["nodeSelector"],
            json!({"team": h("ml"), "kubernetes.io/arch": "amd64"})
        );
        let term = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"][0];
        assert_eq!(term["matchExpressions"][0]["values"], json!(["3"]));
        assert_eq!(
            term["matchExpressions"][1]["values"],
            json!([h("ml"), h("ops")])
        );
        assert_eq!(term["matchFields"][0]["values"], json!([h("node-1")]));
        assert_eq!(
            pod["spec"]["resourceClaims"][0],
            json!({"name": "gpu", "resourceClaimName": h("web-0-gpu")})
        );
        assert_eq!(pod["spec"]["containers"][0]["image"], json!("nginx"));
        let claim = &objects[4];
        assert_eq!(claim["status"]["reservedFor"][0]["name"], json!(h("web-0")));
        assert_eq!(
            claim["status"]["allocation"]["devices"]["results"][0],
            json!({"request": "gpu", "driver": "gpu.example.com", "pool": h("node-1"), "device": "gpu-0"})
        );
    }

    #[test]
    fn the_key_decides_the_names() {
        assert_eq!(hash(b"k", "node-1"), hash(b"k", "node-1"));
        assert_ne!(hash(b"k", "node-1"), hash(b"other", "node-1"));
        assert_ne!(hash(b"k", "node-1"), hash(b"k", "node-2"));
        let name = hash(b"k", "x");
        assert_eq!(name.len(), 16);
        assert!(name.starts_with('a'));
        assert!(
            name.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        );
    }
}
