//! Property test for compatibility groups: on random partitionable pools, every allocation keeps
//! the rule (devices on one counter set, including those allocated before, all declare no
//! groups or share one group), the allocator finds an allocation whenever one exists (checked
//! by brute force), and the prunings do not change the answer.

use std::collections::BTreeMap;

use allot_dra::{Features, Outcome, Scenario, allocate, allocate_without_pruning};
use proptest::prelude::*;

/// One device: counter set index, memory in Gi, groups.
type DeviceSpec = (usize, u32, Vec<&'static str>);

const GROUPS: [&str; 3] = ["a", "b", "c"];
const SET_CAPACITY: u32 = 6;

fn device() -> impl Strategy<Value = DeviceSpec> {
    (
        0usize..2,
        1u32..4,
        proptest::sample::subsequence(GROUPS.to_vec(), 0..=2),
    )
}

fn scenario_text(devices: &[DeviceSpec], counts: &[usize], preallocated: bool) -> String {
    let mut docs = vec![
        r#"{"apiVersion":"allot.dev/v1alpha1","kind":"AllocationOptions","node":"node-1","featureGates":{"DRADeviceCompatibilityGroups":true}}"#.to_string(),
        r#"{"apiVersion":"v1","kind":"Node","metadata":{"name":"node-1"},"spec":{}}"#.to_string(),
        r#"{"apiVersion":"resource.k8s.io/v1","kind":"DeviceClass","metadata":{"name":"gpu"},"spec":{}}"#.to_string(),
    ];
    let devs: Vec<serde_json::Value> = devices
        .iter()
        .enumerate()
        .map(|(i, (set, memory, groups))| {
            serde_json::json!({
                "name": format!("dev-{i}"),
                "consumesCounters": [{
                    "counterSet": format!("set-{set}"),
                    "counters": {"memory": {"value": format!("{memory}Gi")}},
                    "compatibilityGroups": groups,
                }],
            })
        })
        .collect();
    let sets: Vec<serde_json::Value> = [0, 1]
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": format!("set-{s}"),
                "counters": {"memory": {"value": format!("{SET_CAPACITY}Gi")}},
            })
        })
        .collect();
    for (name, spec) in [
        ("counters", serde_json::json!({"sharedCounters": sets})),
        ("devices", serde_json::json!({"devices": devs})),
    ] {
        let mut spec = spec;
        spec["nodeName"] = "node-1".into();
        spec["driver"] = "gpu.example.com".into();
        spec["pool"] =
            serde_json::json!({"name": "pool", "generation": 1, "resourceSliceCount": 2});
        docs.push(
            serde_json::json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": name},
                "spec": spec,
            })
            .to_string(),
        );
    }
    if preallocated {
        docs.push(serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": "old", "namespace": "default"},
            "spec": {"devices": {"requests": [{"name": "r", "exactly": {"deviceClassName": "gpu"}}]}},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": "gpu.example.com", "pool": "pool", "device": "dev-0"}
            ]}}}
        }).to_string());
    }
    for (i, count) in counts.iter().enumerate() {
        docs.push(
            serde_json::json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": format!("claim-{i}"), "namespace": "default"},
                "spec": {"devices": {"requests": [
                    {"name": "r", "exactly": {"deviceClassName": "gpu", "count": count}}
                ]}},
            })
            .to_string(),
        );
    }
    docs.join("\n---\n")
}

/// Whether these devices may all be allocated together (counters and groups).
fn compatible(devices: &[DeviceSpec], chosen: &[usize]) -> bool {
    let mut per_set: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
    for &d in chosen {
        per_set.entry(devices[d].0).or_default().push(d);
    }
    per_set.values().all(|members| {
        let memory: u32 = members.iter().map(|&d| devices[d].1).sum();
        let empty = members.iter().filter(|&&d| devices[d].2.is_empty()).count();
        let shared = GROUPS
            .iter()
            .any(|g| members.iter().all(|&d| devices[d].2.contains(g)));
        memory <= SET_CAPACITY && (empty == members.len() || (empty == 0 && shared))
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn compatibility_groups_hold_and_nothing_is_missed(
        devices in proptest::collection::vec(device(), 1..7),
        counts in proptest::collection::vec(1usize..3, 1..3),
        preallocated in any::<bool>(),
    ) {
        let text = scenario_text(&devices, &counts, preallocated);
        let scenario = Scenario::parse(&text).expect("scenario parses");
        let features = Features::all();
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &allocated);
        let outcome = allocate(&input, &features).expect("no error");
        let plain = allocate_without_pruning(&input, &features).expect("no error");
        prop_assert_eq!(outcome.is_allocated(), plain.is_allocated());
        let fixed: Vec<usize> = if preallocated { vec![0] } else { Vec::new() };
        let needed: usize = counts.iter().sum();
        match outcome {
            Outcome::Allocated(results) => {
                let mut chosen = fixed.clone();
                for result in &results {
                    for device in &result.devices.results {
                        let index: usize = device.device.trim_start_matches("dev-").parse().expect("device index");
                        prop_assert!(!chosen.contains(&index), "device {} handed out twice", index);
                        chosen.push(index);
                    }
                }
                prop_assert_eq!(chosen.len(), fixed.len() + needed);
                prop_assert!(compatible(&devices, &chosen), "incompatible allocation {:?}", chosen);
            }
            Outcome::Unschedulable(_) => {
                let free = |d: usize| !fixed.contains(&d);
                // Brute force over the free devices.
                let possible = needed <= devices.len() - fixed.len()
                    && exists_free(&devices, &fixed, needed, &free);
                prop_assert!(!possible, "an allocation exists but none was found");
            }
            Outcome::GaveUp(gave_up) => prop_assert!(false, "{}", gave_up),
        }
    }
}

/// Whether `k` free devices exist that go together with `fixed` (brute force).
fn exists_free(
    devices: &[DeviceSpec],
    fixed: &[usize],
    k: usize,
    free: &dyn Fn(usize) -> bool,
) -> bool {
    fn go(
        devices: &[DeviceSpec],
        chosen: &mut Vec<usize>,
        k: usize,
        from: usize,
        free: &dyn Fn(usize) -> bool,
    ) -> bool {
        if k == 0 {
            return compatible(devices, chosen);
        }
        for d in from..devices.len() {
            if !free(d) {
                continue;
            }
            chosen.push(d);
            let ok = compatible(devices, chosen) && go(devices, chosen, k - 1, d + 1, free);
            chosen.pop();
            if ok {
                return true;
            }
        }
        false
    }
    go(devices, &mut fixed.to_vec(), k, 0, free)
}
