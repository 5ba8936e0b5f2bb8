//! `allot node show`: after admitting a scenario's pods, a picture of the machine (sockets, NUMA
//! nodes, uncore caches, cores, threads) with the owner of every CPU: a container's exclusive
//! CPUs, a pod's shared pool, the reserved CPUs, or the node's shared pool. In the terminal with
//! colour, or as SVG with `-o svg`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;

use allot_kubelet::{CpuPolicy, Node};

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

/// Who a CPU belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Owner {
    /// Exclusive to a container: (pod, container).
    Exclusive(String, String),
    /// A pod's shared pool.
    PodShared(String),
    /// Reserved for the system (not exclusively allocatable).
    Reserved,
    /// The node's shared pool.
    Shared,
    /// Not in any pool (a state that does not cover the machine).
    Unknown,
}

impl Owner {
    fn label(&self) -> String {
        match self {
            Owner::Exclusive(pod, c) => format!("{pod}/{c}"),
            Owner::PodShared(pod) => format!("{pod} (pod shared pool)"),
            Owner::Reserved => "reserved".into(),
            Owner::Shared => "shared".into(),
            Owner::Unknown => "unassigned".into(),
        }
    }
}

type Tree = BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<u32>>>>>;

fn owners(node: &Node) -> BTreeMap<u32, Owner> {
    let names: BTreeMap<&str, &str> = node
        .admitted
        .iter()
        .map(|(uid, name)| (uid.as_str(), name.as_str()))
        .collect();
    let pod_name = |uid: &str| names.get(uid).map_or(uid.to_string(), |n| n.to_string());
    let mut out = BTreeMap::new();
    let all: Vec<u32> = node.topology.cpus.iter().map(|c| c.id).collect();
    match &node.cpu {
        CpuPolicy::None(_) => {
            for cpu in all {
                out.insert(cpu, Owner::Shared);
            }
        }
        CpuPolicy::Static(p) => {
            for cpu in &all {
                let owner = if p.reserved().contains(*cpu) {
                    Owner::Reserved
                } else if node.cpu_state.default_cpu_set.contains(*cpu) {
                    Owner::Shared
                } else {
                    Owner::Unknown
                };
                out.insert(*cpu, owner);
            }
            for (uid, pool) in &node.cpu_state.pod_pools {
                for cpu in pool {
                    out.insert(cpu, Owner::PodShared(pod_name(uid)));
                }
            }
            for (uid, containers) in &node.cpu_state.assignments {
                for (name, cpus) in containers {
                    for cpu in cpus {
                        out.insert(cpu, Owner::Exclusive(pod_name(uid), name.clone()));
                    }
                }
            }
        }
    }
    out
}

fn tree(node: &Node) -> Tree {
    let mut t = Tree::new();
    for c in &node.topology.cpus {
        t.entry(c.socket)
            .or_default()
            .entry(c.numa)
            .or_default()
            .entry(c.uncore_cache)
            .or_default()
            .entry(c.core)
            .or_default()
            .push(c.id);
    }
    for sockets in t.values_mut() {
        for numas in sockets.values_mut() {
            for uncores in numas.values_mut() {
                for threads in uncores.values_mut() {
                    threads.sort_unstable();
                }
            }
        }
    }
    t
}

/// Colours by owner: reserved and shared fixed, containers from a palette in owner order.
fn palette(owners: &BTreeMap<u32, Owner>) -> BTreeMap<Owner, (u8, &'static str)> {
    const ANSI: [u8; 10] = [33, 35, 36, 32, 34, 91, 93, 95, 96, 92];
    const SVG: [&str; 10] = [
        "#f1c40f", "#9b59b6", "#1abc9c", "#2ecc71", "#3498db", "#e67e22", "#e84393", "#00cec9",
        "#6c5ce7", "#badc58",
    ];
    let mut out = BTreeMap::new();
    out.insert(Owner::Reserved, (31, "#e74c3c"));
    out.insert(Owner::Shared, (37, "#dfe6e9"));
    out.insert(Owner::Unknown, (90, "#636e72"));
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
    let owners = owners(node);
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
    for (socket, numas) in tree(node) {
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

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn svg(node: &Node, _report: &allot_kubelet::Report) -> String {
    const CELL_W: u32 = 46;
    const CELL_H: u32 = 24;
    const PAD: u32 = 8;
    const CORES_PER_ROW: usize = 8;
    let owners = owners(node);
    let colors = palette(&owners);
    let t = tree(node);
    let max_threads = t
        .values()
        .flat_map(|n| n.values())
        .flat_map(|u| u.values())
        .flat_map(|c| c.values())
        .map(Vec::len)
        .max()
        .unwrap_or(1) as u32;
    let core_w = max_threads * CELL_W + 2 * 4;
    let core_h = CELL_H + 18;
    let width = 4 * PAD + CORES_PER_ROW as u32 * (core_w + PAD) + 2 * PAD;
    let mut body = String::new();
    let mut y = PAD + 24;
    for (socket, numas) in &t {
        let socket_top = y;
        y += 22;
        let mut numa_boxes = String::new();
        for (numa, uncores) in numas {
            let numa_top = y;
            y += 22;
            let mut inner = String::new();
            for (uncore, cores) in uncores {
                let uncore_top = y;
                y += 20;
                let list: Vec<(&u32, &Vec<u32>)> = cores.iter().collect();
                for row in list.chunks(CORES_PER_ROW) {
                    for (i, (core, threads)) in row.iter().enumerate() {
                        let x = 4 * PAD + i as u32 * (core_w + PAD);
                        let _ = writeln!(
                            inner,
                            r##"<rect x="{x}" y="{y}" width="{core_w}" height="{core_h}" rx="3" fill="#ffffff" stroke="#636e72"/><text x="{}" y="{}" font-size="10" fill="#2d3436">core {core}</text>"##,
                            x + 4,
                            y + 12
                        );
                        for (j, cpu) in threads.iter().enumerate() {
                            let o = owners.get(cpu).cloned().unwrap_or(Owner::Unknown);
                            let fill = colors.get(&o).map_or("#ffffff", |c| c.1);
                            let cx = x + 4 + j as u32 * CELL_W;
                            let cy = y + 15;
                            let _ = writeln!(
                                inner,
                                r##"<rect x="{cx}" y="{cy}" width="{}" height="{}" fill="{fill}" stroke="#2d3436"><title>CPU {cpu}: {}</title></rect><text x="{}" y="{}" font-size="11" text-anchor="middle" fill="#2d3436">{cpu}</text>"##,
                                CELL_W - 2,
                                CELL_H - 2,
                                escape(&o.label()),
                                cx + CELL_W / 2,
                                cy + 15
                            );
                        }
                    }
                    y += core_h + PAD;
                }
                let _ = writeln!(
                    inner,
                    r##"<rect x="{}" y="{uncore_top}" width="{}" height="{}" fill="none" stroke="#b2bec3" stroke-dasharray="4 2"/><text x="{}" y="{}" font-size="11" fill="#636e72">uncore cache {uncore}</text>"##,
                    3 * PAD,
                    width - 6 * PAD,
                    y - uncore_top,
                    3 * PAD + 6,
                    uncore_top + 14
                );
                y += PAD;
            }
            let _ = writeln!(
                numa_boxes,
                r##"<rect x="{}" y="{numa_top}" width="{}" height="{}" fill="#f5f6fa" stroke="#0984e3"/><text x="{}" y="{}" font-size="12" fill="#0984e3">NUMA node {numa}</text>{inner}"##,
                2 * PAD,
                width - 4 * PAD,
                y - numa_top,
                2 * PAD + 6,
                numa_top + 16
            );
            y += PAD;
        }
        let _ = writeln!(
            body,
            r##"<rect x="{PAD}" y="{socket_top}" width="{}" height="{}" fill="#ecf0f1" stroke="#2d3436" stroke-width="2"/><text x="{}" y="{}" font-size="14" font-weight="bold">socket {socket}</text>{numa_boxes}"##,
            width - 2 * PAD,
            y - socket_top,
            PAD + 6,
            socket_top + 17
        );
        y += PAD;
    }
    // Legend.
    let mut legend = String::new();
    let mut ly = y + PAD;
    let used: std::collections::BTreeSet<&Owner> = owners.values().collect();
    for o in used {
        let fill = colors.get(o).map_or("#ffffff", |c| c.1);
        let _ = writeln!(
            legend,
            r##"<rect x="{PAD}" y="{ly}" width="14" height="14" fill="{fill}" stroke="#2d3436"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            PAD + 20,
            ly + 12,
            escape(&o.label())
        );
        ly += 20;
    }
    let height = ly + PAD;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif"><rect width="100%" height="100%" fill="#ffffff"/><text x="{PAD}" y="20" font-size="16" font-weight="bold">{}</text>
{body}{legend}</svg>
"##,
        escape(&node.topology.metadata.name)
    )
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
        Output::Svg => crate::out::print(&svg(&node, &report))?,
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
