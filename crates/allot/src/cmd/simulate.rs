//! `allot simulate [FILES...] [-f FILE|DIR|-]... [-R] [-o table|wide|json|yaml|name]
//! [-n NS | -A] [-l SELECTOR] [--out DIR] [--what-if POD.yaml] [--example]`: the control plane
//! in one process. Loads and validates the cluster, runs every controller on the simulated
//! clock, prints the final state.
//!
//! Exit codes: 0 when the simulation ran (pods left pending are part of the answer: the
//! table's "Not running" part says why); with `--fail-on-pending`, 1 when a pod shown (all, or
//! those `-n`/`-l` select) is left pending or failed, for a CI job that asks "does everything
//! still fit?"; with `--what-if`, 1 when not one copy fits; 2 on bad input (nothing is run or
//! written); 3 when an invariant is broken after the run (a bug in allot; the output is still
//! printed).

use std::io::Write;
use std::path::{Component, Path, PathBuf};

use allot_api::core::v1::Pod;
use allot_apiserver::selector::Selector;
use allot_sim::progress::{Phase, ProgressDisplay};
use allot_store::Stored;
use anyhow::Context;
use serde::Serialize;

use crate::files::Files;

mod capacity;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Pods with their node, scheduling time, devices, CPUs and NUMA nodes (120 columns); then
    /// why the others wait, and the pool status requests' answers.
    Table,
    /// The table with the claims' names, devices with their drivers, creation and start times;
    /// never wrapped.
    Wide,
    /// One `v1 List` of every object's final state.
    Json,
    /// The same `v1 List` as YAML.
    Yaml,
    /// `pod/NAME` for each pod, as kubectl's `-o name`.
    Name,
    /// Every Event of the run in time order (with the time since the start), as `kubectl get
    /// events` columns.
    Events,
}

/// Simulate a cluster: place its pods as Kubernetes would, and say why not.
///
/// Exit codes: 0 the simulation ran; 1 with --fail-on-pending a pod shown is left pending or
/// failed (or, with --what-if, not one copy fits); 2 bad input; 3 an invariant broken (a bug in
/// allot).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files or directories of manifests (Nodes, NodeTopology, KubeletConfiguration,
    /// DeviceClasses, ResourceSlices, claims, templates, Pods, PodGroups, DeviceTaintRules,
    /// ResourcePoolStatusRequests, a Timeline, SimulationOptions). None: the bundled example.
    #[arg(value_name = "FILE|DIR")]
    pub files: Vec<PathBuf>,
    /// More files or directories, as kubectl spells them; `-` reads standard input.
    #[arg(short = 'f', long = "filename", value_name = "FILE|DIR|-")]
    pub filename: Vec<PathBuf>,
    /// Read directories recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Output,
    /// Show only this namespace's objects (and decide the exit code on its pods).
    #[arg(short = 'n', long = "namespace", conflicts_with = "all_namespaces")]
    pub namespace: Option<String>,
    /// Show every namespace (the default; as kubectl spells it).
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// Show only objects whose labels match this selector (`app=web,tier!=db`,
    /// `env in (a,b)`, `!canary`), and decide the exit code on those pods.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Write the device metadata files the node agents produced under this folder (with
    /// --what-if: after the copies).
    #[arg(long = "out")]
    pub out: Option<PathBuf>,
    /// Run the bundled example cluster (also what happens without files).
    #[arg(long)]
    pub example: bool,
    /// After the run, add copies of this pod one by one until one does not fit; report where
    /// they went (`-` reads the pod from standard input). A file with anything else than one
    /// Pod (several pods, their claims and templates) is a workload: created at once, it fits
    /// entirely, partly or not, with each pod's node and the reasons grouped.
    #[arg(long = "what-if", value_name = "POD.yaml")]
    pub what_if: Option<PathBuf>,
    /// Fragmentation per device class and node: free devices, counters and capacity, copies of
    /// the common request shapes that still fit, stranded capacity and a score; NUMA
    /// fragmentation of exclusive CPUs. After the table; with -o json|yaml, in the capacity
    /// document instead of the object list.
    #[arg(long)]
    pub fragmentation: bool,
    /// A ResourceClaim or ResourceClaimTemplate whose spec --fragmentation measures besides the
    /// common shapes (repeatable).
    #[arg(long = "shape", value_name = "CLAIM.yaml")]
    pub shapes: Vec<PathBuf>,
    /// An exclusive CPU count --fragmentation measures besides the common ones (repeatable).
    #[arg(long = "cpu-size", value_name = "CPUS")]
    pub cpu_sizes: Vec<usize>,
    /// A NodeShape file (allot.dev/v1alpha1): find the smallest number of such nodes that makes
    /// every pod (and the --what-if workload) fit; repeat for several shapes: the cheapest mix
    /// by their cost.
    #[arg(long = "add-nodes", value_name = "SHAPE.yaml")]
    pub add_nodes: Vec<PathBuf>,
    /// Find the largest set of nodes (greedily: fewest pods first) that can be drained with
    /// every pod placed elsewhere (PodDisruptionBudgets, affinity, DRA and NUMA by
    /// re-simulating).
    #[arg(long = "remove-nodes")]
    pub remove_nodes: bool,
    /// Try at most this many nodes for --remove-nodes.
    #[arg(long = "remove-nodes-limit", value_name = "N")]
    pub remove_nodes_limit: Option<usize>,
    /// Write one self-contained HTML page (no network) with the cluster summary, utilisation
    /// over time, pending pods by reason, the answers, fragmentation and every node.
    #[arg(long = "report", value_name = "FILE.html")]
    pub report: Option<PathBuf>,
    /// At most this many copies for --what-if.
    #[arg(long = "what-if-limit", default_value_t = 1000)]
    pub what_if_limit: usize,
    /// With --what-if: keep adding copies of the workload (a Pod, a Deployment, StatefulSet,
    /// Job, a gang: every object renamed `<name>-what-if-<n>`) until one does not fit entirely
    /// or --what-if-limit copies fit, and report how many fit and why the next did not.
    #[arg(long, requires = "what_if")]
    pub max: bool,
    /// How long the run goes on after the last Timeline event (a Go duration: 90m, 4h, 1h30m)
    /// before it stops, pods still running or not; it stops earlier when nothing is left to
    /// happen. Overrides the Timeline's `horizon` (default 1h).
    #[arg(long = "horizon", value_name = "DURATION", value_parser = parse_horizon)]
    pub horizon: Option<u64>,
    /// Write each phase's time (load, validate, run, write) and the summary line on stderr
    /// even when it is not a terminal (on a terminal they are always shown).
    #[arg(long)]
    pub summary: bool,
    /// --summary, plus reconciles and pods per second of the run phase.
    #[arg(long)]
    pub bench: bool,
    /// Exit 1 when a pod shown (all, or those -n/-l select) is left pending or failed: for a
    /// CI job that asks "does everything still fit?".
    #[arg(long)]
    pub fail_on_pending: bool,
    /// A trace of arrivals, played as a Timeline: a CSV file (columns `time`, `manifest` and
    /// optionally `name`; a manifest is a file or inline JSON) or a YAML/JSON list of
    /// `{time, manifest}`; times are seconds or durations such as `90s`.
    #[arg(long, value_name = "FILE")]
    pub trace: Option<PathBuf>,
    /// Simulate a live cluster: read it as `allot snapshot` does (with the files given, if
    /// any) and simulate that.
    #[arg(long, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// The kubeconfig context for --kubeconfig (default: its current context).
    #[arg(long, value_name = "NAME", requires = "kubeconfig")]
    pub context: Option<String>,
}

/// Which objects the output shows.
struct Filter {
    namespace: Option<String>,
    selector: Option<Selector>,
}

impl Filter {
    fn new(args: &Args) -> anyhow::Result<Filter> {
        let selector = match &args.selector {
            Some(text) => Some(
                Selector::parse_labels(text).map_err(|e| anyhow::anyhow!("-l {text:?}: {e}"))?,
            ),
            None => None,
        };
        Ok(Filter {
            namespace: args.namespace.clone(),
            selector,
        })
    }

    fn is_all(&self) -> bool {
        self.namespace.is_none() && self.selector.is_none()
    }

    fn pod(&self, pod: &Pod) -> bool {
        self.namespace
            .as_ref()
            .is_none_or(|ns| &pod.metadata.namespace == ns)
            && self
                .selector
                .as_ref()
                .is_none_or(|s| s.matches_labels(&pod.metadata.labels))
    }

    /// Any object: cluster-scoped objects pass a namespace filter.
    fn object(&self, object: &Stored) -> bool {
        let meta = object.meta();
        let namespaced = object.kind().namespaced();
        self.namespace
            .as_ref()
            .is_none_or(|ns| !namespaced || &meta.namespace == ns)
            && self
                .selector
                .as_ref()
                .is_none_or(|s| s.matches_labels(&meta.labels))
    }
}

fn print_input_errors(err: &allot_sim::SimError) {
    match err {
        allot_sim::SimError::Input(errors) => {
            for error in errors {
                elog!("{error}");
            }
            elog!(
                "{}; nothing was simulated",
                crate::out::count(errors.len(), "error", "errors")
            );
        }
        other => elog!("error: {other}"),
    }
}

/// A relative path without `..`, so metadata files stay inside the output folder.
fn safe_relative(path: &Path) -> bool {
    path.components().all(|c| matches!(c, Component::Normal(_)))
}

/// Writes a file atomically: a temporary file next to it, synced, then renamed over it.
fn write_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let mut temp = path.as_os_str().to_owned();
    temp.push(".tmp");
    let temp = PathBuf::from(temp);
    {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
    }
    std::fs::rename(&temp, path)
}

/// Writes the metadata files under `dir` (refusing a path that leaves it).
fn write_metadata(dir: &Path, files: &[(PathBuf, Vec<u8>)]) -> anyhow::Result<()> {
    for (path, bytes) in files {
        if !safe_relative(path) {
            anyhow::bail!(
                "refusing to write {} outside {}",
                path.display(),
                dir.display()
            );
        }
        let target = dir.join(path);
        write_atomic(&target, bytes).with_context(|| format!("writing {}", target.display()))?;
    }
    Ok(())
}

/// `--kubeconfig`: the cluster read into a temporary file, added to the files; the exit code
/// when it cannot be read.
fn live_cluster(args: &mut Args) -> Result<Option<tempfile::TempDir>, u8> {
    let Some(kubeconfig) = args.kubeconfig.clone() else {
        return Ok(None);
    };
    let snapshot_args = crate::cmd::snapshot::Args {
        kubeconfig: Some(kubeconfig),
        context: args.context.clone(),
        output: PathBuf::new(),
        anonymize: false,
        anonymize_key: None,
        chunk_size: 500,
    };
    let snapshot = crate::cmd::snapshot::read(&snapshot_args).map_err(|f| f.report("simulate"))?;
    let written = tempfile::tempdir()
        .map_err(anyhow::Error::from)
        .and_then(|dir| {
            let path = dir.path().join("cluster.json");
            crate::cmd::snapshot::write(&snapshot, &path)?;
            Ok((dir, path))
        });
    match written {
        Ok((dir, path)) => {
            args.files.push(path);
            Ok(Some(dir))
        }
        Err(err) => {
            elog!("allot simulate: --kubeconfig: {err:#}");
            Err(2)
        }
    }
}

/// The input: the bundled example, or the files (loaded, then validated, as two phases).
fn input(
    args: &Args,
    display: &mut ProgressDisplay,
) -> anyhow::Result<Result<allot_sim::Input, allot_sim::SimError>> {
    let mut paths = args.files.clone();
    paths.extend(args.filename.iter().cloned());
    if (paths.is_empty() && args.trace.is_none()) || args.example {
        display.start(Phase::Load, "the bundled example");
        return Ok(allot_sim::example::input());
    }
    let files = Files::new(paths, args.recursive);
    display.start(Phase::Load, &describe_sources(&files));
    let mut loaded = files.load(&allot_sim::input::load_options())?;
    if let Some(note) = allot_api::versions::conversion_note(&loaded.documents) {
        display.end();
        elog!("allot simulate: {note}");
    }
    if let Some(path) = &args.trace {
        match allot_sim::trace::document(path) {
            Ok(document) => loaded.documents.push(document),
            Err(errors) => return Ok(Err(allot_sim::SimError::Input(errors))),
        }
    }
    display.start(
        Phase::Validate,
        &crate::out::count(loaded.documents.len(), "document", "documents"),
    );
    let input = allot_sim::input::from_loaded(loaded);
    if let Ok(input) = &input
        && let Some(config) = &input.scheduler_configuration
    {
        for warning in &config.warnings {
            display.end();
            elog!("allot simulate: KubeSchedulerConfiguration: warning: {warning}");
        }
    }
    Ok(input)
}

/// What is being loaded, for the spinner: how many paths and bytes.
fn describe_sources(files: &Files) -> String {
    let mut bytes = 0u64;
    for path in &files.paths {
        bytes += std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        if let Ok(entries) = std::fs::read_dir(path) {
            for entry in entries.filter_map(Result::ok) {
                bytes += entry.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    format!(
        "{} ({})",
        crate::out::count(files.paths.len(), "path", "paths"),
        allot_sim::progress::bytes(bytes)
    )
}

/// The `--what-if` answer as `-o json|yaml` prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct WhatIfDocument {
    pod: String,
    placed: usize,
    per_node: std::collections::BTreeMap<String, usize>,
    stopped_because: Option<String>,
    limit: usize,
}

fn what_if(
    args: &Args,
    input: &allot_sim::Input,
    pod: &Pod,
    display: &mut ProgressDisplay,
) -> anyhow::Result<u8> {
    display.start(Phase::Run, "copies of the pod");
    let answer = allot_sim::what_if(input, pod, args.what_if_limit, &mut |p| display.update(p))?;
    display.start(Phase::Write, "");
    if let Some(dir) = &args.out {
        write_metadata(dir, &answer.metadata_files)?;
    }
    let name = if pod.metadata.name.is_empty() {
        pod.metadata.generate_name.clone()
    } else {
        pod.metadata.name.clone()
    };
    let document = WhatIfDocument {
        pod: name.clone(),
        placed: answer.placed,
        per_node: answer.per_node.iter().cloned().collect(),
        stopped_because: answer.stopped_because.clone(),
        limit: args.what_if_limit,
    };
    match args.output {
        Output::Json => crate::out::print_json(&document)?,
        Output::Yaml => crate::out::print_yaml(&document)?,
        Output::Table | Output::Wide | Output::Name | Output::Events => {
            let mut out = format!(
                "{} more cop{} of {name} fit",
                answer.placed,
                if answer.placed == 1 { "y" } else { "ies" },
            );
            out.push_str(if answer.per_node.is_empty() {
                "\n"
            } else {
                ":\n"
            });
            for (node, count) in &answer.per_node {
                out.push_str(&format!("  {node}: {count}\n"));
            }
            match &answer.stopped_because {
                Some(reason) => out.push_str(&format!("the next copy does not fit: {reason}\n")),
                None => out.push_str(&format!(
                    "stopped at the limit of {}\n",
                    crate::out::count(args.what_if_limit, "copy", "copies")
                )),
            }
            crate::out::print(&out)?;
        }
    }
    display.finish(&format!(
        "what-if: {} placed",
        crate::out::count(answer.placed, "copy", "copies")
    ));
    Ok(if answer.placed == 0 { 1 } else { 0 })
}

/// `--what-if WORKLOAD --max`: copies of the workload until one does not fit.
fn what_if_max(
    args: &Args,
    input: &allot_sim::Input,
    workload: &[allot_store::Stored],
    display: &mut ProgressDisplay,
) -> anyhow::Result<u8> {
    display.start(Phase::Run, "copies of the workload");
    let answer =
        allot_sim::capacity::copies::workload_max(input, workload, args.what_if_limit, &mut |p| {
            display.update(p)
        })?;
    display.start(Phase::Write, "");
    match args.output {
        Output::Json => crate::out::print_json(&answer)?,
        Output::Yaml => crate::out::print_yaml(&answer)?,
        Output::Table | Output::Wide | Output::Name | Output::Events => {
            let mut out = format!(
                "{} of the workload fit{}\n",
                crate::out::count(answer.copies, "copy", "copies"),
                if answer.per_node.is_empty() { "" } else { ":" }
            );
            for (node, count) in &answer.per_node {
                out.push_str(&format!(
                    "  {node}: {}\n",
                    crate::out::count(*count, "pod", "pods")
                ));
            }
            match &answer.stopped_because {
                Some(reason) => out.push_str(&format!("the next copy does not fit: {reason}\n")),
                None => out.push_str(&format!(
                    "stopped at the limit of {}\n",
                    crate::out::count(args.what_if_limit, "copy", "copies")
                )),
            }
            crate::out::print(&out)?;
        }
    }
    display.finish(&format!(
        "what-if: {} placed",
        crate::out::count(answer.copies, "copy", "copies")
    ));
    Ok(if answer.copies == 0 { 1 } else { 0 })
}

/// `--horizon`: a Go duration in milliseconds.
fn parse_horizon(text: &str) -> Result<u64, String> {
    allot_sim::timeline::parse_duration_millis(text)
        .ok_or_else(|| format!("{text:?} is not a duration (examples: 90m, 4h, 1h30m)"))
}

/// The final state in the chosen format.
fn write_output(
    args: &Args,
    filter: &Filter,
    input: &allot_sim::Input,
    store: &allot_store::Store,
    report: &allot_sim::record::Report,
) -> anyhow::Result<()> {
    let pods = |pod: &Pod| filter.pod(pod);
    // A pod of the report passes the filter if it still exists and passes, or (gone) its
    // namespace does.
    let record = |p: &allot_sim::record::PodRecord| match store.get::<Pod>(&p.namespace, &p.name) {
        Some(pod) => filter.pod(pod),
        None => filter
            .namespace
            .as_ref()
            .is_none_or(|ns| *ns == p.namespace),
    };
    match args.output {
        Output::Table | Output::Wide => {
            let options = allot_sim::table::TableOptions {
                wide: args.output == Output::Wide,
                pods: &pods,
            };
            let mut text = allot_sim::table::table(store, Some(input), &options);
            let width = if args.output == Output::Wide {
                usize::MAX
            } else {
                allot_sim::table::DEFAULT_WIDTH
            };
            text.push_str(&allot_sim::table::report_sections(report, &record, width));
            crate::out::print(&text)
        }
        Output::Events => {
            let keep = |object: &str| {
                filter.namespace.as_ref().is_none_or(|ns| {
                    object
                        .split_once(' ')
                        .is_some_and(|(_, name)| name.starts_with(&format!("{ns}/")))
                })
            };
            crate::out::print(&allot_sim::table::events_table(report, &keep))
        }
        Output::Name => {
            let mut out = String::new();
            for pod in store.list::<Pod>().filter(|p| filter.pod(p)) {
                out.push_str(&format!("pod/{}\n", pod.metadata.name));
            }
            crate::out::print(&out)
        }
        // The list is written object by object as it is serialised (a large cluster's final
        // state is hundreds of megabytes of text).
        Output::Json | Output::Yaml if filter.is_all() => {
            let list = allot_sim::output::List(store, Some(report));
            if args.output == Output::Json {
                crate::out::print_json(&list)
            } else {
                crate::out::print_yaml(&list)
            }
        }
        Output::Json | Output::Yaml => {
            let mut items: Vec<serde_json::Value> = store
                .iter()
                .filter(|(_, o)| filter.object(o))
                .map(|(_, o)| o.to_json())
                .collect();
            items.push(report.to_json(&record));
            let list = serde_json::json!({
                "apiVersion": "v1",
                "kind": "List",
                "items": items,
                "metadata": {"resourceVersion": ""},
            });
            if args.output == Output::Json {
                crate::out::print_json(&list)
            } else {
                crate::out::print_yaml(&list)
            }
        }
    }
}

/// Runs the command.
pub fn run(mut args: Args) -> anyhow::Result<u8> {
    let filter = Filter::new(&args)?;
    // Kept until the snapshot is loaded.
    let _snapshot = match live_cluster(&mut args) {
        Ok(dir) => dir,
        Err(code) => return Ok(code),
    };
    let mut display = ProgressDisplay::new(args.summary || args.bench);
    let mut input = match input(&args, &mut display)? {
        Ok(input) => input,
        Err(err) => {
            display.end();
            print_input_errors(&err);
            return Ok(2);
        }
    };
    if let Some(horizon) = args.horizon {
        input.horizon_millis = horizon;
    }
    let mut workload = None;
    if let Some(path) = &args.what_if {
        match capacity::what_if_file(path)? {
            Ok(capacity::WhatIfFile::Copies(pod)) if args.add_nodes.is_empty() => {
                return what_if(&args, &input, &pod, &mut display);
            }
            Ok(capacity::WhatIfFile::Copies(pod)) => {
                workload = Some(allot_sim::capacity::workload_objects(vec![Stored::Pod(
                    std::sync::Arc::new(*pod),
                )]));
            }
            Ok(capacity::WhatIfFile::Workload(objects)) if args.max => {
                return what_if_max(&args, &input, &objects, &mut display);
            }
            Ok(capacity::WhatIfFile::Workload(objects)) => workload = Some(objects),
            Err(message) => {
                display.end();
                elog!("{message}");
                return Ok(2);
            }
        }
    }
    if capacity::wanted(&args) || workload.is_some() {
        return capacity::run(&args, &filter, &input, workload, &mut display);
    }
    display.start(Phase::Run, "");
    let outcome = allot_sim::run_moving(&mut input, &mut |p| display.update(p))?;
    display.start(Phase::Write, "");
    if let Some(dir) = &args.out {
        write_metadata(dir, &outcome.metadata_files)?;
    }
    write_output(&args, &filter, &input, &outcome.store, &outcome.report)?;
    display.end();
    finish(&args, &filter, &mut display, &outcome, 0)
}

/// After the output: timeline and reconcile errors, the summary line, the invariants and the
/// exit code (`code` when nothing else decides it).
fn finish(
    args: &Args,
    filter: &Filter,
    display: &mut ProgressDisplay,
    outcome: &allot_sim::Outcome,
    code: u8,
) -> anyhow::Result<u8> {
    for message in &outcome.event_errors {
        elog!("timeline: {message}");
    }
    for message in &outcome.reconcile_errors {
        elog!("reconcile error at {message}");
    }
    let shown: Vec<&Pod> = outcome
        .store
        .list::<Pod>()
        .filter(|p| filter.pod(p))
        .collect();
    let placed = shown.iter().filter(|p| allot_sim::table::placed(p)).count();
    let failed = shown
        .iter()
        .filter(|p| p.status.phase.as_deref() == Some("Failed"))
        .count();
    let pending = shown.len() - placed - failed;
    let mut what = format!(
        "{}: {placed} placed, {pending} pending",
        crate::out::count(shown.len(), "pod", "pods")
    );
    if failed > 0 {
        what.push_str(&format!(", {failed} failed"));
    }
    what.push_str(&format!(
        "; simulated {}",
        allot_sim::table::duration(outcome.end.seconds())
    ));
    if args.bench {
        let run = display
            .phases()
            .iter()
            .find(|(phase, _)| *phase == Phase::Run)
            .map_or(0.0, |(_, took)| took.as_secs_f64());
        what.push_str(&format!(
            "; {} reconciles, {:.0} pods/s in the run phase",
            outcome.reconciles,
            if run > 0.0 {
                outcome.store.list::<Pod>().count() as f64 / run
            } else {
                0.0
            }
        ));
    }
    display.finish(&what);
    let violations = allot_sim::check_invariants(&outcome.store);
    if !violations.is_empty() {
        for violation in &violations {
            elog!("invariant broken: {violation}");
        }
        return Ok(3);
    }
    Ok(if args.fail_on_pending && placed < shown.len() {
        1
    } else {
        code
    })
}
