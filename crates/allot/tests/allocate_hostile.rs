//! End-to-end tests of issue 15, items 2 and 3, through the binary: hopeless claims are
//! answered "does not fit" (exit 1) with the requests and devices that cannot cover them;
//! `AllocationOptions` sets the search's budget, past which `allot allocate` answers that it
//! gave up (exit 1, `"result": "gaveUp"`), and a budget it cannot use is bad input (exit 2);
//! thousands of claims that fit are allocated (the search recursed once per device and
//! overflowed the stack); `allot simulate` schedules the other pods while one pod's 21 claim
//! templates cannot fit on 20 devices, and marks that pod Unschedulable with the reason.

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;

use serde_json::Value;

const HEAD: &str = r#"apiVersion: v1
kind: Node
metadata: {name: node-1}
status:
  allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == "gpu.example.com"'}
"#;

/// A slice of `n` devices (with an `index` and a `group` of `group_size` devices).
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

/// A claim for `count` devices, with an optional constraint line.
fn claim(name: &str, count: usize, constraint: &str) -> String {
    let mut out = format!(
        "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n        count: {count}\n"
    );
    if !constraint.is_empty() {
        out.push_str(&format!("    constraints:\n    - {constraint}\n"));
    }
    out
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writes");
    path.display().to_string()
}

#[test]
fn n_plus_one_claims_on_n_devices_do_not_fit_and_say_which() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut yaml = format!("{HEAD}{}", slice(20, 1));
    for c in 0..21 {
        yaml.push_str(&claim(&format!("c{c}"), 1, ""));
    }
    let file = write(dir.path(), "nplus1.yaml", &yaml);
    let run = cli::allot(&["allocate", "-f", &file]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "not enough devices: 21 requests need 21 devices together, but only 20 devices can serve any of them"
        ),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout
            .contains("requests: default/c0/gpu, default/c1/gpu"),
        "{}",
        run.stdout
    );
    let run = cli::allot(&["allocate", "-f", &file, "-o", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["result"], "unschedulable");
    let shortfall = &doc["explanation"]["shortfalls"][0];
    assert_eq!(shortfall["resource"], "devices");
    assert_eq!(shortfall["requests"].as_array().map(Vec::len), Some(21));
    assert_eq!(shortfall["devices"].as_array().map(Vec::len), Some(20));
}

/// `groups` groups of 3 devices and one claim more than groups, each needing 2 devices of one
/// group: no bound sees it, the search has to spread claims over groups.
fn pairs_in_triples(groups: usize, options: &str) -> String {
    let mut yaml = format!("{options}{HEAD}{}", slice(3 * groups, 3));
    for c in 0..=groups {
        yaml.push_str(&claim(
            &format!("c{c}"),
            2,
            "matchAttribute: gpu.example.com/group",
        ));
    }
    yaml
}

#[test]
fn the_search_budget_comes_from_allocation_options_and_giving_up_is_an_answer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let options = "apiVersion: allot.dev/v1alpha1\nkind: AllocationOptions\nmaxSearchSteps: 20000\nmaxSearchMemory: 1Mi\n---\n";
    let file = write(dir.path(), "pairs.yaml", &pairs_in_triples(16, options));
    let run = cli::allot(&["allocate", "-f", &file]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let steps: u64 = run
        .stdout
        .strip_prefix("gave up after ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{}", run.stdout));
    assert!((20_000..21_000).contains(&steps), "{}", run.stdout);
    assert!(
        run.stdout
            .contains("search steps (the limit of one allocation) on node node-1"),
        "{}",
        run.stdout
    );
    let run = cli::allot(&["allocate", "-f", &file, "-o", "json"]);
    let doc: Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(doc["result"], "gaveUp");
    assert_eq!(doc["explanation"]["maxSteps"], 20000);
    assert_eq!(doc["explanation"]["maxMemoBytes"], 1 << 20);
    assert!(doc["explanation"]["memoBytes"].as_u64().unwrap_or(u64::MAX) <= 1 << 20);
    // `allot validate` knows the fields.
    let run = cli::allot(&["validate", "-f", &file]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // A budget the allocator cannot use is bad input.
    let bad = write(
        dir.path(),
        "bad.yaml",
        &pairs_in_triples(
            2,
            "apiVersion: allot.dev/v1alpha1\nkind: AllocationOptions\nmaxSearchMemory: \"-1\"\n---\n",
        ),
    );
    let run = cli::allot(&["allocate", "-f", &bad]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stderr.contains(
            "AllocationOptions.maxSearchMemory: -1 is not a whole, non-negative number of bytes"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn six_thousand_claims_on_six_thousand_devices_are_allocated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut yaml = format!("{HEAD}{}", slice(6000, 1));
    for c in 0..6000 {
        yaml.push_str(&claim(&format!("c{c}"), 1, ""));
    }
    let file = write(dir.path(), "many.yaml", &yaml);
    let run = cli::allot(&["allocate", "-f", &file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    // First fit: claim i gets device i.
    let rows: Vec<Vec<&str>> = run
        .stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(rows.len(), 6000);
    for (i, row) in rows.iter().enumerate() {
        assert_eq!(row[0], format!("default/c{i}"));
        assert_eq!(row[2], format!("gpu.example.com/gpu-{i}"));
    }
}

#[test]
fn simulate_schedules_other_pods_while_one_pods_claims_cannot_fit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut yaml = format!(
        "{HEAD}---\napiVersion: v1\nkind: Namespace\nmetadata: {{name: default}}\n{}",
        slice(20, 1)
    );
    let mut claims = Vec::new();
    let mut refs = Vec::new();
    for t in 0..21 {
        yaml.push_str(&format!(
            "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata: {{name: t{t}, namespace: default}}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly: {{deviceClassName: gpu.example.com}}\n"
        ));
        claims.push(format!("{{name: g{t}}}"));
        refs.push(format!(
            "  - {{name: g{t}, resourceClaimTemplateName: t{t}}}\n"
        ));
    }
    yaml.push_str(&format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: hostile, namespace: default}}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: \"1\"}}\n      claims: [{}]\n  resourceClaims:\n{}",
        claims.join(", "),
        refs.concat()
    ));
    for p in 0..3 {
        yaml.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: friendly-{p}, namespace: default}}\nspec:\n  containers:\n  - name: c\n    resources:\n      requests: {{cpu: \"1\"}}\n"
        ));
    }
    let file = write(dir.path(), "sim.yaml", &yaml);
    let items = cli::simulate_json(&[&file]);
    for p in 0..3 {
        let pod = cli::find(&items, "Pod", &format!("friendly-{p}"));
        assert_eq!(pod["spec"]["nodeName"], "node-1", "{pod}");
    }
    let hostile = cli::find(&items, "Pod", "hostile");
    let scheduled = hostile["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap_or_else(|| panic!("no PodScheduled condition: {hostile}"));
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "Unschedulable");
    let message = scheduled["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("0/1 nodes are available: 1 cannot allocate all claims.")
            && message.contains(
                "not enough devices: 21 requests need 21 devices together, but only 20 devices can serve any of them"
            ),
        "{message}"
    );
}
