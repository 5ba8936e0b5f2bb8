//! `allot node take-cpus`: the static CPU policy's pick for one container on a free set, the
//! upstream `takeByTopologyNUMAPacked` / `takeByTopologyNUMADistributed` answer.
//!
//! Exit 0 with the CPUs; exit 1 when the request cannot be met (with upstream's message); exit 2
//! on bad input (unreadable topology, bad CPU list).

use std::path::PathBuf;

use allot_cpumanager::{
    CpuSortingStrategy, take_by_topology_numa_distributed, take_by_topology_numa_packed,
};
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use anyhow::Context;
use serde::Serialize;

/// Pick CPUs for one container as the static CPU policy would.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The NodeTopology (YAML or JSON): a file, a directory holding it, or `-` for standard
    /// input.
    #[arg(
        short = 'f',
        long = "filename",
        visible_alias = "topology",
        value_name = "FILE|DIR|-"
    )]
    pub topology: PathBuf,
    /// The free CPUs to pick from, in Linux list format (default: every CPU of the topology).
    #[arg(long)]
    pub available: Option<String>,
    /// How many CPUs to pick.
    #[arg(long)]
    pub count: usize,
    /// packed (the default policy) or distributed (option distribute-cpus-across-numa).
    #[arg(long, value_enum, default_value_t = Algorithm::Packed)]
    pub algorithm: Algorithm,
    /// CPUs handed out together by the distributed algorithm (CPUs per core with
    /// full-pcpus-only, else 1).
    #[arg(long = "group-size", default_value_t = 1)]
    pub group_size: usize,
    /// CPU order inside a socket: packed, or spread (option distribute-cpus-across-cores).
    #[arg(long, value_enum, default_value_t = Sort::Packed)]
    pub sort: Sort,
    /// Prefer whole uncore caches (option prefer-align-cpus-by-uncorecache; packed only).
    #[arg(long = "uncore-cache")]
    pub uncore_cache: bool,
    /// Prefer NUMA combinations within one socket (option align-by-socket; distributed only,
    /// since without a topology hint that is the only place upstream uses it).
    #[arg(long = "align-by-socket")]
    pub align_by_socket: bool,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Table)]
    pub output: Output,
}

/// The CPU-pick algorithm.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algorithm {
    /// takeByTopologyNUMAPacked.
    Packed,
    /// takeByTopologyNUMADistributed.
    Distributed,
}

/// The CPU sorting strategy.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Sort {
    /// Fill cores first.
    Packed,
    /// Spread over cores first.
    Spread,
}

/// Output formats of `take-cpus`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// The CPUs with their core, socket, NUMA node and uncore cache.
    Table,
    /// `{"cpus": "<list>", "error": null | "<message>"}`.
    Json,
    /// The same as YAML.
    Yaml,
}

#[derive(Serialize)]
struct JsonOut {
    cpus: String,
    error: Option<String>,
}

/// Runs the command and returns the exit code.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let files = crate::files::Files::new(vec![args.topology.clone()], false);
    let (name, text) = files.text("NodeTopology")?;
    let node = NodeTopology::from_yaml_str(&text).with_context(|| format!("in {name}"))?;
    let topo = CpuTopology::new(&node)?;
    let available = match &args.available {
        Some(list) => CpuSet::parse(list).context("--available")?,
        None => topo.cpus().clone(),
    };
    let sort = match args.sort {
        Sort::Packed => CpuSortingStrategy::Packed,
        Sort::Spread => CpuSortingStrategy::Spread,
    };
    let result = match args.algorithm {
        Algorithm::Packed => {
            take_by_topology_numa_packed(&topo, &available, args.count, sort, args.uncore_cache)
        }
        Algorithm::Distributed => take_by_topology_numa_distributed(
            &topo,
            &available,
            args.count,
            args.group_size,
            sort,
            args.align_by_socket,
        ),
    };
    let code = u8::from(result.is_err());
    let document = || match &result {
        Ok(cpus) => JsonOut {
            cpus: cpus.to_string(),
            error: None,
        },
        Err(e) => JsonOut {
            cpus: String::new(),
            error: Some(e.to_string()),
        },
    };
    match args.output {
        Output::Json => crate::out::print(&format!("{}\n", serde_json::to_string(&document())?))?,
        Output::Yaml => crate::out::print_yaml(&document())?,
        Output::Table => crate::out::print(&table(&topo, &result))?,
    }
    Ok(code)
}

fn table(topo: &CpuTopology, result: &Result<CpuSet, allot_cpumanager::TakeError>) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    match result {
        Ok(cpus) => {
            let _ = writeln!(
                out,
                "picked {}: {cpus}",
                crate::out::count(cpus.len(), "CPU", "CPUs")
            );
            let _ = writeln!(
                out,
                "{:>5} {:>5} {:>7} {:>5} {:>7}",
                "CPU", "CORE", "SOCKET", "NUMA", "UNCORE"
            );
            for cpu in cpus {
                if let Some(info) = topo.cpu_info(cpu) {
                    let _ = writeln!(
                        out,
                        "{:>5} {:>5} {:>7} {:>5} {:>7}",
                        cpu, info.core, info.socket, info.numa, info.uncore_cache
                    );
                }
            }
        }
        Err(e) => {
            let _ = writeln!(out, "no CPUs picked: {e}");
        }
    }
    out
}
