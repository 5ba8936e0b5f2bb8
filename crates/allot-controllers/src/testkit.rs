//! What the controllers' table tests share: objects from YAML (decoded and defaulted as the
//! API server would), a runtime over them, and a stand-in kubelet that binds, starts and
//! (optionally) finishes pods, so the workload controllers can be tested without the
//! scheduler and node agents.

use allot_api::core::v1::{Node, Pod, PodCondition};
use allot_runtime::{Action, Context, Controller, Runtime, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

/// Objects from YAML documents, defaulted, into a new store at time zero.
pub fn store_from(yaml: &str) -> Store {
    let loaded = allot_api::load::load_str("test.yaml", yaml, &Default::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut store = Store::new();
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        let stored = Stored::from_object(object).expect("a store kind");
        store
            .create_stored(stored, &SimTime::ZERO.rfc3339())
            .expect("creates");
    }
    store
}

/// What the stand-in kubelet does with a pod: bind it to a node (round robin over the
/// Nodes, or `node-0`), start it ready, and finish it after its
/// `allot.dev/run-duration` annotation (in seconds here) with the exit code of
/// `allot.dev/exit-code`.
#[derive(Debug, Default)]
pub struct FakeKubelet {
    /// Leaves pods pending (unschedulable) instead.
    pub hold: bool,
    /// Round-robin position over the nodes.
    pub next: usize,
}

impl FakeKubelet {
    /// A kubelet that starts every pod.
    pub fn new() -> Self {
        FakeKubelet::default()
    }
}

fn seconds(pod: &Pod, key: &str) -> Option<u64> {
    pod.metadata.annotations.get(key)?.parse().ok()
}

impl Controller for FakeKubelet {
    fn name(&self) -> &'static str {
        "fake-kubelet"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match (&event.object, event.event_type) {
            (Stored::Pod(p), EventType::Added) if p.status.phase.is_none() => {
                vec![event.key.clone()]
            }
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::Pod));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(pod) = store.get::<Pod>(&key.namespace, &key.name).cloned() else {
            return Ok(Action::Done);
        };
        if self.hold || pod.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let stamp = ctx.now.rfc3339();
        match pod.status.phase.as_deref() {
            None => {
                let nodes: Vec<String> = store
                    .list::<Node>()
                    .map(|n| n.metadata.name.clone())
                    .collect();
                let node = crate::daemonset::target_node(&pod).unwrap_or_else(|| {
                    if nodes.is_empty() {
                        "node-0".into()
                    } else {
                        self.next += 1;
                        nodes[(self.next - 1) % nodes.len()].clone()
                    }
                });
                store
                    .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                        p.spec.node_name = Some(node);
                        p.status.phase = Some("Running".into());
                        p.status.start_time = Some(serde_json::Value::String(stamp.clone()));
                        p.status.conditions = vec![PodCondition {
                            type_: "Ready".into(),
                            status: "True".into(),
                            last_transition_time: Some(stamp.clone()),
                            ..Default::default()
                        }];
                    })
                    .map_err(|e| e.to_string())?;
                match seconds(&pod, "allot.dev/run-duration") {
                    Some(s) => Ok(Action::RequeueAfterMillis(s * 1000)),
                    None => Ok(Action::Done),
                }
            }
            Some("Running") => {
                let code = seconds(&pod, "allot.dev/exit-code").unwrap_or(0);
                store
                    .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                        p.status.phase =
                            Some(if code == 0 { "Succeeded" } else { "Failed" }.into());
                        p.status.conditions.clear();
                        p.status.container_statuses = Some(serde_json::json!([{
                            "name": "c",
                            "restartCount": 0,
                            "state": {"terminated": {"exitCode": code, "finishedAt": stamp}},
                        }]));
                    })
                    .map_err(|e| e.to_string())?;
                Ok(Action::Done)
            }
            _ => Ok(Action::Done),
        }
    }
}

/// A runtime over `store` with these controllers at time zero.
pub fn runtime(store: Store, controllers: Vec<Box<dyn Controller>>) -> Runtime {
    Runtime::new(store, controllers, SimTime::ZERO)
}

/// Runs until idle (at most an hour of simulated time).
pub fn settle(rt: &mut Runtime) {
    let limit = rt.now().plus_seconds(3600);
    rt.run_until_idle(limit, 1_000_000).expect("settles");
}

/// Names of the pods in a namespace, in name order.
pub fn pod_names(store: &Store, namespace: &str) -> Vec<String> {
    store
        .list_in::<Pod>(namespace)
        .map(|p| p.metadata.name.clone())
        .collect()
}

/// `(reason, message)` of every Event about an object (by kind and name), in creation order.
pub fn events_of(store: &Store, kind: &str, name: &str) -> Vec<(String, String)> {
    let mut events: Vec<&allot_api::core::v1::Event> = store
        .list::<allot_api::core::v1::Event>()
        .filter(|e| {
            e.involved_object.kind.as_deref() == Some(kind)
                && e.involved_object.name.as_deref() == Some(name)
        })
        .collect();
    events.sort_by_key(|e| e.metadata.uid.clone());
    events
        .into_iter()
        .map(|e| {
            (
                e.reason.clone().unwrap_or_default(),
                e.message.clone().unwrap_or_default(),
            )
        })
        .collect()
}
