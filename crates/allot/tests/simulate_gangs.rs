//! `allot simulate` end to end for time and workloads: `--horizon`, and `--what-if` with
//! workloads (Deployment, StatefulSet, Job, a PodGroup gang) and `--max`.

#[path = "support/cli.rs"]
mod cli;

use cli::{allot, repo, scenario};
use serde_json::Value;

fn items(stdout: &str) -> Vec<Value> {
    let list: Value = serde_json::from_str(stdout).expect("JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

fn job_pod_phase(args: &[&str]) -> String {
    let dir = scenario("horizon");
    let mut all = vec!["simulate", "-o", "json"];
    all.extend_from_slice(args);
    all.push(&dir);
    let run = allot(&all);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let pods: Vec<Value> = items(&run.stdout)
        .into_iter()
        .filter(|i| i["kind"] == "Pod")
        .collect();
    assert_eq!(pods.len(), 1, "{pods:?}");
    pods[0]["status"]["phase"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The run stops at the horizon (one hour after the last Timeline event): a three-hour pod is
/// still running; `--horizon 4h` lets it finish.
#[test]
fn horizon_decides_when_the_run_stops() {
    assert_eq!(job_pod_phase(&[]), "Running");
    assert_eq!(job_pod_phase(&["--horizon", "2h"]), "Running");
    assert_eq!(job_pod_phase(&["--horizon", "4h"]), "Succeeded");
}

#[test]
fn a_bad_horizon_is_refused() {
    let run = allot(&["simulate", "--horizon", "soon", &scenario("horizon")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(
        run.stderr.contains("\"soon\" is not a duration"),
        "{}",
        run.stderr
    );
    let _ = repo("examples");
}
