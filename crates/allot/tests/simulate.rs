//! `allot simulate` end to end: the binary on scenario folders under `tests/simulate/`, the
//! bundled example and every YAML example of the spec. Every run is checked for the invariants
//! (the binary exits 3 when one breaks, and the tests check the printed List again).

#[path = "support/cli.rs"]
mod cli;

use std::path::Path;
use std::process::Command;

use cli::{allot, find, repo, scenario, simulate_json};
use serde_json::Value;

fn condition<'a>(pod: &'a Value, type_: &str) -> Option<&'a Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

#[test]
fn bundled_example_runs_without_files() {
    let run = allot(&["simulate"]);
    // Exit 0 although ml/too-big stays pending on purpose: pending is part of the answer.
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.starts_with("POD "), "{}", run.stdout);
    // The pod that cannot fit is listed with the allocator's explanation.
    assert!(
        run.stdout.contains("ml/too-big (Pending): Unschedulable"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("cannot allocate all claims"),
        "{}",
        run.stdout
    );
    let example = allot(&["simulate", "--example"]);
    assert_eq!(example.stdout, run.stdout);
}

#[test]
fn bundled_example_places_its_pods() {
    let items = simulate_json(&["--example"]);
    for pod in [
        "inference-0",
        "inference-1",
        "notebook",
        "trainer-0",
        "trainer-1",
        "batch-0",
        "transcoder",
    ] {
        let pod = find(&items, "Pod", pod);
        assert_eq!(pod["status"]["phase"], "Running", "{pod}");
    }
    let too_big = find(&items, "Pod", "too-big");
    let scheduled = condition(too_big, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "Unschedulable");
    // The PodGroup's two pods share one claim, reserved for the group.
    let t0 = find(&items, "Pod", "trainer-0");
    let t1 = find(&items, "Pod", "trainer-1");
    let claim = &t0["status"]["resourceClaimStatuses"][0]["resourceClaimName"];
    assert_eq!(
        claim,
        &t1["status"]["resourceClaimStatuses"][0]["resourceClaimName"]
    );
    // Exclusive CPUs are reported in the allot.dev/resources annotation.
    let inference = find(&items, "Pod", "inference-0");
    let resources = inference["metadata"]["annotations"]["allot.dev/resources"]
        .as_str()
        .expect("annotation");
    assert!(resources.contains("cpuIds"), "{resources}");
    // The extended resource example.com/l4 is served by DRA through the l4.example.com class,
    // and the L4's host memory overhead is recorded for the kubelet and the scheduler.
    let transcoder = find(&items, "Pod", "transcoder");
    let status = &transcoder["status"];
    let special = status["extendedResourceClaimStatus"]["resourceClaimName"]
        .as_str()
        .expect("extendedResourceClaimStatus");
    assert_eq!(
        status["extendedResourceClaimStatus"]["requestMappings"][0]["resourceName"],
        "example.com/l4",
        "{status}"
    );
    let claim = find(&items, "ResourceClaim", special);
    let device = claim["status"]["allocation"]["devices"]["results"][0]["device"]
        .as_str()
        .expect("allocated");
    assert!(device == "gpu-2" || device == "gpu-3", "{claim}");
    assert_eq!(
        status["nodeAllocatableResourceClaimStatuses"],
        serde_json::json!([{
            "resourceClaimName": special,
            "overhead": [{"name": "memory", "perPod": "2Gi"}],
        }]),
        "{status}"
    );
}

#[test]
fn bundled_example_answers_its_pool_status_request() {
    let items = simulate_json(&["--example"]);
    let request = items
        .iter()
        .find(|o| o["kind"] == "ResourcePoolStatusRequest")
        .expect("the example has a pool status request");
    let status = &request["status"];
    assert_eq!(status["poolCount"], 2, "{request}");
    let complete = status["conditions"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["type"] == "Complete"))
        .expect("Complete condition");
    assert_eq!(complete["status"], "True", "{request}");
    let allocated: u64 = status["pools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["allocatedDevices"].as_u64().unwrap_or(0))
        .sum();
    assert!(allocated > 0, "pools report the allocations: {request}");
}

#[test]
fn output_is_byte_for_byte_deterministic() {
    for format in ["json", "yaml", "table"] {
        let a = allot(&["simulate", "-o", format, "--example"]);
        let b = allot(&["simulate", "-o", format, &repo("examples/simulate")]);
        assert_eq!(a.code, 0, "the simulation ran");
        assert_eq!(a.stdout, b.stdout, "{format}");
    }
}

#[test]
fn every_spec_example_simulates() {
    let dir = repo("examples/spec");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("examples/spec")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    assert!(files.len() > 20, "{}", files.len());
    let mut failures = Vec::new();
    for file in &files {
        let path = file.display().to_string();
        let run = allot(&["simulate", "-o", "json", &path]);
        let violations = allot_sim::invariants::check_list(&run.stdout);
        // Exit 1 is an answer (most snippets have pods and no node to run them on).
        if run.code > 1 || !run.stderr.is_empty() || !matches!(&violations, Ok(v) if v.is_empty()) {
            failures.push(format!(
                "{path}: exit {}: {} {violations:?}",
                run.code, run.stderr
            ));
        }
    }
    println!(
        "{} of {} spec examples simulate",
        files.len() - failures.len(),
        files.len()
    );
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn bad_input_names_file_line_and_field_and_writes_nothing() {
    let out = tempfile::tempdir().expect("tempdir");
    let target = out.path().join("metadata");
    let run = allot(&[
        "simulate",
        "--out",
        &target.display().to_string(),
        &scenario("bad-input"),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout, "");
    assert!(!target.exists());
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(
        lines[0].ends_with(
            "cluster.yaml:17: ResourceClaim default/claim: spec.devices.requests[0].exactly.allocationMode: Unsupported value: \"Sometimes\": supported values: \"All\", \"ExactCount\""
        ),
        "{lines:?}"
    );
    assert!(
        lines[1].ends_with("cluster.yaml:23: Timeline broken: events[0].at: Invalid value: \"soon\": must be a duration such as 90s, 10m or 1h"),
        "{lines:?}"
    );
    assert!(
        lines[2].ends_with(
            "cluster.yaml:32: Pod p: events[1].create[0].spec.containers[0].colour: unknown field"
        ),
        "{lines:?}"
    );
}

#[test]
fn binding_conditions_wait_for_the_timeline() {
    let items = simulate_json(&[&scenario("binding-conditions")]);
    let pod = find(&items, "Pod", "worker");
    assert_eq!(pod["spec"]["nodeName"], "node-1");
    assert_eq!(pod["status"]["phase"], "Running");
    let claim = find(&items, "ResourceClaim", "gpu");
    let devices = &claim["status"]["devices"];
    let prepared = devices[0]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "dra.example.com/is-prepared")
        .expect("the timeline's condition");
    assert_eq!(prepared["lastTransitionTime"], "2026-01-01T00:00:30Z");
    // Bound only after the condition came true at 30s.
    let scheduled = condition(pod, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "True");
    assert_eq!(scheduled["lastTransitionTime"], "2026-01-01T00:00:30Z");
}

#[test]
fn timeline_deletes_creates_and_marks_devices_unhealthy() {
    let items = simulate_json(&[&scenario("timeline-delete")]);
    assert!(
        !items
            .iter()
            .any(|i| i["kind"] == "Pod" && i["metadata"]["name"] == "first")
    );
    let second = find(&items, "Pod", "second");
    assert_eq!(second["status"]["phase"], "Running");
    let health =
        &second["status"]["containerStatuses"][0]["allocatedResourcesStatus"][0]["resources"][0];
    assert_eq!(health["resourceID"], "gpu.example.com/node-1/gpu-0");
    assert_eq!(health["health"], "Unhealthy");
    let third = find(&items, "Pod", "third");
    assert_eq!(
        third["metadata"]["creationTimestamp"],
        "2026-01-01T00:05:00Z"
    );
    assert_eq!(
        condition(third, "PodScheduled").expect("condition")["status"],
        "False"
    );
    // The first pod's generated claim went with it.
    let claims: Vec<&str> = items
        .iter()
        .filter(|i| i["kind"] == "ResourceClaim")
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert!(
        claims.iter().all(|c| !c.starts_with("first-")),
        "{claims:?}"
    );
}

#[test]
fn kubelet_rejections_fail_the_pod_with_the_kubelet_reason() {
    let items = simulate_json(&[&scenario("smt-rejected")]);
    let odd = find(&items, "Pod", "odd");
    assert_eq!(odd["status"]["phase"], "Failed");
    assert_eq!(odd["status"]["reason"], "SMTAlignmentError");
    let even = find(&items, "Pod", "even");
    assert_eq!(even["status"]["phase"], "Running");
    let table = allot(&["simulate", &scenario("smt-rejected")]);
    assert!(
        table
            .stdout
            .contains("default/odd (Failed): SMTAlignmentError"),
        "{}",
        table.stdout
    );
}

/// A selector's CEL runtime error is the DynamicResources filter's error: the pod says so
/// (reason `SchedulerError`, upstream's message shape) instead of a bare "cannot allocate".
#[test]
fn a_selector_error_is_reported_as_a_scheduler_error() {
    let items = simulate_json(&[&scenario("selector-error")]);
    let guarded = find(&items, "Pod", "guarded");
    assert_eq!(guarded["status"]["phase"], "Running");
    let unguarded = find(&items, "Pod", "unguarded");
    assert_eq!(unguarded["status"]["phase"], "Pending");
    let scheduled = condition(unguarded, "PodScheduled").expect("condition");
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "SchedulerError");
    assert_eq!(
        scheduled["message"],
        "running \"DynamicResources\" filter plugin: claim default/unguarded: selector #0: \
         CEL runtime error: no such key: profile"
    );
    let table = allot(&["simulate", &scenario("selector-error")]);
    assert!(
        table
            .stdout
            .contains("default/unguarded (Pending): SchedulerError: running \"DynamicResources\""),
        "{}",
        table.stdout
    );
}

#[test]
fn pre_scheduled_pods_skip_the_scheduler() {
    let items = simulate_json(&[&scenario("pre-scheduled")]);
    let pinned = find(&items, "Pod", "pinned");
    assert_eq!(pinned["status"]["phase"], "Running");
    let scheduled = find(&items, "Pod", "scheduled");
    let message = condition(scheduled, "PodScheduled").expect("condition")["message"]
        .as_str()
        .expect("message")
        .to_string();
    assert!(message.contains("untolerated taint"), "{message}");
}

#[test]
fn what_if_counts_copies_per_node() {
    let run = allot(&[
        "simulate",
        "--what-if",
        &scenario("what-if-pod.yaml"),
        &scenario("what-if"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines[0], "5 more copies of extra fit:", "{}", run.stdout);
    assert_eq!(
        lines[1..3],
        ["  node-a: 1", "  node-b: 4"],
        "{}",
        run.stdout
    );
    assert!(lines[3].starts_with("the next copy does not fit: Unschedulable"));
}

#[test]
fn out_writes_the_metadata_files() {
    let out = tempfile::tempdir().expect("tempdir");
    let run = allot(&[
        "simulate",
        "--out",
        &out.path().display().to_string(),
        &scenario("timeline-delete"),
    ]);
    // A pod of the scenario ends pending: exit 0, the table printed and the files written.
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("\nNot running:\n"), "{}", run.stdout);
    let mut found = Vec::new();
    let mut stack = vec![out.path().to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("dir").filter_map(Result::ok) {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                found.push(path.strip_prefix(out.path()).expect("inside").to_path_buf());
            }
        }
    }
    found.sort();
    assert!(
        found
            .iter()
            .any(|p| p.starts_with(Path::new("node-1/default/second"))
                && p.to_string_lossy()
                    .ends_with("gpu.example.com-metadata.json")),
        "{found:?}"
    );
    assert!(
        !found.iter().any(|p| p.to_string_lossy().ends_with(".tmp")),
        "{found:?}"
    );
}

#[test]
fn generated_clusters_simulate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().display().to_string();
    let run = allot(&[
        "gen",
        "--nodes",
        "4",
        "--devices-per-node",
        "2",
        "--pods",
        "10",
        "--output-dir",
        &path,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let items = simulate_json(&[&path]);
    let pods: Vec<&Value> = items.iter().filter(|i| i["kind"] == "Pod").collect();
    assert_eq!(pods.len(), 10);
    let running = pods
        .iter()
        .filter(|p| p["status"]["phase"] == "Running")
        .count();
    assert_eq!(running, 10);
    let allocated = items
        .iter()
        .filter(|i| i["kind"] == "ResourceClaim" && i["status"]["allocation"].is_object())
        .count();
    assert_eq!(allocated, 8);
}

#[test]
fn a_reader_that_stops_early_ends_the_streamed_output_quietly() {
    use std::io::Read;
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().display().to_string();
    let args = [
        "gen",
        "--nodes",
        "30",
        "--pods",
        "200",
        "--output-dir",
        &path,
    ];
    assert_eq!(allot(&args).code, 0);
    for format in ["json", "yaml"] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
            .args(["simulate", "-o", format, &path])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("allot runs");
        // Far less than the output (several hundred kilobytes, more than a pipe holds).
        let mut start = [0u8; 64];
        let mut stdout = child.stdout.take().expect("stdout");
        stdout
            .read_exact(&mut start)
            .expect("the start of the list");
        drop(stdout);
        let output = child.wait_with_output().expect("allot ends");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "{format}: {stderr}");
        assert!(stderr.is_empty(), "{format}: {stderr}");
        let start = String::from_utf8_lossy(&start);
        assert!(start.contains("apiVersion"), "{format}: {start}");
    }
}

#[test]
fn device_taint_rules_evict_after_the_toleration_expires() {
    let items = simulate_json(&[&scenario("taint-eviction")]);
    let victim = find(&items, "Pod", "victim");
    assert_eq!(victim["status"]["phase"], "Failed");
    let disruption = condition(victim, "DisruptionTarget").expect("DisruptionTarget");
    assert_eq!(disruption["reason"], "DeletionByDeviceTaintManager");
    // The rule arrived at 1m and the toleration lasts 60s.
    assert_eq!(disruption["lastTransitionTime"], "2026-01-01T00:02:00Z");
    let rule = find(&items, "DeviceTaintRule", "broken-node-1");
    let eviction = &rule["status"]["conditions"][0];
    assert_eq!(eviction["type"], "EvictionInProgress");
    assert_eq!(eviction["status"], "False");
}

/// Issue 16's example: required pod anti-affinity on the hostname keeps the third web pod
/// Pending with kube-scheduler's message (and allot's explanation naming the term and the pods
/// in the way), where allot used to place it beside another web pod.
#[test]
fn anti_affinity_leaves_the_third_web_pod_pending() {
    let items = simulate_json(&[&scenario("anti-affinity-spread")]);
    let node = |name: &str| find(&items, "Pod", name)["spec"]["nodeName"].clone();
    assert_eq!(node("web-0"), "n1");
    assert_eq!(node("web-1"), "n2");
    let web2 = find(&items, "Pod", "web-2");
    assert_eq!(web2["status"]["phase"], "Pending");
    assert!(web2["spec"]["nodeName"].is_null(), "{web2}");
    let scheduled = condition(web2, "PodScheduled").expect("PodScheduled");
    assert_eq!(scheduled["status"], "False");
    assert_eq!(scheduled["reason"], "Unschedulable");
    let message = scheduled["message"].as_str().expect("message");
    assert_eq!(
        message.lines().next(),
        Some(
            "0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules. \
             preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
        ),
        "{message}"
    );
    assert!(
        message.contains(
            "n1: required anti-affinity term 0 (topologyKey kubernetes.io/hostname, selector app=web) matches default/web-0 on n1 in kubernetes.io/hostname=n1"
        ),
        "{message}"
    );
    assert!(message.contains("default/web-1 on n2"), "{message}");
    let table = allot(&["simulate", &scenario("anti-affinity-spread")]);
    assert!(
        table.stdout.contains(
            "default/web-2 (Pending): Unschedulable: 0/2 nodes are available: 2 node(s) didn't match pod anti-affinity rules."
        ),
        "{}",
        table.stdout
    );
}
