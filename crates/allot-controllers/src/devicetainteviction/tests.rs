use super::*;
use allot_api::core::v1::PodResourceClaim;
use allot_api::resource::v1::{
    AllocationResult, CelDeviceSelector, DeviceSelector, DeviceTaintSelector,
    ResourceClaimConsumerReference,
};
use allot_runtime::Runtime;

const DRIVER: &str = "gpu.example.com";

fn taint(effect: DeviceTaintEffect, added: Option<&str>) -> DeviceTaint {
    DeviceTaint {
        key: "example.com/broken".into(),
        value: "yes".into(),
        effect,
        time_added: added.map(String::from),
    }
}

/// A slice in pool `node-a` with devices gpu-0..gpu-2; gpu-0 carries `taints`.
fn slice(taints: Vec<DeviceTaint>) -> ResourceSlice {
    let mut s = ResourceSlice::default();
    s.metadata.name = "node-a-gpus".into();
    s.spec.driver = DRIVER.into();
    s.spec.pool.name = "node-a".into();
    s.spec.pool.resource_slice_count = 1;
    for i in 0..3 {
        let mut d = Device {
            name: format!("gpu-{i}"),
            ..Default::default()
        };
        d.attributes.insert(
            "model".into(),
            DeviceAttribute {
                string_value: Some(if i == 0 { "a100" } else { "h100" }.into()),
                ..Default::default()
            },
        );
        if i == 0 {
            d.taints = taints.clone();
        }
        s.spec.devices.push(d);
    }
    s
}

/// Pod `ns/trainer` bound to node-a, using claim `gpu-claim` allocated gpu-0 and reserved.
fn add_user(
    store: &mut Store,
    ns: &str,
    name: &str,
    device: &str,
    tolerations: Vec<DeviceToleration>,
) {
    let mut pod = Pod::default();
    pod.metadata.namespace = ns.into();
    pod.metadata.name = name.into();
    pod.spec.node_name = Some("node-a".into());
    pod.spec.resource_claims = vec![PodResourceClaim {
        name: "gpu".into(),
        resource_claim_name: Some(format!("{name}-claim")),
        resource_claim_template_name: None,
    }];
    let pod = store.create(pod, "2026-01-01T00:00:00Z").unwrap();
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = ns.into();
    claim.metadata.name = format!("{name}-claim");
    let mut allocation = AllocationResult::default();
    allocation
        .devices
        .results
        .push(DeviceRequestAllocationResult {
            request: "gpu".into(),
            driver: DRIVER.into(),
            pool: "node-a".into(),
            device: device.into(),
            tolerations,
            ..Default::default()
        });
    claim.status.allocation = Some(allocation);
    claim
        .status
        .reserved_for
        .push(ResourceClaimConsumerReference {
            api_group: String::new(),
            resource: "pods".into(),
            name: name.into(),
            uid: pod.metadata.uid.clone(),
        });
    store.create(claim, "2026-01-01T00:00:00Z").unwrap();
}

fn rule(name: &str, effect: DeviceTaintEffect, selector: DeviceTaintSelector) -> DeviceTaintRule {
    let mut r = DeviceTaintRule::default();
    r.metadata.name = name.into();
    r.spec.device_selector = Some(selector);
    r.spec.taint = taint(effect, Some("2026-01-01T00:00:00Z"));
    r
}

fn by_driver() -> DeviceTaintSelector {
    DeviceTaintSelector {
        driver: Some(DRIVER.into()),
        ..Default::default()
    }
}

fn no_execute_toleration(seconds: Option<i64>) -> DeviceToleration {
    DeviceToleration {
        key: "example.com/broken".into(),
        operator: Some(DeviceTolerationOperator::Exists),
        effect: Some(DeviceTaintEffect::NoExecute),
        toleration_seconds: seconds,
        ..Default::default()
    }
}

fn runtime(store: Store, mode: EvictionMode) -> Runtime {
    Runtime::new(
        store,
        vec![Box::new(DeviceTaintEvictionController::new(mode))],
        SimTime::ZERO,
    )
}

fn run_for(rt: &mut Runtime, seconds: u64) {
    let to = rt.now().plus_seconds(seconds);
    rt.advance_to(to, 100_000).unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
}

fn condition(rt: &Runtime, name: &str) -> Condition {
    let rule = rt.store.get::<DeviceTaintRule>("", name).unwrap();
    rule.status
        .conditions
        .iter()
        .find(|c| c.type_ == EVICTION_IN_PROGRESS)
        .cloned()
        .unwrap_or_else(|| panic!("no condition on {name}: {:?}", rule.status))
}

#[test]
fn tolerations_match_like_upstream() {
    let t = taint(DeviceTaintEffect::NoExecute, None);
    let exists_any = DeviceToleration {
        operator: Some(DeviceTolerationOperator::Exists),
        ..Default::default()
    };
    assert!(tolerates(&exists_any, &t));
    let equal_wrong_value = DeviceToleration {
        key: t.key.clone(),
        value: "no".into(),
        ..Default::default()
    };
    assert!(!tolerates(&equal_wrong_value, &t));
    let equal = DeviceToleration {
        key: t.key.clone(),
        value: "yes".into(),
        ..Default::default()
    };
    assert!(tolerates(&equal, &t));
    let other_effect = DeviceToleration {
        operator: Some(DeviceTolerationOperator::Exists),
        effect: Some(DeviceTaintEffect::NoSchedule),
        ..Default::default()
    };
    assert!(!tolerates(&other_effect, &t));
}

#[test]
fn an_untolerated_slice_taint_deletes_the_pod_at_once() {
    let mut store = Store::new();
    store
        .create(
            slice(vec![taint(DeviceTaintEffect::NoExecute, None)]),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    add_user(&mut store, "ns", "bystander", "gpu-1", vec![]);
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_none());
    assert!(rt.store.get::<Pod>("ns", "bystander").is_some());
}

#[test]
fn mark_failed_keeps_the_pod_with_the_disruption_target_condition() {
    let mut store = Store::new();
    store
        .create(
            slice(vec![taint(DeviceTaintEffect::NoExecute, None)]),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    let mut rt = runtime(store, EvictionMode::MarkFailed);
    run_for(&mut rt, 1);
    let pod = rt.store.get::<Pod>("ns", "trainer").unwrap();
    assert_eq!(pod.status.phase.as_deref(), Some("Failed"));
    let c = pod
        .status
        .conditions
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .unwrap();
    assert_eq!(c.status, "True");
    assert_eq!(c.reason.as_deref(), Some(EVICTION_REASON));
    assert_eq!(c.message.as_deref(), Some(EVICTION_MESSAGE));
}

#[test]
fn toleration_seconds_delay_eviction_on_the_simulated_clock() {
    let mut store = Store::new();
    store
        .create(
            slice(vec![taint(
                DeviceTaintEffect::NoExecute,
                Some("2026-01-01T00:00:10Z"),
            )]),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    add_user(
        &mut store,
        "ns",
        "trainer",
        "gpu-0",
        vec![no_execute_toleration(Some(300))],
    );
    add_user(
        &mut store,
        "ns",
        "forever",
        "gpu-0",
        vec![no_execute_toleration(None)],
    );
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 309);
    assert!(
        rt.store.get::<Pod>("ns", "trainer").is_some(),
        "evicted too early"
    );
    run_for(&mut rt, 1);
    assert!(
        rt.store.get::<Pod>("ns", "trainer").is_none(),
        "not evicted at 310s"
    );
    run_for(&mut rt, 10_000);
    assert!(rt.store.get::<Pod>("ns", "forever").is_some());
}

#[test]
fn a_toleration_without_the_no_execute_effect_does_not_delay_eviction() {
    // Upstream only counts tolerations that name the NoExecute effect.
    let mut store = Store::new();
    store
        .create(
            slice(vec![taint(DeviceTaintEffect::NoExecute, None)]),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let mut any_effect = no_execute_toleration(Some(600));
    any_effect.effect = None;
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![any_effect]);
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_none());
}

#[test]
fn a_no_execute_rule_evicts_and_reports_progress() {
    let mut store = Store::new();
    store.create(slice(vec![]), "2026-01-01T00:00:00Z").unwrap();
    add_user(
        &mut store,
        "ns",
        "trainer",
        "gpu-0",
        vec![no_execute_toleration(Some(60))],
    );
    add_user(
        &mut store,
        "other",
        "worker",
        "gpu-1",
        vec![no_execute_toleration(Some(60))],
    );
    store
        .create(
            rule("broken", DeviceTaintEffect::NoExecute, by_driver()),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    let c = condition(&rt, "broken");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("True", "PodsPendingEviction")
    );
    assert_eq!(
        c.message,
        "2 pods need to be evicted in 2 different namespaces."
    );
    assert_eq!(c.observed_generation, Some(1));
    run_for(&mut rt, 60);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_none());
    assert!(rt.store.get::<Pod>("other", "worker").is_none());
    run_for(&mut rt, 30);
    let c = condition(&rt, "broken");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "Completed")
    );
    assert_eq!(c.message, "2 pods evicted since starting the controller.");
}

#[test]
fn a_rule_without_pods_is_not_started_and_other_effects_are_explained() {
    let mut store = Store::new();
    store.create(slice(vec![]), "2026-01-01T00:00:00Z").unwrap();
    store
        .create(
            rule("idle", DeviceTaintEffect::NoExecute, by_driver()),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    store
        .create(
            rule("nosched", DeviceTaintEffect::NoSchedule, by_driver()),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    let c = condition(&rt, "idle");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str(), c.message.as_str()),
        ("False", "NotStarted", "")
    );
    let c = condition(&rt, "nosched");
    assert_eq!(c.reason, "OtherEffect");
    assert_eq!(c.message, "Eviction only happens for the NoExecute effect.");
}

#[test]
fn effect_none_is_a_dry_run_with_upstreams_message() {
    let mut store = Store::new();
    store.create(slice(vec![]), "2026-01-01T00:00:00Z").unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    store
        .create(
            rule("dry", DeviceTaintEffect::None, by_driver()),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_some());
    let c = condition(&rt, "dry");
    assert_eq!(
        (c.status.as_str(), c.reason.as_str()),
        ("False", "NoEffect")
    );
    assert_eq!(
        c.message,
        "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."
    );
    // Not updated again: a second pod does not change the message.
    add_user(&mut rt.store, "ns", "late", "gpu-1", vec![]);
    run_for(&mut rt, 60);
    assert_eq!(condition(&rt, "dry").message, c.message);
}

#[test]
fn cel_selectors_and_device_classes_select_devices() {
    let mut store = Store::new();
    store.create(slice(vec![]), "2026-01-01T00:00:00Z").unwrap();
    add_user(&mut store, "ns", "old", "gpu-0", vec![]);
    add_user(&mut store, "ns", "new", "gpu-1", vec![]);
    let cel = |e: &str| DeviceSelector {
        cel: Some(CelDeviceSelector {
            expression: e.into(),
        }),
    };
    let mut class = DeviceClass::default();
    class.metadata.name = "h100".into();
    class.spec.selectors = vec![cel(&format!(
        "device.attributes[\"{DRIVER}\"].model == \"h100\""
    ))];
    store.create(class, "2026-01-01T00:00:00Z").unwrap();
    let by_class = DeviceTaintSelector {
        device_class_name: Some("h100".into()),
        ..Default::default()
    };
    store
        .create(
            rule("class", DeviceTaintEffect::None, by_class),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let by_cel = DeviceTaintSelector {
        driver: Some(DRIVER.into()),
        selectors: vec![cel(&format!(
            "device.attributes[\"{DRIVER}\"].model == \"a100\""
        ))],
        ..Default::default()
    };
    store
        .create(
            rule("cel", DeviceTaintEffect::NoExecute, by_cel),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let missing_class = DeviceTaintSelector {
        device_class_name: Some("missing".into()),
        ..Default::default()
    };
    store
        .create(
            rule("missing", DeviceTaintEffect::None, missing_class),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(
        rt.store.get::<Pod>("ns", "old").is_none(),
        "a100 user not evicted"
    );
    assert!(
        rt.store.get::<Pod>("ns", "new").is_some(),
        "h100 user evicted"
    );
    assert!(
        condition(&rt, "class")
            .message
            .starts_with("2 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace"),
        "{}",
        condition(&rt, "class").message
    );
    assert!(
        condition(&rt, "missing")
            .message
            .starts_with("0 published devices selected. 0 allocated devices selected. 0 pods would be evicted in 0 different namespaces"),
        "{}",
        condition(&rt, "missing").message
    );
}

#[test]
fn a_rule_without_a_selector_selects_nothing() {
    let mut store = Store::new();
    store.create(slice(vec![]), "2026-01-01T00:00:00Z").unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    let mut r = rule("empty", DeviceTaintEffect::NoExecute, by_driver());
    r.spec.device_selector = None;
    store.create(r, "2026-01-01T00:00:00Z").unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_some());
    assert_eq!(condition(&rt, "empty").reason, "NotStarted");
}

#[test]
fn a_pod_not_in_reserved_for_is_not_evicted() {
    let mut store = Store::new();
    store
        .create(
            slice(vec![taint(DeviceTaintEffect::NoExecute, None)]),
            "2026-01-01T00:00:00Z",
        )
        .unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    store
        .modify::<ResourceClaim, _>("ns", "trainer-claim", |c| c.status.reserved_for.clear())
        .unwrap();
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_some());
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn pods_live_exactly_until_their_toleration_expires(
            added in 0u64..100,
            seconds in prop::collection::vec(prop::option::of(-5i64..200), 1..5),
            at in 0u64..400,
        ) {
            let mut store = Store::new();
            let time = SimTime::ZERO.plus_seconds(added).rfc3339();
            store
                .create(slice(vec![taint(DeviceTaintEffect::NoExecute, Some(&time))]), "2026-01-01T00:00:00Z")
                .unwrap();
            for (i, s) in seconds.iter().enumerate() {
                add_user(&mut store, "ns", &format!("pod-{i}"), "gpu-0", vec![no_execute_toleration(*s)]);
            }
            let mut rt = runtime(store, EvictionMode::Delete);
            run_for(&mut rt, at);
            for (i, s) in seconds.iter().enumerate() {
                let alive = rt.store.get::<Pod>("ns", &format!("pod-{i}")).is_some();
                let expected = match s {
                    None => true,
                    Some(s) => at < added + (*s).max(0) as u64,
                };
                prop_assert_eq!(alive, expected, "pod-{} with {:?} at {}s", i, s, at);
            }
        }
    }
}

#[test]
fn pods_wake_it_only_once_something_is_tainted() {
    let mut store = Store::new();
    store
        .create(slice(Vec::new()), "2026-01-01T00:00:00Z")
        .unwrap();
    add_user(&mut store, "ns", "trainer", "gpu-0", vec![]);
    let mut rt = runtime(store, EvictionMode::Delete);
    run_for(&mut rt, 1);
    // Nothing is tainted: the pod and claim events woke nothing.
    assert_eq!(rt.reconciles(), 0);
    // A taint on the slice wakes the pod that uses it, which is evicted.
    rt.store
        .modify::<ResourceSlice, _>("", "node-a-gpus", |s| {
            s.spec.devices[0].taints = vec![taint(DeviceTaintEffect::NoExecute, None)];
        })
        .unwrap();
    run_for(&mut rt, 1);
    assert!(rt.reconciles() > 0);
    assert!(rt.store.get::<Pod>("ns", "trainer").is_none());
}
