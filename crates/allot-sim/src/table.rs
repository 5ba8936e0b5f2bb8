//! `allot simulate`'s table: one row per pod, then why the others wait, NUMA placements worth a
//! second look, and the answers to ResourcePoolStatusRequests.
//!
//! The default table fits [`DEFAULT_WIDTH`] columns: devices are written `pool/device`, a cell
//! too long for the line wraps onto continuation lines, and so do long explanations. `-o wide`
//! adds the pod claims' names with their devices' drivers, and the creation and start times, and
//! never wraps. Times are offsets from the start of the simulated clock (`0s`, `1m30s`).
//!
//! NUMA nodes come in two columns: `CPU-NUMA` (the pod's exclusive CPUs and pinned memory) and
//! `DEV-NUMA` (its devices, DRA and device plugin). A pod whose two differ on a node whose
//! Topology Manager policy is `single-numa-node` is marked `!` and explained below the table: DRA
//! devices give the kubelet's Topology Manager no hints, so it aligns CPUs and memory without
//! them (as upstream).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use allot_api::core::v1::{Node, Pod};
use allot_api::resource::v1::ResourceClaim;
use allot_api::resource::v1alpha3::ResourcePoolStatusRequest;
use allot_runtime::SimTime;
use allot_store::Store;

use crate::output::{RESOURCES_ANNOTATION, pod_claims, pod_problem};

/// The width the default table keeps to.
pub const DEFAULT_WIDTH: usize = 120;

/// What the table shows.
pub struct TableOptions<'a> {
    /// `-o wide`: more columns, full device names, no wrapping.
    pub wide: bool,
    /// The pods to show (a namespace or label selector); the others are left out of every part.
    pub pods: &'a dyn Fn(&Pod) -> bool,
}

impl Default for TableOptions<'_> {
    fn default() -> Self {
        TableOptions {
            wide: false,
            pods: &|_| true,
        }
    }
}

/// Whether a pod counts as placed: running, finished, or bound and waiting on its node.
pub fn placed(pod: &Pod) -> bool {
    matches!(pod_status(pod).as_str(), "Running" | "Succeeded" | "Bound")
}

/// The pod's phase, or `Bound`/`Pending` for a pod without one.
pub fn pod_status(pod: &Pod) -> String {
    if let Some(phase) = &pod.status.phase {
        return phase.clone();
    }
    if pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
        "Bound".to_string()
    } else {
        "Pending".to_string()
    }
}

/// A simulated time (RFC 3339, as objects carry it) as an offset from the start of the clock:
/// `0s`, `45s`, `1m30s`, `2h5m`, `3d4h`; `-` when absent or unreadable.
pub fn offset(time: Option<&str>) -> String {
    let Some(at) = time.and_then(SimTime::parse_rfc3339) else {
        return "-".to_string();
    };
    duration(at.seconds())
}

/// Seconds as `1m30s`, `2h5m` (seconds dropped past an hour), `3d4h` (minutes dropped past a
/// day).
pub fn duration(seconds: u64) -> String {
    let (d, h, m, s) = (
        seconds / 86_400,
        seconds / 3600 % 24,
        seconds / 60 % 60,
        seconds % 60,
    );
    let mut out = String::new();
    if d > 0 {
        let _ = write!(out, "{d}d");
        if h > 0 {
            let _ = write!(out, "{h}h");
        }
        return out;
    }
    if h > 0 {
        let _ = write!(out, "{h}h");
        if m > 0 {
            let _ = write!(out, "{m}m");
        }
        return out;
    }
    if m > 0 {
        let _ = write!(out, "{m}m");
    }
    if s > 0 || m == 0 {
        let _ = write!(out, "{s}s");
    }
    out
}

/// A device as the table names it.
struct DeviceCell {
    driver: String,
    pool: String,
    device: String,
    share: Option<String>,
}

impl DeviceCell {
    fn short(&self) -> String {
        match &self.share {
            Some(_) => format!("{}/{} (shared)", self.pool, self.device),
            None => format!("{}/{}", self.pool, self.device),
        }
    }

    fn long(&self) -> String {
        let mut text = format!("{}/{}/{}", self.driver, self.pool, self.device);
        if let Some(share) = &self.share {
            let _ = write!(text, " (share {share})");
        }
        text
    }
}

fn claim_devices(store: &Store, namespace: &str, claim: &str) -> Vec<DeviceCell> {
    let Some(claim) = store.get::<ResourceClaim>(namespace, claim) else {
        return Vec::new();
    };
    let Some(allocation) = &claim.status.allocation else {
        return Vec::new();
    };
    allocation
        .devices
        .results
        .iter()
        .map(|r| DeviceCell {
            driver: r.driver.to_string(),
            pool: r.pool.to_string(),
            device: r.device.to_string(),
            share: r.share_id.as_ref().map(ToString::to_string),
        })
        .collect()
}

/// The NUMA nodes in a pod's resources annotation, by what they belong to.
#[derive(Default)]
struct PodNuma {
    /// Exclusive CPUs.
    cpus: allot_topology::CpuSet,
    /// Pinned memory's NUMA nodes.
    memory: BTreeSet<u64>,
    /// DRA devices' NUMA nodes.
    dra: BTreeSet<u64>,
    /// Device-plugin devices' NUMA nodes.
    plugin: BTreeSet<u64>,
}

fn topology_ids(value: &serde_json::Value, into: &mut BTreeSet<u64>) {
    match value {
        serde_json::Value::Object(map) => {
            for (key, inner) in map {
                if key == "topology" {
                    if let Some(serde_json::Value::Array(nodes)) = inner.get("nodes") {
                        for node in nodes {
                            // Upstream's PodResources JSON names the field "ID"; protobuf JSON
                            // omits a zero id.
                            match node.get("ID").or_else(|| node.get("id")) {
                                Some(id) => into.extend(id.as_u64()),
                                None if node.is_object() => {
                                    into.insert(0);
                                }
                                None => {}
                            }
                        }
                    }
                } else {
                    topology_ids(inner, into);
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| topology_ids(i, into)),
        _ => {}
    }
}

fn pod_numa(pod: &Pod) -> PodNuma {
    let mut numa = PodNuma::default();
    let (cpus, _) = crate::output::pod_cpus_and_numa(pod);
    numa.cpus = cpus;
    let Some(value) = pod
        .metadata
        .annotations
        .get(RESOURCES_ANNOTATION)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
    else {
        return numa;
    };
    let containers = value
        .get("containers")
        .and_then(|c| c.as_array())
        .cloned()
        .unwrap_or_default();
    for container in &containers {
        for (key, into) in [
            ("memory", &mut numa.memory),
            ("dynamicResources", &mut numa.dra),
            ("devices", &mut numa.plugin),
        ] {
            if let Some(part) = container.get(key) {
                topology_ids(part, into);
            }
        }
    }
    numa
}

fn ids(set: &BTreeSet<u64>) -> String {
    if set.is_empty() {
        return "-".to_string();
    }
    set.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

/// What the table knows of each node: CPU id to NUMA node, and the Topology Manager policy.
struct NodeFacts {
    cpu_numa: BTreeMap<u32, u32>,
    policy: String,
}

fn node_facts(store: &Store, input: Option<&crate::Input>) -> BTreeMap<String, NodeFacts> {
    let mut out = BTreeMap::new();
    if let Some(input) = input {
        for node in store.list::<Node>() {
            let (topology, config) = input.node_setup(node);
            out.insert(
                node.metadata.name.clone(),
                NodeFacts {
                    cpu_numa: topology.cpus.iter().map(|c| (c.id, c.numa)).collect(),
                    policy: config.topology_manager_policy.clone(),
                },
            );
        }
    }
    out
}

fn condition_time<'a>(pod: &'a Pod, type_: &str) -> Option<&'a str> {
    pod.status
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .and_then(|c| c.last_transition_time.as_deref())
        .filter(|t| !t.is_empty())
}

/// The default table; see the module documentation.
pub fn table(store: &Store, input: Option<&crate::Input>, options: &TableOptions<'_>) -> String {
    let facts = node_facts(store, input);
    let mut header: Vec<&str> = vec!["POD", "STATUS", "NODE"];
    if options.wide {
        header.extend(["CREATED", "SCHEDULED", "STARTED", "CLAIMS (DEVICES)"]);
    } else {
        header.extend(["SCHEDULED", "DEVICES"]);
    }
    header.extend(["CPUS", "CPU-NUMA", "DEV-NUMA"]);
    let devices_column = if options.wide { 6 } else { 4 };
    let mut rows: Vec<Vec<String>> = vec![header.iter().map(|h| h.to_string()).collect()];
    let mut problems = Vec::new();
    let mut numa_notes = Vec::new();
    for pod in store.list::<Pod>().filter(|p| (options.pods)(p)) {
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let mut claims = Vec::new();
        for (pod_claim, claim) in pod_claims(pod) {
            if claim.is_empty() {
                claims.push(format!("{pod_claim}: not created"));
                continue;
            }
            let devices = claim_devices(store, &pod.metadata.namespace, &claim);
            claims.push(match (devices.is_empty(), options.wide) {
                (true, true) => format!("{pod_claim}={claim} (unallocated)"),
                (true, false) => format!("{pod_claim}: unallocated"),
                (false, true) => {
                    let list: Vec<String> = devices.iter().map(DeviceCell::long).collect();
                    format!("{pod_claim}={claim} ({})", list.join(", "))
                }
                (false, false) => {
                    let list: Vec<String> = devices.iter().map(DeviceCell::short).collect();
                    list.join(", ")
                }
            });
        }
        let numa = pod_numa(pod);
        let node = pod.spec.node_name.clone().filter(|n| !n.is_empty());
        let node_facts = node.as_ref().and_then(|n| facts.get(n));
        let mut cpu_numa: BTreeSet<u64> = numa.memory.clone();
        if let Some(facts) = node_facts {
            cpu_numa.extend(
                numa.cpus
                    .iter()
                    .filter_map(|cpu| facts.cpu_numa.get(&cpu))
                    .map(|&n| u64::from(n)),
            );
        }
        let dev_numa: BTreeSet<u64> = numa.dra.union(&numa.plugin).copied().collect();
        let status = pod_status(pod);
        let mut dev_cell = ids(&dev_numa);
        if let Some(facts) = node_facts
            && facts.policy == "single-numa-node"
            && !cpu_numa.is_empty()
            && !dev_numa.is_empty()
            && (cpu_numa != dev_numa || cpu_numa.len() > 1)
        {
            dev_cell.push('!');
            let why = if !numa.dra.is_empty() && numa.dra.difference(&cpu_numa).next().is_some() {
                "admitted because DRA devices give the kubelet's Topology Manager no hints: it aligns CPUs, memory and device-plugin devices only"
            } else {
                "admitted because no hint provider tied them together"
            };
            numa_notes.push(format!(
                "{name}: {} on NUMA {}, devices on NUMA {} under {}'s single-numa-node Topology Manager policy: {why}",
                if numa.memory.is_empty() { "CPUs" } else { "CPUs and memory" },
                ids(&cpu_numa),
                ids(&dev_numa),
                node.as_deref().unwrap_or_default()
            ));
        }
        if !placed(pod) {
            problems.push(format!("{name} ({status}): {}", pod_problem(pod)));
        }
        let cpus = if !numa.cpus.is_empty() {
            numa.cpus.to_string()
        } else if placed(pod) {
            "shared pool".to_string()
        } else {
            "-".to_string()
        };
        let mut row = vec![name, status, node.clone().unwrap_or_else(|| "-".into())];
        if options.wide {
            row.push(offset(pod.metadata.creation_timestamp.as_deref()));
        }
        row.push(offset(condition_time(pod, "PodScheduled")));
        if options.wide {
            row.push(offset(
                pod.status.start_time.as_ref().and_then(|t| t.as_str()),
            ));
        }
        row.push(if claims.is_empty() {
            "-".into()
        } else {
            claims.join("; ")
        });
        row.extend([cpus, ids(&cpu_numa), dev_cell]);
        rows.push(row);
    }
    let width = if options.wide {
        usize::MAX
    } else {
        DEFAULT_WIDTH
    };
    let mut out = render(&rows, devices_column, width);
    let shown: BTreeSet<(String, String)> = store
        .list::<Pod>()
        .filter(|p| (options.pods)(p))
        .filter_map(|p| {
            let g = p.spec.scheduling_group.as_ref()?;
            Some((p.metadata.namespace.clone(), g.pod_group_name.clone()))
        })
        .collect();
    let gangs: Vec<crate::gangs::Gang> = crate::gangs::gangs(store)
        .into_iter()
        .filter(|g| g.pods == 0 || shown.contains(&(g.namespace.clone(), g.name.clone())))
        .collect();
    let gang_lines = crate::gangs::lines(&gangs);
    for (title, lines) in [
        ("Gangs:", gang_lines),
        ("Not running:", problems),
        ("NUMA (!):", numa_notes),
    ] {
        if lines.is_empty() {
            continue;
        }
        let _ = write!(out, "\n{title}\n");
        for line in lines {
            // The first line at two spaces, the others (an explanation's own indented lines)
            // at four plus their own indentation.
            for (i, part) in line.lines().enumerate() {
                let own = part.len() - part.trim_start().len();
                let indent = " ".repeat(if i == 0 { 2 } else { 4 } + own);
                out.push_str(&wrap(part.trim_start(), &indent, width));
            }
        }
    }
    out.push_str(&pool_status(store, width));
    out
}

/// Milliseconds of simulated time as the table writes offsets (`1m30s`; `1.5s` below a minute
/// when not whole).
pub fn millis(ms: u64) -> String {
    if !ms.is_multiple_of(1000) && ms < 60_000 {
        let text = format!("{:.3}", ms as f64 / 1000.0);
        return format!("{}s", text.trim_end_matches('0').trim_end_matches('.'));
    }
    duration(ms / 1000)
}

/// What the run's report adds below the table when pods finished or went: each such pod with
/// how and when it ended (none disappears), then the run's figures.
pub fn report_sections(
    report: &crate::record::Report,
    keep: &dyn Fn(&crate::record::PodRecord) -> bool,
    width: usize,
) -> String {
    let mut out = String::new();
    if !report.eventful() {
        return out;
    }
    let mut ended = Vec::new();
    for p in report.pods.iter().filter(|p| keep(p)) {
        let Some(at) = p.deleted.or(p.finished) else {
            continue;
        };
        let mut line = format!("{}/{}: {} at {}", p.namespace, p.name, p.phase, millis(at));
        if let Some(node) = &p.node {
            let _ = write!(line, " on {node}");
        }
        if let (Some(start), Some(end)) = (p.started, p.finished) {
            let _ = write!(line, " after running {}", millis(end.saturating_sub(start)));
        }
        if let Some(reason) = &p.reason {
            let _ = write!(line, " ({reason})");
        }
        ended.push((at, line));
    }
    // In the order they ended (a stable sort: pods that ended together stay in creation order).
    ended.sort_by_key(|(at, _)| *at);
    if !ended.is_empty() {
        out.push_str("\nEnded:\n");
        for (_, line) in ended {
            out.push_str(&wrap(&line, "  ", width));
        }
    }
    let s = &report.summary;
    out.push_str("\nSummary:\n");
    let mut lines = vec![
        format!(
            "pods: {} ({} started, {} succeeded, {} failed, {} deleted, {} never scheduled)",
            s.pods, s.started, s.succeeded, s.failed, s.deleted, s.pending
        ),
        format!(
            "makespan: {}",
            millis((s.makespan_seconds * 1000.0).round() as u64)
        ),
        format!(
            "queue wait: p50 {}, p90 {}, p99 {}",
            millis((s.queue_wait_seconds.p50 * 1000.0).round() as u64),
            millis((s.queue_wait_seconds.p90 * 1000.0).round() as u64),
            millis((s.queue_wait_seconds.p99 * 1000.0).round() as u64)
        ),
        format!(
            "CPU utilisation: {:.1}% average, {:.1}% peak of {} cores",
            s.cpu.average * 100.0,
            s.cpu.peak * 100.0,
            s.cpu.capacity
        ),
    ];
    for (class, u) in &s.devices {
        lines.push(format!(
            "{class} utilisation: {:.1}% average, {:.1}% peak of {} devices",
            u.average * 100.0,
            u.peak * 100.0,
            u.capacity
        ));
    }
    for line in lines {
        out.push_str(&wrap(&line, "  ", width));
    }
    out
}

/// `-o events`: every Event occurrence of the run in time order, as `kubectl get events`
/// columns with the time since the start.
pub fn events_table(report: &crate::record::Report, keep: &dyn Fn(&str) -> bool) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        ["TIME", "TYPE", "REASON", "OBJECT", "SOURCE", "MESSAGE"]
            .iter()
            .map(|h| h.to_string())
            .collect(),
    ];
    for e in report.events.iter().filter(|e| keep(&e.object)) {
        rows.push(vec![
            millis(e.at),
            e.type_.clone(),
            e.reason.clone(),
            e.object.clone(),
            e.source.clone(),
            // One line per Event: an explanation's lines joined.
            e.message
                .lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .collect::<Vec<_>>()
                .join(" "),
        ]);
    }
    render(&rows, 5, usize::MAX)
}

/// Renders rows as columns two spaces apart; when wider than `width`, the `flexible` column is
/// narrowed and its cells wrap onto continuation lines.
fn render(rows: &[Vec<String>], flexible: usize, width: usize) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let mut widths = vec![0usize; columns];
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let total: usize = widths.iter().sum::<usize>() + 2 * columns.saturating_sub(1);
    if total > width && flexible < columns {
        let others = total - widths[flexible];
        widths[flexible] = width.saturating_sub(others).max(10);
    }
    let mut out = String::new();
    for row in rows {
        let cells: Vec<Vec<String>> = row
            .iter()
            .enumerate()
            .map(|(i, cell)| {
                if i == flexible {
                    split_cell(cell, widths[i])
                } else {
                    vec![cell.clone()]
                }
            })
            .collect();
        let height = cells.iter().map(Vec::len).max().unwrap_or(1);
        for line_index in 0..height {
            let mut line = String::new();
            for (i, cell) in cells.iter().enumerate() {
                let text = cell.get(line_index).map_or("", String::as_str);
                if i + 1 == columns {
                    line.push_str(text);
                } else {
                    let pad = widths[i];
                    let _ = write!(line, "{text:<pad$}  ");
                }
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
    }
    out
}

/// Splits a cell into lines of at most `width` characters, at spaces where it can.
fn split_cell(cell: &str, width: usize) -> Vec<String> {
    if cell.chars().count() <= width {
        return vec![cell.to_string()];
    }
    let mut lines = Vec::new();
    let mut current = String::new();
    for word in cell.split(' ') {
        let fits = current.chars().count() + 1 + word.chars().count() <= width;
        if !current.is_empty() && !fits {
            lines.push(std::mem::take(&mut current));
        }
        if !current.is_empty() {
            current.push(' ');
        }
        current.push_str(word);
        while current.chars().count() > width {
            let head: String = current.chars().take(width).collect();
            let rest: String = current.chars().skip(width).collect();
            lines.push(head);
            current = rest;
        }
    }
    if !current.is_empty() {
        lines.push(current);
    }
    lines
}

/// One line of text, word-wrapped to `width` (continuation lines indented two more), with a
/// final newline.
pub(crate) fn wrap(text: &str, indent: &str, width: usize) -> String {
    let available = width.saturating_sub(indent.len() + 2).max(20);
    let first = width.saturating_sub(indent.len()).max(20);
    let mut out = String::new();
    let mut line = String::new();
    let mut limit = first;
    for word in text.split(' ') {
        if !line.is_empty() && line.chars().count() + 1 + word.chars().count() > limit {
            let prefix = if out.is_empty() {
                indent.to_string()
            } else {
                format!("{indent}  ")
            };
            let _ = writeln!(out, "{prefix}{line}");
            line.clear();
            limit = available;
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(word);
    }
    let prefix = if out.is_empty() {
        indent.to_string()
    } else {
        format!("{indent}  ")
    };
    let _ = writeln!(out, "{prefix}{line}");
    out
}

/// The answers to ResourcePoolStatusRequests, one row per pool; empty when there is none.
fn pool_status(store: &Store, width: usize) -> String {
    let requests: Vec<&ResourcePoolStatusRequest> =
        store.list::<ResourcePoolStatusRequest>().collect();
    if requests.is_empty() {
        return String::new();
    }
    let number = |n: Option<i32>| n.map_or("-".to_string(), |n| n.to_string());
    let mut rows: Vec<Vec<String>> = vec![
        [
            "REQUEST",
            "DRIVER",
            "POOL",
            "NODE",
            "DEVICES",
            "ALLOCATED",
            "AVAILABLE",
            "UNAVAILABLE",
        ]
        .iter()
        .map(|h| h.to_string())
        .collect(),
    ];
    let mut notes = Vec::new();
    for request in requests {
        let name = request.metadata.name.clone();
        let status = &request.status;
        for pool in &status.pools {
            rows.push(vec![
                name.clone(),
                pool.driver.clone(),
                pool.pool_name.clone(),
                pool.node_name.clone().unwrap_or_else(|| "-".into()),
                number(pool.total_devices),
                number(pool.allocated_devices),
                number(pool.available_devices),
                number(pool.unavailable_devices),
            ]);
            if let Some(error) = &pool.validation_error {
                notes.push(format!("{name}: pool {}: {error}", pool.pool_name));
            }
        }
        let complete = status
            .conditions
            .iter()
            .find(|c| c.type_ == "Complete" || c.type_ == "Failed");
        match complete {
            None => notes.push(format!("{name}: not answered yet")),
            Some(c) if c.type_ == "Failed" && c.status == "True" => {
                notes.push(format!("{name}: failed: {}", c.message))
            }
            Some(_) if status.pools.is_empty() => notes.push(format!("{name}: no pool matches")),
            Some(_) => {}
        }
        if let Some(truncation) = &status.truncation {
            let count = status.pool_count.unwrap_or_default();
            notes.push(format!(
                "{name}: {truncation}: {count} pools match, {} shown",
                status.pools.len()
            ));
        }
        notes.extend(
            status
                .validation_errors
                .iter()
                .map(|e| format!("{name}: {e}")),
        );
    }
    let mut out = String::from("\nResourcePoolStatusRequests:\n");
    if rows.len() > 1 {
        out.push_str(&render(&rows, usize::MAX, width));
    }
    for note in notes {
        out.push_str(&wrap(&note, "  ", width));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_like_kubectl() {
        for (seconds, text) in [
            (0, "0s"),
            (45, "45s"),
            (60, "1m"),
            (90, "1m30s"),
            (3600, "1h"),
            (3_900, "1h5m"),
            (3_930, "1h5m"),
            (90_000, "1d1h"),
        ] {
            assert_eq!(duration(seconds), text, "{seconds}");
        }
        assert_eq!(offset(Some("2026-01-01T00:01:30Z")), "1m30s");
        assert_eq!(offset(None), "-");
    }

    #[test]
    fn long_cells_wrap_to_the_width() {
        let rows = vec![
            vec!["A".to_string(), "LONG".to_string(), "B".to_string()],
            vec![
                "x".to_string(),
                "one two three four five six seven eight nine ten".to_string(),
                "y".to_string(),
            ],
        ];
        let text = render(&rows, 1, 24);
        for line in text.lines() {
            assert!(line.chars().count() <= 24, "{line:?}\n{text}");
        }
        assert!(text.contains("one two"), "{text}");
        let words: Vec<&str> = text.split_whitespace().collect();
        assert!(words.contains(&"ten"), "{text}");
        let wrapped = wrap(&"word ".repeat(60), "  ", 40);
        assert!(
            wrapped.lines().all(|l| l.chars().count() <= 40),
            "{wrapped}"
        );
        assert_eq!(wrapped.split_whitespace().count(), 60);
    }
}
