//! Scale report: `cargo run --release -p allot-sim --example scale -- NODES DEVICES PODS`
//! generates a cluster, simulates it once and prints load time, run time and pods per second
//! (what `allot simulate --bench` reports, without the binary's other dependencies).

use std::time::Instant;

use allot_sim::generate::{GenOptions, load_generated};

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (nodes, devices_per_node, pods) = match args[..] {
        [n, d, p] => (n, d, p),
        _ => (5_000, 8, 50_000),
    };
    let started = Instant::now();
    let input = match load_generated(GenOptions {
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
    let started = Instant::now();
    let outcome = match allot_sim::run(&input, &mut |_| {}) {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    };
    let ran = started.elapsed();
    let bound = outcome
        .store
        .list::<allot_api::core::v1::Pod>()
        .filter(|p| p.spec.node_name.is_some())
        .count();
    let violations = allot_sim::check_invariants(&outcome.store);
    println!(
        "{nodes} nodes x {devices_per_node} devices, {pods} pods: generate+load+validate {:.2}s, run {:.2}s, {bound} bound, {} reconciles, {:.0} pods/s (run only), {} invariant violations",
        loaded.as_secs_f64(),
        ran.as_secs_f64(),
        outcome.reconciles,
        pods as f64 / ran.as_secs_f64(),
        violations.len(),
    );
}
