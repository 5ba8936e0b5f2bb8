//! End-to-end tests of `allot node take-cpus` and `allot node discover`, running the binary.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use allot_topology::NodeTopology;
use serde_json::Value;

const BENCH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../bench/kubelet");

fn allot(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .output()
        .expect("run allot")
}

/// `allot node take-cpus --topology T --available A --count N EXTRA...`.
fn take_cpus(topology: &str, available: &str, count: &str, extra: &[&str]) -> Output {
    let mut args = vec![
        "node",
        "take-cpus",
        "--topology",
        topology,
        "--available",
        available,
        "--count",
        count,
    ];
    args.extend_from_slice(extra);
    allot(&args)
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}",
            String::from_utf8_lossy(&out.stdout)
        )
    })
}

#[test]
fn take_cpus_packed_matches_upstream() {
    let topo = format!("{BENCH}/topoDualSocketMultiNumaPerSocketHTLarge.yaml");
    let out = take_cpus(&topo, "2-63,66-127,130-191,194-255", "16", &["-o", "json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json(&out),
        serde_json::json!({"cpus": "2-9,130-137", "error": null})
    );
}

#[test]
fn take_cpus_distributed_matches_upstream() {
    let topo = format!("{BENCH}/topoDualSocketMultiNumaPerSocketHTLarge.yaml");
    let out = take_cpus(
        &topo,
        "2-63,66-127,130-191,194-255",
        "48",
        &[
            "--algorithm",
            "distributed",
            "--group-size",
            "2",
            "-o",
            "json",
        ],
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(json(&out)["cpus"], "16-27,32-43,144-155,160-171");
}

#[test]
fn take_cpus_options_change_the_pick() {
    let topo = format!("{BENCH}/topoDualSocketHT.yaml");
    let packed = take_cpus(&topo, "1-11", "4", &["-o", "json"]);
    let spread = take_cpus(&topo, "1-11", "4", &["--sort", "spread", "-o", "json"]);
    assert_eq!(json(&packed)["cpus"], "2,4,8,10");
    assert_ne!(json(&spread)["cpus"], json(&packed)["cpus"]);
}

#[test]
fn take_cpus_reports_upstream_error_with_exit_1() {
    let topo = format!("{BENCH}/topoDualSocketHT.yaml");
    let out = take_cpus(&topo, "1-3", "4", &["-o", "json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json(&out),
        serde_json::json!({"cpus": "", "error": "not enough cpus available to satisfy request: requested=4, available=3"})
    );
}

#[test]
fn take_cpus_table_output_lists_cpus() {
    let topo = format!("{BENCH}/topoDualSocketHT.yaml");
    let out = take_cpus(&topo, "1-11", "2", &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.starts_with("picked 2 CPUs: "), "{text}");
    assert!(text.contains("SOCKET"), "{text}");
}

#[test]
fn take_cpus_bad_input_exits_2() {
    let out = allot(&[
        "node",
        "take-cpus",
        "--topology",
        "/nonexistent.yaml",
        "--count",
        "1",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let topo = format!("{BENCH}/topoDualSocketHT.yaml");
    let out = take_cpus(&topo, "3-1", "1", &[]);
    assert_eq!(out.status.code(), Some(2));
}

fn write(path: &Path, text: &str) {
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, text).expect("write");
}

#[test]
fn discover_reads_a_sysfs_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(&root.join("devices/system/cpu/online"), "0-3\n");
    for cpu in 0..4u32 {
        let base = root.join(format!("devices/system/cpu/cpu{cpu}"));
        write(&base.join("topology/core_id"), &format!("{}\n", cpu % 2));
        write(&base.join("topology/physical_package_id"), "0\n");
        write(&base.join("cache/index3/level"), "3\n");
        write(&base.join("cache/index3/id"), "0\n");
    }
    let node = root.join("devices/system/node/node0");
    write(&node.join("cpulist"), "0-3\n");
    write(&node.join("meminfo"), "Node 0 MemTotal:       4194304 kB\n");
    write(&node.join("distance"), "10\n");
    write(
        &node.join("hugepages/hugepages-2048kB/nr_hugepages"),
        "16\n",
    );

    let root_arg = root.to_str().expect("utf-8 path");
    let out = allot(&[
        "node",
        "discover",
        "--sysfs-root",
        root_arg,
        "--name",
        "fake",
        "-o",
        "json",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc = json(&out);
    assert_eq!(doc["metadata"]["name"], "fake");
    assert_eq!(doc["cpus"].as_array().map(Vec::len), Some(4));
    assert_eq!(doc["cpus"][3]["core"], 1);
    assert_eq!(doc["numaNodes"][0]["memory"], "4Gi");
    assert_eq!(doc["numaNodes"][0]["hugepages"]["hugepages-2Mi"], "32Mi");

    let out = allot(&["node", "discover", "--sysfs-root", root_arg]);
    assert_eq!(out.status.code(), Some(0));
    let topo = NodeTopology::from_yaml_str(&String::from_utf8_lossy(&out.stdout))
        .expect("YAML output decodes");
    assert_eq!(topo.cpus.len(), 4);

    let out = allot(&["node", "discover", "--sysfs-root", "/nonexistent-sysfs"]);
    assert_eq!(out.status.code(), Some(2));
}
