//! The report of issue 20 at size: `cargo run --release -p allot-sim --example report --
//! NODES DEVICES PODS OUT.html` generates a cluster, simulates it as `allot simulate --report`
//! does (utilisation recorded), then measures the report's phase as the binary's: fragmentation,
//! summary, pending pods by reason, the page (every node's drawing included) and the file.
//! Prints that phase's wall and CPU time (user + system) and the file's size; open the file in
//! a browser for its opening time.

use std::time::Instant;

use allot_sim::generate::{GenOptions, load_generated};
use allot_sim::memory::cpu_seconds;
use allot_sim::run::session::{Session, SessionOptions};
use allot_sim::usage::UsageRecorder;

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn main() {
    allot_sim::memory::disable_transparent_huge_pages();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let number =
        |i: usize, default: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(default);
    let (nodes, devices_per_node, pods) = (number(0, 5000), number(1, 8), number(2, 30000));
    let out = args.get(3).cloned().unwrap_or_else(|| "report.html".into());
    let input = load_generated(GenOptions {
        nodes,
        devices_per_node,
        pods,
    })
    .expect("a valid generated cluster");
    let recorder = UsageRecorder::new();
    let session = Session::start(
        &input,
        SessionOptions {
            usage: Some(recorder.clone()),
            ..Default::default()
        },
        &mut |_| {},
    )
    .expect("the run");
    let outcome = session.into_outcome();
    let started = Instant::now();
    let cpu = cpu_seconds().unwrap_or(0.0);
    let series = recorder.series(outcome.end);
    let setup = |node: &allot_api::core::v1::Node| Some(input.node_setup(node));
    let fragmentation = allot_sim::fragmentation::fragmentation(
        &outcome.store,
        &setup,
        &input.features,
        &Default::default(),
    );
    let summary = allot_sim::report::summary(&outcome.store, outcome.end.seconds());
    let pending = allot_sim::capacity::pending_groups(&outcome.store);
    let page = allot_sim::report::html(&allot_sim::report::Report {
        title: format!("{nodes} nodes x {devices_per_node} devices, {pods} pods"),
        store: &outcome.store,
        summary: &summary,
        usage: Some(&series),
        fragmentation: Some(&fragmentation),
        pending: &pending,
        scale_up: None,
        consolidation: None,
        workload: None,
        live_resource_version: None,
        setup: Some(&setup),
    });
    std::fs::write(&out, page.as_bytes()).expect("the report is written");
    println!(
        "{nodes} nodes x {devices_per_node} devices, {pods} pods: report {out} of {:.1} MB written in {:.2}s ({:.2}s CPU: fragmentation, summary, page, file)",
        page.len() as f64 / 1e6,
        started.elapsed().as_secs_f64(),
        cpu_seconds().unwrap_or(0.0) - cpu
    );
}
