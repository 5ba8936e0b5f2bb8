//! `allot simulate`'s capacity questions end to end: `--add-nodes`, `--remove-nodes`,
//! `--fragmentation`, `--what-if` workloads, and the `--report` page loaded in a real headless
//! Chromium (`ALLOT_CHROMIUM`, or Debian's `/usr/bin/chromium`; `cargo xtask test` provisions
//! it): no script error, every number the page marks equal to `-o json`'s, and a screenshot
//! compared with a golden one for gross regressions (size and a coarse colour histogram;
//! `ALLOT_BLESS=1` rewrites it).

#[path = "support/cli.rs"]
mod cli;

use std::path::{Path, PathBuf};
use std::process::Command;

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

/// The browser: `ALLOT_CHROMIUM`, else Debian's. A missing browser fails the test (it is
/// provisioned by `cargo xtask test`).
fn chromium() -> PathBuf {
    let path = std::env::var_os("ALLOT_CHROMIUM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo xtask test`, which provisions Chromium, or set ALLOT_CHROMIUM",
        path.display()
    );
    path
}

/// Runs headless Chromium on `page` with `args`; returns (stdout, stderr).
fn browse(page: &Path, profile: &Path, args: &[&str]) -> (String, String) {
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=5000",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .args(args)
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(output.status.success(), "chromium: {output:?}");
    (
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The `data-key="K">V<` pairs of a page.
fn marked_numbers(dom: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut rest = dom;
    while let Some(at) = rest.find("data-key=\"") {
        rest = &rest[at + 10..];
        let Some(end) = rest.find('"') else { break };
        let key = rest[..end].to_string();
        let Some(open) = rest.find('>') else { break };
        let Some(close) = rest[open..].find('<') else {
            break;
        };
        out.push((key, rest[open + 1..open + close].trim().to_string()));
        rest = &rest[open + close..];
    }
    out
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

/// Fractions of the pixels in 64 colour bins (4 levels per channel), and the size.
fn histogram(png_path: &Path) -> (u32, u32, Vec<f64>) {
    let decoder = png::Decoder::new(std::fs::File::open(png_path).expect("screenshot"));
    let mut reader = decoder.read_info().expect("png");
    let mut buffer = vec![0; reader.output_buffer_size()];
    let info = reader.next_frame(&mut buffer).expect("frame");
    let channels = info.color_type.samples();
    let mut bins = vec![0u64; 64];
    let pixels = &buffer[..info.buffer_size()];
    for pixel in pixels.chunks_exact(channels) {
        let bin =
            (pixel[0] as usize / 64) * 16 + (pixel[1] as usize / 64) * 4 + pixel[2] as usize / 64;
        bins[bin] += 1;
    }
    let total = (info.width as u64 * info.height as u64).max(1) as f64;
    (
        info.width,
        info.height,
        bins.iter().map(|b| *b as f64 / total).collect(),
    )
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
    let (dom, stderr) = browse(&page, &dir.path().join("profile"), &["--dump-dom"]);
    assert!(dom.contains("data-ready=\"1\""), "the script ran: {stderr}");
    assert!(
        dom.contains("data-errors=\"0\""),
        "no script error: {stderr}"
    );
    for line in stderr.lines() {
        assert!(
            !(line.contains("CONSOLE") && (line.contains("Uncaught") || line.contains("rror"))),
            "console error: {line}"
        );
    }
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

    let shot = dir.path().join("shot.png");
    browse(
        &page,
        &dir.path().join("profile2"),
        &[
            "--window-size=1280,1600",
            &format!("--screenshot={}", shot.display()),
        ],
    );
    let (width, height, bins) = histogram(&shot);
    assert_eq!((width, height), (1280, 1600));
    let golden =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/capacity-report.histogram.json");
    if std::env::var_os("ALLOT_BLESS").is_some_and(|v| !v.is_empty() && v != "0") {
        let text = serde_json::to_string_pretty(&serde_json::json!({
            "width": width, "height": height,
            "bins": bins.iter().map(|b| (b * 10_000.0).round() / 10_000.0).collect::<Vec<_>>(),
        }))
        .expect("json");
        std::fs::write(&golden, text + "\n").expect("bless");
        return;
    }
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(&golden).expect("golden histogram"))
            .expect("json");
    let expected: Vec<f64> = expected["bins"]
        .as_array()
        .expect("bins")
        .iter()
        .map(|b| b.as_f64().expect("number"))
        .collect();
    // Total variation distance: how much of the picture changed colour class.
    let distance: f64 = bins
        .iter()
        .zip(&expected)
        .map(|(a, b)| (a - b).abs())
        .sum::<f64>()
        / 2.0;
    assert!(
        distance < 0.03,
        "the screenshot's colours moved by {distance:.3} (ALLOT_BLESS=1 after a deliberate change)"
    );
    // Not a blank page: the dark header and the blue of bars and charts are there.
    let dark: f64 = bins[0] + bins[1] + bins[4] + bins[5];
    assert!(dark > 0.01, "dark header: {dark}");
}
