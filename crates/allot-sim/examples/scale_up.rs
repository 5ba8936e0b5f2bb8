//! The scale-up search of issue 20 at size: a generated cluster of NODES nodes x DEVICES GPUs
//! whose GPUs are all taken, PENDING more one-GPU pods, and a NodeShape of DEVICES GPUs;
//! prints the answer and the time, wall and CPU (user + system, which a shared machine does not
//! inflate), of loading and of the search (the `--add-nodes` search of `allot simulate`).
//!
//! `cargo run --release -p allot-sim --example scale_up -- 1000 8 5000`

use std::time::Instant;

use allot_sim::generate::{GenOptions, node_shape_text, scale_up_texts};
use allot_sim::memory::cpu_seconds;
use allot_sim::shape::NodeShape;

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().expect("a number"))
        .collect();
    let nodes = args.first().copied().unwrap_or(1000);
    let devices = args.get(1).copied().unwrap_or(8);
    let pending = args.get(2).copied().unwrap_or(5000);
    allot_sim::memory::disable_transparent_huge_pages();
    let started = Instant::now();
    let cpu_start = cpu_seconds().unwrap_or(0.0);
    let options = GenOptions {
        nodes,
        devices_per_node: devices,
        pods: nodes * devices,
    };
    let texts = scale_up_texts(options, pending);
    let borrowed: Vec<(&str, &str)> = texts
        .iter()
        .map(|(name, text)| (name.as_str(), text.as_str()))
        .collect();
    let input = allot_sim::load_texts(&borrowed).expect("valid cluster");
    let shape = NodeShape::parse("gpu-node.yaml", &node_shape_text("gpu-node", devices))
        .expect("valid shape");
    let loaded = started.elapsed().as_secs_f64();
    let loaded_cpu = cpu_seconds().unwrap_or(0.0) - cpu_start;
    let started = Instant::now();
    let search_start = cpu_seconds().unwrap_or(0.0);
    let answer =
        allot_sim::capacity::scale_up(&input, &[shape], &[], &mut |_| {}).expect("search runs");
    let searched = started.elapsed().as_secs_f64();
    let searched_cpu = cpu_seconds().unwrap_or(0.0) - search_start;
    let probes: Vec<String> = answer
        .probes
        .iter()
        .map(|p| format!("{:?}: {} unfit", p.counts, p.unfit))
        .collect();
    println!(
        "{nodes} nodes x {devices} GPUs, {} pods, {pending} pending: found {} ({:?} nodes, estimate {:?}); load {loaded:.2}s ({loaded_cpu:.2}s CPU), search {searched:.2}s ({searched_cpu:.2}s CPU); probes {}",
        nodes * devices + pending,
        answer.found,
        answer.counts,
        answer.estimates,
        probes.join(", ")
    );
}
