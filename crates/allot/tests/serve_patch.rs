//! End-to-end tests of `allot serve`'s write paths driven by a real kubectl 1.37: client-side
//! apply (strategic merge patch with the last-applied annotation), `kubectl patch` with every
//! patch type, server-side apply with conflicts and `--force-conflicts`, server dry runs of every
//! verb, field validation (Strict, Warn, Ignore), namespace deletion, and claims going with their
//! pod. kubectl comes from `ALLOT_KUBECTL` or PATH; without it the tests fail and name the
//! README's test command (`cargo xtask test`).

// Unused where tests/serve_etcd.rs includes this file (it reaches its own copy).
#[path = "support/serve.rs"]
mod harness;
#[allow(dead_code)]
#[path = "support/kubectl.rs"]
mod kubectl;

use harness::{Serve, wait_for};
use serde_json::Value;

include!("support/embedded.rs");

fn names(list: &Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn managers(object: &Value) -> Vec<(String, String)> {
    object["metadata"]["managedFields"]
        .as_array()
        .map(|entries| {
            entries
                .iter()
                .map(|e| {
                    (
                        e["manager"].as_str().unwrap_or_default().to_string(),
                        e["operation"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

const POD_V1: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: app
    image: app:1
    env:
    - name: A
      value: a
    - name: B
      value: b
  - name: side
    image: side:1
";

// Pod specs are immutable but for images (and a few fields): the second version changes
// only the images.
const POD_V2: &str = "apiVersion: v1
kind: Pod
metadata:
  name: web
  labels:
    app: web
spec:
  containers:
  - name: app
    image: app:2
    env:
    - name: A
      value: a
    - name: B
      value: b
  - name: side
    image: side:2
";

#[test]
fn client_side_apply_and_every_patch_type() {
    let (_dir, serve) = start();
    let v1 = serve.file("pod-v1.yaml", POD_V1);
    let out = serve.ok(&["apply", "-f", &v1]);
    assert!(out.contains("pod/web created"), "{out}");
    // A label set by someone else survives the next apply (three-way merge).
    serve.ok(&["label", "pod", "web", "owner=ops"]);
    let v2 = serve.file("pod-v2.yaml", POD_V2);
    let out = serve.ok(&["apply", "-f", &v2]);
    assert!(out.contains("pod/web configured"), "{out}");
    let pod = serve.json(&["get", "pod", "web", "--show-managed-fields"]);
    let containers = &pod["spec"]["containers"];
    assert_eq!(names(containers), ["app", "side"], "{pod}");
    assert_eq!(containers[0]["image"], "app:2");
    assert_eq!(containers[1]["image"], "side:2");
    assert_eq!(names(&containers[0]["env"]), ["A", "B"], "{pod}");
    assert_eq!(pod["metadata"]["labels"]["owner"], "ops", "{pod}");
    let who = managers(&pod);
    for want in [
        ("kubectl-client-side-apply", "Update"),
        ("kubectl-label", "Update"),
    ] {
        assert!(
            who.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} missing in {who:?}"
        );
    }
    let entry = pod["metadata"]["managedFields"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["manager"] == "kubectl-label"))
        .expect("kubectl-label entry");
    assert_eq!(entry["fieldsType"], "FieldsV1");
    assert!(
        entry["fieldsV1"]["f:metadata"]["f:labels"]
            .get("f:owner")
            .is_some(),
        "{entry}"
    );
    // A client may replace managedFields (here: keep only kubectl-label's entry) or reset them
    // with a single empty entry.
    let label_only = serde_json::json!([entry]);
    serve.ok(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        &serde_json::json!([{"op": "replace", "path": "/metadata/managedFields", "value": label_only}])
            .to_string(),
    ]);
    let pod = serve.json(&["get", "pod", "web", "--show-managed-fields"]);
    assert_eq!(
        managers(&pod),
        [("kubectl-label".to_string(), "Update".to_string())],
        "{pod}"
    );
    serve.ok(&[
        "patch",
        "pod",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"managedFields":[{}]}}"#,
    ]);
    let pod = serve.json(&["get", "pod", "web", "--show-managed-fields"]);
    assert!(pod["metadata"].get("managedFields").is_none(), "{pod}");
    // Applying the same file again changes nothing.
    let out = serve.ok(&["apply", "-f", &v2]);
    assert!(out.contains("pod/web unchanged"), "{out}");
    // kubectl patch: strategic (the default) merging one container by its key, merge, and
    // JSON patch.
    serve.ok(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"containers":[{"name":"side","image":"side:3"}]}}"#,
    ]);
    // A delete directive that would change a container's env is refused (pod specs are
    // immutable but for images), as upstream refuses it.
    let err = serve.fails(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"containers":[{"name":"app","env":[{"name":"A","$patch":"delete"}]}]}}"#,
    ]);
    assert!(
        err.contains("pod updates may not change fields other than"),
        "{err}"
    );
    serve.ok(&[
        "patch",
        "pod",
        "web",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"owner":null,"tier":"front"}}}"#,
    ]);
    serve.ok(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/metadata/labels/tier","value":"front"},{"op":"add","path":"/metadata/annotations","value":{"note":"json"}}]"#,
    ]);
    let pod = serve.json(&["get", "pod", "web"]);
    assert_eq!(
        names(&pod["spec"]["containers"][0]["env"]),
        ["A", "B"],
        "{pod}"
    );
    assert_eq!(names(&pod["spec"]["containers"]), ["app", "side"], "{pod}");
    assert_eq!(pod["spec"]["containers"][1]["image"], "side:3", "{pod}");
    assert_eq!(
        pod["metadata"]["labels"],
        serde_json::json!({"app": "web", "tier": "front"})
    );
    assert_eq!(pod["metadata"]["annotations"]["note"], "json");
    // A JSON patch whose test fails is refused with 422 and changes nothing.
    let err = serve.fails(&[
        "patch",
        "pod",
        "web",
        "--type=json",
        "-p",
        r#"[{"op":"test","path":"/metadata/labels/tier","value":"back"},{"op":"remove","path":"/metadata/labels"}]"#,
    ]);
    assert!(err.contains("test failed"), "{err}");
    // A strategic patch without the merge key is a bad request.
    let err = serve.fails(&[
        "patch",
        "pod",
        "web",
        "-p",
        r#"{"spec":{"containers":[{"image":"x"}]}}"#,
    ]);
    assert!(
        err.contains("does not contain declared merge key: name"),
        "{err}"
    );
}

const CLASS_ALICE: &str = "apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
  labels:
    team: alice
    tier: gold
spec:
  selectors:
  - cel:
      expression: device.driver == \"gpu.example.com\"
";

const CLASS_BOB: &str = "apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata:
  name: gpu.example.com
spec:
  selectors:
  - cel:
      expression: device.driver == \"other.example.com\"
";

#[test]
fn server_side_apply_conflicts_and_force() {
    let (_dir, serve) = start();
    let alice = serve.file("alice.yaml", CLASS_ALICE);
    let out = serve.ok(&[
        "apply",
        "--server-side",
        "--field-manager=alice",
        "-f",
        &alice,
    ]);
    assert!(out.contains("serverside-applied"), "{out}");
    let class = serve.json(&[
        "get",
        "deviceclass",
        "gpu.example.com",
        "--show-managed-fields",
    ]);
    let entries = class["metadata"]["managedFields"]
        .as_array()
        .expect("managedFields");
    assert_eq!(entries.len(), 1, "{class}");
    assert_eq!(entries[0]["manager"], "alice");
    assert_eq!(entries[0]["operation"], "Apply");
    assert_eq!(entries[0]["fieldsType"], "FieldsV1");
    assert_eq!(
        entries[0]["fieldsV1"],
        serde_json::json!({
            "f:metadata": {"f:labels": {"f:team": {}, "f:tier": {}}},
            "f:spec": {"f:selectors": {}}
        })
    );
    // Another manager changing alice's field conflicts, with upstream's message.
    let bob = serve.file("bob.yaml", CLASS_BOB);
    let err = serve.fails(&["apply", "--server-side", "--field-manager=bob", "-f", &bob]);
    assert!(
        err.contains("Apply failed with 1 conflict: conflict with \"alice\": .spec.selectors"),
        "{err}"
    );
    let class = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    assert!(
        class["spec"]["selectors"][0]["cel"]["expression"]
            .as_str()
            .is_some_and(|e| e.contains("gpu.example.com")),
        "{class}"
    );
    // --force-conflicts takes the field.
    serve.ok(&[
        "apply",
        "--server-side",
        "--field-manager=bob",
        "--force-conflicts",
        "-f",
        &bob,
    ]);
    let class = serve.json(&[
        "get",
        "deviceclass",
        "gpu.example.com",
        "--show-managed-fields",
    ]);
    assert!(
        class["spec"]["selectors"][0]["cel"]["expression"]
            .as_str()
            .is_some_and(|e| e.contains("other.example.com")),
        "{class}"
    );
    let fields_of = |manager: &str| {
        class["metadata"]["managedFields"]
            .as_array()
            .and_then(|e| e.iter().find(|e| e["manager"] == manager))
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or_default()
    };
    assert!(fields_of("alice")["f:spec"].is_null(), "{class}");
    assert!(
        !fields_of("bob")["f:spec"]["f:selectors"].is_null(),
        "{class}"
    );
    // Alice drops a label from her configuration: it goes (nobody else owns it).
    let alice_less = serve.file(
        "alice-less.yaml",
        &CLASS_ALICE.replace("    tier: gold\n", ""),
    );
    serve.ok(&[
        "apply",
        "--server-side",
        "--field-manager=alice",
        "--force-conflicts",
        "-f",
        &alice_less,
    ]);
    let class = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    assert_eq!(
        class["metadata"]["labels"],
        serde_json::json!({"team": "alice"}),
        "{class}"
    );
    // Fields set by a client-side apply (an Update) conflict too, named with their API version.
    let csa = serve.file(
        "csa.yaml",
        &CLASS_BOB.replace("gpu.example.com\n", "csa.example.com\n"),
    );
    serve.ok(&["apply", "-f", &csa]);
    let ssa = serve.file(
        "ssa.yaml",
        &CLASS_BOB
            .replace("gpu.example.com\n", "csa.example.com\n")
            .replace("other.example.com", "third.example.com"),
    );
    let err = serve.fails(&[
        "apply",
        "--server-side",
        "--field-manager=carol",
        "-f",
        &ssa,
    ]);
    assert!(
        err.contains(
            "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using resource.k8s.io/v1: .spec.selectors"
        ),
        "{err}"
    );
    // Keyed lists merge by key: a second manager takes over one container of alice's pod
    // (its image: pod specs are immutable but for images), the other stays.
    let pod_alice = serve.file(
        "pod-alice.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: shared\nspec:\n  containers:\n  - name: app\n    image: app:1\n  - name: side\n    image: side:1\n",
    );
    let pod_bob = serve.file(
        "pod-bob.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: shared\nspec:\n  containers:\n  - name: side\n    image: side:2\n",
    );
    serve.ok(&[
        "apply",
        "--server-side",
        "--field-manager=alice",
        "-f",
        &pod_alice,
    ]);
    serve.ok(&[
        "apply",
        "--server-side",
        "--field-manager=bob",
        "--force-conflicts",
        "-f",
        &pod_bob,
    ]);
    let pod = serve.json(&["get", "pod", "shared"]);
    assert_eq!(names(&pod["spec"]["containers"]), ["app", "side"], "{pod}");
    assert_eq!(pod["spec"]["containers"][1]["image"], "side:2", "{pod}");
}

#[test]
fn client_side_apply_upgrades_to_server_side_apply() {
    let (_dir, serve) = start();
    let v1 = serve.file("class-v1.yaml", CLASS_ALICE);
    serve.ok(&["apply", "-f", &v1]);
    // kubectl apply --server-side (manager "kubectl") takes over the fields of the
    // last-applied configuration without conflicts, and keeps the annotation in step.
    let v2 = serve.file(
        "class-v2.yaml",
        &CLASS_ALICE.replace("tier: gold", "tier: silver"),
    );
    let out = serve.ok(&["apply", "--server-side", "-f", &v2]);
    assert!(out.contains("serverside-applied"), "{out}");
    let class = serve.json(&[
        "get",
        "deviceclass",
        "gpu.example.com",
        "--show-managed-fields",
    ]);
    assert_eq!(class["metadata"]["labels"]["tier"], "silver", "{class}");
    let last = class["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_default();
    assert!(last.contains("silver"), "{last}");
    assert!(
        managers(&class).contains(&("kubectl".to_string(), "Apply".to_string())),
        "{class}"
    );
    // And back: a client-side apply still computes its patch from the annotation.
    let v3 = serve.file(
        "class-v3.yaml",
        &CLASS_ALICE.replace("    tier: gold\n", ""),
    );
    serve.ok(&["apply", "-f", &v3]);
    let class = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    assert_eq!(
        class["metadata"]["labels"],
        serde_json::json!({"team": "alice"}),
        "{class}"
    );
}

#[test]
fn server_dry_run_persists_nothing() {
    let (_dir, serve) = start();
    let alice = serve.file("class.yaml", CLASS_ALICE);
    let out = serve.ok(&["create", "--dry-run=server", "-f", &alice]);
    assert!(out.contains("(server dry run)"), "{out}");
    assert!(
        serve
            .fails(&["get", "deviceclass", "gpu.example.com"])
            .contains("NotFound")
    );
    let out = serve.ok(&["apply", "--server-side", "--dry-run=server", "-f", &alice]);
    assert!(out.contains("(server dry run)"), "{out}");
    assert!(
        serve
            .fails(&["get", "deviceclass", "gpu.example.com"])
            .contains("NotFound")
    );
    serve.ok(&["apply", "-f", &alice]);
    let before = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    let out = serve.ok(&[
        "label",
        "--dry-run=server",
        "deviceclass",
        "gpu.example.com",
        "extra=yes",
    ]);
    assert!(out.contains("(server dry run)"), "{out}");
    let out = serve.ok(&[
        "patch",
        "--dry-run=server",
        "deviceclass",
        "gpu.example.com",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/labels"}]"#,
    ]);
    // kubectl patch prints no dry-run suffix; the object below shows nothing changed.
    assert!(out.contains("patched"), "{out}");
    let replaced = serve.file(
        "replaced.yaml",
        &CLASS_ALICE.replace("team: alice", "team: carol"),
    );
    let out = serve.ok(&["replace", "--dry-run=server", "-f", &replaced]);
    assert!(out.contains("(server dry run)"), "{out}");
    let out = serve.ok(&[
        "delete",
        "--dry-run=server",
        "deviceclass",
        "gpu.example.com",
    ]);
    assert!(out.contains("(server dry run)"), "{out}");
    // A stale precondition is a conflict.
    let uid = before["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let body = format!(
        r#"{{"kind":"DeleteOptions","apiVersion":"v1","preconditions":{{"uid":"{uid}x"}}}}"#
    );
    let body_file = serve.file("delete-options.json", &body);
    let err = serve.fails(&[
        "delete",
        "--raw",
        "/apis/resource.k8s.io/v1/deviceclasses/gpu.example.com",
        "-f",
        &body_file,
    ]);
    assert!(
        err.contains("Precondition failed: UID in precondition"),
        "{err}"
    );
    let after = serve.json(&["get", "deviceclass", "gpu.example.com"]);
    assert_eq!(before, after);
    // kubectl diff shows only the change (a dry run keeps the resourceVersion).
    let out = serve.kubectl(&["diff", "-f", &replaced]);
    let diff = String::from_utf8_lossy(&out.stdout);
    assert!(
        diff.contains("-    team: alice") && diff.contains("+    team: carol"),
        "{diff}"
    );
    assert!(
        !diff.lines().any(
            |l| (l.starts_with("-  ") || l.starts_with("+  ")) && l.contains("resourceVersion")
        ),
        "{diff}"
    );
}

#[test]
fn field_validation_strict_warn_ignore() {
    let (_dir, serve) = start();
    let text = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: NAME\n  colour: red\nspec:\n  selectorz: []\n";
    let strict = serve.file("strict.yaml", &text.replace("NAME", "strict"));
    let err = serve.fails(&["create", "-f", &strict]);
    assert!(
        err.contains("DeviceClass in version \"v1\" cannot be handled as a DeviceClass: strict decoding error: unknown field \"metadata.colour\", unknown field \"spec.selectorz\""),
        "{err}"
    );
    let warn = serve.file("warn.yaml", &text.replace("NAME", "warn"));
    let (_, stderr) = serve.ok_with_stderr(&["create", "--validate=warn", "-f", &warn]);
    assert!(
        stderr.contains("Warning: unknown field \"metadata.colour\"")
            && stderr.contains("Warning: unknown field \"spec.selectorz\""),
        "{stderr}"
    );
    let ignore = serve.file("ignore.yaml", &text.replace("NAME", "ignore"));
    let (_, stderr) = serve.ok_with_stderr(&["create", "--validate=ignore", "-f", &ignore]);
    assert!(!stderr.contains("Warning"), "{stderr}");
    let class = serve.json(&["get", "deviceclass", "ignore"]);
    assert!(class["spec"].get("selectorz").is_none(), "{class}");
}

const TEMPLATE: &str = "apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata:
  name: one-gpu
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly:
          deviceClassName: gpu.example.com
";

const POD_WITH_CLAIM: &str = "apiVersion: v1
kind: Pod
metadata:
  name: NAME
spec:
  containers:
  - name: app
    image: app:1
    resources:
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimTemplateName: one-gpu
";

fn claim_names(serve: &Serve, namespace: &str) -> Vec<String> {
    let list = serve.json(&["get", "resourceclaims", "-n", namespace]);
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["metadata"]["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn deleting_a_pod_removes_its_generated_claims() {
    let (_dir, serve) = start();
    serve.ok(&["create", "namespace", "apps"]);
    let template = serve.file("template.yaml", TEMPLATE);
    serve.ok(&["apply", "-n", "apps", "-f", &template]);
    let pod = serve.file("pod.yaml", &POD_WITH_CLAIM.replace("NAME", "worker"));
    serve.ok(&["apply", "-n", "apps", "-f", &pod]);
    wait_for("the generated claim", || {
        claim_names(&serve, "apps")
            .iter()
            .any(|n| n.starts_with("worker-gpu-"))
    });
    serve.ok(&["delete", "pod", "worker", "-n", "apps"]);
    wait_for("the generated claim to go", || {
        claim_names(&serve, "apps").is_empty()
    });
}

#[test]
fn namespace_deletion_terminates_cascades_and_waits_for_finalizers() {
    let (_dir, serve) = start();
    let err = serve.fails(&["delete", "namespace", "default"]);
    assert!(
        err.contains("namespaces \"default\" is forbidden: this namespace may not be deleted"),
        "{err}"
    );
    serve.ok(&["create", "namespace", "team"]);
    let ns = serve.json(&["get", "namespace", "team"]);
    assert_eq!(
        ns["spec"]["finalizers"],
        serde_json::json!(["kubernetes"]),
        "{ns}"
    );
    assert_eq!(ns["status"]["phase"], "Active", "{ns}");
    // An update cannot drop the finalizer (only the namespace controller does).
    let bare = serve.file(
        "team.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: team\n  labels:\n    t: x\n",
    );
    serve.ok(&["replace", "-f", &bare]);
    let ns = serve.json(&["get", "namespace", "team"]);
    assert_eq!(
        ns["spec"]["finalizers"],
        serde_json::json!(["kubernetes"]),
        "{ns}"
    );
    assert_eq!(ns["metadata"]["labels"]["t"], "x", "{ns}");
    let template = serve.file("template.yaml", TEMPLATE);
    serve.ok(&["apply", "-n", "team", "-f", &template]);
    let pod = serve.file("pod.yaml", &POD_WITH_CLAIM.replace("NAME", "worker"));
    serve.ok(&["apply", "-n", "team", "-f", &pod]);
    let kept = serve.file(
        "kept.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: kept\n  finalizers:\n  - example.com/keep\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n",
    );
    serve.ok(&["apply", "-n", "team", "-f", &kept]);
    let out = serve.ok(&["delete", "namespace", "team", "--wait=false"]);
    assert!(out.contains("namespace \"team\" deleted"), "{out}");
    let ns = serve.json(&["get", "namespace", "team"]);
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    // Content goes, except what has finalizers; the namespace says why it waits.
    wait_for(
        "the pod, the template and the generated claim to go",
        || {
            let pods = serve.json(&["get", "pods", "-n", "team"]);
            let templates = serve.json(&["get", "resourceclaimtemplates", "-n", "team"]);
            pods["items"].as_array().is_some_and(Vec::is_empty)
                && templates["items"].as_array().is_some_and(Vec::is_empty)
                && claim_names(&serve, "team") == ["kept"]
        },
    );
    let claim = serve.json(&["get", "resourceclaim", "kept", "-n", "team"]);
    assert!(
        claim["metadata"]["deletionTimestamp"].is_string(),
        "{claim}"
    );
    wait_for("the finalizers condition", || {
        let ns = serve.json(&["get", "namespace", "team"]);
        ns["status"]["conditions"].as_array().is_some_and(|c| {
            c.iter().any(|c| {
                c["type"] == "NamespaceFinalizersRemaining"
                    && c["status"] == "True"
                    && c["message"]
                        == "Some content in the namespace has finalizers remaining: example.com/keep in 1 resource instances"
            })
        })
    });
    // Nothing new in a terminating namespace.
    let other = serve.file("other.yaml", &POD_WITH_CLAIM.replace("NAME", "late"));
    let err = serve.fails(&["create", "-n", "team", "-f", &other]);
    assert!(
        err.contains(
            "unable to create new content in namespace team because it is being terminated"
        ),
        "{err}"
    );
    // The finalizer goes: the claim, then the namespace. The patch removes the claim's last
    // finalizer and so deletes it, two changes in one write that may have to be rebased onto
    // the namespace controller's or a Lease renewal's write on etcd: it goes through at once.
    serve.ok(&[
        "patch",
        "resourceclaim",
        "kept",
        "-n",
        "team",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ]);
    wait_for("the namespace to go", || {
        serve.kubectl(&["get", "namespace", "team"]).status.code() == Some(1)
    });
    let err = serve.fails(&["get", "namespace", "team"]);
    assert!(err.contains("NotFound"), "{err}");
}

const BOUND_POD: &str = "apiVersion: v1
kind: Pod
metadata:
  name: bound
spec:
  nodeName: n1
  containers:
  - name: app
    image: app:1
    resources:
      requests:
        cpu: \"1\"
      claims:
      - name: gpu
  resourceClaims:
  - name: gpu
    resourceClaimName: gpu-claim
  tolerations:
  - key: k
    operator: Exists
";

const CLAIM: &str = "apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata:
  name: gpu-claim
spec:
  devices:
    requests:
    - name: gpu
      exactly:
        deviceClassName: gpu.example.com
        allocationMode: ExactCount
        count: 1
";

const POD_REFUSED: &str = "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

const CLAIM_REFUSED: &str = "spec: Forbidden: field is immutable";

/// Issue 15 item 4: pod and claim specs are as immutable as upstream makes them, through
/// every patch type, PUT and server-side apply; the changes upstream allows still work.
#[test]
fn specs_are_immutable_as_upstream() {
    let (_dir, serve) = start();
    serve.ok(&["apply", "-f", &serve.file("pod.yaml", BOUND_POD)]);
    serve.ok(&["apply", "-f", &serve.file("claim.yaml", CLAIM)]);
    let patch = |kind: &str, name: &str, patch_type: &str, body: &str| {
        serve.fails(&[
            "patch",
            kind,
            name,
            &format!("--type={patch_type}"),
            "-p",
            body,
        ])
    };
    // Moving a bound pod, dropping its claims, adding a container, changing requests.
    let err = patch("pod", "bound", "merge", r#"{"spec":{"nodeName":"n2"}}"#);
    assert!(
        err.contains(&format!("The Pod \"bound\" is invalid: {POD_REFUSED}")),
        "{err}"
    );
    assert!(
        err.contains("- spec.nodeName: \"n1\"") && err.contains("+ spec.nodeName: \"n2\""),
        "{err}"
    );
    // (With the claim gone, the container's reference to it dangles too: both errors, as
    // upstream reports both.)
    let err = patch(
        "pod",
        "bound",
        "merge",
        r#"{"spec":{"resourceClaims":null}}"#,
    );
    assert!(
        err.contains("spec.containers[0].resources.claims[0].name: Not found: \"gpu\"")
            && err.contains(POD_REFUSED),
        "{err}"
    );
    let err = patch(
        "pod",
        "bound",
        "strategic",
        r#"{"spec":{"containers":[{"name":"extra","image":"x"}]}}"#,
    );
    assert!(
        err.contains("spec.containers: Forbidden: pod updates may not add or remove containers"),
        "{err}"
    );
    let err = patch(
        "pod",
        "bound",
        "json",
        r#"[{"op":"replace","path":"/spec/containers/0/resources/requests/cpu","value":"2"}]"#,
    );
    assert!(err.contains(POD_REFUSED), "{err}");
    // PUT and server-side apply are refused the same way.
    let mut moved = serve.json(&["get", "pod", "bound"]);
    moved["spec"]["nodeName"] = Value::from("n2");
    let moved = serve.file("moved.json", &moved.to_string());
    let err = serve.fails(&["replace", "-f", &moved]);
    assert!(err.contains(POD_REFUSED), "{err}");
    let err = serve.fails(&[
        "apply",
        "--server-side",
        "--force-conflicts",
        "-f",
        &serve.file(
            "pod-n2.yaml",
            &BOUND_POD.replace("nodeName: n1", "nodeName: n2"),
        ),
    ]);
    assert!(
        err.contains("pod updates may not change fields other than"),
        "{err}"
    );
    // The answer is 422 Invalid with the field, as kube-apiserver's.
    let (code, body) = serve.http(
        "PATCH",
        "/api/v1/namespaces/default/pods/bound",
        &["Content-Type: application/merge-patch+json"],
        br#"{"spec":{"nodeName":"n2"}}"#,
    );
    let status: Value = serde_json::from_str(&body).expect("a Status");
    assert_eq!(code, 422, "{body}");
    assert_eq!(status["reason"], "Invalid", "{body}");
    assert_eq!(status["details"]["causes"][0]["field"], "spec", "{body}");
    assert_eq!(
        status["details"]["causes"][0]["reason"], "FieldValueForbidden",
        "{body}"
    );
    // What upstream allows still works: images, labels, added tolerations, a deadline.
    serve.ok(&[
        "patch",
        "pod",
        "bound",
        "-p",
        r#"{"spec":{"containers":[{"name":"app","image":"app:2"}]}}"#,
    ]);
    serve.ok(&["label", "pod", "bound", "tier=gpu"]);
    serve.ok(&[
        "patch",
        "pod",
        "bound",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/spec/tolerations/-","value":{"key":"other","operator":"Exists"}},{"op":"add","path":"/spec/activeDeadlineSeconds","value":600}]"#,
    ]);
    let pod = serve.json(&["get", "pod", "bound"]);
    assert_eq!(pod["spec"]["nodeName"], "n1", "{pod}");
    assert_eq!(pod["spec"]["containers"][0]["image"], "app:2", "{pod}");
    assert_eq!(pod["spec"]["tolerations"][1]["key"], "other", "{pod}");
    assert_eq!(pod["spec"]["activeDeadlineSeconds"], 600, "{pod}");
    assert_eq!(pod["metadata"]["labels"]["tier"], "gpu", "{pod}");
    // The claim, allocated: its spec cannot change by any patch type.
    serve.ok(&[
        "patch",
        "resourceclaim",
        "gpu-claim",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"allocation":{"devices":{"results":[{"request":"gpu","driver":"gpu.example.com","pool":"n1","device":"gpu-0"}]}}}}"#,
    ]);
    for (patch_type, body) in [
        (
            "merge",
            r#"{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"other.example.com","allocationMode":"ExactCount","count":1}}]}}}"#,
        ),
        (
            "json",
            r#"[{"op":"replace","path":"/spec/devices/requests/0/exactly/allocationMode","value":"All"},{"op":"remove","path":"/spec/devices/requests/0/exactly/count"}]"#,
        ),
        ("strategic", r#"{"spec":{"$patch":"delete"}}"#),
        ("merge", r#"{"spec":null}"#),
        ("json", r#"[{"op":"remove","path":"/spec"}]"#),
    ] {
        let err = patch("resourceclaim", "gpu-claim", patch_type, body);
        assert!(
            err.contains("The ResourceClaim \"gpu-claim\" is invalid: ")
                && err.contains(CLAIM_REFUSED),
            "{patch_type} {body}: {err}"
        );
    }
    // Its allocation is set once; labels still change.
    let err = serve.fails(&[
        "patch",
        "resourceclaim",
        "gpu-claim",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/status/allocation/devices/results/0/device","value":"gpu-1"}]"#,
    ]);
    assert!(
        err.contains("status.allocation: Invalid value: null: field cannot be modified once set"),
        "{err}"
    );
    serve.ok(&["label", "resourceclaim", "gpu-claim", "tier=gpu"]);
    let claim = serve.json(&["get", "resourceclaim", "gpu-claim"]);
    assert_eq!(
        claim["spec"]["devices"]["requests"][0]["exactly"]["deviceClassName"], "gpu.example.com",
        "{claim}"
    );
    assert_eq!(
        claim["status"]["allocation"]["devices"]["results"][0]["device"], "gpu-0",
        "{claim}"
    );
}
