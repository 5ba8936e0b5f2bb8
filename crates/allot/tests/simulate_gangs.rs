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

fn cluster() -> String {
    repo("examples/workloads/gang/00-cluster.yaml")
}

fn what_if_file(name: &str) -> String {
    format!("{}/{name}", scenario("what-if-workloads"))
}

/// `simulate CLUSTER --what-if FILE -o json [extra]`: the exit code and the JSON document.
fn what_if_json(file: &str, extra: &[&str]) -> (i32, Value) {
    let cluster = cluster();
    let mut args = vec!["simulate", &cluster, "--what-if", file, "-o", "json"];
    args.extend_from_slice(extra);
    let run = allot(&args);
    assert!(run.code == 0 || run.code == 1, "{}", run.stderr);
    (
        run.code,
        serde_json::from_str(&run.stdout).expect("a JSON document"),
    )
}

fn placed_names(answer: &Value) -> Vec<String> {
    answer["whatIf"]["placed"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| p["pod"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// A Deployment's pods come from its controllers (Deployment → ReplicaSet → Pods): two of three
/// replicas of 20 CPUs fit on two nodes of 32.
#[test]
fn what_if_a_deployment_goes_through_its_controllers() {
    let (_, answer) = what_if_json(&what_if_file("deployment.yaml"), &[]);
    assert_eq!(answer["whatIf"]["verdict"], "partly", "{answer}");
    assert_eq!(answer["whatIf"]["pods"], 3);
    let placed = placed_names(&answer);
    assert_eq!(placed.len(), 2, "{placed:?}");
    assert!(placed.iter().all(|p| p.starts_with("gang-test/web-")));
    let reason = answer["whatIf"]["reasons"][0]["reason"].as_str().unwrap();
    assert!(reason.contains("Insufficient cpu"), "{reason}");
}

/// A StatefulSet's pods are its ordinals.
#[test]
fn what_if_a_statefulset_places_its_ordinals() {
    let (_, answer) = what_if_json(&what_if_file("statefulset.yaml"), &[]);
    assert_eq!(answer["whatIf"]["verdict"], "entirely", "{answer}");
    assert_eq!(placed_names(&answer), ["gang-test/db-0", "gang-test/db-1"]);
}

/// A Job's pods (parallelism 2) that fit nowhere.
#[test]
fn what_if_a_job_that_does_not_fit() {
    let (_, answer) = what_if_json(&what_if_file("job.yaml"), &[]);
    assert_eq!(answer["whatIf"]["verdict"], "not", "{answer}");
    assert_eq!(answer["whatIf"]["pods"], 2);
}

/// A gang that does not fit is answered as one unit: "not", never "partly", although two of its
/// three pods would fit on their own; the reason names the pod that cannot be placed.
#[test]
fn what_if_a_gang_never_fits_partly() {
    let gang = repo("examples/workloads/gang/20-gang-too-big.yaml");
    let (_, answer) = what_if_json(&gang, &[]);
    let what_if = &answer["whatIf"];
    assert_eq!(what_if["verdict"], "not", "{answer}");
    assert_eq!(what_if["placed"].as_array().map(Vec::len), Some(0));
    let gang = &what_if["gangs"][0];
    assert_eq!(gang["name"], "trainer");
    assert_eq!(gang["scheduled"], false);
    let reason = gang["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("only 2 of its pods fit at once (minCount 3)"),
        "{reason}"
    );
    // The table says so too.
    let cluster = cluster();
    let file = repo("examples/workloads/gang/20-gang-too-big.yaml");
    let run = allot(&["simulate", &cluster, "--what-if", &file]);
    assert!(
        run.stdout
            .contains("does not fit (a gang is placed as a unit or not at all)"),
        "{}",
        run.stdout
    );
}

/// `--max` with a workload: copies of a Deployment of 20 CPUs: none fits entirely (its third
/// replica never does).
#[test]
fn max_copies_of_a_deployment() {
    let (code, answer) = what_if_json(&what_if_file("deployment.yaml"), &["--max"]);
    assert_eq!(code, 1);
    assert_eq!(answer["copies"], 0, "{answer}");
    assert!(
        answer["stoppedBecause"]
            .as_str()
            .unwrap()
            .contains("Insufficient cpu"),
        "{answer}"
    );
}

/// `--max` with a gang: two gangs of two 12-CPU pods fit on two 32-CPU nodes, the third does
/// not, and the answer says why as a gang.
#[test]
fn max_copies_of_a_gang() {
    let (code, answer) = what_if_json(&what_if_file("small-gang.yaml"), &["--max"]);
    assert_eq!(code, 0, "{answer}");
    assert_eq!(answer["copies"], 2, "{answer}");
    assert_eq!(answer["perNode"]["node-a"], 2, "{answer}");
    assert_eq!(answer["perNode"]["node-b"], 2, "{answer}");
    let why = answer["stoppedBecause"].as_str().unwrap();
    assert!(why.starts_with("gang gang-test/pair-what-if-3: "), "{why}");
}

/// `--max` with a StatefulSet and with a Job: copies run through the controllers too.
#[test]
fn max_copies_of_a_statefulset_and_a_job() {
    let (_, answer) = what_if_json(
        &what_if_file("statefulset.yaml"),
        &["--max", "--what-if-limit", "3"],
    );
    // 2 × 8 CPUs per copy: three copies fit in 64 CPUs; the limit stops there.
    assert_eq!(answer["copies"], 3, "{answer}");
    assert!(answer.get("stoppedBecause").is_none(), "{answer}");
    let (code, answer) = what_if_json(&what_if_file("job.yaml"), &["--max"]);
    assert_eq!(code, 1);
    assert_eq!(answer["copies"], 0, "{answer}");
}
