//! End-to-end tests of `allot serve` with the bundled example cluster and a real kubectl 1.37
//! (issue 19): re-applying an unchanged manifest (client-side and server-side) writes nothing,
//! `metadata.generation` counts spec changes only, and `kubectl apply -f examples/cluster` on
//! serve ends as `allot simulate examples/cluster` does (same pods scheduled, same devices,
//! the same feature gates). kubectl comes from `ALLOT_KUBECTL` (the README's test command,
//! `cargo xtask test`, provisions it).

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use harness::Serve;
use serde_json::Value;

fn examples() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/cluster"
    ))
}

/// The kinds of examples/cluster.
const KINDS: &str = "namespaces,nodes,deviceclasses,resourceslices,resourceclaimtemplates,resourceclaims,pods,devicetaintrules";

/// Every object of the example's kinds: `kind/namespace/name` → (resourceVersion,
/// generation, managedFields).
fn snapshot(serve: &Serve) -> BTreeMap<String, (String, Value, Value)> {
    let list = serve.json(&["get", KINDS, "-A", "--show-managed-fields"]);
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|o| {
            let meta = &o["metadata"];
            (
                format!(
                    "{}/{}/{}",
                    o["kind"].as_str().unwrap_or_default(),
                    meta["namespace"].as_str().unwrap_or_default(),
                    meta["name"].as_str().unwrap_or_default()
                ),
                (
                    meta["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    meta["generation"].clone(),
                    meta["managedFields"].clone(),
                ),
            )
        })
        .collect()
}

/// The snapshot once the control plane stopped writing (two equal snapshots in a row).
fn settled(serve: &Serve) -> BTreeMap<String, (String, Value, Value)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut last = snapshot(serve);
    loop {
        std::thread::sleep(Duration::from_millis(500));
        let now = snapshot(serve);
        if now == last || Instant::now() > deadline {
            return now;
        }
        last = now;
    }
}

fn start(dir: &Path) -> Serve {
    Serve::start(&dir.join("data"), &kubectl::find(), &[] as &[&str])
}

/// Issue 19: every re-apply printed `configured` and bumped generation and resourceVersion
/// (5/60 → 6/62), so `kubectl diff` reported drift forever.
#[test]
fn applying_an_unchanged_manifest_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    let cluster = examples().display().to_string();
    serve.ok(&["apply", "-f", &cluster]);
    let before = settled(&serve);
    let again = serve.ok(&["apply", "-f", &cluster]);
    // kubectl decides the word: it sends a patch when an atomic list restates what the
    // server defaulted (the claim and template requests), as against kube-apiserver; the
    // server writes nothing either way.
    for line in again.lines() {
        assert!(
            line.ends_with(" unchanged") || line.ends_with(" configured"),
            "{again}"
        );
    }
    assert!(again.contains("namespace/ml-team unchanged"), "{again}");
    assert!(
        again.contains("deviceclass.resource.k8s.io/gpu.example.com unchanged"),
        "{again}"
    );
    assert_eq!(snapshot(&serve), before, "client-side apply wrote");
    let diff = serve.kubectl(&["diff", "-f", &cluster]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "kubectl diff: {}{}",
        String::from_utf8_lossy(&diff.stdout),
        String::from_utf8_lossy(&diff.stderr)
    );

    // Server-side apply: the first takes ownership (a write), the second changes nothing.
    serve.ok(&["apply", "--server-side", "-f", &cluster]);
    let owned = settled(&serve);
    serve.ok(&["apply", "--server-side", "-f", &cluster]);
    assert_eq!(snapshot(&serve), owned, "server-side apply wrote");
}

/// Issue 19: generation changes only on spec changes.
#[test]
fn generation_counts_spec_changes_only() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    let class = serve.file(
        "class.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu.example.com\"\n",
    );
    serve.ok(&["apply", "-f", &class]);
    let generation = |serve: &Serve| {
        serve.json(&["get", "deviceclass", "gpu.example.com"])["metadata"]["generation"]
            .as_i64()
            .expect("generation")
    };
    assert_eq!(generation(&serve), 1);
    serve.ok(&["label", "deviceclass", "gpu.example.com", "tier=gold"]);
    assert_eq!(generation(&serve), 1, "a label is metadata");
    serve.ok(&[
        "patch",
        "deviceclass",
        "gpu.example.com",
        "--type=merge",
        "-p",
        r#"{"spec":{"selectors":[{"cel":{"expression":"device.driver == \"other.example.com\""}}]}}"#,
    ]);
    assert_eq!(generation(&serve), 2, "a spec change");
    // The same spec again: no write at all.
    let rv = serve.json(&["get", "deviceclass", "gpu.example.com"])["metadata"]["resourceVersion"]
        .clone();
    serve.ok(&[
        "patch",
        "deviceclass",
        "gpu.example.com",
        "--type=merge",
        "-p",
        r#"{"spec":{"selectors":[{"cel":{"expression":"device.driver == \"other.example.com\""}}]}}"#,
    ]);
    let after = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    assert_eq!(after["metadata"]["resourceVersion"], rv);
    assert_eq!(after["metadata"]["generation"], 2);
}
