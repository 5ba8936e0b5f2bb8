use super::*;
use allot_api::core::v1::{Node, Pod};

fn pod(name: &str, uid: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = name.into();
    pod.metadata.namespace = "ns".into();
    pod.metadata.uid = uid.into();
    pod
}

#[test]
fn recorded_events_correlate_and_name_cluster_scoped_objects_in_default() {
    let mut store = Store::new();
    let mut node = Node::default();
    node.metadata.name = "n1".into();
    node.metadata.uid = "u".into();
    let involved = reference(&node);
    for ms in [1_000, 5_000] {
        record(
            &mut store,
            SimTime(ms),
            &involved,
            EventKind::Normal,
            "NodeReady",
            "ready",
            Source::component(KUBELET),
        )
        .unwrap();
    }
    let events: Vec<&CoreEvent> = store.list::<CoreEvent>().collect();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].metadata.namespace, "default");
    assert_eq!(events[0].count, Some(2));
    assert_eq!(
        events[0].first_timestamp.as_deref(),
        Some("2026-01-01T00:00:01Z")
    );
    assert_eq!(
        events[0].last_timestamp.as_deref(),
        Some("2026-01-01T00:00:05Z")
    );
    assert_eq!(events[0].involved_object.namespace, None);
    assert_eq!(events[0].action, None);
    assert_eq!(events[0].related, None);
}

#[test]
fn event_names_are_stable_and_bounded() {
    let long = "p".repeat(253);
    let p = pod(&long, "uid-p");
    let involved = reference(&p);
    let e = |now| {
        event_object(
            &involved,
            EventKind::Normal,
            "Scheduled",
            "m",
            Source::component(SCHEDULER),
            now,
        )
    };
    let (a, b) = (e("t"), e("u"));
    assert_eq!(a.metadata.name, b.metadata.name);
    assert!(a.metadata.name.len() <= 253);
    assert!(a.metadata.name.starts_with(&"p".repeat(236)));
    assert_ne!(fnv64(&["a", "bc"]), fnv64(&["ab", "c"]));
    // The name is the object's name cut to 236 characters (not bytes), a dot and the hash in
    // 16 lowercase hex digits.
    for name in [
        "web-0",
        &"é".repeat(200),
        &"x".repeat(236),
        &"ü".repeat(240),
    ] {
        let p = pod(name, "uid-q");
        let involved = reference(&p);
        let e = event_object(
            &involved,
            EventKind::Normal,
            "Scheduled",
            "m",
            Source::component(SCHEDULER),
            "t",
        );
        let kept: String = name.chars().take(236).collect();
        let hash = fnv64(&["uid-q", "Scheduled", "m"]);
        assert_eq!(e.metadata.name, format!("{kept}.{hash:016x}"));
    }
    assert_eq!(fnv64(&[""]), 0xaf63_bd4c_8601_b7df);
}

#[test]
fn an_occurrence_carries_its_action_and_related_object() {
    let mut store = Store::new();
    let victim = reference(&pod("victim", "uid-v"));
    let preemptor = reference(&pod("preemptor", "uid-p"));
    let message = "Preempted by pod uid-p on node n1";
    let occurrence = Occurrence::new(
        &victim,
        EventKind::Normal,
        "Preempted",
        message,
        Source::component(SCHEDULER),
    )
    .related(&preemptor)
    .action("Preempting");
    occurrence.record(&mut store, SimTime(2_000)).unwrap();
    occurrence.record(&mut store, SimTime(3_000)).unwrap();
    let events: Vec<&CoreEvent> = store.list::<CoreEvent>().collect();
    assert_eq!(events.len(), 1, "a repeat counts on the same Event");
    let e = events[0];
    assert_eq!(e.count, Some(2));
    assert_eq!(e.metadata.namespace, "ns");
    assert_eq!(e.involved_object.name.as_deref(), Some("victim"));
    assert_eq!(e.action.as_deref(), Some("Preempting"));
    let related = e.related.as_ref().expect("related");
    assert_eq!(related.name.as_deref(), Some("preemptor"));
    assert_eq!(related.uid.as_deref(), Some("uid-p"));
    assert_eq!(related.kind.as_deref(), Some("Pod"));
    assert_eq!(e.message.as_deref(), Some(message));
    assert_eq!(e.reporting_component.as_deref(), Some(SCHEDULER));
}
