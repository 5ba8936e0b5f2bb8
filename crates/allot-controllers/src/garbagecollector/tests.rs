use super::*;
use crate::testkit::{FakeKubelet, pod_names, runtime, settle, store_from};
use crate::{DeploymentController, ReplicaSetController};
use allot_api::apps::v1::{Deployment, ReplicaSet};
use allot_api::core::v1::Pod;
use allot_store::Kind;

const DEPLOYMENT: &str = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx}]}
"#;

fn run() -> allot_runtime::Runtime {
    let mut rt = runtime(
        store_from(DEPLOYMENT),
        vec![
            Box::new(DeploymentController::new()),
            Box::new(ReplicaSetController::new()),
            Box::new(FakeKubelet::new()),
            Box::new(GarbageCollector::new()),
        ],
    );
    settle(&mut rt);
    assert_eq!(pod_names(&rt.store, "default").len(), 2);
    rt
}

fn delete(rt: &mut allot_runtime::Runtime, propagation: Propagation) {
    let key = ObjectKey::new(Kind::Deployment, "default", "web");
    let now = rt.now();
    delete_with(&mut rt.store, &key, propagation, now).unwrap();
    settle(rt);
}

#[test]
fn background_deletion_collects_the_replica_sets_and_pods() {
    let mut rt = run();
    delete(&mut rt, Propagation::Background);
    assert!(rt.store.get::<Deployment>("default", "web").is_none());
    assert_eq!(rt.store.list_in::<ReplicaSet>("default").count(), 0);
    assert!(pod_names(&rt.store, "default").is_empty());
}

#[test]
fn foreground_deletion_keeps_the_owner_until_its_dependents_are_gone() {
    let mut rt = run();
    let start = rt.store.resource_version();
    delete(&mut rt, Propagation::Foreground);
    assert!(rt.store.get::<Deployment>("default", "web").is_none());
    assert!(pod_names(&rt.store, "default").is_empty());
    // The Deployment went last.
    let order: Vec<(Kind, allot_store::EventType)> = rt
        .store
        .events_since(start)
        .iter()
        .filter(|e| e.event_type == allot_store::EventType::Deleted)
        .map(|e| (e.key.kind, e.event_type))
        .collect();
    assert_eq!(order.last().unwrap().0, Kind::Deployment, "{order:?}");
}

#[test]
fn orphaning_leaves_the_dependents_without_the_owner() {
    let mut rt = run();
    delete(&mut rt, Propagation::Orphan);
    assert!(rt.store.get::<Deployment>("default", "web").is_none());
    let rs: Vec<&ReplicaSet> = rt.store.list_in::<ReplicaSet>("default").collect();
    assert_eq!(rs.len(), 1);
    assert!(rs[0].metadata.owner_references.is_empty());
    // The pods still belong to their ReplicaSet.
    for name in pod_names(&rt.store, "default") {
        let pod = rt.store.get::<Pod>("default", &name).unwrap();
        assert_eq!(pod.metadata.owner_references[0].uid, rs[0].metadata.uid);
    }
}

#[test]
fn a_dependent_created_for_a_gone_owner_is_collected() {
    let mut rt = run();
    let mut pod = Pod::default();
    pod.metadata.name = "late".into();
    pod.metadata.namespace = "default".into();
    pod.metadata
        .owner_references
        .push(allot_api::meta::v1::OwnerReference {
            api_version: "apps/v1".into(),
            kind: "ReplicaSet".into(),
            name: "gone".into(),
            uid: "no-such-uid".into(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        });
    rt.store.create(pod, "t").unwrap();
    settle(&mut rt);
    assert!(rt.store.get::<Pod>("default", "late").is_none());
}
