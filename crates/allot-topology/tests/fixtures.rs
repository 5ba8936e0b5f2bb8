//! Every `kind: NodeTopology` document under tests/conformance decodes strictly, and the CPU
//! fixtures give upstream's counts.

use std::fs;
use std::path::{Path, PathBuf};

use allot_topology::{CpuSet, CpuTopology, NodeTopology};

const CONFORMANCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance");

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            yaml_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "yaml" || e == "yml") {
            out.push(path);
        }
    }
}

/// Splits a multi-document YAML stream on `---` lines.
fn documents(text: &str) -> Vec<String> {
    let mut docs = vec![String::new()];
    for line in text.lines() {
        if line.trim_end() == "---" {
            docs.push(String::new());
        } else if let Some(last) = docs.last_mut() {
            last.push_str(line);
            last.push('\n');
        }
    }
    docs
}

#[test]
fn every_node_topology_document_decodes() {
    let mut files = Vec::new();
    yaml_files(Path::new(CONFORMANCE), &mut files);
    files.sort();
    let mut seen = 0;
    let mut failures = Vec::new();
    for file in &files {
        let Ok(text) = fs::read_to_string(file) else {
            continue;
        };
        for doc in documents(&text) {
            if !doc.lines().any(|l| l.trim_end() == "kind: NodeTopology") {
                continue;
            }
            seen += 1;
            let outcome =
                NodeTopology::from_yaml_str(&doc).and_then(|n| CpuTopology::new(&n).map(|_| n));
            match outcome {
                Ok(node) => {
                    // Round trip through YAML keeps the document.
                    let back = node
                        .to_yaml_string()
                        .and_then(|y| NodeTopology::from_yaml_str(&y));
                    if back.as_ref() != Ok(&node) {
                        failures.push(format!("{}: round trip gave {back:?}", file.display()));
                    }
                }
                Err(e) => failures.push(format!("{}: {e}", file.display())),
            }
        }
    }
    println!(
        "NodeTopology documents: {}/{seen} decode",
        seen - failures.len()
    );
    assert!(
        seen >= 135,
        "expected at least 135 NodeTopology documents, found {seen}"
    );
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn fixture(name: &str) -> CpuTopology {
    let path = format!("{CONFORMANCE}/kubelet/topologies/{name}.yaml");
    let text = fs::read_to_string(&path).expect("fixture");
    CpuTopology::new(&NodeTopology::from_yaml_str(&text).expect("decodes")).expect("valid")
}

#[test]
fn fixture_queries_match_upstream_definitions() {
    let t = fixture("topoDualSocketMultiNumaPerSocketHT");
    let c = t.counts();
    assert_eq!(
        (c.num_cpus, c.num_cores, c.num_sockets, c.num_numa_nodes),
        (80, 40, 2, 4)
    );
    assert_eq!(t.cpus_per_core(), 2);
    assert_eq!(t.numa_nodes_in_sockets(&[0]).to_string(), "0-1");
    assert_eq!(t.sockets_in_numa_nodes(&[2, 3]).to_string(), "1");
    assert_eq!(t.cpus_in_numa_nodes(&[0]).to_string(), "0-9,40-49");
    assert!(t.are_numa_nodes_in_same_socket(&[0, 1]));
    assert!(!t.are_numa_nodes_in_same_socket(&[1, 2]));

    let hybrid = fixture("topoSingleSocketSingleNumaPerSocketPCoreHTECoreST");
    // P-cores have two threads, E-cores one.
    assert_eq!(hybrid.cpus_in_cores(&[0]).to_string(), "0-1");
    assert_eq!(hybrid.cpus_in_cores(&[32]).to_string(), "16");

    let uncore = fixture("topoUncoreSingleSocketNoSMT");
    assert!(uncore.uncore_caches().len() > 1);
    let first = uncore.cpus_in_uncore_caches(&[0]);
    assert_eq!(uncore.uncore_caches_of(&first), CpuSet::from_ids([0]));
}

#[test]
fn rejects_unknown_fields_and_wrong_kind() {
    let good =
        "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata: {name: x}\ncpus: []\n";
    assert!(NodeTopology::from_yaml_str(good).is_ok());
    assert!(NodeTopology::from_yaml_str(&format!("{good}bogus: 1\n")).is_err());
    assert!(NodeTopology::from_yaml_str(&good.replace("NodeTopology", "Node")).is_err());
    let dup = "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n- {id: 0, core: 0, socket: 0, numa: 0}\n";
    assert!(NodeTopology::from_yaml_str(dup).is_err());
}
