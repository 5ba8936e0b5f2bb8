//! End-to-end tests of `allot node admit` and `allot node show`, running the binary.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

const TOPOLOGY: &str = include_str!(concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topologies/topoDualSocketHT.yaml"
));
const STATIC_DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/static_policy"
);

fn allot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .output()
        .expect("run allot")
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn scenario(dir: &Path, config: &str, pods: &[(&str, &str)]) -> String {
    let mut text = format!(
        "{TOPOLOGY}\n---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{config}\n"
    );
    for (name, cpu) in pods {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: ns, uid: uid-{name}}}\nspec:\n  containers:\n  - name: c\n    resources: {{requests: {{cpu: \"{cpu}\", memory: 1Gi}}, limits: {{cpu: \"{cpu}\", memory: 1Gi}}}}\n"
        ));
    }
    let path = dir.join("scenario.yaml");
    fs::write(&path, text).expect("write scenario");
    path.display().to_string()
}

const STATIC: &str = "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\"}";

#[test]
fn admit_json_has_the_documented_shape() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = scenario(dir.path(), STATIC, &[("a", "4"), ("b", "500m")]);
    let out = allot(&["node", "admit", "-f", &file, "-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    let a = &v["pods"][0];
    assert_eq!(a["pod"], "ns/a");
    assert_eq!(a["admitted"], true);
    assert_eq!(a["reason"], Value::Null);
    assert_eq!(a["message"], Value::Null);
    let c = &a["containers"][0];
    assert_eq!(c["name"], "c");
    assert_eq!(c["cpus"], "2,4,8,10");
    assert_eq!(c["exclusive"], true);
    assert_eq!(c["memoryNUMANodes"], serde_json::json!([]));
    assert_eq!(c["devices"], serde_json::json!({}));
    assert_eq!(c["cfsQuota"], false);
    let b = &v["pods"][1]["containers"][0];
    assert_eq!(b["exclusive"], false);
    assert_eq!(b["cfsQuota"], true);
    assert_eq!(v["state"]["cpuManager"]["policyName"], "static");
    assert_eq!(
        v["state"]["cpuManager"]["entries"]["uid-a"]["c"],
        "2,4,8,10"
    );
    assert!(v["state"]["cpuManager"]["checksum"].is_u64());
    assert_eq!(v["state"]["memoryManager"]["policyName"], "None");
}

#[test]
fn rejection_exits_1_with_the_kubelet_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = scenario(dir.path(), STATIC, &[("odd", "3")]);
    let out = allot(&["node", "admit", "-f", &file, "-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    let v = json(&out);
    assert_eq!(v["pods"][0]["admitted"], false);
    assert_eq!(v["pods"][0]["reason"], "SMTAlignmentError");
    assert_eq!(
        v["pods"][0]["message"],
        "SMT Alignment Error: requested 3 cpus not multiple cpus per core = 2"
    );
    // The metrics count the failed pinning.
    let metrics = dir.path().join("metrics.txt");
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--metrics",
        &metrics.display().to_string(),
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let text = fs::read_to_string(&metrics).expect("metrics");
    assert!(
        text.contains("cpu_manager_pinning_errors_total 1"),
        "{text}"
    );
    assert!(
        text.contains("resource_manager_allocation_errors_total{source=\"node\"} 1"),
        "{text}"
    );
    // The table says the same.
    let out = allot(&["node", "admit", "-f", &file]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("no: SMTAlignmentError"), "{text}");
}

#[test]
fn state_dir_round_trip_and_corrupt_checkpoint() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    let state_arg = state.display().to_string();
    let file = scenario(dir.path(), STATIC, &[("a", "2")]);
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--state-dir",
        &state_arg,
        "-o",
        "json",
    ]);
    assert_eq!(out.status.code(), Some(0));
    let cp: Value =
        serde_json::from_slice(&fs::read(state.join("cpu_manager_state")).expect("file"))
            .expect("json");
    assert_eq!(cp["entries"]["uid-a"]["c"], "2,8");
    assert!(state.join("memory_manager_state").exists());
    // Second run: pod a keeps its CPUs, pod b gets the next core.
    let file = scenario(dir.path(), STATIC, &[("a", "2"), ("b", "2")]);
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--state-dir",
        &state_arg,
        "-o",
        "json",
    ]);
    let v = json(&out);
    assert_eq!(v["pods"][0]["containers"][0]["cpus"], "2,8");
    assert_eq!(v["pods"][1]["containers"][0]["cpus"], "4,10");
    // The file is the kubelet's v4: the payload in `data`, checked by `dataChecksum`.
    let path = state.join("cpu_manager_state");
    let text = fs::read_to_string(&path).expect("read");
    let cp: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(cp["checksum"], 0);
    assert!(cp["dataChecksum"].as_u64().is_some_and(|n| n > 0), "{text}");
    let data: Value = serde_json::from_str(cp["data"].as_str().expect("data")).expect("payload");
    assert_eq!(data["entries"]["uid-b"]["c"], "4,10");
    // Editing only the v3 copy beside the payload changes nothing: the kubelet reads `data`.
    fs::write(&path, text.replace("\"c\":\"2,8\"", "\"c\":\"2,9\"")).expect("write");
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--state-dir",
        &state_arg,
        "-o",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["pods"][0]["containers"][0]["cpus"], "2,8");
    // A flipped byte in the payload: the node does not start, and says what to do.
    let text = fs::read_to_string(&path).expect("read");
    assert!(text.contains("\\\"2,8\\\""), "{text}");
    fs::write(&path, text.replace("\\\"2,8\\\"", "\\\"2,9\\\"")).expect("write");
    let out = allot(&["node", "admit", "-f", &file, "--state-dir", &state_arg]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not restore state from checkpoint: could not load v4 checkpoint: checkpoint is corrupted"),
        "{err}"
    );
    assert!(
        err.contains("please drain this node and delete the CPU manager checkpoint file"),
        "{err}"
    );
}

#[test]
fn kubelet_v2_checkpoint_restores_and_is_rewritten_as_v4() {
    let dir = tempfile::tempdir().expect("tempdir");
    let state = dir.path().join("state");
    fs::create_dir_all(&state).expect("mkdir");
    let state_arg = state.display().to_string();
    // A v2 file as a kubelet without pod-level resource managers writes it (checksum: FNV-1a of
    // the go-spew text under the type name CPUManagerCheckpoint, computed independently).
    let v2 = r#"{"policyName":"static","defaultCpuSet":"0-1,3-7,9-11","entries":{"uid-a":{"c":"2,8"}},"checksum":290833760}"#;
    fs::write(state.join("cpu_manager_state"), v2).expect("write");
    let file = scenario(dir.path(), STATIC, &[("a", "2"), ("b", "2")]);
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--state-dir",
        &state_arg,
        "-o",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["pods"][0]["containers"][0]["cpus"], "2,8");
    assert_eq!(v["pods"][1]["containers"][0]["cpus"], "4,10");
    let cp: Value =
        serde_json::from_slice(&fs::read(state.join("cpu_manager_state")).expect("file"))
            .expect("json");
    assert!(
        cp["data"].is_string() && cp["dataChecksum"].is_u64(),
        "{cp}"
    );
    // The same v2 file with a wrong checksum stops the node.
    fs::write(
        state.join("cpu_manager_state"),
        v2.replace("290833760", "290833761"),
    )
    .expect("write");
    let out = allot(&["node", "admit", "-f", &file, "--state-dir", &state_arg]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("could not restore state from checkpoint: checkpoint is corrupted"),
        "{err}"
    );
}

#[test]
fn yaml_output_parses() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = scenario(dir.path(), STATIC, &[("a", "2")]);
    let out = allot(&["node", "admit", "-f", &file, "-o", "yaml"]);
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_saphyr::from_str(&String::from_utf8_lossy(&out.stdout)).expect("yaml");
    assert_eq!(v["pods"][0]["containers"][0]["cpus"], "2,8");
}

#[test]
fn conformance_scenario_runs_through_the_cli() {
    // Upstream's reuse test: init container 4 CPUs, app 2 CPUs reusing them.
    let file = format!(
        "{STATIC_DIR}/TestStaticPolicyReuseCPUs__000__SingleSocketHT-DeAllocOneInitContainer.yaml"
    );
    let out = allot(&[
        "node",
        "admit",
        "-f",
        &file,
        "--allow-zero-cpu-reservation",
        "-o",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["state"]["cpuManager"]["defaultCpuSet"], "2-3,6-7");
    // Without the flag the kubelet's own start-up check applies.
    let out = allot(&["node", "admit", "-f", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("systemreserved.cpu + kubereserved.cpu"));
}

#[test]
fn show_draws_owners_in_text_and_svg() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = scenario(dir.path(), STATIC, &[("a", "4")]);
    let out = allot(&["node", "show", "-f", &file, "--color", "never"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("socket 1"), "{text}");
    assert!(text.contains("cpu0:reserved"), "{text}");
    assert!(text.contains("cpu2:ns/a/c"), "{text}");
    assert!(text.contains("cpu1:shared"), "{text}");
    let out = allot(&["node", "show", "-f", &file, "-o", "svg"]);
    let svg = String::from_utf8_lossy(&out.stdout);
    assert!(svg.starts_with("<svg"), "{svg}");
    assert!(svg.contains("CPU 2: ns/a/c"));
    assert!(svg.trim_end().ends_with("</svg>"));
    let colored = allot(&["node", "show", "-f", &file, "--color", "always"]);
    assert!(String::from_utf8_lossy(&colored.stdout).contains("\u{1b}["));
}
