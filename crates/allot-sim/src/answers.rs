//! The capacity answers as text, after `allot simulate`'s table: fragmentation, scale-up,
//! consolidation and a workload what-if.

use std::fmt::Write as _;

use crate::capacity::{Consolidation, ReasonGroup, ScaleUp, Verdict, WorkloadFit};
use crate::fragmentation::Fragmentation;

/// Lines longer than the table's width wrapped, continuation lines indented two more.
fn fit(text: String) -> String {
    let width = crate::table::DEFAULT_WIDTH;
    if text.lines().all(|l| l.chars().count() <= width) {
        return text;
    }
    let mut out = String::new();
    for line in text.lines() {
        if line.chars().count() <= width {
            out.push_str(line);
            out.push('\n');
            continue;
        }
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        out.push_str(&crate::table::wrap(body, indent, width));
    }
    out
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn units(value: f64) -> String {
    let text = format!("{value:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

fn percent(score: f64) -> String {
    format!("{:.0}%", score * 100.0)
}

/// Pads cells into aligned columns (two spaces apart).
fn columns(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if widths.len() <= i {
                widths.push(0);
            }
            widths[i] = widths[i].max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                let _ = write!(line, "{cell:<width$}  ", width = widths[i]);
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// The fragmentation section.
pub fn fragmentation(f: &Fragmentation) -> String {
    let mut out = String::from("\nFragmentation:\n");
    if f.shapes.is_empty() {
        out.push_str("  common shapes: none (no claims in the input; give some with --shape)\n");
    } else {
        out.push_str("  common shapes:\n");
        for shape in &f.shapes {
            let _ = writeln!(
                out,
                "    {}: {} ({}{})",
                shape.name,
                shape.description,
                count(shape.claims, "claim", "claims"),
                if shape.given { ", given" } else { "" }
            );
        }
    }
    let mut rows = vec![
        [
            "CLASS",
            "NODES",
            "DEVICES",
            "ALLOCATED",
            "FREE",
            "BLOCKED",
            "FREE-UNITS",
            "STRANDED",
            "SCORE",
            "FITS",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for class in &f.classes {
        let fits = class
            .fits
            .iter()
            .map(|s| format!("{}={}", s.shape, s.copies))
            .collect::<Vec<_>>()
            .join(" ");
        rows.push(vec![
            class.class.clone(),
            class.nodes.to_string(),
            class.devices.to_string(),
            class.allocated.to_string(),
            class.free.to_string(),
            class.blocked.to_string(),
            units(class.free_units),
            units(class.stranded_units),
            percent(class.score),
            if fits.is_empty() { "-".into() } else { fits },
        ]);
    }
    if f.classes.is_empty() {
        rows.clear();
    }
    for line in columns(&rows).lines() {
        let _ = writeln!(out, "  {line}");
    }
    let cpus = &f.cpus;
    if cpus.nodes > 0 {
        let sizes = cpus
            .fits
            .iter()
            .map(|s| format!("{}cpu={}", s.cpus, s.copies))
            .collect::<Vec<_>>()
            .join(" ");
        let _ = writeln!(
            out,
            "  exclusive CPUs on {}: {} allocatable, {} free, {} stranded (NUMA score {}); aligned fits: {}",
            count(cpus.nodes, "node", "nodes"),
            cpus.allocatable,
            cpus.free,
            cpus.stranded,
            percent(cpus.score),
            if sizes.is_empty() { "-".into() } else { sizes }
        );
    }
    fit(out)
}

fn groups(out: &mut String, title: &str, groups: &[ReasonGroup]) {
    if groups.is_empty() {
        return;
    }
    let _ = writeln!(out, "  {title}:");
    for group in groups {
        let _ = writeln!(
            out,
            "    {} ({}): {}",
            group.reason,
            group.pods.len(),
            group.pods.join(", ")
        );
    }
}

/// The scale-up section.
pub fn scale_up(answer: &ScaleUp) -> String {
    let mut out = String::from("\nScale-up:\n");
    let _ = writeln!(
        out,
        "  {} not fitting without added nodes",
        count(answer.unfit_before.len(), "pod", "pods")
    );
    if !answer.found {
        let _ = writeln!(
            out,
            "  no count of {} up to its maxNodes makes every pod fit ({} simulations)",
            answer.shapes.join(", "),
            answer.probes.len()
        );
        groups(
            &mut out,
            "still not fitting",
            &crate::capacity::group_reasons(&answer.still_unfit),
        );
        return fit(out);
    }
    let mix = answer
        .shapes
        .iter()
        .zip(&answer.counts)
        .filter(|(_, c)| **c > 0)
        .map(|(s, c)| format!("{c} × {s}"))
        .collect::<Vec<_>>()
        .join(" + ");
    let _ = writeln!(
        out,
        "  add {} (cost {}), found in {}",
        if mix.is_empty() {
            "nothing".into()
        } else {
            mix
        },
        units(answer.cost),
        count(answer.probes.len(), "simulation", "simulations")
    );
    if answer.budget_exhausted {
        out.push_str("  (the mix budget ran out: cheaper mixes may exist)\n");
    }
    for node in &answer.nodes {
        let pods: Vec<&str> = answer
            .placements
            .iter()
            .filter(|p| &p.node == node)
            .map(|p| p.pod.as_str())
            .collect();
        let _ = writeln!(
            out,
            "    {node}: {}",
            if pods.is_empty() {
                "-".into()
            } else {
                pods.join(", ")
            }
        );
    }
    fit(out)
}

/// The consolidation section.
pub fn consolidation(answer: &Consolidation) -> String {
    let mut out = String::from("\nConsolidation:\n");
    let _ = writeln!(
        out,
        "  {} of {} tried can be removed together{}",
        count(answer.removable.len(), "node", "nodes"),
        answer.tried.len(),
        if answer.removable.is_empty() {
            String::new()
        } else {
            format!(": {}", answer.removable.join(", "))
        }
    );
    for moved in &answer.moved {
        let _ = writeln!(out, "    {} moves to {}", moved.pod, moved.node);
    }
    for candidate in answer.tried.iter().filter(|c| !c.removable) {
        // The first line: the scheduler's per-node details are in -o json.
        let reason = candidate.reason.as_deref().unwrap_or_default();
        let _ = writeln!(
            out,
            "  {} stays: {}",
            candidate.node,
            reason.lines().next().unwrap_or_default()
        );
    }
    fit(out)
}

/// The workload what-if section.
pub fn workload(answer: &WorkloadFit) -> String {
    let verdict = match answer.verdict {
        Verdict::Entirely => "fits entirely",
        Verdict::Partly => "fits partly",
        Verdict::Not => "does not fit",
    };
    let mut out = format!(
        "\nWhat-if: the workload {verdict} ({} of {} placed)\n",
        answer.placed.len(),
        count(answer.pods, "pod", "pods")
    );
    for gang in &answer.gangs {
        let _ = writeln!(
            out,
            "  gang {}/{} (minCount {}): {}",
            gang.namespace,
            gang.name,
            gang.min_count,
            if gang.scheduled {
                "fits as a unit".to_string()
            } else {
                format!(
                    "does not fit (a gang is placed as a unit or not at all): {}",
                    gang.reason
                        .clone()
                        .unwrap_or_default()
                        .replace('\n', "\n      ")
                )
            }
        );
    }
    for placement in &answer.placed {
        let _ = writeln!(out, "    {} on {}", placement.pod, placement.node);
    }
    groups(&mut out, "not placed", &answer.reasons);
    if !answer.displaced.is_empty() {
        let _ = writeln!(out, "  pods pushed out: {}", answer.displaced.join(", "));
    }
    fit(out)
}
