use super::*;
use allot_api::core::v1::PodCondition;

fn pod(name: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.name = name.into();
    pod.metadata.namespace = "ns".into();
    pod.metadata.uid = format!("uid-{name}");
    pod
}

fn condition(type_: &str, status: &str, reason: &str, message: &str) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: status.into(),
        observed_generation: None,
        last_probe_time: None,
        last_transition_time: None,
        reason: Some(reason.into()),
        message: Some(message.into()),
    }
}

fn reasons(events: &[PodEvent]) -> Vec<String> {
    events.iter().map(|e| e.reason.clone()).collect()
}

#[test]
fn scheduler_kubelet_and_eviction_states_map_to_upstream_reasons() {
    let mut p = pod("a");
    p.status.conditions.push(condition(
        "PodScheduled",
        "False",
        "Unschedulable",
        "0/1 nodes are available: 1 cannot allocate all claims.",
    ));
    let events = pod_events(&p, false, false);
    assert_eq!(reasons(&events), ["FailedScheduling"]);
    assert_eq!(events[0].type_, "Warning");
    let message = "running \"DynamicResources\" filter plugin: claim ns/c: selector #0: \
                   CEL runtime error: no such key: profile";
    p.status.conditions[0] = condition("PodScheduled", "False", "SchedulerError", message);
    let events = pod_events(&p, false, false);
    assert_eq!(reasons(&events), ["FailedScheduling"]);
    assert_eq!(events[0].message, message);

    let mut p = pod("b");
    p.spec.node_name = Some("n1".into());
    p.status
        .conditions
        .push(condition("PodScheduled", "True", "", ""));
    let events = pod_events(&p, false, false);
    assert_eq!(reasons(&events), ["Scheduled"]);
    assert_eq!(events[0].message, "Successfully assigned ns/b to n1");
    assert!(
        pod_events(&p, true, false).is_empty(),
        "pre-bound pods were never scheduled"
    );

    p.status.phase = Some("Failed".into());
    p.status.reason = Some("UnexpectedAdmissionError".into());
    p.status.message = Some("Pod was rejected: Allocate failed due to x".into());
    let events = pod_events(&p, true, false);
    assert_eq!(reasons(&events), ["UnexpectedAdmissionError"]);
    assert_eq!(events[0].message, "Allocate failed due to x");
    assert_eq!(events[0].component, KUBELET);
    assert_eq!(events[0].host.as_deref(), Some("n1"));

    let mut p = pod("c");
    p.spec.node_name = Some("n1".into());
    p.status.conditions.push(condition(
        "DisruptionTarget",
        "True",
        crate::devicetainteviction::EVICTION_REASON,
        "Device Taint manager: deleting due to NoExecute taint",
    ));
    p.status.phase = Some("Failed".into());
    p.status.reason = Some(crate::devicetainteviction::EVICTION_REASON.into());
    assert_eq!(
        reasons(&pod_events(&p, true, false)),
        ["DeviceTaintManagerEviction"]
    );
}

#[test]
fn the_kubelet_starts_and_stops_containers_and_reports_device_health() {
    let mut p = pod("d");
    p.spec.node_name = Some("n1".into());
    p.spec.containers.push(allot_api::core::v1::Container {
        name: "main".into(),
        image: Some("busybox".into()),
        ..Default::default()
    });
    p.status.phase = Some("Running".into());
    p.status.start_time = Some(serde_json::json!("2026-01-01T00:00:00Z"));
    p.status.container_statuses = Some(serde_json::json!([{
        "name": "main",
        "allocatedResourcesStatus": [{
            "name": "claim:gpu",
            "resources": [{"resourceID": "gpu.example.com/n1/gpu-0", "health": "Unhealthy"}],
        }],
    }]));
    let events = pod_events(&p, true, false);
    assert_eq!(
        reasons(&events),
        ["Pulled", "Created", "Started", "DeviceUnhealthy"]
    );
    assert_eq!(
        events[0].message,
        "Container image \"busybox\" already present on machine"
    );
    assert_eq!(events[1].message, "Created container: main");
    assert_eq!(events[2].message, "Started container main");
    assert_eq!(
        events[3].message,
        "device gpu.example.com/n1/gpu-0 of claim gpu is Unhealthy"
    );
    let events = pod_events(&p, true, true);
    assert!(reasons(&events).contains(&"Killing".to_string()));
    assert!(
        events
            .iter()
            .any(|e| e.message == "Stopping container main")
    );
}

#[test]
fn short_lived_states_are_recorded_once_each() {
    let mut store = Store::new();
    let now = "2026-01-01T00:00:00Z";
    let p = store.create(pod("a"), now).expect("creates");
    let mut p = p;
    p.status.conditions.push(condition(
        "PodScheduled",
        "False",
        "Unschedulable",
        "no nodes",
    ));
    let mut p = store.update(p).expect("updates");
    p.spec.node_name = Some("n1".into());
    p.status.conditions = vec![condition("PodScheduled", "True", "", "")];
    store.update(p).expect("updates");
    let mut rt = allot_runtime::Runtime::new(
        store,
        vec![Box::new(EventRecorder::new())],
        allot_runtime::SimTime(5000),
    );
    rt.run_due(100).expect("runs");
    let mut got: Vec<String> = rt
        .store
        .list::<CoreEvent>()
        .map(|e| e.reason.clone().unwrap_or_default())
        .collect();
    got.sort();
    assert_eq!(got, ["FailedScheduling", "Scheduled"]);
    // Replaying the same states records nothing new.
    let before = rt.store.resource_version();
    let pod_key = ObjectKey::new(Kind::Pod, "ns", "a");
    let mut recorder = EventRecorder::new();
    for e in rt.store.events_since(0).to_vec() {
        recorder.keys_for(&e, &rt.store);
    }
    let ctx = Context {
        now: allot_runtime::SimTime(9000),
    };
    recorder
        .reconcile(&mut rt.store, &pod_key, &ctx)
        .expect("reconciles");
    assert_eq!(rt.store.resource_version(), before);
}

#[test]
fn repeats_count_on_one_event() {
    let mut store = Store::new();
    let mut recorder = EventRecorder::new();
    let key = ObjectKey::new(Kind::Pod, "ns", "a");
    let mut offered = 0;
    let mut step = |store: &mut Store, recorder: &mut EventRecorder, ms: u64| {
        for e in store.events_since(offered).to_vec() {
            recorder.keys_for(&e, store);
        }
        offered = store.resource_version();
        let ctx = Context {
            now: allot_runtime::SimTime(ms),
        };
        recorder.reconcile(store, &key, &ctx).expect("reconciles");
    };
    let unschedulable =
        |message: &str| condition("PodScheduled", "False", "Unschedulable", message);
    let mut p = store.create(pod("a"), "t").expect("creates");
    step(&mut store, &mut recorder, 1_000);
    for (message, ms) in [("no cpu", 2_000), ("no memory", 3_000), ("no cpu", 12_000)] {
        p.status.conditions = vec![unschedulable(message)];
        p = store.update(p).expect("updates");
        step(&mut store, &mut recorder, ms);
    }
    let mut got: Vec<(String, i32, String, String)> = store
        .list::<CoreEvent>()
        .map(|e| {
            (
                e.message.clone().unwrap_or_default(),
                e.count.unwrap_or_default(),
                e.first_timestamp.clone().unwrap_or_default(),
                e.last_timestamp.clone().unwrap_or_default(),
            )
        })
        .collect();
    got.sort();
    assert_eq!(
        got,
        [
            (
                "no cpu".into(),
                2,
                "2026-01-01T00:00:02Z".into(),
                "2026-01-01T00:00:12Z".into()
            ),
            (
                "no memory".into(),
                1,
                "2026-01-01T00:00:03Z".into(),
                "2026-01-01T00:00:03Z".into()
            ),
        ]
    );
}

#[test]
fn event_names_are_stable_and_bounded() {
    let long = "p".repeat(253);
    let p = pod(&long);
    let e = PodEvent {
        type_: "Normal",
        reason: "Scheduled".into(),
        message: "m".into(),
        component: SCHEDULER,
        host: None,
    };
    let involved = reference_of(Kind::Pod, &p.metadata);
    let a = pod_event_object(&involved, None, &e, "t");
    let b = pod_event_object(&involved, None, &e, "u");
    assert_eq!(a.metadata.name, b.metadata.name);
    assert!(a.metadata.name.len() <= 253);
}

#[test]
fn a_preemption_victim_gets_no_derived_event() {
    // DefaultPreemption records `Preempted` itself (allot-scheduler); the recorder must not
    // record it a second time from the victim's DisruptionTarget condition.
    let mut p = pod("victim");
    p.spec.node_name = Some("n1".into());
    p.status.conditions.push(condition(
        "DisruptionTarget",
        "True",
        "PreemptionByScheduler",
        "default-scheduler: preempting to accommodate a higher priority pod",
    ));
    let events = pod_events(&p, true, false);
    assert!(events.iter().all(|e| e.reason != "Preempted"), "{events:?}");
}
