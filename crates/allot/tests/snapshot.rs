//! End-to-end tests of `allot snapshot` (issue 17, "Live clusters in"): an `allot serve`
//! started with `--from` (examples/cluster, and a 1,000-node `allot gen` cluster) schedules its
//! pods; `allot snapshot --kubeconfig` reads it into a file; `allot simulate` of that file
//! places every pod where the server did; `--anonymize` changes every name, and the placements
//! are the same up to that renaming; `allot simulate --kubeconfig` does both in one step.
//! kubectl comes from `ALLOT_KUBECTL` or PATH (the harness checks it); without it the tests
//! fail and name the README's test command (`cargo xtask test`).

#[path = "support/kubectl.rs"]
mod kubectl;

#[path = "support/serve.rs"]
mod harness;

#[path = "support/cli.rs"]
mod cli;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use harness::Serve;
use serde_json::Value;

fn allot(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .output()
        .expect("allot runs")
}

fn ok(args: &[&str]) -> String {
    let out = allot(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "allot {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Pods by uid: (namespace/name, node).
type Placements = BTreeMap<String, (String, String)>;

fn placements(items: &[Value]) -> Placements {
    items
        .iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|pod| {
            (
                pod["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                (
                    format!(
                        "{}/{}",
                        pod["metadata"]["namespace"].as_str().unwrap_or_default(),
                        pod["metadata"]["name"].as_str().unwrap_or_default()
                    ),
                    pod["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                ),
            )
        })
        .collect()
}

fn server_placements(serve: &Serve) -> Placements {
    let list = serve.json(&["get", "pods", "-A"]);
    let items = list["items"].as_array().cloned().unwrap_or_default();
    let items: Vec<Value> = items
        .into_iter()
        .map(|mut p| {
            p["kind"] = Value::String("Pod".into());
            p
        })
        .collect();
    placements(&items)
}

/// Waits until the server's controllers are done with the pods: every pod bound, or the
/// placements unchanged across several reads.
fn settled(serve: &Serve) -> Placements {
    let mut last = Placements::new();
    let mut same = 0;
    for _ in 0..240 {
        let now = server_placements(serve);
        if !now.is_empty() && now.values().all(|(_, node)| !node.is_empty()) {
            return now;
        }
        if now == last {
            same += 1;
            if same >= 10 {
                return now;
            }
        } else {
            same = 0;
        }
        last = now;
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    last
}

fn simulate(file: &Path) -> Vec<Value> {
    let out = ok(&["simulate", &file.to_string_lossy(), "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("simulate prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

fn start_from(dir: &Path, from: &str) -> Serve {
    let kubectl = kubectl::find();
    Serve::start(&dir.join("data"), &kubectl, &["--from", from])
}

fn snapshot(serve: &Serve, out: &Path, extra: &[&str]) {
    let kubeconfig = serve.kubeconfig.to_string_lossy().into_owned();
    let out = out.to_string_lossy().into_owned();
    let mut args = vec!["snapshot", "--kubeconfig", &kubeconfig, "-o", &out];
    args.extend(extra);
    ok(&args);
}

/// Checks `anonymized` is `original` up to a renaming: same uids, every pod and node name
/// changed, and one node of the original always the same node of the anonymised run.
fn same_up_to_renaming(original: &Placements, anonymized: &Placements) {
    assert_eq!(
        original.keys().collect::<Vec<_>>(),
        anonymized.keys().collect::<Vec<_>>()
    );
    let mut renamed: BTreeMap<&str, &str> = BTreeMap::new();
    for (uid, (name, node)) in original {
        let (new_name, new_node) = &anonymized[uid];
        assert_ne!(name, new_name, "pod {uid} kept its name");
        let (ns, pod) = name.split_once('/').expect("ns/name");
        let (new_ns, new_pod) = new_name.split_once('/').expect("ns/name");
        assert_ne!(ns, new_ns, "pod {uid} kept its namespace");
        assert_ne!(pod, new_pod);
        if node.is_empty() {
            assert!(new_node.is_empty(), "{name} pending, {new_name} placed");
            continue;
        }
        assert_ne!(node, new_node, "node {node} kept its name");
        let first = *renamed.entry(node).or_insert(new_node);
        assert_eq!(first, new_node, "{node} renamed twice");
    }
    let targets: BTreeSet<&&str> = renamed.values().collect();
    assert_eq!(targets.len(), renamed.len(), "two nodes renamed alike");
}

#[test]
fn a_snapshot_of_the_example_cluster_simulates_to_the_servers_placements() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_from(dir.path(), &cli::repo("examples/cluster"));
    // Its one pod stays pending by design (its claims compete for gpu-node-1's devices).
    let placed = settled(&serve);
    assert_eq!(placed.len(), 1, "{placed:?}");

    let file = dir.path().join("snapshot.yaml");
    snapshot(&serve, &file, &[]);
    let text = std::fs::read_to_string(&file).expect("written");
    assert!(
        text.starts_with("# allot snapshot of https://"),
        "{}",
        &text[..200]
    );
    assert!(text.contains("kind: ResourceSlice"));
    let simulated = placements(&simulate(&file));
    assert_eq!(simulated, placed);

    // Anonymised: every name changes, placements identical up to renaming.
    let anon = dir.path().join("anon.json");
    snapshot(&serve, &anon, &["--anonymize", "--anonymize-key", "test"]);
    let anon_text = std::fs::read_to_string(&anon).expect("written");
    for (name, _) in placed.values() {
        let pod = name.split_once('/').map_or(name.as_str(), |(_, p)| p);
        assert!(
            !anon_text.contains(&format!("\"{pod}\"")),
            "{pod} is in the file"
        );
    }
    same_up_to_renaming(&placed, &placements(&simulate(&anon)));
    // The same key, the same names.
    let again = dir.path().join("again.json");
    snapshot(&serve, &again, &["--anonymize", "--anonymize-key", "test"]);
    let names = |path: &Path| -> BTreeSet<String> {
        let list: Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("read")).expect("JSON");
        list["items"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
            .collect()
    };
    assert_eq!(names(&anon), names(&again));

    // simulate --kubeconfig: both steps in one.
    let kubeconfig = serve.kubeconfig.to_string_lossy().into_owned();
    let out = ok(&["simulate", "--kubeconfig", &kubeconfig, "-o", "json"]);
    let list: Value = serde_json::from_str(&out).expect("JSON");
    assert_eq!(placements(list["items"].as_array().expect("items")), placed);
}

#[test]
fn a_thousand_node_generated_cluster_round_trips_through_a_snapshot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let generated = ok(&[
        "gen",
        "--nodes",
        "1000",
        "--devices-per-node",
        "1",
        "--pods",
        "600",
        "-o",
        "json",
    ]);
    let cluster = dir.path().join("cluster.json");
    std::fs::write(&cluster, generated).expect("written");
    let serve = start_from(dir.path(), &cluster.to_string_lossy());
    let placed = settled(&serve);
    assert_eq!(placed.len(), 600);
    let file = dir.path().join("snapshot.json");
    snapshot(&serve, &file, &["--chunk-size", "250"]);
    assert_eq!(placements(&simulate(&file)), placed);
    let anon = dir.path().join("anon.json");
    snapshot(&serve, &anon, &["--anonymize"]);
    same_up_to_renaming(&placed, &placements(&simulate(&anon)));
}

#[test]
fn serve_from_refuses_a_used_data_directory_and_snapshot_a_missing_kubeconfig() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_from(dir.path(), &cli::repo("examples/cluster"));
    let data = serve.data_dir.clone();
    drop(serve);
    let out = allot(&[
        "serve",
        "--listen",
        "127.0.0.1:0",
        "--data-dir",
        &data.to_string_lossy(),
        "--from",
        &cli::repo("examples/cluster"),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--from needs an unused data directory"),
        "{err}"
    );

    let missing = dir.path().join("nope");
    let out = allot(&[
        "snapshot",
        "--kubeconfig",
        &missing.to_string_lossy(),
        "-o",
        &dir.path().join("x.yaml").to_string_lossy(),
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(!dir.path().join("x.yaml").exists());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--kubeconfig"), "{err}");
}
