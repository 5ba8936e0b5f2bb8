//! End-to-end tests of the workload controllers in `allot serve`, driven by a real kubectl 1.37
//! (issue 18): `kubectl create deployment`, `kubectl rollout status`, `kubectl scale`, a rollout
//! with `kubectl set image`, `kubectl get events` and `kubectl describe` with the controllers'
//! Events, `kubectl delete` cascading to the ReplicaSets and pods (and `--cascade=orphan`
//! leaving them without owner), and a Job whose pods run for `allot.dev/run-duration` and
//! complete. kubectl comes from `ALLOT_KUBECTL` (set by `cargo xtask test`); without it the
//! tests fail.

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use harness::{Serve, write};

/// Two simulated nodes (a NodeTopology by label makes their agents run pods).
const NODES: &str = "apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1, pool: w}
status:
  capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: v1
kind: Node
metadata:
  name: worker-2
  labels: {kubernetes.io/hostname: worker-2, pool: w}
status:
  capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata:
  name: workers
  annotations: {allot.dev/node-selector: pool=w}
cpus:
- {id: 0, core: 0, socket: 0, numa: 0}
- {id: 1, core: 1, socket: 0, numa: 0}
- {id: 2, core: 2, socket: 0, numa: 0}
- {id: 3, core: 3, socket: 0, numa: 0}
- {id: 4, core: 0, socket: 0, numa: 0}
- {id: 5, core: 1, socket: 0, numa: 0}
- {id: 6, core: 2, socket: 0, numa: 0}
- {id: 7, core: 3, socket: 0, numa: 0}
numaNodes:
- {id: 0, memory: 16Gi}
";

/// A Job of three completions, two at a time, whose pods run one second and succeed.
const JOB: &str = "apiVersion: batch/v1
kind: Job
metadata:
  name: short
spec:
  completions: 3
  parallelism: 2
  template:
    metadata:
      annotations: {allot.dev/run-duration: 1s}
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: busybox
";

fn start() -> (tempfile::TempDir, Serve) {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    serve.ok(&["apply", "-f", &write(dir.path(), "nodes.yaml", NODES)]);
    (dir, serve)
}

/// `name phase` of every pod whose name starts with `prefix`, one a line.
fn pods(serve: &Serve, prefix: &str) -> Vec<String> {
    let text = serve.ok(&[
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
    ]);
    text.lines()
        .filter(|l| l.starts_with(prefix))
        .map(str::to_string)
        .collect()
}

fn running(serve: &Serve, prefix: &str, count: usize) -> Vec<String> {
    let args = [
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.status.phase}{\"\\n\"}{end}",
    ];
    serve.until(&args, |text| {
        let lines: Vec<&str> = text.lines().filter(|l| l.starts_with(prefix)).collect();
        lines.len() == count && lines.iter().all(|l| l.ends_with(" Running"))
    });
    pods(serve, prefix)
}

#[test]
fn deployment_create_scale_roll_and_delete_with_kubectl() {
    let (_dir, serve) = start();
    serve.ok(&[
        "create",
        "deployment",
        "web",
        "--image=registry.example.com/web:1",
        "--replicas=2",
    ]);
    let status = serve.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let two = running(&serve, "web-", 2);
    assert_eq!(two.len(), 2, "{two:?}");
    // Pod names: <replicaset>-<5 characters>, the ReplicaSet <deployment>-<pod-template-hash>.
    let rs = serve.ok(&["get", "rs", "-o", "jsonpath={.items[*].metadata.name}"]);
    let hash = serve.ok(&[
        "get",
        "rs",
        &rs,
        "-o",
        "jsonpath={.metadata.labels.pod-template-hash}",
    ]);
    assert_eq!(rs, format!("web-{hash}"));
    for line in &two {
        let name = line.split(' ').next().unwrap_or_default();
        let suffix = name.strip_prefix(&format!("{rs}-")).unwrap_or_default();
        assert_eq!(suffix.len(), 5, "{name}");
    }

    serve.ok(&["scale", "deployment", "web", "--replicas=3"]);
    let three = running(&serve, "web-", 3);
    assert_eq!(three.len(), 3, "{three:?}");
    let ready = serve.until(
        &[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.status.readyReplicas}",
        ],
        |t| t == "3",
    );
    assert_eq!(ready, "3");

    // A new image rolls out through a second ReplicaSet; the old one ends at zero.
    serve.ok(&[
        "set",
        "image",
        "deployment/web",
        "web=registry.example.com/web:2",
    ]);
    let status = serve.ok(&["rollout", "status", "deployment/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    let sets = serve.until(
        &[
            "get",
            "rs",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.spec.replicas}{\"\\n\"}{end}",
        ],
        |t| t.lines().count() == 2 && t.lines().any(|l| l == format!("{rs} 0")),
    );
    assert!(sets.lines().any(|l| l == format!("{rs} 0")), "{sets}");
    assert!(
        sets.lines()
            .any(|l| l.ends_with(" 3") && !l.starts_with(&rs)),
        "{sets}"
    );
    let revision = serve.ok(&[
        "get",
        "deployment",
        "web",
        "-o",
        "jsonpath={.metadata.annotations.deployment\\.kubernetes\\.io/revision}",
    ]);
    assert_eq!(revision, "2");

    // The controllers' Events, as kubectl lists and describes them.
    let events = serve.until(&["get", "events"], |t| {
        t.contains("ScalingReplicaSet") && t.contains("SuccessfulCreate") && t.contains("Scheduled")
    });
    for reason in [
        "ScalingReplicaSet",
        "SuccessfulCreate",
        "SuccessfulDelete",
        "Scheduled",
    ] {
        assert!(events.contains(reason), "{reason} missing:\n{events}");
    }
    assert!(events.contains("deployment/web"), "{events}");
    let described = serve.ok(&["describe", "deployment", "web"]);
    assert!(
        described.contains("ScalingReplicaSet")
            && described.contains(&format!("Scaled up replica set {rs} from 0 to 2")),
        "{described}"
    );

    // kubectl delete cascades (background): the ReplicaSets and the pods go too.
    serve.ok(&["delete", "deployment", "web"]);
    let left = serve.until(&["get", "rs,pods", "-o", "name"], |t| !t.contains("web-"));
    assert!(!left.contains("web-"), "{left}");

    // --cascade=orphan keeps the ReplicaSet and its pods, without an owner.
    serve.ok(&[
        "create",
        "deployment",
        "keep",
        "--image=registry.example.com/keep:1",
        "--replicas=1",
    ]);
    running(&serve, "keep-", 1);
    serve.ok(&["delete", "deployment", "keep", "--cascade=orphan"]);
    let owners = serve.until(
        &[
            "get",
            "rs",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.metadata.ownerReferences}{\"\\n\"}{end}",
        ],
        |t| {
            t.lines()
                .any(|l| l.starts_with("keep-") && !l.contains("Deployment"))
        },
    );
    let line = owners
        .lines()
        .find(|l| l.starts_with("keep-"))
        .unwrap_or_else(|| panic!("the orphaned ReplicaSet went:\n{owners}"));
    assert!(!line.contains("Deployment"), "{owners}");
    let still = pods(&serve, "keep-");
    assert_eq!(still.len(), 1, "{still:?}");
    assert!(
        serve
            .fails(&["get", "deployment", "keep"])
            .contains("NotFound")
    );
}

#[test]
fn a_job_runs_its_pods_to_completion_with_kubectl() {
    let (dir, serve) = start();
    serve.ok(&["apply", "-f", &write(dir.path(), "job.yaml", JOB)]);
    let waited = serve.ok(&[
        "wait",
        "--for=condition=Complete",
        "job/short",
        "--timeout=60s",
    ]);
    assert!(waited.contains("condition met"), "{waited}");
    let succeeded = serve.ok(&["get", "job", "short", "-o", "jsonpath={.status.succeeded}"]);
    assert_eq!(succeeded, "3");
    let finished = pods(&serve, "short-");
    assert_eq!(finished.len(), 3, "{finished:?}");
    assert!(
        finished.iter().all(|l| l.ends_with(" Succeeded")),
        "{finished:?}"
    );
    let events = serve.until(&["get", "events"], |t| t.contains("Completed"));
    assert!(
        events.contains("job/short") && events.contains("Completed"),
        "{events}"
    );
    // `kubectl create job` (a protobuf body) makes a Job whose pod runs (no run duration: it
    // runs until deleted).
    serve.ok(&["create", "job", "pi", "--image=registry.example.com/pi:1"]);
    let pi = running(&serve, "pi-", 1);
    assert_eq!(pi.len(), 1, "{pi:?}");
    // Jobs orphan their pods unless told otherwise (kubectl sends background propagation).
    serve.ok(&["delete", "job", "short"]);
    let left = serve.until(&["get", "pods", "-o", "name"], |t| !t.contains("short-"));
    assert!(!left.contains("short-"), "{left}");
}
