use allot_api::load::{LoadOptions, Object, load_str};
use allot_store::{Store, Stored};

use super::*;

/// Loads a YAML stream into a store as-is (status included), as a finished run would leave it.
fn store_of(yaml: &str) -> Store {
    let loaded = load_str("test.yaml", yaml, &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut store = Store::new();
    for document in loaded.documents {
        let object: Object = document.object;
        let stored = Stored::from_object(object).expect("a stored kind");
        store
            .create_stored(stored, "2026-01-01T00:00:00Z")
            .expect("created");
    }
    store
}

const SLICE: &str = "
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: s}
spec:
  driver: d.example.com
  nodeName: n1
  pool: {name: p, generation: 1, resourceSliceCount: 1}
  devices:
  - name: single
  - name: shared
    allowMultipleAllocations: true
    capacity:
      mem: {value: 10Gi}
";

fn claim(name: &str, device: &str, consumed: Option<&str>, reserved_pod: Option<&str>) -> String {
    let consumed = consumed
        .map(|q| format!("\n          consumedCapacity: {{mem: {q}}}\n          shareID: 00000000-0000-4000-8000-00000000000{}", name.len()))
        .unwrap_or_default();
    let reserved = reserved_pod
        .map(|p| format!("\n  reservedFor:\n  - {{resource: pods, name: {p}, uid: \"\"}}"))
        .unwrap_or_default();
    format!(
        "
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: default}}
spec:
  devices:
    requests:
    - name: r
      exactly: {{deviceClassName: c}}
status:
  allocation:
    devices:
      results:
        - request: r
          driver: d.example.com
          pool: p
          device: {device}{consumed}{reserved}
"
    )
}

fn pod(name: &str, claim: &str, cpus: &str) -> String {
    format!(
        "
---
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: default
  annotations:
    allot.dev/resources: '{{\"containers\":[{{\"name\":\"c\",\"cpuIds\":[{cpus}]}}]}}'
spec:
  nodeName: n1
  containers: [{{name: c}}]
  resourceClaims: [{{name: gpu, resourceClaimName: {claim}}}]
status:
  phase: Running
"
    )
}

#[test]
fn a_consistent_state_has_no_violations() {
    let yaml = format!(
        "{SLICE}{}{}{}{}",
        claim("a", "single", None, Some("pa")),
        claim("b", "shared", Some("4Gi"), Some("pb")),
        pod("pa", "a", "1,2"),
        pod("pb", "b", "3"),
    );
    assert_eq!(check_invariants(&store_of(&yaml)), vec![]);
}

#[test]
fn a_single_device_in_two_claims_is_reported() {
    let yaml = format!(
        "{SLICE}{}{}",
        claim("a", "single", None, None),
        claim("b", "single", None, None)
    );
    assert_eq!(
        check_invariants(&store_of(&yaml)),
        vec![Violation::DeviceShared {
            device: "d.example.com/p/single".into(),
            claims: vec!["default/a".into(), "default/b".into()],
        }]
    );
}

#[test]
fn shares_beyond_capacity_are_reported() {
    let yaml = format!(
        "{SLICE}{}{}",
        claim("a", "shared", Some("6Gi"), None),
        claim("bb", "shared", Some("6Gi"), None)
    );
    let violations = check_invariants(&store_of(&yaml));
    assert!(
        matches!(&violations[..], [Violation::CapacityExceeded { capacity, .. }] if capacity == "mem"),
        "{violations:?}"
    );
}

#[test]
fn a_running_pod_with_an_unreserved_claim_is_reported() {
    let yaml = format!(
        "{SLICE}{}{}",
        claim("a", "single", None, None),
        pod("pa", "a", "1")
    );
    let violations = check_invariants(&store_of(&yaml));
    assert!(
        matches!(&violations[..], [Violation::PodClaimNotReady { problem, .. }] if problem.contains("not reserved")),
        "{violations:?}"
    );
}

#[test]
fn a_running_pod_with_a_missing_claim_is_reported() {
    let yaml = format!("{SLICE}{}", pod("pa", "nope", "1"));
    let violations = check_invariants(&store_of(&yaml));
    assert!(
        matches!(&violations[..], [Violation::PodClaimNotReady { problem, .. }] if problem.contains("does not exist")),
        "{violations:?}"
    );
}

#[test]
fn exclusive_cpus_held_twice_are_reported() {
    let yaml = format!(
        "{SLICE}{}{}{}{}",
        claim("a", "single", None, Some("pa")),
        claim("b", "shared", Some("1Gi"), Some("pb")),
        pod("pa", "a", "1,2"),
        pod("pb", "b", "2,3"),
    );
    assert_eq!(
        check_invariants(&store_of(&yaml)),
        vec![Violation::CpuShared {
            node: "n1".into(),
            cpus: "2".into(),
            first: "default/pa".into(),
            second: "default/pb".into(),
        }]
    );
}
