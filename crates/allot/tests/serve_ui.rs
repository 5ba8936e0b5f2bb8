//! `allot serve`'s `/ui/`: the report page over the live store, behind the API's
//! authentication, opened through `kubectl proxy` in a real headless Chromium: no script error,
//! every number the page marks equal to what kubectl reads from the store, a node's drill-down
//! drawn, and a screenshot compared with a blessed colour histogram for gross regressions
//! (`ALLOT_BLESS=1` rewrites it). kubectl comes from `ALLOT_KUBECTL` and Chromium from
//! `ALLOT_CHROMIUM` or Debian's `/usr/bin/chromium` (`cargo xtask test` provisions both).

#[path = "support/browser.rs"]
mod browser;
#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use browser::{assert_rendered_cleanly, browse, compare_screenshot, marked_numbers};
use harness::{Serve, write};
use serde_json::Value;

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A node of 4 CPUs and 2 GPUs, with its machine, and a claim template for one GPU; the test
/// adds three pods of one GPU each: two run, one stays pending.
const CLUSTER: &str = include_str!("support/gpu-node.yaml");

fn trainer(n: usize) -> String {
    format!(
        "---\napiVersion: v1\nkind: Pod\nmetadata: {{name: trainer-{n}}}\nspec:\n  resourceClaims: [{{name: gpu, resourceClaimTemplateName: one-gpu}}]\n  containers:\n  - {{name: main, image: x, resources: {{claims: [{{name: gpu}}]}}}}\n"
    )
}

/// The page's summary as kubectl reads the store: pods placed (bound and not failed), failed
/// and pending; devices of node-local slices and those allocated.
fn expected(serve: &Serve, key: &str) -> f64 {
    let items = |kind: &str| -> Vec<Value> {
        serve.json(&["get", kind, "-A", "-o", "json"])["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    };
    let pods = items("pods");
    let bound = |p: &Value| {
        p["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
    };
    let failed = |p: &Value| p["status"]["phase"] == "Failed";
    let count = match key {
        "summary/nodes" => items("nodes").len(),
        "summary/pods" => pods.len(),
        "summary/placed" => pods.iter().filter(|p| bound(p) && !failed(p)).count(),
        "summary/failed" => pods.iter().filter(|p| failed(p)).count(),
        "summary/pending" => pods.iter().filter(|p| !bound(p) && !failed(p)).count(),
        "summary/devices" => items("resourceslices")
            .iter()
            .filter(|s| s["spec"]["nodeName"].is_string())
            .map(|s| s["spec"]["devices"].as_array().map_or(0, Vec::len))
            .sum(),
        "summary/allocatedDevices" => items("resourceclaims")
            .iter()
            .map(|c| {
                c["status"]["allocation"]["devices"]["results"]
                    .as_array()
                    .map_or(0, Vec::len)
            })
            .sum(),
        other => panic!("the page marks {other}, which the test does not know"),
    };
    count as f64
}

#[test]
fn the_ui_shows_the_live_store_behind_authentication() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    let mut text = CLUSTER.to_string();
    for n in 0..3 {
        text.push_str(&trainer(n));
    }
    serve.ok(&["apply", "-f", &write(dir.path(), "cluster.yaml", &text)]);
    // Two run; the third waits for a GPU.
    let phases = serve.until(
        &[
            "get",
            "pods",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name} {.status.phase} {.status.conditions[?(@.type==\"PodScheduled\")].status}{\"\\n\"}{end}",
        ],
        |text| {
            text.lines().filter(|l| l.contains(" Running ")).count() == 2
                && text.lines().any(|l| l.ends_with(" Pending False"))
        },
    );
    assert_eq!(
        phases.lines().filter(|l| l.contains(" Running ")).count(),
        2,
        "{phases}"
    );
    let (code, body) = serve.http("GET", "/ui/", &[], b"");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("data-key=\"summary/pods\">3<"), "{body}");
    assert!(body.contains("data-key=\"summary/nodes\">1<"), "{body}");
    // No token: anonymous, whom RBAC does not let read the page (as any path of the API).
    let (code, body) = serve.http_as(None, "GET", "/ui/", &[], b"");
    assert_eq!(code, 403, "{body}");
    assert!(body.contains("cannot get path \\\"/ui/\\\""), "{body}");

    // Through kubectl proxy, in the browser.
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let _proxy = Killed(
        Command::new(&kubectl)
            .args(["proxy", "--port", &port.to_string()])
            .env("KUBECONFIG", &serve.kubeconfig)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("kubectl proxy starts"),
    );
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "kubectl proxy did not listen");
        std::thread::sleep(Duration::from_millis(100));
    }
    let url = format!("http://127.0.0.1:{port}/ui/");
    let (dom, stderr) = browse(&url, &dir.path().join("profile"), 3000, &["--dump-dom"]);
    assert_rendered_cleanly(&dom, &stderr);
    assert!(dom.contains("data-live=\""), "the page watches: {stderr}");
    let numbers = marked_numbers(&dom);
    assert_eq!(numbers.len(), 7, "the summary's numbers: {numbers:?}");
    for (key, shown) in &numbers {
        let shown: f64 = shown.parse().unwrap_or_else(|_| panic!("{key}: {shown}"));
        assert_eq!(shown, expected(&serve, key), "{key}");
    }
    assert!(dom.contains("data-key=\"summary/pending\">1<"), "{dom}");

    // The node's drill-down (opened by the address's `#node=`), then the whole page's picture.
    let drill = format!("{url}#node=gpu-1");
    let (dom, stderr) = browse(&drill, &dir.path().join("profile2"), 3000, &["--dump-dom"]);
    assert_rendered_cleanly(&dom, &stderr);
    assert!(
        dom.contains("class=\"machine\""),
        "the node's picture: {dom}"
    );
    assert_eq!(dom.matches("class=\"cpu\"").count(), 4, "{dom}");
    assert_eq!(dom.matches("class=\"device\"").count(), 2, "{dom}");
    compare_screenshot(
        &drill,
        &dir.path().join("profile3"),
        &dir.path().join("shot.png"),
        (1280, 1600),
        "serve-ui",
        0.03,
    );
}
