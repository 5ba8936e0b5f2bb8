//! Scale report: `cargo run --release -p allot-sim --example scale -- NODES DEVICES PODS`
//! generates a cluster, simulates it once and prints load time, run time, pods per second and
//! where the run's time went (per controller, event dispatch).

use std::time::Instant;

use allot_sim::generate::{GenOptions, load_generated};
use allot_sim::memory::{cpu_seconds, peak_rss_mib};

/// The allocator the `allot` binary runs with.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn main() {
    // As the `allot` binary does.
    allot_sim::memory::disable_transparent_huge_pages();
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (nodes, devices_per_node, pods) = match args[..] {
        [n, d, p] => (n, d, p),
        _ => (5_000, 8, 50_000),
    };
    let started = Instant::now();
    let mut input = match load_generated(GenOptions {
        nodes,
        devices_per_node,
        pods,
    }) {
        Ok(input) => input,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    };
    let loaded = started.elapsed();
    let rss_loaded = peak_rss_mib();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let outcome = match allot_sim::run_moving(&mut input, &mut |_| {}) {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    };
    let ran = started.elapsed();
    let cpu = cpu_seconds().zip(cpu_before).map(|(a, b)| a - b);
    let bound = outcome
        .store
        .list::<allot_api::core::v1::Pod>()
        .filter(|p| p.spec.node_name.is_some())
        .count();
    let violations = allot_sim::check_invariants(&outcome.store);
    println!(
        "{nodes} nodes x {devices_per_node} devices, {pods} pods: generate+load+validate {:.2}s, run {:.2}s wall ({} CPU), {bound} bound, {} reconciles, {:.0} pods/s (run only, wall), {} invariant violations",
        loaded.as_secs_f64(),
        ran.as_secs_f64(),
        cpu.map_or("?".to_string(), |c| format!("{c:.2}s")),
        outcome.reconciles,
        pods as f64 / ran.as_secs_f64(),
        violations.len(),
    );
    // Node agents are one controller per node: report them together.
    let mut groups: Vec<(String, u64, u64, usize)> = Vec::new();
    for (name, reconciles, nanos) in &outcome.stats.controllers {
        let group = name.split('/').next().unwrap_or(name).to_string();
        match groups.iter_mut().find(|g| g.0 == group) {
            Some(g) => {
                g.1 += reconciles;
                g.2 += nanos;
                g.3 += 1;
            }
            None => groups.push((group, *reconciles, *nanos, 1)),
        }
    }
    let stats = &outcome.stats;
    println!(
        "  dispatch: {} events, {} keys_for calls, {:.2}s",
        stats.events,
        stats.keys_for_calls,
        stats.dispatch_nanos as f64 / 1e9
    );
    let mib = |m: Option<u64>| m.map_or("?".to_string(), |m| format!("{m} MiB"));
    println!(
        "  peak RSS: {} after loading, {} at the end",
        mib(rss_loaded),
        mib(peak_rss_mib())
    );
    for (group, reconciles, nanos, count) in groups {
        let label = if count > 1 {
            format!("{group} (x{count})")
        } else {
            group
        };
        println!(
            "  {label}: {reconciles} reconciles, {:.2}s",
            nanos as f64 / 1e9
        );
    }
}
