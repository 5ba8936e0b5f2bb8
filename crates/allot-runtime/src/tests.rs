use super::*;
use allot_store::Stored;
use allot_store::{Kind, Resource};

#[test]
fn rfc3339_round_trips_and_starts_at_the_epoch() {
    assert_eq!(SimTime::ZERO.rfc3339(), "2026-01-01T00:00:00Z");
    let t = SimTime::ZERO.plus_seconds(86_400 * 59 + 3661);
    assert_eq!(t.rfc3339(), "2026-03-01T01:01:01Z");
    assert_eq!(SimTime::parse_rfc3339(&t.rfc3339()), Some(t));
    assert_eq!(SimTime::parse_rfc3339("2025-12-31T23:59:59Z"), None);
    assert_eq!(SimTime::parse_rfc3339("garbage"), None);
}

#[test]
fn rfc3339_remembers_only_the_same_second() {
    let a = SimTime::ZERO.plus_millis(1_500);
    let b = SimTime::ZERO.plus_seconds(2);
    // Same second, other milliseconds: the same text; another second: its own text, also
    // when the times alternate.
    for _ in 0..2 {
        assert_eq!(a.rfc3339(), "2026-01-01T00:00:01Z");
        assert_eq!(
            SimTime::ZERO.plus_millis(1_999).rfc3339(),
            "2026-01-01T00:00:01Z"
        );
        assert_eq!(b.rfc3339(), "2026-01-01T00:00:02Z");
        assert_eq!(a.rfc3339(), a.format_rfc3339());
        assert_eq!(b.rfc3339(), b.format_rfc3339());
    }
}

/// Labels every node it sees, then asks to come back after 10 s until 3 visits.
struct Labeler {
    visits: Vec<(SimTime, String)>,
}

impl Controller for Labeler {
    fn name(&self) -> &'static str {
        "labeler"
    }
    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        if event.key.kind == Kind::Node {
            vec![event.key.clone()]
        } else {
            vec![]
        }
    }
    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.visits.push((ctx.now, key.name.clone()));
        let have = store
            .get::<allot_api::core::v1::Node>("", &key.name)
            .map_or(0, |n| n.metadata.labels.len());
        if have >= 3 {
            return Ok(Action::Done);
        }
        let count = store
            .modify::<allot_api::core::v1::Node, _>("", &key.name, |n| {
                let c = n.metadata.labels.len();
                n.metadata
                    .labels
                    .insert(format!("visit-{c}"), "true".into());
                c + 1
            })
            .map_err(|e| e.to_string())?;
        Ok(if count < 3 {
            Action::RequeueAfterMillis(10_000)
        } else {
            Action::Done
        })
    }
}

#[test]
fn events_wake_controllers_and_requeues_advance_the_clock() {
    let mut store = Store::new();
    let mut node = allot_api::core::v1::Node::default();
    node.metadata.name = "n1".into();
    store.create(node, "t").unwrap();
    let mut rt = Runtime::new(
        store,
        vec![Box::new(Labeler { visits: vec![] })],
        SimTime::ZERO,
    );
    rt.run_until_idle(SimTime::ZERO.plus_seconds(3600), 1000)
        .unwrap();
    let node = rt.store.get::<allot_api::core::v1::Node>("", "n1").unwrap();
    assert_eq!(node.metadata.labels.len(), 3);
    // The label writes are events too, so the item is woken right away; requeues collapse
    // with event wake-ups, so the clock only moves when nothing is due now.
    assert_eq!(rt.now(), SimTime::ZERO);
    assert_eq!(rt.reconciles(), 4);
    assert_eq!(node.clone().into_stored().kind(), Kind::Node);
    let _ = Stored::Node(std::sync::Arc::new(node.clone()));
}

struct Spinner;

impl Controller for Spinner {
    fn name(&self) -> &'static str {
        "spinner"
    }
    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        vec![event.key.clone()]
    }
    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        _ctx: &Context,
    ) -> Result<Action, String> {
        store
            .modify::<allot_api::core::v1::Node, _>("", &key.name, |n| {
                let c = n.metadata.labels.len();
                n.metadata.labels.insert(format!("l{c}"), "x".into());
            })
            .map_err(|e| e.to_string())?;
        Ok(Action::Done)
    }
}

#[test]
fn a_loop_that_wakes_itself_forever_is_reported() {
    let mut store = Store::new();
    let mut node = allot_api::core::v1::Node::default();
    node.metadata.name = "n1".into();
    store.create(node, "t").unwrap();
    let mut rt = Runtime::new(store, vec![Box::new(Spinner)], SimTime::ZERO);
    assert!(matches!(
        rt.run_due(50),
        Err(RuntimeError::NoProgress { .. })
    ));
}

#[test]
fn advancing_in_slices_runs_what_advance_to_runs_and_lets_a_loop_run_on() {
    // The same timers, in slices of one reconcile: the same clock, errors and next due time.
    let mut rt = Runtime::new(
        Store::new(),
        vec![Box::new(Timer { fired: vec![] })],
        SimTime::ZERO,
    );
    rt.enqueue("timer", ObjectKey::new(Kind::Pod, "ns", "p"), SimTime::ZERO);
    let to = SimTime::ZERO.plus_seconds(1200);
    let mut slices = 0;
    while rt.advance_some(to, 1) {
        slices += 1;
    }
    assert_eq!(slices, 2, "three reconciles, one per slice");
    assert_eq!(rt.now(), to);
    assert_eq!(rt.errors().len(), 1);
    assert_eq!(rt.errors()[0].0, to);
    assert_eq!(rt.next_due(), Some(SimTime::ZERO.plus_seconds(1201)));
    // A controller that keeps waking itself is no error in slices: each slice ends with work
    // left, and the next one goes on.
    let mut store = Store::new();
    let mut node = allot_api::core::v1::Node::default();
    node.metadata.name = "n1".into();
    store.create(node, "t").unwrap();
    let mut rt = Runtime::new(store, vec![Box::new(Spinner)], SimTime::ZERO);
    for _ in 0..5 {
        assert!(rt.advance_some(SimTime::ZERO, 10));
    }
    assert_eq!(rt.reconciles(), 50);
}

struct Timer {
    fired: Vec<SimTime>,
}

impl Controller for Timer {
    fn name(&self) -> &'static str {
        "timer"
    }
    fn keys_for(&self, _event: &Event, _store: &Store) -> Vec<ObjectKey> {
        vec![]
    }
    fn reconcile(
        &mut self,
        _store: &mut Store,
        _key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.fired.push(ctx.now);
        if self.fired.len() < 3 {
            Ok(Action::RequeueAfterMillis(600_000))
        } else {
            Err("third time fails".into())
        }
    }
}

#[test]
fn timers_cost_no_real_time_and_errors_back_off() {
    let mut rt = Runtime::new(
        Store::new(),
        vec![Box::new(Timer { fired: vec![] })],
        SimTime::ZERO,
    );
    rt.enqueue("timer", ObjectKey::new(Kind::Pod, "ns", "p"), SimTime::ZERO);
    rt.advance_to(SimTime::ZERO.plus_seconds(1200), 100)
        .unwrap();
    assert_eq!(rt.now(), SimTime::ZERO.plus_seconds(1200));
    assert_eq!(rt.errors().len(), 1);
    assert_eq!(rt.errors()[0].0, SimTime::ZERO.plus_seconds(1200));
    assert_eq!(rt.next_due(), Some(SimTime::ZERO.plus_seconds(1201)));
}

/// Records every event it is offered; subscribes to the given topics (or takes every event).
struct Watcher {
    name: &'static str,
    topics: Option<Vec<Topic>>,
    seen: std::rc::Rc<std::cell::RefCell<Vec<String>>>,
    subscriptions: Subscriptions,
}

impl Watcher {
    fn new(
        name: &'static str,
        topics: Option<Vec<Topic>>,
    ) -> (Self, std::rc::Rc<std::cell::RefCell<Vec<String>>>) {
        let seen = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
        let watcher = Watcher {
            name,
            topics,
            seen: seen.clone(),
            subscriptions: Subscriptions::detached(),
        };
        (watcher, seen)
    }
}

impl Controller for Watcher {
    fn name(&self) -> &'static str {
        self.name
    }
    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        self.seen
            .borrow_mut()
            .push(format!("{:?} {}", event.event_type, event.key));
        // A reconcile of a claim ends the subscription to that claim (see below).
        if event.key.kind == Kind::ResourceClaim {
            vec![event.key.clone()]
        } else {
            vec![]
        }
    }
    fn reconcile(
        &mut self,
        _store: &mut Store,
        key: &ObjectKey,
        _ctx: &Context,
    ) -> Result<Action, String> {
        self.subscriptions.remove(&Topic::Object(key.clone()));
        Ok(Action::Done)
    }
    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        let Some(topics) = &self.topics else {
            return false;
        };
        for topic in topics {
            subscriptions.add(topic.clone());
        }
        self.subscriptions = subscriptions;
        true
    }
}

fn pod(name: &str, node: Option<&str>, group: Option<&str>) -> allot_api::core::v1::Pod {
    let mut pod = allot_api::core::v1::Pod::default();
    pod.metadata.name = name.into();
    pod.metadata.namespace = "ns".into();
    pod.spec.node_name = node.map(str::to_string);
    pod.spec.scheduling_group = group.map(|g| allot_api::core::v1::PodSchedulingGroup {
        pod_group_name: g.into(),
    });
    pod
}

fn claim_reserved_for(name: &str, resource: &str, consumer: &str) -> ResourceClaim {
    let mut claim = ResourceClaim::default();
    claim.metadata.name = name.into();
    claim.metadata.namespace = "ns".into();
    claim
        .status
        .reserved_for
        .push(allot_api::resource::v1::ResourceClaimConsumerReference {
            resource: resource.into(),
            name: consumer.into(),
            ..Default::default()
        });
    claim
}

use allot_api::resource::v1::ResourceClaim;

#[test]
fn node_topics_follow_pods_slices_claims_and_groups_to_their_nodes() {
    let mut store = Store::new();
    let mut node = allot_api::core::v1::Node::default();
    node.metadata.name = "n1".into();
    store.create(node, "t").unwrap();
    store.create(pod("a", Some("n1"), Some("g")), "t").unwrap();
    store.create(pod("b", Some("n2"), None), "t").unwrap();
    store.create(pod("c", None, None), "t").unwrap();
    let mut slice = allot_api::resource::v1::ResourceSlice::default();
    slice.metadata.name = "s1".into();
    slice.spec.node_name = Some("n1".into());
    slice.spec.driver = "d".into();
    slice.spec.pool.name = "p1".into();
    store.create(slice, "t").unwrap();
    store
        .create(claim_reserved_for("for-a", "pods", "a"), "t")
        .unwrap();
    store
        .create(claim_reserved_for("for-b", "pods", "b"), "t")
        .unwrap();
    store
        .create(claim_reserved_for("for-g", "podgroups", "g"), "t")
        .unwrap();
    let mut group = allot_api::scheduling::v1beta1::PodGroup::default();
    group.metadata.name = "g".into();
    group.metadata.namespace = "ns".into();
    store.create(group, "t").unwrap();
    // Pod b moves to n1, then a is deleted: both concern n1 (b after, a before).
    store
        .modify::<allot_api::core::v1::Pod, _>("ns", "b", |p| p.spec.node_name = Some("n1".into()))
        .unwrap();
    store.delete(&ObjectKey::new(Kind::Pod, "ns", "a")).unwrap();
    // With a gone, its group has no pod on n1 any more.
    store
        .modify::<allot_api::scheduling::v1beta1::PodGroup, _>("ns", "g", |g| {
            g.metadata.labels.insert("x".into(), "y".into());
        })
        .unwrap();

    let (n1, n1_seen) = Watcher::new("n1", Some(vec![Topic::Node("n1".into())]));
    let (all, all_seen) = Watcher::new("all", None);
    let mut rt = Runtime::new(store, vec![Box::new(n1), Box::new(all)], SimTime::ZERO);
    rt.run_due(100).unwrap();
    assert_eq!(
        *n1_seen.borrow(),
        vec![
            "Added Node n1",
            "Added Pod ns/a",
            "Added ResourceSlice s1",
            "Added ResourceClaim ns/for-a",
            "Added ResourceClaim ns/for-g",
            "Added PodGroup ns/g",
            "Modified Pod ns/b",
            "Deleted Pod ns/a",
        ]
    );
    assert_eq!(all_seen.borrow().len(), 12);
    let stats = rt.stats();
    assert_eq!(stats.events, 12);
    assert_eq!(stats.keys_for_calls, 12 + 8);
    assert_eq!(stats.controllers[0].0, "n1");
}

#[test]
fn subscriptions_to_objects_namespaces_and_pools_can_end() {
    let mut store = Store::new();
    let claim = |name: &str, ns: &str| {
        let mut c = ResourceClaim::default();
        c.metadata.name = name.into();
        c.metadata.namespace = ns.into();
        c
    };
    store.create(claim("x", "ns"), "t").unwrap();
    store.create(claim("y", "ns"), "t").unwrap();
    store.create(claim("z", "other"), "t").unwrap();
    let mut slice = allot_api::resource::v1::ResourceSlice::default();
    slice.metadata.name = "s".into();
    slice.spec.driver = "d".into();
    slice.spec.pool.name = "p".into();
    store.create(slice, "t").unwrap();
    let (w, seen) = Watcher::new(
        "w",
        Some(vec![
            Topic::Object(ObjectKey::new(Kind::ResourceClaim, "ns", "x")),
            Topic::Namespace(Kind::ResourceClaim, "other".into()),
            Topic::Pool("d".into(), "p".into()),
        ]),
    );
    let mut rt = Runtime::new(store, vec![Box::new(w)], SimTime::ZERO);
    rt.run_due(100).unwrap();
    assert_eq!(
        *seen.borrow(),
        vec![
            "Added ResourceClaim ns/x",
            "Added ResourceClaim other/z",
            "Added ResourceSlice s"
        ]
    );
    // The reconcile of ns/x ended that subscription: its next change is not offered.
    seen.borrow_mut().clear();
    rt.store
        .modify::<ResourceClaim, _>("ns", "x", |c| {
            c.metadata.labels.insert("a".into(), "b".into());
        })
        .unwrap();
    rt.store
        .modify::<ResourceClaim, _>("other", "z", |c| {
            c.metadata.labels.insert("a".into(), "b".into());
        })
        .unwrap();
    rt.run_due(100).unwrap();
    assert_eq!(*seen.borrow(), vec!["Modified ResourceClaim other/z"]);
}

#[test]
fn detached_subscriptions_record_nothing() {
    let subscriptions = Subscriptions::detached();
    subscriptions.add(Topic::Node("n".into()));
    assert!(!subscriptions.contains(&Topic::Node("n".into())));
}

/// Reads the event log itself, up to where it was last reconciled.
struct LogReader {
    position: u64,
    read: std::rc::Rc<std::cell::RefCell<Vec<u64>>>,
}

impl Controller for LogReader {
    fn name(&self) -> &'static str {
        "log-reader"
    }
    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        // Wakes only for the last of 10,000 nodes.
        if event.key.name == "n09999" {
            vec![event.key.clone()]
        } else {
            vec![]
        }
    }
    fn reconcile(
        &mut self,
        store: &mut Store,
        _key: &ObjectKey,
        _ctx: &Context,
    ) -> Result<Action, String> {
        for event in store.events_since(self.position) {
            self.read.borrow_mut().push(event.resource_version);
            self.position = event.resource_version;
        }
        Ok(Action::Done)
    }
    fn event_log_position(&self) -> Option<u64> {
        Some(self.position)
    }
}

#[test]
fn compaction_keeps_what_log_readers_have_not_read() {
    let mut store = Store::new();
    for i in 0..10_000 {
        let mut node = allot_api::core::v1::Node::default();
        node.metadata.name = format!("n{i:05}");
        store.create(node, "t").unwrap();
    }
    let read = std::rc::Rc::new(std::cell::RefCell::new(Vec::new()));
    let reader = LogReader {
        position: 0,
        read: read.clone(),
    };
    let mut rt = Runtime::new(store, vec![Box::new(reader)], SimTime::ZERO);
    rt.compact_events(true);
    rt.run_due(100).unwrap();
    // The reader saw every event although the runtime had dispatched them all before.
    assert_eq!(read.borrow().len(), 10_000);
    // Its reconcile moved its position: a later round drops what everyone has seen.
    for i in 0..600 {
        let mut node = allot_api::core::v1::Node::default();
        node.metadata.name = format!("late-{i:03}");
        rt.store.create(node, "t").unwrap();
    }
    rt.run_due(100).unwrap();
    let kept = rt.store.events_since(0);
    assert_eq!(kept.len(), 600);
    assert_eq!(kept[0].key.name, "late-000");
}

#[test]
fn a_fanout_offers_an_event_to_the_members_of_its_topics_only() {
    let mut store = Store::new();
    let mut fanout = Fanout::new();
    fanout.subscriptions(0).add(Topic::Node("a".into()));
    fanout.subscriptions(1).add(Topic::Node("b".into()));
    let mut moved = store.create(pod("p", Some("a"), None), "t").unwrap();
    moved.spec.node_name = Some("b".into());
    store.update(moved).unwrap_or_else(|e| panic!("{e}"));
    let targets: Vec<BTreeSet<usize>> = store
        .events_since(0)
        .iter()
        .map(|event| {
            let mut out = BTreeSet::new();
            fanout.targets(event, &mut out);
            out
        })
        .collect();
    // Bound to a: a's member only; moved to b: both (the node it left, the node it is on).
    assert_eq!(targets, vec![BTreeSet::from([0]), BTreeSet::from([0, 1])]);
    fanout.forget(0);
    store
        .delete(&ObjectKey::new(Kind::Pod, "ns", "p"))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut out = BTreeSet::new();
    fanout.targets(store.events_since(0).last().unwrap(), &mut out);
    assert_eq!(out, BTreeSet::from([1]));
}
