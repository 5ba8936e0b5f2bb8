//! End-to-end tests of RBAC objects and Leases in `allot serve`'s store, with a real kubectl
//! (`ALLOT_KUBECTL`, or `kubectl` on PATH) and, for shared storage, a real etcd: a role created
//! through kubectl grants access, survives a restart, and an earlier version's `rbac.json` is
//! imported once; a ClusterRole labelled `aggregate-to-view` adds its rules to `view`; the
//! controllers' leader shows as a Lease in kube-system; two servers on one etcd see the same
//! grants.

#[path = "support/etcd.rs"]
mod etcd;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The users: token, name, uid, groups.
const TOKENS: &str = "admin-token,admin,0,\"system:masters\"\n\
bob-token,bob,1\n\
carol-token,carol,2\n";

/// One `allot serve`; killed (SIGKILL) when dropped.
struct Server {
    child: Child,
    kubeconfig: PathBuf,
    kubectl: PathBuf,
}

impl Server {
    /// Starts a server on `data_dir` with the test users, on etcd when `etcd` is given.
    fn start(dir: &Path, data_dir: &Path, etcd: Option<&str>, kubectl: &Path) -> Server {
        let tokens = dir.join("users.csv");
        std::fs::write(&tokens, TOKENS).expect("writes tokens");
        let mut command = Command::new(env!("CARGO_BIN_EXE_allot"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .arg("--token-auth-file")
            .arg(&tokens);
        if let Some(url) = etcd {
            command.args([
                "--etcd-servers",
                url,
                "--leader-elect-lease-duration",
                "2s",
                "--leader-elect-renew-deadline",
                "1500ms",
                "--leader-elect-retry-period",
                "300ms",
            ]);
        }
        let mut child = command
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("allot serve starts");
        let stdout = child.stdout.take().expect("stdout");
        let mut kubeconfig = PathBuf::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("reads stdout");
            if let Some(rest) = line.strip_prefix("kubeconfig: ") {
                kubeconfig = PathBuf::from(rest);
                break;
            }
        }
        assert!(kubeconfig.exists(), "no kubeconfig printed");
        Server {
            child,
            kubeconfig,
            kubectl: kubectl.to_path_buf(),
        }
    }

    fn kubectl(&self, token: Option<&str>, args: &[&str]) -> Output {
        let mut command = Command::new(&self.kubectl);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("KUBERNETES_SERVICE_HOST");
        if let Some(token) = token {
            command.arg(format!("--token={token}"));
        }
        command.args(args).output().expect("kubectl runs")
    }

    fn ok(&self, token: Option<&str>, args: &[&str]) -> String {
        let out = self.kubectl(token, args);
        assert!(
            out.status.success(),
            "kubectl {args:?} as {token:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Retries `kubectl args` as `token` for up to 15 s until its success is `wanted`; the
    /// last output.
    fn eventually(&self, token: Option<&str>, args: &[&str], wanted: bool) -> Output {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let out = self.kubectl(token, args);
            if out.status.success() == wanted || Instant::now() > deadline {
                assert_eq!(
                    out.status.success(),
                    wanted,
                    "kubectl {args:?} as {token:?}: {}{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
                return out;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(None, &all)).expect("kubectl prints JSON")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits up to 15 s for `check` to hold.
fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An earlier version's DATA_DIR/rbac.json granting carol `list pods` in `default`.
fn old_rbac_json() -> String {
    json!({"resourceVersion": "9", "items": [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "pod-reader", "namespace": "default", "uid": "0b6f", "resourceVersion": "8",
                      "creationTimestamp": "2026-06-01T00:00:00Z"},
         "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "carol-reads-pods", "namespace": "default", "resourceVersion": "9"},
         "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "carol"}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}}
    ]})
    .to_string()
}

#[test]
fn roles_grant_through_kubectl_survive_restart_aggregate_and_old_grants_are_imported() {
    let Some(kubectl) = kubectl::find_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("creates");
    std::fs::write(data.join("rbac.json"), old_rbac_json()).expect("writes");
    let server = Server::start(dir.path(), &data, None, &kubectl);

    // The old file's grant holds, and the file was imported once.
    server.ok(Some("carol-token"), &["get", "pods", "-n", "default"]);
    assert!(!data.join("rbac.json").exists());
    assert!(data.join("rbac.json.imported").exists());
    let imported = server.json(&["get", "role", "pod-reader", "-n", "default"]);
    assert_eq!(
        imported["metadata"]["creationTimestamp"],
        "2026-06-01T00:00:00Z"
    );

    // A role created through kubectl grants access.
    let denied = server.kubectl(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    server.ok(
        None,
        &[
            "create",
            "role",
            "claims",
            "-n",
            "default",
            "--verb=get,list",
            "--resource=resourceclaims.resource.k8s.io",
        ],
    );
    server.ok(
        None,
        &[
            "create",
            "rolebinding",
            "bob-claims",
            "-n",
            "default",
            "--role=claims",
            "--user=bob",
        ],
    );
    server.ok(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    let table = server.ok(
        None,
        &["get", "rolebindings", "-n", "default", "-o", "wide"],
    );
    assert!(
        table.contains("ROLE") && table.contains("Role/claims") && table.contains("bob"),
        "{table}"
    );
    // Optimistic concurrency like every kind: a stale resourceVersion is a conflict.
    let mut role = server.json(&["get", "role", "claims", "-n", "default"]);
    role["metadata"]["resourceVersion"] = json!("1");
    let stale = dir.path().join("stale.json");
    std::fs::write(&stale, role.to_string()).expect("writes");
    let out = server.kubectl(None, &["replace", "-f", stale.to_str().unwrap_or_default()]);
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("modified"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Aggregation: a ClusterRole labelled aggregate-to-view adds its rules to view.
    let view = server.json(&["get", "clusterrole", "view"]);
    assert!(
        view["rules"].to_string().contains("resourceclaims"),
        "view aggregates the bootstrap aggregate-to-view role: {view}"
    );
    server.ok(
        None,
        &[
            "create",
            "clusterrole",
            "lease-viewer",
            "--verb=get,list",
            "--resource=leases.coordination.k8s.io",
        ],
    );
    server.ok(
        None,
        &[
            "label",
            "clusterrole",
            "lease-viewer",
            "rbac.authorization.k8s.io/aggregate-to-view=true",
        ],
    );
    wait_for("view to aggregate lease-viewer", || {
        server.json(&["get", "clusterrole", "view"])["rules"]
            .to_string()
            .contains("leases")
    });
    server.ok(
        None,
        &[
            "create",
            "clusterrolebinding",
            "carol-views",
            "--clusterrole=view",
            "--user=carol",
        ],
    );
    server.eventually(
        Some("carol-token"),
        &["get", "leases", "-n", "kube-system"],
        true,
    );
    // Edit and admin aggregate view in turn (edit is labelled aggregate-to-admin, view
    // aggregate-to-edit).
    wait_for(
        "admin to aggregate lease-viewer through edit and view",
        || {
            server.json(&["get", "clusterrole", "admin"])["rules"]
                .to_string()
                .contains("leases")
        },
    );
    server.ok(None, &["delete", "clusterrole", "lease-viewer"]);
    server.eventually(
        Some("carol-token"),
        &["get", "leases", "-n", "kube-system"],
        false,
    );

    // The controllers' leader is a Lease in kube-system.
    wait_for("the controllers' Lease", || {
        server
            .kubectl(None, &["get", "lease", "-n", "kube-system"])
            .stdout
            .windows(24)
            .any(|w| w == b"allot-controller-manager")
    });
    let table = server.ok(None, &["get", "lease", "-n", "kube-system"]);
    let header = table.lines().next().unwrap_or_default();
    assert!(
        header.contains("HOLDER") && header.contains("AGE"),
        "{table}"
    );
    let lease = server.json(&[
        "get",
        "lease",
        "allot-controller-manager",
        "-n",
        "kube-system",
    ]);
    assert!(
        lease["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "{lease}"
    );
    drop(server);

    // Restart: the grants are still there, the old file is not imported again.
    let server = Server::start(dir.path(), &data, None, &kubectl);
    server.ok(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    server.ok(Some("carol-token"), &["get", "pods", "-n", "default"]);
    assert!(!data.join("rbac.json").exists());
}

#[test]
fn two_servers_on_one_etcd_share_grants() {
    let Some(kubectl) = kubectl::find_or_skip() else {
        return;
    };
    let Some(binary) = etcd::binary_or_skip() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    // Both start at once: each bootstraps what the other has not.
    let (a, b) = std::thread::scope(|s| {
        let a =
            s.spawn(|| Server::start(dir.path(), &dir.path().join("a"), Some(&etcd.url), &kubectl));
        let b =
            s.spawn(|| Server::start(dir.path(), &dir.path().join("b"), Some(&etcd.url), &kubectl));
        (a.join().expect("a starts"), b.join().expect("b starts"))
    });
    for server in [&a, &b] {
        let names = server.ok(None, &["get", "clusterroles", "-o", "name"]);
        for role in [
            "cluster-admin",
            "admin",
            "edit",
            "view",
            "system:aggregate-to-view",
        ] {
            assert!(
                names.contains(&format!("clusterrole.rbac.authorization.k8s.io/{role}\n")),
                "{names}"
            );
        }
    }
    b.eventually(Some("bob-token"), &["get", "pods", "-n", "default"], false);
    a.ok(
        None,
        &[
            "create",
            "role",
            "pods",
            "-n",
            "default",
            "--verb=list",
            "--resource=pods",
        ],
    );
    a.ok(
        None,
        &[
            "create",
            "rolebinding",
            "bob-pods",
            "-n",
            "default",
            "--role=pods",
            "--user=bob",
        ],
    );
    b.eventually(Some("bob-token"), &["get", "pods", "-n", "default"], true);
    // A change on b takes effect on a.
    b.ok(
        None,
        &["delete", "rolebinding", "bob-pods", "-n", "default"],
    );
    a.eventually(Some("bob-token"), &["get", "pods", "-n", "default"], false);
    // Both see one leader.
    let holder = |s: &Server| {
        s.json(&[
            "get",
            "lease",
            "allot-controller-manager",
            "-n",
            "kube-system",
        ])["spec"]["holderIdentity"]
            .as_str()
            .unwrap_or_default()
            .to_string()
    };
    wait_for("both servers to show the same holder", || {
        let h = holder(&a);
        !h.is_empty() && h == holder(&b)
    });
    drop(a);
    drop(b);
    drop(etcd);
}
