//! The `allot validate` contract: exit 0 when everything is valid; otherwise exit 2 (bad input) and one line
//! per error, `FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message`, or a JSON list of records.

use std::path::Path;
use std::process::Command;

fn allot(args: &[&str]) -> (i32, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .output()
        .expect("run allot");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
    )
}

fn examples(folder: &str) -> String {
    format!("{}/../../examples/{folder}", env!("CARGO_MANIFEST_DIR"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn bundled_examples_are_valid() {
    for folder in ["spec", "cluster"] {
        let (code, stdout) = allot(&["validate", "-f", &examples(folder)]);
        assert_eq!((code, stdout.as_str()), (0, ""), "examples/{folder}");
    }
}

const INVALID: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim
  namespace: team
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: -1
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: slice
spec:
  driver: gpu.example.com
  pool:
    name: pool
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    colour: red
";

#[test]
fn errors_name_file_line_object_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "bad.yaml", INVALID);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!(
                "{file}:12: ResourceClaim team/claim: spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"
            ),
            format!("{file}:26: ResourceSlice slice: spec.devices[0].colour: unknown field"),
        ]
    );
}

#[test]
fn json_output_lists_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "bad.yaml", INVALID);
    let (code, stdout) = allot(&["validate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 2);
    let records: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let first = &records[0];
    assert_eq!(first["file"], file.as_str());
    assert_eq!(first["line"], 12);
    assert_eq!(first["kind"], "ResourceClaim");
    assert_eq!(first["namespace"], "team");
    assert_eq!(first["name"], "claim");
    assert_eq!(first["field"], "spec.devices.requests[0].exactly.count");
    assert_eq!(
        first["message"],
        "Invalid value: -1: must be greater than zero"
    );
    assert_eq!(records.as_array().map(Vec::len), Some(2));
}

#[test]
fn valid_json_output_is_an_empty_list() {
    let (code, stdout) = allot(&["validate", "-f", &examples("cluster"), "-o", "json"]);
    assert_eq!(code, 0);
    assert_eq!(stdout.trim(), "[]");
}

#[test]
fn syntax_errors_and_unknown_kinds_name_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = write(dir.path(), "broken.yaml", "apiVersion: v1\nkind: [Node\n");
    let unknown = write(
        dir.path(),
        "unknown.json",
        "{\"apiVersion\": \"v1\",\n \"kind\": \"Gadget\"}",
    );
    let (code, stdout) = allot(&["validate", "-f", &broken, &unknown]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with(&format!("{broken}:")), "{}", lines[0]);
    assert_eq!(
        lines[1],
        format!("{unknown}:1: no kind \"Gadget\" is registered for version \"v1\"")
    );
}

#[test]
fn admin_access_is_checked_against_namespaces_in_the_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let claim = "\
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: monitor
  namespace: team
spec:
  devices:
    requests:
    - name: all
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: All
        adminAccess: true
";
    let file = write(dir.path(), "admin.yaml", claim);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    assert!(
        stdout.contains("ResourceClaim team/monitor: spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"),
        "{stdout}"
    );
    let labelled = claim.replace(
        "  name: team\n---",
        "  name: team\n  labels:\n    resource.kubernetes.io/admin-access: \"true\"\n---",
    );
    let file = write(dir.path(), "admin-ok.yaml", &labelled);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}
