//! End-to-end: `allot serve --scheduler-config FILE` (kube-scheduler's `--config`) runs the
//! file's profiles, driven by a real kubectl 1.37: a pod picks its profile by
//! `spec.schedulerName` (the bin-packing profile of examples/scheduling/two-profiles fills the
//! busier node, the default one spreads), a pod naming no profile is never attempted, and a
//! bad file stops the server at start with exit 2 and its line. kubectl comes from
//! `ALLOT_KUBECTL` (set by `cargo xtask test`); without it the tests fail.

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use harness::Serve;

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

const CLUSTER: &str = "apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {kubernetes.io/hostname: node-a}
status:
  capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
---
apiVersion: v1
kind: Node
metadata:
  name: node-b
  labels: {kubernetes.io/hostname: node-b}
status:
  capacity: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
  allocatable: {cpu: \"4\", memory: 16Gi, pods: \"110\"}
---
apiVersion: v1
kind: Pod
metadata: {name: busy, namespace: default}
spec:
  nodeName: node-b
  containers: [{name: c, image: busybox, resources: {requests: {cpu: \"2\", memory: 1Gi}}}]
";

const PODS: &str = "apiVersion: v1
kind: Pod
metadata: {name: packed, namespace: default}
spec:
  schedulerName: bin-packing
  containers: [{name: c, image: busybox, resources: {requests: {cpu: \"1\", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: spread, namespace: default}
spec:
  containers: [{name: c, image: busybox, resources: {requests: {cpu: \"1\", memory: 1Gi}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: legacy, namespace: default}
spec:
  schedulerName: legacy-scheduler
  containers: [{name: c, image: busybox}]
";

/// `name node` of every pod, one a line, once `packed` and `spread` are bound (or 60 s pass).
fn placements(serve: &Serve) -> String {
    let args = [
        "get",
        "pods",
        "-o",
        "jsonpath={range .items[*]}{.metadata.name} {.spec.nodeName}{\"\\n\"}{end}",
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let text = serve.ok(&args);
        let bound = |name: &str| {
            text.lines()
                .any(|l| l.starts_with(&format!("{name} node-")))
        };
        if (bound("packed") && bound("spread")) || Instant::now() > deadline {
            return text;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn scheduler_config_profiles_are_chosen_by_scheduler_name() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = workspace_root().join("examples/scheduling/two-profiles/10-scheduler.yaml");
    let serve = Serve::start(
        &dir.path().join("data"),
        &kubectl,
        &["--scheduler-config".as_ref(), config.as_os_str()],
    );
    serve.ok(&["apply", "-f", &serve.file("cluster.yaml", CLUSTER)]);
    serve.ok(&["apply", "-f", &serve.file("pods.yaml", PODS)]);
    let text = placements(&serve);
    assert!(
        text.contains("packed node-b\n"),
        "bin-packing fills the busy node:\n{text}"
    );
    assert!(
        text.contains("spread node-a\n"),
        "the default profile spreads:\n{text}"
    );
    assert!(
        text.contains("legacy \n"),
        "no profile named legacy-scheduler:\n{text}"
    );
    let conditions = serve.ok(&[
        "get",
        "pod",
        "legacy",
        "-o",
        "jsonpath={.status.conditions}",
    ]);
    assert_eq!(conditions, "", "never attempted");
    let events = serve.ok(&[
        "get",
        "events",
        "--field-selector",
        "involvedObject.name=packed,reason=Scheduled",
        "-o",
        "jsonpath={.items[*].source.component}",
    ]);
    assert_eq!(events, "bin-packing", "the profile reports its Events");
}

#[test]
fn a_bad_scheduler_config_stops_the_server_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("scheduler.yaml");
    std::fs::write(
        &path,
        "apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: a
- schedulerName: a
  pluginConfig:
  - name: InterPodAffinity
    args: {hardPodAffinityWeight: 200}
",
    )
    .expect("writes");
    let out = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path().join("data"))
        .arg("--scheduler-config")
        .arg(&path)
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let file = path.display();
    assert!(
        stderr.contains(&format!(
            "{file}:5: profiles[1].schedulerName: Duplicate value: \"profiles[0].schedulerName\""
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "{file}:8: profiles[1].pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 200: not in valid range [0, 100]"
        )),
        "{stderr}"
    );
    assert!(
        !dir.path().join("data/events.log").exists(),
        "nothing written"
    );
}
