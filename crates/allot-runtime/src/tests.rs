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
    let _ = Stored::Node(node.clone());
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
