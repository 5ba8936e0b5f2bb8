//! Preemption in `allot serve`, driven by a real kubectl 1.37: two PriorityClasses, a
//! low-priority pod filling the only node, then a high-priority pod that fits nowhere. The
//! scheduler's DefaultPreemption marks the low pod (`DisruptionTarget` with reason
//! `PreemptionByScheduler`, a deletion timestamp with its grace period), nominates the node for
//! the high pod (`status.nominatedNodeName`), a `Preempted` event is recorded for the victim
//! (upstream's "Preempted by pod <uid> on node <node>", the preemptor as `related`),
//! and once the grace period has passed the victim is gone and the high pod is bound there.
//! kubectl comes from `ALLOT_KUBECTL` (set by `cargo xtask test`); without it the test fails.

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use harness::{Serve, write};

const CLUSTER: &str = "apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: batch-low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: critical-high}
value: 1000
---
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1}
status:
  capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
";

/// A pod of `class` asking for 3 of the node's 4 CPUs (so two never fit together), with a
/// grace period of 15 s (time to look at the victim while it terminates).
fn pod(name: &str, class: &str) -> String {
    format!(
        "apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: default}}
spec:
  priorityClassName: {class}
  terminationGracePeriodSeconds: 15
  containers:
  - name: c
    image: busybox
    resources: {{requests: {{cpu: \"3\"}}}}
"
    )
}

fn get(serve: &Serve, pod: &str, path: &str) -> String {
    serve.ok(&["get", "pod", pod, "-o", &format!("jsonpath={path}")])
}

#[test]
fn a_higher_priority_pod_preempts_the_lower_one_and_takes_its_node() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    serve.ok(&["apply", "-f", &write(dir.path(), "cluster.yaml", CLUSTER)]);
    serve.ok(&[
        "apply",
        "-f",
        &write(dir.path(), "low.yaml", &pod("low", "batch-low")),
    ]);
    let bound = serve.until_status(
        &["get", "pod", "low", "-o", "jsonpath={.spec.nodeName}"],
        |ok, t| ok && t == "worker-1",
    );
    assert_eq!(bound, "worker-1");
    // Priority admission resolved the classes.
    assert_eq!(get(&serve, "low", "{.spec.priority}"), "10");

    serve.ok(&[
        "apply",
        "-f",
        &write(dir.path(), "high.yaml", &pod("high", "critical-high")),
    ]);
    assert_eq!(get(&serve, "high", "{.spec.priority}"), "1000");
    // The victim: DisruptionTarget, then a deletion timestamp with its grace period.
    let reason = serve.until_status(
        &[
            "get",
            "pod",
            "low",
            "-o",
            "jsonpath={.status.conditions[?(@.type==\"DisruptionTarget\")].reason}",
        ],
        |_, t| t == "PreemptionByScheduler",
    );
    assert_eq!(reason, "PreemptionByScheduler");
    let message = serve.ok(&[
        "get",
        "pod",
        "low",
        "-o",
        "jsonpath={.status.conditions[?(@.type==\"DisruptionTarget\")].message}",
    ]);
    assert_eq!(
        message,
        "default-scheduler: preempting to accommodate a higher priority pod"
    );
    let deleting = serve.ok(&[
        "get",
        "pod",
        "low",
        "-o",
        "jsonpath={.metadata.deletionGracePeriodSeconds}",
    ]);
    assert_eq!(deleting, "15");
    // The preemptor waits, nominated to the node.
    let nominated = serve.until_status(
        &[
            "get",
            "pod",
            "high",
            "-o",
            "jsonpath={.status.nominatedNodeName}",
        ],
        |_, t| t == "worker-1",
    );
    assert_eq!(nominated, "worker-1");
    // The event kubectl shows for the victim.
    let events = serve.until_status(
        &[
            "get",
            "events",
            "--field-selector",
            "reason=Preempted",
            "-o",
            "jsonpath={range .items[*]}{.involvedObject.name} {.type} {.reason}{\"\\n\"}{end}",
        ],
        |ok, t| ok && t.contains("low Normal Preempted"),
    );
    assert!(events.contains("low Normal Preempted"), "{events}");
    // Upstream's text, recorded once by the scheduler where it decides: the preemptor's uid and
    // the node in the message, action `Preempting`, the preemptor as `related`.
    let uid = get(&serve, "high", "{.metadata.uid}");
    assert!(!uid.is_empty());
    let preempted = serve.ok(&[
        "get",
        "events",
        "--field-selector",
        "reason=Preempted",
        "-o",
        "jsonpath={range .items[*]}{.involvedObject.name}|{.message}|{.action}|{.related.kind}/{.related.name}|{.related.uid}|{.source.component}{\"\\n\"}{end}",
    ]);
    assert_eq!(
        preempted.trim_end(),
        format!(
            "low|Preempted by pod {uid} on node worker-1|Preempting|Pod/high|{uid}|default-scheduler"
        ),
        "one Preempted event, upstream's"
    );

    // After the grace period: the victim is gone and the preemptor runs on its node.
    let gone = serve.until_status(&["get", "pod", "low"], |ok, _| !ok);
    let (found, _, stderr) = serve.run(&["get", "pod", "low"]);
    assert!(!found, "the victim is still there: {gone}");
    assert!(
        stderr.contains("NotFound") || stderr.contains("not found"),
        "{stderr}"
    );
    let bound = serve.until_status(
        &["get", "pod", "high", "-o", "jsonpath={.spec.nodeName}"],
        |ok, t| ok && t == "worker-1",
    );
    assert_eq!(bound, "worker-1");
}
