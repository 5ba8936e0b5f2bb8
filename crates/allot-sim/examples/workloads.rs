//! Runs files and an optional trace as `allot simulate FILES... --trace TRACE` does, and
//! reports the time: the workload benchmarks of issue 18 (inputs from
//! `bench/workloads/make-week.py`).
//!
//! `cargo run --release -p allot-sim --example workloads -- [--trace TRACE] FILE|DIR...`
//! (a directory gives its `.yaml`, `.yml` and `.json` files in name order).

use allot_sim::memory::cpu_seconds;
use std::path::PathBuf;
use std::time::Instant;

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

fn expand(path: PathBuf) -> Vec<PathBuf> {
    if !path.is_dir() {
        return vec![path];
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(&path)
        .expect("readable directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .is_some_and(|e| e == "yaml" || e == "yml" || e == "json")
        })
        .collect();
    files.sort();
    files
}

fn main() {
    allot_sim::memory::disable_transparent_huge_pages();
    let mut args = std::env::args().skip(1);
    let mut trace = None;
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        if arg == "--trace" {
            trace = args.next().map(PathBuf::from);
        } else {
            paths.extend(expand(PathBuf::from(arg)));
        }
    }
    let started = Instant::now();
    let mut loaded = allot_api::load::load(&paths, &allot_sim::input::load_options());
    if let Some(path) = &trace {
        match allot_sim::trace::document(path) {
            Ok(document) => loaded.documents.push(document),
            Err(errors) => {
                eprintln!("{errors:?}");
                std::process::exit(2);
            }
        }
    }
    let mut input = match allot_sim::input::from_loaded(loaded) {
        Ok(input) => input,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(2);
        }
    };
    let loaded = started.elapsed().as_secs_f64();
    let cpu_before = cpu_seconds();
    let started = Instant::now();
    let outcome = match allot_sim::run_moving(&mut input, &mut |_| {}) {
        Ok(outcome) => outcome,
        Err(err) => {
            eprintln!("{err}");
            std::process::exit(1);
        }
    };
    let ran = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds().zip(cpu_before).map(|(a, b)| a - b);
    let pods: Vec<&allot_api::core::v1::Pod> =
        outcome.store.list::<allot_api::core::v1::Pod>().collect();
    let phase = |p: &str| {
        pods.iter()
            .filter(|pod| pod.status.phase.as_deref() == Some(p))
            .count()
    };
    println!(
        "{} pods in the store ({} Succeeded, {} Running, {} Pending, {} Failed), {} reconciles; load {loaded:.2}s, run {ran:.2}s wall ({} CPU)",
        pods.len(),
        phase("Succeeded"),
        phase("Running"),
        phase("Pending"),
        phase("Failed"),
        outcome.reconciles,
        cpu.map_or("?".to_string(), |c| format!("{c:.2}s")),
    );
    let mut stats = outcome.stats.controllers.clone();
    stats.sort_by_key(|s| std::cmp::Reverse(s.2));
    for (name, reconciles, nanos) in stats.iter().take(8) {
        println!(
            "  {name}: {reconciles} reconciles, {:.2}s",
            *nanos as f64 / 1e9
        );
    }
}
