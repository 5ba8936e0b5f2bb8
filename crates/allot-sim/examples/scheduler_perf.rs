//! Runs one of kube-scheduler's scheduler_perf workloads (see
//! `allot_sim::scheduler_perf`) through `allot simulate`'s controllers and reports the
//! scheduling rate next to upstream's threshold.
//!
//! `cargo run --release -p allot-sim --example scheduler_perf -- SchedulingBasic [nodes]`
//! (workloads: SchedulingBasic, SchedulingPodAntiAffinity, SchedulingPodAffinity,
//! TopologySpreading, PreemptionBasic, SchedulingWithResourceClaimTemplate; `all` runs each).
//! Exits 1 when a pod that should be bound is not.

use std::time::Instant;

use allot_sim::memory::cpu_seconds;
use allot_sim::scheduler_perf::{WORKLOADS, Workload, workload};

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn run(w: Workload) -> bool {
    let started = Instant::now();
    let mut input = match w.load() {
        Ok(input) => input,
        Err(err) => {
            eprintln!("{}: {err}", w.name);
            std::process::exit(2);
        }
    };
    let loaded = started.elapsed();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let outcome = match allot_sim::run_moving(&mut input, &mut |_| {}) {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("{}: {err}", w.name);
            std::process::exit(1);
        }
    };
    let ran = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu_before).map(|(a, b)| a - b);
    let bound = outcome
        .store
        .list::<allot_api::core::v1::Pod>()
        .filter(|p| p.spec.node_name.is_some())
        .count();
    let scheduler = outcome
        .stats
        .controllers
        .iter()
        .filter(|(name, _, _)| *name == "scheduler")
        .map(|(_, _, nanos)| *nanos as f64 / 1e9)
        .sum::<f64>();
    let pods = w.pods() as f64;
    println!(
        "{}: {} nodes, {} pods ({} init + {} measured), {bound} bound at the end (expected {}); load {:.2}s, run {ran:.2}s wall ({} CPU), scheduler {scheduler:.2}s",
        w.name,
        w.nodes,
        w.pods(),
        w.init_pods,
        w.measure_pods,
        w.bound_at_end(),
        loaded.as_secs_f64(),
        cpu.map_or("?".to_string(), |c| format!("{c:.2}s")),
    );
    let target = w.threshold.map_or("none upstream".to_string(), |t| {
        format!("{t} pods/s, 10x = {}", 10 * t)
    });
    println!(
        "  {:.0} pods/s (run, wall), {} pods/s (run, CPU), {:.0} pods/s (scheduler only); upstream threshold {target}",
        pods / ran,
        cpu.map_or("?".to_string(), |c| format!("{:.0}", pods / c)),
        pods / scheduler.max(1e-9),
    );
    bound == w.bound_at_end()
}

fn main() {
    // As the `allot` binary does.
    allot_sim::memory::disable_transparent_huge_pages();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let name = args.first().map_or("SchedulingBasic", String::as_str);
    let nodes: Option<usize> = args.get(1).and_then(|n| n.parse().ok());
    let chosen: Vec<Workload> = if name == "all" {
        WORKLOADS.to_vec()
    } else {
        match workload(name) {
            Some(w) => vec![w],
            None => {
                eprintln!(
                    "unknown workload {name:?}; one of: {}",
                    WORKLOADS.map(|w| w.name).join(", ")
                );
                std::process::exit(2);
            }
        }
    };
    let mut ok = true;
    for w in chosen {
        ok &= run(nodes.map_or(w, |n| w.scaled(n)));
    }
    if !ok {
        std::process::exit(1);
    }
}
