use super::*;
use crate::testkit::{FakeKubelet, events_of, pod_names, runtime, settle, store_from};

const NODES: &str = r#"
apiVersion: v1
kind: Node
metadata: {name: plain, labels: {gpu: "true"}}
---
apiVersion: v1
kind: Node
metadata: {name: tainted, labels: {gpu: "true"}}
spec:
  taints: [{key: dedicated, value: ml, effect: NoSchedule}]
---
apiVersion: v1
kind: Node
metadata: {name: cordoned, labels: {gpu: "true"}}
spec:
  unschedulable: true
  taints: [{key: node.kubernetes.io/unschedulable, effect: NoSchedule}]
---
apiVersion: v1
kind: Node
metadata: {name: cpu-only}
"#;

fn daemon(extra: &str) -> String {
    format!(
        r#"{NODES}---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: kube-system}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      nodeSelector: {{gpu: "true"}}
      containers: [{{name: c, image: agent}}]
{extra}
"#
    )
}

fn nodes_of(rt: &allot_runtime::Runtime) -> Vec<String> {
    let mut nodes: Vec<String> = pod_names(&rt.store, "kube-system")
        .iter()
        .map(|n| target_node(rt.store.get::<Pod>("kube-system", n).unwrap()).unwrap())
        .collect();
    nodes.sort();
    nodes
}

fn run(yaml: &str) -> allot_runtime::Runtime {
    let mut rt = runtime(
        store_from(yaml),
        vec![
            Box::new(DaemonSetController::new()),
            Box::new(FakeKubelet::new()),
        ],
    );
    settle(&mut rt);
    rt
}

#[test]
fn one_pod_per_eligible_node_through_node_affinity() {
    let rt = run(&daemon(""));
    // The selector excludes cpu-only; the untolerated taint excludes tainted; cordoned nodes
    // are tolerated by the default DaemonSet tolerations.
    assert_eq!(nodes_of(&rt), ["cordoned", "plain"]);
    let name = &pod_names(&rt.store, "kube-system")[0];
    let pod = rt.store.get::<Pod>("kube-system", name).unwrap();
    let terms = &pod
        .spec
        .affinity
        .as_ref()
        .unwrap()
        .node_affinity
        .as_ref()
        .unwrap()
        .required_during_scheduling_ignored_during_execution
        .as_ref()
        .unwrap()
        .node_selector_terms;
    assert_eq!(terms[0].match_fields[0].key, "metadata.name");
    let keys: Vec<&str> = pod
        .spec
        .tolerations
        .iter()
        .map(|t| t.key.as_str())
        .collect();
    assert_eq!(
        keys,
        [
            "node.kubernetes.io/not-ready",
            "node.kubernetes.io/unreachable",
            "node.kubernetes.io/disk-pressure",
            "node.kubernetes.io/memory-pressure",
            "node.kubernetes.io/pid-pressure",
            "node.kubernetes.io/unschedulable",
        ]
    );
    assert!(pod.metadata.labels.contains_key(REVISION_LABEL));
    let ds = rt.store.get::<DaemonSet>("kube-system", "agent").unwrap();
    assert_eq!(
        (
            ds.status.desired_number_scheduled,
            ds.status.current_number_scheduled,
            ds.status.number_ready
        ),
        (2, 2, 2)
    );
    let events = events_of(&rt.store, "DaemonSet", "agent");
    assert!(
        events
            .iter()
            .all(|e| e.0 == "SuccessfulCreate" && e.1.starts_with("Created pod: agent-"))
    );
}

#[test]
fn tolerations_and_new_nodes_widen_the_set() {
    let mut rt = run(&daemon(
        "      tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]",
    ));
    assert_eq!(nodes_of(&rt), ["cordoned", "plain", "tainted"]);
    let mut node = Node::default();
    node.metadata.name = "late".into();
    node.metadata.labels.insert("gpu".into(), "true".into());
    rt.store.create(node, "t").unwrap();
    settle(&mut rt);
    assert_eq!(nodes_of(&rt), ["cordoned", "late", "plain", "tainted"]);
    // A node that loses the label loses its pod.
    rt.store
        .modify::<Node, _>("", "plain", |n| {
            n.metadata.labels.clear();
        })
        .unwrap();
    settle(&mut rt);
    assert_eq!(nodes_of(&rt), ["cordoned", "late", "tainted"]);
}

#[test]
fn eligibility_table() {
    let node = |labels: &[(&str, &str)], taints: &[(&str, TaintEffect)]| {
        let mut n = Node::default();
        n.metadata.name = "n".into();
        n.metadata.labels = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        n.spec.taints = taints
            .iter()
            .map(|(k, e)| allot_api::core::v1::Taint {
                key: k.to_string(),
                value: String::new(),
                effect: e.clone(),
                time_added: None,
            })
            .collect();
        n
    };
    let spec = PodSpec::default();
    assert_eq!(should_run(&spec, &node(&[], &[])), (true, true));
    assert_eq!(
        should_run(&spec, &node(&[], &[("x", TaintEffect::NoSchedule)])),
        (false, true)
    );
    assert_eq!(
        should_run(&spec, &node(&[], &[("x", TaintEffect::NoExecute)])),
        (false, false)
    );
    assert_eq!(
        should_run(
            &spec,
            &node(
                &[],
                &[("node.kubernetes.io/not-ready", TaintEffect::NoExecute)]
            )
        ),
        (true, true)
    );
    assert_eq!(
        should_run(&spec, &node(&[], &[("x", TaintEffect::PreferNoSchedule)])),
        (true, true)
    );
    let named = PodSpec {
        node_name: Some("other".into()),
        ..PodSpec::default()
    };
    assert_eq!(should_run(&named, &node(&[], &[])), (false, false));
}
