//! Protobuf bodies written from typed objects (`media::typed_body`, `typed_list_body`, the
//! watch's `watch_line`) are byte for byte those written from the rendered `Value` (what serve
//! wrote before, and still writes where a conversion needs the `Value`).

#[path = "../../allot-protobuf/benches/fixtures/mod.rs"]
mod fixtures;

use std::sync::Arc;

use allot_store::{Kind, Stored};
use proptest::prelude::*;
use serde_json::json;

use crate::media::{self, Format, Media, Shape};
use crate::resources::{ResourceInfo, info_of, lookup};
use crate::server::{list_value, object_body, render, watch_event};

const PROTOBUF: Media = Media {
    format: Format::Protobuf,
    shape: Shape::Object,
};

fn info(kind: Kind) -> &'static ResourceInfo {
    info_of(kind).expect("served")
}

/// The typed bodies of one object (GET, list of it and one more, watch frame) against the
/// `Value` path's.
fn check_agree(object: &Stored) {
    let info = info(object.kind());
    let value = render(info, object);
    let (content_type, via_value) = media::body(PROTOBUF, &value);
    assert_eq!(content_type, allot_protobuf::MEDIA_TYPE);
    let typed = media::typed_body(PROTOBUF, info, object).expect("typed");
    assert_eq!(typed, via_value);
    assert_eq!(object_body(PROTOBUF, info, object).1, via_value);

    let mut second = object.clone();
    second.meta_mut().name.push_str("-2");
    let objects = [object.clone(), second.clone()];
    let items = vec![value, render(info, &second)];
    let (_, list_via_value) = media::body(PROTOBUF, &list_value(info, "77", items));
    let typed_list = media::typed_list_body(PROTOBUF, info, "77", &objects).expect("typed");
    assert_eq!(typed_list, list_via_value);

    let via_value = watch_event(PROTOBUF, "MODIFIED", &render(info, object));
    let mut frame = Vec::new();
    allot_protobuf::watch_frame(&mut frame, "MODIFIED", &typed);
    assert_eq!(frame, via_value);
}

#[test]
fn typed_and_value_bodies_agree() {
    check_agree(&Stored::Pod(Arc::new(fixtures::pod())));
    check_agree(&Stored::ResourceSlice(Arc::new(fixtures::slice())));
    // An empty list.
    let info = info(Kind::Pod);
    let (_, empty) = media::body(PROTOBUF, &list_value(info, "5", Vec::new()));
    assert_eq!(
        media::typed_list_body(PROTOBUF, info, "5", &[]),
        Some(empty)
    );
}

#[test]
fn the_value_path_stays_where_it_is_needed() {
    let slice = Stored::ResourceSlice(Arc::new(fixtures::slice()));
    // An older version: converted from the stored one through the `Value`.
    let v1beta1 = lookup("resource.k8s.io", "v1beta1", "resourceslices").expect("v1beta1");
    assert_eq!(media::typed_body(PROTOBUF, v1beta1, &slice), None);
    assert_eq!(
        media::typed_list_body(PROTOBUF, v1beta1, "1", std::slice::from_ref(&slice)),
        None
    );
    let converted = render(v1beta1, &slice);
    assert_eq!(converted["apiVersion"], "resource.k8s.io/v1beta1");
    assert_eq!(
        object_body(PROTOBUF, v1beta1, &slice),
        media::body(PROTOBUF, &converted)
    );
    // Other shapes and formats.
    let info = info(Kind::ResourceSlice);
    for media in [
        Media::JSON,
        Media {
            format: Format::Protobuf,
            shape: Shape::Metadata,
        },
    ] {
        assert_eq!(media::typed_body(media, info, &slice), None);
    }
    let (_, json) = object_body(Media::JSON, info, &slice);
    assert_eq!(
        json,
        serde_json::to_vec(&render(info, &slice)).expect("json")
    );
    // A field upstream's wire format lacks: answered in JSON, as before.
    let mut lacking = fixtures::slice();
    lacking.spec.devices[0].consumes_counters = vec![
        serde_json::from_value(json!({"counterSet": "gpu", "compatibilityGroups": ["a"]}))
            .expect("consumption"),
    ];
    let lacking = Stored::ResourceSlice(Arc::new(lacking));
    assert_eq!(media::typed_body(PROTOBUF, info, &lacking), None);
    assert_eq!(object_body(PROTOBUF, info, &lacking).0, "application/json");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Names, labels, annotations and device counts vary; the bodies stay equal.
    #[test]
    fn typed_bodies_match_value_bodies(
        name in "[a-z][a-z0-9-]{0,20}",
        labels in proptest::collection::btree_map("[a-z]{1,8}", "[a-z0-9]{0,8}", 0..4),
        annotations in proptest::collection::btree_map("[a-z./]{1,12}", ".{0,16}", 0..3),
        devices in 0usize..10,
    ) {
        let mut pod = fixtures::pod();
        pod.metadata.name = name.clone();
        pod.metadata.labels = labels.clone().into_iter().collect();
        pod.metadata.annotations = annotations.into_iter().collect();
        check_agree(&Stored::Pod(Arc::new(pod)));
        let mut slice = fixtures::slice();
        slice.metadata.name = name;
        slice.metadata.labels = labels.into_iter().collect();
        slice.spec.devices.truncate(devices.min(8));
        check_agree(&Stored::ResourceSlice(Arc::new(slice)));
    }
}
