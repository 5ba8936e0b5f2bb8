//! A throw-away etcd for tests: the `etcd` binary (Debian package `etcd-server`) on a data
//! directory and free loopback ports, killed when dropped. Its data directory outlives it, so a
//! test can restart etcd on the same data (after a kill -9 of the servers, say).

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Whether an `etcd` binary can be run (`ALLOT_ETCD` names one, else `etcd` on PATH).
pub fn binary() -> Option<PathBuf> {
    let path = std::env::var_os("ALLOT_ETCD").map_or_else(|| PathBuf::from("etcd"), PathBuf::from);
    let works = Command::new(&path)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    works.then_some(path)
}

/// The etcd binary, or `None` after a loud skip notice. Under CI a missing etcd fails the test:
/// .ci/run installs it.
pub fn binary_or_skip() -> Option<PathBuf> {
    let found = binary();
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "etcd not found: install the etcd-server package or set ALLOT_ETCD (CI must run these tests)"
        );
        eprintln!(
            "\n########## SKIPPED: etcd not found (apt-get install etcd-server, or set ALLOT_ETCD) ##########\n"
        );
    }
    found
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
