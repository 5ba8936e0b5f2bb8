use super::*;
use allot_api::resource::v1::{
    AllocationResult, Counter, DeviceAttribute, DeviceCapacity, DeviceRequestAllocationResult,
    DeviceTaint, DeviceTaintSelector,
};
use allot_runtime::{Runtime, SimTime};

const DRIVER: &str = "gpu.example.com";

fn q(text: &str) -> Quantity {
    Quantity::parse(text).unwrap()
}

fn device(name: &str) -> Device {
    Device {
        name: name.into(),
        ..Default::default()
    }
}

fn slice(name: &str, driver: &str, pool: &str, devices: Vec<Device>) -> ResourceSlice {
    let mut s = ResourceSlice::default();
    s.metadata.name = name.into();
    s.spec.driver = driver.into();
    s.spec.pool.name = pool.into();
    s.spec.pool.resource_slice_count = 1;
    s.spec.node_name = Some(pool.into());
    s.spec.devices = devices;
    s
}

fn allocate(store: &mut Store, name: &str, pool: &str, device: &str, consumed: &[(&str, &str)]) {
    let mut claim = ResourceClaim::default();
    claim.metadata.namespace = "ns".into();
    claim.metadata.name = name.into();
    let mut allocation = AllocationResult::default();
    allocation
        .devices
        .results
        .push(DeviceRequestAllocationResult {
            request: "r".into(),
            driver: DRIVER.into(),
            pool: pool.into(),
            device: device.into(),
            consumed_capacity: consumed
                .iter()
                .map(|(k, v)| (k.to_string(), q(v)))
                .collect(),
            ..Default::default()
        });
    claim.status.allocation = Some(allocation);
    store.create(claim, "t").unwrap();
}

fn request(name: &str) -> ResourcePoolStatusRequest {
    let mut r = ResourcePoolStatusRequest::default();
    r.metadata.name = name.into();
    r.spec.driver = DRIVER.into();
    r
}

fn run(store: Store, config: PoolStatusControllerConfig) -> Runtime {
    let mut rt = Runtime::new(
        store,
        vec![Box::new(PoolStatusController::new(config))],
        SimTime::ZERO,
    );
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 10_000)
        .unwrap();
    assert!(rt.errors().is_empty(), "{:?}", rt.errors());
    rt
}

fn answer(rt: &Runtime, name: &str) -> ResourcePoolStatusRequestStatus {
    rt.store
        .get::<ResourcePoolStatusRequest>("", name)
        .unwrap()
        .status
        .clone()
}

/// node-a: 4 devices (1 allocated, 1 tainted NoSchedule, 1 selected by a NoExecute rule);
/// node-b: 2 devices; another driver's pool is not reported.
fn cluster() -> Store {
    let mut store = Store::new();
    let mut tainted = device("gpu-1");
    tainted.taints.push(DeviceTaint {
        key: "k".into(),
        value: String::new(),
        effect: DeviceTaintEffect::NoSchedule,
        time_added: None,
    });
    let devices = vec![device("gpu-0"), tainted, device("gpu-2"), device("gpu-3")];
    store
        .create(slice("a", DRIVER, "node-a", devices), "t")
        .unwrap();
    store
        .create(
            slice(
                "b",
                DRIVER,
                "node-b",
                vec![device("gpu-0"), device("gpu-1")],
            ),
            "t",
        )
        .unwrap();
    store
        .create(
            slice("c", "nic.example.com", "node-a", vec![device("nic-0")]),
            "t",
        )
        .unwrap();
    allocate(&mut store, "claim-0", "node-a", "gpu-0", &[]);
    let mut rule = DeviceTaintRule::default();
    rule.metadata.name = "broken".into();
    rule.spec.taint.effect = DeviceTaintEffect::NoExecute;
    rule.spec.device_selector = Some(DeviceTaintSelector {
        driver: Some(DRIVER.into()),
        pool: Some("node-a".into()),
        device: Some("gpu-2".into()),
        ..Default::default()
    });
    store.create(rule, "t").unwrap();
    store
}

#[test]
fn counts_pools_devices_allocations_and_taints() {
    let mut store = cluster();
    store.create(request("all"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let status = answer(&rt, "all");
    assert_eq!(status.pool_count, Some(2));
    let names: Vec<&str> = status.pools.iter().map(|p| p.pool_name.as_str()).collect();
    assert_eq!(names, ["node-a", "node-b"]);
    let a = &status.pools[0];
    assert_eq!(a.node_name.as_deref(), Some("node-a"));
    assert_eq!(a.generation, Some(0));
    assert_eq!(a.resource_slice_count, Some(1));
    assert_eq!(
        (
            a.total_devices,
            a.allocated_devices,
            a.unavailable_devices,
            a.available_devices
        ),
        (Some(4), Some(1), Some(2), Some(1))
    );
    let b = &status.pools[1];
    assert_eq!((b.total_devices, b.available_devices), (Some(2), Some(2)));
    let c = &status.conditions[0];
    assert_eq!(
        (c.type_.as_str(), c.status.as_str(), c.reason.as_str()),
        ("Complete", "True", "CalculationComplete")
    );
    assert_eq!(c.message, "Calculated status for 2 pools");
}

#[test]
fn limit_and_pool_name_filter() {
    let mut store = cluster();
    let mut limited = request("limited");
    limited.spec.limit = Some(1);
    store.create(limited, "t").unwrap();
    let mut one = request("one");
    one.spec.pool_name = Some("node-b".into());
    store.create(one, "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let status = answer(&rt, "limited");
    assert_eq!(status.pool_count, Some(2));
    assert_eq!(status.pools.len(), 1);
    assert_eq!(status.conditions[0].message, "Calculated status for 1 pool");
    let status = answer(&rt, "one");
    assert_eq!(status.pool_count, Some(1));
    assert_eq!(status.pools[0].pool_name, "node-b");
}

#[test]
fn invalid_requests_fail() {
    let mut store = cluster();
    let mut no_driver = request("no-driver");
    no_driver.spec.driver.clear();
    store.create(no_driver, "t").unwrap();
    let mut too_many = request("too-many");
    too_many.spec.limit = Some(1001);
    store.create(too_many, "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    for name in ["no-driver", "too-many"] {
        let status = answer(&rt, name);
        assert_eq!(status.pool_count, Some(0));
        assert_eq!(status.conditions[0].type_, "Failed", "{name}");
        assert_eq!(status.conditions[0].reason, "CalculationFailed");
    }
}

#[test]
fn an_answer_is_immutable() {
    let mut store = cluster();
    store.create(request("all"), "t").unwrap();
    let mut rt = run(store, PoolStatusControllerConfig::default());
    let before = answer(&rt, "all");
    allocate(&mut rt.store, "claim-1", "node-b", "gpu-0", &[]);
    rt.store
        .modify::<ResourcePoolStatusRequest, _>("", "all", |r| {
            r.metadata.labels.insert("touched".into(), "yes".into());
        })
        .unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(120), 10_000)
        .unwrap();
    assert_eq!(answer(&rt, "all"), before);
}

#[test]
fn an_incomplete_pool_is_retried_then_reported() {
    let mut store = Store::new();
    let mut first = slice("a-1", DRIVER, "node-a", vec![device("gpu-0")]);
    first.spec.pool.resource_slice_count = 2;
    store.create(first, "t").unwrap();
    store.create(request("waiting"), "t").unwrap();
    let mut rt = Runtime::new(
        store,
        vec![Box::new(PoolStatusController::new(Default::default()))],
        SimTime::ZERO,
    );
    rt.run_due(1000).unwrap();
    assert!(
        answer(&rt, "waiting").is_empty(),
        "answered before the retries"
    );
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    let status = answer(&rt, "waiting");
    let pool = &status.pools[0];
    assert_eq!(
        pool.validation_error.as_deref(),
        Some(
            "PoolIncomplete: pool gpu.example.com/node-a is incomplete: observed 1/2 slices at generation 0"
        )
    );
    assert_eq!(pool.total_devices, None);
    assert_eq!(
        status.conditions[0].message,
        "Calculated status for 1 pool (1 incomplete)"
    );

    // The second slice arriving during the retries completes the pool.
    let mut store = Store::new();
    let mut first = slice("a-1", DRIVER, "node-a", vec![device("gpu-0")]);
    first.spec.pool.resource_slice_count = 2;
    store.create(first.clone(), "t").unwrap();
    store.create(request("waiting"), "t").unwrap();
    let mut rt = Runtime::new(
        store,
        vec![Box::new(PoolStatusController::new(Default::default()))],
        SimTime::ZERO,
    );
    rt.run_due(1000).unwrap();
    let mut second = first;
    second.metadata = Default::default();
    second.metadata.name = "a-2".into();
    second.spec.devices = vec![device("gpu-1")];
    rt.store.create(second, "t").unwrap();
    rt.run_until_idle(SimTime::ZERO.plus_seconds(60), 1000)
        .unwrap();
    let status = answer(&rt, "waiting");
    assert_eq!(status.pools[0].validation_error, None);
    assert_eq!(status.pools[0].total_devices, Some(2));
    assert_eq!(status.pools[0].resource_slice_count, Some(2));
}

fn partitioned(attr_on_slice: bool, profile: impl Fn(&str) -> DeviceAttribute) -> ResourceSlice {
    let consume = |amount: &str| {
        vec![DeviceCounterConsumption {
            counter_set: "gpu-0".into(),
            counters: BTreeMap::from([("memory".to_string(), Counter { value: q(amount) })]),
            compatibility_groups: Vec::new(),
        }]
    };
    let mut devices = Vec::new();
    for (name, kind, amount) in [
        ("full", "Full", "40Gi"),
        ("half-0", "Half", "20Gi"),
        ("half-1", "Half", "20Gi"),
    ] {
        let mut d = device(name);
        d.consumes_counters = consume(amount);
        d.attributes.insert("profile".into(), profile(kind));
        devices.push(d);
    }
    devices.push(device("plain"));
    let mut s = slice("a", DRIVER, "node-a", devices);
    s.spec.shared_counters = vec![CounterSet {
        name: "gpu-0".into(),
        counters: BTreeMap::from([("memory".to_string(), Counter { value: q("40Gi") })]),
    }];
    if attr_on_slice {
        s.spec.partition_type_attribute = Some(format!("{DRIVER}/profile"));
    }
    s
}

fn string_attribute(value: &str) -> DeviceAttribute {
    DeviceAttribute {
        string_value: Some(value.into()),
        ..Default::default()
    }
}

#[test]
fn partition_summary_counts_what_still_fits() {
    for attr_on_slice in [true, false] {
        let mut store = Store::new();
        store
            .create(partitioned(attr_on_slice, string_attribute), "t")
            .unwrap();
        allocate(&mut store, "half", "node-a", "half-0", &[]);
        let mut r = request("parts");
        if !attr_on_slice {
            r.spec.default_partition_type_attribute = Some(format!("{DRIVER}/profile"));
        }
        store.create(r, "t").unwrap();
        let rt = run(store, PoolStatusControllerConfig::default());
        let pool = answer(&rt, "parts").pools[0].clone();
        assert_eq!(pool.validation_error, None);
        let summary: Vec<(String, String, i32, i32)> = pool
            .partition_summary
            .iter()
            .map(|p| (p.attribute.clone(), p.type_.clone(), p.total, p.allocatable))
            .collect();
        let attr = format!("{DRIVER}/profile");
        assert_eq!(
            summary,
            [
                (attr.clone(), "Full".into(), 1, 0),
                (attr, "Half".into(), 2, 1)
            ],
            "attribute on slice: {attr_on_slice}"
        );
    }
}

#[test]
fn no_partition_attribute_means_no_summary_and_a_non_string_type_is_an_error() {
    let mut store = Store::new();
    store
        .create(partitioned(false, string_attribute), "t")
        .unwrap();
    store.create(request("none"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let pool = answer(&rt, "none").pools[0].clone();
    assert!(pool.partition_summary.is_empty());
    assert_eq!(pool.validation_error, None);

    let mut store = Store::new();
    let int_attribute = |_: &str| DeviceAttribute {
        int_value: Some(1),
        ..Default::default()
    };
    store.create(partitioned(true, int_attribute), "t").unwrap();
    store.create(request("bad"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let pool = answer(&rt, "bad").pools[0].clone();
    assert!(pool.partition_summary.is_empty());
    assert_eq!(
        pool.validation_error.as_deref(),
        Some(
            "PartitionTypeMissing: device \"full\" in pool gpu.example.com/node-a does not carry partition type attribute \"gpu.example.com/profile\""
        )
    );
    // The counts stay valid.
    assert_eq!(pool.total_devices, Some(4));
}

#[test]
fn shareable_summary_aggregates_capacity() {
    let mut store = Store::new();
    let shareable = |name: &str| {
        let mut d = device(name);
        d.allow_multiple_allocations = Some(true);
        d.capacity.insert(
            "memory".into(),
            DeviceCapacity {
                value: q("80Gi"),
                request_policy: None,
            },
        );
        d
    };
    store
        .create(
            slice(
                "a",
                DRIVER,
                "node-a",
                vec![shareable("gpu-0"), shareable("gpu-1"), device("other")],
            ),
            "t",
        )
        .unwrap();
    allocate(&mut store, "c1", "node-a", "gpu-0", &[("memory", "30Gi")]);
    allocate(&mut store, "c2", "node-a", "gpu-0", &[("memory", "10Gi")]);
    store.create(request("share"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let pool = answer(&rt, "share").pools[0].clone();
    assert_eq!(pool.allocated_devices, Some(1));
    let summary = pool.shareable_summary.unwrap();
    assert_eq!(
        (
            summary.fully_available_devices,
            summary.partially_available_devices
        ),
        (1, 1)
    );
    let memory = &summary.capacity["memory"];
    assert_eq!(
        (
            memory.total.clone(),
            memory.consumed.clone(),
            memory.available.clone()
        ),
        (q("160Gi"), q("40Gi"), q("120Gi"))
    );

    let mut store = Store::new();
    store
        .create(slice("a", DRIVER, "node-a", vec![device("x")]), "t")
        .unwrap();
    store.create(request("plain"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    assert!(answer(&rt, "plain").pools[0].shareable_summary.is_none());
}

#[test]
fn answered_requests_can_be_cleaned_up() {
    let mut store = cluster();
    store.create(request("old"), "t").unwrap();
    let config = PoolStatusControllerConfig {
        cleanup_after_millis: Some(3_600_000),
    };
    let mut rt = Runtime::new(
        store,
        vec![Box::new(PoolStatusController::new(config))],
        SimTime::ZERO,
    );
    rt.advance_to(SimTime::ZERO.plus_seconds(3600), 1000)
        .unwrap();
    assert!(
        rt.store
            .get::<ResourcePoolStatusRequest>("", "old")
            .is_some()
    );
    rt.advance_to(SimTime::ZERO.plus_seconds(3601), 1000)
        .unwrap();
    assert!(
        rt.store
            .get::<ResourcePoolStatusRequest>("", "old")
            .is_none()
    );
}

#[test]
fn a_rule_selecting_by_class_marks_only_the_class_devices_unavailable() {
    use allot_api::resource::v1::{CelDeviceSelector, DeviceClass, DeviceSelector};
    let mut store = Store::new();
    let mut big = device("gpu-0");
    big.attributes
        .insert("model".into(), string_attribute("h100"));
    let mut small = device("gpu-1");
    small
        .attributes
        .insert("model".into(), string_attribute("t4"));
    store
        .create(slice("a", DRIVER, "node-a", vec![big, small]), "t")
        .unwrap();
    let mut class = DeviceClass::default();
    class.metadata.name = "h100".into();
    class.spec.selectors = vec![DeviceSelector {
        cel: Some(CelDeviceSelector {
            expression: format!("device.attributes[\"{DRIVER}\"].model == \"h100\""),
        }),
    }];
    store.create(class, "t").unwrap();
    let mut rule = DeviceTaintRule::default();
    rule.metadata.name = "h100-maintenance".into();
    rule.spec.taint.effect = DeviceTaintEffect::NoSchedule;
    rule.spec.device_selector = Some(DeviceTaintSelector {
        device_class_name: Some("h100".into()),
        ..Default::default()
    });
    store.create(rule, "t").unwrap();
    store.create(request("class"), "t").unwrap();
    let rt = run(store, PoolStatusControllerConfig::default());
    let pool = answer(&rt, "class").pools[0].clone();
    assert_eq!(
        (pool.unavailable_devices, pool.available_devices),
        (Some(1), Some(1))
    );
}

mod properties {
    use super::*;
    use proptest::prelude::*;

    /// Per pool: per device, (tainted, number of claims allocating it).
    fn pools() -> impl Strategy<Value = Vec<Vec<(bool, u8)>>> {
        prop::collection::vec(prop::collection::vec((any::<bool>(), 0u8..3), 0..6), 1..6)
    }

    proptest! {
        #[test]
        fn counts_match_a_model(pools in pools(), limit in 1i32..8) {
            let mut store = Store::new();
            let mut claim = 0;
            for (p, devices) in pools.iter().enumerate() {
                let pool = format!("pool-{p}");
                let mut list = Vec::new();
                for (d, (tainted, claims)) in devices.iter().enumerate() {
                    let mut dev = device(&format!("dev-{d}"));
                    if *tainted {
                        dev.taints.push(DeviceTaint {
                            key: "k".into(),
                            value: String::new(),
                            effect: DeviceTaintEffect::NoExecute,
                            time_added: None,
                        });
                    }
                    list.push(dev);
                    for _ in 0..*claims {
                        claim += 1;
                        allocate(&mut store, &format!("c-{claim}"), &pool, &format!("dev-{d}"), &[]);
                    }
                }
                store.create(slice(&pool, DRIVER, &pool, list), "t").unwrap();
            }
            let mut r = request("r");
            r.spec.limit = Some(limit);
            store.create(r, "t").unwrap();
            let rt = run(store, PoolStatusControllerConfig::default());
            let status = answer(&rt, "r");
            prop_assert_eq!(status.pool_count, Some(pools.len() as i32));
            prop_assert_eq!(status.pools.len(), pools.len().min(limit as usize));
            let names: Vec<&str> = status.pools.iter().map(|p| p.pool_name.as_str()).collect();
            let mut sorted = names.clone();
            sorted.sort();
            sorted.dedup();
            prop_assert_eq!(&names, &sorted);
            for pool in &status.pools {
                let index: usize = pool.pool_name["pool-".len()..].parse().unwrap();
                let devices = &pools[index];
                let total = devices.len() as i32;
                let allocated = devices.iter().filter(|(_, c)| *c > 0).count() as i32;
                let unavailable = devices.iter().filter(|(t, _)| *t).count() as i32;
                prop_assert_eq!(pool.total_devices, Some(total));
                prop_assert_eq!(pool.allocated_devices, Some(allocated));
                prop_assert_eq!(pool.unavailable_devices, Some(unavailable));
                prop_assert_eq!(pool.available_devices, Some((total - allocated - unavailable).max(0)));
            }
        }
    }
}
