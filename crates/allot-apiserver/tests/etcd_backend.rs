//! The etcd backend without HTTP: two mirrors of one etcd committing against each other
//! (conflicts, rebases, controller batches refused), restart, and leader election. Needs an
//! `etcd` binary (`ALLOT_ETCD`, else PATH; `cargo xtask test` provisions one); without one the
//! tests fail and say so.

#[path = "../../allot/tests/support/etcd.rs"]
mod etcd;

use std::time::{Duration, Instant};

use allot_api::core::v1::Namespace;
use allot_apiserver::Error;
use allot_apiserver::etcd::{EtcdBackend, EtcdOptions};
use allot_apiserver::lease::ElectionOptions;
use allot_apiserver::storage::Backend;
use allot_store::Store;

fn options(url: &str, identity: &str) -> EtcdOptions {
    let mut options = EtcdOptions::new(vec![url.to_string()]);
    options.election = ElectionOptions {
        identity: identity.into(),
        lease_duration: Duration::from_secs(3),
        renew_deadline: Duration::from_secs(2),
        retry_period: Duration::from_millis(200),
    };
    options
}

fn namespace(name: &str) -> Namespace {
    let mut ns = Namespace::default();
    ns.metadata.name = name.into();
    ns
}

/// Syncs until `check` holds (the watch is asynchronous).
fn sync_until(backend: &mut EtcdBackend, store: &mut Store, check: impl Fn(&Store) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check(store) {
        assert!(Instant::now() < deadline, "the mirror did not catch up");
        backend.sync(store).expect("syncs");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn label(store: &mut Store, name: &str, value: &str) {
    store
        .modify::<Namespace, ()>("", name, |ns| {
            ns.metadata.labels.insert("v".into(), value.into());
        })
        .expect("modifies");
}

#[test]
fn two_mirrors_commit_rebase_and_conflict() {
    let binary = etcd::binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = etcd::Etcd::start(&binary, dir.path());
    let (mut a, mut sa) = EtcdBackend::open(&options(&server.url, "a")).expect("a opens");
    let (mut b, mut sb) = EtcdBackend::open(&options(&server.url, "b")).expect("b opens");

    // A create on A lands at the revision A's mirror gave it; B sees the same object.
    let local = sa.create(namespace("one"), "t").expect("creates");
    let committed = a.commit(&mut sa, true).expect("commits");
    // A Lease renewal may have taken the revision the mirror chose: then the commit reports
    // where the object landed.
    let created = sa.get::<Namespace>("", "one").expect("a has it").clone();
    if created.metadata.resource_version != local.metadata.resource_version {
        let (old, object) = committed.renumbered.first().expect("renumbered");
        assert_eq!(old.to_string(), local.metadata.resource_version);
        assert_eq!(
            object.meta().resource_version,
            created.metadata.resource_version
        );
    }
    sync_until(&mut b, &mut sb, |s| s.get::<Namespace>("", "one").is_some());
    let seen = sb.get::<Namespace>("", "one").expect("b has it").clone();
    assert_eq!(
        seen.metadata.resource_version,
        created.metadata.resource_version
    );
    assert_eq!(seen.metadata.uid, created.metadata.uid);

    // The same object changed on both from the same version: the second commit conflicts and
    // the loser's mirror ends up with the winner's version.
    sync_until(&mut a, &mut sa, |s| {
        s.resource_version() >= sb.resource_version()
    });
    sync_until(&mut b, &mut sb, |s| {
        s.resource_version() >= sa.resource_version()
    });
    label(&mut sa, "one", "a");
    label(&mut sb, "one", "b");
    a.commit(&mut sa, true).expect("a wins");
    match b.commit(&mut sb, true) {
        Err(Error::Conflict { .. }) => {}
        other => panic!("expected a conflict, got {other:?}"),
    }
    let label_on_b = sb
        .get::<Namespace>("", "one")
        .and_then(|ns| ns.metadata.labels.get("v").cloned());
    assert_eq!(label_on_b.as_deref(), Some("a"));
    assert!(sb.uncommitted().is_empty());

    // Different objects from the same head: an API write is re-applied on top (new
    // resourceVersion and uid, reported for the response) ...
    sync_until(&mut b, &mut sb, |s| {
        s.resource_version() >= sa.resource_version()
    });
    sa.create(namespace("from-a"), "t").expect("creates");
    let local = sb.create(namespace("from-b"), "t").expect("creates");
    let winner = a.commit(&mut sa, true).expect("a commits");
    assert!(winner.renumbered.len() <= 1);
    let rebased = b.commit(&mut sb, true).expect("b rebases");
    let (old, committed) = rebased.renumbered.first().expect("renumbered");
    assert_eq!(old.to_string(), local.metadata.resource_version);
    let from_a = sb
        .get::<Namespace>("", "from-a")
        .expect("b caught up")
        .clone();
    assert!(
        committed
            .meta()
            .resource_version
            .parse::<u64>()
            .unwrap_or(0)
            > from_a
                .metadata
                .resource_version
                .parse::<u64>()
                .unwrap_or(u64::MAX)
    );
    assert_ne!(committed.meta().uid, from_a.metadata.uid);

    // ... while a controller batch decided on a stale state is refused and taken back.
    sync_until(&mut a, &mut sa, |s| {
        s.get::<Namespace>("", "from-b").is_some()
    });
    label(&mut sa, "from-a", "x");
    sb.create(namespace("controller-b"), "t").expect("creates");
    a.commit(&mut sa, true).expect("a commits");
    match b.commit(&mut sb, false) {
        Err(Error::Conflict { .. }) => {}
        other => panic!("expected the batch refused, got {other:?}"),
    }
    assert!(sb.get::<Namespace>("", "controller-b").is_none());
    let on_b = sb
        .get::<Namespace>("", "from-a")
        .and_then(|ns| ns.metadata.labels.get("v").cloned());
    assert_eq!(on_b.as_deref(), Some("x"));

    // A fresh mirror loads exactly what both committed, and refuses watches from before.
    let (c, sc) = EtcdBackend::open(&options(&server.url, "c")).expect("c opens");
    let names = |s: &Store| -> Vec<(String, String, String)> {
        s.list::<Namespace>()
            .map(|n| {
                (
                    n.metadata.name.clone(),
                    n.metadata.resource_version.clone(),
                    n.metadata.uid.clone(),
                )
            })
            .collect()
    };
    sync_until(&mut b, &mut sb, |s| {
        s.resource_version() >= sc.resource_version()
    });
    assert_eq!(names(&sc), names(&sb));
    assert_eq!(
        names(&sc).iter().map(|n| n.0.as_str()).collect::<Vec<_>>(),
        ["from-a", "from-b", "one"]
    );
    assert_eq!(c.oldest_resource_version(), sc.resource_version());
}

#[test]
fn one_leader_at_a_time_and_a_standby_takes_over() {
    let binary = etcd::binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = etcd::Etcd::start(&binary, dir.path());
    let (a, _sa) = EtcdBackend::open(&options(&server.url, "a")).expect("a opens");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !a.is_leader() {
        assert!(Instant::now() < deadline, "a never led");
        std::thread::sleep(Duration::from_millis(50));
    }
    let (b, _sb) = EtcdBackend::open(&options(&server.url, "b")).expect("b opens");
    // Never two leaders; while a renews in time (a loaded machine may delay it past the
    // deadline, and then a stops leading first), b does not lead.
    let until = Instant::now() + Duration::from_secs(3);
    let mut a_led_throughout = true;
    while Instant::now() < until {
        let (a_leads, b_leads) = (a.is_leader(), b.is_leader());
        assert!(!(a_leads && b_leads), "two leaders");
        a_led_throughout &= a_leads;
        std::thread::sleep(Duration::from_millis(50));
    }
    if !a_led_throughout {
        eprintln!("a missed a renewal deadline (a loaded machine): skipping the hand-over check");
        return;
    }
    // a stops (its runtime, renewals included, goes away): b takes over after the lease
    // duration of its own observation.
    let stopped = Instant::now();
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !b.is_leader() {
        assert!(Instant::now() < deadline, "b never took over");
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        stopped.elapsed() >= Duration::from_secs(2),
        "b took over before a's lease could have expired: {:?}",
        stopped.elapsed()
    );
}

#[test]
fn an_unreachable_etcd_is_an_error_even_inside_the_server_runtime() {
    let port = etcd::free_port();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Server::bind opens the storage inside the HTTP runtime: the failed backend's own
    // runtime must not be dropped there with a panic.
    let result = runtime.block_on(async {
        EtcdBackend::open(&options(&format!("http://127.0.0.1:{port}"), "x")).map(|_| ())
    });
    match result {
        Err(Error::Etcd { endpoints, .. }) => assert!(endpoints.contains(&port.to_string())),
        other => panic!("expected an etcd error, got {other:?}"),
    }
}

#[test]
fn a_large_store_loads_in_pages() {
    let binary = etcd::binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = etcd::Etcd::start(&binary, dir.path());
    let (mut a, mut sa) = EtcdBackend::open(&options(&server.url, "a")).expect("a opens");
    // More objects than one load page (500), each big enough that all of them pass gRPC's
    // 4 MiB response limit.
    let text = "x".repeat(8192);
    for i in 0..700 {
        let mut ns = namespace(&format!("ns-{i:04}"));
        ns.metadata
            .annotations
            .insert("padding".into(), text.clone());
        sa.create(ns, "t").expect("creates");
        a.commit(&mut sa, true).expect("commits");
    }
    let (_b, sb) = EtcdBackend::open(&options(&server.url, "b")).expect("b loads");
    let count = sb.list::<Namespace>().count();
    assert_eq!(count, 700);
    let last = sb.get::<Namespace>("", "ns-0699").expect("the last one");
    let committed = sa.get::<Namespace>("", "ns-0699").expect("on a");
    assert_eq!(
        last.metadata.resource_version,
        committed.metadata.resource_version
    );
}
