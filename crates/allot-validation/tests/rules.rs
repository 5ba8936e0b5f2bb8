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

type Case = (
    &'static str,
    &'static str,
    Vec<(&'static str, Value)>,
    Vec<&'static str>,
);

fn cases() -> Vec<Case> {
    let many = |n: usize, f: &dyn Fn(usize) -> Value| Value::Array((0..n).map(f).collect());
    vec![
        // Bases are valid.
        ("claim valid", "claim", vec![], vec![]),
        ("template valid", "template", vec![], vec![]),
        ("class valid", "class", vec![], vec![]),
        ("slice valid", "slice", vec![], vec![]),
        ("shared counters valid", "shared", vec![], vec![]),
        ("partitions valid", "partitions", vec![], vec![]),
        ("shareable valid", "shareable", vec![], vec![]),
        ("taint rule valid", "rule", vec![], vec![]),
        ("pool status valid", "poolstatus", vec![], vec![]),
        ("allocated claim valid", "allocated", vec![], vec![]),
        ("pod valid", "pod", vec![], vec![]),
        ("pod group valid", "podgroup", vec![], vec![]),
        ("node valid", "node", vec![], vec![]),
        // Metadata.
        (
            "name required",
            "claim",
            vec![("/metadata/name", Value::Null)],
            vec!["metadata.name: Required value"],
        ),
        (
            "generateName suffices",
            "claim",
            vec![
                ("/metadata/name", Value::Null),
                ("/metadata/generateName", json!("claim-")),
            ],
            vec![],
        ),
        (
            "name must be a subdomain",
            "claim",
            vec![("/metadata/name", json!("Claim_1"))],
            vec!["metadata.name: Invalid value"],
        ),
        (
            "label key format",
            "class",
            vec![("/metadata/labels", json!({"a/b/c": "x"}))],
            vec!["metadata.labels: Invalid value"],
        ),
        (
            "label value format",
            "class",
            vec![("/metadata/labels", json!({"a": "-x"}))],
            vec!["metadata.labels: Invalid value"],
        ),
        (
            "namespace forbidden on cluster-scoped",
            "class",
            vec![("/metadata/namespace", json!("default"))],
            vec!["metadata.namespace: Forbidden"],
        ),
        // Requests.
        (
            "request name DNS label",
            "claim",
            vec![("/spec/devices/requests/0/name", json!("GPU"))],
            vec![
                "spec.devices.requests[0].name: Invalid value",
                "spec.devices.constraints[0].requests[0]: Invalid value",
                "spec.devices.config[0].requests[0]: Invalid value",
            ],
        ),
        (
            "request names unique",
            "claim",
            vec![("/spec/devices/requests/1/name", json!("gpu"))],
            vec![
                "spec.devices.requests[1]: Duplicate value",
                "spec.devices.constraints[0].requests[1]: Invalid value",
            ],
        ),
        (
            "exactly or firstAvailable required",
            "claim",
            vec![("/spec/devices/requests/0/exactly", Value::Null)],
            vec!["spec.devices.requests[0]: Required value"],
        ),
        (
            "exactly and firstAvailable exclusive",
            "claim",
            vec![(
                "/spec/devices/requests/1/exactly",
                json!({"deviceClassName": "a"}),
            )],
            vec!["spec.devices.requests[1]: Invalid value"],
        ),
        (
            "at most 32 requests",
            "claim",
            vec![(
                "/spec/devices/requests",
                many(
                    33,
                    &|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "c"}}),
                ),
            )],
            vec![
                "spec.devices.requests: Too many",
                "spec.devices.constraints[0].requests[0]: Invalid value",
                "spec.devices.constraints[0].requests[1]: Invalid value",
                "spec.devices.config[0].requests[0]: Invalid value",
            ],
        ),
        (
            "32 requests fine",
            "template",
            vec![(
                "/spec/spec/devices/requests",
                many(
                    32,
                    &|i| json!({"name": format!("r{i}"), "exactly": {"deviceClassName": "c"}}),
                ),
            )],
            vec![],
        ),
        (
            "at most 8 subrequests",
            "claim",
            vec![(
                "/spec/devices/requests/1/firstAvailable",
                many(
                    9,
                    &|i| json!({"name": format!("s{i}"), "deviceClassName": "c"}),
                ),
            )],
            vec![
                "spec.devices.requests[1].firstAvailable: Too many",
                "spec.devices.constraints[0].requests[1]: Invalid value",
            ],
        ),
        (
            "subrequest names unique",
            "claim",
            vec![(
                "/spec/devices/requests/1/firstAvailable/1/name",
                json!("fast"),
            )],
            vec!["spec.devices.requests[1].firstAvailable[1]: Duplicate value"],
        ),
        (
            "deviceClassName required",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/deviceClassName",
                json!(""),
            )],
            vec!["spec.devices.requests[0].exactly.deviceClassName: Required value"],
        ),
        (
            "subrequest deviceClassName format",
            "claim",
            vec![(
                "/spec/devices/requests/1/firstAvailable/0/deviceClassName",
                json!("Bad"),
            )],
            vec!["spec.devices.requests[1].firstAvailable[0].deviceClassName: Invalid value"],
        ),
        (
            "count must be positive",
            "claim",
            vec![("/spec/devices/requests/0/exactly/count", json!(-1))],
            vec!["spec.devices.requests[0].exactly.count: Invalid value"],
        ),
        (
            "count zero defaults to one",
            "claim",
            vec![("/spec/devices/requests/0/exactly/count", json!(0))],
            vec![],
        ),
        (
            "count forbidden with All",
            "claim",
            vec![
                (
                    "/spec/devices/requests/0/exactly/allocationMode",
                    json!("All"),
                ),
                ("/spec/devices/requests/0/exactly/count", json!(2)),
            ],
            vec!["spec.devices.requests[0].exactly.count: Invalid value"],
        ),
        (
            "All without count",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/allocationMode",
                json!("All"),
            )],
            vec![],
        ),
        (
            "allocation mode supported",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/allocationMode",
                json!("Some"),
            )],
            vec!["spec.devices.requests[0].exactly.allocationMode: Unsupported value"],
        ),
        (
            "selector needs cel",
            "claim",
            vec![("/spec/devices/requests/0/exactly/selectors/0", json!({}))],
            vec!["spec.devices.requests[0].exactly.selectors[0].cel: Required value"],
        ),
        (
            "cel compile error",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/selectors/0/cel/expression",
                json!("ERR"),
            )],
            vec!["spec.devices.requests[0].exactly.selectors[0].cel.expression: Invalid value"],
        ),
        (
            "cel cost limit",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/selectors/0/cel/expression",
                json!("COSTLY"),
            )],
            vec!["spec.devices.requests[0].exactly.selectors[0].cel.expression: Forbidden"],
        ),
        (
            "cel length limit",
            "class",
            vec![(
                "/spec/selectors/0/cel/expression",
                json!("x".repeat(10 * 1024 + 1)),
            )],
            vec!["spec.selectors[0].cel.expression: Too long"],
        ),
        (
            "cel at length limit",
            "class",
            vec![(
                "/spec/selectors/0/cel/expression",
                json!("x".repeat(10 * 1024)),
            )],
            vec![],
        ),
        (
            "at most 32 selectors",
            "class",
            vec![(
                "/spec/selectors",
                many(33, &|_| json!({"cel": {"expression": "true"}})),
            )],
            vec!["spec.selectors: Too many"],
        ),
        // Tolerations.
        (
            "toleration valid",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "example.com/t", "operator": "Exists", "effect": "NoSchedule"}]),
            )],
            vec![],
        ),
        (
            "toleration operator defaults to Equal",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "k", "value": "v"}]),
            )],
            vec![],
        ),
        (
            "toleration Exists with value",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "k", "operator": "Exists", "value": "v"}]),
            )],
            vec!["spec.devices.requests[0].exactly.tolerations[0].value: Invalid value"],
        ),
        (
            "toleration operator supported",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "k", "operator": "In"}]),
            )],
            vec!["spec.devices.requests[0].exactly.tolerations[0].operator: Unsupported value"],
        ),
        (
            "toleration effect supported",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "k", "operator": "Exists", "effect": "PreferNoSchedule"}]),
            )],
            vec!["spec.devices.requests[0].exactly.tolerations[0].effect: Unsupported value"],
        ),
        (
            "toleration key format",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                json!([{"key": "a b", "operator": "Exists"}]),
            )],
            vec!["spec.devices.requests[0].exactly.tolerations[0].key: Invalid value"],
        ),
        (
            "at most 16 tolerations",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/tolerations",
                many(17, &|_| json!({"operator": "Exists"})),
            )],
            vec!["spec.devices.requests[0].exactly.tolerations: Too many"],
        ),
        // Constraints and config references.
        (
            "constraint references unknown request",
            "claim",
            vec![("/spec/devices/constraints/0/requests/0", json!("tpu"))],
            vec!["spec.devices.constraints[0].requests[0]: Invalid value"],
        ),
        (
            "constraint references unknown subrequest",
            "claim",
            vec![(
                "/spec/devices/constraints/0/requests/1",
                json!("nic/medium"),
            )],
            vec!["spec.devices.constraints[0].requests[1]: Invalid value"],
        ),
        (
            "constraint reference too deep",
            "claim",
            vec![(
                "/spec/devices/constraints/0/requests/1",
                json!("nic/fast/x"),
            )],
            vec!["spec.devices.constraints[0].requests[1]: Invalid value"],
        ),
        (
            "constraint references duplicate",
            "claim",
            vec![("/spec/devices/constraints/0/requests/1", json!("gpu"))],
            vec!["spec.devices.constraints[0].requests[1]: Duplicate value"],
        ),
        (
            "constraint needs an attribute",
            "claim",
            vec![("/spec/devices/constraints/0/matchAttribute", Value::Null)],
            vec!["spec.devices.constraints[0]: Required value"],
        ),
        (
            "constraint attribute fully qualified",
            "claim",
            vec![("/spec/devices/constraints/0/matchAttribute", json!("numa"))],
            vec!["spec.devices.constraints[0].matchAttribute: Invalid value"],
        ),
        (
            "distinct attribute valid",
            "claim",
            vec![
                ("/spec/devices/constraints/0/matchAttribute", Value::Null),
                (
                    "/spec/devices/constraints/0/distinctAttribute",
                    json!("example.com/numa"),
                ),
            ],
            vec![],
        ),
        (
            "match and distinct both set: match wins, as upstream",
            "claim",
            vec![(
                "/spec/devices/constraints/0/distinctAttribute",
                json!("example.com/numa"),
            )],
            vec![],
        ),
        (
            "config references unknown request",
            "claim",
            vec![("/spec/devices/config/0/requests/0", json!("nope"))],
            vec!["spec.devices.config[0].requests[0]: Invalid value"],
        ),
        (
            "config needs opaque",
            "claim",
            vec![("/spec/devices/config/0/opaque", Value::Null)],
            vec!["spec.devices.config[0].opaque: Required value"],
        ),
        (
            "config driver required",
            "class",
            vec![("/spec/config/0/opaque/driver", json!(""))],
            vec!["spec.config[0].opaque.driver: Required value"],
        ),
        (
            "config parameters must be an object",
            "class",
            vec![("/spec/config/0/opaque/parameters", json!([1]))],
            vec!["spec.config[0].opaque.parameters: Invalid value"],
        ),
        (
            "config parameters required",
            "class",
            vec![("/spec/config/0/opaque/parameters", Value::Null)],
            vec!["spec.config[0].opaque.parameters: Required value"],
        ),
        (
            "config parameters at most 10 KiB",
            "class",
            vec![(
                "/spec/config/0/opaque/parameters",
                json!({"x": "y".repeat(10 * 1024)}),
            )],
            vec!["spec.config[0].opaque.parameters: Too long"],
        ),
        // Derived attributes.
        (
            "derived attribute used by constraint",
            "claim",
            vec![
                (
                    "/spec/devices/requests/0/exactly/derivedAttributes",
                    json!([{"name": "derived/numa", "expression": "device.attributes['a'].numa"}]),
                ),
                (
                    "/spec/devices/constraints/0/matchAttribute",
                    json!("derived/numa"),
                ),
            ],
            vec![],
        ),
        (
            "derived attribute of a subrequest via parent",
            "claim",
            vec![
                (
                    "/spec/devices/requests/1/firstAvailable/0/derivedAttributes",
                    json!([{"name": "derived/numa", "expression": "1"}]),
                ),
                ("/spec/devices/constraints/0/requests", json!(["nic"])),
                (
                    "/spec/devices/constraints/0/matchAttribute",
                    json!("derived/numa"),
                ),
            ],
            vec![],
        ),
        (
            "derived attribute unused",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/derivedAttributes",
                json!([{"name": "derived/numa", "expression": "1"}]),
            )],
            vec!["spec.devices.requests[0].exactly.derivedAttributes[0].name: Invalid value"],
        ),
        (
            "derived attribute name fully qualified",
            "claim",
            vec![
                (
                    "/spec/devices/requests/0/exactly/derivedAttributes",
                    json!([{"name": "numa", "expression": "1"}]),
                ),
                ("/spec/devices/constraints/0/matchAttribute", json!("numa")),
            ],
            vec![
                "spec.devices.requests[0].exactly.derivedAttributes[0].name: Invalid value",
                "spec.devices.constraints[0].matchAttribute: Invalid value",
            ],
        ),
        (
            "derived attribute expression required",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/derivedAttributes",
                json!([{"name": "example.com/numa"}]),
            )],
            vec![
                "spec.devices.requests[0].exactly.derivedAttributes[0].expression: Required value",
            ],
        ),
        (
            "derived attributes unique",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/derivedAttributes",
                json!([{"name": "example.com/numa", "expression": "1"}, {"name": "example.com/numa", "expression": "2"}]),
            )],
            vec!["spec.devices.requests[0].exactly.derivedAttributes[1]: Duplicate value"],
        ),
        (
            "derived attributes total cost",
            "claim",
            vec![
                (
                    "/spec/devices/requests/0/exactly/derivedAttributes",
                    json!([{"name": "example.com/numa", "expression": "HALF"}]),
                ),
                (
                    "/spec/devices/requests/1/firstAvailable/0/derivedAttributes",
                    json!([{"name": "example.com/numa", "expression": "HALF"}]),
                ),
            ],
            vec!["spec.devices: Forbidden"],
        ),
        (
            "derived attribute single cost",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/derivedAttributes",
                json!([{"name": "example.com/numa", "expression": "COSTLY"}]),
            )],
            vec![
                "spec.devices.requests[0].exactly.derivedAttributes[0].expression: Forbidden",
                "spec.devices: Forbidden",
            ],
        ),
        // Capacity requests.
        (
            "capacity request keys are not validated, as upstream",
            "claim",
            vec![(
                "/spec/devices/requests/0/exactly/capacity",
                json!({"requests": {"a/b/c": "1"}}),
            )],
            vec![],
        ),
        // Template metadata.
        (
            "template metadata only labels",
            "template",
            vec![("/spec/metadata/name", json!("x"))],
            vec!["spec.metadata.name: Forbidden"],
        ),
        (
            "template spec validated",
            "template",
            vec![("/spec/spec/devices/requests/0/exactly/count", json!(-2))],
            vec!["spec.spec.devices.requests[0].exactly.count: Invalid value"],
        ),
        // DeviceClass.
        (
            "extended resource name",
            "class",
            vec![("/spec/extendedResourceName", json!("gpu"))],
            vec!["spec.extendedResourceName: Invalid value"],
        ),
        (
            "extended resource name not kubernetes.io",
            "class",
            vec![("/spec/extendedResourceName", json!("kubernetes.io/gpu"))],
            vec!["spec.extendedResourceName: Invalid value"],
        ),
        (
            "at most 32 class configs",
            "class",
            vec![(
                "/spec/config",
                many(
                    33,
                    &|_| json!({"opaque": {"driver": "d", "parameters": {}}}),
                ),
            )],
            vec!["spec.config: Too many"],
        ),
        // ResourceSlice: driver, pool, node selection.
        (
            "driver required",
            "slice",
            vec![("/spec/driver", json!(""))],
            vec!["spec.driver: Required value"],
        ),
        (
            "driver too long",
            "slice",
            vec![("/spec/driver", json!(format!("{}.com", "a".repeat(60))))],
            vec!["spec.driver: Too long"],
        ),
        (
            "driver format",
            "slice",
            vec![("/spec/driver", json!("gpu_example"))],
            vec!["spec.driver: Invalid value"],
        ),
        (
            "pool name required",
            "slice",
            vec![("/spec/pool/name", json!(""))],
            vec!["spec.pool.name: Required value"],
        ),
        (
            "pool name segments",
            "slice",
            vec![("/spec/pool/name", json!("a/B"))],
            vec!["spec.pool.name: Invalid value"],
        ),
        (
            "pool name with slashes",
            "slice",
            vec![("/spec/pool/name", json!("a/b.c/d"))],
            vec![],
        ),
        (
            "resourceSliceCount positive",
            "slice",
            vec![("/spec/pool/resourceSliceCount", json!(0))],
            vec!["spec.pool.resourceSliceCount: Invalid value"],
        ),
        (
            "generation non-negative",
            "slice",
            vec![("/spec/pool/generation", json!(-1))],
            vec!["spec.pool.generation: Invalid value"],
        ),
        (
            "node selection required",
            "slice",
            vec![("/spec/nodeName", Value::Null)],
            vec!["spec: Required value"],
        ),
        (
            "node selection exclusive",
            "slice",
            vec![("/spec/allNodes", json!(true))],
            vec!["spec: Invalid value"],
        ),
        (
            "allNodes false invalid",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                ("/spec/allNodes", json!(false)),
            ],
            vec!["spec.allNodes: Invalid value", "spec: Required value"],
        ),
        (
            "nodeName empty invalid",
            "slice",
            vec![("/spec/nodeName", json!(""))],
            vec!["spec.nodeName: Invalid value", "spec: Required value"],
        ),
        (
            "node selector one term",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                (
                    "/spec/nodeSelector",
                    json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]},
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}),
                ),
            ],
            vec!["spec.nodeSelector.nodeSelectorTerms: Invalid value"],
        ),
        (
            "node selector requirement values",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                (
                    "/spec/nodeSelector",
                    json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In"}, {"key": "zone", "operator": "Exists", "values": ["x"]}, {"key": "n", "operator": "Gt", "values": ["1", "2"]}]}]}),
                ),
            ],
            vec![
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].values: Required value",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[1].values: Forbidden",
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[2].values: Required value",
            ],
        ),
        (
            "node selector operator",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                (
                    "/spec/nodeSelector",
                    json!({"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "Near", "values": ["a"]}]}]}),
                ),
            ],
            vec![
                "spec.nodeSelector.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value",
            ],
        ),
        (
            "node selector fields",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                (
                    "/spec/nodeSelector",
                    json!({"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.labels", "operator": "In", "values": ["a"]}]}]}),
                ),
            ],
            vec!["spec.nodeSelector.nodeSelectorTerms[0].matchFields[0].key: Unsupported value"],
        ),
        (
            "devices and sharedCounters exclusive",
            "slice",
            vec![(
                "/spec/sharedCounters",
                json!([{"name": "c", "counters": {"m": {"value": "1"}}}]),
            )],
            vec!["spec: Invalid value"],
        ),
        // Devices.
        (
            "device name DNS label",
            "slice",
            vec![("/spec/devices/0/name", json!("gpu.0"))],
            vec!["spec.devices[0].name: Invalid value"],
        ),
        (
            "device names unique",
            "slice",
            vec![("/spec/devices/1", json!({"name": "gpu-0"}))],
            vec!["spec.devices[1]: Duplicate value"],
        ),
        (
            "at most 128 devices",
            "slice",
            vec![(
                "/spec/devices",
                many(129, &|i| json!({"name": format!("d{i}")})),
            )],
            vec!["spec.devices: Too many"],
        ),
        (
            "128 devices fine",
            "slice",
            vec![(
                "/spec/devices",
                many(128, &|i| json!({"name": format!("d{i}")})),
            )],
            vec![],
        ),
        (
            "at most 64 devices with taints",
            "slice",
            vec![(
                "/spec/devices",
                many(
                    65,
                    &|i| json!({"name": format!("d{i}"), "taints": [{"key": "k", "effect": "None"}]}),
                ),
            )],
            vec!["spec.devices: Too many"],
        ),
        (
            "64 devices with taints fine",
            "slice",
            vec![(
                "/spec/devices",
                many(
                    64,
                    &|i| json!({"name": format!("d{i}"), "taints": [{"key": "k", "effect": "None"}]}),
                ),
            )],
            vec![],
        ),
        (
            "at most 64 devices with list attributes",
            "slice",
            vec![(
                "/spec/devices",
                many(
                    65,
                    &|i| json!({"name": format!("d{i}"), "attributes": {"m": {"strings": ["a"]}}}),
                ),
            )],
            vec!["spec.devices: Too many"],
        ),
        (
            "at most 64 devices with counters",
            "slice",
            vec![(
                "/spec/devices",
                many(
                    65,
                    &|i| json!({"name": format!("d{i}"), "consumesCounters": [{"counterSet": "s", "counters": {"c": {"value": "1"}}}]}),
                ),
            )],
            vec!["spec.devices: Too many"],
        ),
        (
            "attribute name C identifier",
            "slice",
            vec![
                ("/spec/devices/0/attributes/model", Value::Null),
                ("/spec/devices/0/attributes/1model", json!({"string": "x"})),
            ],
            vec!["spec.devices[0].attributes: Invalid value"],
        ),
        (
            "attribute domain format",
            "slice",
            vec![(
                "/spec/devices/0/attributes/gpu_x~1model",
                json!({"string": "x"}),
            )],
            vec!["spec.devices[0].attributes: Invalid value"],
        ),
        (
            "attribute exactly one value",
            "slice",
            vec![(
                "/spec/devices/0/attributes/model",
                json!({"string": "x", "int": 1}),
            )],
            vec!["spec.devices[0].attributes[model]: Invalid value"],
        ),
        (
            "attribute needs a value",
            "slice",
            vec![("/spec/devices/0/attributes/model", json!({}))],
            vec!["spec.devices[0].attributes[model]: Invalid value"],
        ),
        (
            "attribute string at most 64",
            "slice",
            vec![(
                "/spec/devices/0/attributes/model/string",
                json!("x".repeat(65)),
            )],
            vec!["spec.devices[0].attributes[model].string: Too long"],
        ),
        (
            "attribute version semver",
            "slice",
            vec![(
                "/spec/devices/0/attributes/driverVersion/version",
                json!("1.2"),
            )],
            vec!["spec.devices[0].attributes[driverVersion].version: Invalid value"],
        ),
        (
            "attribute versions list semver",
            "slice",
            vec![(
                "/spec/devices/0/attributes/driverVersion",
                json!({"versions": ["1.0.0", "01.0.0"]}),
            )],
            vec!["spec.devices[0].attributes[driverVersion].versions[1]: Invalid value"],
        ),
        (
            "attribute strings list items at most 64",
            "slice",
            vec![(
                "/spec/devices/0/attributes/model",
                json!({"strings": ["a", "y".repeat(65)]}),
            )],
            vec!["spec.devices[0].attributes[model].strings[1]: Too long"],
        ),
        (
            "at most 32 attributes and capacities",
            "slice",
            vec![(
                "/spec/devices/0/attributes",
                Value::Object(
                    (0..33)
                        .map(|i| (format!("a{i}"), json!({"int": i})))
                        .collect(),
                ),
            )],
            vec!["spec.devices[0]: Invalid value"],
        ),
        (
            "at most 48 attribute values",
            "slice",
            vec![(
                "/spec/devices/0/attributes",
                json!({"a": {"ints": (0..30).collect::<Vec<_>>()}, "b": {"ints": (0..19).collect::<Vec<_>>()}}),
            )],
            vec!["spec.devices[0]: Invalid value"],
        ),
        (
            "48 attribute values fine",
            "slice",
            vec![(
                "/spec/devices/0/attributes",
                json!({"a": {"ints": (0..30).collect::<Vec<_>>()}, "b": {"ints": (0..18).collect::<Vec<_>>()}}),
            )],
            vec![],
        ),
        (
            "capacity name",
            "slice",
            vec![("/spec/devices/0/capacity/mem-ory", json!({"value": "1"}))],
            vec!["spec.devices[0].capacity: Invalid value"],
        ),
        (
            "request policy needs multiple allocations",
            "slice",
            vec![(
                "/spec/devices/0/capacity/memory/requestPolicy",
                json!({"default": "1Gi"}),
            )],
            vec!["spec.devices[0].capacity[memory].requestPolicy: Forbidden"],
        ),
        (
            "taint effect required",
            "slice",
            vec![("/spec/devices/0/taints", json!([{"key": "k"}]))],
            vec!["spec.devices[0].taints[0].effect: Required value"],
        ),
        (
            "taint effect supported",
            "slice",
            vec![(
                "/spec/devices/0/taints",
                json!([{"key": "k", "effect": "PreferNoSchedule"}]),
            )],
            vec!["spec.devices[0].taints[0].effect: Unsupported value"],
        ),
        (
            "taint key required",
            "slice",
            vec![("/spec/devices/0/taints", json!([{"effect": "NoSchedule"}]))],
            vec!["spec.devices[0].taints[0].key: Invalid value"],
        ),
        (
            "taint value format",
            "slice",
            vec![(
                "/spec/devices/0/taints",
                json!([{"key": "k", "value": "a b", "effect": "None"}]),
            )],
            vec!["spec.devices[0].taints[0].value: Invalid value"],
        ),
        (
            "at most 16 taints",
            "slice",
            vec![(
                "/spec/devices/0/taints",
                many(17, &|i| json!({"key": format!("k{i}"), "effect": "None"})),
            )],
            vec!["spec.devices[0].taints: Too many"],
        ),
        (
            "per-device node fields need perDeviceNodeSelection",
            "slice",
            vec![("/spec/devices/0/nodeName", json!("node-1"))],
            vec!["spec.devices[0]: Invalid value"],
        ),
        (
            "perDeviceNodeSelection needs per-device selection",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                ("/spec/perDeviceNodeSelection", json!(true)),
            ],
            vec!["spec.devices[0]: Required value"],
        ),
        (
            "perDeviceNodeSelection valid",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                ("/spec/perDeviceNodeSelection", json!(true)),
                ("/spec/devices/0/allNodes", json!(true)),
            ],
            vec![],
        ),
        (
            "per-device node selection exclusive",
            "slice",
            vec![
                ("/spec/nodeName", Value::Null),
                ("/spec/perDeviceNodeSelection", json!(true)),
                ("/spec/devices/0/allNodes", json!(true)),
                ("/spec/devices/0/nodeName", json!("n")),
            ],
            vec!["spec.devices[0]: Invalid value"],
        ),
        (
            "binding conditions need failure conditions",
            "slice",
            vec![("/spec/devices/0/bindingConditions", json!(["Ready"]))],
            vec!["spec.devices[0].bindingFailureConditions: Invalid value"],
        ),
        (
            "binding failure conditions need conditions",
            "slice",
            vec![(
                "/spec/devices/0/bindingFailureConditions",
                json!(["Failed"]),
            )],
            vec!["spec.devices[0].bindingConditions: Invalid value"],
        ),
        (
            "binding conditions valid",
            "slice",
            vec![
                ("/spec/devices/0/bindingConditions", json!(["Ready"])),
                (
                    "/spec/devices/0/bindingFailureConditions",
                    json!(["Failed"]),
                ),
                ("/spec/devices/0/bindsToNode", json!(true)),
            ],
            vec![],
        ),
        (
            "binding conditions overlap",
            "slice",
            vec![
                ("/spec/devices/0/bindingConditions", json!(["Ready"])),
                ("/spec/devices/0/bindingFailureConditions", json!(["Ready"])),
            ],
            vec!["spec.devices[0].bindingFailureConditions[0]: Invalid value"],
        ),
        (
            "at most 4 binding conditions",
            "slice",
            vec![
                (
                    "/spec/devices/0/bindingConditions",
                    json!(["a", "b", "c", "d", "e"]),
                ),
                ("/spec/devices/0/bindingFailureConditions", json!(["f"])),
            ],
            vec!["spec.devices[0].bindingConditions: Too many"],
        ),
        (
            "binding conditions unique",
            "slice",
            vec![
                ("/spec/devices/0/bindingConditions", json!(["a", "a"])),
                ("/spec/devices/0/bindingFailureConditions", json!(["f"])),
            ],
            vec!["spec.devices[0].bindingConditions[1]: Duplicate value"],
        ),
        (
            "skipNodeOperations valid",
            "slice",
            vec![(
                "/spec/skipNodeOperations",
                json!(["NodePrepareResources", "NodeUnprepareResources"]),
            )],
            vec![],
        ),
        (
            "skipNodeOperations prepare needs unprepare",
            "slice",
            vec![("/spec/skipNodeOperations", json!(["NodePrepareResources"]))],
            vec!["spec.skipNodeOperations: Invalid value"],
        ),
        (
            "skipNodeOperations supported",
            "slice",
            vec![("/spec/skipNodeOperations", json!(["Everything"]))],
            vec!["spec.skipNodeOperations[0]: Unsupported value"],
        ),
        (
            "skipNodeOperations unique",
            "slice",
            vec![("/spec/skipNodeOperations", json!(["*", "*"]))],
            vec!["spec.skipNodeOperations[1]: Duplicate value"],
        ),
        // Counters.
        (
            "counter set name required",
            "shared",
            vec![("/spec/sharedCounters/0/name", json!(""))],
            vec!["spec.sharedCounters[0].name: Required value"],
        ),
        (
            "counter set counters required",
            "shared",
            vec![("/spec/sharedCounters/0/counters", json!({}))],
            vec!["spec.sharedCounters[0].counters: Required value"],
        ),
        (
            "counter name DNS label",
            "shared",
            vec![(
                "/spec/sharedCounters/0/counters",
                json!({"Mem": {"value": "1"}}),
            )],
            vec!["spec.sharedCounters[0].counters: Invalid value"],
        ),
        (
            "counter sets unique",
            "shared",
            vec![(
                "/spec/sharedCounters/1",
                json!({"name": "gpu-0", "counters": {"m": {"value": "1"}}}),
            )],
            vec!["spec.sharedCounters[1]: Duplicate value"],
        ),
        (
            "at most 8 counter sets",
            "shared",
            vec![(
                "/spec/sharedCounters",
                many(
                    9,
                    &|i| json!({"name": format!("s{i}"), "counters": {"m": {"value": "1"}}}),
                ),
            )],
            vec!["spec.sharedCounters: Too many"],
        ),
        (
            "at most 32 counters per set",
            "shared",
            vec![(
                "/spec/sharedCounters/0/counters",
                Value::Object(
                    (0..33)
                        .map(|i| (format!("c{i}"), json!({"value": "1"})))
                        .collect(),
                ),
            )],
            vec!["spec.sharedCounters[0].counters: Too many"],
        ),
        (
            "at most 2 counter consumptions",
            "partitions",
            vec![(
                "/spec/devices/0/consumesCounters",
                many(
                    3,
                    &|i| json!({"counterSet": format!("s{i}"), "counters": {"m": {"value": "1"}}}),
                ),
            )],
            vec!["spec.devices[0].consumesCounters: Too many"],
        ),
        (
            "counter consumptions unique",
            "partitions",
            vec![(
                "/spec/devices/0/consumesCounters/1",
                json!({"counterSet": "gpu-0", "counters": {"m": {"value": "1"}}}),
            )],
            vec!["spec.devices[0].consumesCounters[1]: Duplicate value"],
        ),
        (
            "at most 2 compatibility groups",
            "partitions",
            vec![(
                "/spec/devices/0/consumesCounters/0/compatibilityGroups",
                json!(["a", "b", "c"]),
            )],
            vec!["spec.devices[0].consumesCounters[0].compatibilityGroups: Too many"],
        ),
        (
            "compatibility groups unique",
            "partitions",
            vec![(
                "/spec/devices/0/consumesCounters/0/compatibilityGroups",
                json!(["a", "a"]),
            )],
            vec!["spec.devices[0].consumesCounters[0].compatibilityGroups[1]: Duplicate value"],
        ),
        (
            "compatibility group DNS label",
            "partitions",
            vec![(
                "/spec/devices/0/consumesCounters/0/compatibilityGroups",
                json!(["MIG"]),
            )],
            vec!["spec.devices[0].consumesCounters[0].compatibilityGroups[0]: Invalid value"],
        ),
        (
            "partition type attribute must be set on devices",
            "partitions",
            vec![("/spec/devices/0/attributes", json!({}))],
            vec!["spec.devices[0].attributes[gpu.example.com/profile]: Required value"],
        ),
        (
            "partition type attribute must be a string",
            "partitions",
            vec![("/spec/devices/0/attributes/profile", json!({"int": 1}))],
            vec!["spec.devices[0].attributes[gpu.example.com/profile]: Invalid value"],
        ),
        (
            "partition type attribute needs consumers",
            "partitions",
            vec![("/spec/devices/0/consumesCounters", Value::Null)],
            vec!["spec.partitionTypeAttribute: Invalid value"],
        ),
        (
            "partition type attribute fully qualified",
            "partitions",
            vec![("/spec/partitionTypeAttribute", json!("profile"))],
            vec!["spec.partitionTypeAttribute: Invalid value"],
        ),
        // Consumable capacity.
        (
            "request policy both kinds",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/validRange",
                json!({"min": "1"}),
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy: Forbidden"],
        ),
        (
            "valid values need default",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/default",
                Value::Null,
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy.default: Required value"],
        ),
        (
            "valid values sorted",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/validValues",
                json!(["2", "1"]),
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy.validValues[1]: Invalid value"],
        ),
        (
            "valid values within capacity",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/validValues",
                json!(["2", "16"]),
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy.validValues[1]: Invalid value"],
        ),
        (
            "valid values include default",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/validValues",
                json!(["1", "4"]),
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy.validValues: Invalid value"],
        ),
        (
            "valid values unique",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/queues/requestPolicy/validValues",
                json!(["1", "2", "2"]),
            )],
            vec!["spec.devices[0].capacity[queues].requestPolicy.validValues[2]: Duplicate value"],
        ),
        (
            "at most 10 valid values",
            "shareable",
            vec![
                ("/spec/devices/0/capacity/queues/value", json!("100")),
                (
                    "/spec/devices/0/capacity/queues/requestPolicy/validValues",
                    many(11, &|i| json!(format!("{}", i + 1))),
                ),
            ],
            vec!["spec.devices[0].capacity[queues].requestPolicy.validValues: Too many"],
        ),
        (
            "range needs min",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange/min",
                Value::Null,
            )],
            vec![
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.min: Required value",
            ],
        ),
        (
            "range min within capacity",
            "shareable",
            vec![
                (
                    "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange",
                    json!({"min": "20Gi"}),
                ),
                (
                    "/spec/devices/0/capacity/bandwidth/requestPolicy/default",
                    json!("20Gi"),
                ),
            ],
            vec!["spec.devices[0].capacity[bandwidth].requestPolicy.validRange.min: Invalid value"],
        ),
        (
            "range default at least min",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/bandwidth/requestPolicy/default",
                json!("512Mi"),
            )],
            vec![
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.default: Invalid value",
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.step: Invalid value",
            ],
        ),
        (
            "range max within capacity",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange/max",
                json!("16Gi"),
            )],
            vec!["spec.devices[0].capacity[bandwidth].requestPolicy.validRange.max: Invalid value"],
        ),
        (
            "range min at most max",
            "shareable",
            vec![
                (
                    "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange/min",
                    json!("4Gi"),
                ),
                (
                    "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange/max",
                    json!("2Gi"),
                ),
                (
                    "/spec/devices/0/capacity/bandwidth/requestPolicy/default",
                    json!("4Gi"),
                ),
            ],
            vec![
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.max: Invalid value",
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.default: Invalid value",
            ],
        ),
        (
            "range step positive",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/bandwidth/requestPolicy/validRange/step",
                json!("0"),
            )],
            vec![
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.step: Invalid value",
            ],
        ),
        (
            "range default on step",
            "shareable",
            vec![(
                "/spec/devices/0/capacity/bandwidth/requestPolicy/default",
                json!("1536Mi"),
            )],
            vec![
                "spec.devices[0].capacity[bandwidth].requestPolicy.validRange.step: Invalid value",
            ],
        ),
        // Node allocatable resources.
        (
            "node allocatable name",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/example.com~1gpu",
                json!({"overhead": {"perPod": "1"}}),
            )],
            vec!["spec.devices[0].nodeAllocatableResources[example.com/gpu]: Invalid value"],
        ),
        (
            "node allocatable needs mapping or overhead",
            "shareable",
            vec![("/spec/devices/0/nodeAllocatableResources/memory", json!({}))],
            vec!["spec.devices[0].nodeAllocatableResources[memory]: Required value"],
        ),
        (
            "capacityKey needs capacityMultiplier",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/cpu/mapping/capacityMultiplier",
                Value::Null,
            )],
            vec![
                "spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Required value",
            ],
        ),
        (
            "capacityKey must exist",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/cpu/mapping/capacityKey",
                json!("cores"),
            )],
            vec!["spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityKey: Not found"],
        ),
        (
            "capacityMultiplier positive",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/cpu/mapping/capacityMultiplier",
                json!("0"),
            )],
            vec![
                "spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityMultiplier: Invalid value",
            ],
        ),
        (
            "capacityMultiplier needs capacityKey",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/cpu/mapping",
                json!({"capacityMultiplier": "2"}),
            )],
            vec![
                "spec.devices[0].nodeAllocatableResources[cpu].mapping.capacityKey: Required value",
            ],
        ),
        (
            "deviceMultiplier positive",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/cpu/mapping",
                json!({"deviceMultiplier": "-1"}),
            )],
            vec![
                "spec.devices[0].nodeAllocatableResources[cpu].mapping.deviceMultiplier: Invalid value",
            ],
        ),
        (
            "overhead needs a value",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/memory/overhead",
                json!({}),
            )],
            vec!["spec.devices[0].nodeAllocatableResources[memory].overhead: Invalid value"],
        ),
        (
            "overhead non-negative",
            "shareable",
            vec![(
                "/spec/devices/0/nodeAllocatableResources/memory/overhead",
                json!({"perContainer": "-1"}),
            )],
            vec![
                "spec.devices[0].nodeAllocatableResources[memory].overhead.perContainer: Invalid value",
            ],
        ),
        // DeviceTaintRule.
        (
            "taint rule driver",
            "rule",
            vec![("/spec/deviceSelector/driver", json!("Bad_Driver"))],
            vec!["spec.deviceSelector.driver: Invalid value"],
        ),
        (
            "taint rule pool",
            "rule",
            vec![("/spec/deviceSelector/pool", json!(""))],
            vec!["spec.deviceSelector.pool: Required value"],
        ),
        (
            "taint rule device",
            "rule",
            vec![("/spec/deviceSelector/device", json!("gpu.0"))],
            vec!["spec.deviceSelector.device: Invalid value"],
        ),
        (
            "taint rule class name",
            "rule",
            vec![("/spec/deviceSelector/deviceClassName", json!("Bad"))],
            vec!["spec.deviceSelector.deviceClassName: Invalid value"],
        ),
        (
            "taint rule selector",
            "rule",
            vec![(
                "/spec/deviceSelector/selectors/0/cel/expression",
                json!("ERR"),
            )],
            vec!["spec.deviceSelector.selectors[0].cel.expression: Invalid value"],
        ),
        (
            "taint rule effect",
            "rule",
            vec![("/spec/taint/effect", json!("Evict"))],
            vec!["spec.taint.effect: Unsupported value"],
        ),
        (
            "taint rule no selector",
            "rule",
            vec![("/spec/deviceSelector", Value::Null)],
            vec![],
        ),
        // ResourcePoolStatusRequest.
        (
            "pool status driver required",
            "poolstatus",
            vec![("/spec/driver", json!(""))],
            vec!["spec.driver: Required value"],
        ),
        (
            "pool status limit at least 1",
            "poolstatus",
            vec![("/spec/limit", json!(0))],
            vec!["spec.limit: Invalid value"],
        ),
        (
            "pool status limit at most 1000",
            "poolstatus",
            vec![("/spec/limit", json!(1001))],
            vec!["spec.limit: Invalid value"],
        ),
        (
            "pool status limit defaults",
            "poolstatus",
            vec![("/spec/limit", Value::Null)],
            vec![],
        ),
        (
            "pool status pool name",
            "poolstatus",
            vec![("/spec/poolName", json!("a//b"))],
            vec!["spec.poolName: Invalid value"],
        ),
        (
            "pool status partition attribute",
            "poolstatus",
            vec![("/spec/defaultPartitionTypeAttribute", json!("profile"))],
            vec!["spec.defaultPartitionTypeAttribute: Invalid value"],
        ),
        // Claim status.
        (
            "allocation result request must exist",
            "allocated",
            vec![("/status/allocation/devices/results/0/request", json!("tpu"))],
            vec![
                "status.allocation.devices.results[0].request: Invalid value",
                "status.devices[0]: Invalid value",
            ]
            .into_iter()
            .take(1)
            .collect(),
        ),
        (
            "allocation result device name",
            "allocated",
            vec![("/status/allocation/devices/results/0/device", json!("GPU"))],
            vec![
                "status.allocation.devices.results[0].device: Invalid value",
                "status.devices[0]: Invalid value",
            ],
        ),
        (
            "allocation share id format",
            "allocated",
            vec![
                ("/status/allocation/devices/results/0/shareID", json!("x")),
                ("/status/devices/0/shareID", json!("x")),
            ],
            vec![
                "status.allocation.devices.results[0].shareID: Invalid value",
                "status.devices[0].shareID: Invalid value",
            ],
        ),
        (
            "at most 32 allocation results",
            "allocated",
            vec![
                (
                    "/status/allocation/devices/results",
                    many(
                        33,
                        &|i| json!({"request": "gpu", "driver": "d", "pool": "p", "device": format!("d{i}")}),
                    ),
                ),
                ("/status/devices", json!([])),
            ],
            vec!["status.allocation.devices.results: Too many"],
        ),
        (
            "reservedFor needs allocation",
            "allocated",
            vec![
                ("/status/allocation", Value::Null),
                ("/status/devices", json!([])),
            ],
            vec!["status.reservedFor: Forbidden"],
        ),
        (
            "reservedFor fields required",
            "allocated",
            vec![("/status/reservedFor/0/uid", json!(""))],
            vec!["status.reservedFor[0].uid: Required value"],
        ),
        (
            "reservedFor unique",
            "allocated",
            vec![(
                "/status/reservedFor/1",
                json!({"resource": "pods", "name": "q", "uid": "u1"}),
            )],
            vec!["status.reservedFor[1]: Duplicate value"],
        ),
        (
            "device status must be allocated",
            "allocated",
            vec![("/status/devices/0/device", json!("gpu-1"))],
            vec!["status.devices[0]: Invalid value"],
        ),
        (
            "device status condition valid",
            "allocated",
            vec![(
                "/status/devices/0/conditions",
                json!([{"type": "Ready", "status": "True", "reason": "Configured", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
            )],
            vec![],
        ),
        (
            "device status condition fields",
            "allocated",
            vec![(
                "/status/devices/0/conditions",
                json!([{"type": "Ready", "status": "Yes", "reason": "not ok", "message": ""}]),
            )],
            vec![
                "status.devices[0].conditions[0].status: Unsupported value",
                "status.devices[0].conditions[0].reason: Invalid value",
                "status.devices[0].conditions[0].lastTransitionTime: Required value",
            ],
        ),
        (
            "device status condition types unique",
            "allocated",
            vec![(
                "/status/devices/0/conditions",
                json!([
            {"type": "Ready", "status": "True", "reason": "A", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "Ready", "status": "False", "reason": "B", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]),
            )],
            vec!["status.devices[0].conditions[1].type: Duplicate value"],
        ),
        (
            "device status ips",
            "allocated",
            vec![("/status/devices/0/networkData/ips", json!(["10.0.0.1"]))],
            vec!["status.devices[0].networkData.ips[0]: Invalid value"],
        ),
        (
            "allocation node selector",
            "allocated",
            vec![(
                "/status/allocation/nodeSelector/nodeSelectorTerms",
                json!([]),
            )],
            vec!["status.allocation.nodeSelector.nodeSelectorTerms: Required value"],
        ),
        // Pods, PodGroups, Nodes.
        (
            "pod claim reference must exist",
            "pod",
            vec![("/spec/containers/0/resources/claims/0/name", json!("tpu"))],
            vec!["spec.containers[0].resources.claims[0].name: Not found"],
        ),
        (
            "pod claim needs a source",
            "pod",
            vec![(
                "/spec/resourceClaims/0/resourceClaimTemplateName",
                Value::Null,
            )],
            vec!["spec.resourceClaims[0]: Invalid value"],
        ),
        (
            "pod claim one source",
            "pod",
            vec![("/spec/resourceClaims/0/resourceClaimName", json!("c"))],
            vec!["spec.resourceClaims[0]: Invalid value"],
        ),
        (
            "pod claim names unique",
            "pod",
            vec![(
                "/spec/resourceClaims/1",
                json!({"name": "gpu", "resourceClaimName": "c"}),
            )],
            vec!["spec.resourceClaims[1].name: Duplicate value"],
        ),
        (
            "pod needs containers",
            "pod",
            vec![("/spec/containers", json!([]))],
            vec!["spec.containers: Required value"],
        ),
        (
            "pod group policy union",
            "podgroup",
            vec![("/spec/schedulingPolicy/basic", json!({}))],
            vec!["spec.schedulingPolicy: Invalid value"],
        ),
        (
            "pod group min count",
            "podgroup",
            vec![("/spec/schedulingPolicy/gang/minCount", json!(0))],
            vec!["spec.schedulingPolicy.gang.minCount: Invalid value"],
        ),
        (
            "pod group claim source",
            "podgroup",
            vec![("/spec/resourceClaims/0/resourceClaimName", Value::Null)],
            vec!["spec.resourceClaims[0]: Invalid value"],
        ),
        (
            "node taint effect",
            "node",
            vec![("/spec/taints/0/effect", json!("None"))],
            vec!["spec.taints[0].effect: Unsupported value"],
        ),
    ]
}

#[test]
fn rules_table() {
    let mut failures = Vec::new();
    let cases = cases();
    for (name, kind, patches, expected) in &cases {
        let mut value = base(kind);
        for (pointer, new) in patches {
            patch(&mut value, pointer, new);
        }
        let got = errors_of(&value);
        let want: BTreeSet<String> = expected.iter().map(ToString::to_string).collect();
        if got != want {
            failures.push(format!("{name}:\n   want {want:?}\n   got  {got:?}"));
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
    let kinds: BTreeSet<&str> = cases.iter().map(|c| c.1).collect();
    for kind in kinds {
        assert!(
            cases.iter().any(|c| c.1 == kind && !c.3.is_empty()),
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
