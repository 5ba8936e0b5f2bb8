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
fn generation_starts_at_one_only_where_upstream_sets_it() {
    let mut store = Store::new();
    let named = |name: &str| ObjectMeta {
        name: name.into(),
        namespace: "ns".into(),
        ..ObjectMeta::default()
    };
    let claim = store.create(claim("ns", "c"), "t").unwrap();
    assert_eq!(claim.metadata.generation, Some(1));
    let role = store
        .create(
            Role {
                metadata: named("r"),
                ..Role::default()
            },
            "t",
        )
        .unwrap();
    assert_eq!(role.metadata.generation, None);
    let binding = store
        .create(
            ClusterRoleBinding {
                metadata: named("b"),
                ..ClusterRoleBinding::default()
            },
            "t",
        )
        .unwrap();
    assert_eq!(binding.metadata.generation, None);
    let lease = store
        .create(
            Lease {
                metadata: named("l"),
                ..Lease::default()
            },
            "t",
        )
        .unwrap();
    assert_eq!(lease.metadata.generation, None);
    let event = store
        .create(
            CoreEvent {
                metadata: named("e"),
                ..CoreEvent::default()
            },
            "t",
        )
        .unwrap();
    assert_eq!(event.metadata.generation, None);
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

fn slice(name: &str, driver: &str, pool: &str) -> ResourceSlice {
    let mut s = ResourceSlice::default();
    s.metadata.name = name.into();
    s.spec.driver = driver.into();
    s.spec.pool.name = pool.into();
    s
}

fn pool_names(store: &Store, driver: &str, pool: &str) -> Vec<String> {
    store
        .pool_slices(driver, pool)
        .map(|s| s.metadata.name.clone())
        .collect()
}

#[test]
fn slices_are_indexed_by_pool_through_every_write_and_rollback() {
    let mut store = Store::new();
    store.create(slice("b", "d", "p"), "t").unwrap();
    store.create(slice("a", "d", "p"), "t").unwrap();
    store.create(slice("c", "d", "q"), "t").unwrap();
    store.create(slice("e", "other", "p"), "t").unwrap();
    assert_eq!(pool_names(&store, "d", "p"), ["a", "b"]);
    assert_eq!(pool_names(&store, "d", "q"), ["c"]);
    // A slice moved to another pool leaves the old one.
    store
        .modify::<ResourceSlice, _>("", "b", |s| s.spec.pool.name = "q".into())
        .unwrap();
    assert_eq!(pool_names(&store, "d", "p"), ["a"]);
    assert_eq!(pool_names(&store, "d", "q"), ["b", "c"]);
    // An update within the pool keeps it there.
    store
        .modify::<ResourceSlice, _>("", "a", |s| s.spec.pool.generation = 2)
        .unwrap();
    assert_eq!(pool_names(&store, "d", "p"), ["a"]);
    store
        .delete(&ObjectKey::new(Kind::ResourceSlice, "", "a"))
        .unwrap();
    assert!(pool_names(&store, "d", "p").is_empty());
    // Rolled-back writes are rolled back in the index too.
    store.begin_journal();
    store.create(slice("f", "d", "p"), "t").unwrap();
    store
        .delete(&ObjectKey::new(Kind::ResourceSlice, "", "c"))
        .unwrap();
    assert_eq!(pool_names(&store, "d", "p"), ["f"]);
    assert!(store.rollback());
    assert!(pool_names(&store, "d", "p").is_empty());
    assert_eq!(pool_names(&store, "d", "q"), ["b", "c"]);
    assert_eq!(pool_names(&store, "other", "p"), ["e"]);
}

#[test]
fn list_in_walks_one_namespace_and_get_finds_by_parts() {
    let mut store = Store::new();
    for (ns, name) in [("a", "x"), ("b", "y"), ("b", "z"), ("c", "w")] {
        store.create(claim(ns, name), "t").unwrap();
    }
    store.create(slice("s", "d", "p"), "t").unwrap();
    let names: Vec<&str> = store
        .list_in::<ResourceClaim>("b")
        .map(|c| c.metadata.name.as_str())
        .collect();
    assert_eq!(names, ["y", "z"]);
    assert_eq!(store.list_in::<ResourceClaim>("none").count(), 0);
    // Cluster-scoped kinds ignore the namespace.
    assert_eq!(store.list_in::<ResourceSlice>("b").count(), 1);
    assert!(store.get::<ResourceClaim>("b", "z").is_some());
    assert!(store.get::<ResourceClaim>("a", "z").is_none());
    assert!(store.get::<ResourceSlice>("ignored", "s").is_some());
}

#[test]
fn modify_writes_once_and_skips_no_op_changes() {
    let mut store = Store::new();
    store.create(claim("ns", "a"), "t").unwrap();
    store
        .modify::<ResourceClaim, _>("ns", "a", |c| c.metadata.labels.clear())
        .unwrap();
    assert_eq!(store.events_since(0).len(), 1);
    store
        .modify::<ResourceClaim, _>("ns", "a", |c| {
            c.metadata.labels.insert("k".into(), "v".into());
        })
        .unwrap();
    let events = store.events_since(1);
    assert_eq!(events.len(), 1);
    let Stored::ResourceClaim(written) = &events[0].object else {
        panic!("a claim event");
    };
    assert_eq!(written.metadata.resource_version, "2");
    assert_eq!(store.get::<ResourceClaim>("ns", "a"), Some(&**written));
}

#[test]
fn compaction_forgets_seen_events_but_not_during_a_journal() {
    let mut store = Store::new();
    for name in ["a", "b", "c", "d"] {
        store.create(claim("ns", name), "t").unwrap();
    }
    store.compact_events(2);
    assert_eq!(store.events_since(0).len(), 2);
    assert_eq!(store.events_since(0)[0].resource_version, 3);
    assert_eq!(store.events_since(3).len(), 1);
    store.begin_journal();
    store.compact_events(4);
    assert_eq!(store.events_since(0).len(), 2);
    store.end_journal();
    store.compact_events(4);
    assert!(store.events_since(0).is_empty());
    // The objects stay.
    assert_eq!(store.list::<ResourceClaim>().count(), 4);
}

#[test]
fn amend_meta_changes_the_latest_write_and_its_event_only() {
    let mut store = Store::new();
    let created = store.create(claim("ns", "a"), "t").expect("creates");
    let key = Store::key_of(&created);
    let rv = store.resource_version();
    assert!(store.amend_meta(&key, rv, |m| {
        m.labels.insert("amended".into(), "yes".into());
    }));
    assert_eq!(store.resource_version(), rv, "no new resourceVersion");
    let stored = store.get::<ResourceClaim>("ns", "a").expect("stored");
    assert_eq!(
        stored.metadata.labels.get("amended").map(String::as_str),
        Some("yes")
    );
    let event = &store.events_since(rv - 1)[0];
    assert_eq!(
        event
            .object
            .meta()
            .labels
            .get("amended")
            .map(String::as_str),
        Some("yes")
    );
    // A write that is no longer the object's latest is not amended.
    let mut next = stored.clone();
    next.metadata.annotations.insert("x".into(), "y".into());
    store.update(next).expect("updates");
    assert!(!store.amend_meta(&key, rv, |m| m.labels.clear()));
    assert!(
        !store
            .get::<ResourceClaim>("ns", "a")
            .expect("stored")
            .metadata
            .labels
            .is_empty()
    );
    // Nor is a missing object.
    let other = ObjectKey::new(Kind::ResourceClaim, "ns", "b");
    assert!(!store.amend_meta(&other, store.resource_version(), |m| m.labels.clear()));
}

#[test]
fn dependents_follow_owner_references_through_writes_deletes_and_rollbacks() {
    let owned = |name: &str, owners: &[&str]| {
        let mut c = claim("ns", name);
        c.metadata.owner_references = owners
            .iter()
            .map(|uid| allot_api::meta::v1::OwnerReference {
                uid: (*uid).into(),
                name: format!("owner-{uid}"),
                kind: "Pod".into(),
                api_version: "v1".into(),
                ..Default::default()
            })
            .collect();
        c
    };
    let names = |store: &Store, uid: &str| -> Vec<String> {
        store.dependents(uid).map(|k| k.name.clone()).collect()
    };
    let mut store = Store::new();
    store.create(owned("b", &["u1"]), "t").unwrap();
    store.create(owned("a", &["u1", "u2"]), "t").unwrap();
    store.create(owned("c", &[]), "t").unwrap();
    assert_eq!(names(&store, "u1"), ["a", "b"]);
    assert_eq!(names(&store, "u2"), ["a"]);
    assert!(!store.has_dependents("u3"));
    // An update that drops an owner (orphaning) moves the key.
    let mut a = store.get::<ResourceClaim>("ns", "a").unwrap().clone();
    a.metadata.owner_references.retain(|o| o.uid != "u1");
    store.update(a).unwrap();
    assert_eq!(names(&store, "u1"), ["b"]);
    store.begin_journal();
    store
        .delete(&ObjectKey::new(Kind::ResourceClaim, "ns", "b"))
        .unwrap();
    assert!(!store.has_dependents("u1"));
    // A rollback puts the index back with the object.
    store.rollback();
    assert_eq!(names(&store, "u1"), ["b"]);
    assert_eq!(names(&store, "u2"), ["a"]);
}
