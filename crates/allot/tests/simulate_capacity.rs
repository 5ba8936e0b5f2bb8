//! `allot simulate`'s capacity questions end to end: `--add-nodes`, `--remove-nodes`,
//! `--fragmentation`, `--what-if` workloads, and the `--report` page loaded in a real headless
//! Chromium (`ALLOT_CHROMIUM`, or Debian's `/usr/bin/chromium`; `cargo xtask test` provisions
//! it): no script error, every number the page marks equal to `-o json`'s, and a screenshot
//! compared with a golden one for gross regressions (size and a coarse colour histogram;
//! `ALLOT_BLESS=1` rewrites it).

#[path = "support/browser.rs"]
mod browser;
#[path = "support/cli.rs"]
mod cli;

use browser::{assert_rendered_cleanly, browse, compare_screenshot, marked_numbers};
use cli::{allot, repo};
use serde_json::Value;

fn example(fleet: &str, file: &str) -> String {
    repo(&format!("examples/capacity/{fleet}/{file}"))
}

fn json(args: &[&str]) -> Value {
    let run = allot(args);
    assert!(run.code == 0 || run.code == 1, "{args:?}: {}", run.stderr);
    serde_json::from_str(&run.stdout).unwrap_or_else(|e| panic!("{e}: {}", run.stdout))
}

#[test]
fn scale_up_finds_the_nodes_for_each_example_fleet() {
    // (fleet, shape, nodes to add): MIG (two 3g per GPU), NIC (two 4G per 10G), CPU-pinned
    // (one 5-CPU pod per NUMA node).
    for (fleet, shape, count) in [
        ("mig-fleet", "mig", 2),
        ("nic-fleet", "nic", 2),
        ("cpu-pinned-fleet", "pinned", 2),
    ] {
        let doc = json(&[
            "simulate",
            "-o",
            "json",
            &example(fleet, "cluster.yaml"),
            "--add-nodes",
            &example(fleet, "shape.yaml"),
        ]);
        assert_eq!(doc["kind"], "CapacityReport");
        let answer = &doc["scaleUp"];
        assert_eq!(answer["found"], true, "{fleet}: {answer}");
        assert_eq!(answer["shapes"][0], shape);
        assert_eq!(answer["counts"][0], count, "{fleet}: {answer}");
        // The last simulation with one node fewer did not fit; the answer's did.
        let probes = answer["probes"].as_array().expect("probes");
        let fewer = probes
            .iter()
            .find(|p| p["counts"][0] == count - 1)
            .expect("one fewer was simulated");
        assert!(
            fewer["unfit"].as_u64().unwrap_or(0) > 0,
            "{fleet}: {answer}"
        );
        let nodes = answer["nodes"].as_array().expect("nodes");
        assert_eq!(nodes.len(), count as usize);
        for placement in answer["placements"].as_array().expect("placements") {
            assert!(nodes.contains(&placement["node"]), "{placement}");
        }
    }
}

#[test]
fn a_workload_what_if_and_scale_up_for_it() {
    let fleet = "nic-fleet";
    let doc = json(&[
        "simulate",
        "-o",
        "json",
        &example(fleet, "cluster.yaml"),
        "--what-if",
        &example(fleet, "workload.yaml"),
    ]);
    // The NICs are full: the three 3G pods fit nowhere.
    assert_eq!(doc["whatIf"]["verdict"], "not", "{}", doc["whatIf"]);
    assert_eq!(doc["whatIf"]["pods"], 3);
    assert_eq!(
        doc["whatIf"]["reasons"][0]["pods"].as_array().map(Vec::len),
        Some(3)
    );
    let run = allot(&[
        "simulate",
        &example(fleet, "cluster.yaml"),
        "--what-if",
        &example(fleet, "workload.yaml"),
    ]);
    assert_eq!(run.code, 1, "not one pod fits: exit 1\n{}", run.stderr);
    assert!(
        run.stdout
            .contains("What-if: the workload does not fit (0 of 3 pods placed)"),
        "{}",
        run.stdout
    );
    // With nodes to add: the pending streams and the workload.
    let doc = json(&[
        "simulate",
        "-o",
        "json",
        &example(fleet, "cluster.yaml"),
        "--what-if",
        &example(fleet, "workload.yaml"),
        "--add-nodes",
        &example(fleet, "shape.yaml"),
    ]);
    let answer = &doc["scaleUp"];
    assert_eq!(answer["found"], true, "{answer}");
    // 4 streams of 4G and 3 pods of 3G waiting: 25G, more than two NICs of 10G.
    assert!(answer["counts"][0].as_u64() >= Some(3), "{answer}");
    assert_eq!(
        answer["unfitBefore"].as_array().map(Vec::len),
        Some(7),
        "{answer}"
    );
}

#[test]
fn consolidation_and_fragmentation_in_the_table() {
    let run = allot(&[
        "simulate",
        &example("mig-fleet", "cluster.yaml"),
        "--remove-nodes",
        "--fragmentation",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for expected in [
        "Consolidation:\n  0 nodes of 2 tried can be removed together",
        "mig-1 stays: default/train-",
        "Fragmentation:\n  common shapes:\n    default/mig-3g: 1×mig.example.com[selectors] (8 claims)",
        "mig.example.com  2      20       4          14    2        0.29        0.29      100%   default/mig-3g=0",
    ] {
        assert!(run.stdout.contains(expected), "{expected}\n{}", run.stdout);
    }
}

#[test]
fn a_bad_shape_file_is_an_input_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = std::fs::read_to_string(example("nic-fleet", "shape.yaml")).expect("shape");
    let bad = dir.path().join("shape.yaml");
    std::fs::write(
        &bad,
        text.replace("spec: {cost: 1}", "spec: {cost: 1, size: 3}"),
    )
    .expect("write");
    let run = allot(&[
        "simulate",
        &example("nic-fleet", "cluster.yaml"),
        "--add-nodes",
        &bad.display().to_string(),
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("shape.yaml:4") && run.stderr.contains("size"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty(), "{}", run.stdout);
}

/// The value a `data-key` names in the capacity document (arrays count their items).
fn value_of(doc: &Value, key: &str) -> f64 {
    let mut at = doc;
    for part in key.split('/') {
        at = match at {
            Value::Array(items) if part.parse::<usize>().is_ok() => {
                &items[part.parse::<usize>().expect("index")]
            }
            Value::Array(items) => {
                // `classes/CLASS`: the item whose `class` is CLASS.
                items
                    .iter()
                    .find(|i| i["class"] == part)
                    .unwrap_or_else(|| panic!("{key}: no {part}"))
            }
            other => &other[part],
        };
    }
    match at {
        Value::Array(items) => items.len() as f64,
        Value::Number(n) => n.as_f64().expect("number"),
        other => panic!("{key}: {other}"),
    }
}

/// The report of the MIG fleet with every answer, loaded in the browser.
#[test]
fn the_report_renders_in_a_browser_with_the_json_numbers() {
    let dir = tempfile::tempdir().expect("tempdir");
    let page = dir.path().join("report.html");
    let args = [
        "simulate",
        "-o",
        "json",
        &example("mig-fleet", "cluster.yaml"),
        "--add-nodes",
        &example("mig-fleet", "shape.yaml"),
        "--remove-nodes",
        "--fragmentation",
        "--report",
        page.to_str().expect("utf-8"),
    ];
    let doc = json(&args);
    let html = std::fs::read_to_string(&page).expect("report written");
    assert!(
        !html.contains("<script src") && !html.contains("<link"),
        "self-contained"
    );
    let url = format!("file://{}", page.display());
    let (dom, stderr) = browse(&url, &dir.path().join("profile"), 5000, &["--dump-dom"]);
    assert_rendered_cleanly(&dom, &stderr);
    let numbers = marked_numbers(&dom);
    assert!(numbers.len() >= 15, "{numbers:?}");
    for key in [
        "summary/pods",
        "summary/pending",
        "scaleUp/counts/0",
        "consolidation/removable",
        "fragmentation/classes/mig.example.com/free",
    ] {
        assert!(numbers.iter().any(|(k, _)| k == key), "{key} shown");
    }
    for (key, shown) in &numbers {
        let shown: f64 = shown.parse().unwrap_or_else(|_| panic!("{key}: {shown}"));
        let expected = value_of(&doc, key);
        assert!(
            (shown - expected).abs() < 0.006,
            "{key}: page {shown}, json {expected}"
        );
    }

    // A node's drill-down (opened by the address's `#node=`): node show's drawing of it.
    let (dom, stderr) = browse(
        &format!("{url}#node=mig-1"),
        &dir.path().join("profile1"),
        5000,
        &["--dump-dom"],
    );
    assert_rendered_cleanly(&dom, &stderr);
    assert!(dom.contains("<svg class=\"machine\""), "{dom}");
    assert!(dom.contains("class=\"device\""), "{dom}");
    assert!(dom.contains("class=\"cpu\""), "{dom}");

    compare_screenshot(
        &url,
        &dir.path().join("profile2"),
        &dir.path().join("shot.png"),
        (1280, 1600),
        "capacity-report",
        0.03,
    );
}
