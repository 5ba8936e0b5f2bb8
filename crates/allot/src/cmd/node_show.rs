//! `allot node show`: after admitting a scenario's pods, a picture of the machine (sockets, NUMA
//! nodes, uncore caches, cores, threads) with the owner of every CPU: a container's exclusive
//! CPUs, a pod's shared pool, the reserved CPUs, or the node's shared pool. In the terminal with
//! colour, or as SVG with `-o svg` (drawn by `allot_kubelet::picture`, which also draws the nodes
//! of `allot simulate --report`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

use allot_kubelet::Node;
use allot_kubelet::picture::{self, Owner, Picture};

/// Show which container owns each CPU after admission.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The scenario: NodeTopology, KubeletConfiguration, optionally NodeState, then Pods; a
    /// file, a directory of files, or `-` for standard input.
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
    /// Read (and update) the checkpoints in this directory instead of the scenario's NodeState.
    #[arg(long = "state-dir")]
    pub state_dir: Option<PathBuf>,
    /// Accept the static CPU policy with no reserved CPU.
    #[arg(long = "allow-zero-cpu-reservation")]
    pub allow_zero_cpu_reservation: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Text)]
    pub output: Output,
    /// Colour in text output: auto (when stdout is a terminal and the environment variable
    /// NO_COLOR is unset or empty), always or never.
    #[arg(long, value_enum, default_value_t = Color::Auto)]
    pub color: Color,
}

/// Output formats.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A tree for the terminal.
    Text,
    /// An SVG picture.
    Svg,
}

/// When to colour text output.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Color {
    /// When stdout is a terminal and NO_COLOR is unset or empty.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Terminal colours by owner: reserved and shared fixed, containers from a palette in owner
/// order.
fn palette(owners: &BTreeMap<u32, Owner>) -> BTreeMap<Owner, (u8, &'static str)> {
    const ANSI: [u8; 10] = [33, 35, 36, 32, 34, 91, 93, 95, 96, 92];
    const SVG: [&str; 10] = [""; 10];
    let mut out = BTreeMap::new();
    out.insert(Owner::Reserved, (31, ""));
    out.insert(Owner::Shared, (37, ""));
    out.insert(Owner::Unknown, (90, ""));
    let mut i = 0;
    let distinct: std::collections::BTreeSet<&Owner> = owners.values().collect();
    for o in distinct {
        if !out.contains_key(o) {
            out.insert(o.clone(), (ANSI[i % ANSI.len()], SVG[i % SVG.len()]));
            i += 1;
        }
    }
    out
}

fn text(node: &Node, color: bool) -> String {
    let owners = picture::cpu_owners(node);
    let colors = palette(&owners);
    let paint = |cpu: u32| -> String {
        let o = owners.get(&cpu).cloned().unwrap_or(Owner::Unknown);
        let label = format!("cpu{cpu}:{}", o.label());
        match (color, colors.get(&o)) {
            (true, Some((code, _))) => format!("\x1b[{code}m{label}\x1b[0m"),
            _ => label,
        }
    };
    let mut out = String::new();
    let _ = writeln!(out, "node {}", node.topology.metadata.name);
    for (socket, numas) in picture::tree(&node.topology) {
        let _ = writeln!(out, "socket {socket}");
        for (numa, uncores) in numas {
            let _ = writeln!(out, "  NUMA node {numa}");
            for (uncore, cores) in uncores {
                let _ = writeln!(out, "    uncore cache {uncore}");
                for (core, threads) in cores {
                    let cells: Vec<String> = threads.iter().map(|&t| paint(t)).collect();
                    let _ = writeln!(out, "      core {core:<4} {}", cells.join("  "));
                }
            }
        }
    }
    out
}

/// Whether text output is coloured: `--color always|never` decides; `auto` colours a terminal
/// unless `NO_COLOR` is set to anything but the empty string (no-color.org).
fn use_color(choice: Color, terminal: bool, no_color: Option<&std::ffi::OsStr>) -> bool {
    match choice {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => terminal && no_color.is_none_or(|v| v.is_empty()),
    }
}

/// Runs the command.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let files = crate::files::Files::new(args.files.clone(), args.recursive);
    let (node, report) = super::node_admit::admit(
        &files,
        args.state_dir.as_ref(),
        args.allow_zero_cpu_reservation,
    )?;
    match args.output {
        Output::Svg => crate::out::print(&picture::svg(&Picture::of_node(&node, &report)))?,
        Output::Text => {
            let color = use_color(
                args.color,
                std::io::stdout().is_terminal(),
                std::env::var_os("NO_COLOR").as_deref(),
            );
            let mut out = text(&node, color);
            for p in report.pods.iter().filter(|p| !p.admitted) {
                out.push_str(&format!(
                    "not admitted: {} ({}): {}\n",
                    p.pod,
                    p.reason.as_deref().unwrap_or("-"),
                    p.message.as_deref().unwrap_or("-")
                ));
            }
            crate::out::print(&out)?;
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_turns_auto_off_but_not_always() {
        let set = Some(std::ffi::OsStr::new("1"));
        let empty = Some(std::ffi::OsStr::new(""));
        assert!(use_color(Color::Auto, true, None));
        assert!(use_color(Color::Auto, true, empty));
        assert!(!use_color(Color::Auto, true, set));
        assert!(!use_color(Color::Auto, false, None));
        assert!(use_color(Color::Always, false, set));
        assert!(!use_color(Color::Never, true, None));
    }
}
