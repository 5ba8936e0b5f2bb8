//! End-to-end tests of `allot serve` against hostile or unusual requests (issue 15): read
//! parameters checked as kube-apiserver checks them, bodies in media types it does not decode,
//! `/readyz` while etcd is down, `kubectl auth can-i --list` and `kubectl auth whoami` for an
//! ordinary user, and object names of every kind validated on create. Driven by a real kubectl
//! 1.37 (`ALLOT_KUBECTL`) and raw HTTPS; the etcd test needs `ALLOT_ETCD` (both provisioned by
//! the README's test command, `cargo xtask test`).

#[path = "support/etcd.rs"]
mod etcd;
#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::path::Path;
use std::time::{Duration, Instant};

use harness::Serve;
use serde_json::Value;

const TOKENS: &str = "admin-token,admin,0,\"system:masters\"\n\
alice-token,alice,7,\"dev\"\n";

fn start(dir: &Path) -> Serve {
    let file = dir.join("users.csv");
    std::fs::write(&file, TOKENS).expect("writes tokens");
    Serve::start(
        &dir.join("data"),
        &kubectl::find(),
        &["--token-auth-file".to_string(), file.display().to_string()],
    )
}

/// (code, parsed JSON body) of a raw GET as the admin.
fn get(serve: &Serve, path: &str) -> (u16, Value) {
    let (code, body) = serve.http_as(Some("admin-token"), "GET", path, &[], b"");
    let value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    (code, value)
}

/// The status code and message of a `Status` answer.
fn status(answer: &(u16, Value)) -> (u16, &str, &str) {
    (
        answer.0,
        answer.1["reason"].as_str().unwrap_or_default(),
        answer.1["message"].as_str().unwrap_or_default(),
    )
}

/// Issue 15: `resourceVersion=abc`, `limit=abc`, a garbage `continue` and
/// `fieldSelector=metadata.foo===x` were answered 200.
#[test]
fn read_parameters_are_checked_as_kube_apiserver_checks_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    let pods = "/api/v1/namespaces/default/pods";
    assert_eq!(
        status(&get(&serve, &format!("{pods}?resourceVersion=abc"))),
        (
            422,
            "Invalid",
            "resourceVersion: Invalid value: \"abc\": strconv.ParseUint: parsing \"abc\": invalid syntax"
        )
    );
    assert_eq!(
        status(&get(&serve, &format!("{pods}/p1?resourceVersion=-1"))).0,
        422
    );
    assert_eq!(
        status(&get(
            &serve,
            &format!("{pods}?watch=true&resourceVersion=x")
        ))
        .0,
        422
    );
    assert_eq!(
        status(&get(&serve, &format!("{pods}?limit=abc"))),
        (
            400,
            "BadRequest",
            "strconv.ParseInt: parsing \"abc\": invalid syntax"
        )
    );
    // A negative limit means no limit, as upstream.
    let (code, list) = get(&serve, "/api/v1/namespaces?limit=-5");
    assert_eq!(code, 200, "{list}");
    let names: Vec<&str> = list["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter_map(|n| n["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"kube-system") && names.contains(&"default"),
        "{list}"
    );
    assert_eq!(
        status(&get(&serve, &format!("{pods}?continue=garbage!"))),
        (
            400,
            "BadRequest",
            "invalid continue token: continue key is not valid: illegal base64 data at input byte 7"
        )
    );
    assert_eq!(
        status(&get(
            &serve,
            &format!("{pods}?fieldSelector=metadata.foo%3D%3D%3Dx")
        )),
        (400, "BadRequest", "field label not supported: metadata.foo")
    );
    assert_eq!(
        status(&get(
            &serve,
            "/apis/resource.k8s.io/v1/resourceclaims?resourceVersionMatch=Exact"
        ))
        .0,
        422
    );
    // kubectl shows the server's message.
    let err = serve.fails(&["get", "pods", "--field-selector", "metadata.foo=x"]);
    assert!(
        err.contains("field label not supported: metadata.foo"),
        "{err}"
    );
    // What is valid still works.
    let (code, _) = get(
        &serve,
        &format!("{pods}?fieldSelector=spec.nodeName%3Dn1&resourceVersion=0&limit=500"),
    );
    assert_eq!(code, 200);
}

/// Issue 15: a body sent as `text/plain` was parsed.
#[test]
fn bodies_in_media_types_the_server_does_not_decode_get_415() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    let body = br#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"plain"}}"#;
    for content_type in ["text/plain", "application/cbor"] {
        let (code, text) = serve.http_as(
            Some("admin-token"),
            "POST",
            "/api/v1/namespaces",
            &[&format!("Content-Type: {content_type}")],
            body,
        );
        let answer: Value = serde_json::from_str(&text).expect("a Status");
        assert_eq!(
            status(&(code, answer)),
            (
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf"
            ),
            "{content_type}"
        );
    }
    let (code, _) = serve.http_as(
        Some("admin-token"),
        "POST",
        "/api/v1/namespaces",
        &["Content-Type: application/json; charset=utf-8"],
        body,
    );
    assert_eq!(code, 201);
}

/// Issue 15: `kubectl auth can-i --list` failed (415: the SelfSubjectRulesReview came in
/// protobuf), and `kubectl auth whoami` was forbidden for authenticated users.
#[test]
fn can_i_list_and_whoami_work_for_an_ordinary_user() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    serve.ok(&["create", "namespace", "team"]);
    serve.ok(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "team",
        "--verb=get,list",
        "--resource=pods",
    ]);
    serve.ok(&[
        "create",
        "rolebinding",
        "alice-reads",
        "-n",
        "team",
        "--role=pod-reader",
        "--user=alice",
    ]);
    let list = serve.ok_as(
        Some("alice-token"),
        &["auth", "can-i", "--list", "-n", "team"],
    );
    let pods = list
        .lines()
        .find(|l| l.split_whitespace().next() == Some("pods"))
        .unwrap_or_else(|| panic!("no pods row:\n{list}"));
    assert!(pods.contains("[get list]"), "{list}");
    // system:basic-user's rules, from the cluster-wide binding to system:authenticated.
    assert!(
        list.contains("selfsubjectreviews.authentication.k8s.io"),
        "{list}"
    );
    assert!(
        list.contains("selfsubjectrulesreviews.authorization.k8s.io"),
        "{list}"
    );
    // Another namespace: no pods row.
    let elsewhere = serve.ok_as(
        Some("alice-token"),
        &["auth", "can-i", "--list", "-n", "default"],
    );
    assert!(
        !elsewhere
            .lines()
            .any(|l| l.split_whitespace().next() == Some("pods")),
        "{elsewhere}"
    );
    let admin = serve.ok(&["auth", "can-i", "--list"]);
    assert!(admin.lines().any(|l| l.starts_with("*.*")), "{admin}");

    let whoami = serve.ok_as(Some("alice-token"), &["auth", "whoami", "-o", "json"]);
    let review: Value = serde_json::from_str(&whoami).expect("JSON");
    assert_eq!(review["kind"], "SelfSubjectReview");
    let info = &review["status"]["userInfo"];
    assert_eq!(info["username"], "alice");
    assert_eq!(info["uid"], "7");
    let groups: Vec<&str> = info["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(groups, ["dev", "system:authenticated"]);
    let table = serve.ok(&["auth", "whoami"]);
    assert!(
        table.contains("admin") && table.contains("system:masters"),
        "{table}"
    );
}

/// Issue 15: a NodeTopology named `../../etc` was accepted; names of every kind are checked on
/// create, and by `allot validate`.
#[test]
fn object_names_of_every_kind_are_validated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = start(dir.path());
    let body = br#"{"apiVersion":"allot.dev/v1alpha1","kind":"NodeTopology","metadata":{"name":"../../etc"},"cpus":[{"id":0,"core":0,"socket":0,"numa":0}]}"#;
    let (code, text) = serve.http_as(
        Some("admin-token"),
        "POST",
        "/apis/allot.dev/v1alpha1/nodetopologies",
        &["Content-Type: application/json"],
        body,
    );
    let answer = (code, serde_json::from_str(&text).expect("a Status"));
    let (code, reason, message) = status(&answer);
    assert_eq!((code, reason), (422, "Invalid"), "{}", answer.1);
    assert!(
        message.contains("metadata.name: Invalid value: \"../../etc\""),
        "{message}"
    );
    let (code, text) = serve.http_as(
        Some("admin-token"),
        "POST",
        "/apis/coordination.k8s.io/v1/namespaces/default/leases",
        &["Content-Type: application/json"],
        br#"{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"Not_A_Name"}}"#,
    );
    assert_eq!(code, 422, "{text}");

    let file = dir.path().join("topology.yaml");
    std::fs::write(
        &file,
        "apiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: ../../etc\ncpus:\n- {id: 0, core: 0, socket: 0, numa: 0}\n",
    )
    .expect("writes");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["validate", "-f"])
        .arg(&file)
        .output()
        .expect("allot validate runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}{stderr}");
    assert!(
        format!("{stdout}{stderr}").contains("metadata.name: Invalid value: \"../../etc\""),
        "{stdout}{stderr}"
    );
}

/// Issue 15: `/readyz` stayed 200 while etcd was down. It fails as kube-apiserver's does
/// (`[-]etcd failed: reason withheld`, 500), `/readyz/etcd` says why, `?verbose` lists the
/// checks when all pass.
#[test]
fn readyz_fails_while_etcd_is_down() {
    let binary = etcd::binary();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut etcd = etcd::Etcd::start(&binary, &dir.path().join("etcd"));
    let serve = Serve::start(
        &dir.path().join("data"),
        &kubectl::find(),
        &["--etcd-servers", etcd.url.as_str()],
    );
    let (code, body) = serve.http("GET", "/readyz?verbose", &[], b"");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("[+]etcd ok"), "{body}");
    assert!(body.ends_with("readyz check passed\n"), "{body}");
    assert_eq!(
        serve.http("GET", "/readyz", &[], b""),
        (200, "ok".to_string())
    );

    etcd.kill();
    // The first probe after the kill may still find the old connection usable for a moment.
    let deadline = Instant::now() + Duration::from_secs(30);
    let (code, body) = loop {
        let answer = serve.http("GET", "/readyz", &[], b"");
        if answer.0 != 200 || Instant::now() > deadline {
            break answer;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("[+]ping ok\n"), "{body}");
    assert!(body.contains("[-]etcd failed: reason withheld\n"), "{body}");
    assert!(body.ends_with("readyz check failed\n"), "{body}");
    let (code, body) = serve.http("GET", "/readyz/etcd", &[], b"");
    assert_eq!(code, 500, "{body}");
    assert!(body.starts_with("internal server error: "), "{body}");
    let (code, body) = serve.http("GET", "/readyz?exclude=etcd", &[], b"");
    assert_eq!((code, body.as_str()), (200, "ok"));
}
