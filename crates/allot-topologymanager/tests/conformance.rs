//! The Topology Manager merge table: upstream's own merge cases and randomized merges answered
//! by upstream's code, from tests/conformance/kubelet/topology_manager/. One runner for both.

use std::collections::BTreeMap;
use std::path::Path;

use allot_topologymanager::{NumaInfo, Policy, PolicyOptions, ProviderHints, TopologyHint, merge};
use serde::Deserialize;

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet/topology_manager"
);

#[derive(Deserialize)]
struct Case {
    id: String,
    input: Input,
    expected: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Input {
    policy: String,
    options: BTreeMap<String, String>,
    numa_nodes: Vec<usize>,
    #[serde(default)]
    distances: Option<BTreeMap<usize, Vec<u64>>>,
    providers_hints: Vec<Option<ProviderHints>>,
}

#[derive(Deserialize, PartialEq, Debug)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Decision {
    best_hint: TopologyHint,
    admit: bool,
}

/// Runs one case: `Ok(())` when the answer matches, `Err(what differed)` otherwise.
fn check(case: &Case) -> Result<(), String> {
    let outcome = (|| {
        let policy: Policy = case.input.policy.parse()?;
        let options = PolicyOptions::parse(&case.input.options)?;
        let numa = NumaInfo::new(
            &case.input.numa_nodes,
            case.input.distances.as_ref(),
            &options,
        )?;
        let providers: Vec<ProviderHints> = case
            .input
            .providers_hints
            .iter()
            .map(|p| p.clone().unwrap_or_default())
            .collect();
        Ok::<_, allot_topologymanager::Error>(merge(policy, &options, &numa, &providers))
    })();
    if let Some(error) = case.expected.get("error") {
        return match outcome {
            Err(_) => Ok(()),
            Ok(got) => Err(format!("expected error {error}, got {got:?}")),
        };
    }
    let expected: Decision =
        serde_json::from_value(case.expected.clone()).map_err(|e| format!("bad expected: {e}"))?;
    match outcome {
        Err(e) => Err(format!("unexpected error: {e}")),
        Ok((best_hint, admit)) => {
            let got = Decision { best_hint, admit };
            if got == expected {
                Ok(())
            } else {
                Err(format!("expected {expected:?}, got {got:?}"))
            }
        }
    }
}

fn run_folder(folder: &str) -> (usize, Vec<String>) {
    let dir = Path::new(DIR).join(folder);
    let mut paths: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    for path in &paths {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        let case: Case = match serde_json::from_str(&text) {
            Ok(case) => case,
            Err(e) => {
                failures.push(format!("{}: cannot decode: {e}", path.display()));
                continue;
            }
        };
        if let Err(why) = check(&case) {
            failures.push(format!("{}: {why}", case.id));
        }
    }
    (paths.len(), failures)
}

#[test]
fn topology_manager_merge_table() {
    let mut all_failures = Vec::new();
    let mut total = 0;
    for (folder, expected_count) in [("upstream", 106), ("random", 200)] {
        let (count, failures) = run_folder(folder);
        assert_eq!(count, expected_count, "case count in {folder}");
        println!("{folder}: {}/{count} pass", count - failures.len());
        total += count;
        all_failures.extend(failures);
    }
    println!("total: {}/{total} pass", total - all_failures.len());
    assert!(
        all_failures.is_empty(),
        "failing cases:\n{}",
        all_failures.join("\n")
    );
}
