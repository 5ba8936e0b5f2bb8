//! One `allot serve` process for the end-to-end tests: started on a data directory with extra
//! arguments, its address and kubeconfig read from its stdout, driven with kubectl (as the
//! kubeconfig's admin or with a bearer token) and raw HTTPS, and killed (SIGKILL) when dropped.
//! Every tests/serve*.rs file starts its servers through this harness.

#![allow(dead_code)]

#[path = "https.rs"]
pub mod https;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `allot serve`; killed with SIGKILL when dropped, before what it runs on (an etcd,
/// say) is dropped.
pub struct Serve {
    child: Child,
    /// The `--data-dir` it serves from.
    pub data_dir: PathBuf,
    /// The kubeconfig it printed (DATA_DIR/kubeconfig).
    pub kubeconfig: PathBuf,
    /// `host:port` of its HTTPS listener.
    pub address: String,
    /// The kubectl the tests drive it with.
    pub kubectl: PathBuf,
    /// Dropped after the server is killed.
    _backend: Option<Box<dyn std::any::Any + Send + Sync>>,
}

impl Serve {
    /// `allot serve --listen 127.0.0.1:0 --data-dir DATA_DIR ARGS...`, once it printed its
    /// kubeconfig.
    pub fn start<S: AsRef<std::ffi::OsStr>>(data_dir: &Path, kubectl: &Path, args: &[S]) -> Serve {
        Serve::start_on(data_dir, kubectl, args, None)
    }

    /// [`Serve::start`] with something that must outlive the server (its etcd).
    pub fn start_on<S: AsRef<std::ffi::OsStr>>(
        data_dir: &Path,
        kubectl: &Path,
        args: &[S],
        backend: Option<Box<dyn std::any::Any + Send + Sync>>,
    ) -> Serve {
        let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("allot serve starts");
        let stdout = child.stdout.take().expect("stdout is piped");
        let mut address = String::new();
        let mut kubeconfig = PathBuf::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.expect("reads stdout");
            if let Some((_, rest)) = line.split_once("serving on https://") {
                address = rest.trim().to_string();
            }
            if let Some(rest) = line.strip_prefix("kubeconfig: ") {
                kubeconfig = PathBuf::from(rest);
                break;
            }
        }
        assert!(
            kubeconfig.exists(),
            "allot serve printed no kubeconfig path"
        );
        assert!(!address.is_empty(), "allot serve printed no address");
        Serve {
            child,
            data_dir: data_dir.to_path_buf(),
            kubeconfig,
            address,
            kubectl: kubectl.to_path_buf(),
            _backend: backend,
        }
    }

    /// The server's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// A kubectl command on this server as `token`'s user (the kubeconfig's admin with `None`),
    /// with HOME in the data directory so that no discovery cache is shared between tests.
    pub fn kubectl_command_as(&self, token: Option<&str>, args: &[&str]) -> Command {
        let mut command = Command::new(&self.kubectl);
        command
            .env("KUBECONFIG", &self.kubeconfig)
            .env(
                "HOME",
                self.kubeconfig.parent().unwrap_or(Path::new("/tmp")),
            )
            .env_remove("KUBERNETES_SERVICE_HOST");
        if let Some(token) = token {
            command.arg(format!("--token={token}"));
        }
        command.args(args);
        command
    }

    /// A kubectl command as the admin user.
    pub fn kubectl_command(&self, args: &[&str]) -> Command {
        self.kubectl_command_as(None, args)
    }

    pub fn kubectl_as(&self, token: Option<&str>, args: &[&str]) -> Output {
        self.kubectl_command_as(token, args)
            .output()
            .expect("kubectl runs")
    }

    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_as(None, args)
    }

    /// (success, stdout, stderr) of a kubectl run.
    pub fn run(&self, args: &[&str]) -> (bool, String, String) {
        let out = self.kubectl(args);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// stdout of a kubectl run as `token`'s user that must succeed (the test fails with its
    /// stderr otherwise).
    pub fn ok_as(&self, token: Option<&str>, args: &[&str]) -> String {
        let out = self.kubectl_as(token, args);
        assert!(
            out.status.success(),
            "kubectl {args:?} as {token:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    pub fn ok(&self, args: &[&str]) -> String {
        self.ok_as(None, args)
    }

    /// (stdout, stderr) of a kubectl run that must succeed.
    pub fn ok_with_stderr(&self, args: &[&str]) -> (String, String) {
        let out = self.kubectl(args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// stderr of a kubectl run as `token`'s user that must fail.
    pub fn fails_as(&self, token: Option<&str>, args: &[&str]) -> String {
        let out = self.kubectl_as(token, args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} as {token:?} should fail: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    pub fn fails(&self, args: &[&str]) -> String {
        self.fails_as(None, args)
    }

    /// `kubectl ARGS -o json` as the admin, parsed.
    pub fn json(&self, args: &[&str]) -> Value {
        let mut all = args.to_vec();
        all.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&all)).expect("kubectl prints JSON")
    }

    /// Writes a file into the data directory and returns its path.
    pub fn file(&self, name: &str, text: &str) -> String {
        let path = self.data_dir.join(name);
        std::fs::write(&path, text).expect("writes");
        path.to_string_lossy().into_owned()
    }

    /// A raw HTTPS/1.1 request as `token`'s user (no Authorization header with `None`) that
    /// trusts the server's CA; (status code, body).
    pub fn http_as(
        &self,
        token: Option<&str>,
        method: &str,
        path: &str,
        headers: &[&str],
        body: &[u8],
    ) -> (u16, String) {
        let ca = self
            .kubeconfig
            .parent()
            .map(|d| d.join("pki/ca.crt"))
            .unwrap_or_default();
        https::request(&self.address, &ca, token, method, path, headers, body)
    }

    /// A raw HTTPS/1.1 request as the admin user (the kubeconfig's token) unless `headers` hold
    /// an Authorization header; (status code, body).
    pub fn http(&self, method: &str, path: &str, headers: &[&str], body: &[u8]) -> (u16, String) {
        let own = headers
            .iter()
            .any(|h| h.to_ascii_lowercase().starts_with("authorization:"));
        let token = https::kubeconfig_token(&self.kubeconfig).filter(|_| !own);
        self.http_as(token.as_deref(), method, path, headers, body)
    }

    /// [`Serve::http`] with a JSON body.
    pub fn http_json(&self, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        self.http(method, path, &["Content-Type: application/json"], body)
    }

    /// SIGKILL, then stop what it ran on (its etcd), so a restart can start it again.
    pub fn kill9_all(mut self) {
        self.kill9();
        drop(self);
    }

    /// SIGKILL, and wait for the process to end.
    pub fn kill9(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        self.kill9();
    }
}

impl Serve {
    /// Runs kubectl until `done` accepts its output (or 60 s pass); returns the last output.
    pub fn until(&self, args: &[&str], done: impl Fn(&str) -> bool) -> String {
        self.until_status(args, |ok, text| ok && done(text))
    }

    /// Runs kubectl until `done` accepts whether it succeeded and its output (or 60 s pass);
    /// returns the last output.
    pub fn until_status(&self, args: &[&str], done: impl Fn(bool, &str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let out = self.kubectl(args);
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if done(out.status.success(), &text) || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

/// Writes `text` to `dir/name`; returns the path as kubectl's `-f` takes it.
pub fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("writes");
    path.to_string_lossy().into_owned()
}

/// The spec's examples (`examples/spec`).
pub fn spec_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/spec"))
}

/// Polls `check` every 200 ms until it holds; fails naming `what` after 60 s.
pub fn wait_for(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}
