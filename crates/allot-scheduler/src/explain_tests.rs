//! The explanations of NodeResourcesFit, NodeAffinity, NodeUnschedulable and NodeName: each
//! plugin's Filter on every node of a small cluster, then its `explain` of the rejections.

use allot_api::load::{LoadOptions, load_str};
use allot_store::{Store, Stored};

use crate::cache::Cache;
use crate::framework::{Ctx, CycleState, Plugin, PodInfo, Status};
use crate::plugins::{node_affinity, node_name, node_resources_fit, node_unschedulable};
use crate::*;

fn cluster(text: &str) -> Cache {
    let loaded = load_str("test.yaml", text, &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut store = Store::new();
    for doc in loaded.documents {
        let mut object = doc.object;
        allot_api::defaults::default_object(&mut object);
        if let Some(stored) = Stored::from_object(object) {
            store
                .create_stored(stored, &SimTime::ZERO.rfc3339())
                .unwrap();
        }
    }
    let mut cache = Cache::default();
    cache.sync(&store);
    cache.order();
    cache
}

fn node(name: &str, labels: &str, allocatable: &str, spec: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Node\nmetadata: {{name: {name}, labels: {{{labels}}}}}\nspec: {{{spec}}}\nstatus: {{allocatable: {{{allocatable}}}}}\n---\n"
    )
}

fn placed(name: &str, node: &str, requests: &str) -> String {
    format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: {name}, namespace: default}}\nspec:\n  nodeName: {node}\n  containers:\n  - name: c\n    resources: {{requests: {{{requests}}}}}\n---\n"
    )
}

fn incoming(spec: &str) -> PodInfo {
    let text = format!(
        "apiVersion: v1\nkind: Pod\nmetadata: {{name: incoming, namespace: default}}\nspec:\n{spec}"
    );
    let loaded = load_str("pod.yaml", &text, &LoadOptions::default());
    assert!(loaded.errors.is_empty(), "{:?}", loaded.errors);
    let mut object = loaded.documents.into_iter().next().unwrap().object;
    allot_api::defaults::default_object(&mut object);
    let Some(Stored::Pod(pod)) = Stored::from_object(object) else {
        panic!("not a pod")
    };
    PodInfo::new(pod)
}

/// The plugin's Filter on every node, then its explanation of the nodes it rejected.
fn explain(plugin: &mut dyn Plugin, cache: &Cache, pod: &PodInfo) -> String {
    let name = plugin.name();
    let filter = plugin.as_filter().expect("a filter plugin");
    let ctx = Ctx {
        cluster: cache,
        now: SimTime::ZERO,
    };
    let mut state = CycleState::default();
    let statuses: Vec<(&NodeInfo, Status)> = cache
        .nodes_in_order()
        .map(|n| (n, filter.filter(&ctx, &mut state, pod, n).with_plugin(name)))
        .filter(|(_, s)| !s.is_success())
        .collect();
    let rejected: Vec<(&NodeInfo, &Status)> = statuses.iter().map(|(n, s)| (*n, s)).collect();
    filter
        .explain(&ctx, &mut state, pod, &rejected)
        .expect("no error")
        .expect("an explanation")
        .text
}

fn fit() -> node_resources_fit::NodeResourcesFit {
    node_resources_fit::NodeResourcesFit::new(node_resources_fit::Args::default(), false).unwrap()
}

#[test]
fn resources_fit_names_each_shortage_with_its_numbers_and_consumers() {
    let mut docs = node("n1", "", "cpu: \"4\", memory: 4Gi, pods: \"3\"", "");
    docs += &node("n2", "", "cpu: \"2\", memory: 1Gi, pods: \"110\"", "");
    docs += &placed("a", "n1", "cpu: \"1\", memory: 1Gi");
    docs += &placed("b", "n1", "cpu: 1500m, memory: 512Mi");
    docs += &placed("c", "n1", "cpu: 500m");
    let cache = cluster(&docs);
    let pod = incoming(
        "  containers:\n  - name: c\n    resources: {requests: {cpu: \"2\", memory: 3Gi, example.com/gpu: \"1\"}}\n",
    );
    assert_eq!(
        explain(&mut fit(), &cache, &pod),
        "NodeResourcesFit:\n\
         \x20 1 Too many pods:\n\
         \x20   n1: 3 pod(s) already, 3 allowed\n\
         \x20 1 Insufficient cpu:\n\
         \x20   n1: wants 2, 1 free: 4 allocatable, 3 requested by default/b 1500m, default/a 1, default/c 500m\n\
         \x20 2 Insufficient memory:\n\
         \x20   n1: wants 3Gi, 2560Mi free: 4Gi allocatable, 1536Mi requested by default/a 1Gi, default/b 512Mi\n\
         \x20   n2: wants 3Gi, more than the node's 1Gi allocatable\n\
         \x20 2 Insufficient example.com/gpu:\n\
         \x20   n1: wants 1, the node has none\n\
         \x20   n2: wants 1, the node has none"
    );
}

#[test]
fn resources_fit_names_the_three_largest_consumers_and_counts_the_others() {
    let mut docs = node("n1", "", "cpu: \"4\", pods: \"110\"", "");
    for (i, cpu) in ["1", "500m", "2", "250m", "250m"].iter().enumerate() {
        docs += &placed(&format!("p{i}"), "n1", &format!("cpu: {cpu}"));
    }
    let cache = cluster(&docs);
    let pod = incoming("  containers:\n  - name: c\n    resources: {requests: {cpu: \"1\"}}\n");
    assert_eq!(
        explain(&mut fit(), &cache, &pod),
        "NodeResourcesFit:\n  1 Insufficient cpu:\n    n1: wants 1, 0 free: 4 allocatable, 4 requested by 5 pods, most by default/p2 2, default/p0 1, default/p1 500m"
    );
}

#[test]
fn resources_fit_lists_ten_nodes_then_the_most_free_of_all() {
    let mut docs = String::new();
    for i in 0..13 {
        docs += &node(&format!("n{i:02}"), "", "cpu: \"2\", pods: \"110\"", "");
        let used = if i == 11 { "1500m" } else { "2" };
        docs += &placed(
            &format!("p{i:02}"),
            &format!("n{i:02}"),
            &format!("cpu: {used}"),
        );
    }
    let cache = cluster(&docs);
    let pod = incoming("  containers:\n  - name: c\n    resources: {requests: {cpu: \"1\"}}\n");
    let text = explain(&mut fit(), &cache, &pod);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 2 + 10 + 1, "{text}");
    assert_eq!(lines[1], "  13 Insufficient cpu:");
    assert_eq!(
        lines[2],
        "    n00: wants 1, 0 free: 2 allocatable, 2 requested by default/p00 2"
    );
    assert_eq!(
        lines[12],
        "    and 3 more node(s); the most free of all 13: 500m on n11"
    );
}

#[test]
fn node_affinity_names_the_failing_selector_key_or_term() {
    let mut docs = node("n1", "zone: z1, disk: ssd", "pods: \"110\"", "");
    docs += &node("n2", "zone: z2", "pods: \"110\"", "");
    let cache = cluster(&docs);
    let mut plugin = node_affinity::NodeAffinity::new(node_affinity::Args::default());
    let selector = incoming("  nodeSelector: {disk: ssd, zone: z2}\n  containers: [{name: c}]\n");
    assert_eq!(
        explain(&mut plugin, &cache, &selector),
        "NodeAffinity:\n  2 node(s) didn't match Pod's node affinity/selector:\n\
         \x20   n1: nodeSelector zone=z2: the node has zone=z1\n\
         \x20   n2: nodeSelector disk=ssd: the node has no label disk"
    );
    let terms = incoming(
        "  containers: [{name: c}]\n  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n        nodeSelectorTerms:\n        - matchExpressions: [{key: zone, operator: In, values: [z3, z4]}]\n        - matchFields: [{key: metadata.name, operator: In, values: [n9]}]\n",
    );
    assert_eq!(
        explain(&mut plugin, &cache, &terms),
        "NodeAffinity:\n  2 node(s) didn't match Pod's node affinity/selector:\n\
         \x20   n1: required node affinity: none of the 2 required terms matches (term 0: zone In [z3, z4] fails: the node has zone=z1; term 1: field metadata.name In [n9] fails: the node's metadata.name is n1)\n\
         \x20   n2: required node affinity: none of the 2 required terms matches (term 0: zone In [z3, z4] fails: the node has zone=z2; term 1: field metadata.name In [n9] fails: the node's metadata.name is n2)"
    );
}

#[test]
fn node_affinity_names_the_profile_added_affinity() {
    let docs = node("n1", "zone: z1", "pods: \"110\"", "") + &node("n2", "", "pods: \"110\"", "");
    let cache = cluster(&docs);
    let args: node_affinity::Args = serde_json::from_value(serde_json::json!({
        "addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["z1"]}, {"key": "pool", "operator": "Exists"}]}
        ]}}
    }))
    .unwrap();
    let mut plugin = node_affinity::NodeAffinity::new(args);
    let pod = incoming("  containers: [{name: c}]\n");
    assert_eq!(
        explain(&mut plugin, &cache, &pod),
        "NodeAffinity:\n  2 node(s) didn't match scheduler-enforced node affinity:\n\
         \x20   n1: the profile's addedAffinity: zone NotIn [z1] fails: the node has zone=z1\n\
         \x20   n2: the profile's addedAffinity: pool Exists fails: the node has no label pool"
    );
}

#[test]
fn node_unschedulable_says_the_node_is_cordoned() {
    let docs = node("n1", "", "pods: \"110\"", "unschedulable: true")
        + &node("n2", "", "pods: \"110\"", "");
    let cache = cluster(&docs);
    let pod = incoming("  containers: [{name: c}]\n");
    assert_eq!(
        explain(&mut node_unschedulable::NodeUnschedulable, &cache, &pod),
        "NodeUnschedulable:\n  1 node(s) were unschedulable:\n    n1: cordoned (spec.unschedulable: true) and the pod does not tolerate node.kubernetes.io/unschedulable:NoSchedule"
    );
}

#[test]
fn node_name_names_the_wanted_node() {
    let docs = node("n1", "", "pods: \"110\"", "") + &node("n2", "", "pods: \"110\"", "");
    let cache = cluster(&docs);
    let there = incoming("  nodeName: n2\n  containers: [{name: c}]\n");
    assert_eq!(
        explain(&mut node_name::NodeName, &cache, &there),
        "NodeName:\n  1 node(s) didn't match the requested node name:\n    the pod's spec.nodeName is \"n2\": the only node it may run on"
    );
    let gone = incoming("  nodeName: n9\n  containers: [{name: c}]\n");
    assert_eq!(
        explain(&mut node_name::NodeName, &cache, &gone),
        "NodeName:\n  2 node(s) didn't match the requested node name:\n    the pod's spec.nodeName is \"n9\": no node has that name"
    );
}
