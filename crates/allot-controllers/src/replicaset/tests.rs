use super::*;
use crate::testkit::{FakeKubelet, events_of, pod_names, runtime, settle, store_from};

const RS: &str = r#"
apiVersion: apps/v1
kind: ReplicaSet
metadata: {name: web, namespace: default}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

fn run(store: Store, hold: bool) -> allot_runtime::Runtime {
    let kubelet = FakeKubelet {
        hold,
        ..FakeKubelet::default()
    };
    let mut rt = runtime(
        store,
        vec![Box::new(ReplicaSetController::new()), Box::new(kubelet)],
    );
    settle(&mut rt);
    rt
}

#[test]
fn creates_named_owned_pods_and_counts_them() {
    let rt = run(store_from(RS), false);
    let names = pod_names(&rt.store, "default");
    assert_eq!(names.len(), 3);
    let rs = rt.store.get::<ReplicaSet>("default", "web").unwrap();
    for name in &names {
        assert!(name.starts_with("web-") && name.len() == 9, "{name}");
        let pod = rt.store.get::<Pod>("default", name).unwrap();
        let owner = controller_of(&pod.metadata).unwrap();
        assert_eq!(
            (owner.kind.as_str(), owner.uid.as_str()),
            ("ReplicaSet", rs.metadata.uid.as_str())
        );
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
    assert_eq!(rs.status.replicas, 3);
    assert_eq!(rs.status.ready_replicas, 3);
    assert_eq!(rs.status.available_replicas, 3);
    assert_eq!(rs.status.fully_labeled_replicas, 3);
    assert_eq!(rs.status.observed_generation, 1);
    let events = events_of(&rt.store, "ReplicaSet", "web");
    assert_eq!(events.len(), 3);
    for (reason, message) in &events {
        assert_eq!(reason, "SuccessfulCreate");
        assert!(
            names
                .iter()
                .any(|n| *message == format!("Created pod: {n}")),
            "{message}"
        );
    }
}

#[test]
fn scales_down_unready_pods_first_and_adopts_orphans() {
    let mut rt = run(store_from(RS), true);
    // Nothing started: scaling to 1 deletes the newest two (all pending, unassigned).
    let names = pod_names(&rt.store, "default");
    rt.store
        .modify::<ReplicaSet, _>("default", "web", |r| r.spec.replicas = Some(1))
        .unwrap();
    settle(&mut rt);
    let left = pod_names(&rt.store, "default");
    assert_eq!(left.len(), 1);
    assert!(names.contains(&left[0]));
    let deletes = events_of(&rt.store, "ReplicaSet", "web")
        .into_iter()
        .filter(|(r, _)| r == "SuccessfulDelete")
        .count();
    assert_eq!(deletes, 2);
    // A pod without a controller that the selector matches is adopted, not duplicated.
    let mut orphan = Pod::default();
    orphan.metadata.name = "stray".into();
    orphan.metadata.namespace = "default".into();
    orphan.metadata.labels.insert("app".into(), "web".into());
    rt.store.create(orphan, "t").unwrap();
    rt.store
        .modify::<ReplicaSet, _>("default", "web", |r| r.spec.replicas = Some(2))
        .unwrap();
    settle(&mut rt);
    let stray = rt.store.get::<Pod>("default", "stray").unwrap();
    assert_eq!(controller_of(&stray.metadata).unwrap().name, "web");
    assert_eq!(pod_names(&rt.store, "default").len(), 2);
}

#[test]
fn deletion_order_follows_upstream_ranks() {
    let now = SimTime(3_600_000);
    let pod = |name: &str, node: Option<&str>, phase: &str, ready: bool| {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.uid = name.into();
        p.spec.node_name = node.map(str::to_string);
        p.status.phase = Some(phase.into());
        if ready {
            p.status.conditions.push(allot_api::core::v1::PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_transition_time: Some(SimTime::ZERO.rfc3339()),
                ..Default::default()
            });
        }
        p
    };
    let pods = [
        pod("running-ready-a", Some("n1"), "Running", true),
        pod("pending", Some("n1"), "Pending", false),
        pod("unassigned", None, "Pending", false),
        pod("running-unready", Some("n2"), "Running", false),
        pod("running-ready-b", Some("n2"), "Running", true),
        pod("doubled", Some("n1"), "Running", true),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let order: Vec<&str> = deletion_order(&refs, &pods, now)
        .iter()
        .map(|p| p.metadata.name.as_str())
        .collect();
    // Unassigned, pending, not ready; then ready pods on the fuller node first.
    assert_eq!(
        order,
        [
            "unassigned",
            "pending",
            "running-unready",
            "doubled",
            "running-ready-a",
            "running-ready-b"
        ]
    );
}
