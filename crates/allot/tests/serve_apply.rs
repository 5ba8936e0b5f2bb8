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

/// pod `namespace/name` → (node, devices of its claims as `driver/pool/device`, sorted), from
/// the final objects of a cluster (serve's lists or simulate's `v1 List`).
fn placements(objects: &[Value]) -> BTreeMap<String, (String, Vec<String>)> {
    let mut out: BTreeMap<String, (String, Vec<String>)> = BTreeMap::new();
    for object in objects.iter().filter(|o| o["kind"] == "Pod") {
        let meta = &object["metadata"];
        let key = format!(
            "{}/{}",
            meta["namespace"].as_str().unwrap_or_default(),
            meta["name"].as_str().unwrap_or_default()
        );
        let node = object["spec"]["nodeName"].as_str().unwrap_or_default();
        out.insert(key, (node.to_string(), Vec::new()));
    }
    for claim in objects.iter().filter(|o| o["kind"] == "ResourceClaim") {
        let namespace = claim["metadata"]["namespace"].as_str().unwrap_or_default();
        let devices: Vec<String> = claim["status"]["allocation"]["devices"]["results"]
            .as_array()
            .map(|results| {
                results
                    .iter()
                    .map(|r| {
                        format!(
                            "{}/{}/{}",
                            r["driver"].as_str().unwrap_or_default(),
                            r["pool"].as_str().unwrap_or_default(),
                            r["device"].as_str().unwrap_or_default()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        for consumer in claim["status"]["reservedFor"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let pod = format!(
                "{namespace}/{}",
                consumer["name"].as_str().unwrap_or_default()
            );
            if let Some((_, list)) = out.get_mut(&pod) {
                list.extend(devices.iter().cloned());
                list.sort();
            }
        }
    }
    out
}

/// Every pod's scheduling outcome on serve once the scheduler is done with it (bound, or
/// marked unschedulable), as `placements`; and the pods' condition messages.
fn serve_placements(serve: &Serve) -> (BTreeMap<String, (String, Vec<String>)>, String) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let pods = serve.json(&["get", "pods", "-A"]);
        let items = pods["items"].as_array().cloned().unwrap_or_default();
        let decided = items.iter().all(|p| {
            p["spec"]["nodeName"].is_string()
                || p["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        });
        if decided || Instant::now() > deadline {
            let claims = serve.json(&["get", "resourceclaims", "-A"]);
            let mut objects = items.clone();
            objects.extend(claims["items"].as_array().cloned().unwrap_or_default());
            let conditions = serde_json::to_string(
                &items
                    .iter()
                    .map(|p| p["status"]["conditions"].clone())
                    .collect::<Vec<_>>(),
            )
            .unwrap_or_default();
            return (placements(&objects), conditions);
        }
        std::thread::sleep(Duration::from_millis(300));
    }
}

/// `allot simulate DIR -o json` (extra arguments first): the final objects' placements.
fn simulate_placements(dir: &Path) -> BTreeMap<String, (String, Vec<String>)> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_allot"))
        .arg("simulate")
        .arg(dir)
        .args(["-o", "json"])
        .output()
        .expect("allot simulate runs");
    let list: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "simulate printed no JSON ({e}): {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    placements(list["items"].as_array().expect("items"))
}

/// A small cluster whose pod needs derived attributes (alpha upstream, on in allot by default):
/// one node with two GPUs on different NUMA nodes, a pod asking for one through a template.
const DERIVED: &str = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels:\n    kubernetes.io/hostname: n1\nstatus:\n  capacity: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n  allocatable: {cpu: \"8\", memory: 32Gi, pods: \"110\"}\n---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu.example.com\"\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: n1-gpus\nspec:\n  driver: gpu.example.com\n  nodeName: n1\n  pool: {name: n1, generation: 1, resourceSliceCount: 1}\n  devices:\n  - name: gpu-0\n    attributes:\n      numa: {int: 0}\n  - name: gpu-1\n    attributes:\n      numa: {int: 1}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: gpu\n  namespace: default\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.example.com\n          selectors:\n          - cel:\n              expression: device.attributes[\"gpu.example.com\"].numa == 1\n          derivedAttributes:\n          - name: derived/numa\n            expression: device.attributes[\"gpu.example.com\"].numa\n      constraints:\n      - requests: [gpu]\n        matchAttribute: derived/numa\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: worker\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: example\n    resources:\n      claims:\n      - name: gpu\n  resourceClaims:\n  - name: gpu\n    resourceClaimTemplateName: gpu\n";

/// Issue 19: after `kubectl apply -f examples/cluster` a pod failed on serve with "the
/// DRADerivedAttributes feature is disabled" while `allot simulate` scheduled the same objects.
/// Both now take their gates from one definition: the same pods end on the same nodes with the
/// same devices, and `--feature-gates` turns a gate off on serve as featureGates does in
/// simulate.
#[test]
fn serve_and_simulate_agree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let derived = dir.path().join("derived");
    std::fs::create_dir_all(&derived).expect("mkdir");
    std::fs::write(derived.join("cluster.yaml"), DERIVED).expect("writes");
    for (name, source) in [("examples", examples()), ("derived", derived.clone())] {
        let serve = Serve::start(
            &dir.path().join(format!("data-{name}")),
            &kubectl::find(),
            &[] as &[&str],
        );
        serve.ok(&["apply", "-f", &source.display().to_string()]);
        let (on_serve, conditions) = serve_placements(&serve);
        assert!(
            !conditions.contains("feature is disabled"),
            "{name}: {conditions}"
        );
        assert_eq!(on_serve, simulate_placements(&source), "{name}");
    }
    // The derived-attributes pod is placed, with the GPU of NUMA node 1.
    let serve = Serve::start(
        &dir.path().join("data-on"),
        &kubectl::find(),
        &[] as &[&str],
    );
    serve.ok(&["apply", "-f", &derived.display().to_string()]);
    let (placed, _) = serve_placements(&serve);
    assert_eq!(
        placed["default/worker"],
        (
            "n1".to_string(),
            vec!["gpu.example.com/n1/gpu-1".to_string()]
        )
    );
    // Turned off, as upstream's default: the same refusal on both sides.
    let off = Serve::start(
        &dir.path().join("data-off"),
        &kubectl::find(),
        &["--feature-gates=DRADerivedAttributes=false"],
    );
    off.ok(&["apply", "-f", &derived.display().to_string()]);
    let (placed, conditions) = serve_placements(&off);
    assert_eq!(placed["default/worker"], (String::new(), Vec::new()));
    assert!(
        conditions.contains("DRADerivedAttributes feature is disabled"),
        "{conditions}"
    );
    std::fs::write(
        derived.join("options.yaml"),
        "apiVersion: allot.dev/v1alpha1\nkind: SimulationOptions\nfeatureGates:\n  DRADerivedAttributes: false\n",
    )
    .expect("writes");
    assert_eq!(
        simulate_placements(&derived)["default/worker"],
        (String::new(), Vec::new())
    );
}
