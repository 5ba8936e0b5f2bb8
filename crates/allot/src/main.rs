//! The `allot` command line: one binary, one subcommand per job.
//!
//! Each subcommand lives in its own module under `cmd/` and returns the process exit code, so
//! that "does not fit" (exit 1 with an explanation) and "bad input" (exit 2 with an error) stay
//! apart. Nothing here decides anything: the engines live in the library crates. Output goes
//! through [`out`] (a closed pipe never panics), input files through [`files`] (`-f`, `-R`,
//! `-` for standard input).

// Every write to stdout or stderr goes through `out`, which survives a closed pipe.
#![deny(clippy::print_stdout, clippy::print_stderr)]

#[macro_use]
mod out;
mod cmd;
mod files;

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

/// mimalloc: the engines allocate many small vectors per decision (the DRA search above all),
/// and it serves them several times faster than glibc's malloc.
#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

/// `allot --version`: the crate version and the git commit it was built from (build.rs).
const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("ALLOT_GIT_COMMIT"),
    ")"
);

/// Kubernetes resource management, rebuilt: DRA allocation, kubelet resource managers and a
/// control plane around them.
///
/// Exit codes: 0 success; 1 a negative answer ("does not fit", pods left pending, a rejected
/// pod, no CPUs picked), with the explanation; 2 bad input (with file, line and field).
#[derive(Parser)]
#[command(name = "allot", version = VERSION, about, long_about)]
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
    /// Read a live cluster (a kubeconfig) into one file `allot simulate` reads.
    Snapshot(cmd::snapshot::Args),
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
    /// Print a shell completion script (`source <(allot completion bash)`).
    Completion(CompletionArgs),
}

/// The shell to complete for.
#[derive(clap::Args)]
struct CompletionArgs {
    /// bash, zsh or fish.
    #[arg(value_enum)]
    shell: Shell,
}

/// Shells with a completion script.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum Shell {
    /// `source <(allot completion bash)`, or save it under /etc/bash_completion.d/.
    Bash,
    /// Save as `_allot` in a directory of `$fpath`.
    Zsh,
    /// Save as `~/.config/fish/completions/allot.fish`.
    Fish,
}

fn completion(args: &CompletionArgs) -> anyhow::Result<u8> {
    let shell = match args.shell {
        Shell::Bash => clap_complete::Shell::Bash,
        Shell::Zsh => clap_complete::Shell::Zsh,
        Shell::Fish => clap_complete::Shell::Fish,
    };
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "allot", &mut script);
    out::print(&String::from_utf8_lossy(&script))?;
    Ok(0)
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
        Command::Snapshot(args) => cmd::snapshot::run(args),
        Command::Serve(args) => {
            log_to_stderr();
            cmd::serve::run(args)
        }
        Command::Bench { command } => cmd::bench::run(command),
        Command::Node { command } => cmd::node::run(command),
        Command::Completion(args) => completion(&args),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            elog!("error: {err:#}");
            ExitCode::from(2)
        }
    }
}
