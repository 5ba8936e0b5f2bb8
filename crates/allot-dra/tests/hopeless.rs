//! Regression tests of issue 15 (items 2 and 3): claims that cannot fit are answered "does
//! not fit", with the requests and devices that prove it, within a small number of search
//! steps (not seconds: steps do not depend on the machine); a search the bounds cannot cut
//! gives up within its budget, memo included; thousands of claims that fit are allocated
//! without deep recursion, on a thread with a small stack.

use allot_dra::{Budget, CelCache, Features, Outcome, Scenario, allocate_within};

const HEAD: &str = r#"apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"#;

/// One slice of `n` devices with an `index` and a `group` (index / `group_size`) attribute.
fn slice(n: usize, group_size: usize) -> String {
    let mut out = String::from(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {name: node-1-gpus}\nspec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool: {name: node-1, generation: 1, resourceSliceCount: 1}\n  devices:\n",
    );
    for i in 0..n {
        out.push_str(&format!(
            "  - name: gpu-{i}\n    attributes:\n      index: {{int: {i}}}\n      group: {{int: {}}}\n",
            i / group_size
        ));
    }
    out
}

/// A claim with one-device requests, each with `selector` (if any), and a constraint line.
fn claim(
    name: &str,
    requests: usize,
    count: usize,
    selector: Option<&str>,
    constraint: &str,
) -> String {
    let mut out = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  devices:\n    requests:\n"
    );
    for r in 0..requests {
        out.push_str(&format!(
            "    - name: r{r}\n      exactly:\n        deviceClassName: gpu.example.com\n        count: {count}\n"
        ));
        if let Some(selector) = selector {
            out.push_str(&format!(
                "        selectors:\n        - cel: {{expression: '{selector}'}}\n"
            ));
        }
    }
    if !constraint.is_empty() {
        out.push_str(&format!("    constraints:\n    - {constraint}\n"));
    }
    out
}

fn outcome(yaml: &str, budget: &Budget) -> Outcome {
    let scenario = Scenario::parse(yaml).expect("scenario parses");
    outcome_of(&scenario, budget)
}

fn outcome_of(scenario: &Scenario, budget: &Budget) -> Outcome {
    let node = scenario.node(None).expect("one node");
    let claims = scenario.claims_to_allocate().expect("claims");
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    allocate_within(&input, &Features::default(), &CelCache::default(), budget).expect("no error")
}

/// A few thousand steps: milliseconds on any machine.
fn small() -> Budget {
    Budget {
        max_steps: 5_000,
        ..Budget::default()
    }
}

/// The explanation of an answer that must be "does not fit" with a device shortfall of
/// `requests` requests and `devices` devices.
fn assert_device_shortfall(outcome: &Outcome, requests: usize, devices: usize) {
    let Outcome::Unschedulable(explanation) = outcome else {
        panic!("expected does not fit, got {outcome:?}");
    };
    let shortfall = explanation
        .shortfalls
        .first()
        .unwrap_or_else(|| panic!("no shortfall in\n{explanation}"));
    assert_eq!(shortfall.resource, "devices", "{explanation}");
    assert_eq!(shortfall.requests.len(), requests, "{explanation}");
    assert_eq!(shortfall.devices.len(), devices, "{explanation}");
    let printed = explanation.to_string();
    assert!(
        printed.contains("not enough devices:")
            && printed.contains(&format!("only {devices} devices can serve any of them")),
        "{printed}"
    );
}

#[test]
fn a_claim_of_23_requests_each_matching_22_of_44_devices_does_not_fit() {
    let yaml = format!(
        "{HEAD}{}{}",
        slice(44, 1),
        claim(
            "hostile",
            23,
            1,
            Some(r#"device.attributes["gpu.example.com"].index < 22"#),
            ""
        )
    );
    let answer = outcome(&yaml, &small());
    assert_device_shortfall(&answer, 23, 22);
    let Outcome::Unschedulable(explanation) = answer else {
        unreachable!()
    };
    assert_eq!(
        explanation.shortfalls[0].requests[0], "default/hostile/r0",
        "requests are named claim/request"
    );
    assert_eq!(
        explanation.shortfalls[0].devices[21],
        "gpu.example.com/node-1/gpu-21"
    );
}

#[test]
fn requests_with_different_selectors_for_the_same_devices_are_counted_together() {
    // Different expressions, one set of devices: the bound works on candidates, not text.
    let mut yaml = format!("{HEAD}{}", slice(44, 1));
    for (i, selector) in [
        r#"device.attributes["gpu.example.com"].index < 22"#,
        r#"device.attributes["gpu.example.com"].index <= 21"#,
        r#"!(device.attributes["gpu.example.com"].index >= 22)"#,
    ]
    .iter()
    .enumerate()
    {
        yaml.push_str(&claim(&format!("c{i}"), 8, 1, Some(selector), ""));
    }
    assert_device_shortfall(&outcome(&yaml, &small()), 24, 22);
}

#[test]
fn n_plus_one_one_device_claims_on_n_devices_do_not_fit() {
    for n in [14, 16, 20, 40] {
        let mut yaml = format!("{HEAD}{}", slice(n, 1));
        for c in 0..=n {
            yaml.push_str(&claim(&format!("c{c}"), 1, 1, None, ""));
        }
        assert_device_shortfall(&outcome(&yaml, &small()), n + 1, n);
    }
}

#[test]
fn a_claim_of_21_requests_on_20_devices_does_not_fit() {
    let yaml = format!(
        "{HEAD}{}{}",
        slice(20, 1),
        claim("hostile", 21, 1, None, "")
    );
    assert_device_shortfall(&outcome(&yaml, &small()), 21, 20);
}

#[test]
fn too_few_distinct_values_and_contradictory_constraints_do_not_fit() {
    // 23 devices with distinct groups among 22 groups of 2.
    let yaml = format!(
        "{HEAD}{}{}",
        slice(44, 2),
        claim(
            "distinct",
            23,
            1,
            None,
            "distinctAttribute: gpu.example.com/group"
        )
    );
    let Outcome::Unschedulable(explanation) = outcome(&yaml, &small()) else {
        panic!("distinct values: expected does not fit");
    };
    assert_eq!(
        explanation.shortfalls[0].resource, "distinctAttribute gpu.example.com/group",
        "{explanation}"
    );
    // The same devices cannot share a group and differ in it.
    let yaml = format!(
        "{HEAD}{}{}",
        slice(44, 2),
        claim("both", 2, 1, None, "matchAttribute: gpu.example.com/group")
            .replace(
                "    - matchAttribute: gpu.example.com/group\n",
                "    - matchAttribute: gpu.example.com/group\n    - distinctAttribute: gpu.example.com/group\n"
            )
    );
    let Outcome::Unschedulable(explanation) = outcome(&yaml, &small()) else {
        panic!("contradiction: expected does not fit");
    };
    assert_eq!(
        explanation.shortfalls[0].resource,
        "matchAttribute and distinctAttribute gpu.example.com/group",
        "{explanation}"
    );
}

/// `groups` groups of 3 devices, and one claim more than groups, each needing 2 devices of
/// one group: a pigeonhole over groups that no bound here sees (every claim fits alone, the
/// devices suffice), so the search would explore every way to spread claims over groups.
fn pairs_in_triples(groups: usize) -> String {
    let mut yaml = format!("{HEAD}{}", slice(3 * groups, 3));
    for c in 0..=groups {
        yaml.push_str(&claim(
            &format!("c{c}"),
            1,
            2,
            None,
            "matchAttribute: gpu.example.com/group",
        ));
    }
    yaml
}

#[test]
fn a_search_the_bounds_cannot_cut_gives_up_within_its_budget() {
    let budget = Budget {
        max_steps: 50_000,
        max_memo_bytes: 1 << 20,
        max_time: None,
    };
    let Outcome::GaveUp(gave_up) = outcome(&pairs_in_triples(16), &budget) else {
        panic!("expected the search to give up");
    };
    assert!(
        gave_up.steps > budget.max_steps && gave_up.steps < budget.max_steps + 1_000,
        "{gave_up:?}"
    );
    assert!(gave_up.memo_bytes > 0 && gave_up.memo_bytes <= budget.max_memo_bytes);
    assert_eq!(gave_up.claims.len(), 17);
    assert!(
        gave_up.to_string().starts_with(&format!(
            "gave up after {} search steps (the limit of one allocation) on node node-1",
            gave_up.steps
        )),
        "{gave_up}"
    );
    // The memo stops growing at its limit; the search goes on without it.
    let tight = Budget {
        max_steps: 50_000,
        max_memo_bytes: 2_000,
        max_time: None,
    };
    let Outcome::GaveUp(gave_up) = outcome(&pairs_in_triples(16), &tight) else {
        panic!("expected the search to give up");
    };
    assert!(gave_up.memo_bytes <= 2_000, "{gave_up:?}");
    // Small enough, the same shape is proved not to fit by the exhaustive search.
    assert!(matches!(
        outcome(&pairs_in_triples(3), &Budget::default()),
        Outcome::Unschedulable(_)
    ));
}

#[test]
fn six_thousand_claims_on_six_thousand_devices_fit_on_a_small_stack() {
    // A 1 MiB stack: the recursive search overflowed 8 MiB at 6,000 claims.
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let n = 6_000;
            let mut scenario = Scenario::parse(&format!(
                "{HEAD}{}{}",
                slice(1, 1),
                claim("c", 1, 1, None, "")
            ))
            .expect("scenario parses");
            let device = scenario.slices[0].spec.devices[0].clone();
            scenario.slices[0].spec.devices = (0..n)
                .map(|i| {
                    let mut device = device.clone();
                    device.name = format!("gpu-{i}");
                    device
                })
                .collect();
            let claim = scenario.claims[0].clone();
            scenario.claims = (0..n)
                .map(|i| {
                    let mut claim = claim.clone();
                    claim.metadata.name = format!("c{i}");
                    claim
                })
                .collect();
            let Outcome::Allocated(results) = outcome_of(&scenario, &Budget::default()) else {
                panic!("6,000 claims on 6,000 devices must fit");
            };
            assert_eq!(results.len(), n);
            // First fit: claim i gets device i.
            for (i, result) in results.iter().enumerate() {
                assert_eq!(result.devices.results[0].device, format!("gpu-{i}"));
            }
        })
        .expect("thread starts");
    handle.join().expect("no stack overflow, no panic");
}

#[test]
fn a_time_limit_stops_a_search_that_would_run_long() {
    // No step limit to speak of: only the clock stops this hopeless search.
    let budget = Budget {
        max_steps: u64::MAX,
        max_time: Some(std::time::Duration::from_nanos(1)),
        ..Budget::default()
    };
    let Outcome::GaveUp(gave_up) = outcome(&pairs_in_triples(16), &budget) else {
        panic!("expected the search to give up");
    };
    assert_eq!(gave_up.time_limit.as_deref(), Some("1ns"));
    assert!(
        gave_up.to_string().starts_with(&format!(
            "gave up at the time limit of one allocation (1ns, {} search steps) on node node-1",
            gave_up.steps
        )),
        "{gave_up}"
    );
    // Without the time limit the step limit ends it, as before.
    let Outcome::GaveUp(gave_up) = outcome(&pairs_in_triples(16), &small()) else {
        panic!("expected the search to give up");
    };
    assert_eq!(gave_up.time_limit, None);
}
