use super::*;

fn claim(ns: &str, name: &str) -> ResourceClaim {
    let mut c = ResourceClaim::default();
    c.metadata.namespace = ns.into();
    c.metadata.name = name.into();
    c
}

#[test]
fn create_assigns_identity_and_records_an_event() {
    let mut store = Store::new();
    let created = store
        .create(claim("ns", "a"), "2026-01-01T00:00:00Z")
        .unwrap();
    assert_eq!(created.metadata.resource_version, "1");
    assert!(!created.metadata.uid.is_empty());
    assert_eq!(created.api_version, "resource.k8s.io/v1");
    assert_eq!(store.get::<ResourceClaim>("ns", "a").unwrap(), &created);
    assert_eq!(store.events_since(0).len(), 1);
    assert_eq!(store.events_since(0)[0].event_type, EventType::Added);
    assert!(matches!(
        store.create(claim("ns", "a"), "t"),
        Err(StoreError::AlreadyExists { .. })
    ));
}

#[test]
fn stale_updates_conflict_and_no_op_updates_do_not_bump() {
    let mut store = Store::new();
    let created = store.create(claim("ns", "a"), "t").unwrap();
    let mut first = created.clone();
    first.metadata.labels.insert("x".into(), "1".into());
    let updated = store.update(first).unwrap();
    assert_eq!(updated.metadata.resource_version, "2");
    let mut stale = created;
    stale.metadata.labels.insert("x".into(), "2".into());
    assert!(matches!(
        store.update(stale),
        Err(StoreError::Conflict { .. })
    ));
    let same = store.update(updated.clone()).unwrap();
    assert_eq!(same.metadata.resource_version, "2");
    assert_eq!(store.events_since(0).len(), 2);
}

#[test]
fn generate_name_is_deterministic_and_unique() {
    let names = |_: ()| {
        let mut store = Store::new();
        (0..50)
            .map(|_| {
                let mut c = claim("ns", "");
                c.metadata.generate_name = "pod-gpu-".into();
                store.create(c, "t").unwrap().metadata.name
            })
            .collect::<Vec<_>>()
    };
    let a = names(());
    assert_eq!(a, names(()));
    let unique: std::collections::BTreeSet<_> = a.iter().collect();
    assert_eq!(unique.len(), a.len());
    assert!(a.iter().all(|n| n.len() == "pod-gpu-".len() + 5));
}

#[test]
fn list_is_per_kind_in_key_order_and_delete_logs() {
    let mut store = Store::new();
    store.create(claim("b", "x"), "t").unwrap();
    store.create(claim("a", "y"), "t").unwrap();
    let mut node = Node::default();
    node.metadata.name = "n".into();
    store.create(node, "t").unwrap();
    let names: Vec<_> = store
        .list::<ResourceClaim>()
        .map(|c| format!("{}/{}", c.metadata.namespace, c.metadata.name))
        .collect();
    assert_eq!(names, ["a/y", "b/x"]);
    assert_eq!(store.list::<Node>().count(), 1);
    let key = ObjectKey::new(Kind::ResourceClaim, "a", "y");
    store.delete(&key).unwrap();
    assert!(store.get::<ResourceClaim>("a", "y").is_none());
    let last = store.events_since(3);
    assert_eq!(last.len(), 1);
    assert_eq!(last[0].event_type, EventType::Deleted);
}

#[test]
fn to_json_puts_type_meta_first() {
    let mut store = Store::new();
    let created = store.create(claim("ns", "a"), "t").unwrap();
    let json = created.into_stored().to_json();
    let keys: Vec<_> = json.as_object().unwrap().keys().cloned().collect();
    assert_eq!(&keys[..2], ["apiVersion", "kind"]);
}
