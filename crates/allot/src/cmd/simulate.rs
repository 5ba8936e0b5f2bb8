//! `allot simulate FILES... [-o table|json|yaml] [--out DIR] [--what-if POD.yaml] [--example]`:
//! the control plane in one process. Loads and validates the cluster, runs every controller on
//! the simulated clock, prints the final state. Exit 0 when the run finished (pending pods
//! included), 2 on bad input (nothing is run or written), 3 when an invariant is broken after the
//! run (a bug in allot; the output is still printed).

use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::time::Instant;

use allot_api::core::v1::Pod;
use allot_api::load::{LoadOptions, Object};
use allot_sim::progress::ProgressDisplay;
use anyhow::Context;

/// Output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    /// Pods with their node, claims, devices, CPUs and NUMA nodes; then why the others wait.
    Table,
    /// One `v1 List` of every object's final state.
    Json,
    /// The same `v1 List` as YAML.
    Yaml,
}

/// Simulate a cluster: place its pods as Kubernetes would, and say why not.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Files or directories of manifests (Nodes, NodeTopology, KubeletConfiguration,
    /// DeviceClasses, ResourceSlices, claims, templates, Pods, PodGroups, DeviceTaintRules,
    /// ResourcePoolStatusRequests, a Timeline, SimulationOptions). None: the bundled example.
    pub files: Vec<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value = "table")]
    pub output: Output,
    /// Write the device metadata files the node agents produced under this folder.
    #[arg(long = "out")]
    pub out: Option<PathBuf>,
    /// Run the bundled example cluster (also what happens without files).
    #[arg(long)]
    pub example: bool,
    /// After the run, add copies of this pod one by one until one does not fit; report where
    /// they went.
    #[arg(long = "what-if", value_name = "POD.yaml")]
    pub what_if: Option<PathBuf>,
    /// At most this many copies for --what-if.
    #[arg(long = "what-if-limit", default_value_t = 1000)]
    pub what_if_limit: usize,
    /// Report wall time, reconciles and pods per second on stderr.
    #[arg(long)]
    pub bench: bool,
}

fn load(args: &Args) -> Result<allot_sim::Input, allot_sim::SimError> {
    if args.files.is_empty() || args.example {
        allot_sim::example::input()
    } else {
        allot_sim::load_paths(&args.files)
    }
}

fn print_input_errors(err: &allot_sim::SimError) {
    match err {
        allot_sim::SimError::Input(errors) => {
            for error in errors {
                eprintln!("{error}");
            }
            eprintln!("{} errors; nothing was simulated", errors.len());
        }
        other => eprintln!("error: {other}"),
    }
}

/// Writes `text` to standard output; a reader that went away ends the output quietly.
fn write_stdout(text: &str) -> anyhow::Result<()> {
    write_streamed(|out| out.write_all(text.as_bytes()))
}

/// Writes to standard output through a buffer as `render` produces the text; a reader that
/// went away (a closed pipe) ends the output quietly and stops the rendering
/// (`allot simulate -o json | head` does not serialise the rest of the cluster).
fn write_streamed(
    render: impl FnOnce(&mut ClosablePipe) -> std::io::Result<()>,
) -> anyhow::Result<()> {
    let mut out = ClosablePipe {
        inner: std::io::BufWriter::with_capacity(1 << 16, std::io::stdout().lock()),
        closed: false,
    };
    match render(&mut out).and_then(|()| out.flush()) {
        // The serializers wrap the writer's error in their own; the flag says what it was.
        Err(_) if out.closed => Ok(()),
        other => other.context("writing the output"),
    }
}

/// Standard output that remembers its reader closed the pipe.
struct ClosablePipe {
    inner: std::io::BufWriter<std::io::StdoutLock<'static>>,
    closed: bool,
}

impl ClosablePipe {
    fn note<T>(&mut self, result: std::io::Result<T>) -> std::io::Result<T> {
        if let Err(err) = &result
            && err.kind() == std::io::ErrorKind::BrokenPipe
        {
            self.closed = true;
        }
        result
    }
}

impl Write for ClosablePipe {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let result = self.inner.write(buf);
        self.note(result)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let result = self.inner.flush();
        self.note(result)
    }
}

/// Reads the one Pod of a `--what-if` file.
fn what_if_pod(path: &Path) -> Result<Pod, String> {
    let loaded = allot_api::load::load(&[path], &LoadOptions::default());
    if let Some(err) = loaded.errors.first() {
        return Err(err.to_string());
    }
    let pods: Vec<Pod> = loaded
        .documents
        .into_iter()
        .filter_map(|d| match d.object {
            Object::Pod(pod) => Some(pod),
            _ => None,
        })
        .collect();
    match <[Pod; 1]>::try_from(pods) {
        Ok([pod]) => Ok(pod),
        Err(pods) => Err(format!(
            "{}: expected exactly one Pod, found {}",
            path.display(),
            pods.len()
        )),
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

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut input = match load(&args) {
        Ok(input) => input,
        Err(err) => {
            print_input_errors(&err);
            return Ok(2);
        }
    };
    let pod = match &args.what_if {
        Some(path) => match what_if_pod(path) {
            Ok(pod) => Some(pod),
            Err(message) => {
                eprintln!("{message}");
                return Ok(2);
            }
        },
        None => None,
    };
    let mut display = ProgressDisplay::new();
    let started = Instant::now();
    if let Some(pod) = pod {
        let answer =
            allot_sim::what_if(&input, &pod, args.what_if_limit, &mut |p| display.update(p));
        display.finish();
        let answer = answer?;
        let mut out = format!(
            "{} more cop{} of {} fit",
            answer.placed,
            if answer.placed == 1 { "y" } else { "ies" },
            if pod.metadata.name.is_empty() {
                pod.metadata.generate_name.clone()
            } else {
                pod.metadata.name.clone()
            }
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
                "stopped at the limit of {} copies\n",
                args.what_if_limit
            )),
        }
        write_stdout(&out)?;
        return Ok(0);
    }
    let outcome = allot_sim::run_moving(&mut input, &mut |p| display.update(p));
    display.finish();
    let outcome = outcome?;
    let elapsed = started.elapsed();
    let table = match args.output {
        Output::Table => Some(allot_sim::output::table(&outcome.store, Some(&input))),
        Output::Json | Output::Yaml => None,
    };
    if let Some(dir) = &args.out {
        for (path, bytes) in &outcome.metadata_files {
            if !safe_relative(path) {
                anyhow::bail!(
                    "refusing to write {} outside {}",
                    path.display(),
                    dir.display()
                );
            }
            let target = dir.join(path);
            write_atomic(&target, bytes)
                .with_context(|| format!("writing {}", target.display()))?;
        }
    }
    // The list is written object by object as it is serialised (a large cluster's final
    // state is hundreds of megabytes of text).
    let list = allot_sim::output::List(&outcome.store);
    match table {
        Some(text) => write_stdout(&text)?,
        None if args.output == Output::Json => write_streamed(|out| {
            serde_json::to_writer_pretty(&mut *out, &list)?;
            out.write_all(b"\n")
        })?,
        None => write_streamed(|out| {
            serde_saphyr::to_io_writer(out, &list).map_err(std::io::Error::other)
        })?,
    }
    for message in &outcome.event_errors {
        eprintln!("timeline: {message}");
    }
    for message in &outcome.reconcile_errors {
        eprintln!("reconcile error at {message}");
    }
    if args.bench {
        let pods = outcome.store.list::<Pod>().count();
        let bound = outcome
            .store
            .list::<Pod>()
            .filter(|p| p.spec.node_name.is_some())
            .count();
        let seconds = elapsed.as_secs_f64();
        eprintln!(
            "bench: {pods} pods ({bound} bound) in {seconds:.3}s wall, {} reconciles, {:.0} pods/s, simulated until {}",
            outcome.reconciles,
            if seconds > 0.0 {
                pods as f64 / seconds
            } else {
                0.0
            },
            outcome.end,
        );
    }
    let violations = allot_sim::check_invariants(&outcome.store);
    if !violations.is_empty() {
        for violation in &violations {
            eprintln!("invariant broken: {violation}");
        }
        return Ok(3);
    }
    Ok(0)
}
