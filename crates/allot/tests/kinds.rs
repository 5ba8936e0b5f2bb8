//! `allot validate` and `allot simulate` with one object of each kind allot gained for the
//! scheduler and the workload controllers (tests/kinds/all-kinds.yaml): accepted, stored,
//! printed back defaulted; upstream's rules refuse bad ones with file, line and field.

#[path = "support/cli.rs"]
mod cli;

use serde_json::Value;

fn manifest() -> String {
    format!("{}/tests/kinds/all-kinds.yaml", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn validate_accepts_every_kind() {
    let run = cli::allot(&["validate", "-f", &manifest()]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
}

#[test]
fn simulate_stores_every_kind_defaulted() {
    let run = cli::allot(&["simulate", &manifest(), "-o", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    let items = list["items"].as_array().expect("items");
    let kinds: std::collections::BTreeSet<&str> =
        items.iter().filter_map(|i| i["kind"].as_str()).collect();
    assert_eq!(kinds.len(), 33, "{kinds:?}");
    let find = |kind: &str| {
        items
            .iter()
            .find(|i| i["kind"] == kind)
            .unwrap_or_else(|| panic!("{kind} missing"))
    };
    let deployment = find("Deployment");
    assert_eq!(deployment["apiVersion"], "apps/v1");
    assert_eq!(deployment["metadata"]["generation"], 1);
    assert_eq!(
        deployment["spec"]["strategy"]["rollingUpdate"]["maxSurge"],
        "25%"
    );
    // The Job got its selector and pod labels from the uid the store assigned.
    let job = find("Job");
    let uid = job["metadata"]["uid"].as_str().expect("a uid");
    assert_eq!(
        job["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"],
        uid
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"]["batch.kubernetes.io/job-name"],
        "pi"
    );
    // Kinds whose registry sets no generation have none.
    assert!(
        find("PersistentVolume")["metadata"]
            .get("generation")
            .is_none()
    );
    assert_eq!(find("PersistentVolumeClaim")["status"]["phase"], "Pending");
    assert_eq!(find("Secret")["data"]["user"], "YWRtaW4=");
}

#[test]
fn bad_objects_are_refused_with_file_line_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("bad.yaml");
    std::fs::write(
        &path,
        "apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: other}}
    spec:
      containers: [{name: c, image: nginx}]
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: a}
value: 10
globalDefault: true
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: b}
value: 20
globalDefault: true
",
    )
    .expect("write");
    let file = path.display().to_string();
    let run = cli::allot(&["simulate", &file]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    let expected = [
        format!(
            "{file}:7: Deployment default/web: spec.template.metadata.labels: Invalid value: map[string]string{{\"app\":\"other\"}}: `selector` does not match template `labels`"
        ),
        format!(
            "{file}:21: PriorityClass b: globalDefault: Forbidden: PriorityClass a is already marked as default. Only one default can exist"
        ),
    ];
    for line in expected {
        assert!(run.stderr.contains(&line), "{line}\nin\n{}", run.stderr);
    }
    let validate = cli::allot(&["validate", "-f", &file]);
    assert_ne!(validate.code, 0);
    assert!(
        (validate.stdout.clone() + &validate.stderr).contains("`selector` does not match"),
        "{}{}",
        validate.stdout,
        validate.stderr
    );
}
