//! A throw-away etcd for tests: the `etcd` binary (Debian package `etcd-server`) on a data
//! directory and free loopback ports, killed when dropped. Its data directory outlives it, so a
//! test can restart etcd on the same data (after a kill -9 of the servers, say).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The etcd binary (`ALLOT_ETCD` names one, else `etcd` on PATH); panics with the remedy when
/// it cannot be run. The README's test command, `cargo xtask test`, provisions one and sets
/// ALLOT_ETCD.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("ALLOT_ETCD")
        .filter(|p| !p.is_empty())
        .map_or_else(|| PathBuf::from("etcd"), PathBuf::from);
    let works = Command::new(&path)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        works,
        "etcd not found ({} --version does not run): run the README's test command, `cargo xtask test`, which provisions kubectl 1.37 and etcd into target/tools/ (or `cargo xtask tools` for the variables to set by hand)",
        path.display()
    );
    path
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running etcd.
pub struct Etcd {
    child: Child,
    /// The client URL.
    pub url: String,
}

impl Etcd {
    /// Starts etcd on `dir` (created if needed) and waits until it answers.
    pub fn start(binary: &Path, dir: &Path) -> Etcd {
        std::fs::create_dir_all(dir).expect("creates the etcd directory");
        for _ in 0..5 {
            let client = free_port();
            let peer = free_port();
            let url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let log = std::fs::File::create(dir.join("etcd.log")).expect("creates the etcd log");
            let mut child = Command::new(binary)
                .arg("--data-dir")
                .arg(dir.join("data"))
                .args([
                    "--name",
                    "allot-test",
                    "--listen-client-urls",
                    &url,
                    "--advertise-client-urls",
                    &url,
                    "--listen-peer-urls",
                    &peer_url,
                    "--initial-advertise-peer-urls",
                    &peer_url,
                    "--initial-cluster",
                    &format!("allot-test={peer_url}"),
                ])
                .stdout(Stdio::null())
                .stderr(log)
                .spawn()
                .expect("etcd starts");
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                if std::net::TcpStream::connect(("127.0.0.1", client)).is_ok() && health(&url) {
                    return Etcd { child, url };
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            // A port was taken meanwhile, or etcd is slow: try again on new ports.
            let _ = child.kill();
            let _ = child.wait();
        }
        let log = std::fs::read_to_string(dir.join("etcd.log")).unwrap_or_default();
        panic!("etcd did not start on {}:\n{log}", dir.display());
    }

    /// Kills etcd at once.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `GET /health` answers `"health":"true"`.
fn health(url: &str) -> bool {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = format!("GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    response.contains("\"health\":\"true\"")
}

impl Drop for Etcd {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A JSON request to etcd's gRPC gateway (`/v3/...`); the answer's JSON.
fn gateway(url: &str, path: &str, body: &str) -> serde_json::Value {
    use std::io::{Read, Write};
    let address = url.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(address).expect("connects to etcd");
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let request = format!(
        "POST {path} HTTP/1.1\r\nHost: {address}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).expect("writes");
    let mut response = String::new();
    let _ = stream.read_to_string(&mut response);
    let (head, json) = response.split_once("\r\n\r\n").unwrap_or_default();
    assert!(head.starts_with("HTTP/1.1 200"), "etcd {path}: {response}");
    serde_json::from_str(json.trim()).unwrap_or_else(|e| panic!("etcd {path}: {e}: {json}"))
}

/// etcd's current revision (the header of a range request).
pub fn revision(url: &str) -> u64 {
    // The key "/" in base64.
    let answer = gateway(url, "/v3/kv/range", r#"{"key":"Lw=="}"#);
    answer["header"]["revision"]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or_else(|| panic!("no revision in {answer}"))
}

/// Compacts etcd's history up to `revision` (as kube-apiserver's compactor does).
pub fn compact(url: &str, revision: u64) {
    gateway(
        url,
        "/v3/kv/compaction",
        &format!(r#"{{"revision":"{revision}","physical":true}}"#),
    );
}

/// A TCP forwarder in front of etcd that a test can cut (every connection through it drops,
/// new ones are refused) and restore: a server behind it loses its watch meanwhile.
pub struct Proxy {
    /// The URL to give the server instead of etcd's.
    pub url: String,
    open: std::sync::Arc<std::sync::atomic::AtomicBool>,
    connections: std::sync::Arc<std::sync::Mutex<Vec<std::net::TcpStream>>>,
}

impl Proxy {
    /// Forwards a free loopback port to etcd's client URL.
    pub fn start(etcd_url: &str) -> Proxy {
        use std::sync::atomic::Ordering;
        let listener = TcpListener::bind("127.0.0.1:0").expect("binds");
        let url = format!("http://{}", listener.local_addr().expect("has an address"));
        let upstream = etcd_url.trim_start_matches("http://").to_string();
        let open = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let connections = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let (gate, kept) = (open.clone(), connections.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                if !gate.load(Ordering::SeqCst) {
                    continue;
                }
                let Ok(server) = std::net::TcpStream::connect(&upstream) else {
                    continue;
                };
                let pipes = [
                    (client.try_clone(), server.try_clone()),
                    (server.try_clone(), client.try_clone()),
                ];
                if let Ok(mut list) = kept.lock() {
                    list.extend(client.try_clone());
                    list.extend(server.try_clone());
                }
                for (from, to) in pipes {
                    if let (Ok(mut from), Ok(mut to)) = (from, to) {
                        std::thread::spawn(move || {
                            let _ = std::io::copy(&mut from, &mut to);
                            let _ = to.shutdown(std::net::Shutdown::Both);
                        });
                    }
                }
            }
        });
        Proxy {
            url,
            open,
            connections,
        }
    }

    /// Drops every connection and refuses new ones.
    pub fn cut(&self) {
        self.open.store(false, std::sync::atomic::Ordering::SeqCst);
        if let Ok(mut list) = self.connections.lock() {
            for stream in list.drain(..) {
                let _ = stream.shutdown(std::net::Shutdown::Both);
            }
        }
    }

    /// Forwards again.
    pub fn restore(&self) {
        self.open.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}
