//! `allot serve`'s event log against damage, through the binary: a torn tail is dropped and
//! reported on stderr; a changed byte before the tail, a missing log and an empty log in a
//! used data directory each refuse to start (exit code 2) with the offset or the state and the
//! remedy; following the remedy starts the server; a version 1 log is upgraded on open.
//! No kubectl needed: the server's own start-up does the writing. The dropped bytes are also in
//! `/metrics` (`allot_storage_log_torn_bytes_dropped`).

#[path = "support/https.rs"]
mod https;

use std::fs::OpenOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A started server, killed (SIGKILL) when dropped.
struct Running {
    child: Child,
    stderr: PathBuf,
}

impl Running {
    /// Kills it and returns what it printed on stderr.
    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `allot serve --data-dir DIR ARGS...`: `Ok` once it printed its kubeconfig (it serves), or
/// the exit code and stderr when it ended before that. No timing: its stdout either reaches
/// the kubeconfig line or ends.
fn serve(dir: &Path, args: &[&str]) -> Result<Running, (i32, String)> {
    let stderr = dir.with_extension(format!("stderr-{}", std::process::id()));
    let stderr_file = std::fs::File::create(&stderr).expect("creates");
    let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(stderr_file)
        .spawn()
        .expect("allot serve starts");
    let stdout = child.stdout.take().expect("piped");
    for line in BufReader::new(stdout).lines() {
        if line.expect("reads").starts_with("kubeconfig: ") {
            return Ok(Running { child, stderr });
        }
    }
    let status = child.wait().expect("waits");
    let text = std::fs::read_to_string(&stderr).unwrap_or_default();
    Err((status.code().unwrap_or(-1), text))
}

/// A data directory a server used (it wrote its namespaces and roles, pki/ and tokens.csv).
fn used_dir() -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("data");
    serve(&dir, &[])
        .map_err(|e| e.1)
        .expect("first start")
        .stop();
    let log = dir.join("events.log");
    assert!(log.exists() && dir.join("pki").exists());
    (root, log)
}

/// `GET path` on the server that wrote `dir/kubeconfig`, as its admin (or anonymously).
fn get(dir: &Path, path: &str, admin: bool) -> (u16, String) {
    let kubeconfig = dir.join("kubeconfig");
    let text = std::fs::read_to_string(&kubeconfig).expect("kubeconfig");
    let address = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: https://"))
        .expect("server address")
        .to_string();
    let token = https::kubeconfig_token(&kubeconfig).filter(|_| admin);
    https::request(
        &address,
        &dir.join("pki/ca.crt"),
        token.as_deref(),
        "GET",
        path,
        &[],
        b"",
    )
}

/// The value of the series `name` (with its labels) in a `/metrics` text.
fn series<'a>(metrics: &'a str, name: &str) -> Option<&'a str> {
    metrics
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' '))
}

#[test]
fn a_torn_tail_is_dropped_and_reported() {
    let (_root, log) = used_dir();
    let dir = log.parent().expect("dir").to_path_buf();
    let good = std::fs::read(&log).expect("reads");
    // A record cut short by a crash: no newline.
    let torn = b"1234abcd {\"rv\":99999,\"type\":\"ADD";
    OpenOptions::new()
        .append(true)
        .open(&log)
        .and_then(|mut f| f.write_all(torn))
        .expect("appends");
    let running = serve(&dir, &[]).map_err(|e| e.1).expect("starts");
    let (code, metrics) = get(&dir, "/metrics", true);
    assert_eq!(code, 200, "{metrics}");
    let dropped = torn.len().to_string();
    assert_eq!(
        series(&metrics, "allot_storage_log_torn_bytes_dropped"),
        Some(dropped.as_str()),
        "{metrics}"
    );
    assert!(
        series(
            &metrics,
            "apiserver_storage_objects{resource=\"namespaces\"}"
        )
        .is_some_and(|n| n.parse::<u32>().is_ok_and(|n| n >= 3)),
        "{metrics}"
    );
    let (code, body) = get(&dir, "/metrics", false);
    // Anonymous requests are authenticated as system:anonymous, which RBAC keeps out.
    assert_eq!(code, 403, "{body}");
    assert!(body.contains(r#"cannot get path \"/metrics\""#), "{body}");
    let stderr = running.stop();
    assert!(
        stderr.contains(&format!(
            "dropped a torn last record, {} bytes at byte {}",
            torn.len(),
            good.len()
        )),
        "{stderr}"
    );
    // The tail is gone for good (the server appended after it was cut).
    let now = std::fs::read(&log).expect("reads");
    assert!(now.starts_with(&good) && !now.windows(8).any(|w| w == b"1234abcd"));
}

#[test]
fn a_changed_byte_refuses_to_start_with_its_offset_and_the_remedy() {
    let (_root, log) = used_dir();
    let dir = log.parent().expect("dir").to_path_buf();
    let mut bytes = std::fs::read(&log).expect("reads");
    let text = String::from_utf8(bytes.clone()).expect("text");
    // One byte of the kube-system namespace's name; the JSON stays valid.
    let at = text.find("\"kube-system\"").expect("there") + 1;
    let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
    bytes[at] = b'z';
    std::fs::write(&log, &bytes).expect("writes");
    let (code, stderr) = serve(&dir, &[]).err().expect("refused");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains(&format!(
            "events.log: corrupt record at byte {line_start}: record "
        )) && stderr.contains("checksum mismatch")
            && stderr.contains(&format!("truncate -s {line_start} {}", log.display())),
        "{stderr}"
    );
    // Following the remedy (losing that record and the rest) starts the server again.
    OpenOptions::new()
        .write(true)
        .open(&log)
        .and_then(|f| f.set_len(line_start as u64))
        .expect("truncates");
    serve(&dir, &[])
        .map_err(|e| e.1)
        .expect("starts after the remedy")
        .stop();
}

#[test]
fn a_missing_or_empty_log_in_a_used_directory_refuses_to_start() {
    let (_root, log) = used_dir();
    let dir = log.parent().expect("dir").to_path_buf();
    std::fs::remove_file(&log).expect("removes");
    let (code, stderr) = serve(&dir, &[]).err().expect("refused");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("events.log: missing, but")
            && stderr.contains("shows that this data directory was used before")
            && stderr.contains("--allow-empty-store"),
        "{stderr}"
    );
    std::fs::write(&log, b"").expect("writes");
    let (code, stderr) = serve(&dir, &[]).err().expect("refused");
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("events.log: empty, but"), "{stderr}");
    let stderr = serve(&dir, &["--allow-empty-store"])
        .map_err(|e| e.1)
        .expect("starts when told to")
        .stop();
    assert!(stderr.contains("starting an empty cluster"), "{stderr}");
    // It wrote its namespaces again: the next start needs no flag.
    serve(&dir, &[]).map_err(|e| e.1).expect("starts").stop();
}

#[test]
fn a_version_1_log_is_upgraded_on_open() {
    let (_root, log) = used_dir();
    let dir = log.parent().expect("dir").to_path_buf();
    let text = std::fs::read_to_string(&log).expect("reads");
    // Version 1: the same records as plain JSON lines.
    let v1: String = text
        .lines()
        .skip(1)
        .map(|line| format!("{}\n", &line[9..]))
        .collect();
    let records = v1.lines().count();
    std::fs::write(&log, &v1).expect("writes");
    let stderr = serve(&dir, &[]).map_err(|e| e.1).expect("starts").stop();
    assert!(
        stderr.contains(&format!(
            "rewrote the log's {records} records in the checksummed format"
        )),
        "{stderr}"
    );
    let upgraded = std::fs::read_to_string(&log).expect("reads");
    assert!(
        upgraded.starts_with("allot-event-log 2 crc32c\n"),
        "{upgraded}"
    );
    assert!(upgraded.starts_with(&text), "the same records, checksummed");
}
