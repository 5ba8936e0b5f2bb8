//! The `allot` command line: one binary, one subcommand per job.
//!
//! Each subcommand lives in its own module under `cmd/` and returns the process exit code, so
//! that "does not fit" (exit 1 with an explanation) and "bad input" (exit 2 with an error) stay
//! apart. Nothing here decides anything: the engines live in the library crates.

mod cmd;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// mimalloc: the engines allocate many small vectors per decision (the DRA search above all),
/// and it serves them several times faster than glibc's malloc.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

/// Kubernetes resource management, rebuilt: DRA allocation, kubelet resource managers and a
/// control plane around them.
#[derive(Parser)]
#[command(name = "allot", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Validate manifests as the Kubernetes API server would (parse, default, validate).
    Validate(cmd::validate::Args),
    /// Allocate devices for ResourceClaims on a node (the DRA structured allocator).
    Allocate(cmd::allocate::Args),
    /// Simulate a cluster: place its pods as Kubernetes would, and say why not.
    Simulate(cmd::simulate::Args),
    /// Generate a cluster for scale tests.
    Gen(cmd::generate::Args),
    /// Serve a Kubernetes-compatible API (kubectl works against it) on a durable store.
    Serve(cmd::serve::Args),
    /// Benchmarks that drive the binary as a user would (`allot bench serve`: the API server
    /// under load).
    Bench {
        #[command(subcommand)]
        command: cmd::bench::BenchCommand,
    },
    /// The kubelet's resource managers on one node.
    Node {
        #[command(subcommand)]
        command: cmd::node::NodeCommand,
    },
}

/// Sends what the libraries report through `tracing` to stderr: warnings and errors, or what
/// `RUST_LOG` selects (an invalid `RUST_LOG` keeps the default).
fn log_to_stderr() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .try_init();
}

fn main() -> ExitCode {
    // Simulations and servers build large stores: normal pages cost far less to fault in here.
    allot_sim::memory::disable_transparent_huge_pages();
    let cli = Cli::parse();
    let result: anyhow::Result<u8> = match cli.command {
        Command::Validate(args) => cmd::validate::run(args),
        Command::Allocate(args) => cmd::allocate::run(args),
        Command::Simulate(args) => cmd::simulate::run(args),
        Command::Gen(args) => cmd::generate::run(args),
        Command::Serve(args) => {
            log_to_stderr();
            cmd::serve::run(args)
        }
        Command::Bench { command } => cmd::bench::run(command),
        Command::Node { command } => cmd::node::run(command),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
