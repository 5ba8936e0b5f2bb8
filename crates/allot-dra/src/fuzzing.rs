//! The `allocate` fuzz target's body (`fuzz/fuzz_targets/allocate.rs`), also replayed over the
//! committed corpus by `cargo test -p allot-dra`: the input bytes drive a small generator of
//! allocation scenarios (devices on two drivers with NUMA attributes, shared counters,
//! devices allowing multiple allocations with a memory capacity, claims with counts, `All`,
//! subrequests, capacity requests, selectors and constraints), and [`check`] allocates them
//! and asserts what must hold whatever the input:
//!
//! - the call ends within its step budget (a [`crate::Outcome::GaveUp`] reports no more steps
//!   than the budget allows);
//! - the prunings and bounds never change an answer: whenever upstream's exhaustive walk
//!   (the search without prunings) finishes within a larger budget, both answer the same
//!   (the same devices, both "does not fit", or the same error);
//! - an allocation hands no device out twice (except shares of devices allowing multiple
//!   allocations, whose capacity is never exceeded), draws no shared counter beyond what it
//!   holds, gives each request its count of devices of its class that its selector accepts,
//!   and keeps the claims' constraints;
//! - a bound's proof of "does not fit" names requests, and devices for device shortfalls.

use std::collections::{BTreeMap, BTreeSet};

use crate::{AllocationResult, Budget, CelCache, Features, Outcome, Scenario};

/// The budget of the pruned search.
const STEPS: u64 = 100_000;
/// The budget of the exhaustive walk it is compared with.
const PLAIN_STEPS: u64 = 300_000;

/// Reads the input bytes; zeros once they run out.
struct Bytes<'a>(&'a [u8]);

impl Bytes<'_> {
    fn byte(&mut self) -> u8 {
        match self.0.split_first() {
            Some((&b, rest)) => {
                self.0 = rest;
                b
            }
            None => 0,
        }
    }

    /// A number in `0..n`.
    fn below(&mut self, n: u8) -> u8 {
        self.byte() % n
    }
}

#[derive(Debug, Clone)]
struct Dev {
    driver_b: bool,
    numa: u8,
    index: u8,
    multi: bool,
    memory_gi: u8,
    counter: Option<u8>,
}

#[derive(Debug, Clone)]
struct Req {
    class_b: bool,
    /// 0: `All`; else the count.
    count: u8,
    /// A selector `index < below`.
    below: Option<u8>,
    memory_gi: Option<u8>,
    /// Alternatives: the request becomes `firstAvailable` with these (and itself first).
    alternatives: Vec<Req>,
}

#[derive(Debug, Clone)]
struct Claim {
    requests: Vec<Req>,
    /// 0 none, 1 match numa, 2 distinct numa, 3 both.
    constraint: u8,
}

/// The generated scenario.
#[derive(Debug)]
struct Generated {
    devices: Vec<Dev>,
    claims: Vec<Claim>,
    counter_total: u8,
    list_attributes: bool,
}

fn request(bytes: &mut Bytes<'_>, depth: u8) -> Req {
    let flags = bytes.byte();
    let count = if flags & 0x30 == 0x30 {
        0
    } else {
        1 + bytes.below(3)
    };
    let alternatives = if depth == 0 && flags & 0xC0 == 0xC0 {
        (0..1 + bytes.below(2))
            .map(|_| request(bytes, depth + 1))
            .collect()
    } else {
        Vec::new()
    };
    Req {
        class_b: flags & 1 == 1,
        count,
        below: (flags & 2 == 2).then(|| bytes.below(24)),
        memory_gi: (flags & 4 == 4).then(|| 1 + bytes.below(4)),
        alternatives,
    }
}

fn generate(data: &[u8]) -> Generated {
    let mut bytes = Bytes(data);
    let header = bytes.byte();
    let n_devices = 1 + bytes.below(20) as usize;
    let devices = (0..n_devices)
        .map(|i| {
            let flags = bytes.byte();
            Dev {
                driver_b: flags & 1 == 1,
                numa: flags >> 1 & 3,
                index: i as u8,
                multi: flags & 8 == 8,
                memory_gi: 1 + (flags >> 4 & 7),
                counter: (flags & 0x80 == 0x80).then(|| 1 + bytes.below(3)),
            }
        })
        .collect();
    let n_claims = 1 + bytes.below(6) as usize;
    let claims = (0..n_claims)
        .map(|_| {
            let n_requests = 1 + bytes.below(4) as usize;
            Claim {
                requests: (0..n_requests).map(|_| request(&mut bytes, 0)).collect(),
                constraint: bytes.below(4),
            }
        })
        .collect();
    Generated {
        devices,
        claims,
        counter_total: 1 + bytes.below(8),
        list_attributes: header & 1 == 1,
    }
}

/// The fields of a request (of `exactly`, or of a subrequest), each line indented by `indent`.
fn request_yaml(out: &mut String, indent: &str, req: &Req) {
    let class = if req.class_b { "b" } else { "a" };
    out.push_str(&format!("{indent}deviceClassName: class-{class}\n"));
    if req.count == 0 {
        out.push_str(&format!("{indent}allocationMode: All\n"));
    } else {
        out.push_str(&format!(
            "{indent}allocationMode: ExactCount\n{indent}count: {}\n",
            req.count
        ));
    }
    if let Some(below) = req.below {
        let driver = if req.class_b { "driver-b" } else { "driver-a" };
        out.push_str(&format!(
            "{indent}selectors:\n{indent}- cel:\n{indent}    expression: device.attributes[\"{driver}\"].index < {below}\n"
        ));
    }
    if let Some(memory) = req.memory_gi {
        out.push_str(&format!(
            "{indent}capacity:\n{indent}  requests:\n{indent}    memory: {memory}Gi\n"
        ));
    }
}

fn scenario_yaml(g: &Generated) -> String {
    let mut out = format!(
        "apiVersion: allot.dev/v1alpha1\nkind: AllocationOptions\nfeatureGates:\n  DRAListTypeAttributes: {}\n---\n\
         apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-a\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"driver-a\"\n---\n\
         apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: class-b\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"driver-b\"\n",
        g.list_attributes
    );
    for driver in ["driver-a", "driver-b"] {
        let total = g.counter_total;
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-counters\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  sharedCounters:\n  - name: set\n    counters:\n      units:\n        value: \"{total}\"\n"
        ));
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {driver}-devices\nspec:\n  driver: {driver}\n  nodeName: node-1\n  pool:\n    name: pool\n    generation: 1\n    resourceSliceCount: 2\n  devices:\n"
        ));
        let before = out.len();
        for d in g
            .devices
            .iter()
            .filter(|d| d.driver_b == (driver == "driver-b"))
        {
            out.push_str(&format!(
                "  - name: dev-{}\n    attributes:\n      numa:\n        int: {}\n      index:\n        int: {}\n    capacity:\n      memory:\n        value: {}Gi\n",
                d.index, d.numa, d.index, d.memory_gi
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
        if out.len() == before {
            out.truncate(before - "\n".len());
            out.push_str(" []\n");
        }
    }
    for (c, claim) in g.claims.iter().enumerate() {
        out.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: claim-{c}\n  namespace: default\nspec:\n  devices:\n    requests:\n"
        ));
        for (r, req) in claim.requests.iter().enumerate() {
            if req.alternatives.is_empty() {
                out.push_str(&format!("    - name: req-{r}\n      exactly:\n"));
                request_yaml(&mut out, "        ", req);
            } else {
                out.push_str(&format!("    - name: req-{r}\n      firstAvailable:\n"));
                for (s, sub) in std::iter::once(req).chain(&req.alternatives).enumerate() {
                    out.push_str(&format!("      - name: sub-{s}\n"));
                    request_yaml(&mut out, "        ", sub);
                }
            }
        }
        let constraints = match claim.constraint {
            1 => vec!["matchAttribute"],
            2 => vec!["distinctAttribute"],
            3 => vec!["matchAttribute", "distinctAttribute"],
            _ => vec![],
        };
        if !constraints.is_empty() {
            out.push_str("    constraints:\n");
            for kind in constraints {
                out.push_str(&format!("    - {kind}: driver-a/numa\n"));
            }
        }
    }
    out
}

/// Allocates the scenario `data` generates and checks the invariants of the module
/// documentation; panics when one does not hold.
pub fn check(data: &[u8]) {
    let generated = generate(data);
    let yaml = scenario_yaml(&generated);
    let scenario = match Scenario::parse(&yaml) {
        Ok(scenario) => scenario,
        Err(err) => panic!("generated scenario does not parse: {err}\n{yaml}"),
    };
    let features = scenario.features().unwrap_or_else(|_| Features::all());
    let Ok(node) = scenario.node(None) else {
        panic!("generated scenario has one node");
    };
    let Ok(claims) = scenario.claims_to_allocate() else {
        panic!("generated claims");
    };
    let refs = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &refs);
    let budget = Budget {
        max_steps: STEPS,
        max_memo_bytes: 1 << 20,
        max_time: None,
    };
    let pruned = crate::allocate_within(&input, &features, &CelCache::default(), &budget);
    let plain = crate::allocate_without_pruning_within(
        &input,
        &features,
        &Budget {
            max_steps: PLAIN_STEPS,
            max_memo_bytes: 0,
            max_time: None,
        },
    );
    match (&pruned, &plain) {
        (_, Ok(Outcome::GaveUp(_))) | (Ok(Outcome::GaveUp(_)), _) => {}
        (Ok(Outcome::Allocated(a)), Ok(Outcome::Allocated(b))) => {
            assert_eq!(a, b, "the prunings changed the devices\n{yaml}");
        }
        (Ok(Outcome::Unschedulable(_)), Ok(Outcome::Unschedulable(_))) => {}
        (Err(a), Err(b)) => assert_eq!(a, b, "the prunings changed the error\n{yaml}"),
        _ => panic!("pruned {pruned:?} but upstream's walk {plain:?}\n{yaml}"),
    }
    match &pruned {
        Ok(Outcome::GaveUp(gave_up)) => {
            // Steps are charged one bound or one device at a time: a little over at most.
            assert!(
                gave_up.steps > STEPS && gave_up.steps <= STEPS + 10_000,
                "gave up after {} steps with a budget of {STEPS}",
                gave_up.steps
            );
            assert!(gave_up.memo_bytes <= budget.max_memo_bytes);
        }
        Ok(Outcome::Allocated(results)) => check_results(&generated, results, &yaml),
        Ok(Outcome::Unschedulable(explanation)) => {
            for shortfall in &explanation.shortfalls {
                assert!(!shortfall.requests.is_empty(), "{explanation}");
                if shortfall.resource == "devices" {
                    assert!(!shortfall.reason.is_empty(), "{explanation}");
                }
            }
        }
        Err(_) => {}
    }
}

/// The flattened requests of a claim: (name, request) for plain ones, (parent/sub, request)
/// for alternatives.
fn named(claim: &Claim) -> BTreeMap<String, &Req> {
    let mut out = BTreeMap::new();
    for (r, req) in claim.requests.iter().enumerate() {
        if req.alternatives.is_empty() {
            out.insert(format!("req-{r}"), req);
        } else {
            out.insert(format!("req-{r}/sub-0"), req);
            for (s, alternative) in req.alternatives.iter().enumerate() {
                out.insert(format!("req-{r}/sub-{}", s + 1), alternative);
            }
        }
    }
    out
}

fn check_results(g: &Generated, results: &[AllocationResult], yaml: &str) {
    assert_eq!(results.len(), g.claims.len(), "{yaml}");
    let spec = |driver: &str, name: &str| -> &Dev {
        let index: usize = name
            .strip_prefix("dev-")
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unknown device {driver}/{name}\n{yaml}"));
        let dev = &g.devices[index];
        assert_eq!(dev.driver_b, driver == "driver-b", "{yaml}");
        dev
    };
    let mut exclusive: BTreeSet<(String, String)> = BTreeSet::new();
    let mut memory: BTreeMap<(String, String), u64> = BTreeMap::new();
    let mut drawn: BTreeSet<(String, String)> = BTreeSet::new();
    let mut counters: BTreeMap<String, u32> = BTreeMap::new();
    for (claim, result) in g.claims.iter().zip(results) {
        let requests = named(claim);
        let mut per_request: BTreeMap<&str, usize> = BTreeMap::new();
        let mut numas: Vec<(u8, bool)> = Vec::new();
        for r in &result.devices.results {
            let key = (r.driver.to_string(), r.device.to_string());
            let dev = spec(&r.driver, &r.device);
            let req = requests
                .get(r.request.as_str())
                .unwrap_or_else(|| panic!("unknown request {}\n{yaml}", r.request));
            *per_request.entry(r.request.as_str()).or_default() += 1;
            assert_eq!(req.class_b, dev.driver_b, "class selector\n{yaml}");
            if let Some(below) = req.below {
                assert!(dev.index < below, "request selector\n{yaml}");
            }
            if dev.multi {
                let used = r
                    .consumed_capacity
                    .get("memory")
                    .map(|q| q.value() as u64)
                    .unwrap_or(0);
                let total = memory.entry(key.clone()).or_default();
                *total += used;
                assert!(
                    *total <= u64::from(dev.memory_gi) << 30,
                    "capacity of {key:?} exceeded\n{yaml}"
                );
            } else {
                assert!(exclusive.insert(key.clone()), "{key:?} twice\n{yaml}");
                if let Some(gi) = req.memory_gi {
                    assert!(gi <= dev.memory_gi, "capacity request\n{yaml}");
                }
            }
            if let Some(units) = dev.counter
                && drawn.insert(key.clone())
            {
                let total = counters.entry(r.driver.to_string()).or_default();
                *total += u32::from(units);
                assert!(
                    *total <= u32::from(g.counter_total),
                    "counters of {} exceeded\n{yaml}",
                    r.driver
                );
            }
            numas.push((dev.numa, dev.driver_b));
        }
        for (name, req) in &requests {
            let got = per_request.get(name.as_str()).copied().unwrap_or(0);
            if req.count > 0 && got > 0 {
                assert_eq!(got, usize::from(req.count), "count of {name}\n{yaml}");
            }
        }
        if claim.constraint & 1 == 1 && !g.list_attributes {
            // Every device must carry driver-a/numa (driver-b devices do not) and share it.
            assert!(numas.iter().all(|(_, b)| !b), "matchAttribute\n{yaml}");
            assert!(
                numas.windows(2).all(|w| w[0].0 == w[1].0),
                "matchAttribute\n{yaml}"
            );
        }
        if claim.constraint & 2 == 2 && !g.list_attributes {
            assert!(numas.iter().all(|(_, b)| !b), "distinctAttribute\n{yaml}");
            let values: BTreeSet<u8> = numas.iter().map(|(n, _)| *n).collect();
            assert_eq!(values.len(), numas.len(), "distinctAttribute\n{yaml}");
        }
    }
}
