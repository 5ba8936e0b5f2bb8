//! The `allot validate` contract: exit 0 when everything is valid; otherwise exit 2 (bad input) and one line
//! per error, `FILE:LINE: KIND NAMESPACE/NAME: FIELD.PATH: message`, or a JSON list of records.

use std::path::Path;
use std::process::Command;

fn allot(args: &[&str]) -> (i32, String) {
    let (code, stdout, _) = allot_with_env(args, &[]);
    (code, stdout)
}

/// Exit code, stdout and stderr, with extra environment variables.
fn allot_with_env(args: &[&str], env: &[(&str, &str)]) -> (i32, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .envs(env.iter().copied())
        .output()
        .expect("run allot");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn examples(folder: &str) -> String {
    format!("{}/../../examples/{folder}", env!("CARGO_MANIFEST_DIR"))
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn bundled_examples_are_valid() {
    for folder in ["spec", "cluster"] {
        let (code, stdout) = allot(&["validate", "-f", &examples(folder)]);
        assert_eq!((code, stdout.as_str()), (0, ""), "examples/{folder}");
    }
}

const INVALID: &str = "\
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: claim
  namespace: team
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        count: -1
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata:
  name: slice
spec:
  driver: gpu.example.com
  pool:
    name: pool
    generation: 1
    resourceSliceCount: 1
  devices:
  - name: gpu-0
    colour: red
";

#[test]
fn errors_name_file_line_object_and_field() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "bad.yaml", INVALID);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        vec![
            format!(
                "{file}:12: ResourceClaim team/claim: spec.devices.requests[0].exactly.count: Invalid value: -1: must be greater than zero"
            ),
            format!("{file}:26: ResourceSlice slice: spec.devices[0].colour: unknown field"),
        ]
    );
}

#[test]
fn json_output_lists_records() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "bad.yaml", INVALID);
    let (code, stdout) = allot(&["validate", "-f", &file, "-o", "json"]);
    assert_eq!(code, 2);
    let records: serde_json::Value = serde_json::from_str(&stdout).expect("json");
    let first = &records[0];
    assert_eq!(first["file"], file.as_str());
    assert_eq!(first["line"], 12);
    assert_eq!(first["kind"], "ResourceClaim");
    assert_eq!(first["namespace"], "team");
    assert_eq!(first["name"], "claim");
    assert_eq!(first["field"], "spec.devices.requests[0].exactly.count");
    assert_eq!(
        first["message"],
        "Invalid value: -1: must be greater than zero"
    );
    assert_eq!(records.as_array().map(Vec::len), Some(2));
}

#[test]
fn valid_json_output_is_an_empty_list() {
    let (code, stdout) = allot(&["validate", "-f", &examples("cluster"), "-o", "json"]);
    assert_eq!(code, 0);
    assert_eq!(stdout.trim(), "[]");
}

#[test]
fn syntax_errors_and_unknown_kinds_name_file_and_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = write(dir.path(), "broken.yaml", "apiVersion: v1\nkind: [Node\n");
    let unknown = write(
        dir.path(),
        "unknown.json",
        "{\"apiVersion\": \"v1\",\n \"kind\": \"Gadget\"}",
    );
    let (code, stdout) = allot(&["validate", "-f", &broken, &unknown]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "{stdout}");
    assert!(lines[0].starts_with(&format!("{broken}:")), "{}", lines[0]);
    assert!(
        lines[1].starts_with(&format!(
            "{unknown}:1: no kind \"Gadget\" is registered for version \"v1\"; supported kinds: v1: "
        )),
        "{}",
        lines[1]
    );
    assert!(
        lines[1].contains("; resource.k8s.io/v1: DeviceClass, DeviceTaintRule, ResourceClaim"),
        "{}",
        lines[1]
    );
}

#[test]
fn admin_access_is_checked_against_namespaces_in_the_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let claim = "\
apiVersion: v1
kind: Namespace
metadata:
  name: team
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: monitor
  namespace: team
spec:
  devices:
    requests:
    - name: all
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: All
        adminAccess: true
";
    let file = write(dir.path(), "admin.yaml", claim);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    assert!(
        stdout.contains("ResourceClaim team/monitor: spec.devices.requests[0].exactly.adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace"),
        "{stdout}"
    );
    let labelled = claim.replace(
        "  name: team\n---",
        "  name: team\n  labels:\n    resource.kubernetes.io/admin-access: \"true\"\n---",
    );
    let file = write(dir.path(), "admin-ok.yaml", &labelled);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!((code, stdout.as_str()), (0, ""));
}

/// Pods, one per document, about `bytes` long.
fn pods(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 1024);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: default\nspec:\n  containers:\n  - name: main\n    resources:\n      requests:\n        cpu: 500m\n        memory: 1Gi\n"
        ));
        i += 1;
    }
    text
}

/// Pods and, after every fourth pod, a claim asking for admin access (whose check waits for the
/// namespaces of the whole input), about `bytes` long.
fn workloads(bytes: usize) -> String {
    let mut text = String::with_capacity(bytes + 1024);
    let mut i = 0;
    while text.len() < bytes {
        text.push_str(&format!(
            "---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: pod-{i}\n  namespace: default\nspec:\n  containers:\n  - name: main\n    resources:\n      requests:\n        cpu: 500m\n        memory: 1Gi\n"
        ));
        if i % 4 == 3 {
            text.push_str(&format!(
                "---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: monitor-{i}\n  namespace: monitoring\nspec:\n  devices:\n    requests:\n    - name: all-gpus\n      exactly:\n        deviceClassName: gpu.example.com\n        allocationMode: All\n        adminAccess: true\n"
            ));
        }
        i += 1;
    }
    text
}

#[test]
fn an_input_over_the_size_limit_exits_2_naming_the_file_and_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = write(dir.path(), "big.yaml", &pods(3 << 20));
    let (code, stdout, _) =
        allot_with_env(&["validate", "--max-input-bytes", "1Mi", "-f", &file], &[]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.starts_with(&format!(
            "{file}: the input is 3.0 MiB larger than the limit of 1 MiB per file"
        )),
        "{stdout}"
    );
    // The environment sets the same limit for every command that reads manifests.
    let (code, stdout, _) = allot_with_env(
        &["validate", "-f", &file],
        &[("ALLOT_MAX_INPUT_BYTES", "2Mi")],
    );
    assert_eq!(code, 2, "{stdout}");
    assert!(stdout.contains("the limit of 2 MiB per file"), "{stdout}");
    let (code, stdout, _) = allot_with_env(
        &["validate", "-f", &file],
        &[("ALLOT_MAX_INPUT_BYTES", "lots")],
    );
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.starts_with("ALLOT_MAX_INPUT_BYTES: \"lots\" is not a byte count"),
        "{stdout}"
    );
    let (code, stdout, stderr) = allot_with_env(&["validate", "-f", &file], &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
}

/// Runs `allot validate -f FILE` and returns its peak resident memory in KiB.
// The child is reaped by `wait4`, which also gives its resource usage.
#[allow(clippy::zombie_processes)]
fn validate_peak_rss_kib(file: &str) -> i64 {
    let child = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["validate", "-f", file])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("run allot");
    let pid = i32::try_from(child.id()).expect("a pid");
    let mut status = 0;
    // SAFETY: a zeroed rusage is a valid value for wait4 to fill in.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: waits for our own child; both pointers are valid for the call.
    let waited = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(waited, pid);
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    usage.ru_maxrss
}

#[test]
fn memory_grows_with_the_text_not_with_the_documents() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Both inputs are large enough to fill the loading pipeline (up to 2*threads+1 pieces of
    // 128 KiB being decoded, whatever the number of cores), so that only the text differs.
    let small = write(dir.path(), "small.yaml", &workloads(8 << 20));
    let large = write(dir.path(), "large.yaml", &workloads(16 << 20));
    let small_kib = validate_peak_rss_kib(&small);
    let large_kib = validate_peak_rss_kib(&large);
    // Holding every parsed document costs about 20 times its text (8 MiB more text: 160 MiB
    // more memory); streamed, 8 MiB more text costs its own size plus the allocator's noise
    // (up to about 10 MiB between runs).
    let grew_kib = large_kib - small_kib;
    assert!(
        grew_kib < 3 * (8 << 10),
        "peak RSS {small_kib} KiB for 8 MiB, {large_kib} KiB for 16 MiB of documents"
    );
}

#[test]
fn invalid_utf8_is_reported_at_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("latin1.yaml");
    std::fs::write(
        &path,
        b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: caf\xe9\n",
    )
    .unwrap();
    let file = path.display().to_string();
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    assert_eq!(
        stdout,
        format!(
            "{file}:4: invalid UTF-8: byte 0xE9 at column 12 is not part of a UTF-8 character; manifests must be UTF-8 text (or UTF-16 with a byte order mark)\n"
        )
    );
}

#[test]
fn dangling_and_looping_symbolic_links_in_a_directory_are_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "a.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
    );
    std::os::unix::fs::symlink(dir.path().join("gone.yaml"), dir.path().join("b.yaml")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("c.yaml"), dir.path().join("c.yaml")).unwrap();
    // Not a manifest name: ignored, as kubectl ignores it.
    std::os::unix::fs::symlink(dir.path().join("gone"), dir.path().join("notes.txt")).unwrap();
    let folder = dir.path().display().to_string();
    let (code, stdout, stderr) = allot_with_env(&["validate", "-f", &folder], &[]);
    assert_eq!(code, 2, "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{folder}/b.yaml: a dangling symbolic link: its target {folder}/gone.yaml does not exist"
            ),
            format!("{folder}/c.yaml: a symbolic link that loops (through {folder}/c.yaml)"),
        ]
    );
    assert_eq!(stderr, "2 errors in 1 document\n");
}

#[test]
fn aliases_load_as_kubernetes_reads_them_and_bombs_are_refused_in_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut many = String::from(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels: &l {a: b}\n  annotations:\n",
    );
    for i in 0..199 {
        many.push_str(&format!("    k{i}: v\n"));
    }
    // Anchors belong to their document: the list defines its own.
    many.push_str("---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Namespace, metadata: {name: first, labels: &l {a: b}}}\n");
    for i in 0..199 {
        many.push_str(&format!(
            "- {{apiVersion: v1, kind: Namespace, metadata: {{name: n{i}, labels: *l}}}}\n"
        ));
    }
    let file = write(dir.path(), "aliases.yaml", &many);
    let (code, stdout, stderr) = allot_with_env(&["validate", "-f", &file], &[]);
    assert_eq!((code, stdout.as_str()), (0, ""), "{stderr}");
    let mut bomb =
        String::from("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\na0: &a0 [\"lol\"]\n");
    for level in 1..=9 {
        let refs = vec![format!("*a{}", level - 1); 9].join(", ");
        bomb.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
    }
    let file = write(dir.path(), "bomb.yaml", &bomb);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2, "{stdout}");
    assert!(
        stdout.starts_with(&format!("{file}:"))
            && stdout.contains(": document contains excessive aliasing: its aliases expand to "),
        "{stdout}"
    );
    assert!(
        !stdout.contains("AliasAnchorRatio") && !stdout.contains("budget"),
        "{stdout}"
    );
}

#[test]
fn negative_requests_and_requests_over_limits_are_refused_as_upstream_words_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pod = "\
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: team
spec:
  initContainers:
  - name: init
    resources:
      limits:
        memory: -1Gi
  containers:
  - name: main
    resources:
      requests:
        cpu: \"-1\"
        memory: 2Gi
      limits:
        memory: 1Gi
  overhead:
    cpu: -100m
";
    let file = write(dir.path(), "pod.yaml", pod);
    let (code, stdout) = allot(&["validate", "-f", &file]);
    assert_eq!(code, 2);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{file}:11: Pod team/p: spec.initContainers[0].resources.limits[memory]: Invalid value: \"-1Gi\": must be greater than or equal to 0"
            ),
            format!(
                "{file}:15: Pod team/p: spec.containers[0].resources.requests: Invalid value: \"2Gi\": must be less than or equal to memory limit of 1Gi"
            ),
            format!(
                "{file}:16: Pod team/p: spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"
            ),
            format!(
                "{file}:20: Pod team/p: spec.overhead.limits[cpu]: Invalid value: \"-100m\": must be greater than or equal to 0"
            ),
        ]
    );
}

#[test]
fn loading_messages_are_written_for_people() {
    let dir = tempfile::tempdir().expect("tempdir");
    let duplicate = write(
        dir.path(),
        "dup.yaml",
        "apiVersion: v1\nkind: Namespace\napiVersion: v1\nmetadata:\n  name: a\n",
    );
    let typo = write(
        dir.path(),
        "typo.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\n  namespace: team\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClasName: gpu.example.com\n",
    );
    let renamed = write(
        dir.path(),
        "renamed.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: s\nspec:\n  driver: cpu.example.com\n  nodeName: n\n  pool:\n    name: p\n    generation: 1\n    resourceSliceCount: 1\n  devices:\n  - name: cpus\n    nodeAllocatableResourceMappings:\n      cpu:\n        capacityKey: cpu.example.com/cpu\n",
    );
    let old_version = write(
        dir.path(),
        "beta.yaml",
        "apiVersion: resource.k8s.io/v1beta1\nkind: ResourceClaim\nmetadata:\n  name: c\n",
    );
    let missing = dir.path().join("nope.yaml").display().to_string();
    let (code, stdout, stderr) = allot_with_env(
        &[
            "validate",
            "-f",
            &duplicate,
            &typo,
            &renamed,
            &old_version,
            &missing,
        ],
        &[],
    );
    assert_eq!(code, 2, "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(
        lines,
        [
            format!(
                "{old_version}:1: no kind \"ResourceClaim\" is registered for version \"resource.k8s.io/v1beta1\"; ResourceClaim is supported as apiVersion resource.k8s.io/v1"
            ),
            format!(
                "{duplicate}:3: Namespace a: apiVersion: duplicate field: already set at line 1"
            ),
            format!("{missing}: the path does not exist"),
            format!(
                "{renamed}:14: ResourceSlice s: spec.devices[0].nodeAllocatableResourceMappings: unknown field; Kubernetes 1.36's nodeAllocatableResourceMappings is nodeAllocatableResources in 1.37: a map from the node resource name to {{mapping: {{capacityKey, capacityMultiplier}} or {{deviceMultiplier}}}} and/or {{overhead: {{perPod, perContainer}}}}"
            ),
            format!(
                "{typo}:11: ResourceClaim team/c: spec.devices.requests[0].exactly.deviceClasName: unknown field; did you mean \"deviceClassName\"?"
            ),
        ]
    );
    assert_eq!(stderr, "5 errors in 0 documents\n");
    let fine = write(
        dir.path(),
        "ns.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n",
    );
    let (code, _, stderr) = allot_with_env(&["validate", "-f", &fine], &[]);
    assert_eq!((code, stderr.as_str()), (0, "1 document valid\n"));
}
