//! `allot node admit`: admit a scenario's pods on a node as the kubelet would, with the CPU,
//! Memory, Device and Topology Managers together.
//!
//! Exit 0 when every pod is admitted; exit 1 when some pod is rejected (the reason and message
//! are in the output); exit 2 on bad input or when the node cannot start (a corrupt or
//! mismatched checkpoint, with what to do).

use std::path::PathBuf;

use allot_kubelet::{Report, Scenario};
use allot_kubelet_config::ValidateOptions;
use anyhow::Context;

/// Admit pods on a node as the kubelet's resource managers would.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: NodeTopology, KubeletConfiguration, optionally NodeState, then Pods; a
    /// file, a directory of files (their documents in file order), or `-` for standard input.
    #[arg(
        short = 'f',
        long = "filename",
        visible_alias = "file",
        required = true,
        value_name = "FILE|DIR|-"
    )]
    pub files: Vec<PathBuf>,
    /// Read the directories given with -f recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Read the checkpoints (cpu_manager_state, memory_manager_state) from this directory
    /// instead of the scenario's NodeState, and write them back atomically afterwards.
    #[arg(long = "state-dir")]
    pub state_dir: Option<PathBuf>,
    /// Accept the static CPU policy with no reserved CPU (the kubelet refuses to start so;
    /// upstream's policy tests do it).
    #[arg(long = "allow-zero-cpu-reservation")]
    pub allow_zero_cpu_reservation: bool,
    /// Write the resource managers' metrics (Prometheus text format) to this file.
    #[arg(long = "metrics")]
    pub metrics: Option<PathBuf>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// Output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// JSON: `{"pods": [...], "state": {"cpuManager": ..., "memoryManager": ...}}`.
    Json,
    /// The same as YAML.
    Yaml,
    /// A table, one row per container.
    Table,
}

/// Reads and runs a scenario (shared with `node show`).
pub fn admit(
    files: &crate::files::Files,
    state_dir: Option<&PathBuf>,
    allow_zero: bool,
) -> anyhow::Result<(allot_kubelet::Node, Report)> {
    let texts = files.texts()?;
    if texts.is_empty() {
        anyhow::bail!("no scenario found: the directories hold no .yaml, .yml or .json file");
    }
    let texts: Vec<(&str, &str)> = texts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let scenario = Scenario::parse_texts(&texts)?;
    let relax = ValidateOptions {
        allow_zero_cpu_reservation: allow_zero,
    };
    Ok(allot_kubelet::run(
        &scenario,
        state_dir.map(|p| p.as_path()),
        relax,
    )?)
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let files = crate::files::Files::new(args.files.clone(), args.recursive);
    let (node, report) = admit(
        &files,
        args.state_dir.as_ref(),
        args.allow_zero_cpu_reservation,
    )?;
    if let Some(path) = &args.metrics {
        std::fs::write(path, node.metrics.encode())
            .with_context(|| format!("writing metrics to {}", path.display()))?;
    }
    match args.output {
        Output::Json => crate::out::print_json(&report)?,
        Output::Yaml => crate::out::print_yaml(&report)?,
        Output::Table => crate::out::print(&table(&report))?,
    }
    Ok(if report.pods.iter().all(|p| p.admitted) {
        0
    } else {
        1
    })
}

fn table(report: &Report) -> String {
    let mut rows: Vec<[String; 8]> = vec![[
        "POD".into(),
        "ADMITTED".into(),
        "CONTAINER".into(),
        "CPUS".into(),
        "EXCLUSIVE".into(),
        "MEMORY-NUMA".into(),
        "DEVICES".into(),
        "CFS-QUOTA".into(),
    ]];
    let mut notes = Vec::new();
    for p in &report.pods {
        if !p.admitted {
            rows.push([
                p.pod.clone(),
                format!("no: {}", p.reason.as_deref().unwrap_or("-")),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
            ]);
            if let Some(m) = &p.message {
                notes.push(format!("{}: {m}", p.pod));
            }
            if let Some(e) = &p.explanation {
                notes.push(format!("{}: {e}", p.pod));
            }
            continue;
        }
        for c in &p.containers {
            let numa: Vec<String> = c.memory_numa_nodes.iter().map(|n| n.to_string()).collect();
            let devices: Vec<String> = c
                .devices
                .iter()
                .map(|(r, ids)| format!("{r}={}", ids.join(",")))
                .collect();
            rows.push([
                p.pod.clone(),
                "yes".into(),
                c.name.clone(),
                c.cpus.clone(),
                c.exclusive.to_string(),
                if numa.is_empty() {
                    "-".into()
                } else {
                    numa.join(",")
                },
                if devices.is_empty() {
                    "-".into()
                } else {
                    devices.join(" ")
                },
                c.cfs_quota.to_string(),
            ]);
        }
    }
    let mut widths = [0usize; 8];
    for r in &rows {
        for (w, cell) in widths.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        let line: Vec<String> = r
            .iter()
            .zip(widths)
            .map(|(cell, w)| format!("{cell:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    for n in notes {
        out.push_str(&n);
        out.push('\n');
    }
    out
}
