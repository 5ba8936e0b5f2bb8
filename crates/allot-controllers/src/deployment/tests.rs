use super::*;
use crate::ReplicaSetController;
use crate::testkit::{FakeKubelet, events_of, runtime, settle, store_from};

fn deployment(strategy: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: 4
  selector: {{matchLabels: {{app: web}}}}
  strategy: {strategy}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: nginx:1}}]}}
"#
    )
}

fn run(store: Store) -> allot_runtime::Runtime {
    let mut rt = runtime(
        store,
        vec![
            Box::new(DeploymentController::new()),
            Box::new(ReplicaSetController::new()),
            Box::new(FakeKubelet::new()),
        ],
    );
    settle(&mut rt);
    rt
}

fn sets(store: &Store) -> Vec<(String, i32, String)> {
    store
        .list_in::<ReplicaSet>("default")
        .map(|rs| {
            (
                rs.metadata.name.clone(),
                rs.spec.replicas.unwrap_or(0),
                rs.metadata
                    .annotations
                    .get(REVISION)
                    .cloned()
                    .unwrap_or_default(),
            )
        })
        .collect()
}

fn roll(rt: &mut allot_runtime::Runtime, image: &str) {
    rt.store
        .modify::<Deployment, _>("default", "web", |d| {
            d.spec.template.spec.containers[0].image = Some(image.into());
            d.metadata.generation = Some(d.metadata.generation.unwrap_or(1) + 1);
        })
        .unwrap();
    settle(rt);
}

#[test]
fn a_new_deployment_gets_one_hashed_replica_set_and_becomes_available() {
    let rt = run(store_from(&deployment("{}")));
    let d = rt.store.get::<Deployment>("default", "web").unwrap();
    let list = sets(&rt.store);
    assert_eq!(list.len(), 1);
    let (name, replicas, revision) = &list[0];
    let rs = rt.store.get::<ReplicaSet>("default", name).unwrap();
    let hash = rs.metadata.labels[POD_TEMPLATE_HASH].clone();
    assert_eq!(*name, format!("web-{hash}"));
    assert_eq!(
        rs.spec.selector.as_ref().unwrap().match_labels[POD_TEMPLATE_HASH],
        hash
    );
    assert_eq!((*replicas, revision.as_str()), (4, "1"));
    assert_eq!(rs.metadata.annotations[DESIRED_REPLICAS], "4");
    assert_eq!(rs.metadata.annotations[MAX_REPLICAS], "5");
    assert_eq!(d.metadata.annotations[REVISION], "1");
    assert_eq!(
        (
            d.status.replicas,
            d.status.updated_replicas,
            d.status.available_replicas
        ),
        (4, 4, 4)
    );
    let conditions: Vec<(&str, &str, &str)> = d
        .status
        .conditions
        .iter()
        .map(|c| (c.type_.as_str(), c.status.as_str(), c.reason.as_str()))
        .collect();
    assert!(conditions.contains(&("Available", "True", "MinimumReplicasAvailable")));
    assert!(conditions.contains(&("Progressing", "True", "NewReplicaSetAvailable")));
    assert_eq!(
        events_of(&rt.store, "Deployment", "web"),
        [(
            "ScalingReplicaSet".to_string(),
            format!("Scaled up replica set {name} from 0 to 4")
        )]
    );
}

#[test]
fn a_rolling_update_stays_within_surge_and_unavailability() {
    let mut rt = run(store_from(&deployment("{}")));
    let start = rt.store.resource_version();
    roll(&mut rt, "nginx:2");
    // 25% of 4: one pod above and one below the desired count at any moment.
    let mut pods: std::collections::BTreeMap<String, bool> = Default::default();
    for e in rt.store.events_since(start) {
        if let Stored::Pod(p) = &e.object {
            if e.event_type == allot_store::EventType::Deleted {
                pods.remove(&p.metadata.name);
            } else {
                pods.insert(p.metadata.name.clone(), crate::workload::is_ready(p));
            }
            assert!(pods.len() <= 5, "surge exceeded: {pods:?}");
        }
    }
    let list = sets(&rt.store);
    assert_eq!(list.len(), 2);
    let new = list.iter().find(|s| s.2 == "2").unwrap();
    let old = list.iter().find(|s| s.2 == "1").unwrap();
    assert_eq!((new.1, old.1), (4, 0));
    let d = rt.store.get::<Deployment>("default", "web").unwrap();
    assert_eq!(d.metadata.annotations[REVISION], "2");
    assert_eq!((d.status.replicas, d.status.updated_replicas), (4, 4));
    let scaling: Vec<String> = events_of(&rt.store, "Deployment", "web")
        .into_iter()
        .map(|(_, m)| m)
        .collect();
    assert!(
        scaling.contains(&format!("Scaled up replica set {} from 0 to 1", new.0)),
        "{scaling:?}"
    );
    assert!(
        scaling.contains(&format!("Scaled down replica set {} from 4 to 3", old.0)),
        "{scaling:?}"
    );
    // Rolling back to the first template reuses the old ReplicaSet with a new revision.
    roll(&mut rt, "nginx:1");
    let list = sets(&rt.store);
    assert_eq!(list.len(), 2);
    assert!(
        list.iter().any(|s| s.0 == old.0 && s.1 == 4 && s.2 == "3"),
        "{list:?}"
    );
}

#[test]
fn recreate_scales_the_old_set_to_zero_before_the_new_one_starts() {
    let mut rt = run(store_from(&deployment("{type: Recreate}")));
    let start = rt.store.resource_version();
    roll(&mut rt, "nginx:2");
    let old_name = sets(&rt.store).into_iter().find(|s| s.2 == "1").unwrap().0;
    let mut live: std::collections::BTreeSet<String> = Default::default();
    for e in rt.store.events_since(start) {
        if let Stored::Pod(p) = &e.object {
            let name = p.metadata.name.clone();
            if e.event_type == allot_store::EventType::Deleted {
                live.remove(&name);
                continue;
            }
            if e.event_type == allot_store::EventType::Added && !name.starts_with(&old_name) {
                assert!(
                    live.iter().all(|n| !n.starts_with(&old_name)),
                    "{name} started while old pods ran: {live:?}"
                );
            }
            live.insert(name);
        }
    }
    let d = rt.store.get::<Deployment>("default", "web").unwrap();
    assert_eq!((d.status.replicas, d.status.updated_replicas), (4, 4));
}

#[test]
fn scaling_moves_the_active_replica_set_and_history_is_trimmed() {
    let mut store = store_from(&deployment("{}"));
    store
        .modify::<Deployment, _>("default", "web", |d| {
            d.spec.revision_history_limit = Some(1)
        })
        .unwrap();
    let mut rt = run(store);
    for image in ["nginx:2", "nginx:3", "nginx:4"] {
        roll(&mut rt, image);
    }
    // The newest and one old one are kept.
    let list = sets(&rt.store);
    assert_eq!(list.len(), 2, "{list:?}");
    rt.store
        .modify::<Deployment, _>("default", "web", |d| d.spec.replicas = Some(7))
        .unwrap();
    settle(&mut rt);
    let d = rt.store.get::<Deployment>("default", "web").unwrap();
    assert_eq!(d.status.replicas, 7);
    let new = sets(&rt.store).into_iter().find(|s| s.2 == "4").unwrap();
    assert_eq!(new.1, 7);
}

#[test]
fn fenceposts_resolve_percentages_as_upstream() {
    let mut d: Deployment = Deployment::default();
    allot_api::defaults::workloads::default_deployment(&mut d);
    d.spec.replicas = Some(10);
    assert_eq!(fenceposts(&d), (3, 2));
    d.spec.strategy.rolling_update = Some(allot_api::apps::v1::RollingUpdateDeployment {
        max_unavailable: Some(allot_api::intstr::IntOrString::Int(0)),
        max_surge: Some(allot_api::intstr::IntOrString::String("0%".into())),
    });
    assert_eq!(fenceposts(&d), (0, 1));
    assert_eq!(max_unavailable(&d), 1);
}

#[test]
fn templates_equal_ignoring_only_the_hash_label() {
    let mut a = PodTemplateSpec::default();
    a.metadata.labels.insert("app".into(), "web".into());
    a.spec.containers.push(Default::default());
    a.spec.containers[0].image = Some("web:1".into());
    let mut b = a.clone();
    b.metadata
        .labels
        .insert(POD_TEMPLATE_HASH.into(), "5d4f8".into());
    assert!(equal_ignore_hash(&a, &b));
    let mut other_label = b.clone();
    other_label
        .metadata
        .labels
        .insert("tier".into(), "front".into());
    assert!(!equal_ignore_hash(&a, &other_label));
    let mut other_image = b.clone();
    other_image.spec.containers[0].image = Some("web:2".into());
    assert!(!equal_ignore_hash(&a, &other_image));
    let mut other_annotation = b;
    other_annotation
        .metadata
        .annotations
        .insert("note".into(), "x".into());
    assert!(!equal_ignore_hash(&a, &other_annotation));
}
