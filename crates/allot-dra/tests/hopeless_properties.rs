//! Property test of issue 15: claims that cannot fit, generated in many shapes (more requests
//! than matching devices, selectors written differently for the same devices, many identical
//! claims, over-drawn shared counters, too few distinct values, no value shared by enough
//! devices, contradictory constraints, over-subscribed consumable capacity), are answered
//! "does not fit" with a proof in the explanation within a small budget of search steps
//! (counted, not timed: the allocator would answer `GaveUp` past it).

use allot_dra::{Budget, CelCache, Features, Outcome, Scenario, allocate_within};
use proptest::prelude::*;

const HEAD: &str = r#"apiVersion: v1
kind: Node
metadata: {name: node-1}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"#;

/// The steps a hopeless input may take: far below what an exhaustive search needs for these
/// sizes (up to 24 devices and 30 requests).
const STEPS: u64 = 20_000;

#[derive(Debug, Clone)]
struct Device {
    /// Its `numa` attribute.
    numa: u8,
    /// Units of the shared counter it draws (0: none).
    units: u8,
    /// Allows multiple allocations, with this much memory (Gi).
    shared_memory: Option<u8>,
}

/// The devices' slice, and with `counter` a second slice of the pool with the shared counter.
fn slice(devices: &[Device], counter: Option<u8>) -> String {
    let slices = if counter.is_some() { 2 } else { 1 };
    let head = |name: &str| {
        format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata: {{name: {name}}}\nspec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool: {{name: p, generation: 1, resourceSliceCount: {slices}}}\n"
        )
    };
    let mut out = String::new();
    if let Some(total) = counter {
        out.push_str(&head("counters"));
        out.push_str(&format!(
            "  sharedCounters:\n  - name: set\n    counters:\n      units: {{value: \"{total}\"}}\n"
        ));
    }
    out.push_str(&head("devices"));
    out.push_str("  devices:\n");
    for (i, d) in devices.iter().enumerate() {
        out.push_str(&format!(
            "  - name: gpu-{i}\n    attributes:\n      index: {{int: {i}}}\n      numa: {{int: {}}}\n",
            d.numa
        ));
        if d.units > 0 {
            out.push_str(&format!(
                "    consumesCounters:\n    - counterSet: set\n      counters:\n        units: {{value: \"{}\"}}\n",
                d.units
            ));
        }
        if let Some(gi) = d.shared_memory {
            out.push_str(&format!(
                "    allowMultipleAllocations: true\n    capacity:\n      memory: {{value: {gi}Gi}}\n"
            ));
        }
    }
    out
}

/// One request: count, selector, capacity request (Gi).
type Request = (u8, Option<String>, Option<u8>);

fn claim(name: usize, requests: &[Request], constraints: &[&str]) -> String {
    let mut out = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: c{name}, namespace: default}}\nspec:\n  devices:\n    requests:\n"
    );
    for (r, (count, selector, memory)) in requests.iter().enumerate() {
        out.push_str(&format!(
            "    - name: r{r}\n      exactly:\n        deviceClassName: gpu\n        count: {count}\n"
        ));
        if let Some(selector) = selector {
            out.push_str(&format!(
                "        selectors:\n        - cel: {{expression: '{selector}'}}\n"
            ));
        }
        if let Some(gi) = memory {
            out.push_str(&format!(
                "        capacity:\n          requests:\n            memory: {gi}Gi\n"
            ));
        }
    }
    if !constraints.is_empty() {
        out.push_str("    constraints:\n");
        for c in constraints {
            out.push_str(&format!("    - {c}\n"));
        }
    }
    out
}

/// Allocates within [`STEPS`]; the resources of the explanation's shortfalls, or why not.
fn shortfalls(yaml: &str) -> Result<Vec<String>, String> {
    let scenario = Scenario::parse(yaml).map_err(|e| e.to_string())?;
    let node = scenario.node(None).map_err(|e| e.to_string())?;
    let claims = scenario.claims_to_allocate().map_err(|e| e.to_string())?;
    let refs = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &refs);
    let budget = Budget {
        max_steps: STEPS,
        ..Budget::default()
    };
    match allocate_within(&input, &Features::all(), &CelCache::default(), &budget) {
        Ok(Outcome::Unschedulable(explanation)) => {
            if explanation.shortfalls.is_empty() {
                return Err(format!("no shortfall in\n{explanation}"));
            }
            for shortfall in &explanation.shortfalls {
                if shortfall.requests.is_empty() || shortfall.reason.is_empty() {
                    return Err(format!("a shortfall names no requests:\n{explanation}"));
                }
            }
            Ok(explanation
                .shortfalls
                .iter()
                .map(|s| s.resource.clone())
                .collect())
        }
        other => Err(format!("expected does not fit, got {other:?}")),
    }
}

/// A selector for `index < below`, in one of several spellings.
fn below(spelling: u8, below: u8) -> String {
    match spelling % 4 {
        0 => format!(r#"device.attributes["gpu.example.com"].index < {below}"#),
        1 => format!(
            r#"device.attributes["gpu.example.com"].index <= {}"#,
            below - 1
        ),
        2 => format!(r#"!(device.attributes["gpu.example.com"].index >= {below})"#),
        _ => format!(r#"{below} > device.attributes["gpu.example.com"].index"#),
    }
}

fn plain(n: usize) -> Vec<Device> {
    (0..n)
        .map(|i| Device {
            numa: (i % 4) as u8,
            units: 0,
            shared_memory: None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// More devices asked for (over several claims and requests, with counts) than match the
    /// requests' selectors.
    #[test]
    fn more_requests_than_matching_devices(
        n in 2usize..24,
        cut in 1u8..24,
        extra in 1usize..5,
        spellings in proptest::collection::vec(any::<u8>(), 30),
        counts in proptest::collection::vec(1u8..4, 30),
        per_claim in 1usize..6,
    ) {
        let matching = usize::from(cut).min(n);
        let wanted = matching + extra;
        let mut yaml = format!("{HEAD}{}", slice(&plain(n), None));
        let (mut given, mut c, mut r) = (0usize, 0usize, 0usize);
        let mut requests = Vec::new();
        while given < wanted {
            let count = usize::from(counts[r % counts.len()]).min(wanted - given);
            requests.push((count as u8, Some(below(spellings[r % spellings.len()], matching as u8)), None));
            given += count;
            r += 1;
            if requests.len() == per_claim || given == wanted {
                yaml.push_str(&claim(c, &requests, &[]));
                requests.clear();
                c += 1;
            }
        }
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["devices".to_string()]);
    }

    /// Many identical claims, one more than the devices they can use.
    #[test]
    fn many_identical_claims(n in 1usize..24, count in 1u8..3) {
        let devices = n * usize::from(count);
        let mut yaml = format!("{HEAD}{}", slice(&plain(devices), None));
        for c in 0..=n {
            yaml.push_str(&claim(c, &[(count, None, None)], &[]));
        }
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["devices".to_string()]);
    }

    /// Every device draws at least one unit of a shared counter; more devices are asked for
    /// than the counter has units (but no more than there are devices).
    #[test]
    fn over_drawn_counters(
        units in proptest::collection::vec(1u8..3, 4..20),
        total in 1u8..4,
        claims in 1usize..4,
    ) {
        let devices: Vec<Device> = units
            .iter()
            .enumerate()
            .map(|(i, &u)| Device { numa: (i % 2) as u8, units: u.min(total), shared_memory: None })
            .collect();
        let wanted = usize::from(total) + 1;
        prop_assume!(wanted <= devices.len());
        let mut yaml = format!("{HEAD}{}", slice(&devices, Some(total)));
        let mut left = wanted;
        for c in 0..claims {
            let count = if c + 1 == claims { left } else { left.min(1) };
            if count == 0 {
                break;
            }
            left -= count;
            yaml.push_str(&claim(c, &[(count as u8, None, None)], &[]));
        }
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["counter set/units of pool gpu.example.com/p".to_string()]);
    }

    /// A distinctAttribute over more devices than there are values of the attribute.
    #[test]
    fn too_few_distinct_values(values in 1u8..5, per_value in 1usize..6, requests in 1usize..4) {
        let devices: Vec<Device> = (0..usize::from(values) * per_value)
            .map(|i| Device { numa: (i % usize::from(values)) as u8, units: 0, shared_memory: None })
            .collect();
        let wanted = usize::from(values) + 1;
        prop_assume!(wanted <= devices.len());
        let mut list: Vec<Request> = Vec::new();
        let mut left = wanted;
        for r in 0..requests {
            let count = if r + 1 == requests { left } else { left.min(1) };
            if count == 0 {
                break;
            }
            left -= count;
            list.push((count as u8, None, None));
        }
        let yaml = format!(
            "{HEAD}{}{}",
            slice(&devices, None),
            claim(0, &list, &["distinctAttribute: gpu.example.com/numa"])
        );
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["distinctAttribute gpu.example.com/numa".to_string()]);
    }

    /// A matchAttribute across requests whose candidates have no value in common (each
    /// request selects its own NUMA node), or more devices than any value has.
    #[test]
    fn no_value_shared_by_enough_devices(n in 4usize..24, first in 0u8..4, second in 0u8..4, many in any::<bool>()) {
        let devices = plain(n);
        let per_value = n.div_ceil(4);
        let yaml = if many || first == second {
            // One request for more devices than any NUMA node has.
            format!(
                "{HEAD}{}{}",
                slice(&devices, None),
                claim(0, &[((per_value + 1) as u8, None, None)], &["matchAttribute: gpu.example.com/numa"])
            )
        } else {
            let on = |numa: u8| Some(format!(r#"device.attributes["gpu.example.com"].numa == {numa}"#));
            format!(
                "{HEAD}{}{}",
                slice(&devices, None),
                claim(0, &[(1, on(first), None), (1, on(second), None)], &["matchAttribute: gpu.example.com/numa"])
            )
        };
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["matchAttribute gpu.example.com/numa".to_string()]);
    }

    /// A matchAttribute and a distinctAttribute of the same attribute over two devices or more
    /// (each alone could be met: all devices share one NUMA node, and their indexes differ).
    #[test]
    fn contradictory_constraints(n in 2usize..24, count in 1u8..3, requests in 1usize..3, attribute in any::<bool>()) {
        let wanted = usize::from(count) * requests;
        prop_assume!(wanted >= 2 && wanted <= n);
        let list: Vec<Request> = (0..requests).map(|_| (count, None, None)).collect();
        let name = if attribute { "numa" } else { "index" };
        let devices: Vec<Device> = (0..n)
            .map(|_| Device { numa: 0, units: 0, shared_memory: None })
            .collect();
        let (first, second) = if attribute {
            ("matchAttribute: gpu.example.com/numa", "distinctAttribute: gpu.example.com/numa")
        } else {
            ("distinctAttribute: gpu.example.com/index", "matchAttribute: gpu.example.com/index")
        };
        let yaml = format!(
            "{HEAD}{}{}",
            slice(&devices, None),
            claim(0, &list, &[first, second])
        );
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec![format!("matchAttribute and distinctAttribute gpu.example.com/{name}")]);
    }

    /// Claims sharing devices that allow multiple allocations ask for more memory than the
    /// devices have together.
    #[test]
    fn over_subscribed_capacity(extra in proptest::collection::vec(0u8..5, 1..6), ask in 1u8..4) {
        // Every device can serve each claim (it has at least what one asks for).
        let memory: Vec<u8> = extra.iter().map(|e| ask + e).collect();
        let total: usize = memory.iter().map(|&m| usize::from(m)).sum();
        let devices: Vec<Device> = memory
            .iter()
            .map(|&m| Device { numa: 0, units: 0, shared_memory: Some(m) })
            .collect();
        let claims = total / usize::from(ask) + 1;
        let mut yaml = format!("{HEAD}{}", slice(&devices, None));
        for c in 0..claims {
            yaml.push_str(&claim(c, &[(1, None, Some(ask))], &[]));
        }
        let found = shortfalls(&yaml).map_err(TestCaseError::fail)?;
        prop_assert_eq!(found, vec!["capacity memory".to_string()]);
    }
}
