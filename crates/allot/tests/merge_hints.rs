//! End to end: `allot node merge-hints` on vectors from tests/conformance/kubelet/topology_manager.

use std::path::Path;
use std::process::Command;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topology_manager"
);

/// Vectors covering each policy, prefer-closest, a rejection and a configuration error.
const CASES: &[&str] = &[
    "upstream/be-closest-00-two-providers-2-hints-each-same-mask-some-with-different-bits-same-preferred.json",
    "random/random-public-0000.json",
    "random/random-public-0004.json",
    "random/random-public-0012.json",
    "random/random-public-0005.json",
    "random/random-public-0011.json",
    "random/random-public-0017.json",
    "random/random-public-0032.json",
];

fn run(input: &serde_json::Value, output: &str) -> (i32, String, String) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("hints.json");
    std::fs::write(&path, serde_json::to_vec(input).expect("json")).expect("write input");
    let out = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["node", "merge-hints", "-f"])
        .arg(&path)
        .args(["-o", output])
        .output()
        .expect("run allot");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn merge_hints_matches_the_vectors() {
    let mut failures = Vec::new();
    for case in CASES {
        let text = std::fs::read_to_string(Path::new(DIR).join(case)).expect("vector");
        let vector: serde_json::Value = serde_json::from_str(&text).expect("json");
        let expected = &vector["expected"];
        let (code, stdout, stderr) = run(&vector["input"], "json");
        if expected.get("error").is_some() {
            if code != 2 || !stderr.contains("error") {
                failures.push(format!(
                    "{case}: expected exit 2 with an error, got {code}: {stdout}{stderr}"
                ));
            }
            continue;
        }
        let got: serde_json::Value = match serde_json::from_str(&stdout) {
            Ok(v) => v,
            Err(e) => {
                failures.push(format!(
                    "{case}: output is not JSON ({e}): {stdout}{stderr}"
                ));
                continue;
            }
        };
        let admit = expected["admit"].as_bool().unwrap_or(false);
        let want_code = if admit { 0 } else { 1 };
        if &got != expected || code != want_code {
            failures.push(format!(
                "{case}: expected {expected} (exit {want_code}), got {got} (exit {code})"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "failing cases:\n{}",
        failures.join("\n")
    );
}

#[test]
fn merge_hints_text_explains_a_rejection() {
    let input = serde_json::json!({
        "policy": "restricted",
        "options": {},
        "numaNodes": [0, 1],
        "providersHints": [
            {"cpu": [{"affinity": [0], "preferred": true}]},
            {"example.com/gpu": [{"affinity": [1], "preferred": true}]}
        ]
    });
    let (code, stdout, _) = run(&input, "text");
    assert_eq!(code, 1, "{stdout}");
    assert!(stdout.contains("TopologyAffinityError"), "{stdout}");
    assert!(stdout.contains("cpu: preferred on [0]"), "{stdout}");
    assert!(
        stdout.contains("example.com/gpu: preferred on [1]"),
        "{stdout}"
    );
}
