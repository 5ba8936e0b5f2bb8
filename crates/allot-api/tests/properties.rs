//! Property tests for loading: a slice written as YAML (one or many documents) loads back to
//! the same value, and every recorded field line points into the document.

use std::collections::BTreeMap;

use allot_api::load::{LoadOptions, Object, load_str};
use allot_api::resource::v1::{
    Device, DeviceAttribute, DeviceCapacity, ResourcePool, ResourceSlice, ResourceSliceSpec,
};
use proptest::prelude::*;

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
        "[a-zA-Z0-9 ._-]{0,20}".prop_map(|v| DeviceAttribute {
            string_value: Some(v),
            ..Default::default()
        }),
        proptest::collection::vec("[a-z]{1,5}", 1..4).prop_map(|v| DeviceAttribute {
            string_values: v,
            ..Default::default()
        }),
    ]
}

fn device() -> impl Strategy<Value = Device> {
    (
        "[a-z][a-z0-9-]{0,10}",
        proptest::collection::btree_map("[a-z][a-zA-Z0-9]{0,8}", attribute(), 0..4),
        proptest::collection::btree_map("[a-z]{1,6}", 0i64..1_000_000, 0..3),
    )
        .prop_map(|(name, attributes, capacity)| Device {
            name,
            attributes,
            capacity: capacity
                .into_iter()
                .map(|(k, v)| {
                    let value = format!("{v}Mi").parse().expect("quantity");
                    (
                        k,
                        DeviceCapacity {
                            value,
                            request_policy: None,
                        },
                    )
                })
                .collect::<BTreeMap<_, _>>(),
            ..Default::default()
        })
}

fn slice() -> impl Strategy<Value = ResourceSlice> {
    ("[a-z]{1,8}", proptest::collection::vec(device(), 0..5)).prop_map(|(name, devices)| {
        ResourceSlice {
            api_version: "resource.k8s.io/v1".into(),
            kind: "ResourceSlice".into(),
            metadata: allot_api::meta::v1::ObjectMeta {
                name,
                ..Default::default()
            },
            spec: ResourceSliceSpec {
                driver: "gpu.example.com".into(),
                pool: ResourcePool {
                    name: "pool".into(),
                    generation: 1,
                    resource_slice_count: 1,
                },
                node_name: Some("node-1".into()),
                devices,
                ..Default::default()
            },
        }
    })
}

proptest! {
    #[test]
    fn yaml_round_trip(slices in proptest::collection::vec(slice(), 1..4)) {
        let text = slices
            .iter()
            .map(|s| serde_saphyr::to_string(s).expect("yaml"))
            .collect::<Vec<_>>()
            .join("---\n");
        let total_lines = u32::try_from(text.lines().count()).expect("lines");
        let loaded = load_str("p.yaml", &text, &LoadOptions::default());
        prop_assert!(loaded.errors.is_empty(), "{:?}\n{}", loaded.errors, text);
        prop_assert_eq!(loaded.documents.len(), slices.len());
        for (document, original) in loaded.documents.iter().zip(&slices) {
            match &document.object {
                Object::ResourceSlice(decoded) => prop_assert_eq!(decoded, original),
                other => prop_assert!(false, "unexpected {:?}", other),
            }
            prop_assert!(document.raw.line >= 1 && document.raw.line <= total_lines);
            for (i, device) in original.spec.devices.iter().enumerate() {
                let line = document.raw.line_of(&format!("spec.devices[{i}].name"));
                let text_line = text.lines().nth(line as usize - 1).unwrap_or_default();
                prop_assert!(text_line.contains(&device.name), "line {} is {:?}", line, text_line);
            }
        }
    }
}
