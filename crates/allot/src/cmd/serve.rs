//! `allot serve`: a Kubernetes-compatible API server on a durable store under a data directory,
//! over HTTPS (a CA and serving certificate under DATA_DIR/pki/) with bearer-token
//! authentication and RBAC.

mod kubeconfig;

use std::io::Write;
use std::path::PathBuf;

use clap::Parser;

/// The address `allot serve` listens on unless `--listen` says otherwise.
const DEFAULT_LISTEN: &str = "127.0.0.1:6443";

/// Arguments of `allot serve`.
#[derive(Debug, Parser)]
pub struct Args {
    /// Where objects, the kubeconfig and the tokens file are kept.
    #[arg(long)]
    pub data_dir: PathBuf,
    /// The address to listen on (port 0 picks a free port). Without it: 127.0.0.1:6443, or a
    /// free port when 6443 is taken (the address is printed).
    #[arg(long)]
    pub listen: Option<String>,
    /// How many resourceVersions back a watch may start before it gets 410 Gone.
    #[arg(long, default_value_t = 10_000)]
    pub watch_window: u64,
    /// Seconds between watch bookmarks.
    #[arg(long, default_value_t = 60)]
    pub bookmark_interval_seconds: u64,
    /// Bearer tokens, as kube-apiserver's file: `token,user,uid,"group1,group2"` per line.
    /// Default: DATA_DIR/tokens.csv, created with an admin user (group system:masters).
    #[arg(long, value_name = "FILE")]
    pub token_auth_file: Option<PathBuf>,
    /// Store everything in etcd v3 at these client URLs (comma-separated) instead of under
    /// the data directory; servers sharing one etcd elect one leader for the controllers.
    #[arg(long, value_name = "URL,...", value_delimiter = ',')]
    pub etcd_servers: Vec<String>,
    /// The etcd key prefix.
    #[arg(long, default_value = "/registry")]
    pub etcd_prefix: String,
    /// Leader election: how long a candidate waits on an unchanged Lease before taking over.
    #[arg(long, default_value = "15s", value_parser = parse_duration)]
    pub leader_elect_lease_duration: std::time::Duration,
    /// Leader election: how long the leader keeps leading without renewing its Lease.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub leader_elect_renew_deadline: std::time::Duration,
    /// Leader election: how often to try to acquire or renew the Lease.
    #[arg(long, default_value = "2s", value_parser = parse_duration)]
    pub leader_elect_retry_period: std::time::Duration,
    /// Leader election: this server's holderIdentity (default: hostname, pid and a random part).
    #[arg(long)]
    pub leader_elect_identity: Option<String>,
    /// The KubeletConfiguration of simulated nodes (the Nodes that have a NodeTopology);
    /// the kubelet's defaults without it.
    #[arg(long, value_name = "FILE")]
    pub kubelet_config: Option<PathBuf>,
    /// The scheduler's configuration: a kubescheduler.config.k8s.io/v1
    /// KubeSchedulerConfiguration (profiles chosen by a pod's spec.schedulerName, plugins per
    /// extension point, weights, pluginConfig, percentageOfNodesToScore, pod backoff), as
    /// kube-scheduler's `--config` takes it; kube-scheduler 1.37's default profile without it.
    #[arg(long, value_name = "FILE")]
    pub scheduler_config: Option<PathBuf>,
    /// Also merge a cluster, user and context named `allot-<data dir name>` into the user's
    /// kubeconfig ($KUBECONFIG's first file, else ~/.kube/config) and make it the current
    /// context, as kind does; other entries are kept.
    #[arg(long)]
    pub write_kubeconfig: bool,
    /// Feature gates over allot's defaults, as kube-apiserver takes them:
    /// `Name=true,Other=false` (`--help` lists them).
    #[arg(long, value_name = "KEY=VALUE,...", long_help = allot_features::help())]
    pub feature_gates: Option<String>,
    /// Start even when the event log (DATA_DIR/events.log) is missing or empty although the
    /// directory was used before (it holds pki/ or tokens.csv): begins an empty cluster.
    #[arg(long)]
    pub allow_empty_store: bool,
    /// API versions to serve or not, as kube-apiserver takes them:
    /// `resource.k8s.io/v1beta1=true,api/alpha=false` (`--help` lists them).
    #[arg(long, value_name = "KEY=VALUE,...", long_help = allot_apiserver::versions::help())]
    pub runtime_config: Option<String>,
    /// Start pre-loaded with the objects of this file (an `allot snapshot`, or any manifests
    /// `allot simulate` reads); only into an unused data directory (or etcd prefix).
    #[arg(long = "from", value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// The control-plane loops to run, as kube-controller-manager's flag: `*` runs every loop,
    /// `NAME` runs one, `-NAME` leaves one out (e.g. `*,-scheduler` when a real kube-scheduler
    /// runs, `*,-resourceclaim,-scheduler` when kube-controller-manager's claim controller
    /// runs too).
    /// Names: resourceclaim-controller (also resource-claim-controller, resourceclaim),
    /// scheduler, kubelet (the simulated nodes' agents), device-taint-eviction-controller,
    /// resourcepoolstatusrequest-controller, namespace-controller,
    /// clusterrole-aggregation-controller.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// Append one JSON line per request to FILE: verb, path, query, content types, user
    /// agent, status and the body as JSON (protobuf decoded), to see what a client does.
    #[arg(long, value_name = "FILE")]
    pub request_log: Option<PathBuf>,
}

/// A duration as kube's flags write them: `15s`, `500ms`, `1m`, or plain seconds.
fn parse_duration(text: &str) -> Result<std::time::Duration, String> {
    let (number, unit) = match text.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => text.split_at(i),
        None => (text, "s"),
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("invalid duration {text:?}: expected e.g. 15s, 500ms, 1m"))?;
    let seconds = match unit {
        "ms" => value / 1000.0,
        "s" => value,
        "m" => value * 60.0,
        _ => {
            return Err(format!(
                "invalid duration {text:?}: unit must be ms, s or m"
            ));
        }
    };
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(format!("invalid duration {text:?}"));
    }
    Ok(std::time::Duration::from_secs_f64(seconds))
}

/// The objects of a `--from` file (older versions converted on load, with the note).
fn preload(path: &std::path::Path) -> Result<Vec<allot_store::Stored>, String> {
    let loaded = allot_api::load::load(&[path], &allot_api::load::LoadOptions::default());
    if let Some(err) = loaded.errors.first() {
        let more = loaded.errors.len() - 1;
        return Err(if more > 0 {
            format!("{err} (and {more} more errors)")
        } else {
            err.to_string()
        });
    }
    if let Some(note) = allot_api::versions::conversion_note(&loaded.documents) {
        eprintln!("allot serve: --from: {note}");
    }
    let mut objects = Vec::with_capacity(loaded.documents.len());
    for document in loaded.documents {
        let kind = document.raw.kind.clone();
        let at = format!("{}:{}", document.raw.file, document.raw.line);
        match allot_store::Stored::from_object(document.object) {
            Some(object) => objects.push(object),
            None => return Err(format!("{at}: {kind} is not an object allot serve stores")),
        }
    }
    if objects.is_empty() {
        return Err("no objects".into());
    }
    Ok(objects)
}

/// Serves until killed; prints the kubeconfig path once listening.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let write_kubeconfig = if args.write_kubeconfig {
        match kubeconfig::default_path() {
            Ok(path) => Some((path, kubeconfig::context_name(&args.data_dir))),
            Err(err) => {
                eprintln!("allot serve: --write-kubeconfig: {err}");
                return Ok(2);
            }
        }
    } else {
        None
    };
    let mut gates = allot_features::FeatureGates::defaults();
    if let Some(flag) = &args.feature_gates
        && let Err(message) = gates.apply_flag(flag)
    {
        eprintln!("allot serve: --feature-gates: {message}");
        return Ok(2);
    }
    let mut options = allot_apiserver::ServeOptions::new(args.data_dir);
    if let Some(flag) = &args.runtime_config {
        match allot_apiserver::versions::RuntimeConfig::parse(flag) {
            Ok(config) => options.runtime_config = config,
            Err(message) => {
                eprintln!("allot serve: --runtime-config: {message}");
                return Ok(2);
            }
        }
    }
    if let Some(path) = &args.from {
        match preload(path) {
            Ok(objects) => options.preload = objects,
            Err(message) => {
                eprintln!("allot serve: --from {}: {message}", path.display());
                return Ok(2);
            }
        }
    }
    options.feature_gates = gates.clone();
    options.listen_fallback = args.listen.is_none();
    options.listen = args.listen.unwrap_or_else(|| DEFAULT_LISTEN.to_string());
    options.watch_window = args.watch_window;
    options.bookmark_interval =
        std::time::Duration::from_secs(args.bookmark_interval_seconds.max(1));
    options.token_auth_file = args.token_auth_file;
    options.allow_empty_store = args.allow_empty_store;
    options.request_log = args.request_log;
    match allot_apiserver::controllers::Enabled::parse(&args.controllers) {
        Ok(enabled) => options.controllers = enabled,
        Err(message) => {
            eprintln!("allot serve: --controllers: {message}");
            return Ok(2);
        }
    }
    if !args.etcd_servers.is_empty() {
        let mut etcd = allot_apiserver::etcd::EtcdOptions::new(args.etcd_servers);
        etcd.prefix = args.etcd_prefix;
        etcd.election.lease_duration = args.leader_elect_lease_duration;
        etcd.election.renew_deadline = args.leader_elect_renew_deadline;
        etcd.election.retry_period = args.leader_elect_retry_period;
        if let Some(identity) = args.leader_elect_identity {
            etcd.election.identity = identity;
        }
        if let Err(message) = etcd.election.validate() {
            eprintln!("allot serve: {message}");
            return Ok(2);
        }
        options.etcd = Some(etcd);
    }
    if let Some(path) = &args.kubelet_config {
        match allot_apiserver::nodes::load_kubelet_config(path) {
            Ok(config) => options.kubelet_config = Some(config),
            Err(message) => {
                eprintln!("allot serve: --kubelet-config: {message}");
                return Ok(2);
            }
        }
    }
    if let Some(path) = &args.scheduler_config {
        match allot_apiserver::scheduler_config::load(path) {
            Ok(config) => {
                for warning in &config.warnings {
                    eprintln!("allot serve: --scheduler-config: warning: {warning}");
                }
                options.scheduler_configuration = Some(config);
            }
            Err(message) => {
                eprintln!("allot serve: --scheduler-config: {message}");
                return Ok(2);
            }
        }
    }
    let fallback = options.listen_fallback;
    let served = allot_apiserver::serve_blocking(options, |server| {
        let address = server
            .local_addr()
            .map(|a| a.to_string())
            .unwrap_or_default();
        if fallback && address != DEFAULT_LISTEN {
            eprintln!("allot serve: port 6443 is in use; listening on {address} instead");
        }
        eprintln!("allot serve: feature gates: {}", gates.summary());
        let mut out = std::io::stdout();
        let _ = writeln!(out, "serving on https://{address}");
        let _ = writeln!(out, "kubeconfig: {}", server.kubeconfig().display());
        if let Some((path, name)) = &write_kubeconfig {
            match kubeconfig::merge_into(path, server.kubeconfig(), name) {
                Ok(()) => {
                    let _ = writeln!(
                        out,
                        "kubeconfig: context {name} merged into {} (now current)",
                        path.display()
                    );
                }
                Err(err) => {
                    // The server would serve without the context the user asked for: stop.
                    let _ = out.flush();
                    eprintln!("allot serve: --write-kubeconfig: {err:#}");
                    std::process::exit(2);
                }
            }
        }
        let _ = out.flush();
    });
    match served {
        Ok(()) => Ok(0),
        Err(err) => {
            // One line: the error's own text already names its cause.
            eprintln!("allot serve: {err}");
            Ok(2)
        }
    }
}
