//! `allot simulate` end to end for the scheduler's explanations: on the scenario folder
//! `tests/simulate/explain` (four nodes refusing a pod for four reasons), the pod's message in
//! `-o json` and the "Not running" part of `-o wide` carry kube-scheduler's message, then each
//! plugin's explanation grouped by reason: NodeUnschedulable, NodeAffinity, NodeResourcesFit.

#[path = "support/cli.rs"]
mod cli;

use cli::{allot, find, scenario, simulate_json};

const MESSAGE: &str = "0/4 nodes are available: 1 node(s) didn't match Pod's node affinity/selector, 1 node(s) were unschedulable, 2 Insufficient cpu. preemption: 0/4 nodes are available: 1 No preemption victims found for incoming pod, 3 Preemption is not helpful for scheduling.
NodeUnschedulable:
  1 node(s) were unschedulable:
    maintenance: cordoned (spec.unschedulable: true) and the pod does not tolerate node.kubernetes.io/unschedulable:NoSchedule
NodeAffinity:
  1 node(s) didn't match Pod's node affinity/selector:
    elsewhere: nodeSelector zone=a: the node has zone=b
NodeResourcesFit:
  2 Insufficient cpu:
    full: wants 4, 1500m free: 8 allocatable, 6500m requested by default/web 5, default/cache 1500m
    small: wants 4, more than the node's 2 allocatable";

#[test]
fn json_carries_each_plugins_explanation_after_the_upstream_message() {
    let items = simulate_json(&[&scenario("explain")]);
    let big = find(&items, "Pod", "big");
    assert!(big["spec"]["nodeName"].is_null());
    let condition = big["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "PodScheduled")
        .unwrap();
    assert_eq!(condition["reason"], "Unschedulable");
    assert_eq!(condition["message"].as_str().unwrap(), MESSAGE);
}

#[test]
fn wide_table_indents_the_explanations_under_the_pod() {
    let out = allot(&["simulate", &scenario("explain"), "-o", "wide"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, not_running) = out
        .stdout
        .split_once("Not running:\n")
        .expect("a Not running part");
    let mut want = String::new();
    for (i, line) in MESSAGE.lines().enumerate() {
        if i == 0 {
            want.push_str(&format!("  default/big (Pending): Unschedulable: {line}\n"));
        } else {
            want.push_str(&format!("    {line}\n"));
        }
    }
    assert_eq!(not_running, want);
}
