use super::*;
use crate::testkit::{FakeKubelet, events_of, pod_names, runtime, settle, store_from};

fn set(policy: &str) -> String {
    format!(
        r#"
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: web, namespace: default}}
spec:
  replicas: 3
  serviceName: nginx
  podManagementPolicy: {policy}
  selector: {{matchLabels: {{app: web}}}}
  template:
    metadata: {{labels: {{app: web}}}}
    spec: {{containers: [{{name: c, image: nginx}}]}}
  volumeClaimTemplates:
  - metadata: {{name: www}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 1Gi}}}}
"#
    )
}

fn run(yaml: &str, hold: bool) -> allot_runtime::Runtime {
    let kubelet = FakeKubelet {
        hold,
        ..FakeKubelet::default()
    };
    let mut rt = runtime(
        store_from(yaml),
        vec![Box::new(StatefulSetController::new()), Box::new(kubelet)],
    );
    settle(&mut rt);
    rt
}

#[test]
fn ordered_ready_creates_ordinals_in_order_with_their_claims() {
    let rt = run(&set("OrderedReady"), false);
    assert_eq!(pod_names(&rt.store, "default"), ["web-0", "web-1", "web-2"]);
    let claims: Vec<String> = rt
        .store
        .list_in::<PersistentVolumeClaim>("default")
        .map(|c| c.metadata.name.clone())
        .collect();
    assert_eq!(claims, ["www-web-0", "www-web-1", "www-web-2"]);
    let pod = rt.store.get::<Pod>("default", "web-1").unwrap();
    assert_eq!(pod.metadata.labels[POD_NAME_LABEL], "web-1");
    assert_eq!(pod.metadata.labels[POD_INDEX_LABEL], "1");
    assert_eq!(pod.spec.hostname.as_ref().unwrap(), "web-1");
    assert_eq!(pod.spec.subdomain.as_ref().unwrap(), "nginx");
    assert_eq!(
        pod.spec.volumes.as_ref().unwrap()[0]["persistentVolumeClaim"]["claimName"],
        "www-web-1"
    );
    // Each pod was created only after the one before it ran: the order of the Events.
    let created: Vec<String> = events_of(&rt.store, "StatefulSet", "web")
        .into_iter()
        .map(|e| e.1)
        .collect();
    assert_eq!(
        created,
        [
            "create Claim www-web-0 Pod web-0 in StatefulSet web success",
            "create Pod web-0 in StatefulSet web successful",
            "create Claim www-web-1 Pod web-1 in StatefulSet web success",
            "create Pod web-1 in StatefulSet web successful",
            "create Claim www-web-2 Pod web-2 in StatefulSet web success",
            "create Pod web-2 in StatefulSet web successful",
        ]
    );
    let s = rt.store.get::<StatefulSet>("default", "web").unwrap();
    assert_eq!(
        (
            s.status.replicas,
            s.status.ready_replicas,
            s.status.updated_replicas
        ),
        (3, 3, 3)
    );
    assert_eq!(s.status.current_revision, s.status.update_revision);
}

#[test]
fn ordered_ready_waits_for_an_unready_pod_and_parallel_does_not() {
    let rt = run(&set("OrderedReady"), true);
    assert_eq!(pod_names(&rt.store, "default"), ["web-0"]);
    let rt = run(&set("Parallel"), true);
    assert_eq!(pod_names(&rt.store, "default"), ["web-0", "web-1", "web-2"]);
}

#[test]
fn scaling_down_removes_the_highest_ordinal_and_keeps_claims() {
    let mut rt = run(&set("OrderedReady"), false);
    rt.store
        .modify::<StatefulSet, _>("default", "web", |s| s.spec.replicas = Some(1))
        .unwrap();
    settle(&mut rt);
    assert_eq!(pod_names(&rt.store, "default"), ["web-0"]);
    let deletes: Vec<String> = events_of(&rt.store, "StatefulSet", "web")
        .into_iter()
        .filter(|e| e.0 == "SuccessfulDelete")
        .map(|e| e.1)
        .collect();
    assert_eq!(
        deletes,
        [
            "delete Pod web-2 in StatefulSet web successful",
            "delete Pod web-1 in StatefulSet web successful"
        ]
    );
    assert_eq!(
        rt.store.list_in::<PersistentVolumeClaim>("default").count(),
        3
    );
}

#[test]
fn a_rolling_update_replaces_pods_from_the_highest_ordinal() {
    let mut rt = run(&set("OrderedReady"), false);
    let old = rt
        .store
        .get::<StatefulSet>("default", "web")
        .unwrap()
        .status
        .update_revision
        .clone();
    rt.store
        .modify::<StatefulSet, _>("default", "web", |s| {
            s.spec.template.spec.containers[0].image = Some("nginx:2".into());
        })
        .unwrap();
    settle(&mut rt);
    let s = rt.store.get::<StatefulSet>("default", "web").unwrap();
    assert_ne!(s.status.update_revision, old);
    assert_eq!(s.status.current_revision, s.status.update_revision);
    for name in ["web-0", "web-1", "web-2"] {
        let pod = rt.store.get::<Pod>("default", name).unwrap();
        assert_eq!(
            pod.metadata.labels[REVISION_LABEL],
            s.status.update_revision
        );
    }
    let deletes: Vec<String> = events_of(&rt.store, "StatefulSet", "web")
        .into_iter()
        .filter(|e| e.0 == "SuccessfulDelete")
        .map(|e| e.1)
        .collect();
    assert_eq!(deletes.len(), 3);
    assert!(
        deletes[0].contains("web-2") && deletes[2].contains("web-0"),
        "{deletes:?}"
    );
}
