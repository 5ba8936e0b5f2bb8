//! End-to-end tests of `allot serve`'s start-up flags (issue 19): a free port when 6443 is
//! taken (and which one, said on stderr), `--write-kubeconfig` merging a context into the
//! user's kubeconfig as kind does (other contexts kept), and one clear line when the address
//! cannot be bound. kubectl 1.37 comes from `ALLOT_KUBECTL` (the README's test command,
//! `cargo xtask test`, provisions it).

#[path = "support/kubectl.rs"]
mod kubectl;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// A running `allot serve`, killed on drop.
struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `allot serve ARGS` with `KUBECONFIG` set; returns it, its stdout lines up to the
/// kubeconfig line(s), and a reader of its stderr.
fn serve(args: &[&str], kubeconfig: &Path) -> (Running, Vec<String>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
        .arg("serve")
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("allot serve starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("reads");
        let done = line.contains("merged into");
        lines.push(line);
        if done {
            break;
        }
    }
    (Running { child }, lines)
}

const OTHER: &str = "apiVersion: v1\nkind: Config\nclusters:\n- name: prod\n  cluster:\n    server: https://prod.example.com:6443\nusers:\n- name: me\n  user:\n    token: t\ncontexts:\n- name: prod\n  context:\n    cluster: prod\n    user: me\ncurrent-context: prod\n";

/// Issue 19: `allot serve` failed when 6443 was taken; `--write-kubeconfig` merges a context
/// into the user's kubeconfig and keeps the others.
#[test]
fn a_free_port_when_6443_is_taken_and_the_context_merged_into_the_kubeconfig() {
    let kubectl = kubectl::find();
    // Hold 6443 (or find it held by someone else: taken either way).
    let _holder = TcpListener::bind("127.0.0.1:6443");
    let dir = tempfile::tempdir().expect("tempdir");
    let config = dir.path().join("home-kube-config");
    std::fs::write(&config, OTHER).expect("writes");
    let data = dir.path().join("cluster-one");
    let data_arg = data.display().to_string();
    let (mut running, lines) = serve(&["--data-dir", &data_arg, "--write-kubeconfig"], &config);
    let serving = lines
        .iter()
        .find_map(|l| l.strip_prefix("serving on https://"))
        .unwrap_or_else(|| panic!("no address: {lines:?}"))
        .to_string();
    assert!(serving.starts_with("127.0.0.1:"), "{serving}");
    assert_ne!(serving, "127.0.0.1:6443");
    assert!(
        lines
            .iter()
            .any(|l| l.contains("context allot-cluster-one merged into")),
        "{lines:?}"
    );
    // kubectl with nothing but KUBECONFIG talks to the new server.
    let out = Command::new(&kubectl)
        .args(["get", "namespaces", "-o", "name"])
        .env("KUBECONFIG", &config)
        .env("HOME", dir.path())
        .output()
        .expect("kubectl runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("namespace/kube-system"));
    let contexts = Command::new(&kubectl)
        .args(["config", "get-contexts", "-o", "name"])
        .env("KUBECONFIG", &config)
        .output()
        .expect("kubectl runs");
    let contexts = String::from_utf8_lossy(&contexts.stdout);
    assert_eq!(
        contexts.lines().collect::<Vec<_>>(),
        ["allot-cluster-one", "prod"]
    );
    // Which port, said on stderr.
    let _ = running.child.kill();
    let _ = running.child.wait();
    let mut stderr = String::new();
    let _ = running
        .child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr);
    assert!(
        stderr.contains(&format!(
            "port 6443 is in use; listening on {serving} instead"
        )),
        "{stderr}"
    );
}

/// Issue 19: `Address already in use (os error 98): Address already in use (os error 98)`.
#[test]
fn an_address_in_use_is_one_clear_line() {
    let taken = TcpListener::bind("127.0.0.1:0").expect("binds");
    let address = taken.local_addr().expect("address").to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", &address, "--data-dir"])
        .arg(dir.path().join("data"))
        .stdin(Stdio::null())
        .output()
        .expect("allot serve runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("allot serve: cannot listen on {address}: Address already in use (os error 98)")
    );
}
