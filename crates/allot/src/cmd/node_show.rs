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

/// A well-spaced colour per container: hues a golden angle apart (137.5°), so neighbours in
/// owner order never look alike, at a saturation and lightness that keep black text readable.
fn pod_fill(index: usize) -> String {
    // From blue on: red stays the reserved CPUs' colour only.
    let hue = (210.0 + index as f64 * 137.507_764) % 360.0;
    hsl_hex(hue, 0.70, if index.is_multiple_of(2) { 0.62 } else { 0.74 })
}

fn hsl_hex(hue: f64, saturation: f64, lightness: f64) -> String {
    let c = (1.0 - (2.0 * lightness - 1.0).abs()) * saturation;
    let h = hue / 60.0;
    let x = c * (1.0 - (h % 2.0 - 1.0).abs());
    let (r, g, b) = match h as u32 {
        0 => (c, x, 0.0),
        1 => (x, c, 0.0),
        2 => (0.0, c, x),
        3 => (0.0, x, c),
        4 => (x, 0.0, c),
        _ => (c, 0.0, x),
    };
    let m = lightness - c / 2.0;
    let byte = |v: f64| ((v + m) * 255.0).round().clamp(0.0, 255.0) as u8;
    format!("#{:02x}{:02x}{:02x}", byte(r), byte(g), byte(b))
}

/// Every owner with its SVG fill: fixed greys and red for the pools, a distinct hue per
/// container (in owner order).
fn svg_fills(owners: &std::collections::BTreeSet<Owner>) -> BTreeMap<Owner, String> {
    let mut out = BTreeMap::new();
    let mut index = 0;
    for owner in owners {
        let fill = match owner {
            Owner::Reserved => "#7f8c8d".to_string(),
            Owner::Shared => "#e4e8eb".to_string(),
            Owner::Unknown => "#2d3436".to_string(),
            _ => {
                index += 1;
                pod_fill(index - 1)
            }
        };
        out.insert(owner.clone(), fill);
    }
    out
}

/// Device-plugin devices by NUMA node (`None`: no affinity), with their owners.
fn devices_by_numa(node: &Node) -> BTreeMap<Option<u32>, Vec<(String, Option<Owner>)>> {
    let names: BTreeMap<&str, &str> = node
        .admitted
        .iter()
        .map(|(uid, name)| (uid.as_str(), name.as_str()))
        .collect();
    let mut owner_of: BTreeMap<(String, String), Owner> = BTreeMap::new();
    for (uid, containers) in &node.devices.assignments {
        let pod = names
            .get(uid.as_str())
            .map_or(uid.clone(), |n| n.to_string());
        for (container, resources) in containers {
            for (resource, ids) in resources {
                for id in ids {
                    owner_of.insert(
                        (resource.clone(), id.clone()),
                        Owner::Exclusive(pod.clone(), container.clone()),
                    );
                }
            }
        }
    }
    let mut out: BTreeMap<Option<u32>, Vec<(String, Option<Owner>)>> = BTreeMap::new();
    for device in &node.topology.devices {
        let owner = owner_of
            .get(&(device.resource_name.clone(), device.id.clone()))
            .cloned();
        out.entry(device.numa)
            .or_default()
            .push((format!("{} {}", device.resource_name, device.id), owner));
    }
    out
}

/// The SVG's pieces: each NUMA node is a column of boxes (memory, devices, cores, grouped by
/// uncore cache when the machine has more than one), NUMA nodes side by side in their socket,
/// sockets one under the other; then the legend and the pods not admitted.
fn svg(node: &Node, report: &allot_kubelet::Report) -> String {
    const CELL_W: u32 = 40;
    const CELL_H: u32 = 22;
    const PAD: u32 = 8;
    const DEVICE_W: u32 = 132;
    let owners = owners(node);
    let devices = devices_by_numa(node);
    let mut all_owners: std::collections::BTreeSet<Owner> = owners.values().cloned().collect();
    all_owners.extend(devices.values().flatten().filter_map(|(_, o)| o.clone()));
    let fills = svg_fills(&all_owners);
    let fill_of = |o: &Owner| fills.get(o).cloned().unwrap_or_else(|| "#ffffff".into());
    let t = tree(node);
    let caches: std::collections::BTreeSet<u32> =
        node.topology.cpus.iter().map(|c| c.uncore_cache).collect();
    let draw_caches = caches.len() > 1;
    let max_threads = t
        .values()
        .flat_map(|n| n.values())
        .flat_map(|u| u.values())
        .flat_map(|c| c.values())
        .map(Vec::len)
        .max()
        .unwrap_or(1) as u32;
    let core_w = max_threads * CELL_W + 8;
    let core_h = CELL_H + 18;
    let cores_per_row = |count: usize| -> u32 { (count.clamp(1, 4)) as u32 };
    let memory: BTreeMap<u32, String> = node
        .topology
        .numa_nodes
        .iter()
        .map(|n| {
            let mut text = n
                .memory
                .map_or("memory: not given".to_string(), |m| format!("memory {m}"));
            for (size, bytes) in &n.hugepages {
                text.push_str(&format!(", {size} {bytes}"));
            }
            (n.id, text)
        })
        .collect();
    let mut body = String::new();
    let mut y = PAD + 30;
    let mut width = 0u32;
    for (socket, numas) in &t {
        let socket_top = y;
        let mut x = 2 * PAD;
        let mut bottom = y + 26;
        let mut numa_boxes = String::new();
        for (numa, uncores) in numas {
            let cores: usize = uncores.values().map(BTreeMap::len).sum();
            let per_row = cores_per_row(cores.max(1));
            let inner_w = (per_row * (core_w + PAD)).max(2 * (DEVICE_W + PAD)) + PAD;
            let box_w = inner_w + 2 * PAD;
            let left = x;
            let mut cy = y + 26 + 34;
            let mut inner = String::new();
            let _ = writeln!(
                inner,
                r##"<text x="{}" y="{}" font-size="11" fill="#2d3436">{}</text>"##,
                left + PAD,
                cy,
                escape(memory.get(numa).map_or("memory: not given", String::as_str))
            );
            cy += 10;
            let numa_devices = devices.get(&Some(*numa)).cloned().unwrap_or_default();
            for (i, (label, owner)) in numa_devices.iter().enumerate() {
                let dx = left + PAD + (i as u32 % 2) * (DEVICE_W + PAD);
                let dy = cy + (i as u32 / 2) * (CELL_H + 6);
                let fill = owner.as_ref().map_or("#ffffff".to_string(), fill_of);
                let title = owner.as_ref().map_or("free".to_string(), Owner::label);
                let _ = writeln!(
                    inner,
                    r##"<rect class="device" x="{dx}" y="{dy}" width="{DEVICE_W}" height="{CELL_H}" rx="4" fill="{fill}" stroke="#2d3436"><title>{}: {}</title></rect><text x="{}" y="{}" font-size="10" fill="#2d3436">{}</text>"##,
                    escape(label),
                    escape(&title),
                    dx + 5,
                    dy + 15,
                    escape(label)
                );
            }
            if !numa_devices.is_empty() {
                cy += numa_devices.len().div_ceil(2) as u32 * (CELL_H + 6) + 4;
            }
            for (uncore, cores) in uncores {
                let cache_top = cy;
                if draw_caches {
                    cy += 18;
                }
                let list: Vec<(&u32, &Vec<u32>)> = cores.iter().collect();
                for row in list.chunks(per_row as usize) {
                    for (i, (core, threads)) in row.iter().enumerate() {
                        let cx = left + PAD + i as u32 * (core_w + PAD);
                        let _ = writeln!(
                            inner,
                            r##"<rect class="core" x="{cx}" y="{cy}" width="{core_w}" height="{core_h}" rx="3" fill="#ffffff" stroke="#636e72"/><text x="{}" y="{}" font-size="10" fill="#2d3436">core {core}</text>"##,
                            cx + 4,
                            cy + 12
                        );
                        for (j, cpu) in threads.iter().enumerate() {
                            let o = owners.get(cpu).cloned().unwrap_or(Owner::Unknown);
                            let tx = cx + 4 + j as u32 * CELL_W;
                            let ty = cy + 15;
                            let _ = writeln!(
                                inner,
                                r##"<rect class="cpu" x="{tx}" y="{ty}" width="{}" height="{}" fill="{}" stroke="#2d3436"><title>CPU {cpu}: {}</title></rect><text x="{}" y="{}" font-size="11" text-anchor="middle" fill="#2d3436">{cpu}</text>"##,
                                CELL_W - 2,
                                CELL_H - 2,
                                fill_of(&o),
                                escape(&o.label()),
                                tx + CELL_W / 2,
                                ty + 15
                            );
                        }
                    }
                    cy += core_h + PAD;
                }
                if draw_caches {
                    let _ = writeln!(
                        inner,
                        r##"<rect class="cache" x="{}" y="{cache_top}" width="{}" height="{}" fill="none" stroke="#b2bec3" stroke-dasharray="4 2"/><text x="{}" y="{}" font-size="10" fill="#636e72">uncore cache {uncore}</text>"##,
                        left + PAD / 2,
                        inner_w,
                        cy - cache_top,
                        left + PAD,
                        cache_top + 13
                    );
                    cy += PAD;
                }
            }
            let numa_top = y + 26;
            let _ = writeln!(
                numa_boxes,
                r##"<rect class="numa" x="{left}" y="{numa_top}" width="{box_w}" height="{}" fill="#f5f6fa" stroke="#0984e3"/><text x="{}" y="{}" font-size="12" fill="#0984e3">NUMA node {numa}</text>{inner}"##,
                cy - numa_top,
                left + 6,
                numa_top + 16
            );
            bottom = bottom.max(cy + PAD);
            x += box_w + PAD;
        }
        width = width.max(x + PAD);
        let _ = writeln!(
            body,
            r##"<rect class="socket" x="{PAD}" y="{socket_top}" width="{}" height="{}" fill="#ecf0f1" stroke="#2d3436" stroke-width="2"/><text x="{}" y="{}" font-size="14" font-weight="bold">socket {socket}</text>{numa_boxes}"##,
            x - PAD,
            bottom - socket_top,
            PAD + 6,
            socket_top + 18
        );
        y = bottom + PAD;
    }
    // Devices without a NUMA node, then the legend and the pods not admitted.
    let mut legend = String::new();
    let mut ly = y + PAD;
    if let Some(loose) = devices.get(&None) {
        let _ = writeln!(
            legend,
            r##"<text x="{PAD}" y="{}" font-size="12" font-weight="bold">devices without a NUMA node</text>"##,
            ly + 12
        );
        ly += 20;
        for (i, (label, owner)) in loose.iter().enumerate() {
            let dx = PAD + (i as u32 % 4) * (DEVICE_W + PAD);
            let dy = ly + (i as u32 / 4) * (CELL_H + 6);
            let fill = owner.as_ref().map_or("#ffffff".to_string(), fill_of);
            let _ = writeln!(
                legend,
                r##"<rect class="device" x="{dx}" y="{dy}" width="{DEVICE_W}" height="{CELL_H}" rx="4" fill="{fill}" stroke="#2d3436"/><text x="{}" y="{}" font-size="10">{}</text>"##,
                dx + 5,
                dy + 15,
                escape(label)
            );
        }
        ly += loose.len().div_ceil(4) as u32 * (CELL_H + 6) + PAD;
    }
    let _ = writeln!(
        legend,
        r##"<text x="{PAD}" y="{}" font-size="12" font-weight="bold">owners</text>"##,
        ly + 12
    );
    ly += 20;
    for o in &all_owners {
        let _ = writeln!(
            legend,
            r##"<rect class="legend" x="{PAD}" y="{ly}" width="14" height="14" fill="{}" stroke="#2d3436"/><text x="{}" y="{}" font-size="12">{}</text>"##,
            fill_of(o),
            PAD + 20,
            ly + 12,
            escape(&o.label())
        );
        ly += 20;
    }
    let rejected: Vec<&allot_kubelet::PodAdmission> =
        report.pods.iter().filter(|p| !p.admitted).collect();
    if !rejected.is_empty() {
        ly += PAD;
        let _ = writeln!(
            legend,
            r##"<text x="{PAD}" y="{}" font-size="12" font-weight="bold">not admitted</text>"##,
            ly + 12
        );
        ly += 20;
        for p in rejected {
            let _ = writeln!(
                legend,
                r##"<text class="rejected" x="{PAD}" y="{}" font-size="12" fill="#c0392b">{} ({}): {}</text>"##,
                ly + 12,
                escape(&p.pod),
                escape(p.reason.as_deref().unwrap_or("-")),
                escape(p.message.as_deref().unwrap_or("-"))
            );
            ly += 20;
        }
    }
    let width = width.max(4 * (DEVICE_W + PAD) + 2 * PAD);
    let height = ly + PAD;
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif"><rect width="100%" height="100%" fill="#ffffff"/><text x="{PAD}" y="22" font-size="16" font-weight="bold">{}</text>
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
