//! A picture of a node's machine (sockets, NUMA nodes with their memory and devices, uncore
//! caches, cores, threads) with the owner of every CPU and device, as SVG: `allot node show -o
//! svg` draws an admitted scenario with it, and the report of `allot simulate --report` (and
//! `allot serve`'s `/ui/`) draws each node of a simulation with it.
//!
//! A picture is a *layout* (the machine and its devices) painted with *owners*. A report of
//! thousands of nodes cannot carry thousands of drawings, so [`template`] draws a layout once
//! with numbered slots (`@f<n>@` for a fill, `@t<n>@` for an owner's name in a tooltip; slots
//! are the CPUs in topology order, then the devices), and [`paint`] gives one node's owners
//! and which owner holds each slot; the page's script fills the template in, as
//! [`Template::fill`] does (the tests check that this gives [`svg`]'s drawing exactly).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use allot_topology::NodeTopology;

use crate::{CpuPolicy, Node};

/// Who a CPU or a device belongs to.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Owner {
    /// Exclusive to a container: (pod, container).
    Exclusive(String, String),
    /// A pod's shared pool.
    PodShared(String),
    /// Held by a pod (a DRA device, through the pod's claim).
    Pod(String),
    /// Reserved for the system (not exclusively allocatable).
    Reserved,
    /// The node's shared pool.
    Shared,
    /// Not in any pool (a state that does not cover the machine).
    Unknown,
}

impl Owner {
    /// The owner's name in the legend and tooltips.
    pub fn label(&self) -> String {
        match self {
            Owner::Exclusive(pod, c) => format!("{pod}/{c}"),
            Owner::PodShared(pod) => format!("{pod} (pod shared pool)"),
            Owner::Pod(pod) => pod.clone(),
            Owner::Reserved => "reserved".into(),
            Owner::Shared => "shared".into(),
            Owner::Unknown => "unassigned".into(),
        }
    }
}

/// A device of the picture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Device {
    /// Its name (`resource id`, `driver device`).
    pub label: String,
    /// Its NUMA node, when it has one.
    pub numa: Option<u32>,
    /// Who holds it (`None`: free).
    pub owner: Option<Owner>,
}

/// A pod the node did not admit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    /// `namespace/name`.
    pub pod: String,
    /// The reason.
    pub reason: String,
    /// The message.
    pub message: String,
}

/// What is drawn.
#[derive(Debug, Clone)]
pub struct Picture<'a> {
    /// The node's name (the title).
    pub name: String,
    /// The machine.
    pub topology: &'a NodeTopology,
    /// The owner of each CPU (a CPU missing is [`Owner::Unknown`]).
    pub cpus: BTreeMap<u32, Owner>,
    /// The devices, in drawing order.
    pub devices: Vec<Device>,
    /// Pods not admitted.
    pub rejected: Vec<Rejected>,
}

/// `socket → NUMA node → uncore cache → core → threads`.
pub type Tree = BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, BTreeMap<u32, Vec<u32>>>>>;

/// The machine's CPUs as a tree, threads in id order.
pub fn tree(topology: &NodeTopology) -> Tree {
    let mut t = Tree::new();
    for c in &topology.cpus {
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
    for threads in t
        .values_mut()
        .flat_map(|n| n.values_mut())
        .flat_map(|u| u.values_mut())
        .flat_map(|c| c.values_mut())
    {
        threads.sort_unstable();
    }
    t
}

/// The owner of every CPU of an admitting node: reserved, the shared pool, pods' shared pools
/// and containers' exclusive CPUs (the CPU Manager's state).
pub fn cpu_owners(node: &Node) -> BTreeMap<u32, Owner> {
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

impl<'a> Picture<'a> {
    /// An admitting node after `report`: its CPUs' owners, its device-plugin devices (by NUMA
    /// node, in machine order) with the containers holding them, and the pods it refused.
    pub fn of_node(node: &'a Node, report: &crate::Report) -> Picture<'a> {
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
        let devices = node
            .topology
            .devices
            .iter()
            .map(|device| Device {
                label: format!("{} {}", device.resource_name, device.id),
                numa: device.numa,
                owner: owner_of
                    .get(&(device.resource_name.clone(), device.id.clone()))
                    .cloned(),
            })
            .collect();
        Picture {
            name: node.topology.metadata.name.clone(),
            topology: &node.topology,
            cpus: cpu_owners(node),
            devices,
            rejected: report
                .pods
                .iter()
                .filter(|p| !p.admitted)
                .map(|p| Rejected {
                    pod: p.pod.clone(),
                    reason: p.reason.clone().unwrap_or_else(|| "-".into()),
                    message: p.message.clone().unwrap_or_else(|| "-".into()),
                })
                .collect(),
        }
    }

    /// Every owner in the picture (CPUs and devices), in owner order: the legend.
    pub fn owners(&self) -> BTreeSet<Owner> {
        let mut all: BTreeSet<Owner> = self.cpus.values().cloned().collect();
        if self
            .topology
            .cpus
            .iter()
            .any(|c| !self.cpus.contains_key(&c.id))
        {
            all.insert(Owner::Unknown);
        }
        all.extend(self.devices.iter().filter_map(|d| d.owner.clone()));
        all
    }

    /// The owner of slot `index` (CPUs in topology order, then devices); `None`: a free device.
    fn slot_owner(&self, index: usize) -> Option<Owner> {
        match self.topology.cpus.get(index) {
            Some(cpu) => Some(self.cpus.get(&cpu.id).cloned().unwrap_or(Owner::Unknown)),
            None => self
                .devices
                .get(index - self.topology.cpus.len())
                .and_then(|d| d.owner.clone()),
        }
    }
}

/// Escapes text for SVG; `@` too, so that a [`Template`]'s only `@` are its slots'.
pub fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('@', "&#64;")
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

/// Every owner with its fill: fixed greys for the pools, a distinct hue per container or pod
/// (in owner order).
pub fn fills(owners: &BTreeSet<Owner>) -> BTreeMap<Owner, String> {
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

/// The fill of a free device.
const FREE_FILL: &str = "#ffffff";

const CELL_W: u32 = 40;
const CELL_H: u32 = 22;
const PAD: u32 = 8;
const DEVICE_W: u32 = 132;
/// A legend row's height.
const ROW_H: u32 = 20;

/// What paints slot `index`: its fill and its owner's name (escaped).
type Paint<'p> = &'p dyn Fn(usize) -> (String, String);

/// The drawing's layout-only part: the machine with its slots painted by `paint`, and the
/// devices without a NUMA node. Returns the markup, the width, and where the legend starts.
fn layout(picture: &Picture<'_>, paint: Paint<'_>) -> (String, u32, u32) {
    let slot_of: BTreeMap<u32, usize> = picture
        .topology
        .cpus
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id, i))
        .collect();
    let first_device = picture.topology.cpus.len();
    let t = tree(picture.topology);
    let draw_caches = picture
        .topology
        .cpus
        .iter()
        .map(|c| c.uncore_cache)
        .collect::<BTreeSet<u32>>()
        .len()
        > 1;
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
    let memory: BTreeMap<u32, String> = picture
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
    let mut by_numa: BTreeMap<Option<u32>, Vec<(usize, &Device)>> = BTreeMap::new();
    for (i, device) in picture.devices.iter().enumerate() {
        by_numa
            .entry(device.numa)
            .or_default()
            .push((first_device + i, device));
    }
    let device_rect = |out: &mut String, slot: usize, label: &str, dx: u32, dy: u32| {
        let (fill, owner) = paint(slot);
        let _ = writeln!(
            out,
            r##"<rect class="device" x="{dx}" y="{dy}" width="{DEVICE_W}" height="{CELL_H}" rx="4" fill="{fill}" stroke="#2d3436"><title>{}: {owner}</title></rect><text x="{}" y="{}" font-size="10" fill="#2d3436">{}</text>"##,
            escape(label),
            dx + 5,
            dy + 15,
            escape(label)
        );
    };
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
            let per_row = cores.clamp(1, 4) as u32;
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
            let numa_devices = by_numa.get(&Some(*numa)).cloned().unwrap_or_default();
            for (i, (slot, device)) in numa_devices.iter().enumerate() {
                let dx = left + PAD + (i as u32 % 2) * (DEVICE_W + PAD);
                let dy = cy + (i as u32 / 2) * (CELL_H + 6);
                device_rect(&mut inner, *slot, &device.label, dx, dy);
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
                            let (fill, owner) = paint(slot_of[cpu]);
                            let tx = cx + 4 + j as u32 * CELL_W;
                            let ty = cy + 15;
                            let _ = writeln!(
                                inner,
                                r##"<rect class="cpu" x="{tx}" y="{ty}" width="{}" height="{}" fill="{fill}" stroke="#2d3436"><title>CPU {cpu}: {owner}</title></rect><text x="{}" y="{}" font-size="11" text-anchor="middle" fill="#2d3436">{cpu}</text>"##,
                                CELL_W - 2,
                                CELL_H - 2,
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
    // Devices without a NUMA node (or of a NUMA node without CPUs).
    let mut ly = y + PAD;
    let numas: BTreeSet<u32> = t.values().flat_map(|n| n.keys().copied()).collect();
    let loose: Vec<(usize, &Device)> = by_numa
        .iter()
        .filter(|(numa, _)| numa.is_none_or(|n| !numas.contains(&n)))
        .flat_map(|(_, devices)| devices.iter().copied())
        .collect();
    if !loose.is_empty() {
        let _ = writeln!(
            body,
            r##"<text x="{PAD}" y="{}" font-size="12" font-weight="bold">devices without a NUMA node</text>"##,
            ly + 12
        );
        ly += 20;
        for (i, (slot, device)) in loose.iter().enumerate() {
            let dx = PAD + (i as u32 % 4) * (DEVICE_W + PAD);
            let dy = ly + (i as u32 / 4) * (CELL_H + 6);
            device_rect(&mut body, *slot, &device.label, dx, dy);
        }
        ly += loose.len().div_ceil(4) as u32 * (CELL_H + 6) + PAD;
    }
    (body, width.max(4 * (DEVICE_W + PAD) + 2 * PAD), ly)
}

/// The legend's title at `y`.
fn legend_head(y: &str) -> String {
    format!(
        r##"<text x="{PAD}" y="{y}" font-size="12" font-weight="bold">owners</text>
"##
    )
}

/// One legend row: its top `y`, its text's baseline `text_y`, the fill and the (escaped) name.
fn legend_row(y: &str, text_y: &str, fill: &str, label: &str) -> String {
    format!(
        r##"<rect class="legend" x="{PAD}" y="{y}" width="14" height="14" fill="{fill}" stroke="#2d3436"/><text x="{}" y="{text_y}" font-size="12">{label}</text>
"##,
        PAD + 20
    )
}

/// The drawing's opening: size and title (escaped name).
fn head(width: &str, height: &str, name: &str) -> String {
    format!(
        r##"<svg class="machine" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif"><rect width="100%" height="100%" fill="#ffffff"/><text x="{PAD}" y="22" font-size="16" font-weight="bold">{name}</text>
"##
    )
}

/// The picture as SVG: each NUMA node is a column of boxes (memory, devices, cores, grouped by
/// uncore cache when the machine has more than one), NUMA nodes side by side in their socket,
/// sockets one under the other; then the devices without a NUMA node, the legend and the pods
/// not admitted.
pub fn svg(picture: &Picture<'_>) -> String {
    let owners = picture.owners();
    let fills = fills(&owners);
    let paint = |slot: usize| match picture.slot_owner(slot) {
        Some(owner) => (fills[&owner].clone(), escape(&owner.label())),
        None => (FREE_FILL.to_string(), "free".to_string()),
    };
    let (body, width, mut ly) = layout(picture, &paint);
    let mut legend = legend_head(&(ly + 12).to_string());
    ly += ROW_H;
    for o in &owners {
        legend.push_str(&legend_row(
            &ly.to_string(),
            &(ly + 12).to_string(),
            &fills[o],
            &escape(&o.label()),
        ));
        ly += ROW_H;
    }
    if !picture.rejected.is_empty() {
        ly += PAD;
        let _ = writeln!(
            legend,
            r##"<text x="{PAD}" y="{}" font-size="12" font-weight="bold">not admitted</text>"##,
            ly + 12
        );
        ly += ROW_H;
        for p in &picture.rejected {
            let _ = writeln!(
                legend,
                r##"<text class="rejected" x="{PAD}" y="{}" font-size="12" fill="#c0392b">{} ({}): {}</text>"##,
                ly + 12,
                escape(&p.pod),
                escape(&p.reason),
                escape(&p.message)
            );
            ly += ROW_H;
        }
    }
    let height = ly + PAD;
    format!(
        "{}{body}{legend}</svg>\n",
        head(
            &width.to_string(),
            &height.to_string(),
            &escape(&picture.name)
        )
    )
}

/// A layout drawn once for every node that has it (see the module's documentation).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Template {
    /// The opening (`@n@`: the node's name, `@h@`: the height) and the machine, with slots.
    pub body: String,
    /// Where the legend starts.
    pub legend_top: u32,
    /// The legend's title, `@y@` its baseline.
    pub legend_head: String,
    /// A legend row: `@y@` its top, `@b@` its baseline, `@f@` the fill, `@l@` the name.
    pub legend_row: String,
    /// A legend row's height.
    pub row_height: u32,
    /// What follows the rows' last (the height is theirs plus this).
    pub bottom_pad: u32,
    /// A free device's fill and name.
    pub free: (String, String),
}

/// One node's owners for a [`Template`].
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Paints {
    /// The owners in legend order: (escaped name, fill).
    pub owners: Vec<(String, String)>,
    /// Per slot, the index of its owner; -1 for a free device.
    pub slots: Vec<i32>,
}

/// The picture's layout as a template (its owners are not drawn; see [`paint`]).
pub fn template(picture: &Picture<'_>) -> Template {
    let paint = |slot: usize| (format!("@f{slot}@"), format!("@t{slot}@"));
    let (body, width, legend_top) = layout(picture, &paint);
    Template {
        body: format!("{}{body}", head(&width.to_string(), "@h@", "@n@")),
        legend_top,
        legend_head: legend_head("@y@"),
        legend_row: legend_row("@y@", "@b@", "@f@", "@l@"),
        row_height: ROW_H,
        bottom_pad: PAD,
        free: (FREE_FILL.to_string(), "free".to_string()),
    }
}

/// The picture's owners for its layout's [`Template`].
pub fn paint(picture: &Picture<'_>) -> Paints {
    let owners = picture.owners();
    let fills = fills(&owners);
    let index: BTreeMap<&Owner, i32> = owners.iter().zip(0..).collect();
    let slots = (0..picture.topology.cpus.len() + picture.devices.len())
        .map(|slot| picture.slot_owner(slot).map_or(-1, |o| index[&o]))
        .collect();
    Paints {
        owners: owners
            .iter()
            .map(|o| (escape(&o.label()), fills[o].clone()))
            .collect(),
        slots,
    }
}

impl Template {
    /// The drawing of a node named `name` with `paints` (what the report's script does).
    pub fn fill(&self, name: &str, paints: &Paints) -> String {
        let owner = |slot: usize| match paints.slots.get(slot).copied() {
            Some(i) if i >= 0 => paints.owners[i as usize].clone(),
            _ => (self.free.1.clone(), self.free.0.clone()),
        };
        let mut body = String::with_capacity(self.body.len());
        let mut rest = self.body.as_str();
        while let Some(at) = rest.find('@') {
            body.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let end = after.find('@').unwrap_or(after.len());
            let token = &after[..end];
            let slot = token.get(1..).and_then(|n| n.parse::<usize>().ok());
            match (token.chars().next(), slot) {
                (Some('f'), Some(slot)) => body.push_str(&owner(slot).1),
                (Some('t'), Some(slot)) => body.push_str(&owner(slot).0),
                _ if token == "n" => body.push_str(&escape(name)),
                _ => {
                    body.push('@');
                    body.push_str(token);
                    body.push('@');
                }
            }
            rest = after.get(end + 1..).unwrap_or("");
        }
        body.push_str(rest);
        let mut y = self.legend_top;
        let mut legend = self.legend_head.replace("@y@", &(y + 12).to_string());
        y += self.row_height;
        for (label, fill) in &paints.owners {
            legend.push_str(
                &self
                    .legend_row
                    .replace("@y@", &y.to_string())
                    .replace("@b@", &(y + 12).to_string())
                    .replace("@f@", fill)
                    .replace("@l@", label),
            );
            y += self.row_height;
        }
        let height = y + self.bottom_pad;
        format!(
            "{}{legend}</svg>\n",
            body.replace("@h@", &height.to_string())
        )
    }
}

#[cfg(test)]
mod tests;
