//! Conversion tests: upstream's table cases for the tricky fields, and round trips in both
//! directions over generated objects, as upstream's roundtrip fuzz tests do (v1 → v1beta1 →
//! v1 identical for every v1 object; v1beta1 → v1 → v1beta1 identical for every object valid
//! in v1beta1), in memory and through the JSON a server writes and a loader reads.

use std::collections::BTreeMap;

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use serde_json::json;

use super::*;
use crate::Quantity;
use crate::core::v1::{NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};
use crate::load::{LoadOptions, decode_object, load_str};
use crate::meta::v1::ObjectMeta;
use crate::resource::v1::{
    AllocationResult, CapacityRequirements, CelDeviceSelector, Counter, CounterSet,
    DeviceAllocationConfiguration, DeviceAllocationMode, DeviceAllocationResult, DeviceAttribute,
    DeviceCapacity, DeviceClaimConfiguration, DeviceConstraint, DeviceCounterConsumption,
    DeviceDerivedAttribute, DeviceRequestAllocationResult, DeviceSelector, DeviceSubRequest,
    DeviceTaint, DeviceTaintEffect, DeviceToleration, DeviceTolerationOperator, ExactDeviceRequest,
    OpaqueDeviceConfiguration, ResourceClaimConsumerReference, ResourceClaimStatus, ResourcePool,
};

fn quantity(text: &str) -> Quantity {
    Quantity::parse(text).expect("a quantity")
}

fn cel(expression: &str) -> DeviceSelector {
    DeviceSelector {
        cel: Some(CelDeviceSelector {
            expression: expression.into(),
        }),
    }
}

/// Loads one YAML document the way `allot validate` does.
fn load_one(text: &str) -> Result<Object, LoadError> {
    let mut loaded = load_str("test.yaml", text, &LoadOptions::default());
    if let Some(err) = loaded.errors.pop() {
        return Err(err);
    }
    assert_eq!(loaded.documents.len(), 1, "one document");
    Ok(loaded.documents.remove(0).object)
}

// ---------------------------------------------------------------------------------------------
// Table cases
// ---------------------------------------------------------------------------------------------

#[test]
fn a_flat_request_becomes_exactly_and_back() {
    let beta = v1beta1::DeviceRequest {
        name: "foo".into(),
        device_class_name: "class-a".into(),
        selectors: vec![cel(r#"device.attributes["driver-a"].exists"#)],
        allocation_mode: Some(DeviceAllocationMode::ExactCount),
        count: Some(2),
        capacity: Some(CapacityRequirements {
            requests: BTreeMap::from([("cap".into(), quantity("1"))]),
        }),
        ..Default::default()
    };
    let v1: v1::DeviceRequest = beta.clone().into();
    assert_eq!(v1.name, "foo");
    assert!(v1.first_available.is_empty());
    let exactly = v1.exactly.clone().expect("an exact request");
    assert_eq!(exactly.device_class_name, "class-a");
    assert_eq!(exactly.count, Some(2));
    assert_eq!(exactly.selectors.len(), 1);
    assert_eq!(
        exactly.capacity.expect("capacity").requests["cap"],
        quantity("1")
    );
    assert_eq!(v1beta1::DeviceRequest::from(v1), beta);
}

#[test]
fn first_available_passes_through_without_an_exact_request() {
    let sub = |name: &str, count| DeviceSubRequest {
        name: name.into(),
        device_class_name: "class-a".into(),
        selectors: vec![cel(r#"device.attributes["driver-a"].exists"#)],
        allocation_mode: Some(DeviceAllocationMode::ExactCount),
        count: Some(count),
        ..Default::default()
    };
    let beta = v1beta1::DeviceRequest {
        name: "foo".into(),
        first_available: vec![sub("sub-1", 2), sub("sub-2", 1)],
        ..Default::default()
    };
    assert!(!beta.has_exact_fields());
    let v1: v1::DeviceRequest = beta.clone().into();
    assert_eq!(v1.exactly, None);
    assert_eq!(v1.first_available, beta.first_available);
    let back = v1beta1::DeviceRequest::from(v1);
    assert_eq!(back, beta);
    // Upstream's field has no omitempty: the empty class name is written.
    assert_eq!(
        serde_json::to_value(&back).expect("json")["deviceClassName"],
        json!("")
    );
}

#[test]
fn any_single_flat_field_makes_an_exact_request() {
    let base = v1beta1::DeviceRequest {
        name: "r".into(),
        ..Default::default()
    };
    let cases: Vec<(&str, v1beta1::DeviceRequest)> = vec![
        (
            "deviceClassName",
            v1beta1::DeviceRequest {
                device_class_name: "c".into(),
                ..base.clone()
            },
        ),
        (
            "selectors",
            v1beta1::DeviceRequest {
                selectors: vec![cel("true")],
                ..base.clone()
            },
        ),
        (
            "allocationMode",
            v1beta1::DeviceRequest {
                allocation_mode: Some(DeviceAllocationMode::All),
                ..base.clone()
            },
        ),
        (
            "count",
            v1beta1::DeviceRequest {
                count: Some(3),
                ..base.clone()
            },
        ),
        (
            "adminAccess",
            v1beta1::DeviceRequest {
                admin_access: Some(false),
                ..base.clone()
            },
        ),
        (
            "tolerations",
            v1beta1::DeviceRequest {
                tolerations: vec![DeviceToleration {
                    key: "k".into(),
                    operator: Some(DeviceTolerationOperator::Exists),
                    ..Default::default()
                }],
                ..base.clone()
            },
        ),
        (
            "capacity",
            v1beta1::DeviceRequest {
                capacity: Some(CapacityRequirements::default()),
                ..base.clone()
            },
        ),
    ];
    for (field, request) in cases {
        let v1: v1::DeviceRequest = request.clone().into();
        assert!(v1.exactly.is_some(), "{field} alone makes `exactly`");
        assert_eq!(v1beta1::DeviceRequest::from(v1), request, "{field}");
    }
    // As in Go, an empty mode and a zero count are unset: no exact request.
    let zero = v1beta1::DeviceRequest {
        count: Some(0),
        allocation_mode: Some(DeviceAllocationMode::Other(String::new())),
        ..base
    };
    assert_eq!(v1::DeviceRequest::from(zero).exactly, None);
}

#[test]
fn slice_node_name_and_all_nodes_are_optional_in_v1() {
    let beta = v1beta1::ResourceSliceSpec {
        driver: "d".into(),
        node_name: "test-node".into(),
        ..Default::default()
    };
    let v1: v1::ResourceSliceSpec = beta.clone().into();
    assert_eq!(v1.node_name.as_deref(), Some("test-node"));
    assert_eq!(v1.all_nodes, None);
    assert_eq!(v1beta1::ResourceSliceSpec::from(v1), beta);

    let all = v1beta1::ResourceSliceSpec {
        all_nodes: true,
        ..Default::default()
    };
    let v1: v1::ResourceSliceSpec = all.clone().into();
    assert_eq!((v1.node_name.clone(), v1.all_nodes), (None, Some(true)));
    assert_eq!(v1beta1::ResourceSliceSpec::from(v1), all);
    // `false` is written as nothing, as upstream's omitempty does.
    let none = serde_json::to_value(v1beta1::ResourceSliceSpec::default()).expect("json");
    assert_eq!(none.get("allNodes"), None);
    assert_eq!(none.get("nodeName"), None);
}

#[test]
fn devices_wrap_their_fields_in_basic() {
    let v1 = v1::Device {
        name: "test-device".into(),
        attributes: BTreeMap::from([(
            "cpu_per_instance".into(),
            DeviceAttribute {
                int_value: Some(2),
                ..Default::default()
            },
        )]),
        capacity: BTreeMap::from([(
            "memory".into(),
            DeviceCapacity {
                value: quantity("40Gi"),
                request_policy: None,
            },
        )]),
        node_name: Some("n1".into()),
        ..Default::default()
    };
    let beta = v1beta1::Device::from(v1.clone());
    let basic = beta.basic.clone().expect("basic");
    assert_eq!(basic.attributes, v1.attributes);
    assert_eq!(basic.node_name.as_deref(), Some("n1"));
    assert_eq!(v1::Device::from(beta.clone()), v1);
    let json = serde_json::to_value(&beta).expect("json");
    assert_eq!(
        json["basic"]["attributes"]["cpu_per_instance"],
        json!({"int": 2})
    );
    assert_eq!(
        json["basic"]["capacity"]["memory"],
        json!({"value": "40Gi"})
    );

    // A device with nothing but a name still gets an (empty) `basic`, as upstream writes it;
    // one without `basic` reads as a device with only a name.
    let bare = v1::Device {
        name: "bare".into(),
        ..Default::default()
    };
    let beta = v1beta1::Device::from(bare.clone());
    assert_eq!(beta.basic, Some(v1beta1::BasicDevice::default()));
    assert_eq!(
        serde_json::to_value(&beta).expect("json"),
        json!({"name": "bare", "basic": {}})
    );
    let without_basic = v1beta1::Device {
        name: "bare".into(),
        basic: None,
    };
    assert_eq!(v1::Device::from(without_basic), bare);
}

#[test]
fn a_v1beta1_manifest_loads_as_v1_with_its_own_field_paths_in_errors() {
    let claim = load_one(
        r#"
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c, namespace: ns}
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      count: 2
"#,
    )
    .expect("loads");
    let Object::ResourceClaim(claim) = claim else {
        panic!("a claim: {claim:?}")
    };
    assert_eq!(claim.api_version, "resource.k8s.io/v1");
    let exactly = claim.spec.devices.requests[0]
        .exactly
        .as_ref()
        .expect("exactly");
    assert_eq!(
        (exactly.device_class_name.as_str(), exactly.count),
        ("gpu.example.com", Some(2))
    );

    // `exactly` is not a v1beta1 field: strict decoding names the v1beta1 path and line.
    let err = load_one(
        r#"
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: c}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {deviceClassName: gpu.example.com}
"#,
    )
    .expect_err("v1 shape at v1beta1");
    assert!(
        matches!(&err, LoadError::UnknownField { path, line: 9, .. } if path == "spec.devices.requests[0].exactly"),
        "{err:?}"
    );

    // And a slice's device fields outside `basic` are unknown at v1beta1.
    let err = load_one(
        r#"
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d
  nodeName: n
  pool: {name: p, resourceSliceCount: 1}
  devices:
  - name: d0
    attributes: {}
"#,
    )
    .expect_err("v1 device at v1beta1");
    assert!(
        matches!(&err, LoadError::UnknownField { path, .. } if path == "spec.devices[0].attributes"),
        "{err:?}"
    );
}

#[test]
fn v1beta2_and_device_classes_convert_by_api_version() {
    for (api_version, kind) in [
        ("resource.k8s.io/v1beta2", "ResourceClaim"),
        ("resource.k8s.io/v1beta2", "DeviceClass"),
        ("resource.k8s.io/v1beta1", "DeviceClass"),
        ("resource.k8s.io/v1beta2", "DeviceTaintRule"),
    ] {
        let spec = match kind {
            "ResourceClaim" => {
                "spec: {devices: {requests: [{name: r, exactly: {deviceClassName: c}}]}}"
            }
            "DeviceTaintRule" => "spec: {taint: {key: k, effect: NoSchedule}}",
            _ => "spec: {selectors: [{cel: {expression: 'true'}}]}",
        };
        let text =
            format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n{spec}\n");
        let object = load_one(&text).unwrap_or_else(|e| panic!("{api_version} {kind}: {e}"));
        assert_eq!(object.kind(), kind);
        let json = match &object {
            Object::ResourceClaim(o) => serde_json::to_value(o),
            Object::DeviceClass(o) => serde_json::to_value(o),
            Object::DeviceTaintRule(o) => serde_json::to_value(o),
            other => panic!("{other:?}"),
        }
        .expect("json");
        assert_eq!(json["apiVersion"], json!("resource.k8s.io/v1"));
        if kind != "DeviceTaintRule" {
            let back = encode_as(kind, json.clone(), api_version).expect("served");
            let mut expected = json;
            expected["apiVersion"] = json!(api_version);
            assert_eq!(back, expected, "{api_version} {kind}");
        }
    }
}

#[test]
fn encoding_refuses_versions_a_kind_is_not_served_at() {
    let err = encode_as("DeviceTaintRule", json!({}), "resource.k8s.io/v1beta1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "DeviceTaintRule is not served at resource.k8s.io/v1beta1"
    );
    // v1alpha2 PodGroups are read from dumps but not served by 1.37.
    assert!(encode_as("PodGroup", json!({}), "scheduling.k8s.io/v1alpha2").is_err());
}

#[test]
fn v1alpha2_pod_groups_convert_to_v1beta1() {
    let object = load_one(
        r#"
apiVersion: scheduling.k8s.io/v1alpha2
kind: PodGroup
metadata: {name: g, namespace: ml}
spec:
  podGroupTemplateRef:
    workload: {workloadName: w, podGroupTemplateName: workers}
  schedulingPolicy:
    gang: {minCount: 4}
  disruptionMode: PodGroup
  priorityClassName: high
  resourceClaims:
  - name: shared
    resourceClaimTemplateName: gpus
"#,
    )
    .expect("loads");
    let Object::PodGroup(group) = object else {
        panic!("{object:?}")
    };
    assert_eq!(group.api_version, "scheduling.k8s.io/v1beta1");
    let spec = &group.spec;
    assert_eq!(
        spec.scheduling_policy
            .as_ref()
            .and_then(|p| p.gang.as_ref())
            .map(|g| g.min_count),
        Some(4)
    );
    let mode = spec.disruption_mode.as_ref().expect("mode");
    assert!(mode.all.is_some() && mode.single.is_none());
    assert_eq!(spec.priority_class_name.as_deref(), Some("high"));
    assert_eq!(spec.resource_claims[0].name, "shared");
    assert_eq!(
        spec.pod_group_template_ref
            .as_ref()
            .and_then(|r| r.workload.as_ref())
            .map(|w| w.pod_group_template_name.as_str()),
        Some("workers")
    );

    let single = load_one(
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  schedulingPolicy: {basic: {}}\n  disruptionMode: Pod\n",
    )
    .expect("loads");
    let Object::PodGroup(single) = single else {
        panic!()
    };
    let mode = single.spec.disruption_mode.expect("mode");
    assert!(mode.single.is_some() && mode.all.is_none());
    assert_eq!(single.spec.priority_class_name, None);

    let err = load_one(
        "apiVersion: scheduling.k8s.io/v1alpha2\nkind: PodGroup\nmetadata: {name: g}\nspec:\n  schedulingPolicy: {basic: {}}\n  disruptionMode: Sometimes\n",
    )
    .expect_err("unknown mode");
    assert!(
        matches!(&err, LoadError::InvalidField { path, line: 6, message, .. }
            if path == "spec.disruptionMode" && message.contains("supported values: \"Pod\", \"PodGroup\"")),
        "{err:?}"
    );
}

#[test]
fn the_conversion_note_counts_per_kind_and_version() {
    let text = r#"
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: a}
spec: {devices: {requests: [{name: r, deviceClassName: c}]}}
---
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata: {name: b}
spec: {devices: {requests: [{name: r, deviceClassName: c}]}}
---
apiVersion: resource.k8s.io/v1beta2
kind: DeviceClass
metadata: {name: c}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: d}
"#;
    let loaded = load_str("dump.yaml", text, &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    assert_eq!(
        conversion_note(&loaded.documents).as_deref(),
        Some(
            "converted on load: 1 DeviceClass resource.k8s.io/v1beta2 → resource.k8s.io/v1, \
             2 ResourceClaim resource.k8s.io/v1beta1 → resource.k8s.io/v1"
        )
    );
    let v1_only = load_str(
        "x.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata: {name: d}\n",
        &LoadOptions::default(),
    );
    assert_eq!(conversion_note(&v1_only.documents), None);
}

// ---------------------------------------------------------------------------------------------
// Round trips over generated objects
// ---------------------------------------------------------------------------------------------

fn name() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9-]{0,6}[a-z0-9]"
}

fn qualified() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z]{1,8}", "[a-z]{1,5}\\.example\\.com/[a-z]{1,6}"]
}

fn some_quantity() -> impl Strategy<Value = Quantity> {
    prop::sample::select(vec!["1", "2", "500m", "8Gi", "40Gi", "1.5", "100"]).prop_map(quantity)
}

fn opt<T: std::fmt::Debug + Clone>(
    strategy: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<T>> {
    prop::option::of(strategy)
}

fn metadata() -> impl Strategy<Value = ObjectMeta> {
    (
        name(),
        opt(name()),
        prop::collection::btree_map(qualified(), name(), 0..3),
        opt("[0-9]{1,4}"),
    )
        .prop_map(|(name, namespace, labels, rv)| ObjectMeta {
            name,
            namespace: namespace.unwrap_or_default(),
            labels,
            resource_version: rv.unwrap_or_default(),
            ..Default::default()
        })
}

fn selectors() -> impl Strategy<Value = Vec<DeviceSelector>> {
    prop::collection::vec(
        prop::sample::select(vec![
            "true",
            r#"device.driver == "gpu.example.com""#,
            r#"device.attributes["gpu.example.com"].model == "a100""#,
        ])
        .prop_map(cel),
        0..3,
    )
}

fn tolerations() -> impl Strategy<Value = Vec<DeviceToleration>> {
    prop::collection::vec(
        (
            name(),
            opt(prop::sample::select(vec![
                DeviceTolerationOperator::Equal,
                DeviceTolerationOperator::Exists,
            ])),
            opt(prop::sample::select(vec![
                DeviceTaintEffect::NoSchedule,
                DeviceTaintEffect::NoExecute,
            ])),
            opt(0i64..600),
        )
            .prop_map(|(key, operator, effect, seconds)| DeviceToleration {
                key,
                operator,
                value: String::new(),
                effect,
                toleration_seconds: seconds,
            }),
        0..2,
    )
}

fn capacity_requirements() -> impl Strategy<Value = Option<CapacityRequirements>> {
    opt(
        prop::collection::btree_map(qualified(), some_quantity(), 0..2)
            .prop_map(|requests| CapacityRequirements { requests }),
    )
}

fn derived() -> impl Strategy<Value = Vec<DeviceDerivedAttribute>> {
    prop::collection::vec(
        "[a-z]{1,5}\\.example\\.com/[a-z]{1,6}".prop_map(|name| DeviceDerivedAttribute {
            name,
            expression: "device.attributes[\"x\"].y".into(),
        }),
        0..2,
    )
}

fn mode_and_count() -> impl Strategy<Value = (Option<DeviceAllocationMode>, Option<i64>)> {
    (
        opt(prop::sample::select(vec![
            DeviceAllocationMode::ExactCount,
            DeviceAllocationMode::All,
        ])),
        opt(1i64..8),
    )
}

fn exact() -> impl Strategy<Value = ExactDeviceRequest> {
    (
        name(),
        selectors(),
        mode_and_count(),
        opt(any::<bool>()),
        tolerations(),
        capacity_requirements(),
        derived(),
    )
        .prop_map(
            |(class, selectors, (mode, count), admin, tolerations, capacity, derived)| {
                ExactDeviceRequest {
                    device_class_name: class,
                    selectors,
                    allocation_mode: mode,
                    count,
                    admin_access: admin,
                    tolerations,
                    capacity,
                    derived_attributes: derived,
                }
            },
        )
}

fn sub_request() -> impl Strategy<Value = DeviceSubRequest> {
    (
        name(),
        name(),
        selectors(),
        mode_and_count(),
        tolerations(),
        capacity_requirements(),
    )
        .prop_map(
            |(name, class, selectors, (mode, count), tolerations, capacity)| DeviceSubRequest {
                name,
                device_class_name: class,
                selectors,
                allocation_mode: mode,
                count,
                tolerations,
                capacity,
                derived_attributes: Vec::new(),
            },
        )
}

/// A v1 request: exact, first-available, or (invalid but representable) both. An `exactly`
/// always names its class, as upstream's fuzzer fills it: an empty exact request has no
/// v1beta1 spelling.
fn request() -> impl Strategy<Value = v1::DeviceRequest> {
    (
        name(),
        opt(exact()),
        prop::collection::vec(sub_request(), 0..3),
    )
        .prop_map(|(name, exactly, first_available)| v1::DeviceRequest {
            name,
            exactly,
            first_available,
        })
}

fn claim_spec() -> impl Strategy<Value = v1::ResourceClaimSpec> {
    (
        prop::collection::vec(request(), 0..3),
        prop::collection::vec(
            (
                prop::collection::vec(name(), 0..2),
                opt("[a-z]{1,5}\\.example\\.com/[a-z]{1,6}"),
            )
                .prop_map(|(requests, attr)| DeviceConstraint {
                    requests,
                    match_attribute: attr,
                    distinct_attribute: None,
                }),
            0..2,
        ),
        prop::collection::vec(
            (prop::collection::vec(name(), 0..2), name()).prop_map(|(requests, driver)| {
                DeviceClaimConfiguration {
                    requests,
                    opaque: Some(OpaqueDeviceConfiguration {
                        driver,
                        parameters: json!({"kind": "Config", "sharing": {"strategy": "TimeSlicing"}}),
                    }),
                }
            }),
            0..2,
        ),
    )
        .prop_map(|(requests, constraints, config)| v1::ResourceClaimSpec {
            devices: v1::DeviceClaim {
                requests,
                constraints,
                config,
            },
        })
}

fn claim_status() -> impl Strategy<Value = ResourceClaimStatus> {
    let result = (name(), name(), name(), name(), opt(any::<bool>())).prop_map(
        |(request, driver, pool, device, admin)| DeviceRequestAllocationResult {
            request: request.into(),
            driver: driver.into(),
            pool: pool.into(),
            device: device.into(),
            admin_access: admin,
            ..Default::default()
        },
    );
    let allocation =
        (prop::collection::vec(result, 0..3), opt(name())).prop_map(|(results, node)| {
            AllocationResult {
                devices: DeviceAllocationResult {
                    results,
                    config: vec![DeviceAllocationConfiguration {
                        source: v1::AllocationConfigSource::FromClass,
                        requests: Vec::new(),
                        opaque: None,
                    }],
                },
                node_selector: node.map(|node| {
                    std::sync::Arc::new(NodeSelector {
                        node_selector_terms: vec![NodeSelectorTerm {
                            match_fields: vec![NodeSelectorRequirement {
                                key: "metadata.name".into(),
                                operator: crate::core::v1::NodeSelectorOperator::In,
                                values: vec![node],
                            }],
                            ..Default::default()
                        }],
                    })
                }),
                allocation_timestamp: Some("2026-01-01T00:00:00Z".into()),
            }
        });
    (opt(allocation), prop::collection::vec(name(), 0..2)).prop_map(|(allocation, pods)| {
        ResourceClaimStatus {
            allocation,
            reserved_for: pods
                .into_iter()
                .map(|pod| ResourceClaimConsumerReference {
                    api_group: String::new(),
                    resource: "pods".into(),
                    uid: format!("uid-{pod}"),
                    name: pod,
                })
                .collect(),
            devices: Vec::new(),
        }
    })
}

fn v1_claim() -> impl Strategy<Value = v1::ResourceClaim> {
    (metadata(), claim_spec(), claim_status(), any::<bool>()).prop_map(
        |(metadata, spec, status, typed)| v1::ResourceClaim {
            api_version: if typed {
                v1::API_VERSION.into()
            } else {
                String::new()
            },
            kind: if typed {
                "ResourceClaim".into()
            } else {
                String::new()
            },
            metadata,
            spec,
            status,
        },
    )
}

fn v1_template() -> impl Strategy<Value = v1::ResourceClaimTemplate> {
    (metadata(), metadata(), claim_spec()).prop_map(|(metadata, claim_meta, spec)| {
        v1::ResourceClaimTemplate {
            api_version: v1::API_VERSION.into(),
            kind: "ResourceClaimTemplate".into(),
            metadata,
            spec: v1::ResourceClaimTemplateSpec {
                metadata: ObjectMeta {
                    labels: claim_meta.labels,
                    ..Default::default()
                },
                spec,
            },
        }
    })
}

fn attribute() -> impl Strategy<Value = DeviceAttribute> {
    prop_oneof![
        any::<i64>().prop_map(|v| DeviceAttribute {
            int_value: Some(v),
            ..Default::default()
        }),
        any::<bool>().prop_map(|v| DeviceAttribute {
            bool_value: Some(v),
            ..Default::default()
        }),
        name().prop_map(|v| DeviceAttribute {
            string_value: Some(v),
            ..Default::default()
        }),
        "[0-9]\\.[0-9]\\.[0-9]".prop_map(|v| DeviceAttribute {
            version_value: Some(v),
            ..Default::default()
        }),
        prop::collection::vec(name(), 1..3).prop_map(|v| DeviceAttribute {
            string_values: v,
            ..Default::default()
        }),
        prop::collection::vec(any::<i64>(), 1..3).prop_map(|v| DeviceAttribute {
            int_values: v,
            ..Default::default()
        }),
    ]
}

fn v1_device() -> impl Strategy<Value = v1::Device> {
    (
        name(),
        prop::collection::btree_map(qualified(), attribute(), 0..4),
        prop::collection::btree_map(
            qualified(),
            some_quantity().prop_map(|value| DeviceCapacity {
                value,
                request_policy: None,
            }),
            0..3,
        ),
        prop::collection::vec(
            (
                name(),
                prop::collection::btree_map(name(), some_quantity(), 0..2),
            )
                .prop_map(|(counter_set, counters)| DeviceCounterConsumption {
                    counter_set,
                    counters: counters
                        .into_iter()
                        .map(|(k, value)| (k, Counter { value }))
                        .collect(),
                    compatibility_groups: Vec::new(),
                }),
            0..2,
        ),
        (opt(name()), opt(any::<bool>()), opt(any::<bool>())),
        prop::collection::vec(
            (name(), opt(name())).prop_map(|(key, value)| DeviceTaint {
                key,
                value: value.unwrap_or_default(),
                effect: DeviceTaintEffect::NoSchedule,
                time_added: None,
            }),
            0..2,
        ),
        prop::collection::vec(name(), 0..2),
    )
        .prop_map(
            |(name, attributes, capacity, counters, (node, all, multi), taints, conditions)| {
                v1::Device {
                    name,
                    attributes,
                    capacity,
                    consumes_counters: counters,
                    node_name: node,
                    all_nodes: all,
                    allow_multiple_allocations: multi,
                    taints,
                    binds_to_node: (!conditions.is_empty()).then_some(true),
                    binding_conditions: conditions,
                    ..Default::default()
                }
            },
        )
}

/// A v1 slice; `nodeName` is never empty and `allNodes` never false, as upstream's fuzzer
/// normalises them (v1beta1 has no spelling for either).
fn v1_slice() -> impl Strategy<Value = v1::ResourceSlice> {
    (
        metadata(),
        name(),
        (name(), 0i64..5, 1i64..4),
        prop_oneof![
            name().prop_map(|n| (Some(n), None, None)),
            Just((None, Some(true), None)),
            Just((None, None, Some(true))),
        ],
        prop::collection::vec(v1_device(), 0..4),
        prop::collection::vec(
            (
                name(),
                prop::collection::btree_map(name(), some_quantity(), 1..3),
            )
                .prop_map(|(name, counters)| CounterSet {
                    name,
                    counters: counters
                        .into_iter()
                        .map(|(k, value)| (k, Counter { value }))
                        .collect(),
                }),
            0..2,
        ),
    )
        .prop_map(
            |(
                metadata,
                driver,
                (pool, generation, count),
                (node, all, per_device),
                devices,
                counters,
            )| {
                v1::ResourceSlice {
                    api_version: v1::API_VERSION.into(),
                    kind: "ResourceSlice".into(),
                    metadata,
                    spec: v1::ResourceSliceSpec {
                        driver,
                        pool: ResourcePool {
                            name: pool,
                            generation,
                            resource_slice_count: count,
                        },
                        node_name: node,
                        all_nodes: all,
                        per_device_node_selection: per_device,
                        devices,
                        shared_counters: counters,
                        ..Default::default()
                    },
                }
            },
        )
}

/// Writes `object` at v1beta1 as a server does, reads it back as a loader does.
fn through_json<T: Serialize>(kind: &str, object: &T) -> Object {
    let json = serde_json::to_value(object).expect("json");
    let mut beta = encode_as(kind, json, v1beta1::API_VERSION).expect("served at v1beta1");
    beta["kind"] = json!(kind);
    assert_eq!(beta["apiVersion"], json!(v1beta1::API_VERSION));
    let mut raw = crate::load::parse_str("wire.json", &beta.to_string())
        .expect("parses")
        .remove(0);
    raw.api_version = v1beta1::API_VERSION.into();
    decode_object(&raw, &LoadOptions::default()).expect("decodes at v1beta1")
}

/// The typed object with the apiVersion a load gives it (a document always carries one).
fn typed<T: Clone>(object: &T, set: impl FnOnce(&mut T)) -> T {
    let mut object = object.clone();
    set(&mut object);
    object
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn claims_round_trip_v1_to_v1beta1_to_v1(claim in v1_claim()) {
        let beta = v1beta1::ResourceClaim::from(claim.clone());
        prop_assert_eq!(v1::ResourceClaim::from(beta.clone()), claim.clone());
        // And every exact field is where v1beta1 keeps it.
        for (b, v) in beta.spec.devices.requests.iter().zip(&claim.spec.devices.requests) {
            prop_assert_eq!(b.count, v.exactly.as_ref().and_then(|e| e.count));
            prop_assert_eq!(&b.first_available, &v.first_available);
        }
        let loaded = through_json("ResourceClaim", &claim);
        let expected = typed(&claim, |c| {
            c.api_version = v1::API_VERSION.into();
            c.kind = "ResourceClaim".into();
        });
        prop_assert_eq!(loaded, Object::ResourceClaim(expected));
    }

    #[test]
    fn templates_round_trip_v1_to_v1beta1_to_v1(template in v1_template()) {
        let beta = v1beta1::ResourceClaimTemplate::from(template.clone());
        prop_assert_eq!(v1::ResourceClaimTemplate::from(beta), template.clone());
        prop_assert_eq!(
            through_json("ResourceClaimTemplate", &template),
            Object::ResourceClaimTemplate(template)
        );
    }

    #[test]
    fn slices_round_trip_v1_to_v1beta1_to_v1(slice in v1_slice()) {
        let beta = v1beta1::ResourceSlice::from(slice.clone());
        prop_assert!(beta.spec.devices.iter().all(|d| d.basic.is_some()));
        prop_assert_eq!(v1::ResourceSlice::from(beta), slice.clone());
        prop_assert_eq!(through_json("ResourceSlice", &slice), Object::ResourceSlice(slice));
    }

    /// v1beta1 → v1 → v1beta1 for claims valid in v1beta1: a request is exact (it names its
    /// class) or first-available, never both; every device has `basic`.
    #[test]
    fn v1beta1_claims_round_trip_through_v1(claim in v1_claim()) {
        let mut claim = claim;
        for request in &mut claim.spec.devices.requests {
            if request.exactly.is_some() {
                request.first_available.clear();
            }
        }
        let beta = v1beta1::ResourceClaim::from(claim);
        let there_and_back = v1beta1::ResourceClaim::from(v1::ResourceClaim::from(beta.clone()));
        prop_assert_eq!(there_and_back, beta.clone());
        // Through the JSON of both versions.
        let json = serde_json::to_string(&beta).expect("json");
        let decoded: v1beta1::ResourceClaim = serde_json::from_str(&json).expect("decodes");
        prop_assert_eq!(decoded, beta);
    }

    #[test]
    fn v1beta1_slices_round_trip_through_v1(slice in v1_slice()) {
        let beta = v1beta1::ResourceSlice::from(slice);
        let there_and_back = v1beta1::ResourceSlice::from(v1::ResourceSlice::from(beta.clone()));
        prop_assert_eq!(there_and_back, beta);
    }
}

#[test]
fn generated_objects_are_valid_json_at_both_versions() {
    // A fixed sample through the strict decoders of both versions (deny_unknown_fields): what
    // one version writes, the other's decoder would refuse, so a shape mix-up fails here.
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    for _ in 0..32 {
        let slice = v1_slice().new_tree(&mut runner).expect("tree").current();
        let beta = serde_json::to_value(v1beta1::ResourceSlice::from(slice.clone())).expect("json");
        let v1_json = serde_json::to_value(&slice).expect("json");
        if !slice.spec.devices.is_empty() {
            assert!(serde_json::from_value::<v1::ResourceSlice>(beta.clone()).is_err());
            assert!(serde_json::from_value::<v1beta1::ResourceSlice>(v1_json.clone()).is_err());
        }
        let _: v1beta1::ResourceSlice = serde_json::from_value(beta).expect("v1beta1 decodes");
        let _: v1::ResourceSlice = serde_json::from_value(v1_json).expect("v1 decodes");
    }
}
