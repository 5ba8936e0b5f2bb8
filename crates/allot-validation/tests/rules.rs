//! Table-driven tests: every rule with a valid and an invalid case. Each case patches a valid
//! base object (JSON pointer -> new value; `null` removes) and lists the expected errors as
//! `path: Kind` (the message body's first part), compared as a set.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::defaults::default_object;
use allot_api::load::{LoadOptions, decode_object, parse_str};
use allot_validation::{
    CelCompileError, CelCompiler, CelErrorKind, ExpressionKind, admit_admin_access, validate_object,
};
use serde_json::{Value, json};

/// A stand-in compiler: `ERR` in an expression is a compile error, `COSTLY` costs 2,000,000,
/// `HALF` costs 600,000, everything else costs 10.
struct FakeCel;

impl CelCompiler for FakeCel {
    fn compile(&self, expression: &str, _kind: ExpressionKind) -> Result<u64, CelCompileError> {
        if expression.contains("ERR") {
            return Err(CelCompileError {
                kind: CelErrorKind::Invalid,
                detail: "compilation failed".into(),
            });
        }
        if expression.contains("COSTLY") {
            return Ok(2_000_000);
        }
        if expression.contains("HALF") {
            return Ok(600_000);
        }
        Ok(10)
    }
}

fn base(kind: &str) -> Value {
    match kind {
        "claim" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "claim", "namespace": "default"},
            "spec": {"devices": {
                "requests": [
                    {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com",
                        "selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}]}},
                    {"name": "nic", "firstAvailable": [
                        {"name": "fast", "deviceClassName": "nic.example.com"},
                        {"name": "slow", "deviceClassName": "nic.example.com", "count": 2}]}
                ],
                "constraints": [{"requests": ["gpu", "nic/fast"], "matchAttribute": "example.com/numa"}],
                "config": [{"requests": ["gpu"], "opaque": {"driver": "gpu.example.com", "parameters": {"a": 1}}}]
            }}
        }),
        "template" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": "template"},
            "spec": {"metadata": {"labels": {"app": "x"}}, "spec": {"devices": {"requests": [
                {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]}}}
        }),
        "class" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.example.com'"}}],
                "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"x": true}}}],
                "extendedResourceName": "example.com/gpu"}
        }),
        "slice" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0",
                    "attributes": {"model": {"string": "A100"}, "gpu.example.com/numa": {"int": 0},
                        "driverVersion": {"version": "1.2.3-rc.1+build.5"}},
                    "capacity": {"memory": {"value": "40Gi"}}}]}
        }),
        "shared" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-counters"},
            "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
                "sharedCounters": [{"name": "gpu-0", "counters": {"memory": {"value": "40Gi"}}}]}
        }),
        "partitions" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-parts"},
            "spec": {"driver": "gpu.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 2},
                "partitionTypeAttribute": "gpu.example.com/profile",
                "devices": [{"name": "half-0", "attributes": {"profile": {"string": "Half"}},
                    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"memory": {"value": "20Gi"}},
                        "compatibilityGroups": ["mig"]}]}]}
        }),
        "shareable" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "node-1-nics"},
            "spec": {"driver": "nic.example.com", "nodeName": "node-1",
                "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "nic-0", "allowMultipleAllocations": true,
                    "capacity": {"bandwidth": {"value": "10Gi", "requestPolicy": {
                        "default": "1Gi", "validRange": {"min": "1Gi", "max": "8Gi", "step": "1Gi"}}},
                        "queues": {"value": "8", "requestPolicy": {"default": "2", "validValues": ["1", "2", "4"]}}},
                    "nodeAllocatableResources": {"memory": {"overhead": {"perPod": "1Gi"}},
                        "cpu": {"mapping": {"capacityKey": "queues", "capacityMultiplier": "2"}}}}]}
        }),
        "rule" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
            "metadata": {"name": "maintenance"},
            "spec": {"deviceSelector": {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                "deviceClassName": "gpu.example.com",
                "selectors": [{"cel": {"expression": "device.attributes['gpu.example.com'].uuid == 'x'"}}]},
                "taint": {"key": "example.com/maintenance", "value": "planned", "effect": "NoExecute"}}
        }),
        "poolstatus" => json!({
            "apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
            "metadata": {"name": "check"},
            "spec": {"driver": "gpu.example.com", "poolName": "node-1", "limit": 10,
                "defaultPartitionTypeAttribute": "gpu.example.com/profile"}
        }),
        "allocated" => json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "allocated"},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                 "shareID": "ffffffff-0000-0000-0000-000000000000",
                 "bindingConditions": ["Ready"], "bindingFailureConditions": ["Failed"]}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]}},
                "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}],
                "devices": [{"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
                    "shareID": "ffffffff-0000-0000-0000-000000000000", "conditions": [],
                    "networkData": {"ips": ["10.0.0.1/24"]}}]}
        }),
        "pod" => json!({
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pod", "namespace": "default"},
            "spec": {"containers": [{"name": "app", "image": "x",
                "resources": {"claims": [{"name": "gpu"}], "limits": {"cpu": "2"}}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "template"}]}
        }),
        "podgroup" => json!({
            "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "group", "namespace": "default"},
            "spec": {"schedulingPolicy": {"gang": {"minCount": 2}},
                "resourceClaims": [{"name": "shared", "resourceClaimName": "claim"}]}
        }),
        "node" => json!({
            "apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-1", "labels": {"zone": "a"}},
            "spec": {"taints": [{"key": "example.com/t", "effect": "NoSchedule"}]}
        }),
        other => panic!("no base {other}"),
    }
}

/// Sets (or with `null`, removes) the value at a JSON pointer, creating objects on the way.
fn patch(value: &mut Value, pointer: &str, new: &Value) {
    let (parent, last) = pointer.rsplit_once('/').expect("pointer");
    let mut target = value;
    for part in parent.split('/').skip(1) {
        target = match target {
            Value::Array(items) => &mut items[part.parse::<usize>().expect("index")],
            Value::Object(map) => map.entry(part.to_string()).or_insert_with(|| json!({})),
            _ => panic!("cannot descend into {part}"),
        };
    }
    match target {
        Value::Array(items) => {
            let i: usize = last.parse().expect("index");
            if new.is_null() {
                items.remove(i);
            } else if i == items.len() {
                items.push(new.clone());
            } else {
                items[i] = new.clone();
            }
        }
        Value::Object(map) => {
            let key = last.replace("~1", "/");
            if new.is_null() {
                map.remove(&key);
            } else {
                map.insert(key, new.clone());
            }
        }
        _ => panic!("cannot set {pointer}"),
    }
}

fn errors_of(value: &Value) -> BTreeSet<String> {
    let text = serde_json::to_string(value).expect("json");
    let docs = parse_str("case.json", &text).expect("parse");
    let mut object = decode_object(&docs[0], &LoadOptions::default()).expect("decode");
    default_object(&mut object);
    validate_object(&object, &FakeCel)
        .into_iter()
        .map(|e| {
            let message = e.message();
            let kind = message.split(':').next().unwrap_or_default().to_string();
            format!("{}: {kind}", e.path)
        })
        .collect()
}

/// How many cases tests/data/rules.yaml holds: a dropped one fails the count.
const RULE_CASES: usize = 205;

/// One case of tests/data/rules.yaml.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    /// The base object it patches.
    kind: String,
    patches: Vec<Patch>,
    /// The expected errors as `path: Kind`.
    errors: BTreeSet<String>,
}

/// A JSON-pointer patch of a case's base object (`null` removes).
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Patch {
    path: String,
    value: Value,
}

/// Expands `{"$repeat": n, "$each": x}` (with `"$from": s`) into a list of n copies of x whose
/// strings have `{i}` replaced by s, s + 1, ... (s is 0 without `$from`).
fn expand(value: Value) -> Value {
    match value {
        Value::Object(map) if map.contains_key("$repeat") => {
            let count = map["$repeat"].as_u64().expect("$repeat is a count");
            let from = map.get("$from").map_or(0, |f| f.as_u64().expect("$from"));
            let each = &map["$each"];
            (from..from + count)
                .map(|i| expand(with_index(each, &i.to_string())))
                .collect()
        }
        Value::Object(map) => map.into_iter().map(|(k, v)| (k, expand(v))).collect(),
        Value::Array(items) => items.into_iter().map(expand).collect(),
        other => other,
    }
}

/// `value` with `{i}` in its strings replaced by `index`.
fn with_index(value: &Value, index: &str) -> Value {
    match value {
        Value::String(s) => Value::String(s.replace("{i}", index)),
        Value::Array(items) => items.iter().map(|v| with_index(v, index)).collect(),
        Value::Object(map) => map
            .iter()
            .map(|(k, v)| (k.clone(), with_index(v, index)))
            .collect(),
        other => other.clone(),
    }
}

/// The cases of tests/data/rules.yaml, `$repeat` lists expanded.
fn cases() -> Vec<Case> {
    let text = include_str!("data/rules.yaml");
    let mut cases: Vec<Case> =
        serde_saphyr::from_str(text).unwrap_or_else(|e| panic!("rules.yaml: {e}"));
    for case in &mut cases {
        for patch in &mut case.patches {
            patch.value = expand(std::mem::take(&mut patch.value));
        }
    }
    cases
}

#[test]
fn rules_table() {
    let mut failures = Vec::new();
    let cases = cases();
    assert_eq!(cases.len(), RULE_CASES, "cases in rules.yaml");
    for case in &cases {
        let mut value = base(&case.kind);
        for p in &case.patches {
            patch(&mut value, &p.path, &p.value);
        }
        let got = errors_of(&value);
        if got != case.errors {
            failures.push(format!(
                "{}:\n   want {:?}\n   got  {got:?}",
                case.name, case.errors
            ));
        }
    }
    eprintln!(
        "{} of {} cases pass",
        cases.len() - failures.len(),
        cases.len()
    );
    assert!(
        failures.is_empty(),
        "{} failing cases:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn valid_and_invalid_case_for_every_base() {
    // Each base kind is exercised with at least one invalid case.
    let cases = cases();
    let kinds: BTreeSet<&str> = cases.iter().map(|c| c.kind.as_str()).collect();
    for kind in kinds {
        assert!(
            cases.iter().any(|c| c.kind == kind && !c.errors.is_empty()),
            "no invalid case for {kind}"
        );
    }
}

#[test]
fn messages_match_upstream_wording() {
    let mut value = base("claim");
    patch(
        &mut value,
        "/spec/devices/requests/0/exactly/count",
        &json!(-1),
    );
    patch(
        &mut value,
        "/spec/devices/requests/0/exactly/allocationMode",
        &json!("ExactCount"),
    );
    let text = serde_json::to_string(&value).unwrap();
    let docs = parse_str("c.json", &text).unwrap();
    let mut object = decode_object(&docs[0], &LoadOptions::default()).unwrap();
    default_object(&mut object);
    let errors: Vec<String> = validate_object(&object, &FakeCel)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        errors,
        vec![
            "spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"
        ]
    );
}

fn namespace(name: &str, admin: bool) -> allot_api::core::v1::Namespace {
    let mut ns = allot_api::core::v1::Namespace::default();
    ns.metadata.name = name.to_string();
    if admin {
        ns.metadata.labels.insert(
            "resource.kubernetes.io/admin-access".to_string(),
            "true".to_string(),
        );
    }
    ns
}

#[test]
fn admin_access_needs_labelled_namespace() {
    let mut value = base("claim");
    patch(
        &mut value,
        "/spec/devices/requests/0/exactly/adminAccess",
        &json!(true),
    );
    let claim: allot_api::resource::v1::ResourceClaim = serde_json::from_value(value).unwrap();
    let mut namespaces = BTreeMap::new();
    // Unknown namespace: nothing to check.
    assert!(admit_admin_access(&claim.spec, "default", "spec", &namespaces).is_empty());
    namespaces.insert("default".to_string(), namespace("default", false));
    let errors = admit_admin_access(&claim.spec, "default", "spec", &namespaces);
    assert_eq!(
        errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        vec![
            "spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"
        ]
    );
    namespaces.insert("default".to_string(), namespace("default", true));
    assert!(admit_admin_access(&claim.spec, "default", "spec", &namespaces).is_empty());
}
