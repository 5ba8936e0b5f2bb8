//! `allot serve`'s `/ui/`: the report page over the live store, behind the API's
//! authentication, opened through `kubectl proxy` in a real headless Chromium (no script error,
//! the page's numbers those of the store). kubectl comes from `ALLOT_KUBECTL` and Chromium from
//! `ALLOT_CHROMIUM` or Debian's `/usr/bin/chromium` (`cargo xtask test` provisions both).

#[path = "support/serve.rs"]
mod harness;
#[path = "support/kubectl.rs"]
mod kubectl;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use harness::Serve;

/// A child process killed on drop.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn chromium() -> PathBuf {
    let path = std::env::var_os("ALLOT_CHROMIUM")
        .filter(|v| !v.is_empty())
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.exists(),
        "{} is missing: run the tests with `cargo xtask test`, which provisions Chromium, or set ALLOT_CHROMIUM",
        path.display()
    );
    path
}

#[test]
fn the_ui_shows_the_live_store_behind_authentication() {
    let kubectl = kubectl::find();
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::start(&dir.path().join("data"), &kubectl, &[] as &[&str]);
    let pod = serve.file(
        "pod.yaml",
        "apiVersion: v1\nkind: Pod\nmetadata: {name: lonely, namespace: default}\nspec: {containers: [{name: c, image: x}]}\n",
    );
    serve.ok(&["apply", "-f", &pod]);
    let (code, body) = serve.http("GET", "/ui/", &[], b"");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("data-key=\"summary/pods\">1<"), "{body}");
    assert!(body.contains("data-key=\"summary/nodes\">0<"), "{body}");
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
    let output = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
            "--virtual-time-budget=3000",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("profile").display()
        ))
        .arg(format!("http://127.0.0.1:{port}/ui/"))
        .output()
        .expect("run chromium");
    let dom = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        dom.contains("data-ready=\"1\""),
        "the script ran: {dom}\n{stderr}"
    );
    assert!(
        dom.contains("data-errors=\"0\""),
        "no script error: {stderr}"
    );
    assert!(dom.contains("data-live=\""), "the page watches: {stderr}");
    assert!(dom.contains("data-key=\"summary/pods\">1<"), "{dom}");
    assert!(dom.contains("data-key=\"summary/pending\">1<"), "{dom}");
    for line in stderr.lines() {
        assert!(
            !(line.contains("CONSOLE") && line.contains("Uncaught")),
            "console error: {line}"
        );
    }
}
