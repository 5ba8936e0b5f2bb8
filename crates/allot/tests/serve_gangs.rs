//! Gang scheduling in `allot serve`, driven by a real kubectl 1.37: a PodGroup with
//! `minCount: 2` keeps its first pod out of the scheduling queue (PreEnqueue) until the second
//! exists, then both bind together and the PodGroup reports `PodGroupScheduled=True`. kubectl
//! comes from `ALLOT_KUBECTL` (set by `cargo xtask test`); without it the test fails.

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::time::Duration;

use harness::{Serve, write};

const NODE: &str = "apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1}
status:
  capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: scheduling.k8s.io/v1beta1
kind: PodGroup
metadata: {name: pair, namespace: default}
spec:
  schedulingPolicy:
    gang: {minCount: 2}
";

fn member(name: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  schedulingGroup: {{podGroupName: pair}}
  containers:
  - name: c
    image: busybox
    resources: {{requests: {{cpu: \"1\"}}}}
"
    )
}

fn node_of(serve: &Serve, pod: &str) -> String {
    serve.ok(&["get", "pod", pod, "-o", "jsonpath={.spec.nodeName}"])
}

#[test]
fn a_gang_waits_for_min_count_pods_then_binds_together() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    serve.ok(&["apply", "-f", &write(dir.path(), "node.yaml", NODE)]);
    serve.ok(&["apply", "-f", &write(dir.path(), "a.yaml", &member("a"))]);
    // The scheduler has seen the pod (its PodGroup exists, minCount not met): it stays out of
    // the queue, unbound, without a PodScheduled condition.
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(node_of(&serve, "a"), "");
    let conditions = serve.ok(&["get", "pod", "a", "-o", "jsonpath={.status.conditions}"]);
    assert!(!conditions.contains("PodScheduled"), "{conditions}");
    serve.ok(&["apply", "-f", &write(dir.path(), "b.yaml", &member("b"))]);
    let bound = serve.until(
        &[
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.spec.nodeName} {end}",
        ],
        |t| t.contains("a=worker-1") && t.contains("b=worker-1"),
    );
    assert!(
        bound.contains("a=worker-1") && bound.contains("b=worker-1"),
        "{bound}"
    );
    let status = serve.until(
        &[
            "get",
            "podgroup",
            "pair",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"PodGroupScheduled\")].status}",
        ],
        |t| t == "True",
    );
    assert_eq!(status, "True");
}
