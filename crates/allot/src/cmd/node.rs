//! `allot node ...`: the kubelet's resource managers as commands, one module per subcommand.

use clap::Subcommand;

use super::{merge_hints, node_admit, node_discover, node_show, take_cpus};

/// Node-level commands (the kubelet's CPU, Memory, Topology and Device managers).
#[derive(Subcommand, Debug)]
pub enum NodeCommand {
    /// Print this machine's NodeTopology, read from Linux sysfs.
    Discover(node_discover::Args),
    /// The static CPU policy's pick for one container on a free set (a what-if tool).
    TakeCpus(take_cpus::Args),
    /// Admit a scenario's pods as the kubelet's resource managers would.
    Admit(node_admit::Args),
    /// After admission, a picture of the machine with the owner of every CPU.
    Show(node_show::Args),
    /// The Topology Manager's decision for given provider hints (why TopologyAffinityError?).
    MergeHints(merge_hints::Args),
}

/// Runs a node subcommand and returns the exit code.
pub fn run(command: NodeCommand) -> anyhow::Result<u8> {
    match command {
        NodeCommand::Discover(args) => node_discover::run(args),
        NodeCommand::TakeCpus(args) => take_cpus::run(args),
        NodeCommand::Admit(args) => node_admit::run(args),
        NodeCommand::Show(args) => node_show::run(args),
        NodeCommand::MergeHints(args) => merge_hints::run(args),
    }
}
