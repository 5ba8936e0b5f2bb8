//! End-to-end tests of `allot bench serve`: a small load on the embedded store and on a private
//! etcd, every pod scheduled with its claim allocated and running, the JSON figures consistent;
//! the children and temporary directories gone afterwards, also after SIGTERM. No timing is
//! asserted. Without an `etcd` binary the etcd test fails and names the README's test
//! command (`cargo xtask test`), which provisions one.

#[path = "support/etcd.rs"]
mod etcd;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `allot bench serve ARGS -o json` with TMPDIR set to `tmp`.
fn bench(tmp: &Path, args: &[&str], envs: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["bench", "serve"])
        .args(args)
        .args(["-o", "json"])
        .env("TMPDIR", tmp)
        .envs(envs.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("allot bench runs")
}

/// Processes whose command line mentions `text` (the children of a benchmark name their data
/// directories under its TMPDIR).
fn processes_mentioning(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").expect("/proc").flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains(text) {
            found.push(format!("{name}: {cmdline}"));
        }
    }
    found
}

/// Nothing the benchmark started or created is left.
fn assert_cleaned_up(tmp: &Path) {
    let deadline = Instant::now() + Duration::from_secs(10);
    let marker = tmp.display().to_string();
    loop {
        let left = processes_mentioning(&marker);
        if left.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "processes outlived the benchmark: {left:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let leftovers: Vec<_> = std::fs::read_dir(tmp)
        .expect("reads TMPDIR")
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(leftovers.is_empty(), "left in TMPDIR: {leftovers:?}");
}

/// The one store report of a benchmark's JSON, checked to be a complete, consistent run of
/// 40 pods on 5 nodes of 8 GPUs.
fn check_small_run(output: &Output, store: &str) {
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "exit {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let document: Value = serde_json::from_str(&stdout).expect("JSON on stdout");
    assert_eq!(document["benchmark"], "serve");
    let stores = document["stores"].as_array().expect("stores");
    assert_eq!(stores.len(), 1, "{document:#}");
    let report = &stores[0];
    assert_eq!(report["store"], store);
    assert_eq!(report["status"], "ok", "{report:#}");
    let f = &report["figures"];
    let count = |key: &str| f[key].as_u64().unwrap_or_else(|| panic!("{key}: {f:#}"));
    let positive = |key: &str| {
        let value = f[key].as_f64().unwrap_or_else(|| panic!("{key}: {f:#}"));
        assert!(value.is_finite() && value > 0.0, "{key} = {value}: {f:#}");
        value
    };
    assert_eq!(count("nodes"), 5);
    assert_eq!(count("devices_per_node"), 8);
    assert_eq!(count("pods"), 40);
    assert_eq!(count("clients"), 4);
    // DeviceClass, template, NodeTopology, then a Node and a ResourceSlice per node.
    assert_eq!(count("fixture_objects"), 3 + 2 * 5);
    assert_eq!(count("pods_created"), 40);
    assert_eq!(count("pods_scheduled"), 40, "every pod scheduled: {f:#}");
    assert_eq!(count("claims_allocated"), 40, "one claim per pod: {f:#}");
    assert_eq!(count("pods_running"), 40, "every pod running: {f:#}");
    // Rates are counts over the measured times.
    for (rate, amount, seconds) in [
        (
            "fixture_objects_per_second",
            "fixture_objects",
            "fixture_seconds",
        ),
        (
            "pods_created_per_second",
            "pods_created",
            "pod_create_seconds",
        ),
        (
            "scheduled_pods_per_second",
            "pods_scheduled",
            "scheduling_seconds",
        ),
        ("running_pods_per_second", "pods_running", "running_seconds"),
    ] {
        let expected = count(amount) as f64 / positive(seconds);
        let got = positive(rate);
        assert!(
            (got - expected).abs() <= 1e-6 * expected,
            "{rate} = {got}, expected {expected}"
        );
    }
    let all =
        (3 + 2 * 5 + 40) as f64 / (positive("fixture_seconds") + positive("pod_create_seconds"));
    assert!((positive("objects_per_second") - all).abs() <= 1e-6 * all);
    positive("server_start_seconds");
    positive("server_peak_rss_mib");
    assert!(f["server_cpu_seconds"].as_f64().is_some(), "{f:#}");
}

const SMALL: [&str; 6] = ["--pods", "40", "--nodes", "5", "--clients", "4"];

#[test]
fn a_small_load_on_the_embedded_store_schedules_every_pod() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut args = SMALL.to_vec();
    args.extend(["--store", "embedded"]);
    let output = bench(tmp.path(), &args, &[]);
    check_small_run(&output, "embedded");
    assert_cleaned_up(tmp.path());
}

#[test]
fn a_small_load_on_a_private_etcd_schedules_every_pod() {
    let binary = etcd::binary();
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut args = SMALL.to_vec();
    args.extend(["--store", "etcd"]);
    let binary = binary.display().to_string();
    let output = bench(tmp.path(), &args, &[("ALLOT_ETCD", &binary)]);
    check_small_run(&output, "etcd");
    let report: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(
        report["stores"][0]["figures"]["etcd_cpu_seconds"]
            .as_f64()
            .is_some(),
        "the private etcd's CPU time is reported: {report:#}"
    );
    assert_cleaned_up(tmp.path());
}

#[test]
fn without_etcd_the_etcd_row_is_skipped() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut args = SMALL.to_vec();
    args.extend(["--store", "etcd"]);
    let output = bench(
        tmp.path(),
        &args,
        &[("ALLOT_ETCD", "/nonexistent/etcd-for-allot-bench")],
    );
    assert!(output.status.success(), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let report = &document["stores"][0];
    assert_eq!(report["store"], "etcd");
    let status = report["status"].as_str().expect("status");
    assert!(
        status.starts_with("skipped: ") && status.contains("/nonexistent/etcd-for-allot-bench"),
        "{status}"
    );
    assert!(report.get("figures").is_none(), "{document:#}");
    assert_cleaned_up(tmp.path());
}

#[test]
fn too_few_devices_for_the_pods_is_refused() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = bench(
        tmp.path(),
        &["--pods", "40", "--nodes", "2", "--devices-per-node", "8"],
        &[],
    );
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("--nodes 2 x --devices-per-node 8 = 16 GPUs, fewer than --pods 40"),
        "{stderr}"
    );
    assert!(output.stdout.is_empty());
}

/// One SIGTERM to a running benchmark, `delay` after `ready` holds: exit 130, nothing left.
fn sigterm_once(ready: &dyn Fn(&Path) -> bool, delay: Duration) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args([
            "bench", "serve", "--pods", "5000", "--nodes", "1000", "--store", "embedded",
        ])
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("allot bench starts");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready(tmp.path()) {
        assert!(
            Instant::now() < deadline,
            "the benchmark did not get ready in time"
        );
        assert!(
            child.try_wait().expect("try_wait").is_none(),
            "the benchmark ended early"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    std::thread::sleep(delay);
    let status = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .expect("kill runs");
    assert!(status.success());
    let deadline = Instant::now() + Duration::from_secs(30);
    let exit = loop {
        if let Some(exit) = child.try_wait().expect("try_wait") {
            break exit;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the benchmark did not stop on SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    use std::io::Read;
    let _ = child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    assert_eq!(exit.code(), Some(130), "{exit:?} after {delay:?}: {stderr}");
    assert!(
        stderr.contains("interrupted, stopping the servers"),
        "{stderr}"
    );
    assert!(!stderr.contains("exited with"), "{stderr}");
    assert_cleaned_up(tmp.path());
}

/// Issue 19: SIGTERM raced the main thread, which saw its server killed by the clean-up and
/// exited 1 (in about 1 run of 4). Signalled at several moments: while the server starts, as
/// soon as it runs, and during the load; every run ends in 130 with nothing left.
#[test]
fn sigterm_stops_the_servers_and_removes_their_directories() {
    let serving = |tmp: &Path| {
        processes_mentioning(&tmp.display().to_string())
            .iter()
            .any(|p| p.contains(" serve "))
    };
    let started =
        |tmp: &Path| std::fs::read_dir(tmp).is_ok_and(|mut entries| entries.next().is_some());
    sigterm_once(&started, Duration::ZERO);
    for millis in [0, 50, 200, 500, 1000, 2000] {
        sigterm_once(&serving, Duration::from_millis(millis));
    }
}

#[test]
fn the_time_limit_stops_a_run_and_reports_how_far_it_got() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let output = bench(
        tmp.path(),
        &[
            "--pods",
            "5000",
            "--nodes",
            "1000",
            "--store",
            "embedded",
            "--time-limit-seconds",
            "1",
        ],
        &[],
    );
    assert_eq!(output.status.code(), Some(1), "{output:?}");
    let document: Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let report = &document["stores"][0];
    let status = report["status"].as_str().expect("status");
    assert!(
        status.starts_with("stopped: time limit of 1 s reached at "),
        "{status}"
    );
    let figures = &report["figures"];
    let created = figures["fixture_objects"]
        .as_u64()
        .expect("fixture_objects")
        + figures["pods_created"].as_u64().expect("pods_created");
    assert!(
        created < 3 + 2 * 1000 + 5000,
        "not everything was created within a second: {figures:#}"
    );
    assert!(figures["scheduling_seconds"].is_null(), "{figures:#}");
    assert_cleaned_up(tmp.path());
}
