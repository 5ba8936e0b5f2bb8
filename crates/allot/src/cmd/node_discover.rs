//! `allot node discover`: this machine's NodeTopology from sysfs (CPUs with core, socket, NUMA
//! node and uncore cache; NUMA nodes with memory, hugepages and distances).

use std::path::PathBuf;

use anyhow::Context;

/// Read the machine topology from sysfs and print it as a NodeTopology document.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The sysfs root to read.
    #[arg(long = "sysfs-root", default_value = "/sys")]
    pub sysfs_root: PathBuf,
    /// The name to give the topology (default: the host name when reading /sys).
    #[arg(long)]
    pub name: Option<String>,
    /// Output format.
    #[arg(short = 'o', long = "output", value_enum, default_value_t = Output::Yaml)]
    pub output: Output,
}

/// Output formats of `node discover`.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Output {
    /// A YAML document.
    Yaml,
    /// A JSON document.
    Json,
}

/// Runs the command: exit 0 with the document, or an error (exit 2) naming the unreadable file.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let mut topo = allot_topology::discover(&args.sysfs_root).with_context(|| {
        format!(
            "discovering the topology under {}",
            args.sysfs_root.display()
        )
    })?;
    topo.metadata.name = match args.name {
        Some(name) => name,
        None if args.sysfs_root == std::path::Path::new("/sys") => {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .map(|h| h.trim().to_string())
                .unwrap_or_default()
        }
        None => String::new(),
    };
    match args.output {
        Output::Yaml => crate::out::print(&topo.to_yaml_string()?)?,
        Output::Json => crate::out::print_json(&topo)?,
    }
    Ok(0)
}
