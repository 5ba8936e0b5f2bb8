//! `cargo xtask fuzz`: a short, bounded run of every fuzz target (`cargo fuzz list` in
//! `fuzz/`) from its committed corpus `fuzz/corpus/<name>`, for CI. cargo-fuzz is installed
//! once into `target/tools/cargo-fuzz`. New inputs go to `target/tools/fuzz-corpus/<name>`,
//! so the committed corpus is only read.
//!
//! The targets are built without a sanitizer and with 16 codegen units ([`BUILD_FLAGS`]): the
//! fuzzed crates have no `unsafe` code, so what a run can find in them is a panic (the targets'
//! invariant checks are assertions), a hang or running out of memory, which libFuzzer reports
//! by itself. Without AddressSanitizer the build took 16 CPU-minutes instead of 25 (both with
//! 16 codegen units, side by side on a 2-core VM); 16 units instead of cargo-fuzz's one let
//! both cores work on the largest crates.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Result, cargo, root, target_dir};

/// Seconds per target unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 10;

/// How the targets are built, for `cargo fuzz build` and `cargo fuzz run` alike (a run with
/// other flags would build them again).
const BUILD_FLAGS: [&str; 4] = ["--sanitizer", "none", "--codegen-units", "16"];

/// Runs every target for the given time; fails if one finds a crash or cannot run.
pub fn run(args: &[String]) -> Result<u8> {
    let seconds = match args {
        [] => DEFAULT_SECONDS,
        [flag, value] if flag == "--seconds" => value
            .parse()
            .map_err(|_| format!("--seconds {value:?}: expected a whole number"))?,
        _ => return Err("usage: cargo xtask fuzz [--seconds N]".into()),
    };
    let fuzz = root().join("fuzz");
    if !fuzz.join("Cargo.toml").exists() {
        eprintln!("xtask: no fuzz/Cargo.toml: no fuzz targets to run");
        return Ok(0);
    }
    let tools = target_dir().join("tools");
    let bin = install_cargo_fuzz(&tools.join("cargo-fuzz"))?;
    let toolchain = Toolchain::detect();
    let fuzz_cmd = |args: &[&str]| {
        let mut command = toolchain.cargo();
        command.arg("fuzz").args(args).current_dir(root());
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin.clone()];
        paths.extend(std::env::split_paths(&path));
        if let Ok(joined) = std::env::join_paths(paths) {
            command.env("PATH", joined);
        }
        command
    };
    let listed = fuzz_cmd(&["list"])
        .output()
        .map_err(|e| format!("cannot run cargo fuzz list: {e}"))?;
    if !listed.status.success() {
        return Err(format!(
            "cargo fuzz list failed:\n{}",
            String::from_utf8_lossy(&listed.stderr)
        ));
    }
    let targets: Vec<String> = String::from_utf8_lossy(&listed.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect();
    if targets.is_empty() {
        return Err("fuzz/Cargo.toml lists no targets".into());
    }
    for name in &targets {
        check_corpus(&fuzz.join("corpus").join(name))?;
    }
    eprintln!(
        "xtask: fuzzing {} targets for {seconds} s each ({}): {}",
        targets.len(),
        toolchain.describe(),
        targets.join(", ")
    );
    let built = fuzz_cmd(&["build"])
        .args(BUILD_FLAGS)
        .status()
        .map_err(|e| format!("cannot run cargo fuzz build: {e}"))?;
    if !built.success() {
        return Err(format!("cargo fuzz build failed ({built})"));
    }
    let mut failed = Vec::new();
    for name in &targets {
        let scratch = tools.join("fuzz-corpus").join(name);
        std::fs::create_dir_all(&scratch)
            .map_err(|e| format!("creating {}: {e}", scratch.display()))?;
        let corpus = format!("fuzz/corpus/{name}");
        let time = format!("-max_total_time={seconds}");
        let scratch = scratch.to_string_lossy().into_owned();
        let status = fuzz_cmd(&["run"])
            .args(BUILD_FLAGS)
            .args([
                name.as_str(),
                &scratch,
                &corpus,
                "--",
                &time,
                "-rss_limit_mb=2048",
            ])
            .status()
            .map_err(|e| format!("cannot run cargo fuzz run {name}: {e}"))?;
        if status.success() {
            eprintln!("xtask: fuzz target {name}: no failure in {seconds} s");
        } else {
            eprintln!("xtask: fuzz target {name} FAILED ({status}); see fuzz/artifacts/{name}/");
            failed.push(name.clone());
        }
    }
    if failed.is_empty() {
        Ok(0)
    } else {
        Err(format!("fuzz targets failed: {}", failed.join(", ")))
    }
}

/// A committed corpus must exist and hold at least one file.
fn check_corpus(dir: &Path) -> Result<()> {
    let has_files = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().any(|e| e.path().is_file()))
        .unwrap_or(false);
    if has_files {
        Ok(())
    } else {
        Err(format!(
            "{} is missing or empty: every fuzz target needs a committed seed corpus",
            dir.display()
        ))
    }
}

/// cargo-fuzz in `root/bin`, installed there once.
fn install_cargo_fuzz(root_dir: &Path) -> Result<PathBuf> {
    let bin = root_dir.join("bin");
    if bin.join("cargo-fuzz").exists() {
        return Ok(bin);
    }
    eprintln!("xtask: installing cargo-fuzz into {}", root_dir.display());
    let status = cargo()
        .args(["install", "cargo-fuzz", "--locked", "--root"])
        .arg(root_dir)
        .status()
        .map_err(|e| format!("cannot run cargo install: {e}"))?;
    if !status.success() || !bin.join("cargo-fuzz").exists() {
        return Err(format!("cargo install cargo-fuzz failed ({status})"));
    }
    Ok(bin)
}

/// libFuzzer builds need nightly flags: the nightly toolchain when rustup has one, else the
/// stable one with `RUSTC_BOOTSTRAP=1` (which allows them).
enum Toolchain {
    Nightly,
    StableBootstrap,
}

impl Toolchain {
    fn detect() -> Toolchain {
        let nightly = Command::new("cargo")
            .args(["+nightly", "--version"])
            .output()
            .is_ok_and(|o| o.status.success());
        if nightly {
            Toolchain::Nightly
        } else {
            Toolchain::StableBootstrap
        }
    }

    fn cargo(&self) -> Command {
        match self {
            Toolchain::Nightly => {
                // rustup's cargo proxy picks the toolchain; the `cargo` that runs xtask may be
                // the toolchain's own binary, which does not understand `+nightly`.
                let mut command = Command::new("cargo");
                command.arg("+nightly");
                command.env_remove("RUSTC").env_remove("CARGO");
                command
            }
            Toolchain::StableBootstrap => {
                let mut command = cargo();
                command.env("RUSTC_BOOTSTRAP", "1");
                command
            }
        }
    }

    fn describe(&self) -> &'static str {
        match self {
            Toolchain::Nightly => "nightly toolchain",
            Toolchain::StableBootstrap => "stable toolchain with RUSTC_BOOTSTRAP=1",
        }
    }
}
