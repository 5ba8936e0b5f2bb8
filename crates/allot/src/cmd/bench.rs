//! `allot bench serve`: the load benchmark of `allot serve` (issue 6). For each store (the
//! embedded event log, etcd) it starts a fresh `allot serve` as a child process, creates a
//! generated cluster through the API with several keep-alive client threads (a DeviceClass, a
//! ResourceClaimTemplate, one NodeTopology, simulated Nodes with a ResourceSlice of GPUs each),
//! then the pods, each asking for a GPU through the template, and watches pods and claims until
//! every pod is bound with its claim allocated, then Running on its simulated node.
//!
//! Figures per store: fixture objects created per second, pods created per second (the pod
//! creation phase's wall time), scheduling pods per second (from the first pod create to the
//! last pod seen bound with its claims allocated), and the time until every pod runs. Times are
//! the client's observations: a pod counts when the watch event that completes it arrives.
//!
//! Key design decision: the benchmark drives the real binary over HTTPS, as a client would,
//! and observes progress through two watches (pods, resourceclaims) instead of polling lists, so
//! that measuring costs the server little. The children (`allot serve`, a private etcd) are
//! killed when the benchmark ends, fails, or is interrupted (SIGINT, SIGTERM).

mod http;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader, IsTerminal, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use allot_sim::generate::{GenOptions, cluster};
use anyhow::{Context, anyhow, bail};
use clap::{Subcommand, ValueEnum};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use http::{Connection, Endpoint};

/// `allot bench ...`.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Load `allot serve` through its API: a generated cluster, then pods with claim
    /// templates; report objects/s and scheduling pods/s per store.
    Serve(ServeArgs),
}

/// Which stores to measure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum StoreChoice {
    /// The embedded event log under the data directory.
    Embedded,
    /// etcd v3 (`--etcd-servers`, else a private `etcd` from PATH).
    Etcd,
    /// Both, embedded first.
    Both,
}

/// Output format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Output {
    /// A table for people.
    Table,
    /// One JSON document.
    Json,
}

/// Arguments of `allot bench serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Pods to create; each asks for one GPU through a ResourceClaimTemplate.
    #[arg(long, default_value_t = 10_000)]
    pub pods: usize,
    /// Simulated nodes (default: just enough GPUs for every pod).
    #[arg(long)]
    pub nodes: Option<usize>,
    /// GPUs in each node's ResourceSlice.
    #[arg(long, default_value_t = 8)]
    pub devices_per_node: usize,
    /// Client threads creating objects in parallel, each on its own keep-alive connection.
    #[arg(long, default_value_t = 8)]
    pub clients: usize,
    /// The stores to measure.
    #[arg(long, value_enum, default_value_t = StoreChoice::Both)]
    pub store: StoreChoice,
    /// An etcd to use for the etcd store (comma-separated client URLs); without it a private
    /// `etcd` (ALLOT_ETCD, else from PATH) runs on a temporary directory. The benchmark writes
    /// under a fresh key prefix and leaves those keys behind.
    #[arg(long, value_name = "URL,...")]
    pub etcd_servers: Option<String>,
    /// Give up on a store when no pod got scheduled or started running for this long.
    #[arg(long, default_value_t = 120)]
    pub stall_seconds: u64,
    /// Stop a store's run after this long (from its first create) and report how far it got.
    #[arg(long, value_name = "SECONDS")]
    pub time_limit_seconds: Option<u64>,
    /// Output format.
    #[arg(short = 'o', long, value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

// ---------------------------------------------------------------------------------------------
// Children and temporary directories, cleaned up on drop and on SIGINT/SIGTERM.

/// Children and temporary directories to clean up if the process is interrupted, and whether
/// it was: once `interrupted` is set (under the lock), nothing new is registered, so the clean-up
/// that follows leaves nothing behind.
#[derive(Default)]
struct Registry {
    children: BTreeMap<u64, Child>,
    /// How the children the clean-up killed ended, for their guards.
    reaped: BTreeMap<u64, ExitStatus>,
    dirs: BTreeMap<u64, PathBuf>,
    interrupted: bool,
}

/// The registry and the interrupt flag of one benchmark run. The process has one
/// ([`CLEANUP`]); tests make their own to drive the signal path many times.
#[derive(Default)]
struct Cleanup {
    registry: Mutex<Registry>,
    /// Set (before any child is killed) when the run was interrupted; readable without the lock.
    interrupted: AtomicBool,
}

static CLEANUP: Cleanup = Cleanup {
    registry: Mutex::new(Registry {
        children: BTreeMap::new(),
        reaped: BTreeMap::new(),
        dirs: BTreeMap::new(),
        interrupted: false,
    }),
    interrupted: AtomicBool::new(false),
};
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

/// Refusal to start something after an interrupt.
const INTERRUPTED: &str = "interrupted";

impl Cleanup {
    fn with<T>(&self, f: impl FnOnce(&mut Registry) -> T) -> T {
        let mut guard = self.registry.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut guard)
    }

    /// Whether the run was interrupted.
    fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// The signal path up to the exit: marks the run interrupted, then kills every registered
    /// child and removes every registered directory. The flag is set before the first kill, so
    /// whoever sees a child die of it can tell (see [`Cleanup::outcome`]).
    fn interrupt(&self) {
        self.interrupted.store(true, Ordering::SeqCst);
        self.with(|registry| registry.interrupted = true);
        self.clean_up_all();
    }

    /// Kills every registered child and removes every registered directory. Taking the lock
    /// also waits for a clean-up that another thread is doing.
    fn clean_up_all(&self) {
        self.with(|registry| {
            for (token, mut child) in std::mem::take(&mut registry.children) {
                let _ = child.kill();
                if let Ok(status) = child.wait() {
                    registry.reaped.insert(token, status);
                }
            }
            for (_, dir) in std::mem::take(&mut registry.dirs) {
                let _ = std::fs::remove_dir_all(dir);
            }
        });
    }

    /// The exit code of a run that ended with `result`: 130 when it was interrupted, whatever
    /// the main thread saw meanwhile (a server killed under it by the clean-up is a consequence
    /// of the interrupt, not a failure). Waits until the clean-up is complete.
    fn outcome(&self, result: anyhow::Result<u8>) -> anyhow::Result<u8> {
        if self.interrupted() {
            self.clean_up_all();
            return Ok(130);
        }
        result
    }
}

/// On SIGINT or SIGTERM: clean up, then exit 130. A terminal's Ctrl-C reaches only the
/// benchmark: its children run in their own process group, so that they die only by this
/// clean-up and the main thread can tell an interrupt from a crash. The handlers are in place
/// when this returns.
fn install_interrupt_handler() {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    let signals = {
        let _entered = runtime.enter();
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
    };
    let Ok((mut interrupt, mut terminate)) = signals else {
        return;
    };
    std::thread::spawn(move || {
        runtime.block_on(async {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
        });
        eprintln!("\nallot bench: interrupted, stopping the servers");
        CLEANUP.interrupt();
        std::process::exit(130);
    });
}

/// A child process killed (and reaped) on drop.
struct ChildGuard {
    cleanup: &'static Cleanup,
    token: u64,
    pid: u32,
    what: String,
}

impl ChildGuard {
    /// Starts the command in a process group of its own (see [`install_interrupt_handler`]),
    /// unless the run was interrupted.
    fn spawn(command: &mut Command, what: &str) -> anyhow::Result<ChildGuard> {
        Self::spawn_in(&CLEANUP, command, what)
    }

    fn spawn_in(
        cleanup: &'static Cleanup,
        command: &mut Command,
        what: &str,
    ) -> anyhow::Result<ChildGuard> {
        use std::os::unix::process::CommandExt;
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        // Spawned under the lock: an interrupt cleans up either before (and this refuses) or
        // after (and kills it).
        let pid = cleanup.with(|r| {
            if r.interrupted {
                bail!("{INTERRUPTED}");
            }
            let child = command
                .process_group(0)
                .spawn()
                .with_context(|| format!("starting {what}"))?;
            let pid = child.id();
            r.children.insert(token, child);
            Ok(pid)
        })?;
        Ok(ChildGuard {
            cleanup,
            token,
            pid,
            what: what.to_string(),
        })
    }

    /// The exit status if the child has ended.
    fn exited(&self) -> Option<ExitStatus> {
        self.cleanup
            .with(|r| match r.children.get_mut(&self.token) {
                Some(child) => child.try_wait().ok().flatten(),
                None => r.reaped.get(&self.token).copied(),
            })
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let child = self.cleanup.with(|r| {
            r.reaped.remove(&self.token);
            r.children.remove(&self.token)
        });
        if let Some(mut child) = child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A temporary directory removed on drop (and on interrupt).
struct TempDir {
    cleanup: &'static Cleanup,
    token: u64,
    dir: tempfile::TempDir,
}

impl TempDir {
    fn new() -> anyhow::Result<TempDir> {
        Self::new_in(&CLEANUP)
    }

    /// A directory registered with `cleanup`, unless the run was interrupted.
    fn new_in(cleanup: &'static Cleanup) -> anyhow::Result<TempDir> {
        let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
        let dir = cleanup.with(|r| {
            if r.interrupted {
                bail!("{INTERRUPTED}");
            }
            let dir = tempfile::Builder::new()
                .prefix("allot-bench-")
                .tempdir()
                .context("creating a temporary directory")?;
            r.dirs.insert(token, dir.path().to_path_buf());
            Ok(dir)
        })?;
        Ok(TempDir {
            cleanup,
            token,
            dir,
        })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        self.cleanup.with(|r| r.dirs.remove(&self.token));
    }
}

/// CPU seconds (user + system) and peak resident memory (MiB) of a process, from /proc.
fn process_usage(pid: u32) -> (Option<f64>, Option<f64>) {
    let cpu = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| {
            // Fields after the command name (which is in parentheses and may hold spaces).
            let rest = &text[text.rfind(')')? + 2..];
            let fields: Vec<&str> = rest.split(' ').collect();
            // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
            let ticks: f64 =
                fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
            // USER_HZ is 100 on every Linux ABI.
            Some(ticks / 100.0)
        });
    let rss = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|text| {
            let line = text.lines().find(|l| l.starts_with("VmHWM:"))?;
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib / 1024.0)
        });
    (cpu, rss)
}

// ---------------------------------------------------------------------------------------------
// etcd and allot serve.

/// The etcd binary (ALLOT_ETCD, else `etcd` on PATH), or why there is none.
fn etcd_binary() -> Result<PathBuf, String> {
    let path = std::env::var_os("ALLOT_ETCD").map_or_else(|| PathBuf::from("etcd"), PathBuf::from);
    match Command::new(&path).arg("--version").output() {
        Ok(out) if out.status.success() => Ok(path),
        Ok(out) => Err(format!(
            "{} --version exited with {}",
            path.display(),
            out.status
        )),
        Err(err) => Err(format!(
            "no etcd ({}: {err}; install etcd-server, set ALLOT_ETCD or pass --etcd-servers)",
            path.display()
        )),
    }
}

fn free_port() -> anyhow::Result<u16> {
    Ok(TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// `GET /health` on an etcd client URL answers `"health":"true"`.
fn etcd_healthy(url: &str) -> bool {
    use std::io::Read;
    let address = url.trim_start_matches("http://").trim_end_matches('/');
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

/// A private etcd on `dir` and free loopback ports.
fn start_etcd(binary: &Path, dir: &Path) -> anyhow::Result<(ChildGuard, String)> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let log_path = dir.join("etcd.log");
    for _ in 0..5 {
        let client = free_port()?;
        let peer = free_port()?;
        let url = format!("http://127.0.0.1:{client}");
        let peer_url = format!("http://127.0.0.1:{peer}");
        let log = std::fs::File::create(&log_path)
            .with_context(|| format!("creating {}", log_path.display()))?;
        let child = ChildGuard::spawn(
            Command::new(binary)
                .arg("--data-dir")
                .arg(dir.join("data"))
                .args([
                    "--name",
                    "allot-bench",
                    "--listen-client-urls",
                    &url,
                    "--advertise-client-urls",
                    &url,
                    "--listen-peer-urls",
                    &peer_url,
                    "--initial-advertise-peer-urls",
                    &peer_url,
                    "--initial-cluster",
                    &format!("allot-bench={peer_url}"),
                ])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(log),
            "etcd",
        )?;
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline && child.exited().is_none() {
            if etcd_healthy(&url) {
                return Ok((child, url));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        // A port was taken meanwhile, or etcd is slow: try again on new ports.
    }
    bail!(
        "etcd did not start (its log: {})",
        tail(&log_path, 20).trim_end()
    )
}

/// The last `lines` lines of a file.
fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    let start = all.len().saturating_sub(lines);
    let mut out = all[start..].join("\n");
    out.push('\n');
    out
}

/// A running `allot serve`.
struct Serve {
    child: ChildGuard,
    endpoint: Endpoint,
    log: PathBuf,
}

/// Starts `allot serve` (this executable) on `data_dir` and a free port, and waits until it
/// printed its kubeconfig.
fn start_serve(data_dir: &Path, etcd: Option<(&str, &str)>) -> anyhow::Result<Serve> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating {}", data_dir.display()))?;
    let exe = std::env::current_exe().context("finding the allot executable")?;
    let log = data_dir.with_extension("log");
    let log_file =
        std::fs::File::create(&log).with_context(|| format!("creating {}", log.display()))?;
    let mut command = Command::new(exe);
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data_dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(log_file);
    if let Some((servers, prefix)) = etcd {
        command.args(["--etcd-servers", servers, "--etcd-prefix", prefix]);
    }
    let child = ChildGuard::spawn(&mut command, "allot serve")?;
    let stdout = child
        .cleanup
        .with(|r| {
            r.children
                .get_mut(&child.token)
                .and_then(|c| c.stdout.take())
        })
        .ok_or_else(|| anyhow!("allot serve has no stdout"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut sent = false;
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if !sent && let Some(path) = line.strip_prefix("kubeconfig: ") {
                let _ = tx.send(PathBuf::from(path));
                sent = true;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(120);
    let kubeconfig = loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(path) => break path,
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if let Some(status) = child.exited() {
                    bail!(
                        "allot serve exited with {status} before serving:\n{}",
                        tail(&log, 20).trim_end()
                    );
                }
                if Instant::now() > deadline {
                    bail!(
                        "allot serve printed no kubeconfig within 120 s:\n{}",
                        tail(&log, 20).trim_end()
                    );
                }
            }
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                bail!(
                    "allot serve closed its output before serving:\n{}",
                    tail(&log, 20).trim_end()
                );
            }
        }
    };
    let endpoint = Endpoint::from_kubeconfig(&kubeconfig)?;
    // Wait for /readyz.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = endpoint
            .connect()
            .and_then(|mut c| c.request("GET", "/readyz", &[]))
            .is_ok_and(|(code, _)| code == 200);
        if ready {
            break;
        }
        if child.exited().is_some() || Instant::now() > deadline {
            bail!(
                "allot serve never answered /readyz:\n{}",
                tail(&log, 20).trim_end()
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(Serve {
        child,
        endpoint,
        log,
    })
}

// ---------------------------------------------------------------------------------------------
// The load.

/// Where objects of a generated kind are created.
fn collection_path(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "DeviceClass" => "/apis/resource.k8s.io/v1/deviceclasses",
        "ResourceClaimTemplate" => {
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaimtemplates"
        }
        "NodeTopology" => "/apis/allot.dev/v1alpha1/nodetopologies",
        "Node" => "/api/v1/nodes",
        "ResourceSlice" => "/apis/resource.k8s.io/v1/resourceslices",
        "Pod" => "/api/v1/namespaces/default/pods",
        _ => return None,
    })
}

/// One create request.
struct Create {
    path: &'static str,
    body: Vec<u8>,
    name: String,
}

fn creates(documents: &[Value]) -> anyhow::Result<Vec<Create>> {
    documents
        .iter()
        .map(|d| {
            let kind = d["kind"].as_str().unwrap_or_default();
            let path = collection_path(kind).ok_or_else(|| anyhow!("no path for kind {kind:?}"))?;
            Ok(Create {
                path,
                body: serde_json::to_vec(d)?,
                name: format!(
                    "{kind} {}",
                    d["metadata"]["name"].as_str().unwrap_or_default()
                ),
            })
        })
        .collect()
}

/// Sends one create on `connection` (reconnecting when it broke), retrying transport errors
/// and the server's "try again" answers a few times.
fn create_one(
    endpoint: &Endpoint,
    connection: &mut Option<Connection>,
    create: &Create,
) -> anyhow::Result<()> {
    let mut last = String::new();
    for attempt in 0..6 {
        if attempt > 0 {
            std::thread::sleep(Duration::from_millis(100 * attempt));
        }
        if connection.as_ref().is_none_or(|c| !c.is_open()) {
            match endpoint.connect() {
                Ok(c) => *connection = Some(c),
                Err(err) => {
                    last = format!("{err:#}");
                    continue;
                }
            }
        }
        let Some(c) = connection.as_mut() else {
            continue;
        };
        match c.request("POST", create.path, &create.body) {
            Ok((200..=202, _)) => return Ok(()),
            // A retried create whose first attempt went through.
            Ok((409, _)) if attempt > 0 => return Ok(()),
            Ok((code @ (429 | 500 | 503 | 504), body)) => {
                last = format!("HTTP {code}: {}", String::from_utf8_lossy(&body));
            }
            Ok((code, body)) => {
                bail!(
                    "creating {}: HTTP {code}: {}",
                    create.name,
                    String::from_utf8_lossy(&body)
                );
            }
            Err(err) => last = format!("{err:#}"),
        }
    }
    bail!("creating {}: {last}", create.name)
}

/// Creates `items` with `clients` threads; calls `tick` about every 100 ms meanwhile. Returns
/// when every item was acknowledged (or, past `deadline`, when the requests under way were),
/// or with the first error.
fn create_all(
    endpoint: &Endpoint,
    items: Vec<Create>,
    clients: usize,
    done: &Arc<AtomicUsize>,
    deadline: Option<Instant>,
    mut tick: impl FnMut(),
) -> anyhow::Result<()> {
    let items = Arc::new(items);
    let next = Arc::new(AtomicUsize::new(0));
    let failed = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..clients.min(items.len().max(1)))
        .map(|_| {
            let (items, next, failed, done) =
                (items.clone(), next.clone(), failed.clone(), done.clone());
            let endpoint = endpoint.clone();
            std::thread::spawn(move || -> anyhow::Result<()> {
                let mut connection = None;
                loop {
                    if failed.load(Ordering::Relaxed)
                        || deadline.is_some_and(|d| Instant::now() >= d)
                    {
                        return Ok(());
                    }
                    let index = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(index) else {
                        return Ok(());
                    };
                    if let Err(err) = create_one(&endpoint, &mut connection, item) {
                        failed.store(true, Ordering::Relaxed);
                        return Err(err);
                    }
                    done.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    while !threads.iter().all(|t| t.is_finished()) {
        tick();
        std::thread::sleep(Duration::from_millis(100));
    }
    for thread in threads {
        thread
            .join()
            .map_err(|_| anyhow!("a client thread panicked"))??;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Watching pods and claims.

#[derive(Deserialize)]
struct WatchEvent {
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    object: WatchObject,
}

#[derive(Deserialize, Default)]
struct WatchObject {
    #[serde(default)]
    metadata: WatchMeta,
    #[serde(default)]
    spec: Option<WatchSpec>,
    #[serde(default)]
    status: Option<WatchStatus>,
    /// The message of an ERROR event's Status.
    #[serde(default)]
    message: Option<String>,
}

#[derive(Deserialize, Default)]
struct WatchMeta {
    #[serde(default)]
    name: String,
    #[serde(default, rename = "ownerReferences")]
    owner_references: Vec<OwnerReference>,
}

#[derive(Deserialize)]
struct OwnerReference {
    #[serde(default)]
    kind: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize, Default)]
struct WatchSpec {
    #[serde(default, rename = "nodeName")]
    node_name: Option<String>,
    #[serde(default, rename = "resourceClaims")]
    resource_claims: Vec<serde::de::IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct WatchStatus {
    #[serde(default)]
    phase: Option<String>,
    #[serde(default)]
    allocation: Option<serde::de::IgnoredAny>,
}

/// What the watches saw of one pod.
#[derive(Default)]
struct PodSeen {
    /// `spec.resourceClaims` entries (unknown until the pod itself was seen).
    wanted_claims: Option<usize>,
    allocated_claims: BTreeSet<String>,
    bound: bool,
    scheduled: bool,
    running: bool,
}

/// Progress as the watches see it.
#[derive(Default)]
struct Tracker {
    pods: HashMap<String, PodSeen>,
    allocated_claims: BTreeSet<String>,
    scheduled: usize,
    running: usize,
    last_scheduled: Option<Instant>,
    last_running: Option<Instant>,
    /// The last watch error, for the report of a stall.
    watch_error: Option<String>,
}

impl Tracker {
    fn check(&mut self, name: &str, now: Instant) {
        let Some(pod) = self.pods.get_mut(name) else {
            return;
        };
        if !pod.scheduled
            && pod.bound
            && pod
                .wanted_claims
                .is_some_and(|w| pod.allocated_claims.len() >= w)
        {
            pod.scheduled = true;
            self.scheduled += 1;
            self.last_scheduled = Some(now);
        }
    }

    fn pod_event(&mut self, event: WatchEvent, now: Instant) {
        if event.event_type == "DELETED" || event.event_type == "BOOKMARK" {
            return;
        }
        let object = event.object;
        let name = object.metadata.name;
        let pod = self.pods.entry(name.clone()).or_default();
        if let Some(spec) = &object.spec {
            pod.wanted_claims = Some(spec.resource_claims.len());
            pod.bound |= spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
        }
        let running = object
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_some_and(|p| p == "Running");
        if running && !pod.running {
            pod.running = true;
            self.running += 1;
            self.last_running = Some(now);
        }
        self.check(&name, now);
    }

    fn claim_event(&mut self, event: WatchEvent, now: Instant) {
        if event.event_type == "DELETED" || event.event_type == "BOOKMARK" {
            return;
        }
        let object = event.object;
        if object
            .status
            .as_ref()
            .is_none_or(|s| s.allocation.is_none())
        {
            return;
        }
        let claim = object.metadata.name;
        self.allocated_claims.insert(claim.clone());
        for owner in &object.metadata.owner_references {
            if owner.kind == "Pod" {
                self.pods
                    .entry(owner.name.clone())
                    .or_default()
                    .allocated_claims
                    .insert(claim.clone());
                self.check(&owner.name.clone(), now);
            }
        }
    }
}

/// Watches `path` until `stop`, feeding events to `apply`; reconnects (from the current
/// state) when the stream breaks.
fn spawn_watch(
    endpoint: Endpoint,
    path: &'static str,
    tracker: Arc<Mutex<Tracker>>,
    stop: Arc<AtomicBool>,
    apply: fn(&mut Tracker, WatchEvent, Instant),
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let result = endpoint.connect().and_then(|connection| {
                connection.watch(path, |line| {
                    let now = Instant::now();
                    let mut tracker = tracker.lock().unwrap_or_else(PoisonError::into_inner);
                    match serde_json::from_slice::<WatchEvent>(line) {
                        Ok(event) if event.event_type == "ERROR" => {
                            tracker.watch_error = Some(format!(
                                "watch {path}: {}",
                                event.object.message.unwrap_or_default()
                            ));
                            false
                        }
                        Ok(event) => {
                            apply(&mut tracker, event, now);
                            !stop.load(Ordering::Relaxed)
                        }
                        Err(err) => {
                            tracker.watch_error = Some(format!("watch {path}: {err}"));
                            false
                        }
                    }
                })
            });
            if let Err(err) = result
                && !stop.load(Ordering::Relaxed)
            {
                tracker
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .watch_error = Some(format!("watch {path}: {err:#}"));
            }
            if !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Figures.

/// The measured figures of one store.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Figures {
    /// Simulated nodes.
    pub nodes: usize,
    /// GPUs per node.
    pub devices_per_node: usize,
    /// Pods.
    pub pods: usize,
    /// Client threads.
    pub clients: usize,
    /// From spawning `allot serve` to its first `/readyz` 200.
    pub server_start_seconds: f64,
    /// DeviceClass, claim template, NodeTopology, Nodes and ResourceSlices created.
    pub fixture_objects: usize,
    /// Wall time of the fixture phase.
    pub fixture_seconds: f64,
    /// `fixture_objects / fixture_seconds`.
    pub fixture_objects_per_second: f64,
    /// Pods acknowledged.
    pub pods_created: usize,
    /// Wall time of the pod creation phase (first request to last acknowledgement).
    pub pod_create_seconds: f64,
    /// `pods_created / pod_create_seconds`.
    pub pods_created_per_second: f64,
    /// Every object created through the API per second of the two creation phases.
    pub objects_per_second: f64,
    /// Pods seen bound with every claim allocated.
    pub pods_scheduled: usize,
    /// Claims seen allocated.
    pub claims_allocated: usize,
    /// From the first pod create to the last pod scheduled.
    pub scheduling_seconds: Option<f64>,
    /// `pods_scheduled / scheduling_seconds`.
    pub scheduled_pods_per_second: Option<f64>,
    /// Pods seen Running.
    pub pods_running: usize,
    /// From the first pod create to the last pod Running.
    pub running_seconds: Option<f64>,
    /// `pods_running / running_seconds`.
    pub running_pods_per_second: Option<f64>,
    /// CPU seconds `allot serve` used (user + system), whole run.
    pub server_cpu_seconds: Option<f64>,
    /// Peak resident memory of `allot serve`, MiB.
    pub server_peak_rss_mib: Option<f64>,
    /// CPU seconds of the private etcd (etcd store only).
    pub etcd_cpu_seconds: Option<f64>,
}

/// One store's row.
#[derive(Debug, Clone, Serialize)]
pub struct StoreReport {
    /// `embedded` or `etcd`.
    pub store: &'static str,
    /// `ok`, `skipped: <why>`, `stalled: <what>`, `stopped: <time limit>` or `failed: <error>`.
    pub status: String,
    /// The figures (none when skipped or failed before the load).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub figures: Option<Figures>,
}

fn rate(count: usize, seconds: f64) -> f64 {
    if seconds > 0.0 {
        count as f64 / seconds
    } else {
        0.0
    }
}

// ---------------------------------------------------------------------------------------------
// One store.

/// The shape of the load.
#[derive(Debug, Clone, Copy)]
struct Load {
    nodes: usize,
    devices_per_node: usize,
    pods: usize,
    clients: usize,
    stall: Duration,
    time_limit: Option<Duration>,
}

/// Progress bars on a terminal.
struct Bars {
    multi: Option<indicatif::MultiProgress>,
    bars: Vec<indicatif::ProgressBar>,
}

impl Bars {
    fn new(store: &str, load: &Load) -> Bars {
        if !std::io::stderr().is_terminal() {
            return Bars {
                multi: None,
                bars: Vec::new(),
            };
        }
        let multi = indicatif::MultiProgress::new();
        let fixture = 3 + 2 * load.nodes;
        let mut bars = Vec::new();
        for (label, length) in [
            ("fixture objects", fixture),
            ("pods created", load.pods),
            ("pods scheduled", load.pods),
            ("pods running", load.pods),
        ] {
            let bar = multi.add(indicatif::ProgressBar::new(length as u64));
            if let Ok(style) = indicatif::ProgressStyle::with_template(&format!(
                "{store:>8} {{elapsed_precise}} {{bar:30}} {{pos:>6}}/{{len}} {label} {{per_sec}}"
            )) {
                bar.set_style(style);
            }
            bars.push(bar);
        }
        Bars {
            multi: Some(multi),
            bars,
        }
    }

    fn set(&self, index: usize, position: usize) {
        if let Some(bar) = self.bars.get(index) {
            bar.set_position(position as u64);
        }
    }

    fn finish(&mut self) {
        for bar in self.bars.drain(..) {
            bar.finish_and_clear();
        }
        if let Some(multi) = self.multi.take() {
            let _ = multi.clear();
        }
    }
}

impl Drop for Bars {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Where the etcd store's etcd comes from.
enum EtcdSource {
    Servers(String),
    Private(PathBuf),
}

/// Runs the load on one store; `Err` when it could not run at all.
fn run_store(
    store: &'static str,
    etcd: Option<&EtcdSource>,
    load: Load,
) -> anyhow::Result<StoreReport> {
    let dir = TempDir::new()?;
    let (etcd_child, etcd_url) = match etcd {
        None => (None, None),
        Some(EtcdSource::Servers(servers)) => (None, Some(servers.clone())),
        Some(EtcdSource::Private(binary)) => {
            let (child, url) = start_etcd(binary, &dir.path().join("etcd"))?;
            (Some(child), Some(url))
        }
    };
    let prefix = format!(
        "/allot-bench-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_millis())
            .unwrap_or_default()
    );
    let started = Instant::now();
    let serve = start_serve(
        &dir.path().join("serve"),
        etcd_url.as_deref().map(|u| (u, prefix.as_str())),
    )?;
    let mut figures = Figures {
        nodes: load.nodes,
        devices_per_node: load.devices_per_node,
        pods: load.pods,
        clients: load.clients,
        server_start_seconds: started.elapsed().as_secs_f64(),
        ..Figures::default()
    };
    let result = drive(&serve, load, store, &mut figures);
    let (cpu, rss) = process_usage(serve.child.pid);
    figures.server_cpu_seconds = cpu;
    figures.server_peak_rss_mib = rss;
    if let Some(child) = &etcd_child {
        figures.etcd_cpu_seconds = process_usage(child.pid).0;
    }
    let status = match result {
        Ok(None) => "ok".to_string(),
        Ok(Some(why)) => why,
        Err(err) => {
            if CLEANUP.interrupted() {
                // The clean-up killed the server: not a failure of its own.
            } else if let Some(status) = serve.child.exited() {
                eprintln!(
                    "allot bench: {} exited with {status}; its log ends with:\n{}",
                    serve.child.what,
                    tail(&serve.log, 20).trim_end()
                );
            }
            format!("failed: {err:#}")
        }
    };
    drop(serve);
    drop(etcd_child);
    Ok(StoreReport {
        store,
        status,
        figures: Some(figures),
    })
}

/// The load itself against a running server. `Ok(Some(status))` when progress stalled or the
/// time limit was reached.
fn drive(
    serve: &Serve,
    load: Load,
    store: &str,
    figures: &mut Figures,
) -> anyhow::Result<Option<String>> {
    let documents = cluster(GenOptions {
        nodes: load.nodes,
        devices_per_node: load.devices_per_node,
        pods: load.pods,
    });
    let split = 3 + 2 * load.nodes;
    let (head, rest) = documents.split_at(3.min(documents.len()));
    let (nodes, pods) = rest.split_at((split - 3).min(rest.len()));
    let head = creates(head)?;
    let nodes = creates(nodes)?;
    let pods = creates(pods)?;

    let tracker = Arc::new(Mutex::new(Tracker::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let watches = [
        spawn_watch(
            serve.endpoint.clone(),
            "/api/v1/namespaces/default/pods?watch=true",
            tracker.clone(),
            stop.clone(),
            Tracker::pod_event,
        ),
        spawn_watch(
            serve.endpoint.clone(),
            "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims?watch=true",
            tracker.clone(),
            stop.clone(),
            Tracker::claim_event,
        ),
    ];
    let result = (|| {
        let mut bars = Bars::new(store, &load);
        let fixture_done = Arc::new(AtomicUsize::new(0));
        let pods_done = Arc::new(AtomicUsize::new(0));
        let counts = || {
            let t = tracker.lock().unwrap_or_else(PoisonError::into_inner);
            (t.scheduled, t.running, t.allocated_claims.len())
        };
        let update = |bars: &Bars| {
            let (scheduled, running, _) = counts();
            bars.set(0, fixture_done.load(Ordering::Relaxed));
            bars.set(1, pods_done.load(Ordering::Relaxed));
            bars.set(2, scheduled);
            bars.set(3, running);
        };

        // The fixture: class, template and topology first (the rest refers to them).
        let fixture_started = Instant::now();
        let deadline = load.time_limit.map(|limit| fixture_started + limit);
        let past_deadline = || deadline.is_some_and(|d| Instant::now() >= d);
        create_all(&serve.endpoint, head, 1, &fixture_done, deadline, || {
            update(&bars)
        })?;
        create_all(
            &serve.endpoint,
            nodes,
            load.clients,
            &fixture_done,
            deadline,
            || update(&bars),
        )?;
        figures.fixture_objects = fixture_done.load(Ordering::Relaxed);
        figures.fixture_seconds = fixture_started.elapsed().as_secs_f64();
        figures.fixture_objects_per_second = rate(figures.fixture_objects, figures.fixture_seconds);

        // The pods.
        let pods_started = Instant::now();
        create_all(
            &serve.endpoint,
            pods,
            load.clients,
            &pods_done,
            deadline,
            || update(&bars),
        )?;
        let pod_count = pods_done.load(Ordering::Relaxed);
        figures.pods_created = pod_count;
        figures.pod_create_seconds = pods_started.elapsed().as_secs_f64();
        figures.pods_created_per_second = rate(pod_count, figures.pod_create_seconds);
        figures.objects_per_second = rate(
            figures.fixture_objects + pod_count,
            figures.fixture_seconds + figures.pod_create_seconds,
        );

        // Wait for every pod to be scheduled, then running; give up after a stall.
        let mut last_progress = Instant::now();
        let mut last_counts = (usize::MAX, usize::MAX);
        let stalled = loop {
            update(&bars);
            let (scheduled, running, _) = counts();
            if (scheduled, running) != last_counts {
                last_counts = (scheduled, running);
                last_progress = Instant::now();
            }
            if scheduled >= load.pods && running >= load.pods {
                break None;
            }
            if past_deadline() {
                break Some(format!(
                    "stopped: time limit of {} s reached at {pod_count}/{} pods created, {scheduled} scheduled, {running} running",
                    load.time_limit.unwrap_or_default().as_secs(),
                    load.pods
                ));
            }
            if let Some(status) = serve.child.exited() {
                bail!(
                    "allot serve exited with {status} during the run:\n{}",
                    tail(&serve.log, 20).trim_end()
                );
            }
            if last_progress.elapsed() > load.stall {
                let error = tracker
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .watch_error
                    .clone();
                let mut why = format!(
                    "stalled: no progress for {} s at {scheduled}/{} pods scheduled, {running} running",
                    load.stall.as_secs(),
                    load.pods
                );
                if let Some(reason) = unscheduled_reason(&serve.endpoint) {
                    why.push_str(&format!("; {reason}"));
                }
                if let Some(error) = error {
                    why.push_str(&format!("; last watch error: {error}"));
                }
                break Some(why);
            }
            std::thread::sleep(Duration::from_millis(100));
        };
        bars.finish();
        let t = tracker.lock().unwrap_or_else(PoisonError::into_inner);
        figures.pods_scheduled = t.scheduled;
        figures.pods_running = t.running;
        figures.claims_allocated = t.allocated_claims.len();
        if t.scheduled >= load.pods
            && let Some(last) = t.last_scheduled
        {
            let seconds = last.duration_since(pods_started).as_secs_f64();
            figures.scheduling_seconds = Some(seconds);
            figures.scheduled_pods_per_second = Some(rate(t.scheduled, seconds));
        }
        if t.running >= load.pods
            && let Some(last) = t.last_running
        {
            let seconds = last.duration_since(pods_started).as_secs_f64();
            figures.running_seconds = Some(seconds);
            figures.running_pods_per_second = Some(rate(t.running, seconds));
        }
        Ok(stalled)
    })();
    stop.store(true, Ordering::Relaxed);
    // The watch threads end when the server goes away; they are not waited for here.
    drop(watches);
    result
}

/// Why some pod is not scheduled: the first PodScheduled=False condition's message of a pod
/// without a node (one list, only after a stall).
fn unscheduled_reason(endpoint: &Endpoint) -> Option<String> {
    let mut connection = endpoint.connect().ok()?;
    let (code, body) = connection
        .request("GET", "/api/v1/namespaces/default/pods", &[])
        .ok()?;
    if code != 200 {
        return None;
    }
    let list: Value = serde_json::from_slice(&body).ok()?;
    let items = list["items"].as_array()?;
    let unbound: Vec<&Value> = items
        .iter()
        .filter(|p| p["spec"]["nodeName"].as_str().is_none_or(str::is_empty))
        .collect();
    let pod = unbound.first()?;
    let message = pod["status"]["conditions"]
        .as_array()
        .and_then(|conditions| {
            conditions
                .iter()
                .find(|c| c["type"] == "PodScheduled" && c["status"] == "False")
        })
        .map(|c| c["message"].as_str().unwrap_or_default().to_string())
        .unwrap_or_else(|| "no PodScheduled condition".into());
    Some(format!(
        "{} pods without a node, e.g. {}: {message}",
        unbound.len(),
        pod["metadata"]["name"].as_str().unwrap_or_default()
    ))
}

// ---------------------------------------------------------------------------------------------
// The command.

/// Runs `allot bench ...`.
pub fn run(command: BenchCommand) -> anyhow::Result<u8> {
    match command {
        BenchCommand::Serve(args) => {
            let result = serve(args);
            CLEANUP.outcome(result)
        }
    }
}

fn serve(args: ServeArgs) -> anyhow::Result<u8> {
    if args.pods == 0 || args.clients == 0 || args.devices_per_node == 0 {
        eprintln!("allot bench serve: --pods, --clients and --devices-per-node must be at least 1");
        return Ok(2);
    }
    let nodes = args
        .nodes
        .unwrap_or_else(|| args.pods.div_ceil(args.devices_per_node));
    if nodes == 0 || nodes.saturating_mul(args.devices_per_node) < args.pods {
        eprintln!(
            "allot bench serve: --nodes {nodes} x --devices-per-node {} = {} GPUs, fewer than --pods {}: every pod needs one",
            args.devices_per_node,
            nodes.saturating_mul(args.devices_per_node),
            args.pods
        );
        return Ok(2);
    }
    // Generated nodes have 64 CPUs and every pod requests one.
    if args.pods.div_ceil(nodes) > 64 {
        eprintln!(
            "allot bench serve: {} pods on {nodes} nodes is more than 64 per node (a generated node's CPUs): use more --nodes",
            args.pods
        );
        return Ok(2);
    }
    let load = Load {
        nodes,
        devices_per_node: args.devices_per_node,
        pods: args.pods,
        clients: args.clients,
        stall: Duration::from_secs(args.stall_seconds.max(1)),
        time_limit: args.time_limit_seconds.map(Duration::from_secs),
    };
    install_interrupt_handler();
    let stores: &[&'static str] = match args.store {
        StoreChoice::Embedded => &["embedded"],
        StoreChoice::Etcd => &["etcd"],
        StoreChoice::Both => &["embedded", "etcd"],
    };
    let mut reports = Vec::new();
    for &store in stores {
        if CLEANUP.interrupted() {
            break;
        }
        let etcd = if store == "etcd" {
            match &args.etcd_servers {
                Some(servers) => Some(EtcdSource::Servers(servers.clone())),
                None => match etcd_binary() {
                    Ok(binary) => Some(EtcdSource::Private(binary)),
                    Err(why) => {
                        reports.push(StoreReport {
                            store,
                            status: format!("skipped: {why}"),
                            figures: None,
                        });
                        continue;
                    }
                },
            }
        } else {
            None
        };
        if args.output == Output::Table {
            eprintln!(
                "allot bench serve: {store}: {} pods on {nodes} nodes x {} GPUs, {} clients",
                args.pods, args.devices_per_node, args.clients
            );
        }
        let report = match run_store(store, etcd.as_ref(), load) {
            Ok(report) => report,
            Err(err) => StoreReport {
                store,
                status: format!("failed: {err:#}"),
                figures: None,
            },
        };
        reports.push(report);
    }
    if CLEANUP.interrupted() {
        // No report: the signal thread says so and exits 130.
        return Ok(130);
    }
    let mut out = std::io::stdout().lock();
    match args.output {
        Output::Json => {
            let document = serde_json::json!({"benchmark": "serve", "stores": reports});
            writeln!(out, "{}", serde_json::to_string_pretty(&document)?)?;
        }
        Output::Table => out.write_all(table(&reports).as_bytes())?,
    }
    out.flush()?;
    let bad = reports
        .iter()
        .any(|r| r.status != "ok" && !r.status.starts_with("skipped"));
    Ok(u8::from(bad))
}

/// The reports as a table, then each store's status on its own line.
fn table(reports: &[StoreReport]) -> String {
    let header = [
        "STORE",
        "FIXTURE OBJ/S",
        "PODS CREATED/S",
        "OBJECTS/S",
        "SCHEDULED PODS/S",
        "ALL SCHEDULED",
        "ALL RUNNING",
        "SERVER CPU",
        "PEAK RSS",
    ];
    let seconds = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{s:.1}s"));
    let per_second = |r: Option<f64>| r.map_or("-".to_string(), |r| format!("{r:.0}"));
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    for report in reports {
        let Some(f) = &report.figures else {
            let mut row = vec![report.store.to_string()];
            row.extend(std::iter::repeat_n("-".to_string(), header.len() - 1));
            rows.push(row);
            continue;
        };
        rows.push(vec![
            report.store.to_string(),
            format!("{:.0}", f.fixture_objects_per_second),
            format!("{:.0}", f.pods_created_per_second),
            format!("{:.0}", f.objects_per_second),
            per_second(f.scheduled_pods_per_second),
            seconds(f.scheduling_seconds),
            seconds(f.running_seconds),
            seconds(f.server_cpu_seconds),
            f.server_peak_rss_mib
                .map_or("-".to_string(), |m| format!("{m:.0} MiB")),
        ]);
    }
    let widths: Vec<usize> = (0..header.len())
        .map(|i| rows.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in &rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(cell, width)| format!("{cell:<width$}"))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    for report in reports {
        let detail = report.figures.as_ref().map_or(String::new(), |f| {
            format!(
                " ({} pods, {} nodes x {} GPUs, {} clients; {}/{} scheduled, {} running)",
                f.pods,
                f.nodes,
                f.devices_per_node,
                f.clients,
                f.pods_scheduled,
                f.pods,
                f.pods_running
            )
        });
        out.push_str(&format!("{}: {}{detail}\n", report.store, report.status));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry of its own for one round of a test (leaked: a few bytes per round).
    fn fresh_cleanup() -> &'static Cleanup {
        Box::leak(Box::new(Cleanup::default()))
    }

    fn sleeper(cleanup: &'static Cleanup) -> ChildGuard {
        ChildGuard::spawn_in(
            cleanup,
            Command::new("sleep")
                .arg("60")
                .stdin(Stdio::null())
                .stdout(Stdio::null()),
            "sleep",
        )
        .expect("sleep starts")
    }

    /// Issue 19: the signal thread killed the server, the main thread saw it dead and exited 1
    /// before the signal thread's exit(130). The signal path, run many times against a main
    /// thread that watches its child as `drive` does, at staggered moments: whatever the main
    /// thread sees, the outcome is 130 and nothing is left.
    #[test]
    fn an_interrupt_ends_in_130_whatever_the_main_thread_saw() {
        for round in 0..200u64 {
            let cleanup = fresh_cleanup();
            let child = sleeper(cleanup);
            let dir = TempDir::new_in(cleanup).expect("temporary directory");
            let path = dir.path().to_path_buf();
            let signal = std::thread::spawn(move || {
                std::thread::sleep(Duration::from_micros(round * 37 % 2000));
                cleanup.interrupt();
            });
            // The main thread: watch the child as the load does, fail when it is gone.
            let result: anyhow::Result<u8> = loop {
                if let Some(status) = child.exited() {
                    break Err(anyhow!("allot serve exited with {status} during the run"));
                }
                std::thread::yield_now();
            };
            assert_eq!(
                cleanup.outcome(result).expect("an exit code"),
                130,
                "round {round}"
            );
            signal.join().expect("the signal thread");
            assert!(cleanup.with(|r| r.children.is_empty() && r.dirs.is_empty()));
            assert!(!path.exists(), "round {round}: {} is left", path.display());
            // Nothing new starts once interrupted.
            let refused = ChildGuard::spawn_in(cleanup, &mut Command::new("true"), "true");
            assert!(refused.is_err(), "round {round}");
            assert!(TempDir::new_in(cleanup).is_err(), "round {round}");
        }
    }

    #[test]
    fn without_an_interrupt_the_outcome_is_the_run_s() {
        let cleanup = fresh_cleanup();
        let child = sleeper(cleanup);
        assert!(child.exited().is_none());
        assert_eq!(cleanup.outcome(Ok(1)).expect("code"), 1);
        assert!(cleanup.outcome(Err(anyhow!("failed"))).is_err());
        drop(child);
        assert!(cleanup.with(|r| r.children.is_empty()));
    }

    fn event(json: &str) -> WatchEvent {
        serde_json::from_str(json).expect("parses")
    }

    #[test]
    fn a_pod_counts_once_bound_with_its_claims_allocated() {
        let now = Instant::now();
        let mut t = Tracker::default();
        t.pod_event(
            event(r#"{"type":"ADDED","object":{"metadata":{"name":"p"},"spec":{"resourceClaims":[{"name":"gpu"}]}}}"#),
            now,
        );
        assert_eq!(t.scheduled, 0);
        t.pod_event(
            event(r#"{"type":"MODIFIED","object":{"metadata":{"name":"p"},"spec":{"nodeName":"n","resourceClaims":[{"name":"gpu"}]}}}"#),
            now,
        );
        assert_eq!(t.scheduled, 0, "bound, but its claim is not allocated yet");
        // A claim without allocation, then one of another pod: neither counts for p.
        t.claim_event(
            event(r#"{"type":"ADDED","object":{"metadata":{"name":"p-gpu","ownerReferences":[{"kind":"Pod","name":"p"}]},"status":{}}}"#),
            now,
        );
        t.claim_event(
            event(r#"{"type":"MODIFIED","object":{"metadata":{"name":"q-gpu","ownerReferences":[{"kind":"Pod","name":"q"}]},"status":{"allocation":{}}}}"#),
            now,
        );
        assert_eq!(t.scheduled, 0);
        t.claim_event(
            event(r#"{"type":"MODIFIED","object":{"metadata":{"name":"p-gpu","ownerReferences":[{"kind":"Pod","name":"p"}]},"status":{"allocation":{"devices":{}}}}}"#),
            now,
        );
        assert_eq!(t.scheduled, 1);
        assert_eq!(t.allocated_claims.len(), 2);
        // Repeated events change nothing; Running counts once.
        for _ in 0..2 {
            t.pod_event(
                event(r#"{"type":"MODIFIED","object":{"metadata":{"name":"p"},"spec":{"nodeName":"n","resourceClaims":[{"name":"gpu"}]},"status":{"phase":"Running"}}}"#),
                now,
            );
        }
        assert_eq!((t.scheduled, t.running), (1, 1));
        // q's claim arrived before q itself: q counts once it is seen bound.
        t.pod_event(
            event(r#"{"type":"ADDED","object":{"metadata":{"name":"q"},"spec":{"nodeName":"n","resourceClaims":[{}]}}}"#),
            now,
        );
        assert_eq!(t.scheduled, 2);
    }

    #[test]
    fn a_pod_without_claims_counts_when_bound() {
        let mut t = Tracker::default();
        t.pod_event(
            event(r#"{"type":"ADDED","object":{"metadata":{"name":"p"},"spec":{"nodeName":"n"}}}"#),
            Instant::now(),
        );
        assert_eq!(t.scheduled, 1);
    }

    #[test]
    fn the_generated_kinds_have_collection_paths() {
        let documents = cluster(GenOptions {
            nodes: 2,
            devices_per_node: 2,
            pods: 4,
        });
        let creates = creates(&documents).expect("every kind has a path");
        assert_eq!(creates.len(), 3 + 4 + 4);
        assert!(creates.iter().filter(|c| c.path.ends_with("/pods")).count() == 4);
        assert!(collection_path("Secret").is_none());
    }

    #[test]
    fn proc_usage_reads_this_process() {
        let (cpu, rss) = process_usage(std::process::id());
        assert!(cpu.is_some_and(|c| c >= 0.0));
        assert!(rss.is_some_and(|r| r > 0.0));
        assert_eq!(process_usage(u32::MAX), (None, None));
    }

    #[test]
    fn tables_show_skipped_stores_and_figures() {
        let reports = vec![
            StoreReport {
                store: "embedded",
                status: "ok".into(),
                figures: Some(Figures {
                    pods: 10,
                    pods_scheduled: 10,
                    fixture_objects_per_second: 123.4,
                    scheduled_pods_per_second: Some(55.5),
                    scheduling_seconds: Some(0.18),
                    ..Figures::default()
                }),
            },
            StoreReport {
                store: "etcd",
                status: "skipped: no etcd".into(),
                figures: None,
            },
        ];
        let text = table(&reports);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("STORE"), "{text}");
        assert!(
            lines[1].starts_with("embedded") && lines[1].contains("123") && lines[1].contains("56"),
            "{text}"
        );
        assert!(lines[2].starts_with("etcd"), "{text}");
        assert!(text.contains("etcd: skipped: no etcd"), "{text}");
        assert!(text.contains("10/10 scheduled"), "{text}");
    }
}
