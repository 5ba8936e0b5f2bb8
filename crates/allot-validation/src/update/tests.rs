//! Table tests: one row per rule, each an object, a change (a JSON merge patch) and the errors
//! the change gets (none for an allowed change).

use allot_api::load::{LoadOptions, Object, RawDocument, SourceMap, decode_object};
use serde_json::{Value, json};

use super::{Subresource, validate_object_update};

/// RFC 7386 merge patch, enough for the tables.
fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(entries) => {
            if !target.is_object() {
                *target = json!({});
            }
            for (key, value) in entries {
                if value.is_null() {
                    target.as_object_mut().map(|m| m.remove(key));
                } else {
                    merge(
                        target
                            .as_object_mut()
                            .map(|m| m.entry(key.clone()).or_insert(Value::Null))
                            .expect("an object"),
                        value,
                    );
                }
            }
        }
        other => *target = other.clone(),
    }
}

fn object(value: &Value) -> Object {
    let raw = RawDocument {
        file: "test".into(),
        line: 1,
        api_version: value["apiVersion"].as_str().unwrap_or_default().into(),
        kind: value["kind"].as_str().unwrap_or_default().into(),
        value: value.clone(),
        source_map: SourceMap::default(),
    };
    decode_object(&raw, &LoadOptions::default()).expect("decodes")
}

/// The errors of changing `old` by `patch` through `subresource`, rendered.
fn check(old: &Value, patch: Value, subresource: Subresource) -> Vec<String> {
    let mut new = old.clone();
    merge(&mut new, &patch);
    validate_object_update(&object(&new), &object(old), subresource)
        .iter()
        .map(ToString::to_string)
        .collect()
}

/// Runs a table: (what, patch, expected error prefixes; empty = allowed).
fn table(old: &Value, subresource: Subresource, rows: &[(&str, Value, &[&str])]) {
    for (what, patch, want) in rows {
        let got = check(old, patch.clone(), subresource);
        assert_eq!(
            got.len(),
            want.len(),
            "{what}: got {got:#?}, want prefixes {want:?}"
        );
        for (got, want) in got.iter().zip(want.iter()) {
            assert!(got.starts_with(want), "{what}: got {got:?}, want {want:?}");
        }
    }
}

const POD_REFUSAL: &str = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n";

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "annotations": {"a": "b"}},
        "spec": {
            "nodeName": "n1",
            "containers": [{"name": "app", "image": "app:1",
                "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "t"}],
            "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30}],
            "activeDeadlineSeconds": 100,
            "terminationGracePeriodSeconds": -1
        }
    })
}

#[test]
fn pod_spec_changes_upstream_allows() {
    table(
        &pod(),
        Subresource::Main,
        &[
            ("labels", json!({"metadata": {"labels": {"x": "y"}}}), &[]),
            (
                "image",
                json!({"spec": {"containers": [{"name": "app", "image": "app:2",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}}),
                &[],
            ),
            (
                "lower deadline",
                json!({"spec": {"activeDeadlineSeconds": 50}}),
                &[],
            ),
            (
                "add toleration",
                json!({"spec": {"tolerations": [
                    {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 30},
                    {"key": "other", "operator": "Exists"}]}}),
                &[],
            ),
            (
                "tolerationSeconds of an existing toleration",
                json!({"spec": {"tolerations": [
                    {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]}}),
                &[],
            ),
            (
                "grace period to 1 from negative",
                json!({"spec": {"terminationGracePeriodSeconds": 1}}),
                &[],
            ),
            (
                "empty list same as absent",
                json!({"spec": {"volumes": []}}),
                &[],
            ),
        ],
    );
}

#[test]
fn pod_spec_changes_upstream_refuses() {
    table(
        &pod(),
        Subresource::Main,
        &[
            (
                "move to another node",
                json!({"spec": {"nodeName": "n2"}}),
                &[POD_REFUSAL],
            ),
            (
                "unbind",
                json!({"spec": {"nodeName": null}}),
                &[POD_REFUSAL],
            ),
            (
                "remove resourceClaims",
                json!({"spec": {"resourceClaims": null}}),
                &[POD_REFUSAL],
            ),
            (
                "add a container",
                json!({"spec": {"containers": [{"name": "app", "image": "app:1"}, {"name": "b", "image": "b"}]}}),
                &["spec.containers: Forbidden: pod updates may not add or remove containers"],
            ),
            (
                "add an init container",
                json!({"spec": {"initContainers": [{"name": "i", "image": "i"}]}}),
                &["spec.initContainers: Forbidden: pod updates may not add or remove containers"],
            ),
            (
                "change requests",
                json!({"spec": {"containers": [{"name": "app", "image": "app:1",
                    "resources": {"requests": {"cpu": "2"}, "claims": [{"name": "gpu"}]}}]}}),
                &[POD_REFUSAL],
            ),
            (
                "image with blanks",
                json!({"spec": {"containers": [{"name": "app", "image": " app:2",
                    "resources": {"requests": {"cpu": "1"}, "claims": [{"name": "gpu"}]}}]}}),
                &[
                    "spec.containers[0].image: Invalid value: \" app:2\": must not have leading or trailing whitespace",
                ],
            ),
            (
                "raise deadline",
                json!({"spec": {"activeDeadlineSeconds": 200}}),
                &[
                    "spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value",
                ],
            ),
            (
                "negative deadline",
                json!({"spec": {"activeDeadlineSeconds": -1}}),
                &[
                    "spec.activeDeadlineSeconds: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                ],
            ),
            (
                "remove deadline",
                json!({"spec": {"activeDeadlineSeconds": null}}),
                &[
                    "spec.activeDeadlineSeconds: Invalid value: null: must not update from a positive integer to nil value",
                ],
            ),
            (
                "remove toleration",
                json!({"spec": {"tolerations": null}}),
                &[
                    "spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds",
                ],
            ),
            (
                "grace period to 2",
                json!({"spec": {"terminationGracePeriodSeconds": 2}}),
                &[POD_REFUSAL],
            ),
            (
                "add a scheduling gate",
                json!({"spec": {"schedulingGates": [{"name": "g"}]}}),
                &[
                    "spec.schedulingGates[0].name: Forbidden: only deletion is allowed, but found new scheduling gate 'g'",
                ],
            ),
            (
                "mirror annotation",
                json!({"metadata": {"annotations": {"kubernetes.io/config.mirror": "x"}}}),
                &[
                    "metadata.annotations[kubernetes.io/config.mirror]: Forbidden: may not add mirror pod annotation",
                ],
            ),
            (
                "uid",
                json!({"metadata": {"uid": "u2"}}),
                &["metadata.uid: Invalid value: \"u2\": field is immutable"],
            ),
        ],
    );
}

#[test]
fn the_pod_refusal_names_the_changed_fields() {
    let errors = check(
        &pod(),
        json!({"spec": {"nodeName": "n2"}}),
        Subresource::Main,
    );
    assert_eq!(
        errors,
        [format!(
            "{POD_REFUSAL}- spec.nodeName: \"n1\"\n+ spec.nodeName: \"n2\""
        )]
    );
    // A huge change is listed in bounded form.
    let containers: Vec<Value> = (0..1)
        .map(|_| json!({"name": "app", "image": "app:1", "args": vec!["x".repeat(10_000); 100]}))
        .collect();
    let errors = check(
        &pod(),
        json!({"spec": {"containers": containers}}),
        Subresource::Main,
    );
    assert_eq!(errors.len(), 1);
    assert!(errors[0].len() < 16_000, "{}", errors[0].len());
}

fn gated_pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "ns"},
        "spec": {
            "containers": [{"name": "app", "image": "app:1"}],
            "schedulingGates": [{"name": "a"}, {"name": "b"}],
            "nodeSelector": {"zone": "z1"},
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}}
        }
    })
}

#[test]
fn gated_pods_may_gain_constraints() {
    table(
        &gated_pod(),
        Subresource::Main,
        &[
            (
                "remove a gate",
                json!({"spec": {"schedulingGates": [{"name": "b"}]}}),
                &[],
            ),
            (
                "add a node selector entry",
                json!({"spec": {"nodeSelector": {"rack": "r1"}}}),
                &[],
            ),
            (
                "add a requirement to a term",
                json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "k", "operator": "Exists"}, {"key": "j", "operator": "Exists"}]}]}}}}}),
                &[],
            ),
            (
                "change a node selector entry",
                json!({"spec": {"nodeSelector": {"zone": "z2"}}}),
                &[
                    "spec.nodeSelector: Invalid value: map[string]string{\"zone\":\"z2\"}: only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                ],
            ),
            (
                "remove a requirement",
                json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchExpressions": [{"key": "j", "operator": "Exists"}]}]}}}}}),
                &[
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0]: Invalid value: ",
                ],
            ),
            (
                "add a term",
                json!({"spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "k", "operator": "Exists"}]},
                        {"matchExpressions": [{"key": "j", "operator": "Exists"}]}]}}}}}),
                &[
                    "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Invalid value: ",
                ],
            ),
        ],
    );
    // Without gates the same additions are refused.
    let mut ungated = gated_pod();
    ungated["spec"]
        .as_object_mut()
        .map(|m| m.remove("schedulingGates"));
    table(
        &ungated,
        Subresource::Main,
        &[(
            "add a node selector entry",
            json!({"spec": {"nodeSelector": {"rack": "r1"}}}),
            &[POD_REFUSAL],
        )],
    );
}

#[test]
fn pod_status_rules() {
    let mut old = pod();
    old["status"] = json!({"qosClass": "Burstable"});
    table(
        &old,
        Subresource::Status,
        &[
            ("phase", json!({"status": {"phase": "Running"}}), &[]),
            (
                "claim status",
                json!({"status": {"resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "p-gpu"}]}}),
                &[],
            ),
            (
                "qosClass",
                json!({"status": {"qosClass": "Guaranteed"}}),
                &["status.qosClass: Invalid value: \"Guaranteed\": field is immutable"],
            ),
            (
                "unknown claim",
                json!({"status": {"resourceClaimStatuses": [{"name": "nope"}]}}),
                &[
                    "status.resourceClaimStatuses[0].name: Invalid value: \"nope\": must match the name of an entry in `spec.resourceClaims`",
                ],
            ),
            (
                "duplicate claim",
                json!({"status": {"resourceClaimStatuses": [{"name": "gpu"}, {"name": "gpu"}]}}),
                &["status.resourceClaimStatuses[1].name: Duplicate value: \"gpu\""],
            ),
            (
                "condition type",
                json!({"status": {"conditions": [{"type": "bad type!", "status": "True"}]}}),
                &["metadata.conditions[0].Type: Invalid value: \"bad type!\""],
            ),
            (
                "nodeName",
                json!({"spec": {"nodeName": "n2"}}),
                &["status.nodeName: Forbidden: may not be changed directly"],
            ),
        ],
    );
}

fn claim() -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "c", "namespace": "ns"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
        "status": {
            "allocation": {"devices": {"results": [{"request": "gpu", "driver": "d.example.com", "pool": "p", "device": "g0"}]}},
            "reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}]
        }
    })
}

#[test]
fn resource_claim_spec_is_immutable() {
    table(
        &claim(),
        Subresource::Main,
        &[
            ("labels", json!({"metadata": {"labels": {"x": "y"}}}), &[]),
            (
                "deviceClassName",
                json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "other", "allocationMode": "ExactCount", "count": 1}}]}}}),
                &["spec: Forbidden: field is immutable"],
            ),
            (
                "allocationMode",
                json!({"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}}]}}}),
                &["spec: Forbidden: field is immutable"],
            ),
            (
                "spec: null",
                json!({"spec": null}),
                &["spec: Forbidden: field is immutable"],
            ),
        ],
    );
}

#[test]
fn resource_claim_status_rules() {
    table(
        &claim(),
        Subresource::Status,
        &[
            (
                "add a consumer",
                json!({"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}, {"resource": "pods", "name": "q", "uid": "u2"}]}}),
                &[],
            ),
            (
                "deallocate",
                json!({"status": {"allocation": null, "reservedFor": null}}),
                &[],
            ),
            (
                "change the allocation",
                json!({"status": {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "d.example.com", "pool": "p", "device": "g1"}]}}}}),
                &["status.allocation: Invalid value: null: field cannot be modified once set"],
            ),
        ],
    );
    let mut deleting = claim();
    deleting["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
    table(
        &deleting,
        Subresource::Status,
        &[
            (
                "drop a consumer",
                json!({"status": {"reservedFor": null}}),
                &[],
            ),
            (
                "add a consumer while deleting",
                json!({"status": {"reservedFor": [{"resource": "pods", "name": "p", "uid": "u1"}, {"resource": "pods", "name": "q", "uid": "u2"}]}}),
                &[
                    "status.reservedFor: Forbidden: new entries may not be added while `deallocationRequested` or `deletionTimestamp` are set",
                ],
            ),
            (
                "add a finalizer while deleting",
                json!({"metadata": {"finalizers": ["example.com/f"]}}),
                &[
                    "metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"example.com/f\"}",
                ],
            ),
        ],
    );
}

#[test]
fn template_slice_and_pool_status_request_rules() {
    let template = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "t", "namespace": "ns"},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]}}}
    });
    table(
        &template,
        Subresource::Main,
        &[
            ("labels", json!({"metadata": {"labels": {"x": "y"}}}), &[]),
            (
                "template labels",
                json!({"spec": {"metadata": {"labels": {"x": "y"}}}}),
                &["spec: Forbidden: field is immutable"],
            ),
        ],
    );
    let slice = json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "s"},
        "spec": {"driver": "d.example.com", "nodeName": "n1",
                 "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "g0"}]}
    });
    table(
        &slice,
        Subresource::Main,
        &[
            (
                "devices and generation",
                json!({"spec": {"devices": [{"name": "g1"}], "pool": {"generation": 2}}}),
                &[],
            ),
            (
                "pool name",
                json!({"spec": {"pool": {"name": "q"}}}),
                &["spec.pool.name: Invalid value: \"q\": field is immutable"],
            ),
            (
                "driver",
                json!({"spec": {"driver": "e.example.com"}}),
                &["spec.driver: Invalid value: \"e.example.com\": field is immutable"],
            ),
            (
                "node name",
                json!({"spec": {"nodeName": null, "allNodes": true}}),
                &["spec.nodeName: Invalid value: null: field is immutable"],
            ),
        ],
    );
    let request = json!({
        "apiVersion": "resource.k8s.io/v1alpha3", "kind": "ResourcePoolStatusRequest",
        "metadata": {"name": "r"},
        "spec": {"driver": "d.example.com"}
    });
    table(
        &request,
        Subresource::Main,
        &[(
            "driver",
            json!({"spec": {"driver": "e.example.com"}}),
            &["spec: Forbidden: field is immutable"],
        )],
    );
    table(
        &request,
        Subresource::Status,
        &[(
            "an answer",
            json!({"status": {"observationTime": "2026-01-01T00:00:00Z", "poolCount": 1}}),
            &[],
        )],
    );
    let mut answered = request.clone();
    answered["status"] = json!({"observationTime": "2026-01-01T00:00:00Z", "poolCount": 1});
    table(
        &answered,
        Subresource::Status,
        &[(
            "a second answer",
            json!({"status": {"poolCount": 2}}),
            &["status: Forbidden: field is immutable"],
        )],
    );
}

#[test]
fn pod_group_spec_fields_are_immutable() {
    let group = json!({
        "apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ns"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, "priority": 1}
    });
    table(
        &group,
        Subresource::Main,
        &[
            ("labels", json!({"metadata": {"labels": {"x": "y"}}}), &[]),
            (
                "minCount",
                json!({"spec": {"schedulingPolicy": {"gang": {"minCount": 3}}}}),
                &["spec.schedulingPolicy: Forbidden: field is immutable"],
            ),
            (
                "priority and claims",
                json!({"spec": {"priority": 2, "resourceClaims": [{"name": "c", "resourceClaimName": "c"}]}}),
                &[
                    "spec.resourceClaims: Forbidden: field is immutable",
                    "spec.priority: Forbidden: field is immutable",
                ],
            ),
        ],
    );
}

#[test]
fn namespace_node_and_binding_rules() {
    let namespace = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"},
        "status": {"phase": "Active"}});
    table(
        &namespace,
        Subresource::Status,
        &[
            (
                "same phase",
                json!({"metadata": {"labels": {"x": "y"}}}),
                &[],
            ),
            (
                "terminating without deletion",
                json!({"status": {"phase": "Terminating"}}),
                &[
                    "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty",
                ],
            ),
        ],
    );
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
        "spec": {"podCIDRs": ["10.0.0.0/24"], "providerID": "p1"}});
    table(
        &node,
        Subresource::Main,
        &[
            (
                "unschedulable",
                json!({"spec": {"unschedulable": true}}),
                &[],
            ),
            (
                "pod CIDRs",
                json!({"spec": {"podCIDRs": ["10.0.1.0/24"]}}),
                &[
                    "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
                ],
            ),
            (
                "provider",
                json!({"spec": {"providerID": "p2"}}),
                &[
                    "spec.providerID: Forbidden: node updates may not change providerID except from \"\" to valid",
                ],
            ),
            (
                "external ID",
                json!({"spec": {"externalID": "e"}}),
                &["spec.externalID: Forbidden: may not be updated"],
            ),
        ],
    );
    let mut fresh = node.clone();
    fresh["spec"] = json!({});
    table(
        &fresh,
        Subresource::Main,
        &[(
            "first CIDR and provider",
            json!({"spec": {"podCIDRs": ["10.0.1.0/24"], "providerID": "p2"}}),
            &[],
        )],
    );
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "b", "namespace": "ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]});
    table(
        &binding,
        Subresource::Main,
        &[
            (
                "subjects",
                json!({"subjects": [{"kind": "User", "name": "v", "apiGroup": "rbac.authorization.k8s.io"}]}),
                &[],
            ),
            (
                "roleRef",
                json!({"roleRef": {"name": "other"}}),
                &[
                    "roleRef: Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"other\"}: cannot change roleRef",
                ],
            ),
        ],
    );
}

#[test]
fn kinds_without_spec_rules_check_metadata_only() {
    let class = json!({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu", "generation": 3},
        "spec": {"selectors": [{"cel": {"expression": "true"}}]}});
    table(
        &class,
        Subresource::Main,
        &[
            (
                "selectors",
                json!({"spec": {"selectors": null}, "metadata": {"generation": 4}}),
                &[],
            ),
            (
                "generation down",
                json!({"metadata": {"generation": 2}}),
                &["metadata.generation: Invalid value: 2: must not be decremented"],
            ),
        ],
    );
    let topology = json!({"apiVersion": "allot.dev/v1alpha1", "kind": "NodeTopology",
        "metadata": {"name": "n1"}, "cpus": [{"id": 0}]});
    table(
        &topology,
        Subresource::Main,
        &[("machine", json!({"cpus": [{"id": 0}, {"id": 1}]}), &[])],
    );
}
