//! End-to-end tests of `allot serve` security with a real kubectl 1.37 (`ALLOT_KUBECTL`, or
//! `kubectl` on PATH): TLS with the written kubeconfig unmodified, bearer tokens (401 for a bad
//! one), RBAC (403 worded as upstream, grants through Roles and bindings, no escalation),
//! ResourcePoolStatusRequests only with an explicit grant, adminAccess only in labelled
//! namespaces, and DRA's granular ResourceClaim status authorization.

#[path = "support/serve.rs"]
mod harness;

#[path = "support/kubectl.rs"]
mod kubectl;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use harness::{Serve, https};
use serde_json::{Value, json};

/// The users of every test: token, name, groups.
const TOKENS: &str = "admin-token,admin,0,\"system:masters\"\n\
bob-token,bob,1\n\
carol-token,carol,2,\"dev\"\n\
sched-token,scheduler,3\n\
driver-token,driver,4\n";

/// Starts `allot serve` on DIR/data with the test users (`tokens`: an explicit tokens file, or
/// the default DATA_DIR/tokens.csv).
fn start(dir: &Path, kubectl: &Path, tokens: bool) -> Serve {
    let mut args = Vec::new();
    if tokens {
        let file = dir.join("users.csv");
        std::fs::write(&file, TOKENS).expect("writes tokens");
        args.push("--token-auth-file".to_string());
        args.push(file.display().to_string());
    }
    Serve::start(&dir.join("data"), kubectl, &args)
}

/// What these tests add to the shared harness: manifests from stdin, JSON over raw HTTPS.
trait AuthServe {
    fn apply(&self, token: Option<&str>, yaml: &str) -> Output;
    fn create(&self, token: Option<&str>, yaml: &str);
    fn create_fails(&self, token: Option<&str>, yaml: &str) -> String;
    fn https(&self, token: Option<&str>, method: &str, path: &str, body: &Value) -> (u16, Value);
}

impl AuthServe for Serve {
    /// `kubectl create -f -` as `token`'s user with `yaml` on stdin.
    fn apply(&self, token: Option<&str>, yaml: &str) -> Output {
        let mut child = self
            .kubectl_command_as(token, &["create", "-f", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("kubectl runs");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(yaml.as_bytes())
            .expect("writes");
        child.wait_with_output().expect("kubectl ends")
    }

    fn create(&self, token: Option<&str>, yaml: &str) {
        let out = self.apply(token, yaml);
        assert!(
            out.status.success(),
            "kubectl create as {token:?} failed: {}\n{yaml}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn create_fails(&self, token: Option<&str>, yaml: &str) -> String {
        let out = self.apply(token, yaml);
        assert!(
            !out.status.success(),
            "kubectl create as {token:?} should fail:\n{yaml}"
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn https(&self, token: Option<&str>, method: &str, path: &str, body: &Value) -> (u16, Value) {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            serde_json::to_vec(body).expect("json")
        };
        let (code, text) = self.http_as(
            token,
            method,
            path,
            &["Content-Type: application/json", "Accept: application/json"],
            &bytes,
        );
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (code, value)
    }
}

fn namespace(name: &str, admin_access: bool) -> String {
    let labels = if admin_access {
        "  labels:\n    resource.kubernetes.io/admin-access: \"true\"\n"
    } else {
        ""
    };
    format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n{labels}")
}

#[test]
fn tls_kubeconfig_and_bearer_tokens() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, false);
    // The kubeconfig works unmodified: https, the CA inline, the admin token.
    let kubeconfig = std::fs::read_to_string(&serve.kubeconfig).expect("kubeconfig");
    assert!(
        kubeconfig.contains("server: https://127.0.0.1:"),
        "{kubeconfig}"
    );
    assert!(
        kubeconfig.contains("certificate-authority-data: "),
        "{kubeconfig}"
    );
    assert!(
        !kubeconfig.contains("insecure-skip-tls-verify"),
        "{kubeconfig}"
    );
    let out = serve.ok_as(None, &["get", "namespaces", "-o", "name"]);
    assert!(out.contains("namespace/default"), "{out}");
    // DATA_DIR/tokens.csv was created with an admin in system:masters.
    let tokens = std::fs::read_to_string(serve.data_dir.join("tokens.csv")).expect("tokens");
    assert!(
        tokens
            .trim_end()
            .ends_with(",admin,admin,\"system:masters\""),
        "{tokens}"
    );
    for file in ["ca.crt", "ca.key", "apiserver.crt", "apiserver.key"] {
        assert!(serve.data_dir.join("pki").join(file).exists(), "pki/{file}");
    }
    // A token that is not in the file is 401, in kubectl's words and as a Status.
    let err = serve.fails_as(Some("wrong"), &["get", "pods"]);
    assert!(
        err.contains("You must be logged in to the server (Unauthorized)"),
        "{err}"
    );
    let (code, body) = serve.https(Some("wrong"), "GET", "/api/v1/namespaces", &Value::Null);
    assert_eq!(code, 401);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    // Without credentials only the public endpoints answer.
    for path in ["/livez", "/readyz", "/version"] {
        let (code, _) = serve.https(None, "GET", path, &Value::Null);
        assert_eq!(code, 200, "{path}");
    }
    let (code, body) = serve.https(None, "GET", "/api/v1/namespaces", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "namespaces is forbidden: User \"system:anonymous\" cannot list resource \"namespaces\" in API group \"\" at the cluster scope"
    );
    let (code, body) = serve.https(None, "GET", "/apis", &Value::Null);
    assert_eq!(code, 403);
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
    );
    // Plain HTTP on the TLS port gets no HTTP answer.
    let mut plain = std::net::TcpStream::connect(&serve.address).expect("connects");
    plain
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .expect("timeout");
    let _ = plain.write_all(b"GET /livez HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    assert!(
        !answer.starts_with(b"HTTP/1.1 200"),
        "plain HTTP was served"
    );
    // A restart reuses the CA and the serving certificate: the old kubeconfig keeps working.
    let ca = std::fs::read(serve.data_dir.join("pki/ca.crt")).expect("ca");
    let crt = std::fs::read(serve.data_dir.join("pki/apiserver.crt")).expect("crt");
    drop(serve);
    let serve = start(dir.path(), &kubectl, false);
    assert_eq!(
        ca,
        std::fs::read(serve.data_dir.join("pki/ca.crt")).expect("ca")
    );
    assert_eq!(
        crt,
        std::fs::read(serve.data_dir.join("pki/apiserver.crt")).expect("crt")
    );
    assert_eq!(
        tokens,
        std::fs::read_to_string(serve.data_dir.join("tokens.csv")).expect("tokens")
    );
    serve.ok_as(None, &["get", "namespaces"]);
}

#[test]
fn rbac_denies_then_grants_and_prevents_escalation() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, true);
    let bob = Some("bob-token");
    serve.create(None, &namespace("team", false));
    // No binding: 403 worded as upstream, through kubectl.
    let err = serve.fails_as(bob, &["get", "resourceclaims", "-n", "team"]);
    assert!(
        err.contains("Error from server (Forbidden): resourceclaims.resource.k8s.io is forbidden: User \"bob\" cannot list resource \"resourceclaims\" in API group \"resource.k8s.io\" in the namespace \"team\""),
        "{err}"
    );
    // Authenticated users may read discovery (system:discovery).
    let (code, _) = serve.https(bob, "GET", "/apis", &Value::Null);
    assert_eq!(code, 200);
    // A Role and RoleBinding grant claims (and role bindings) in one namespace.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: claims\n  namespace: team\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims]\n  verbs: [get, list, watch, create, delete]\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [rolebindings]\n  verbs: [create]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: bob-claims\n  namespace: team\nsubjects:\n- kind: User\n  name: bob\nroleRef:\n  kind: Role\n  name: claims\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let out = serve.ok_as(None, &["get", "roles,rolebindings", "-n", "team"]);
    assert!(
        out.contains("claims") && out.contains("Role/claims"),
        "{out}"
    );
    serve.ok_as(bob, &["get", "resourceclaims", "-n", "team"]);
    serve.create(
        bob,
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: mine\n  namespace: team\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n",
    );
    let out = serve.ok_as(
        bob,
        &["get", "resourceclaim", "mine", "-n", "team", "-o", "name"],
    );
    assert_eq!(out.trim(), "resourceclaim.resource.k8s.io/mine");
    // Only there, and only those verbs.
    let err = serve.fails_as(bob, &["get", "resourceclaims", "-n", "default"]);
    assert!(err.contains("in the namespace \"default\""), "{err}");
    let err = serve.fails_as(bob, &["get", "pods", "-n", "team"]);
    assert!(err.contains("cannot list resource \"pods\""), "{err}");
    let (code, body) = serve.https(
        bob,
        "PUT",
        "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/mine/status",
        &json!({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "mine", "namespace": "team"}}),
    );
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "resourceclaims.resource.k8s.io \"mine\" is forbidden: User \"bob\" cannot update resource \"resourceclaims/status\" in API group \"resource.k8s.io\" in the namespace \"team\""
    );
    // Escalation: bob may create role bindings, but not to a role he does not hold.
    let err = serve.create_fails(
        bob,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: bob-admin\n  namespace: team\nsubjects:\n- kind: User\n  name: bob\nroleRef:\n  kind: ClusterRole\n  name: cluster-admin\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    assert!(
        err.contains("rolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
    // Binding the role he holds to someone else is fine.
    serve.create(
        bob,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: dev-claims\n  namespace: team\nsubjects:\n- kind: Group\n  name: dev\nroleRef:\n  kind: Role\n  name: claims\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    serve.ok_as(
        Some("carol-token"),
        &["get", "resourceclaims", "-n", "team"],
    );
    // ResourcePoolStatusRequests: no default role grants them; a broad resource.k8s.io reader
    // role without them does not either; an explicit grant does.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: dra-reader\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [deviceclasses, resourceslices, resourceclaims, resourceclaimtemplates]\n  verbs: [get, list, watch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bob-dra-reader\nsubjects:\n- kind: User\n  name: bob\n  apiGroup: rbac.authorization.k8s.io\nroleRef:\n  kind: ClusterRole\n  name: dra-reader\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    serve.ok_as(bob, &["get", "deviceclasses"]);
    serve.ok_as(bob, &["get", "resourceclaims", "-A"]);
    let err = serve.fails_as(bob, &["get", "resourcepoolstatusrequests"]);
    assert!(
        err.contains("User \"bob\" cannot list resource \"resourcepoolstatusrequests\" in API group \"resource.k8s.io\" at the cluster scope"),
        "{err}"
    );
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: pool-status\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourcepoolstatusrequests]\n  verbs: [get, list, watch, create, delete]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: bob-pool-status\nsubjects:\n- kind: User\n  name: bob\nroleRef:\n  kind: ClusterRole\n  name: pool-status\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    serve.ok_as(bob, &["get", "resourcepoolstatusrequests"]);
    // A binding to a role that does not exist grants nothing and says why.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: dangling\n  namespace: team\nsubjects:\n- kind: User\n  name: driver\nroleRef:\n  kind: Role\n  name: nope\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let err = serve.fails_as(Some("driver-token"), &["get", "pods", "-n", "team"]);
    assert!(
        err.contains("RBAC: role.rbac.authorization.k8s.io \"nope\" not found"),
        "{err}"
    );
    // RBAC objects are validated as upstream and survive a restart.
    let err = serve.create_fails(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: bad\n  namespace: team\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n",
    );
    assert!(
        err.contains("The Role \"bad\" is invalid: rules[0].verbs: Required value: verbs must contain at least one value"),
        "{err}"
    );
    drop(serve);
    let serve = start(dir.path(), &kubectl, true);
    serve.ok_as(bob, &["get", "resourcepoolstatusrequests"]);
    serve.ok_as(None, &["delete", "clusterrolebinding", "bob-pool-status"]);
    serve.fails_as(bob, &["get", "resourcepoolstatusrequests"]);
    let out = serve.ok_as(None, &["get", "clusterroles", "-o", "name"]);
    assert!(
        out.contains("clusterrole.rbac.authorization.k8s.io/cluster-admin"),
        "{out}"
    );
}

#[test]
fn admin_access_only_in_labelled_namespaces() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, true);
    serve.create(None, &namespace("plain", false));
    serve.create(None, &namespace("admins", true));
    let claim = |ns: &str| {
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: monitor\n  namespace: {ns}\nspec:\n  devices:\n    requests:\n    - name: all\n      exactly:\n        deviceClassName: gpu.example.com\n        allocationMode: All\n        adminAccess: true\n"
        )
    };
    let template = |ns: &str| {
        format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceClaimTemplate\nmetadata:\n  name: monitor\n  namespace: {ns}\nspec:\n  spec:\n    devices:\n      requests:\n      - name: all\n        exactly:\n          deviceClassName: gpu.example.com\n          adminAccess: true\n"
        )
    };
    let message = "admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace";
    // Even the cluster admin cannot use it in an unlabelled namespace.
    let err = serve.create_fails(None, &claim("plain"));
    assert!(err.contains("is invalid") && err.contains(message), "{err}");
    assert!(
        err.contains("spec.devices.requests[0].exactly.adminAccess"),
        "{err}"
    );
    let err = serve.create_fails(None, &template("plain"));
    assert!(err.contains(message), "{err}");
    assert!(
        err.contains("spec.spec.devices.requests[0].exactly.adminAccess"),
        "{err}"
    );
    serve.create(None, &claim("admins"));
    serve.create(None, &template("admins"));
    // Without adminAccess the unlabelled namespace is fine, and an update cannot add it (a
    // claim's spec is immutable, as upstream's).
    serve.create(
        None,
        &claim("plain").replace("        adminAccess: true\n", ""),
    );
    let file = dir.path().join("claim.yaml");
    std::fs::write(&file, claim("plain")).expect("writes");
    let err = serve.fails_as(None, &["apply", "-f", file.to_str().unwrap_or_default()]);
    assert!(err.contains("spec: Forbidden: field is immutable"), "{err}");
    // Changing other fields of an admin-access claim in a labelled namespace is fine.
    serve.ok_as(
        None,
        &["label", "resourceclaim", "monitor", "-n", "admins", "x=y"],
    );
}

/// The claim used by the status tests: two requests served by two drivers.
const STATUS_CLAIM: &str = "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: c\n  namespace: team\nspec:\n  devices:\n    requests:\n    - name: gpu\n      exactly:\n        deviceClassName: gpu.example.com\n    - name: nic\n      exactly:\n        deviceClassName: nic.example.com\n";

fn allocation() -> Value {
    json!({
        "devices": {"results": [
            {"request": "gpu", "driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0"},
            {"request": "nic", "driver": "nic.example.com", "pool": "node-1", "device": "nic-0"},
        ]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}]},
    })
}

#[test]
fn claim_status_is_authorized_per_field_and_driver() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, true);
    serve.create(None, &namespace("team", false));
    serve.create(None, STATUS_CLAIM);
    // Both may write resourceclaims/status, as the hardening guide's first rule.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: status-writer\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims, resourceclaims/status]\n  verbs: [get, patch, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: status-writers\nsubjects:\n- kind: User\n  name: scheduler\n- kind: User\n  name: driver\nroleRef:\n  kind: ClusterRole\n  name: status-writer\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let path = "/apis/resource.k8s.io/v1/namespaces/team/resourceclaims/c/status";
    let put_status = |token: &str, status: Value| {
        let (code, current) = serve.https(Some("admin-token"), "GET", path, &Value::Null);
        assert_eq!(code, 200, "{current}");
        let mut claim = current;
        claim["status"] = status;
        if let Some(m) = claim["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        serve.https(Some(token), "PUT", path, &claim)
    };
    // The scheduler without resourceclaims/binding cannot allocate.
    let (code, body) = put_status("sched-token", json!({"allocation": allocation()}));
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("status: Forbidden: changing status.allocation or status.reservedFor requires resource=\"resourceclaims/binding\", verb=\"update\" permission: resourceclaims.resource.k8s.io is forbidden: User \"scheduler\" cannot update resource \"resourceclaims/binding\" in API group \"resource.k8s.io\" at the cluster scope"),
        "{message}"
    );
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: dra-binding-updater\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims/binding]\n  verbs: [patch, update]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: scheduler-binding\nsubjects:\n- kind: User\n  name: scheduler\nroleRef:\n  kind: ClusterRole\n  name: dra-binding-updater\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let (code, body) = put_status("sched-token", json!({"allocation": allocation()}));
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        body["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    // The driver may not touch the allocation, nor (yet) device status.
    let (code, body) = put_status("driver-token", Value::Null);
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("User \"driver\" cannot update resource \"resourceclaims/binding\""),
        "{body}"
    );
    let gpu_status = json!({"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
        "conditions": [{"type": "Ready", "status": "True", "reason": "Up", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]});
    let nic_status = json!({"driver": "nic.example.com", "pool": "node-1", "device": "nic-0",
        "networkData": {"interfaceName": "eth1"}});
    let (code, body) = put_status(
        "driver-token",
        json!({"allocation": allocation(), "devices": [gpu_status.clone()]}),
    );
    assert_eq!(code, 422, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("status.devices: Forbidden: changing status.devices requires resource=\"resourceclaims/driver\", verb=\"[arbitrary-node:update]\" permission: resourceclaims.resource.k8s.io \"gpu.example.com\" is forbidden: User \"driver\" cannot arbitrary-node:update resource \"resourceclaims/driver\" in API group \"resource.k8s.io\" in the namespace \"team\""),
        "{message}"
    );
    // Granted for its own driver only (resourceNames), as the multi-node example.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: gpu-status\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims/driver]\n  verbs: [arbitrary-node:patch, arbitrary-node:update]\n  resourceNames: [gpu.example.com]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: driver-gpu-status\nsubjects:\n- kind: User\n  name: driver\nroleRef:\n  kind: ClusterRole\n  name: gpu-status\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let (code, body) = put_status(
        "driver-token",
        json!({"allocation": allocation(), "devices": [gpu_status.clone()]}),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["devices"][0]["driver"], "gpu.example.com");
    let (code, body) = put_status(
        "driver-token",
        json!({"allocation": allocation(), "devices": [gpu_status.clone(), nic_status]}),
    );
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("\"nic.example.com\" is forbidden"),
        "{body}"
    );
    // An unchanged status needs nothing beyond resourceclaims/status.
    let (code, body) = put_status(
        "driver-token",
        json!({"allocation": allocation(), "devices": [gpu_status]}),
    );
    assert_eq!(code, 200, "{body}");
    // A node-local driver: a service account bound to node-1 (impersonated here with the
    // node-name extra a bound token carries) gets associated-node:update for its driver.
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: nic-node-status\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims, resourceclaims/status]\n  verbs: [get, patch, update]\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims/driver]\n  verbs: [associated-node:patch, associated-node:update]\n  resourceNames: [nic.example.com]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: nic-node-status\nsubjects:\n- kind: ServiceAccount\n  name: nic-driver\n  namespace: kube-system\nroleRef:\n  kind: ClusterRole\n  name: nic-node-status\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let as_node_driver = |node: &str, status: Value| {
        let (_, current) = serve.https(Some("admin-token"), "GET", path, &Value::Null);
        let mut claim = current;
        claim["status"] = status;
        if let Some(m) = claim["metadata"].as_object_mut() {
            m.remove("resourceVersion");
        }
        let node_header =
            format!("Impersonate-Extra-authentication.kubernetes.io%2fnode-name: {node}");
        let (code, text) = https::request(
            &serve.address,
            &serve.data_dir.join("pki/ca.crt"),
            Some("admin-token"),
            "PUT",
            path,
            &[
                "Content-Type: application/json",
                "Impersonate-User: system:serviceaccount:kube-system:nic-driver",
                &node_header,
            ],
            &serde_json::to_vec(&claim).expect("json"),
        );
        (
            code,
            serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)),
        )
    };
    let nic_devices = json!({"allocation": allocation(), "devices": [
        {"driver": "gpu.example.com", "pool": "node-1", "device": "gpu-0",
         "conditions": [{"type": "Ready", "status": "True", "reason": "Up", "message": "", "lastTransitionTime": "2026-01-01T00:00:00Z"}]},
        {"driver": "nic.example.com", "pool": "node-1", "device": "nic-0", "networkData": {"interfaceName": "eth1"}}]});
    let (code, body) = as_node_driver("node-2", nic_devices.clone());
    assert_eq!(code, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or_default()
            .contains("verb=\"[arbitrary-node:update]\""),
        "on another node only arbitrary-node counts: {body}"
    );
    let (code, body) = as_node_driver("node-1", nic_devices);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["status"]["devices"][1]["driver"], "nic.example.com");
    // The cluster admin (system:masters) bypasses all of it.
    let (code, body) = put_status("admin-token", Value::Null);
    assert_eq!(code, 200, "{body}");
}

#[test]
fn kubectl_generators_access_reviews_and_impersonation() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, true);
    let bob = Some("bob-token");
    serve.create(None, &namespace("team", false));
    // kubectl's generators send protobuf bodies.
    serve.ok_as(
        None,
        &[
            "create",
            "clusterrole",
            "claim-reader",
            "--verb=get,list",
            "--resource=resourceclaims.resource.k8s.io",
        ],
    );
    serve.ok_as(
        None,
        &[
            "create",
            "rolebinding",
            "bob-reads",
            "--clusterrole=claim-reader",
            "--user=bob",
            "-n",
            "team",
        ],
    );
    let out = serve.ok_as(
        None,
        &[
            "get",
            "rolebinding",
            "bob-reads",
            "-n",
            "team",
            "-o",
            "jsonpath={.roleRef.name} {.subjects[0].name}",
        ],
    );
    assert_eq!(out, "claim-reader bob");
    // kubectl auth can-i: SelfSubjectAccessReview, for oneself and (as admin) as others.
    let can = |token: Option<&str>, args: &[&str]| {
        let mut full = vec!["auth", "can-i"];
        full.extend_from_slice(args);
        let out = serve.kubectl_as(token, &full);
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(
        can(
            bob,
            &["list", "resourceclaims.resource.k8s.io", "-n", "team"]
        ),
        "yes"
    );
    assert_eq!(
        can(
            bob,
            &["list", "resourceclaims.resource.k8s.io", "-n", "default"]
        ),
        "no"
    );
    assert_eq!(
        can(
            bob,
            &["create", "resourceclaims.resource.k8s.io", "-n", "team"]
        ),
        "no"
    );
    assert_eq!(
        can(
            None,
            &[
                "list",
                "resourceclaims.resource.k8s.io",
                "-n",
                "team",
                "--as=bob"
            ]
        ),
        "yes"
    );
    assert_eq!(
        can(
            None,
            &[
                "list",
                "resourcepoolstatusrequests.resource.k8s.io",
                "--as=bob"
            ]
        ),
        "no"
    );
    assert_eq!(can(None, &["*", "*"]), "yes");
    // Impersonation needs the impersonate verb: the admin may, bob may not.
    let out = serve.ok_as(None, &["get", "resourceclaims", "-n", "team", "--as=bob"]);
    assert!(
        out.contains("No resources found") || out.is_empty(),
        "{out}"
    );
    let err = serve.fails_as(None, &["get", "pods", "-n", "team", "--as=bob"]);
    assert!(
        err.contains("User \"bob\" cannot list resource \"pods\""),
        "{err}"
    );
    let err = serve.fails_as(bob, &["get", "resourceclaims", "-n", "team", "--as=admin"]);
    assert!(
        err.contains("users \"admin\" is forbidden: User \"bob\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"),
        "{err}"
    );
    let err = serve.fails_as(
        bob,
        &[
            "get",
            "resourceclaims",
            "-n",
            "team",
            "--as=bob",
            "--as-group=system:masters",
        ],
    );
    assert!(err.contains("cannot impersonate resource"), "{err}");
    // A SubjectAccessReview answers for someone else (the admin may create one).
    let (code, body) = serve.https(
        Some("admin-token"),
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "bob", "resourceAttributes": {"namespace": "team", "verb": "get", "group": "resource.k8s.io", "resource": "resourceclaims"}}}),
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true);
    let (code, _) = serve.https(
        bob,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        &json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": "admin", "nonResourceAttributes": {"path": "/version", "verb": "get"}}}),
    );
    assert_eq!(code, 403, "bob may not review others");
}

#[test]
fn rbac_objects_take_client_and_server_side_apply() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path(), &kubectl, true);
    // A watch sees the role come, change and go.
    let mut watcher = Command::new(&serve.kubectl)
        .env("KUBECONFIG", &serve.kubeconfig)
        .args([
            "get",
            "roles",
            "-n",
            "default",
            "-w",
            "--output-watch-events",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watcher.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    std::thread::sleep(std::time::Duration::from_millis(500));
    let file = dir.path().join("role.yaml");
    let role = |verbs: &str| {
        format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: claims\n  namespace: default\nrules:\n- apiGroups: [resource.k8s.io]\n  resources: [resourceclaims]\n  verbs: [{verbs}]\n"
        )
    };
    let path = file.to_str().unwrap_or_default();
    let verbs = || {
        serve.ok_as(
            None,
            &["get", "role", "claims", "-o", "jsonpath={.rules[0].verbs}"],
        )
    };
    std::fs::write(&file, role("get")).expect("writes");
    serve.ok_as(None, &["apply", "-f", path]);
    std::fs::write(&file, role("get, list")).expect("writes");
    let out = serve.ok_as(None, &["apply", "-f", path]);
    assert!(out.contains("configured"), "{out}");
    assert_eq!(verbs(), "[\"get\",\"list\"]");
    serve.ok_as(None, &["delete", "-f", path]);
    let mut events = Vec::new();
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(20)) {
        if line.contains("claims") {
            events.push(
                line.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
            if events.len() == 3 {
                break;
            }
        }
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    assert_eq!(events, ["ADDED", "MODIFIED", "DELETED"]);
    std::fs::write(&file, role("get, list")).expect("writes");
    serve.ok_as(None, &["apply", "-f", path]);
    // Server-side apply by another manager conflicts on the atomic rules list, then wins.
    std::fs::write(&file, role("get, list, watch")).expect("writes");
    let err = serve.fails_as(
        None,
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "-f",
            path,
        ],
    );
    assert!(
        err.contains("Apply failed with") && err.contains(".rules"),
        "{err}"
    );
    serve.ok_as(
        None,
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            path,
        ],
    );
    assert_eq!(verbs(), "[\"get\",\"list\",\"watch\"]");
    let managers = serve.ok_as(
        None,
        &[
            "get",
            "role",
            "claims",
            "-o",
            "jsonpath={.metadata.managedFields[*].manager}",
        ],
    );
    assert!(managers.contains("other"), "{managers}");
    // JSON patch; the escalation check still applies to every write path.
    serve.ok_as(
        None,
        &[
            "patch",
            "role",
            "claims",
            "--type=json",
            "-p",
            "[{\"op\":\"add\",\"path\":\"/rules/0/verbs/-\",\"value\":\"delete\"}]",
        ],
    );
    assert_eq!(verbs(), "[\"get\",\"list\",\"watch\",\"delete\"]");
    serve.create(
        None,
        "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: role-editor\n  namespace: default\nrules:\n- apiGroups: [rbac.authorization.k8s.io]\n  resources: [roles]\n  verbs: [get, patch]\n---\napiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: bob-role-editor\n  namespace: default\nsubjects:\n- kind: User\n  name: bob\nroleRef:\n  kind: Role\n  name: role-editor\n  apiGroup: rbac.authorization.k8s.io\n",
    );
    let err = serve.fails_as(
        Some("bob-token"),
        &[
            "patch",
            "role",
            "role-editor",
            "--type=merge",
            "-p",
            "{\"rules\":[{\"apiGroups\":[\"*\"],\"resources\":[\"*\"],\"verbs\":[\"*\"]}]}",
        ],
    );
    assert!(
        err.contains("is attempting to grant RBAC permissions not currently held"),
        "{err}"
    );
}

/// Starts `allot serve` with `tokens` as its tokens file and `RUST_LOG` as given, waits until it
/// serves, stops it and returns what it wrote on stderr.
fn serve_stderr(dir: &Path, tokens: &str, rust_log: Option<&str>) -> String {
    let file = dir.join("users.csv");
    std::fs::write(&file, tokens).expect("writes tokens");
    let log = dir.join("stderr.log");
    let mut command = Command::new(env!("CARGO_BIN_EXE_allot"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.join("data"))
        .arg("--token-auth-file")
        .arg(&file)
        .env_remove("RUST_LOG")
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).expect("creates the log"));
    if let Some(filter) = rust_log {
        command.env("RUST_LOG", filter);
    }
    let mut child = command.spawn().expect("allot serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let served = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .any(|line| line.starts_with("kubeconfig: "));
    let _ = child.kill();
    let _ = child.wait();
    assert!(served, "allot serve did not start");
    std::fs::read_to_string(&log).expect("reads the log")
}

#[test]
fn warnings_reach_stderr_unless_rust_log_silences_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let tokens = "t1,alice,1\nt1,bob,2\n";
    let err = serve_stderr(dir.path(), tokens, None);
    let line = format!(
        "{}:2: duplicate token",
        dir.path().join("users.csv").display()
    );
    assert!(
        err.lines().any(|l| l.contains("WARN") && l.contains(&line)),
        "no warning on stderr:\n{err}"
    );
    let quiet = tempfile::tempdir().expect("tempdir");
    let err = serve_stderr(quiet.path(), tokens, Some("error"));
    assert!(!err.contains("duplicate token"), "{err}");
}
