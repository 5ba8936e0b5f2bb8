//! `allot snapshot [--kubeconfig FILE] [--context NAME] -o FILE [--anonymize]`: reads a live
//! cluster into one file that `allot simulate` (and `allot serve --from`) reads.
//!
//! What is read: every kind allot models ([`allot_apiserver::resources::RESOURCES`]) except
//! Events and Leases (a log and heartbeats, not state), Secrets and CertificateSigningRequests
//! (credentials have no place in a file meant to be passed around). Each kind is read at the
//! best version both the cluster serves (its discovery) and allot reads: the cluster's
//! preferred version when allot reads it, else GA before beta before alpha; a 1.32–1.33
//! cluster's `resource.k8s.io/v1beta1` objects are written as read and converted to v1 when
//! the file is loaded (simulate says so on stderr).
//!
//! Consistency: lists are paged (`limit`, `continue`, `--chunk-size` as kubectl's); the
//! first kind is read at the cluster's current resourceVersion R (a quorum read), and every
//! other kind with `resourceVersion=R&resourceVersionMatch=Exact`, so the file is the state of
//! the whole cluster at R: a watch of any kind started at R would continue exactly from it
//! (written in the file's header). Should R be compacted away during the read (410 Expired),
//! the read starts over, at most three times.
//!
//! `--anonymize`: see [`anonymize`] for the rule.
//!
//! Exit codes: 0 written; 1 the cluster could not be read (unreachable, refused); 2 bad
//! input (no kubeconfig, unknown context, unwritable output). Nothing is written unless the
//! whole snapshot was read (the file is written aside and renamed into place).

pub mod anonymize;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use allot_apiserver::resources::{RESOURCES, ResourceInfo};
use allot_store::Kind;
use anyhow::Context;
use serde_json::{Value, json};

/// Read a live cluster into one file `allot simulate` reads.
///
/// Exit codes: 0 written; 1 the cluster could not be read; 2 bad input.
#[derive(clap::Args, Debug, Clone)]
pub struct Args {
    /// The kubeconfig (default: $KUBECONFIG, else ~/.kube/config).
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context (default: its current context).
    #[arg(long, value_name = "NAME")]
    pub context: Option<String>,
    /// Where to write: a YAML stream, or one JSON `v1 List` when the name ends in `.json`;
    /// `-` writes YAML to standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: PathBuf,
    /// Replace names, namespaces, label values and annotations consistently (a keyed hash),
    /// keeping what scheduling depends on (see `allot snapshot --help`).
    #[arg(long, long_help = anonymize::RULE)]
    pub anonymize: bool,
    /// The key of --anonymize's hash: the same key gives the same names from one snapshot to
    /// the next (default: a random key, new names every time).
    #[arg(long, value_name = "KEY", requires = "anonymize")]
    pub anonymize_key: Option<String>,
    /// Items per list request (as kubectl's --chunk-size).
    #[arg(long, default_value_t = 500)]
    pub chunk_size: u32,
}

/// Kinds not read (see the module documentation).
const SKIPPED: &[Kind] = &[
    Kind::Event,
    Kind::Lease,
    Kind::Secret,
    Kind::CertificateSigningRequest,
];

/// A kind to read, at the version chosen from discovery.
#[derive(Debug, Clone, Copy)]
struct Source {
    info: &'static ResourceInfo,
}

impl Source {
    /// The kind and version, as the file's header counts them.
    fn key(&self) -> (String, String) {
        (self.info.kind.name().to_string(), self.info.group_version())
    }

    fn path(&self) -> String {
        if self.info.group.is_empty() {
            format!("/api/{}/{}", self.info.version, self.info.plural)
        } else {
            format!(
                "/apis/{}/{}/{}",
                self.info.group, self.info.version, self.info.plural
            )
        }
    }
}

/// What a snapshot read.
pub struct Snapshot {
    /// Every object, with apiVersion and kind.
    pub objects: Vec<Value>,
    /// The resourceVersion the objects are the state at.
    pub resource_version: String,
    /// The server read.
    pub server: String,
    /// Objects per (kind, apiVersion).
    pub counts: BTreeMap<(String, String), usize>,
}

/// Why a snapshot failed: bad input (exit 2) or the cluster (exit 1).
#[derive(Debug)]
pub enum Failure {
    /// The kubeconfig, context or output.
    Input(anyhow::Error),
    /// Talking to the cluster.
    Cluster(anyhow::Error),
}

impl Failure {
    /// Prints the failure and returns the exit code.
    pub fn report(&self, command: &str) -> u8 {
        match self {
            Failure::Input(err) => {
                elog!("allot {command}: {err:#}");
                2
            }
            Failure::Cluster(err) => {
                elog!("allot {command}: {err:#}");
                1
            }
        }
    }
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let snapshot = match read(&args) {
        Ok(snapshot) => snapshot,
        Err(failure) => return Ok(failure.report("snapshot")),
    };
    if let Err(err) = write(&snapshot, &args.output) {
        elog!("allot snapshot: {err:#}");
        return Ok(2);
    }
    let total: usize = snapshot.counts.values().sum();
    elog!(
        "allot snapshot: {} from {} at resourceVersion {} written to {}",
        crate::out::count(total, "object", "objects"),
        snapshot.server,
        snapshot.resource_version,
        args.output.display()
    );
    Ok(0)
}

/// Reads the cluster `args` name (anonymised when asked).
pub fn read(args: &Args) -> Result<Snapshot, Failure> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failure::Cluster(e.into()))?;
    let mut snapshot = runtime.block_on(read_async(args))?;
    if args.anonymize {
        let key = match &args.anonymize_key {
            Some(key) => key.as_bytes().to_vec(),
            None => anonymize::random_key().map_err(Failure::Input)?,
        };
        anonymize::anonymize(&mut snapshot.objects, &key);
    }
    Ok(snapshot)
}

async fn client(args: &Args) -> Result<(kube::Client, String), Failure> {
    let path = match &args.kubeconfig {
        Some(path) => path.clone(),
        None => default_kubeconfig().map_err(Failure::Input)?,
    };
    let kubeconfig = kube::config::Kubeconfig::read_from(&path)
        .with_context(|| format!("--kubeconfig {}", path.display()))
        .map_err(Failure::Input)?;
    let options = kube::config::KubeConfigOptions {
        context: args.context.clone(),
        ..Default::default()
    };
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &options)
        .await
        .with_context(|| match &args.context {
            Some(context) => format!("--kubeconfig {} --context {context}", path.display()),
            None => format!("--kubeconfig {}", path.display()),
        })
        .map_err(Failure::Input)?;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config)
        .context("building the client")
        .map_err(Failure::Input)?;
    Ok((client, server))
}

/// $KUBECONFIG's first file, else ~/.kube/config.
fn default_kubeconfig() -> anyhow::Result<PathBuf> {
    if let Some(list) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty())
        && let Some(first) = std::env::split_paths(&list).next()
    {
        return Ok(first);
    }
    let home = std::env::var_os("HOME").context("no --kubeconfig, KUBECONFIG or HOME")?;
    Ok(Path::new(&home).join(".kube/config"))
}

async fn get(client: &kube::Client, path: &str) -> Result<Value, kube::Error> {
    let request = http::Request::get(path)
        .header(http::header::ACCEPT, "application/json")
        .body(Vec::new())
        .map_err(kube::Error::HttpError)?;
    client.request::<Value>(request).await
}

fn is_status(err: &kube::Error, code: u16) -> bool {
    matches!(err, kube::Error::Api(status) if status.code == code)
}

/// The group versions the cluster serves with their resources' names: `(group, version)` to
/// plural names.
async fn discover(
    client: &kube::Client,
) -> anyhow::Result<(
    BTreeMap<(String, String), Vec<String>>,
    BTreeMap<String, String>,
)> {
    let mut served = BTreeMap::new();
    let mut preferred = BTreeMap::new();
    let mut group_versions: Vec<(String, String)> = Vec::new();
    let core = get(client, "/api").await.context("GET /api")?;
    for version in core["versions"].as_array().into_iter().flatten() {
        if let Some(v) = version.as_str() {
            group_versions.push((String::new(), v.to_string()));
        }
    }
    preferred.insert(String::new(), "v1".to_string());
    let groups = get(client, "/apis").await.context("GET /apis")?;
    let wanted: Vec<&str> = RESOURCES.iter().map(|r| r.group).collect();
    for group in groups["groups"].as_array().into_iter().flatten() {
        let name = group["name"].as_str().unwrap_or_default();
        if !wanted.contains(&name) {
            continue;
        }
        if let Some(v) = group["preferredVersion"]["version"].as_str() {
            preferred.insert(name.to_string(), v.to_string());
        }
        for version in group["versions"].as_array().into_iter().flatten() {
            if let Some(v) = version["version"].as_str() {
                group_versions.push((name.to_string(), v.to_string()));
            }
        }
    }
    for (group, version) in group_versions {
        if !RESOURCES
            .iter()
            .any(|r| r.group == group && r.version == version)
        {
            continue;
        }
        let path = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let list = match get(client, &path).await {
            Ok(list) => list,
            Err(err) if is_status(&err, 404) => continue,
            Err(err) => return Err(anyhow::Error::new(err).context(format!("GET {path}"))),
        };
        let names = list["resources"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r["name"].as_str())
            .filter(|n| !n.contains('/'))
            .map(str::to_string)
            .collect();
        served.insert((group, version), names);
    }
    Ok((served, preferred))
}

/// The kinds to read and the version of each, from discovery.
fn choose(
    served: &BTreeMap<(String, String), Vec<String>>,
    preferred: &BTreeMap<String, String>,
) -> Vec<Source> {
    let mut sources: Vec<Source> = Vec::new();
    let mut kinds: Vec<Kind> = Vec::new();
    for info in RESOURCES {
        if !kinds.contains(&info.kind) && !SKIPPED.contains(&info.kind) {
            kinds.push(info.kind);
        }
    }
    for kind in kinds {
        let candidates: Vec<&'static ResourceInfo> = RESOURCES
            .iter()
            .filter(|r| r.kind == kind)
            .filter(|r| {
                served
                    .get(&(r.group.to_string(), r.version.to_string()))
                    .is_some_and(|names| names.iter().any(|n| n == r.plural))
            })
            .collect();
        let Some(first) = candidates.first() else {
            continue;
        };
        let best = candidates
            .iter()
            .find(|r| preferred.get(r.group).is_some_and(|p| p == r.version))
            .or_else(|| candidates.iter().min_by_key(|r| stage_rank(r.version)))
            .unwrap_or(first);
        sources.push(Source { info: best });
    }
    sources
}

/// GA before beta before alpha; within a stage the higher version.
fn stage_rank(version: &str) -> (u8, std::cmp::Reverse<String>) {
    let stage = if version.contains("alpha") {
        2
    } else if version.contains("beta") {
        1
    } else {
        0
    };
    (stage, std::cmp::Reverse(version.to_string()))
}

async fn read_async(args: &Args) -> Result<Snapshot, Failure> {
    let (client, server) = client(args).await?;
    let (served, preferred) = discover(&client)
        .await
        .with_context(|| format!("reading the discovery of {server}"))
        .map_err(Failure::Cluster)?;
    let sources = choose(&served, &preferred);
    let mut attempts = 0;
    loop {
        attempts += 1;
        match read_all(&client, &sources, args.chunk_size.max(1)).await {
            Ok((objects, resource_version, counts)) => {
                return Ok(Snapshot {
                    objects,
                    resource_version,
                    server,
                    counts,
                });
            }
            Err(err) if attempts < 3 && expired(&err) => continue,
            Err(err) => {
                return Err(Failure::Cluster(err.context(format!("reading {server}"))));
            }
        }
    }
}

fn expired(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<kube::Error>()
            .is_some_and(|e| is_status(e, 410))
    })
}

type Read = (Vec<Value>, String, BTreeMap<(String, String), usize>);

/// Kinds read at once after the first: the server encodes one kind's page while this client
/// decodes another's (read one after the other, a snapshot took the server's time plus ours).
const CONCURRENT_KINDS: usize = 4;

async fn read_all(client: &kube::Client, sources: &[Source], chunk: u32) -> anyhow::Result<Read> {
    let Some((first, rest)) = sources.split_first() else {
        return Ok((Vec::new(), String::new(), BTreeMap::new()));
    };
    // The first kind is read at the current resourceVersion, which every other kind is then
    // read at exactly.
    let (mut objects, at) = read_kind(client.clone(), *first, chunk, None).await?;
    let mut counts = BTreeMap::new();
    counts.insert(first.key(), objects.len());
    let permits = std::sync::Arc::new(tokio::sync::Semaphore::new(CONCURRENT_KINDS));
    let mut tasks = tokio::task::JoinSet::new();
    for (index, source) in rest.iter().copied().enumerate() {
        let (client, at, permits) = (client.clone(), at.clone(), permits.clone());
        tasks.spawn(async move {
            let _permit = permits.acquire_owned().await?;
            let read = read_kind(client, source, chunk, at).await;
            read.map(|(objects, _)| (index, objects))
        });
    }
    let mut read: Vec<Option<Vec<Value>>> = vec![None; rest.len()];
    while let Some(done) = tasks.join_next().await {
        let (index, objects) = done??;
        read[index] = Some(objects);
    }
    // In the sources' order, whatever order the reads ended in.
    for (source, kind_objects) in rest.iter().zip(read) {
        let kind_objects = kind_objects.unwrap_or_default();
        counts.insert(source.key(), kind_objects.len());
        objects.extend(kind_objects);
    }
    Ok((objects, at.unwrap_or_default(), counts))
}

/// Every object of one kind, page by page; at `at` (exactly) when given, else at the current
/// resourceVersion, which is returned.
async fn read_kind(
    client: kube::Client,
    source: Source,
    chunk: u32,
    mut at: Option<String>,
) -> anyhow::Result<(Vec<Value>, Option<String>)> {
    let api_version = source.info.group_version();
    let kind = source.info.kind.name();
    let mut objects = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut query = format!("limit={chunk}");
        match (&token, &at) {
            (Some(token), _) => query.push_str(&format!("&continue={}", encode(token))),
            (None, Some(rv)) => query.push_str(&format!(
                "&resourceVersion={}&resourceVersionMatch=Exact",
                encode(rv)
            )),
            (None, None) => {}
        }
        let path = format!("{}?{query}", source.path());
        let mut list = get(&client, &path)
            .await
            .with_context(|| format!("GET {path}"))?;
        if at.is_none() {
            at = list["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_string);
        }
        let Value::Array(items) = list["items"].take() else {
            anyhow::bail!("GET {path}: the answer has no items");
        };
        for mut item in items {
            if let Some(map) = item.as_object_mut() {
                if let Some(meta) = map.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.remove("managedFields");
                    // simulate reads NodeTopology as a node's file: name, labels and
                    // annotations only.
                    if source.info.kind == Kind::NodeTopology {
                        meta.retain(|k, _| matches!(k.as_str(), "name" | "labels" | "annotations"));
                    }
                }
                map.insert("apiVersion".into(), Value::String(api_version.clone()));
                map.insert("kind".into(), Value::String(kind.to_string()));
            }
            objects.push(item);
        }
        token = list["metadata"]["continue"]
            .as_str()
            .filter(|t| !t.is_empty())
            .map(str::to_string);
        if token.is_none() {
            return Ok((objects, at));
        }
    }
}

/// Percent-encodes a query value.
fn encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~".contains(&byte) {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Writes the snapshot: JSON `v1 List` for `*.json`, else a YAML stream with a header; aside
/// and renamed into place, so a reader never sees half a file.
pub fn write(snapshot: &Snapshot, output: &Path) -> anyhow::Result<()> {
    let json = output.extension().is_some_and(|e| e == "json");
    let text = if json {
        let list = json!({
            "apiVersion": "v1",
            "kind": "List",
            "metadata": {"resourceVersion": snapshot.resource_version},
            "items": snapshot.objects,
        });
        let mut text = serde_json::to_string(&list).context("rendering JSON")?;
        text.push('\n');
        text
    } else {
        let mut text = format!(
            "# allot snapshot of {} at resourceVersion {} (the state of every kind at that\n# resourceVersion; a watch started there continues from it).\n",
            snapshot.server, snapshot.resource_version
        );
        for ((kind, api_version), count) in &snapshot.counts {
            text.push_str(&format!("# {count} {kind} {api_version}\n"));
        }
        for object in &snapshot.objects {
            text.push_str("---\n");
            text.push_str(&serde_saphyr::to_string(object).context("rendering YAML")?);
        }
        text
    };
    if output == Path::new("-") {
        let mut stdout = std::io::stdout().lock();
        stdout
            .write_all(text.as_bytes())
            .context("writing stdout")?;
        return Ok(());
    }
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut file = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("-o {}: cannot write in {}", output.display(), dir.display()))?;
    file.write_all(text.as_bytes())
        .and_then(|()| file.as_file().sync_all())
        .with_context(|| format!("-o {}", output.display()))?;
    file.persist(output)
        .with_context(|| format!("-o {}", output.display()))?;
    Ok(())
}
