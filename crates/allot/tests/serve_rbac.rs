//! End-to-end tests of RBAC objects and Leases in `allot serve`'s store, with a real kubectl
//! (`ALLOT_KUBECTL`, or `kubectl` on PATH) and, for shared storage, a real etcd: a role created
//! through kubectl grants access, survives a restart, and an earlier version's `rbac.json` is
//! imported once; a ClusterRole labelled `aggregate-to-view` adds its rules to `view`; the
//! controllers' leader shows as a Lease in kube-system; two servers on one etcd see the same
//! grants.

#[path = "support/etcd.rs"]
mod etcd;
#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Output;
use std::time::{Duration, Instant};

use harness::{Serve, wait_for};
use serde_json::json;

/// The users: token, name, uid, groups.
const TOKENS: &str = "admin-token,admin,0,\"system:masters\"\n\
bob-token,bob,1\n\
carol-token,carol,2\n";

/// Starts a server on `data_dir` with the test users, on etcd when `etcd` is given.
fn start(dir: &Path, data_dir: &Path, etcd: Option<&str>, kubectl: &Path) -> Serve {
    let tokens = dir.join("users.csv");
    std::fs::write(&tokens, TOKENS).expect("writes tokens");
    let mut args = vec![
        "--token-auth-file".to_string(),
        tokens.display().to_string(),
    ];
    if let Some(url) = etcd {
        args.extend(
            [
                "--etcd-servers",
                url,
                "--leader-elect-lease-duration",
                "2s",
                "--leader-elect-renew-deadline",
                "1500ms",
                "--leader-elect-retry-period",
                "300ms",
            ]
            .map(str::to_string),
        );
    }
    Serve::start(data_dir, kubectl, &args)
}

trait Eventually {
    fn eventually(&self, token: Option<&str>, args: &[&str], wanted: bool) -> Output;
}

impl Eventually for Serve {
    /// Retries `kubectl args` as `token` for up to 15 s until its success is `wanted`; the
    /// last output.
    fn eventually(&self, token: Option<&str>, args: &[&str], wanted: bool) -> Output {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let out = self.kubectl_as(token, args);
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
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).expect("creates");
    std::fs::write(data.join("rbac.json"), old_rbac_json()).expect("writes");
    let server = start(dir.path(), &data, None, &kubectl);

    // The old file's grant holds, and the file was imported once.
    server.ok_as(Some("carol-token"), &["get", "pods", "-n", "default"]);
    assert!(!data.join("rbac.json").exists());
    assert!(data.join("rbac.json.imported").exists());
    let imported = server.json(&["get", "role", "pod-reader", "-n", "default"]);
    assert_eq!(
        imported["metadata"]["creationTimestamp"],
        "2026-06-01T00:00:00Z"
    );

    // A role created through kubectl grants access.
    let denied = server.kubectl_as(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    assert!(!denied.status.success());
    assert!(
        String::from_utf8_lossy(&denied.stderr).contains("forbidden"),
        "{}",
        String::from_utf8_lossy(&denied.stderr)
    );
    server.ok_as(
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
    server.ok_as(
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
    server.ok_as(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    let table = server.ok_as(
        None,
        &["get", "rolebindings", "-n", "default", "-o", "wide"],
    );
    assert!(
        table.contains("ROLE") && table.contains("Role/claims") && table.contains("bob"),
        "{table}"
    );
    // Optimistic concurrency like every kind: a stale resourceVersion is a conflict.
    let mut role = server.json(&["get", "role", "claims", "-n", "default"]);
    // Upstream's RBAC strategies set no generation.
    assert_eq!(role["metadata"].get("generation"), None, "{role}");
    role["metadata"]["resourceVersion"] = json!("1");
    let stale = dir.path().join("stale.json");
    std::fs::write(&stale, role.to_string()).expect("writes");
    let out = server.kubectl_as(None, &["replace", "-f", stale.to_str().unwrap_or_default()]);
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
    server.ok_as(
        None,
        &[
            "create",
            "clusterrole",
            "lease-viewer",
            "--verb=get,list",
            "--resource=leases.coordination.k8s.io",
        ],
    );
    server.ok_as(
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
    server.ok_as(
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
    server.ok_as(None, &["delete", "clusterrole", "lease-viewer"]);
    server.eventually(
        Some("carol-token"),
        &["get", "leases", "-n", "kube-system"],
        false,
    );

    // The controllers' leader is a Lease in kube-system.
    wait_for("the controllers' Lease", || {
        server
            .kubectl_as(None, &["get", "lease", "-n", "kube-system"])
            .stdout
            .windows(24)
            .any(|w| w == b"allot-controller-manager")
    });
    let table = server.ok_as(None, &["get", "lease", "-n", "kube-system"]);
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
    assert_eq!(lease["metadata"].get("generation"), None, "{lease}");
    assert!(
        lease["spec"]["holderIdentity"]
            .as_str()
            .is_some_and(|h| !h.is_empty()),
        "{lease}"
    );
    drop(server);

    // Restart: the grants are still there, the old file is not imported again.
    let server = start(dir.path(), &data, None, &kubectl);
    server.ok_as(
        Some("bob-token"),
        &["get", "resourceclaims", "-n", "default"],
    );
    server.ok_as(Some("carol-token"), &["get", "pods", "-n", "default"]);
    assert!(!data.join("rbac.json").exists());
}

#[test]
fn two_servers_on_one_etcd_share_grants() {
    let kubectl = kubectl::find();
    let binary = etcd::binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    // Both start at once: each bootstraps what the other has not.
    let (a, b) = std::thread::scope(|s| {
        let a = s.spawn(|| start(dir.path(), &dir.path().join("a"), Some(&etcd.url), &kubectl));
        let b = s.spawn(|| start(dir.path(), &dir.path().join("b"), Some(&etcd.url), &kubectl));
        (a.join().expect("a starts"), b.join().expect("b starts"))
    });
    for server in [&a, &b] {
        let names = server.ok_as(None, &["get", "clusterroles", "-o", "name"]);
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
    a.ok_as(
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
    a.ok_as(
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
    b.ok_as(
        None,
        &["delete", "rolebinding", "bob-pods", "-n", "default"],
    );
    a.eventually(Some("bob-token"), &["get", "pods", "-n", "default"], false);
    // Both see one leader.
    let holder = |s: &Serve| {
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

/// The resource.k8s.io part of a ClusterRole's rules: resource (with `[names]` when the rule
/// names objects) -> verbs, merged over the rules.
fn dra_rules(role: &serde_json::Value) -> BTreeMap<String, BTreeSet<String>> {
    let mut merged: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for rule in role["rules"].as_array().into_iter().flatten() {
        let groups = rule["apiGroups"].as_array().cloned().unwrap_or_default();
        if !groups.iter().any(|g| g == "resource.k8s.io") {
            continue;
        }
        let verbs: Vec<String> = rule["verbs"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        for resource in rule["resources"].as_array().into_iter().flatten() {
            let key = resource.as_str().unwrap_or_default().to_string();
            merged.entry(key).or_default().extend(verbs.clone());
        }
    }
    merged
}

/// resource -> verbs from a compact "resource: verb verb" table.
fn table(lines: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    lines
        .iter()
        .map(|line| {
            let (resource, verbs) = line.split_once(':').expect("resource: verbs");
            (
                resource.trim().to_string(),
                verbs.split_whitespace().map(str::to_string).collect(),
            )
        })
        .collect()
}

/// The default ClusterRoles' resource.k8s.io rules as upstream's bootstrap policy has them
/// (plugin/pkg/auth/authorizer/rbac/bootstrappolicy/testdata/cluster-roles-featuregates.yaml
/// and controller-roles-featuregates.yaml), read back through kubectl once the aggregation of
/// admin, edit and view has run.
#[test]
fn default_cluster_roles_grant_dra_resources_as_upstream() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let server = start(dir.path(), &dir.path().join("data"), None, &kubectl);
    let write = "create delete deletecollection patch update";
    let read = "get list watch";
    let view = table(&[
        &format!("resourceclaims: {read}"),
        &format!("resourceclaims/status: {read}"),
        &format!("resourceclaimtemplates: {read}"),
    ]);
    let edit = table(&[
        &format!("resourceclaims: {read} {write}"),
        &format!("resourceclaims/status: {read}"),
        &format!("resourceclaimtemplates: {read} {write}"),
    ]);
    let expected: Vec<(&str, BTreeMap<String, BTreeSet<String>>)> = vec![
        (
            "system:aggregate-to-edit",
            table(&[
                &format!("resourceclaims: {write}"),
                &format!("resourceclaimtemplates: {write}"),
            ]),
        ),
        ("system:aggregate-to-view", view.clone()),
        ("system:aggregate-to-admin", BTreeMap::new()),
        ("view", view),
        ("edit", edit.clone()),
        ("admin", edit),
        (
            "system:kube-scheduler",
            table(&[
                &format!("deviceclasses: {read}"),
                &format!("resourceclaims: {read} patch update"),
                &format!("resourceclaims/status: {read} patch update"),
                "resourceclaims/binding: patch update",
                &format!("resourceslices: {read}"),
                &format!("devicetaintrules: {read}"),
            ]),
        ),
        (
            "system:controller:resource-claim-controller",
            table(&[
                "resourceclaims: create delete get list watch patch update",
                "resourceclaims/status: patch update",
                "resourceclaims/binding: patch update",
            ]),
        ),
        (
            "system:controller:device-taint-eviction-controller",
            table(&[
                &format!("resourceclaims: {read}"),
                &format!("resourceslices: {read}"),
                &format!("deviceclasses: {read}"),
                &format!("devicetaintrules: {read}"),
                "devicetaintrules/status: patch update",
            ]),
        ),
        (
            "system:controller:resourcepoolstatusrequest-controller",
            table(&[
                "resourcepoolstatusrequests: delete get list watch",
                "resourcepoolstatusrequests/status: patch update",
                &format!("resourceslices: {read}"),
                &format!("resourceclaims: {read}"),
                &format!("devicetaintrules: {read}"),
            ]),
        ),
    ];
    for (name, wanted) in &expected {
        let mut served = BTreeMap::new();
        // Aggregated roles fill in once the aggregation has run.
        wait_for(&format!("{name} to carry upstream's DRA rules"), || {
            served = dra_rules(&server.json(&["get", "clusterrole", name]));
            served == *wanted
        });
        assert_eq!(&served, wanted, "{name}");
    }
    // The scheduler user and the controllers' service accounts hold them.
    for (binding, subject) in [
        ("system:kube-scheduler", "User/system:kube-scheduler"),
        (
            "system:controller:resource-claim-controller",
            "ServiceAccount/kube-system/resource-claim-controller",
        ),
    ] {
        let object = server.json(&["get", "clusterrolebinding", binding]);
        let subjects: Vec<String> = object["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| {
                [&s["kind"], &s["namespace"], &s["name"]]
                    .iter()
                    .filter_map(|v| v.as_str())
                    .collect::<Vec<_>>()
                    .join("/")
            })
            .collect();
        assert_eq!(subjects, vec![subject.to_string()], "{binding}");
        assert_eq!(object["roleRef"]["name"], *binding);
    }
    // The scheduler may allocate a claim; a plain user may not.
    let can = |user: &str| {
        server
            .kubectl_as(
                None,
                &[
                    "auth",
                    "can-i",
                    "update",
                    "resourceclaims/binding.resource.k8s.io",
                    "--as",
                    user,
                ],
            )
            .status
            .success()
    };
    assert!(can("system:kube-scheduler"));
    assert!(!can("bob"));
}
