//! Property tests: whatever the allocator hands out respects exclusivity, capacities, counters,
//! selectors and constraints.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use allot_dra::{Features, Outcome, Scenario, allocate};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct DeviceSpec {
    driver_b: bool,
    numa: u8,
    multi: bool,
    memory_gi: u8,
    counter: Option<u8>,
}

#[derive(Debug, Clone)]
struct RequestSpec {
    class_b: bool,
    count: u8,
    memory_gi: Option<u8>,
}

#[derive(Debug, Clone)]
struct ClaimSpec {
    requests: Vec<RequestSpec>,
    constraint: u8,
}

fn device() -> impl Strategy<Value = DeviceSpec> {
    (
        any::<bool>(),
        0u8..3,
        any::<bool>(),
        1u8..8,
        proptest::option::of(1u8..4),
    )
        .prop_map(|(driver_b, numa, multi, memory_gi, counter)| DeviceSpec {
            driver_b,
            numa,
            multi,
            memory_gi,
            counter,
        })
}

fn claim() -> impl Strategy<Value = ClaimSpec> {
    (
        proptest::collection::vec(
            (any::<bool>(), 1u8..3, proptest::option::of(1u8..4)).prop_map(
                |(class_b, count, memory_gi)| RequestSpec {
                    class_b,
                    count,
                    memory_gi,
                },
            ),
            1..3,
        ),
        0u8..3,
    )
        .prop_map(|(requests, constraint)| ClaimSpec {
            requests,
            constraint,
        })
}

fn scenario_yaml(devices: &[DeviceSpec], claims: &[ClaimSpec], counter_total: u8) -> String {
    let mut out = String::from(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-a\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"driver-a\"\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-b\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"driver-b\"\n",
    );
    for driver in ["driver-a", "driver-b"] {
        let mine: Vec<(usize, &DeviceSpec)> = devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.driver_b == (driver == "driver-b"))
            .collect();
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-counters\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  sharedCounters:\n  - name: set\n    counters:\n      units:\n        value: \"{counter_total}\"\n"
        ));
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-devices\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  devices:\n"
        ));
        for (i, d) in mine {
            out.push_str(&format!(
                "  - name: dev-{i}\n    attributes:\n      numa:\n        int: {}\n    capacity:\n      memory:\n        value: {}Gi\n",
                d.numa, d.memory_gi
            ));
            if d.multi {
                out.push_str("    allowMultipleAllocations: true\n");
            }
            if let Some(units) = d.counter {
                out.push_str(&format!(
                    "    consumesCounters:\n    - counterSet: set\n      counters:\n        units:\n          value: \"{units}\"\n"
                ));
            }
        }
    }
    for (c, claim) in claims.iter().enumerate() {
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: claim-{c}\n  namespace: default\nspec:\n  devices:\n    requests:\n"
        ));
        for (r, req) in claim.requests.iter().enumerate() {
            out.push_str(&format!(
                "    - name: req-{r}\n      exactly:\n        deviceClassName: class-{}\n        allocationMode: ExactCount\n        count: {}\n",
                if req.class_b { "b" } else { "a" },
                req.count
            ));
            if let Some(memory) = req.memory_gi {
                out.push_str(&format!(
                    "        capacity:\n          requests:\n            memory: {memory}Gi\n"
                ));
            }
        }
        match claim.constraint {
            1 => out.push_str("    constraints:\n    - matchAttribute: driver-a/numa\n"),
            2 => out.push_str("    constraints:\n    - distinctAttribute: driver-a/numa\n"),
            _ => {}
        }
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn allocations_respect_exclusivity_capacity_counters_selectors_and_constraints(
        devices in proptest::collection::vec(device(), 1..8),
        claims in proptest::collection::vec(claim(), 1..3),
        counter_total in 1u8..6,
    ) {
        let yaml = scenario_yaml(&devices, &claims, counter_total);
        let scenario = Scenario::parse(&yaml).expect("generated scenario parses");
        let node = scenario.node(None).expect("one node");
        let to_allocate = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&to_allocate);
        let input = scenario.input(node, &to_allocate, &allocated);
        let outcome = allocate(&input, &Features::all());
        // The prunings never change the answer (first solution, or the same error).
        let plain = allot_dra::allocate_without_pruning(&input, &Features::all());
        match (&outcome, &plain) {
            (Ok(Outcome::Allocated(a)), Ok(Outcome::Allocated(b))) => prop_assert_eq!(a, b),
            (Ok(Outcome::Unschedulable(_)), Ok(Outcome::Unschedulable(_))) => {}
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "pruned {:?} but plain {:?}", outcome, plain),
        }
        let Ok(Outcome::Allocated(results)) = outcome else {
            // Not fitting is a valid answer; errors must not happen on this well-formed input.
            prop_assert!(outcome.is_ok(), "unexpected error: {outcome:?}");
            return Ok(());
        };
        prop_assert_eq!(results.len(), claims.len());
        let spec_of = |driver: &str, name: &str| -> Option<&DeviceSpec> {
            let index: usize = name.strip_prefix("dev-")?.parse().ok()?;
            let spec = devices.get(index)?;
            (spec.driver_b == (driver == "driver-b")).then_some(spec)
        };
        let mut exclusive: BTreeSet<(String, String)> = BTreeSet::new();
        let mut memory: HashMap<(String, String), u32> = HashMap::new();
        let mut counted: BTreeSet<(String, String)> = BTreeSet::new();
        let mut counters: BTreeMap<String, u32> = BTreeMap::new();
        for (claim, result) in claims.iter().zip(&results) {
            let mut numas: Vec<u8> = Vec::new();
            for r in &result.devices.results {
                let key = (r.driver.to_string(), r.device.to_string());
                let spec = spec_of(&r.driver, &r.device);
                prop_assert!(spec.is_some(), "unknown device {:?}", key);
                let spec = spec.unwrap();
                let request: usize = r.request.trim_start_matches("req-").parse().unwrap();
                let req = &claim.requests[request];
                // Selector: the class picks the driver.
                prop_assert_eq!(r.driver == "driver-b", req.class_b);
                if spec.multi {
                    prop_assert!(r.share_id.is_some());
                    let used = r.consumed_capacity.get("memory").map(|q| q.value() as u32 >> 30).unwrap_or(0);
                    *memory.entry(key.clone()).or_default() += used;
                    prop_assert!(memory[&key] <= u32::from(spec.memory_gi), "capacity exceeded on {:?}", key);
                } else {
                    prop_assert!(exclusive.insert(key.clone()), "device {:?} handed out twice", key);
                    if let Some(gi) = req.memory_gi {
                        prop_assert!(gi <= spec.memory_gi);
                    }
                }
                if let Some(units) = spec.counter
                    && counted.insert(key.clone())
                {
                    let total = counters.entry(r.driver.to_string()).or_default();
                    *total += u32::from(units);
                    prop_assert!(*total <= u32::from(counter_total), "counters exceeded for {}", r.driver);
                }
                numas.push(spec.numa);
            }
            match claim.constraint {
                1 => prop_assert!(numas.windows(2).all(|w| w[0] == w[1]), "matchAttribute violated: {numas:?}"),
                2 => {
                    let distinct: BTreeSet<u8> = numas.iter().copied().collect();
                    prop_assert_eq!(distinct.len(), numas.len(), "distinctAttribute violated: {:?}", numas);
                }
                _ => {}
            }
        }
    }
}
