//! Issue 15: CEL selectors that would take the process down. Validation rejects what upstream's
//! estimator rejects, with upstream's message; what the estimate lets through is cancelled at
//! run time by the cost meter, and surfaces as the allocator's per-claim CEL runtime error, in
//! `allocate` and in `simulate`, never as an abort.

use std::path::PathBuf;
use std::process::Command;

fn allot(args: &[&str]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .output()
        .expect("run allot");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn write(name: &str, text: &str) -> String {
    let dir = std::env::temp_dir().join(format!("allot-cel-limits-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path: PathBuf = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

/// The selector of issue 15: 100 'a's, four times `.replace('a', <100 a's>)`, `.size() > 0`.
fn four_replaces() -> String {
    let a100 = "a".repeat(100);
    let mut expr = format!("'{a100}'");
    for _ in 0..4 {
        expr.push_str(&format!(".replace('a', '{a100}')"));
    }
    expr + ".size() > 0"
}

/// Within upstream's estimated cost (800,402), but its result would hold 20,000,000,000
/// characters.
fn within_the_estimate() -> String {
    format!(
        "'{}'.replace('a', '{}').replace('a', '{}').size() > 0",
        "a".repeat(2000),
        "a".repeat(2000),
        "a".repeat(5000)
    )
}

const CLUSTER: &str = "\
apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == \"gpu.example.com\"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: node-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool: {name: node-1, generation: 1, resourceSliceCount: 1}
  devices:
  - name: gpu-0
  - name: gpu-1
";

fn claim(name: &str, selector: &str) -> String {
    format!(
        "---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: default}}
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        selectors:
        - cel:
            expression: \"{selector}\"
"
    )
}

fn pod(name: &str, claim: &str) -> String {
    format!(
        "---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  containers:
  - name: c
    resources:
      requests: {{cpu: \"1\"}}
      claims: [{{name: gpu}}]
  resourceClaims:
  - {{name: gpu, resourceClaimName: {claim}}}
"
    )
}

const ALLOCATION_OPTIONS: &str = "---
apiVersion: allot.dev/v1alpha1
kind: AllocationOptions
node: node-1
";

#[test]
fn validate_rejects_the_replace_bomb_with_upstreams_cost_message() {
    let file = write(
        "validate.yaml",
        &format!("{CLUSTER}{}", claim("bomb", &four_replaces())),
    );
    let (code, stdout, stderr) = allot(&["validate", "-f", &file]);
    assert!(code == 1 || code == 2, "exit {code}: {stdout}{stderr}");
    assert!(
        stdout.contains(
            "ResourceClaim default/bomb: spec.devices.requests[0].exactly.selectors[0].cel.expression: \
             Forbidden: too complex, exceeds cost limit"
        ),
        "{stdout}{stderr}"
    );
}

#[test]
fn validate_accepts_what_upstreams_estimate_accepts() {
    let file = write(
        "validate-within.yaml",
        &format!("{CLUSTER}{}", claim("big", &within_the_estimate())),
    );
    let (code, stdout, stderr) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 0, "{stdout}{stderr}");
}

#[test]
fn allocate_reports_the_replace_bomb_instead_of_aborting() {
    let file = write(
        "allocate.yaml",
        &format!(
            "{CLUSTER}{}{}",
            claim("bomb", &four_replaces()),
            ALLOCATION_OPTIONS
        ),
    );
    let (code, stdout, stderr) = allot(&["allocate", "-f", &file]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    assert!(
        stdout.contains("too complex, exceeds cost limit")
            || stderr.contains("too complex, exceeds cost limit"),
        "{stdout}{stderr}"
    );
}

#[test]
fn allocate_cancels_a_selector_the_estimate_let_through() {
    let file = write(
        "allocate-within.yaml",
        &format!(
            "{CLUSTER}{}{}",
            claim("big", &within_the_estimate()),
            ALLOCATION_OPTIONS
        ),
    );
    let (code, stdout, stderr) = allot(&["allocate", "-f", &file]);
    assert_eq!(code, 2, "{stdout}{stderr}");
    let out = format!("{stdout}{stderr}");
    assert!(
        out.contains(
            "selector #0: CEL runtime error: operation cancelled: actual cost limit exceeded"
        ),
        "{out}"
    );
}

#[test]
fn simulate_fails_only_the_pod_whose_selector_is_cancelled() {
    let file = write(
        "simulate.yaml",
        &format!(
            "{CLUSTER}{}{}{}{}",
            claim("big", &within_the_estimate()),
            claim("fine", "device.driver == 'gpu.example.com'"),
            pod("hostile", "big"),
            pod("friendly", "fine")
        ),
    );
    let (code, stdout, stderr) = allot(&["simulate", &file]);
    assert!(code == 0 || code == 1, "exit {code}: {stdout}{stderr}");
    assert!(
        stdout.contains("default/hostile (Pending): SchedulerError"),
        "{stdout}{stderr}"
    );
    assert!(
        stdout.contains("actual cost limit exceeded"),
        "{stdout}{stderr}"
    );
    assert!(
        !stdout.contains("default/friendly (Pending)"),
        "{stdout}{stderr}"
    );
}
