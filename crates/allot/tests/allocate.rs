//! End-to-end tests of `allot allocate`: run the binary on conformance scenarios and check
//! exit codes and the JSON contract.

use std::process::Command;

use serde_json::Value;

const DRA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance/dra");
const BENCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/dra");

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

fn json(args: &[&str]) -> (i32, Value) {
    let (code, stdout, stderr) = allot(args);
    let value =
        serde_json::from_str(&stdout).unwrap_or_else(|err| panic!("{err}: {stdout}{stderr}"));
    (code, value)
}

#[test]
fn allocated_scenario_prints_the_contract_and_exits_0() {
    let file = format!("{DRA}/simple.yaml");
    let (code, out) = json(&["allocate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 0);
    assert_eq!(out["result"], "allocated");
    assert!(out["error"].is_null());
    assert!(out["explanation"].is_null());
    let allocations = out["allocations"].as_array().expect("allocations");
    assert_eq!(allocations.len(), 1);
    assert_eq!(allocations[0]["claim"], "claim-0");
    let result = &allocations[0]["allocation"]["devices"]["results"][0];
    assert_eq!(result["device"], "device-1");
    assert_eq!(result["pool"], "pool-1");
    assert_eq!(
        allocations[0]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]["values"]
            [0],
        "node-1"
    );
}

#[test]
fn namespaced_claims_are_printed_as_namespace_slash_name() {
    let file = format!("{BENCH}/gpu64-4gpu-numa.yaml");
    let (code, out) = json(&["allocate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 0, "{out}");
    let claim = out["allocations"][0]["claim"].as_str().unwrap_or_default();
    assert!(claim.contains('/'), "{claim}");
    let devices: Vec<&str> = out["allocations"][0]["allocation"]["devices"]["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["device"].as_str().unwrap())
        .collect();
    assert_eq!(devices, ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]);
}

#[test]
fn unschedulable_scenario_exits_1_with_an_explanation() {
    let file = format!("{BENCH}/nofit-64gpu-4numa-match.yaml");
    let (code, out) = json(&["allocate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 1);
    assert_eq!(out["result"], "unschedulable");
    assert_eq!(out["allocations"], Value::Array(vec![]));
    let claim = &out["explanation"]["claims"][0];
    assert_eq!(claim["requests"][0]["filters"]["visible"], 64);
    assert_eq!(claim["requests"][0]["filters"]["inUse"], 40);
    let constraint = &claim["constraints"][0];
    assert_eq!(
        constraint["constraint"],
        "matchAttribute: gpu.example.com/numa"
    );
    assert!(constraint["sampleDevice"].is_string());
    // The table form says the same.
    let (code, text, _) = allot(&["allocate", "-f", &file]);
    assert_eq!(code, 1);
    assert!(
        text.contains("constraint matchAttribute: gpu.example.com/numa cannot be met"),
        "{text}"
    );
}

#[test]
fn bad_input_exits_2() {
    let file = format!("{DRA}/unknown-class.yaml");
    let (code, out) = json(&["allocate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 2);
    assert_eq!(out["result"], "error");
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("could not retrieve device class unknown-class")
    );
    let (code, _, stderr) = allot(&["allocate", "-f", "/nonexistent/scenario.yaml"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("nonexistent"), "{stderr}");
}

#[test]
fn feature_gates_flag_overrides_the_scenario() {
    // Admin access is requested; turning the gate off makes it an input error.
    let file = format!("{DRA}/admin-access-enabled.yaml");
    let (code, _) = json(&["allocate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 0);
    let (code, out) = json(&[
        "allocate",
        "-f",
        &file,
        "-o",
        "json",
        "--feature-gates",
        "DRAAdminAccess=false",
    ]);
    assert_eq!(code, 2);
    assert!(
        out["error"]
            .as_str()
            .unwrap()
            .contains("admin access is requested, but the feature is disabled")
    );
    let (code, _, _) = allot(&[
        "allocate",
        "-f",
        &file,
        "--feature-gates",
        "DRANoSuchGate=true",
    ]);
    assert_eq!(code, 2);
}

#[test]
fn node_flag_picks_the_node_and_yaml_output_works() {
    let file = format!("{DRA}/other-node.yaml");
    let (code, stdout, stderr) =
        allot(&["allocate", "-f", &file, "-o", "yaml", "--node", "node-2"]);
    assert!(code == 0 || code == 1, "{stdout}{stderr}");
    assert!(
        stdout.lines().any(|line| line.starts_with("result: ")),
        "{stdout}"
    );
    let (code, _, stderr) = allot(&["allocate", "-f", &file, "--node", "no-such-node"]);
    assert_eq!(code, 2);
    assert!(stderr.contains("no-such-node"), "{stderr}");
}

#[test]
fn table_output_lists_claim_request_device_pool_node() {
    let file = format!("{BENCH}/partitionable-8gpu-mig.yaml");
    let (code, stdout, _) = allot(&["allocate", "-f", &file]);
    assert_eq!(code, 0, "{stdout}");
    let mut lines = stdout.lines();
    let header: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["CLAIM", "REQUEST", "DEVICE", "POOL", "NODE"]);
    assert_eq!(lines.count(), 9, "{stdout}");
}
