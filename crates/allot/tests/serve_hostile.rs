//! End-to-end test of issue 15, item 2, on `allot serve` with a real kubectl (`ALLOT_KUBECTL`):
//! a user allowed nothing but creating ResourceClaims and Pods in one namespace creates a
//! claim whose 23 requests each match the same 22 of a node's 44 devices (an exponential
//! search for a first-fit backtracking allocator), and a pod using it. Throughout, `/readyz`
//! and another user's requests keep completing and the other user's pod is scheduled; the
//! hostile pod is marked Unschedulable with the requests and devices that cannot cover them;
//! after a SIGKILL the server comes back on the same data directory and keeps serving.
//! Progress is asserted, not timings.

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use harness::{Serve, wait_for};

const TOKENS: &str = "admin-token,admin,0,\"system:masters\"\n\
mallory-token,mallory,1\n\
bob-token,bob,2\n";

/// The node (44 GPUs with an `index`), the namespaces and the users' rights: mallory may only
/// create claims and pods in `tenant`; bob may create and read claims and pods in `team`.
fn cluster() -> String {
    let mut out = String::from(
        "apiVersion: v1
kind: Namespace
metadata: {name: tenant}
---
apiVersion: v1
kind: Namespace
metadata: {name: team}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: create-only, namespace: tenant}
rules:
- apiGroups: [\"\", resource.k8s.io]
  resources: [pods, resourceclaims]
  verbs: [create]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: mallory-creates, namespace: tenant}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: mallory}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: create-only}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: work, namespace: team}
rules:
- apiGroups: [\"\", resource.k8s.io]
  resources: [pods, resourceclaims]
  verbs: [create, get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: bob-works, namespace: team}
subjects: [{kind: User, apiGroup: rbac.authorization.k8s.io, name: bob}]
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: work}
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-1
  labels: {kubernetes.io/hostname: gpu-1}
status:
  capacity: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
---
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata: {name: gpu-1}
cpus:
- {id: 0, core: 0, socket: 0, numa: 0}
- {id: 1, core: 1, socket: 0, numa: 0}
- {id: 2, core: 2, socket: 0, numa: 0}
- {id: 3, core: 3, socket: 0, numa: 0}
numaNodes:
- {id: 0, memory: 8Gi}
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: 'device.driver == \"gpu.example.com\"'}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {name: gpu-1-gpus}
spec:
  driver: gpu.example.com
  nodeName: gpu-1
  pool: {name: gpu-1, generation: 1, resourceSliceCount: 1}
  devices:
",
    );
    for i in 0..44 {
        out.push_str(&format!(
            "  - name: gpu-{i}\n    attributes:\n      index: {{int: {i}}}\n"
        ));
    }
    out
}

/// The hostile claim (23 requests, each for one of the same 22 GPUs) and its pod.
fn hostile() -> String {
    let mut out = String::from(
        "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: hostile, namespace: tenant}
spec:
  devices:
    requests:
",
    );
    for r in 0..23 {
        out.push_str(&format!(
            "    - name: r{r}\n      exactly:\n        deviceClassName: gpu.example.com\n        selectors:\n        - cel: {{expression: 'device.attributes[\"gpu.example.com\"].index < 22'}}\n"
        ));
    }
    out.push_str(
        "---
apiVersion: v1
kind: Pod
metadata: {name: hostile, namespace: tenant}
spec:
  resourceClaims: [{name: gpus, resourceClaimName: hostile}]
  containers:
  - name: main
    image: registry.example.com/x:1
    resources: {claims: [{name: gpus}]}
",
    );
    out
}

/// A claim for one GPU and a pod using it, in `team`.
fn friendly(name: &str) -> String {
    format!(
        "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {{name: {name}, namespace: team}}
spec:
  devices:
    requests:
    - name: gpu
      exactly: {{deviceClassName: gpu.example.com}}
---
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: team}}
spec:
  resourceClaims: [{{name: gpu, resourceClaimName: {name}}}]
  containers:
  - name: main
    image: registry.example.com/y:1
    resources: {{claims: [{{name: gpu}}]}}
"
    )
}

fn start(dir: &Path, kubectl: &Path) -> Serve {
    let tokens = dir.join("users.csv");
    std::fs::write(&tokens, TOKENS).expect("writes tokens");
    Serve::start(
        &dir.join("data"),
        kubectl,
        &["--token-auth-file", &tokens.display().to_string()],
    )
}

/// `.status.conditions[PodScheduled]` of a pod as (status, reason, message), read as admin.
fn scheduled(serve: &Serve, namespace: &str, pod: &str) -> (String, String, String) {
    let (ok, out, _) = serve.run(&["get", "pod", pod, "-n", namespace, "-o", "json"]);
    if !ok {
        return Default::default();
    }
    let pod: serde_json::Value = serde_json::from_str(&out).expect("kubectl prints JSON");
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "PodScheduled")
        .map(|c| {
            let text = |k: &str| c[k].as_str().unwrap_or_default().to_string();
            (text("status"), text("reason"), text("message"))
        })
        .unwrap_or_default()
}

/// Requests made in the background until stopped: `/readyz` as the admin and bob's pod list;
/// counts of the answers that came back 200, and of the others.
struct Watchers {
    stop: Arc<AtomicBool>,
    ok: Arc<AtomicUsize>,
    failed: Arc<AtomicUsize>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Watchers {
    fn start(serve: &Serve) -> Watchers {
        let stop = Arc::new(AtomicBool::new(false));
        let ok = Arc::new(AtomicUsize::new(0));
        let failed = Arc::new(AtomicUsize::new(0));
        let mut threads = Vec::new();
        for (token, path) in [
            ("admin-token", "/readyz"),
            ("bob-token", "/api/v1/namespaces/team/pods"),
        ] {
            let (address, ca) = (serve.address.clone(), serve.data_dir.join("pki/ca.crt"));
            let (stop, ok, failed) = (stop.clone(), ok.clone(), failed.clone());
            threads.push(std::thread::spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    let (code, _) =
                        harness::https::request(&address, &ca, Some(token), "GET", path, &[], b"");
                    let counter = if code == 200 { &ok } else { &failed };
                    counter.fetch_add(1, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(50));
                }
            }));
        }
        Watchers {
            stop,
            ok,
            failed,
            threads,
        }
    }

    /// Stops the requests; (answered 200, other answers).
    fn stop(self) -> (usize, usize) {
        self.stop.store(true, Ordering::SeqCst);
        for thread in self.threads {
            thread.join().expect("watcher thread");
        }
        (
            self.ok.load(Ordering::SeqCst),
            self.failed.load(Ordering::SeqCst),
        )
    }
}

#[test]
fn a_hopeless_claim_from_a_namespace_user_does_not_take_the_server_down() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl);
    serve.ok(&["apply", "-f", &serve.file("cluster.yaml", &cluster())]);

    // Mallory can do nothing but create: not even read what she created.
    let hostile = serve.file("hostile.yaml", &hostile());
    let denied = serve.fails_as(Some("mallory-token"), &["get", "pods", "-n", "tenant"]);
    assert!(denied.contains("forbidden"), "{denied}");
    let watchers = Watchers::start(&serve);
    serve.ok_as(
        Some("mallory-token"),
        &["create", "--validate=false", "-f", &hostile],
    );
    let before = watchers.ok.load(Ordering::SeqCst);
    serve.ok_as(
        Some("bob-token"),
        &[
            "create",
            "--validate=false",
            "-f",
            &serve.file("bob.yaml", &friendly("bob-1")),
        ],
    );

    // Bob's pod is scheduled and the hostile one is not, with the reason.
    wait_for("bob's pod to be scheduled", || {
        scheduled(&serve, "team", "bob-1").0 == "True"
    });
    wait_for("the hostile pod to be marked Unschedulable", || {
        scheduled(&serve, "tenant", "hostile").1 == "Unschedulable"
    });
    let (status, _, message) = scheduled(&serve, "tenant", "hostile");
    assert_eq!(status, "False");
    for needle in [
        "0/1 nodes are available: 1 cannot allocate all claims.",
        // 22 GPUs match, less the one bob's pod may have taken first.
        "not enough devices: 23 requests need 23 devices together, but only 2",
        "devices can serve any of them",
        "tenant/hostile/r0",
        "gpu.example.com/gpu-1/gpu-",
    ] {
        assert!(message.contains(needle), "{needle:?} not in {message}");
    }
    // The server kept answering meanwhile, everyone's requests alike.
    wait_for("more answers after the hostile claim", || {
        watchers.ok.load(Ordering::SeqCst) > before + 10
    });
    let (ok, failed) = watchers.stop();
    assert!(ok > 10, "{ok} answers");
    assert_eq!(failed, 0, "requests that did not answer 200");

    // A restart on the same data directory comes up and keeps serving and scheduling.
    drop(serve);
    let serve = start(dir.path(), &kubectl);
    let (code, body) = serve.http("GET", "/readyz", &[], b"");
    assert_eq!((code, body.as_str()), (200, "ok"));
    let watchers = Watchers::start(&serve);
    serve.ok_as(
        Some("bob-token"),
        &[
            "create",
            "--validate=false",
            "-f",
            &serve.file("bob-2.yaml", &friendly("bob-2")),
        ],
    );
    wait_for("bob's second pod to be scheduled", || {
        scheduled(&serve, "team", "bob-2").0 == "True"
    });
    assert_eq!(scheduled(&serve, "tenant", "hostile").1, "Unschedulable");
    let (ok, failed) = watchers.stop();
    assert!(ok > 0, "no answers after the restart");
    assert_eq!(
        failed, 0,
        "requests that did not answer 200 after the restart"
    );
}
