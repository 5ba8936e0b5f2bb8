//! `allot serve --etcd-servers`: the whole end-to-end suite of tests/serve.rs again, each test on
//! its own etcd (a temporary data directory, free ports), plus what only shared storage has:
//! two servers on one etcd that see each other's writes and never hand out one device twice,
//! and kill -9 under a stream of writes. Without an `etcd` binary (`ALLOT_ETCD`, else PATH)
//! the tests fail and name the README's test command (`cargo xtask test`), which provisions one.

// The suites (serve.rs, serve_patch.rs, serve_misc.rs) load support/serve.rs as their own private module; the
// tests here need it too and cannot reach the suites' copies.
#![allow(clippy::duplicate_mod)]

#[path = "support/etcd.rs"]
mod etcd;
#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;
#[path = "serve.rs"]
mod suite;
// The write-path tests (patches, server-side apply, dry run, validation, namespace deletion).
#[path = "serve_patch.rs"]
mod patch_suite;
// Repeated keys, managedFields of the controllers' writes, node checkpoints across a restart.
#[path = "serve_misc.rs"]
mod misc_suite;
// The workload, storage, service and policy kinds: apply, tables, explain, updates, RBAC.
#[path = "serve_kinds.rs"]
mod kinds_suite;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use harness::{Serve, write};

/// Leader election fast enough for tests.
const ELECTION: [&str; 6] = [
    "--leader-elect-lease-duration",
    "2s",
    "--leader-elect-renew-deadline",
    "1500ms",
    "--leader-elect-retry-period",
    "300ms",
];

/// The suite's hook: an etcd on `DATA_DIR/etcd` for each server start (a restart finds the
/// same etcd data).
fn backend(data_dir: &Path) -> (Vec<String>, Option<Box<dyn std::any::Any + Send + Sync>>) {
    let binary = etcd::binary();
    let etcd = etcd::Etcd::start(&binary, &data_dir.join("etcd"));
    let mut args = vec!["--etcd-servers".to_string(), etcd.url.clone()];
    args.extend(ELECTION.iter().map(ToString::to_string));
    (args, Some(Box::new(etcd)))
}

/// One `allot serve` on the etcd at `etcd_url`, with fast leader election.
fn start(data_dir: &Path, etcd_url: &str, kubectl: &Path) -> Serve {
    let mut args = vec!["--etcd-servers", etcd_url];
    args.extend(ELECTION);
    Serve::start(data_dir, kubectl, &args)
}

/// Two nodes with two GPUs each, and `pods` pods that each want one GPU through a claim
/// template: only four can run.
fn contended_cluster(pods: usize) -> (String, Vec<String>) {
    let mut setup = String::from(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ha\n---\napiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu.example.com\"\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: one-gpu\n  namespace: ha\nspec:\n  spec:\n    devices:\n      requests:\n      - name: gpu\n        exactly:\n          deviceClassName: gpu.example.com\n",
    );
    for node in ["node-a", "node-b"] {
        setup.push_str(&format!(
            "---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {node}\n  labels:\n    kubernetes.io/hostname: {node}\nstatus:\n  capacity: {{cpu: \"64\", memory: 256Gi, pods: \"110\"}}\n  allocatable: {{cpu: \"64\", memory: 256Gi, pods: \"110\"}}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: {node}-gpus\nspec:\n  driver: gpu.example.com\n  nodeName: {node}\n  pool: {{name: {node}, generation: 1, resourceSliceCount: 1}}\n  devices:\n  - name: gpu-0\n  - name: gpu-1\n"
        ));
    }
    let pods = (0..pods)
        .map(|i| {
            format!(
                "{{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p{i}\",\"namespace\":\"ha\"}},\"spec\":{{\"containers\":[{{\"name\":\"c\",\"image\":\"x\",\"resources\":{{\"claims\":[{{\"name\":\"gpu\"}}]}}}}],\"resourceClaims\":[{{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"one-gpu\"}}]}}}}"
            )
        })
        .collect();
    (setup, pods)
}

/// Every allocated device of the claims in `list` (a ResourceClaimList), with the claims
/// holding it, and how many claims are allocated.
fn allocations(list: &str) -> (BTreeMap<String, Vec<String>>, usize) {
    let list: serde_json::Value = serde_json::from_str(list).expect("a claim list");
    let mut devices: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut allocated = 0;
    for claim in list["items"].as_array().cloned().unwrap_or_default() {
        let name = claim["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let results = claim
            .pointer("/status/allocation/devices/results")
            .and_then(serde_json::Value::as_array)
            .cloned()
            .unwrap_or_default();
        if !results.is_empty() {
            allocated += 1;
        }
        for result in results {
            let device = format!(
                "{}/{}/{}",
                result["driver"].as_str().unwrap_or_default(),
                result["pool"].as_str().unwrap_or_default(),
                result["device"].as_str().unwrap_or_default()
            );
            devices.entry(device).or_default().push(name.clone());
        }
    }
    (devices, allocated)
}

#[test]
fn two_servers_on_one_etcd_never_allocate_a_device_twice() {
    let binary = etcd::binary();
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    let mut a = start(&dir.path().join("a"), &etcd.url, &kubectl);
    let b = start(&dir.path().join("b"), &etcd.url, &kubectl);
    let (setup, pods) = contended_cluster(24);
    let setup = write(dir.path(), "setup.yaml", &setup);
    a.ok(&["apply", "-f", &setup]);
    // Both servers take pods at once, from two threads.
    let (first, second) = pods.split_at(pods.len() / 2);
    std::thread::scope(|s| {
        for (server, pods) in [(&a, first), (&b, second)] {
            s.spawn(move || {
                for pod in pods {
                    let mut code = 0;
                    for _ in 0..20 {
                        (code, _) =
                            server.http_json("POST", "/api/v1/namespaces/ha/pods", pod.as_bytes());
                        if code == 201 {
                            break;
                        }
                        std::thread::sleep(Duration::from_millis(50));
                    }
                    assert_eq!(code, 201, "pod create failed: {pod}");
                }
            });
        }
    });
    // Halfway, the server that leads (or not) dies; the other one carries on.
    std::thread::sleep(Duration::from_secs(1));
    a.kill9();
    // Waits until `devices` claims are allocated and as many pods bound, then checks that no
    // device is held by two claims.
    let settle = |want: usize| {
        let deadline = Instant::now() + Duration::from_secs(60);
        let (devices, allocated, bound) = loop {
            let list = b.ok(&["get", "resourceclaims", "-n", "ha", "-o", "json"]);
            let (devices, allocated) = allocations(&list);
            let pods = b.ok(&["get", "pods", "-n", "ha", "-o", "json"]);
            let pods: serde_json::Value = serde_json::from_str(&pods).expect("a pod list");
            let bound: BTreeSet<String> = pods["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
                .iter()
                .filter(|p| p.pointer("/spec/nodeName").is_some_and(|n| n.is_string()))
                .filter_map(|p| p["metadata"]["name"].as_str().map(str::to_string))
                .collect();
            if (allocated >= want && bound.len() >= want) || Instant::now() > deadline {
                break (devices, allocated, bound);
            }
            std::thread::sleep(Duration::from_millis(300));
        };
        let doubled: Vec<_> = devices.iter().filter(|(_, c)| c.len() > 1).collect();
        assert!(doubled.is_empty(), "devices allocated twice: {doubled:?}");
        assert_eq!(allocated, want, "one claim per device: {devices:?}");
        assert_eq!(devices.len(), want, "{devices:?}");
        assert_eq!(bound.len(), want, "{bound:?}");
    };
    settle(4);
    // Only b is left, so b leads now: two more devices on a third node go to two more pods.
    let more = write(
        dir.path(),
        "node-c.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-c\n  labels:\n    kubernetes.io/hostname: node-c\nstatus:\n  capacity: {cpu: \"64\", memory: 256Gi, pods: \"110\"}\n  allocatable: {cpu: \"64\", memory: 256Gi, pods: \"110\"}\n---\napiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: node-c-gpus\nspec:\n  driver: gpu.example.com\n  nodeName: node-c\n  pool: {name: node-c, generation: 1, resourceSliceCount: 1}\n  devices:\n  - name: gpu-0\n  - name: gpu-1\n",
    );
    b.ok(&["apply", "-f", &more]);
    settle(6);
    drop(etcd);
}

/// One private etcd and two servers on it (`None`, after saying why, when etcd or kubectl is
/// missing outside CI). The temporary directory must outlive the servers.
fn two_servers() -> (tempfile::TempDir, etcd::Etcd, Serve, Serve) {
    let binary = etcd::binary();
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    let a = start(&dir.path().join("a"), &etcd.url, &kubectl);
    let b = start(&dir.path().join("b"), &etcd.url, &kubectl);
    (dir, etcd, a, b)
}

#[test]
fn both_servers_see_each_others_writes_and_conflicts() {
    let (_dir, _etcd, a, b) = two_servers();
    let ns = |name: &str| {
        format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{name}\"}}}}"
        )
    };
    let (code, created) = a.http_json("POST", "/api/v1/namespaces", ns("from-a").as_bytes());
    assert_eq!(code, 201, "{created}");
    let created: serde_json::Value = serde_json::from_str(&created).expect("json");
    let rv = created["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // B sees it with the same resourceVersion and uid.
    let mut seen = String::new();
    for _ in 0..50 {
        seen = b.ok(&[
            "get",
            "namespace",
            "from-a",
            "--ignore-not-found",
            "-o",
            "jsonpath={.metadata.resourceVersion} {.metadata.uid}",
        ]);
        if !seen.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(
        seen,
        format!(
            "{rv} {}",
            created["metadata"]["uid"].as_str().unwrap_or_default()
        )
    );
    // An update on B with A's resourceVersion works; the same stale update on A then conflicts.
    let mut update = created.clone();
    update["metadata"]["labels"] = serde_json::json!({"by": "b"});
    let (code, body) = b.http_json(
        "PUT",
        "/api/v1/namespaces/from-a",
        update.to_string().as_bytes(),
    );
    assert_eq!(code, 200, "{body}");
    update["metadata"]["labels"] = serde_json::json!({"by": "a"});
    let (code, body) = a.http_json(
        "PUT",
        "/api/v1/namespaces/from-a",
        update.to_string().as_bytes(),
    );
    assert_eq!(code, 409, "{body}");
    assert!(body.contains("\"reason\":\"Conflict\""), "{body}");
    // Creating one name on both: one wins, the other gets AlreadyExists.
    let (code_a, _) = a.http_json("POST", "/api/v1/namespaces", ns("both").as_bytes());
    let (code_b, body_b) = b.http_json("POST", "/api/v1/namespaces", ns("both").as_bytes());
    assert_eq!((code_a, code_b), (201, 409), "{body_b}");
    assert!(body_b.contains("AlreadyExists"), "{body_b}");
    // Unrelated writes on both interleave without errors, and both end with the same objects.
    std::thread::scope(|s| {
        for (server, prefix) in [(&a, "x"), (&b, "y")] {
            s.spawn(move || {
                for i in 0..20 {
                    let (code, body) = server.http_json(
                        "POST",
                        "/api/v1/namespaces",
                        ns(&format!("{prefix}{i}")).as_bytes(),
                    );
                    assert_eq!(code, 201, "{body}");
                }
            });
        }
    });
    let list = |s: &Serve| {
        s.ok(&[
            "get",
            "namespaces",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.metadata.resourceVersion} {end}",
        ])
    };
    let mut same = false;
    for _ in 0..50 {
        if list(&a) == list(&b) {
            same = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(same, "{}\n{}", list(&a), list(&b));
    assert_eq!(list(&a).split_whitespace().count(), 3 + 2 + 40);
}

#[test]
fn kill_9_during_writes_loses_no_acknowledged_write() {
    let binary = etcd::binary();
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    let data = dir.path().join("a");
    let mut server = start(&data, &etcd.url, &kubectl);
    let mut acknowledged = Vec::new();
    let killed = std::thread::scope(|s| {
        let writer = s.spawn(|| {
            let mut acked = Vec::new();
            for i in 0..100_000 {
                let name = format!("n{i}");
                let body = format!(
                    "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{name}\"}}}}"
                );
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    server.http_json("POST", "/api/v1/namespaces", body.as_bytes())
                }));
                match result {
                    Ok((201, _)) => acked.push(name),
                    _ => break,
                }
            }
            acked
        });
        std::thread::sleep(Duration::from_millis(1500));
        let pid = server.pid();
        let _ = Command::new("kill").args(["-9", &pid.to_string()]).status();
        writer.join().expect("writer")
    });
    server.kill9();
    acknowledged.extend(killed);
    assert!(acknowledged.len() > 5, "too few writes before the kill");
    eprintln!("{} acknowledged writes before kill -9", acknowledged.len());
    let server = start(&data, &etcd.url, &kubectl);
    let names = server.ok(&[
        "get",
        "namespaces",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {end}",
    ]);
    let names: BTreeSet<&str> = names.split_whitespace().collect();
    let lost: Vec<&String> = acknowledged
        .iter()
        .filter(|n| !names.contains(n.as_str()))
        .collect();
    assert!(lost.is_empty(), "acknowledged but lost: {lost:?}");
    // The restarted server holds no history from before its start: a watch from there is
    // told to re-list (410 Gone), as kube-apiserver's watch cache does.
    let (code, body) = server.http_json(
        "GET",
        "/api/v1/namespaces?watch=true&resourceVersion=2&timeoutSeconds=1",
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"type\":\"ERROR\"") && body.contains("\"code\":410"),
        "{body}"
    );
}

#[test]
fn a_second_server_on_one_data_directory_is_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut first = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("allot serve starts");
    let stdout = first.stdout.take().expect("stdout is piped");
    let listening = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("kubeconfig: "));
    assert!(listening, "the first server did not start");
    let second = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .output()
        .expect("allot serve runs");
    let _ = first.kill();
    let _ = first.wait();
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("in use by process {}", first.id()))
            && stderr.contains("stop that allot serve first"),
        "{stderr}"
    );
}

fn namespace_json(name: &str) -> String {
    format!("{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{name}\"}}}}")
}

fn names_in(list: &str) -> BTreeSet<String> {
    let list: serde_json::Value = serde_json::from_str(list).expect("a list");
    list["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .iter()
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect()
}

/// A write acknowledged by one server is seen by the next read without resourceVersion on
/// the other (kube-apiserver reads etcd for those), every time; reads with
/// resourceVersion=0 may be served from what the server has.
#[test]
fn a_write_on_one_server_is_read_at_once_on_the_other() {
    let (_dir, etcd, a, b) = two_servers();
    for i in 0..200 {
        let (writer, reader) = if i % 2 == 0 { (&a, &b) } else { (&b, &a) };
        let name = format!("ryw-{i}");
        let (code, body) = writer.http_json(
            "POST",
            "/api/v1/namespaces",
            namespace_json(&name).as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
        let created: serde_json::Value = serde_json::from_str(&body).expect("json");
        if i % 4 >= 2 {
            // A list from the write's resourceVersion (not older than it) has it too.
            let rv = created["metadata"]["resourceVersion"]
                .as_str()
                .unwrap_or_default();
            let (code, body) = reader.http_json(
                "GET",
                &format!("/api/v1/namespaces?resourceVersion={rv}"),
                b"",
            );
            assert_eq!(code, 200, "{body}");
            assert!(
                names_in(&body).contains(&name),
                "iteration {i}: list from resourceVersion {rv} on the other server"
            );
        }
        let (code, body) = reader.http_json("GET", &format!("/api/v1/namespaces/{name}"), b"");
        assert_eq!(code, 200, "iteration {i}: get on the other server: {body}");
        let read: serde_json::Value = serde_json::from_str(&body).expect("json");
        assert_eq!(read["metadata"], created["metadata"], "iteration {i}");
        let (code, body) = reader.http_json("GET", "/api/v1/namespaces?resourceVersion=", b"");
        assert_eq!(code, 200, "{body}");
        assert!(
            names_in(&body).contains(&name),
            "iteration {i}: list on the other server"
        );
    }
    // A resourceVersion etcd has not reached: upstream's 504 once the wait is over.
    let future = etcd::revision(&etcd.url) + 1000;
    let (code, body) = b.http_json(
        "GET",
        &format!("/api/v1/namespaces?resourceVersion={future}"),
        b"",
    );
    assert_eq!(code, 504, "{body}");
    assert!(
        body.contains(&format!("Timeout: Too large resource version: {future}"))
            && body.contains("ResourceVersionTooLarge"),
        "{body}"
    );
    drop(etcd);
}

/// etcd compacts the history a server's watch still needed (the server was cut off from etcd
/// meanwhile): the server lists everything again, rebuilds its objects at etcd's revision,
/// answers watches from before with 410 Gone, keeps /readyz at 200 and serves on.
#[test]
fn compaction_past_a_server_rebuilds_its_mirror_and_serves_on() {
    let binary = etcd::binary();
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    let proxy = etcd::Proxy::start(&etcd.url);
    let a = start(&dir.path().join("a"), &proxy.url, &kubectl);
    let b = start(&dir.path().join("b"), &etcd.url, &kubectl);
    let (code, body) = b.http_json(
        "POST",
        "/api/v1/namespaces",
        namespace_json("old").as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    let (code, body) = a.http_json("GET", "/api/v1/namespaces/old", b"");
    assert_eq!(code, 200, "{body}");
    let old_rv = serde_json::from_str::<serde_json::Value>(&body).expect("json")["metadata"]
        ["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // A loses etcd; B changes things; etcd forgets the history A has not seen.
    proxy.cut();
    for i in 0..5 {
        let (code, body) = b.http_json(
            "POST",
            "/api/v1/namespaces",
            namespace_json(&format!("new-{i}")).as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = b.http_json("DELETE", "/api/v1/namespaces/old", b"");
    assert_eq!(code, 200, "{body}");
    // The namespace controller finishes the deletion (no content).
    let deadline = Instant::now() + Duration::from_secs(20);
    while b.http_json("GET", "/api/v1/namespaces/old", b"").0 != 404 {
        assert!(Instant::now() < deadline, "the namespace did not go");
        std::thread::sleep(Duration::from_millis(100));
    }
    etcd::compact(&etcd.url, etcd::revision(&etcd.url));
    proxy.restore();
    // A catches up from a new list.
    let deadline = Instant::now() + Duration::from_secs(30);
    let names = loop {
        let (code, body) = a.http_json("GET", "/api/v1/namespaces?resourceVersion=0", b"");
        assert_eq!(code, 200, "{body}");
        let names = names_in(&body);
        if names.contains("new-4") && !names.contains("old") || Instant::now() > deadline {
            break names;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(
        (0..5).all(|i| names.contains(&format!("new-{i}"))) && !names.contains("old"),
        "{names:?}"
    );
    let (code, body) = a.http_json("GET", "/readyz", b"");
    assert_eq!((code, body.as_str()), (200, "ok"));
    // A watch from before the new list is too old: 410 Gone, the client lists again.
    let (code, body) = a.http_json(
        "GET",
        &format!("/api/v1/namespaces?watch=1&resourceVersion={old_rv}&timeoutSeconds=1"),
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"type\":\"ERROR\"") && body.contains("\"code\":410"),
        "{body}"
    );
    // Writes on A go on, and B sees them; A sees B's.
    let (code, body) = a.http_json(
        "POST",
        "/api/v1/namespaces",
        namespace_json("after").as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(b.http_json("GET", "/api/v1/namespaces/after", b"").0, 200);
    let (code, body) = b.http_json(
        "POST",
        "/api/v1/namespaces",
        namespace_json("after-b").as_bytes(),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(a.http_json("GET", "/api/v1/namespaces/after-b", b"").0, 200);
    let (code, _) = a.http_json("GET", "/readyz", b"");
    assert_eq!(code, 200);
    drop(etcd);
}

/// A watch from a resourceVersion the server has not reached yet (another server's write, on
/// its way) waits for it instead of failing; one that never comes is 504 "Too large resource
/// version" after a while, as kube-apiserver's watch cache answers.
#[test]
fn a_watch_from_a_revision_not_seen_yet_waits_for_it() {
    let (_dir, etcd, a, b) = two_servers();
    for i in 0..5 {
        let name = format!("w-{i}");
        let (code, body) = a.http_json(
            "POST",
            "/api/v1/namespaces",
            namespace_json(&name).as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
        let created: serde_json::Value = serde_json::from_str(&body).expect("json");
        let rv: u64 = created["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|r| r.parse().ok())
            .expect("a resourceVersion");
        // Label it on A, then watch on B from the create: the label change comes.
        let (code, body) = a.http_json(
            "PUT",
            &format!("/api/v1/namespaces/{name}"),
            serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name, "labels": {"i": i.to_string()}, "resourceVersion": rv.to_string()}}).to_string().as_bytes(),
        );
        assert_eq!(code, 200, "{body}");
        let (code, body) = b.http_json(
            "GET",
            &format!("/api/v1/namespaces?watch=1&resourceVersion={rv}&timeoutSeconds=1"),
            b"",
        );
        assert_eq!(code, 200, "{body}");
        assert!(!body.contains("\"ERROR\""), "iteration {i}: {body}");
        assert!(
            body.contains("\"MODIFIED\"") && body.contains(&format!("\"name\":\"{name}\"")),
            "iteration {i}: {body}"
        );
    }
    let current = etcd::revision(&etcd.url);
    let started = Instant::now();
    let (code, body) = b.http_json(
        "GET",
        &format!(
            "/api/v1/namespaces?watch=1&resourceVersion={}&timeoutSeconds=10",
            current + 1000
        ),
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"ERROR\"")
            && body.contains("\"code\":504")
            && body.contains(&format!(
                "Timeout: Too large resource version: {}",
                current + 1000
            ))
            && body.contains("ResourceVersionTooLarge"),
        "{body}"
    );
    // It waited (kube-apiserver: 3 s) before answering.
    assert!(
        started.elapsed() >= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    drop(etcd);
}
