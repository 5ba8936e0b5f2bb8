//! End-to-end tests of `allot serve` with simulated nodes, driven by a real kubectl (1.37):
//! the spec's examples applied next to Nodes that have a NodeTopology, pods scheduled and run
//! by the node agents, Events in `kubectl describe`, `kubectl wait` for a pool status request,
//! device-taint eviction in `kubectl describe devicetaintrules`, `kubectl explain` from the
//! OpenAPI documents, and claims deallocated after `kubectl delete`. kubectl comes from
//! `ALLOT_KUBECTL` (a path) or PATH; without it the tests fail and name the README's test
//! command (`cargo xtask test`).

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::path::PathBuf;
use std::process::Command;

use harness::{Serve, spec_dir, write};

const KUBELET_CONFIG: &str = "apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cpuManagerPolicy: static
reservedSystemCPUs: \"0\"
";

/// Two nodes the spec's examples name, one NodeTopology for both (by label), and the
/// namespaces the examples use (default allows admin access, as the admin-access example
/// needs).
const NODES: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: some-ns
---
apiVersion: v1
kind: Node
metadata:
  name: worker-1
  labels: {kubernetes.io/hostname: worker-1, pool: spec}
status:
  capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: v1
kind: Node
metadata:
  name: my-node
  labels: {kubernetes.io/hostname: my-node, pool: spec}
status:
  capacity: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"8\", memory: 16Gi, pods: \"110\"}
---
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata:
  name: spec-nodes
  annotations: {allot.dev/node-selector: pool=spec}
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

#[test]
fn spec_examples_run_on_simulated_nodes() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = write(dir.path(), "kubelet.yaml", KUBELET_CONFIG);
    let serve = Serve::start(
        &dir.path().join("data"),
        &kubectl,
        &["--kubelet-config", &config],
    );
    serve.ok(&["apply", "-f", &write(dir.path(), "nodes.yaml", NODES)]);
    serve.ok(&[
        "label",
        "namespace",
        "default",
        "resource.kubernetes.io/admin-access=true",
    ]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(spec_dir())
        .expect("examples/spec")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut applied = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reads");
        if text.contains("kind: KubeSchedulerConfiguration") {
            continue;
        }
        let out = serve.kubectl(&["apply", "-f", &file.display().to_string()]);
        if out.status.success() {
            applied += 1;
        } else {
            failures.push(format!(
                "{}: {}",
                file.display(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(applied >= 30, "only {applied} examples applied");
    // The CPU manager examples' pods are scheduled and admitted by the simulated kubelets.
    let pods = [
        "best-effort",
        "burstable",
        "burstable-memory",
        "guaranteed-fractional-cpu",
        "guaranteed-integer-cpu",
        "guaranteed-limits-only",
    ];
    let phases = serve.until(
        &[
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.spec.nodeName}{\"\\n\"}{end}",
        ],
        |text| {
            pods.iter().all(|p| {
                text.lines()
                    .any(|l| l.starts_with(&format!("{p} Running ")))
            })
        },
    );
    for pod in pods {
        assert!(
            phases
                .lines()
                .any(|l| l.starts_with(&format!("{pod} Running "))
                    && (l.ends_with(" worker-1") || l.ends_with(" my-node"))),
            "{pod} not running:\n{phases}"
        );
    }
    // The static CPU manager gave the integer-CPU pod exclusive CPUs (pod resources annotation).
    let resources = serve.ok(&[
        "get",
        "pod",
        "guaranteed-integer-cpu",
        "-o",
        "jsonpath={.metadata.annotations.allot\\.dev/resources}",
    ]);
    assert!(resources.contains("\"cpuIds\""), "{resources}");
    // kubectl describe shows the scheduler's Events.
    let described = serve.ok(&["describe", "pod", "guaranteed-integer-cpu"]);
    assert!(
        described.contains("Scheduled")
            && described.contains("default-scheduler")
            && described.contains("Successfully assigned default/guaranteed-integer-cpu to "),
        "{described}"
    );
    // The pre-scheduled example names a node that does not exist: FailedScheduling.
    let described = serve.until(&["describe", "pod", "pod-with-cats"], |t| {
        t.contains("FailedScheduling")
    });
    assert!(
        described.contains("Warning  FailedScheduling")
            && described.contains("didn't match Pod's node affinity/selector"),
        "{described}"
    );
    // The spec's pool status request completes.
    let waited = serve.ok(&[
        "wait",
        "--for=condition=Complete",
        "resourcepoolstatusrequest/check-gpus",
        "--timeout=60s",
    ]);
    assert!(waited.contains("condition met"), "{waited}");
    // Events list like upstream's table.
    let events = serve.ok(&["get", "events"]);
    let header = events.lines().next().unwrap_or_default();
    for column in ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"] {
        assert!(header.contains(column), "{column} missing: {header}");
    }
    assert!(events.contains("pod/pod-with-cats"), "{events}");
}

/// The node of `support/gpu-node.yaml` and two pods of one GPU each.
const GPU_CLUSTER: &str = concat!(
    include_str!("support/gpu-node.yaml"),
    "---
apiVersion: v1
kind: Pod
metadata:
  name: trainer
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: main
    image: registry.example.com/train:1
    resources:
      claims:
      - name: gpu
---
apiVersion: v1
kind: Pod
metadata:
  name: server
spec:
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
  containers:
  - name: main
    image: registry.example.com/serve:1
    resources:
      claims:
      - name: gpu
"
);

const TAINT_RULE: &str = "apiVersion: resource.k8s.io/v1
kind: DeviceTaintRule
metadata:
  name: gpu-0-broken
spec:
  deviceSelector:
    driver: gpu.example.com
    pool: gpu-1
    device: gpu-0
  taint:
    key: gpu.example.com/unhealthy
    value: Broken
    effect: NoExecute
";

#[test]
fn claims_run_evict_and_deallocate_through_kubectl() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    serve.ok(&["apply", "-f", &write(dir.path(), "gpu.yaml", GPU_CLUSTER)]);
    let running = serve.until(
        &[
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}={.status.phase}{\"\\n\"}{end}",
        ],
        |t| t.contains("trainer=Running") && t.contains("server=Running"),
    );
    assert!(
        running.contains("trainer=Running") && running.contains("server=Running"),
        "{running}"
    );
    // The kubelet side wrote the pod resources annotation with the prepared device.
    let resources = serve.ok(&[
        "get",
        "pod",
        "trainer",
        "-o",
        "jsonpath={.metadata.annotations.allot\\.dev/resources}",
    ]);
    assert!(
        resources.contains("\"driverName\":\"gpu.example.com\""),
        "{resources}"
    );
    let claims = serve.ok(&["get", "resourceclaims", "--no-headers"]);
    assert_eq!(
        claims
            .lines()
            .filter(|l| l.contains("allocated,reserved"))
            .count(),
        2,
        "{claims}"
    );
    // Which pod holds gpu-0?
    let holder = serve.ok(&[
        "get",
        "resourceclaims",
        "-o",
        "jsonpath={range .items[*]}{.status.allocation.devices.results[0].device} {.status.reservedFor[0].name}{\"\\n\"}{end}",
    ]);
    let victim = holder
        .lines()
        .find_map(|l| l.strip_prefix("gpu-0 "))
        .expect("a pod holds gpu-0")
        .to_string();
    let survivor = if victim == "trainer" {
        "server"
    } else {
        "trainer"
    };
    // A NoExecute taint on gpu-0 evicts its pod; the rule reports it.
    serve.ok(&["apply", "-f", &write(dir.path(), "taint.yaml", TAINT_RULE)]);
    let gone = serve.until(&["get", "pods", "-o", "name"], |t| {
        !t.contains(&format!("pod/{victim}\n"))
    });
    assert!(!gone.contains(&format!("pod/{victim}\n")), "{gone}");
    assert!(gone.contains(&format!("pod/{survivor}")), "{gone}");
    let rule = serve.until(&["describe", "devicetaintrules"], |t| {
        t.contains("EvictionInProgress")
    });
    assert!(
        rule.contains("gpu-0-broken") && rule.contains("EvictionInProgress"),
        "{rule}"
    );
    let events = serve.ok(&[
        "get",
        "events",
        "--field-selector",
        &format!("involvedObject.name={victim}"),
    ]);
    assert!(events.contains("DeviceTaintManagerEviction"), "{events}");
    // Deleting the other pod releases its claim: the generated claim goes away.
    serve.ok(&["delete", "pod", survivor, "--wait=false"]);
    let claims = serve.until(&["get", "resourceclaims", "--no-headers"], |t| {
        !t.contains(&format!("{survivor}-gpu-"))
    });
    assert!(!claims.contains(&format!("{survivor}-gpu-")), "{claims}");
    // kubectl explain reads the served OpenAPI schema.
    let explained = serve.ok(&["explain", "resourceclaims.spec.devices.requests.exactly"]);
    assert!(
        explained.contains("deviceClassName") && explained.contains("allocationMode"),
        "{explained}"
    );
    let explained = serve.ok(&["explain", "nodetopologies"]);
    assert!(explained.contains("numaNodes"), "{explained}");
}

#[test]
fn bad_kubelet_config_and_topologies_are_refused() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicyy: static\n",
    );
    let out = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--kubelet-config",
            &bad,
            "--data-dir",
        ])
        .arg(dir.path().join("data"))
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.yaml:3") && err.contains("cpuManagerPolicyy"),
        "{err}"
    );
    let serve = Serve::start(&dir.path().join("data2"), &kubectl, &[] as &[&str]);
    let topology = write(
        dir.path(),
        "t.yaml",
        "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: node-a\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0, colour: red}\n",
    );
    let out = serve.kubectl(&["apply", "-f", &topology]);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("is invalid") && err.contains("cpus[0]"),
        "{err}"
    );
}
