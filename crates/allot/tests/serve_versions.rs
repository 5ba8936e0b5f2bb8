//! End-to-end tests of the served API versions (issue 17, "Versions"): `--runtime-config` as
//! kube-apiserver takes it, and the older `resource.k8s.io` versions converted at the request
//! boundary (storage stays v1), driven by a real kubectl 1.37: a v1beta1 manifest applied
//! (client- and server-side), read back at v1beta1, v1beta2 and v1, patched at v1beta1, and
//! the discovery kubectl uses. kubectl comes from `ALLOT_KUBECTL` or PATH; without it the tests
//! fail and name the README's test command (`cargo xtask test`).

#[path = "support/kubectl.rs"]
mod kubectl;

#[path = "support/serve.rs"]
mod harness;

use harness::Serve;
use serde_json::{Value, json};

fn start(extra: &[&str]) -> (tempfile::TempDir, Serve) {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(dir.path(), &kubectl, extra);
    (dir, serve)
}

const CLAIM_V1BETA1: &str = "\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceClaim
metadata:
  name: two-gpus
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      deviceClassName: gpu.example.com
      allocationMode: ExactCount
      count: 2
      selectors:
      - cel:
          expression: device.driver == \"gpu.example.com\"
    - name: any
      firstAvailable:
      - name: big
        deviceClassName: gpu.example.com
        count: 1
";

const SLICE_V1BETA1: &str = "\
apiVersion: resource.k8s.io/v1beta1
kind: ResourceSlice
metadata:
  name: node-1-gpus
spec:
  driver: gpu.example.com
  nodeName: node-1
  pool:
    name: node-1
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    basic:
      attributes:
        model:
          string: a100
      capacity:
        memory:
          value: 40Gi
";

#[test]
fn v1beta1_manifests_apply_and_read_back_at_every_version() {
    let (_dir, serve) = start(&["--runtime-config", "resource.k8s.io/v1beta1=true"]);
    let claim = serve.file("claim.yaml", CLAIM_V1BETA1);
    serve.ok(&["apply", "-f", &claim]);
    let slice = serve.file("slice.yaml", SLICE_V1BETA1);
    serve.ok(&["apply", "-f", &slice]);

    // Stored as v1: the flat request is under `exactly`, the device's `basic` is gone.
    let v1 = serve.json(&["get", "resourceclaims.v1.resource.k8s.io", "two-gpus"]);
    assert_eq!(v1["apiVersion"], json!("resource.k8s.io/v1"));
    let request = &v1["spec"]["devices"]["requests"][0];
    assert_eq!(
        request["exactly"]["deviceClassName"],
        json!("gpu.example.com")
    );
    assert_eq!(request["exactly"]["count"], json!(2));
    assert_eq!(request["exactly"]["allocationMode"], json!("ExactCount"));
    assert_eq!(request.get("deviceClassName"), None);
    assert_eq!(
        v1["spec"]["devices"]["requests"][1]["firstAvailable"][0]["count"],
        json!(1)
    );
    let slice_v1 = serve.json(&["get", "resourceslices.v1.resource.k8s.io", "node-1-gpus"]);
    let device = &slice_v1["spec"]["devices"][0];
    assert_eq!(device["attributes"]["model"]["string"], json!("a100"));
    assert_eq!(device["capacity"]["memory"]["value"], json!("40Gi"));
    assert_eq!(device.get("basic"), None);

    // Read back at v1beta1 as written (with the defaults the server filled in).
    let yaml = serve.ok(&[
        "get",
        "resourceclaims.v1beta1.resource.k8s.io",
        "two-gpus",
        "-o",
        "yaml",
    ]);
    assert!(
        yaml.contains("apiVersion: resource.k8s.io/v1beta1"),
        "{yaml}"
    );
    let beta = serve.json(&["get", "resourceclaims.v1beta1.resource.k8s.io", "two-gpus"]);
    let request = &beta["spec"]["devices"]["requests"][0];
    assert_eq!(request["deviceClassName"], json!("gpu.example.com"));
    assert_eq!(request["count"], json!(2));
    assert_eq!(request.get("exactly"), None);
    assert_eq!(beta["metadata"]["uid"], v1["metadata"]["uid"]);
    let slice_beta = serve.json(&[
        "get",
        "resourceslices.v1beta1.resource.k8s.io",
        "node-1-gpus",
    ]);
    assert_eq!(
        slice_beta["spec"]["devices"][0]["basic"]["attributes"]["model"]["string"],
        json!("a100")
    );

    // A list at v1beta1 converts every item; v1beta2 (same shape as v1) is off by default.
    let list = serve.json(&["get", "resourceclaims.v1beta1.resource.k8s.io"]);
    assert_eq!(
        list["items"][0]["spec"]["devices"]["requests"][0]["count"],
        json!(2)
    );
    let err = serve.fails(&["get", "resourceclaims.v1beta2.resource.k8s.io"]);
    assert!(err.contains("doesn't have a resource type"), "{err}");

    // A patch at v1beta1 applies to the v1beta1 rendering and lands in v1 storage.
    serve.ok(&[
        "label",
        "resourceclaims.v1beta1.resource.k8s.io",
        "two-gpus",
        "team=ml",
    ]);
    serve.ok(&[
        "patch",
        "resourceslices.v1beta1.resource.k8s.io",
        "node-1-gpus",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/devices/0/basic/attributes/model/string","value":"h100"}]"#,
    ]);
    let v1 = serve.json(&["get", "resourceclaims.v1.resource.k8s.io", "two-gpus"]);
    assert_eq!(v1["metadata"]["labels"]["team"], json!("ml"));
    let slice_v1 = serve.json(&["get", "resourceslices.v1.resource.k8s.io", "node-1-gpus"]);
    assert_eq!(
        slice_v1["spec"]["devices"][0]["attributes"]["model"]["string"],
        json!("h100")
    );

    // A v1beta1 body the v1 conversion cannot take is refused with v1beta1's field path.
    let bad = serve.file(
        "bad.yaml",
        &CLAIM_V1BETA1
            .replace("two-gpus", "bad")
            .replace("count: 2", "count: 2\n      countt: 3"),
    );
    let err = serve.fails(&["create", "-f", &bad]);
    assert!(err.contains("countt"), "{err}");
}

#[test]
fn server_side_apply_at_v1beta1_and_discovery_follow_runtime_config() {
    let (_dir, serve) =
        start(&["--runtime-config=resource.k8s.io/v1beta1=true,resource.k8s.io/v1beta2"]);
    let claim = serve.file("claim.yaml", CLAIM_V1BETA1);
    serve.ok(&["apply", "--server-side", "-f", &claim]);
    let v1 = serve.json(&["get", "resourceclaims.v1.resource.k8s.io", "two-gpus"]);
    assert_eq!(
        v1["spec"]["devices"]["requests"][0]["exactly"]["count"],
        json!(2)
    );
    // v1beta2 has v1's shape.
    let v1beta2 = serve.json(&["get", "resourceclaims.v1beta2.resource.k8s.io", "two-gpus"]);
    assert_eq!(v1beta2["apiVersion"], json!("resource.k8s.io/v1beta2"));
    assert_eq!(v1beta2["spec"], v1["spec"]);
    let versions = serve.ok(&["api-versions"]);
    for gv in [
        "resource.k8s.io/v1",
        "resource.k8s.io/v1beta1",
        "resource.k8s.io/v1beta2",
    ] {
        assert!(versions.lines().any(|l| l == gv), "{gv} in {versions}");
    }
    // The preferred version stays v1.
    let (code, body) = serve.http("GET", "/apis", &["Accept: application/json"], b"");
    assert_eq!(code, 200, "{body}");
    let groups: Value = serde_json::from_str(&body).expect("JSON");
    let group = groups["groups"]
        .as_array()
        .and_then(|g| g.iter().find(|g| g["name"] == "resource.k8s.io"))
        .expect("resource.k8s.io is listed");
    assert_eq!(group["preferredVersion"]["version"], json!("v1"));

    // Switched off: neither discovered nor answered.
    let (_dir, off) = start(&["--runtime-config=api/beta=false"]);
    let versions = off.ok(&["api-versions"]);
    assert!(!versions.contains("resource.k8s.io/v1beta"), "{versions}");
    let (code, _) = off.http(
        "GET",
        "/apis/resource.k8s.io/v1beta2/devicetaintrules",
        &["Accept: application/json"],
        b"",
    );
    assert_eq!(code, 404);
    let (code, _) = off.http(
        "GET",
        "/apis/resource.k8s.io/v1/resourceclaims",
        &["Accept: application/json"],
        b"",
    );
    assert_eq!(code, 200);
}

const CLAIM_V1: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: watched
  namespace: default
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: 1
";

/// A v1beta1 rendering of the claim above: the request flat (no `exactly`).
fn assert_v1beta1(object: &Value, what: &str) {
    assert_eq!(
        object["apiVersion"],
        json!("resource.k8s.io/v1beta1"),
        "{what}: {object}"
    );
    let request = &object["spec"]["devices"]["requests"][0];
    assert_eq!(
        request["deviceClassName"],
        json!("gpu.example.com"),
        "{what}: {object}"
    );
    assert_eq!(request["count"], json!(1), "{what}: {object}");
    assert_eq!(request.get("exactly"), None, "{what}: {object}");
}

/// The JSON events of a watch body read by the raw client (chunk framing left in: one event
/// per chunk, each on a line of its own).
fn watch_events(body: &str) -> Vec<Value> {
    body.lines()
        .map(str::trim)
        .filter(|line| line.starts_with('{'))
        .map(|line| serde_json::from_str(line).expect("a JSON watch event"))
        .collect()
}

/// A watch at v1beta1 sees every change rendered at v1beta1, whatever version wrote it: real
/// kubectl's `get -w` (a list, then a watch from its resourceVersion), a raw watch from a
/// resourceVersion with client-go's Accept header (no protobuf form of v1beta1: answered in
/// JSON), and a WatchList stream (`sendInitialEvents`) whose initial events are v1beta1 too.
#[test]
fn watches_at_v1beta1_render_every_event_at_v1beta1() {
    use std::io::Read;
    let (_dir, serve) = start(&["--runtime-config", "resource.k8s.io/v1beta1=true"]);
    let marker = serve.file("marker.yaml", &CLAIM_V1.replace("watched", "marker"));
    serve.ok(&["apply", "-f", &marker]);
    let mut watcher = serve
        .kubectl_command(&[
            "get",
            "resourceclaims.v1beta1.resource.k8s.io",
            "-w",
            "--output-watch-events",
            "-o",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watcher.stdout.take().expect("piped");
    let (tx, rx) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        for value in serde_json::Deserializer::from_reader(stdout).into_iter::<Value>() {
            let Ok(value) = value else { return };
            if tx.send(value).is_err() {
                return;
            }
        }
    });
    // kubectl lists, then watches from the list's resourceVersion: once the claim made
    // beforehand is printed, every later change reaches the watch.
    let first = rx
        .recv_timeout(std::time::Duration::from_secs(30))
        .expect("kubectl prints the listed claim");
    assert_eq!(first["type"], json!("ADDED"), "{first}");
    assert_v1beta1(&first["object"], "kubectl's list");
    let (code, body) = serve.http(
        "GET",
        "/apis/resource.k8s.io/v1/resourceclaims",
        &["Accept: application/json"],
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let before: Value = serde_json::from_str(&body).expect("JSON");
    let from = before["metadata"]["resourceVersion"]
        .as_str()
        .expect("a list resourceVersion")
        .to_string();
    // Written at v1: created, labelled, deleted.
    let claim = serve.file("claim-v1.yaml", CLAIM_V1);
    serve.ok(&["apply", "-f", &claim]);
    serve.ok(&[
        "label",
        "resourceclaims.v1.resource.k8s.io",
        "watched",
        "a=b",
    ]);
    serve.ok(&["delete", "resourceclaims.v1.resource.k8s.io", "watched"]);
    let mut seen = Vec::new();
    while let Ok(event) = rx.recv_timeout(std::time::Duration::from_secs(30)) {
        let kind = event["type"].as_str().unwrap_or_default().to_string();
        assert_eq!(
            event["object"]["metadata"]["name"],
            json!("watched"),
            "{event}"
        );
        assert_v1beta1(&event["object"], &format!("kubectl -w {kind}"));
        seen.push(kind);
        if seen.last().is_some_and(|k| k == "DELETED") {
            break;
        }
    }
    let _ = watcher.kill();
    let mut err = String::new();
    if let Some(mut stderr) = watcher.stderr.take() {
        let _ = stderr.read_to_string(&mut err);
    }
    let _ = watcher.wait();
    assert_eq!(
        seen,
        ["ADDED", "MODIFIED", "DELETED"],
        "kubectl said: {err}"
    );

    // A raw watch from before the claim, as client-go asks (protobuf first).
    let (code, body) = serve.http(
        "GET",
        &format!(
            "/apis/resource.k8s.io/v1beta1/namespaces/default/resourceclaims?watch=true&resourceVersion={from}&timeoutSeconds=2"
        ),
        &["Accept: application/vnd.kubernetes.protobuf, */*"],
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let events = watch_events(&body);
    let types: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(types, ["ADDED", "MODIFIED", "DELETED"], "{body}");
    for event in &events {
        assert_v1beta1(&event["object"], "raw watch");
    }

    // WatchList: the initial events of the existing claims are v1beta1 as well.
    serve.ok(&["apply", "-f", &claim]);
    let (code, body) = serve.http(
        "GET",
        "/apis/resource.k8s.io/v1beta1/resourceclaims?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=2",
        &["Accept: application/json"],
        b"",
    );
    assert_eq!(code, 200, "{body}");
    let events = watch_events(&body);
    let added: Vec<&Value> = events.iter().filter(|e| e["type"] == "ADDED").collect();
    assert_eq!(added.len(), 2, "{body}");
    for event in added {
        assert_v1beta1(&event["object"], "initial event");
    }
    let bookmark = events
        .iter()
        .find(|e| e["type"] == "BOOKMARK")
        .expect("the initial-events-end bookmark");
    assert_eq!(
        bookmark["object"]["apiVersion"],
        json!("resource.k8s.io/v1beta1"),
        "{bookmark}"
    );
}

#[test]
fn a_bad_runtime_config_is_refused_with_exit_code_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .args(["--runtime-config", "resource.k8s.io/v9=true"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("group version resource.k8s.io/v9 that has not been registered"),
        "{err}"
    );
}
