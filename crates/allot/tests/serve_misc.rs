//! End-to-end tests of `allot serve` for issue 6: strict field validation of repeated keys in
//! request bodies (create, update, patch, server-side apply; JSON and YAML), managedFields of
//! the controllers' writes, and node agents' checkpoints across a restart, driven by a real
//! kubectl 1.37 (`kubectl create --raw` and `kubectl replace --raw` send the file's bytes as
//! they are; kubectl's own file reader drops repeats before a plain `kubectl create` sends the
//! object, as upstream's does) and raw HTTPS for the patches. kubectl comes from `ALLOT_KUBECTL`
//! or PATH; without it the tests fail and name the README's test command (`cargo xtask test`).

// Unused where tests/serve_etcd.rs includes this file (it reaches its own copy).
#[allow(dead_code)]
#[path = "support/kubectl.rs"]
mod kubectl;

#[path = "support/serve.rs"]
mod harness;

use harness::Serve;
use serde_json::Value;

include!("support/embedded.rs");

/// What these tests add to the shared harness.
trait MiscServe {
    fn request(&self, method: &str, path: &str, content_type: &str, body: &str) -> (u16, String);
    fn labels(&self, namespace: &str) -> Value;
}

impl MiscServe for Serve {
    /// A raw HTTPS request with the admin token; returns status and body.
    fn request(&self, method: &str, path: &str, content_type: &str, body: &str) -> (u16, String) {
        let header = format!("Content-Type: {content_type}");
        self.http(
            method,
            path,
            &[&header, "Accept: application/json"],
            body.as_bytes(),
        )
    }

    fn labels(&self, namespace: &str) -> Value {
        let (ok, out, err) = self.run(&["get", "namespace", namespace, "-o", "json"]);
        assert!(ok, "{err}");
        let object: Value = serde_json::from_str(&out).expect("JSON");
        object["metadata"]["labels"].clone()
    }
}

const YAML: &str = "apiVersion: v1
kind: Namespace
metadata:
  name: NAME
  labels:
    a: \"1\"
    a: \"2\"
  bogus: 1
";

const JSON: &str = r#"{"apiVersion": "v1", "kind": "Namespace",
 "metadata": {"name": "NAME", "bogus": 1, "labels": {"a": "1", "a": "2"}}}"#;

#[test]
fn repeated_keys_follow_field_validation_on_create_and_update() {
    let (_dir, serve) = start();
    // YAML: upstream's YAML reader words the repeat with its line.
    let yaml = serve.file("dup.yaml", &YAML.replace("NAME", "yaml"));
    let (ok, _, err) = serve.run(&[
        "create",
        "--raw",
        "/api/v1/namespaces?fieldValidation=Strict",
        "-f",
        &yaml,
    ]);
    assert!(!ok);
    assert!(
        err.contains(
            "Namespace in version \"v1\" cannot be handled as a Namespace: strict decoding error: \
             yaml: unmarshal errors:\n  line 7: key \"a\" already set in map, unknown field \"metadata.bogus\""
        ),
        "{err}"
    );
    let (ok, _, err) = serve.run(&[
        "create",
        "--raw",
        "/api/v1/namespaces?fieldValidation=Warn",
        "-f",
        &yaml,
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: line 7: key \"a\" already set in map\nWarning: unknown field \"metadata.bogus\""),
        "{err}"
    );
    assert_eq!(
        serve.labels("yaml"),
        serde_json::json!({"a": "2", "kubernetes.io/metadata.name": "yaml"})
    );

    // JSON: the repeat by its path, in document order among the unknown fields.
    let json = serve.file("dup.json", &JSON.replace("NAME", "json"));
    let (ok, _, err) = serve.run(&[
        "create",
        "--raw",
        "/api/v1/namespaces?fieldValidation=Strict",
        "-f",
        &json,
    ]);
    assert!(!ok);
    assert!(
        err.contains(
            "strict decoding error: unknown field \"metadata.bogus\", duplicate field \"metadata.labels.a\""
        ),
        "{err}"
    );
    let (ok, _, err) = serve.run(&[
        "create",
        "--raw",
        "/api/v1/namespaces?fieldValidation=Ignore",
        "-f",
        &json,
    ]);
    assert!(ok, "{err}");
    assert!(!err.contains("Warning"), "{err}");
    assert_eq!(
        serve.labels("json"),
        serde_json::json!({"a": "2", "kubernetes.io/metadata.name": "json"})
    );

    // Update (PUT) of the whole object.
    let put = serve.file(
        "put.json",
        r#"{"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "json", "labels": {"b": "1", "b": "3"}}}"#,
    );
    let (ok, _, err) = serve.run(&[
        "replace",
        "--raw",
        "/api/v1/namespaces/json?fieldValidation=Strict",
        "-f",
        &put,
    ]);
    assert!(!ok);
    assert!(
        err.contains("strict decoding error: duplicate field \"metadata.labels.b\""),
        "{err}"
    );
    assert_eq!(
        serve.labels("json"),
        serde_json::json!({"a": "2", "kubernetes.io/metadata.name": "json"})
    );
    let (ok, _, err) = serve.run(&[
        "replace",
        "--raw",
        "/api/v1/namespaces/json?fieldValidation=Warn",
        "-f",
        &put,
    ]);
    assert!(ok, "{err}");
    assert!(
        err.contains("Warning: duplicate field \"metadata.labels.b\""),
        "{err}"
    );
    assert_eq!(
        serve.labels("json"),
        serde_json::json!({"b": "3", "kubernetes.io/metadata.name": "json"})
    );
}

#[test]
fn repeated_keys_follow_field_validation_on_patch_and_apply() {
    let (_dir, serve) = start();
    let (ok, _, err) = serve.run(&["create", "namespace", "p"]);
    assert!(ok, "{err}");
    let patch = r#"{"metadata": {"labels": {"c": "1", "c": "2"}}}"#;
    let (code, body) = serve.request(
        "PATCH",
        "/api/v1/namespaces/p?fieldValidation=Strict",
        "application/merge-patch+json",
        patch,
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(r#"strict decoding error: duplicate field \"metadata.labels.c\""#),
        "{body}"
    );
    let (code, body) = serve.request(
        "PATCH",
        "/api/v1/namespaces/p?fieldValidation=Ignore",
        "application/strategic-merge-patch+json",
        patch,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(serve.labels("p")["c"], "2");

    // Server-side apply bodies are read as YAML upstream, JSON ones too.
    let apply = "{\"apiVersion\": \"v1\", \"kind\": \"Namespace\",\n \"metadata\": {\"name\": \"p\",\n  \"labels\": {\"d\": \"1\",\n   \"d\": \"2\"}}}";
    let (code, body) = serve.request(
        "PATCH",
        "/api/v1/namespaces/p?fieldManager=me&fieldValidation=Strict",
        "application/apply-patch+yaml",
        apply,
    );
    assert_eq!(code, 400, "{body}");
    assert!(
        body.contains(r#"yaml: unmarshal errors:\n  line 4: key \"d\" already set in map"#),
        "{body}"
    );
    let (code, body) = serve.request(
        "PATCH",
        "/api/v1/namespaces/p?fieldManager=me&fieldValidation=Ignore",
        "application/apply-patch+yaml",
        apply,
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(serve.labels("p")["d"], "2");
}

const NODE_AND_POD: &str = "apiVersion: v1
kind: Node
metadata:
  name: n1
  labels: {kubernetes.io/hostname: n1}
status:
  capacity: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
  allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}
---
apiVersion: allot.dev/v1alpha1
kind: NodeTopology
metadata:
  name: n1
cpus:
- {id: 0, core: 0, socket: 0, numa: 0}
- {id: 1, core: 1, socket: 0, numa: 0}
numaNodes:
- {id: 0, memory: 8Gi}
---
apiVersion: v1
kind: Pod
metadata:
  name: p
  namespace: default
spec:
  containers:
  - name: c
    image: x
    resources: {requests: {cpu: \"1\", memory: 1Gi}, limits: {cpu: \"1\", memory: 1Gi}}
";

#[test]
fn controller_writes_carry_managed_fields_and_server_side_apply_conflicts_with_them() {
    let (_dir, serve) = start();
    let (ok, _, err) = serve.run(&["apply", "-f", &serve.file("nodes.yaml", NODE_AND_POD)]);
    assert!(ok, "{err}");
    let (ok, _, err) = serve.run(&["wait", "pod/p", "--for=condition=Ready", "--timeout=60s"]);
    assert!(ok, "{err}");
    let (ok, out, err) = serve.run(&["get", "pod", "p", "-o", "json", "--show-managed-fields"]);
    assert!(ok, "{err}");
    let pod: Value = serde_json::from_str(&out).expect("JSON");
    let entries = pod["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields");
    let entry = |manager: &str, subresource: &str| {
        entries
            .iter()
            .find(|e| {
                e["manager"] == manager
                    && e["subresource"].as_str().unwrap_or_default() == subresource
            })
            .unwrap_or_else(|| panic!("no {manager} {subresource:?} entry: {entries:#?}"))
            .clone()
    };
    let scheduler = entry("kube-scheduler", "");
    assert_eq!(scheduler["operation"], "Update");
    assert_eq!(scheduler["fieldsType"], "FieldsV1");
    assert!(scheduler["time"].as_str().is_some_and(|t| t.ends_with('Z')));
    assert_eq!(
        scheduler["fieldsV1"]["f:spec"]["f:nodeName"],
        serde_json::json!({})
    );
    let scheduled = entry("kube-scheduler", "status");
    assert!(
        scheduled["fieldsV1"]["f:status"]["f:conditions"]
            .get(r#"k:{"type":"PodScheduled"}"#)
            .is_some(),
        "{scheduled}"
    );
    let kubelet = entry("kubelet", "status");
    assert!(
        kubelet["fieldsV1"]["f:status"].get("f:phase").is_some(),
        "{kubelet}"
    );
    // The user's create stays the user's.
    entry("kubectl-client-side-apply", "");

    // A user's server-side apply of a field the scheduler owns conflicts, as upstream.
    let apply = serve.file(
        "ssa.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: default\nstatus:\n  conditions:\n  - type: PodScheduled\n    status: \"False\"\n",
    );
    let (ok, _, err) = serve.run(&[
        "apply",
        "--server-side",
        "--field-manager=me",
        "--subresource=status",
        "-f",
        &apply,
    ]);
    assert!(!ok);
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kube-scheduler\" with subresource \"status\" using v1: .status.conditions[type=\"PodScheduled\"].status"
        ),
        "{err}"
    );
}

/// A pod's exclusive CPUs as its node agent reports them (the pod resources annotation).
fn cpu_ids(serve: &Serve, pod: &str) -> Value {
    let (ok, out, err) = serve.run(&[
        "get",
        "pod",
        pod,
        "-o",
        "jsonpath={.metadata.annotations.allot\\.dev/resources}",
    ]);
    assert!(ok, "{err}");
    let resources: Value = serde_json::from_str(&out).expect("annotation JSON");
    resources["containers"][0]["cpuIds"].clone()
}

#[test]
fn exclusive_cpus_of_running_pods_survive_a_restart() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("kubelet.yaml");
    std::fs::write(
        &config,
        "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncpuManagerPolicy: static\nreservedSystemCPUs: \"0\"\n",
    )
    .expect("writes");
    let config = config.to_string_lossy().into_owned();
    let data = dir.path().join("data");
    let extra = ["--kubelet-config", config.as_str()];
    let serve = start_on(&data, &kubectl, &extra);
    let node = NODE_AND_POD
        .split("---")
        .next()
        .expect("the Node")
        .to_string()
        + "---\napiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: n1\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n- {id: 1, core: 1, socket: 0, numa: 0}\n- {id: 2, core: 2, socket: 0, numa: 0}\n- {id: 3, core: 3, socket: 0, numa: 0}\nnumaNodes:\n- {id: 0, memory: 8Gi}\n";
    let (ok, _, err) = serve.run(&["apply", "-f", &serve.file("node.yaml", &node)]);
    assert!(ok, "{err}");
    let pod = |name: &str| {
        format!(
            "apiVersion: v1\nkind: Pod\nmetadata:\n  name: {name}\n  namespace: default\nspec:\n  containers:\n  - name: c\n    image: x\n    resources: {{requests: {{cpu: \"1\", memory: 1Gi}}, limits: {{cpu: \"1\", memory: 1Gi}}}}\n"
        )
    };
    // a takes CPU 1, b CPU 2; a goes, so a kubelet without its checkpoint would give b CPU 1.
    for name in ["a", "b"] {
        let (ok, _, err) = serve.run(&["apply", "-f", &serve.file("pod.yaml", &pod(name))]);
        assert!(ok, "{err}");
        let (ok, _, err) = serve.run(&[
            "wait",
            &format!("pod/{name}"),
            "--for=condition=Ready",
            "--timeout=60s",
        ]);
        assert!(ok, "{err}");
    }
    assert_eq!(cpu_ids(&serve, "a"), serde_json::json!([1]));
    assert_eq!(cpu_ids(&serve, "b"), serde_json::json!([2]));
    let (ok, _, err) = serve.run(&["delete", "pod", "a", "--wait=true"]);
    assert!(ok, "{err}");
    // The checkpoint no longer holds a (written before the store's writes are persisted).
    let checkpoint = data.join("nodes/n1/cpu_manager_state");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&checkpoint).unwrap_or_default();
        if text.contains("\"defaultCpuSet\":\"0-1,3\"") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "checkpoint: {text}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(data.join("nodes/n1/memory_manager_state").exists());
    drop(serve);

    let serve = start_on(&data, &kubectl, &extra);
    // The restarted agent re-admits b with the CPU its checkpoint holds; give it a few ticks.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let (ok, _, err) = serve.run(&["wait", "pod/b", "--for=condition=Ready", "--timeout=60s"]);
    assert!(ok, "{err}");
    assert_eq!(cpu_ids(&serve, "b"), serde_json::json!([2]));
    // A new pod gets a free CPU, not b's.
    let (ok, _, err) = serve.run(&["apply", "-f", &serve.file("pod.yaml", &pod("c"))]);
    assert!(ok, "{err}");
    let (ok, _, err) = serve.run(&["wait", "pod/c", "--for=condition=Ready", "--timeout=60s"]);
    assert!(ok, "{err}");
    assert_eq!(cpu_ids(&serve, "c"), serde_json::json!([1]));
}
