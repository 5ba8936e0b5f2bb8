//! The fast path (plain requests, attribute constraints, simple devices, walked over what the
//! node view keeps) answers exactly as the general search, on random inputs, and it does take
//! the calls it is meant for.

use allot_dra::{
    CelCache, Features, Outcome, Scenario, allocate_fast_path_only, allocate_with_cache,
    allocate_without_pruning,
};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct DeviceSpec {
    driver_b: bool,
    numa: u8,
    /// 0: simple; 1: binding conditions; 2: allows multiple allocations; 3: draws counters;
    /// 4: tainted; 5: a list attribute instead of an int (constraints on it).
    kind: u8,
    /// Held by an existing claim.
    in_use: bool,
}

#[derive(Debug, Clone)]
struct RequestSpec {
    /// 0: class a, 1: class b, 2: class any.
    class: u8,
    count: u8,
    /// A request selector on numa.
    numa_below: Option<u8>,
}

#[derive(Debug, Clone)]
struct ClaimSpec {
    requests: Vec<RequestSpec>,
    /// 0: none, 1: matchAttribute numa, 2: distinctAttribute numa.
    constraint: u8,
    /// The constraint names only the first request.
    first_only: bool,
}

fn device() -> impl Strategy<Value = DeviceSpec> {
    (
        any::<bool>(),
        0u8..3,
        prop_oneof![6 => Just(0u8), 1 => 1u8..6],
        proptest::bool::weighted(0.3),
    )
        .prop_map(|(driver_b, numa, kind, in_use)| DeviceSpec {
            driver_b,
            numa,
            kind,
            in_use,
        })
}

fn claim() -> impl Strategy<Value = ClaimSpec> {
    (
        proptest::collection::vec(
            (0u8..3, 1u8..4, proptest::option::of(1u8..3)).prop_map(
                |(class, count, numa_below)| RequestSpec {
                    class,
                    count,
                    numa_below,
                },
            ),
            1..3,
        ),
        0u8..3,
        any::<bool>(),
    )
        .prop_map(|(requests, constraint, first_only)| ClaimSpec {
            requests,
            constraint,
            first_only,
        })
}

fn scenario_yaml(devices: &[DeviceSpec], claims: &[ClaimSpec]) -> String {
    let mut out = String::from(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-a\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"example.com\"\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-b\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"other.example.com\"\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-any\nspec: {}\n",
    );
    let mut held = Vec::new();
    for driver in ["example.com", "other.example.com"] {
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-counters\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  sharedCounters:\n  - name: set\n    counters:\n      units:\n        value: \"2\"\n"
        ));
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-devices\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  devices:\n"
        ));
        for (i, d) in devices
            .iter()
            .enumerate()
            .filter(|(_, d)| d.driver_b == (driver == "other.example.com"))
        {
            out.push_str(&format!("  - name: dev-{i}\n    attributes:\n"));
            if d.kind == 5 {
                out.push_str(&format!(
                    "      numa:\n        ints: [{}, {}]\n",
                    d.numa,
                    d.numa + 1
                ));
            } else {
                out.push_str(&format!("      numa:\n        int: {}\n", d.numa));
            }
            match d.kind {
                1 => out.push_str("    bindingConditions: [ready]\n    bindingFailureConditions: [failed]\n"),
                2 => out.push_str("    allowMultipleAllocations: true\n"),
                3 => out.push_str(
                    "    consumesCounters:\n    - counterSet: set\n      counters:\n        units:\n          value: \"1\"\n",
                ),
                4 => out.push_str("    taints:\n    - key: broken\n      effect: NoSchedule\n"),
                _ => {}
            }
            if d.in_use {
                held.push((driver, i));
            }
        }
    }
    if !held.is_empty() {
        out.push_str(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: existing\n  namespace: default\nspec:\n  devices:\n    requests:\n    - name: held\n      exactly:\n        deviceClassName: class-any\n        allocationMode: All\nstatus:\n  allocation:\n    devices:\n      results:\n",
        );
        for (driver, i) in held {
            out.push_str(&format!(
                "      - request: held\n        driver: {driver}\n        pool: pool\n        device: dev-{i}\n"
            ));
        }
    }
    for (c, claim) in claims.iter().enumerate() {
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: claim-{c}\n  namespace: default\nspec:\n  devices:\n    requests:\n"
        ));
        for (r, req) in claim.requests.iter().enumerate() {
            let class = ["class-a", "class-b", "class-any"][usize::from(req.class)];
            out.push_str(&format!(
                "    - name: req-{r}\n      exactly:\n        deviceClassName: {class}\n        count: {}\n",
                req.count
            ));
            if let Some(below) = req.numa_below {
                // Qualified by the device's own driver, so that it reads every device's numa.
                out.push_str(&format!(
                    "        selectors:\n        - cel:\n            expression: device.attributes[device.driver].numa < {below}\n"
                ));
            }
        }
        let attribute = "example.com/numa";
        let requests = if claim.first_only {
            "\n      requests: [req-0]"
        } else {
            ""
        };
        match claim.constraint {
            1 => out.push_str(&format!(
                "    constraints:\n    - matchAttribute: {attribute}{requests}\n"
            )),
            2 => out.push_str(&format!(
                "    constraints:\n    - distinctAttribute: {attribute}{requests}\n"
            )),
            _ => {}
        }
        out.push_str(
            "    config:\n    - opaque:\n        driver: example.com\n        parameters: {a: 1}\n",
        );
    }
    out
}

/// What an allocation call answers.
type Answer = Result<Outcome, allot_dra::Error>;

/// The fast path's answer after a first call prepared the node view, and the plain search's.
fn answers(
    yaml: &str,
    features: &Features,
) -> (Option<Vec<allot_dra::AllocationResult>>, Answer, Answer) {
    let mut scenario = Scenario::parse(yaml).expect("generated scenario parses");
    scenario.assign_identities();
    let node = scenario.node(None).expect("one node");
    let to_allocate = scenario.claims_to_allocate().expect("claims");
    let allocated = scenario.allocated_claims(&to_allocate);
    let input = scenario.input(node, &to_allocate, &allocated);
    let cache = CelCache::default();
    let first = allocate_with_cache(&input, features, &cache);
    let fast = allocate_fast_path_only(&input, features, &cache);
    let second = allocate_with_cache(&input, features, &cache);
    match (&first, &second) {
        (Ok(a), Ok(b)) => assert_eq!(a, b, "the second call answered differently"),
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string()),
        _ => panic!("the second call answered differently: {first:?} then {second:?}"),
    }
    (fast, second, allocate_without_pruning(&input, features))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, .. ProptestConfig::default() })]

    #[test]
    fn the_fast_path_answers_as_the_search(
        devices in proptest::collection::vec(device(), 1..10),
        claims in proptest::collection::vec(claim(), 1..3),
        all_gates in any::<bool>(),
    ) {
        let features = if all_gates { Features::all() } else { Features::default() };
        let yaml = scenario_yaml(&devices, &claims);
        let (fast, kept, plain) = answers(&yaml, &features);
        match (&kept, &plain) {
            (Ok(Outcome::Allocated(a)), Ok(Outcome::Allocated(b))) => prop_assert_eq!(a, b),
            (Ok(Outcome::Unschedulable(a)), Ok(Outcome::Unschedulable(b))) => prop_assert_eq!(a, b),
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            _ => prop_assert!(false, "with the kept cache {:?} but plain {:?}", kept, plain),
        }
        if let Some(results) = fast {
            prop_assert!(
                matches!(&plain, Ok(Outcome::Allocated(b)) if *b == results),
                "fast path {:?} but plain {:?}", results, plain
            );
        }
    }
}

const BENCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/dra");

#[test]
fn the_fast_path_takes_the_plain_shapes_and_leaves_the_rest() {
    let cases = [
        ("gpu8-1claim-1gpu", true),
        ("gpu64-4gpu-numa", true),
        // The first pick fails the constraint, the walk backtracks to NUMA node 7.
        ("busy-64gpu-4numa-match", true),
        ("nofit-64gpu-4numa-match", false),
        ("partitionable-8gpu-mig", false),
    ];
    for (name, taken) in cases {
        let yaml = std::fs::read_to_string(format!("{BENCH}/{name}.yaml")).expect("scenario");
        let scenario = Scenario::parse(&yaml).expect("scenario parses");
        let features = scenario.features().expect("features");
        let (fast, kept, plain) = answers(&yaml, &features);
        assert_eq!(fast.is_some(), taken, "{name}");
        if let Some(results) = fast {
            assert!(
                matches!(&kept, Ok(Outcome::Allocated(a)) if *a == results),
                "{name}"
            );
        }
        match (&kept, &plain) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{name}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{name}"),
            _ => panic!("{name}: {kept:?} vs {plain:?}"),
        }
    }
    // The plain search is exponential on the adversarial scenario: only the fast path here.
    let yaml = std::fs::read_to_string(format!("{BENCH}/adversarial-all-distinct.yaml"))
        .expect("scenario");
    let mut scenario = Scenario::parse(&yaml).expect("scenario parses");
    scenario.assign_identities();
    let features = scenario.features().expect("features");
    let node = scenario.node(None).expect("node");
    let claims = scenario.claims_to_allocate().expect("claims");
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    let cache = CelCache::default();
    assert!(allocate_with_cache(&input, &features, &cache).is_err());
    assert!(allocate_fast_path_only(&input, &features, &cache).is_none());
    // Without identities the node view serves one call: no fast path.
    let yaml = std::fs::read_to_string(format!("{BENCH}/gpu8-1claim-1gpu.yaml")).expect("scenario");
    let scenario = Scenario::parse(&yaml).expect("scenario parses");
    let node = scenario.node(None).expect("node");
    let claims = scenario.claims_to_allocate().expect("claims");
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    let cache = CelCache::default();
    let features = scenario.features().expect("features");
    assert!(allocate_with_cache(&input, &features, &cache).is_ok());
    assert!(allocate_fast_path_only(&input, &features, &cache).is_none());
}

/// A claim without constraints for 8 of 300 devices, some in use: the fast path takes the
/// first free devices in search order however long the list (the walk it replaces gave up
/// after 1,024 visits), and they are the search's.
#[test]
fn a_claim_without_constraints_takes_the_first_free_devices_of_a_long_list() {
    let mut yaml = String::from(
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu\n\
         spec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu.example.com\"\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\n\
         spec:\n  driver: gpu.example.com\n  nodeName: node-1\n  pool:\n    name: p\n    \
         generation: 1\n    resourceSliceCount: 1\n  devices:\n",
    );
    for i in 0..300 {
        yaml.push_str(&format!("  - name: gpu-{i:03}\n"));
    }
    yaml.push_str(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: held\n  \
         namespace: default\nspec:\n  devices:\n    requests:\n    - name: r\n      exactly:\n        \
         deviceClassName: gpu\n        count: 3\nstatus:\n  allocation:\n    devices:\n      results:\n",
    );
    for i in [0, 2, 5] {
        yaml.push_str(&format!(
            "      - request: r\n        driver: gpu.example.com\n        pool: p\n        device: gpu-{i:03}\n"
        ));
    }
    yaml.push_str(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: eight\n  \
         namespace: default\nspec:\n  devices:\n    requests:\n    - name: a\n      exactly:\n        \
         deviceClassName: gpu\n        count: 3\n    - name: b\n      exactly:\n        \
         deviceClassName: gpu\n        count: 5\n",
    );
    let features = Features::default();
    let (fast, kept, plain) = answers(&yaml, &features);
    let fast = fast.expect("the fast path answers");
    let devices: Vec<(String, String)> = fast[0]
        .devices
        .results
        .iter()
        .map(|r| (r.request.to_string(), r.device.to_string()))
        .collect();
    let want: Vec<(String, String)> = [
        ("a", 1),
        ("a", 3),
        ("a", 4),
        ("b", 6),
        ("b", 7),
        ("b", 8),
        ("b", 9),
        ("b", 10),
    ]
    .iter()
    .map(|(r, i)| (r.to_string(), format!("gpu-{i:03}")))
    .collect();
    assert_eq!(devices, want);
    assert!(matches!(&kept, Ok(Outcome::Allocated(a)) if *a == fast));
    assert!(matches!(&plain, Ok(Outcome::Allocated(b)) if *b == fast));
}
