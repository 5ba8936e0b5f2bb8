//! The `allot` binary's one-shot commands (`simulate`, `gen`) for the end-to-end tests: run it
//! with arguments (in a given folder if need be) and get its exit code and output; the paths of
//! the scenario folders under `tests/simulate/` and of the repository's files; `simulate -o
//! json` checked for the invariants. tests/simulate.rs, simulate_dra_resources.rs and golden.rs
//! include it with `#[path = "support/cli.rs"] mod cli;`.

// Each test file uses a different part of it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// What one run of the binary did.
pub struct Run {
    /// The exit code (-1 when a signal ended it).
    pub code: i32,
    /// Standard output (invalid UTF-8 replaced, which a golden comparison still catches).
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `allot ARGS...` in the test's working directory (the crate's folder).
pub fn allot(args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_allot")).args(args))
}

/// Runs `allot ARGS...` in `dir`, so relative paths in the arguments (and in what the binary
/// prints about them) are relative to `dir`.
pub fn allot_in(dir: &Path, args: &[&str]) -> Run {
    run(Command::new(env!("CARGO_BIN_EXE_allot"))
        .current_dir(dir)
        .args(args))
}

fn run(command: &mut Command) -> Run {
    let output = command.output().expect("run allot");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

/// The repository's root folder (the workspace).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("crates/allot is two levels below the workspace")
        .to_path_buf()
}

/// A scenario under `crates/allot/tests/simulate/`, as an absolute path.
pub fn scenario(name: &str) -> String {
    format!("{}/tests/simulate/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// A file or folder of the repository (`examples/spec`, say), as an absolute path.
pub fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

/// Runs `allot simulate -o json --fail-on-pending` on the paths, checks the exit code (1
/// exactly when a pod is left pending or failed) and the invariants, and returns
/// the List's items.
pub fn simulate_json(paths: &[&str]) -> Vec<Value> {
    let mut args = vec!["simulate", "-o", "json", "--fail-on-pending"];
    args.extend_from_slice(paths);
    let run = allot(&args);
    assert!(run.code == 0 || run.code == 1, "{paths:?}: {}", run.stderr);
    let violations = allot_sim::invariants::check_list(&run.stdout).expect("the List loads");
    assert!(violations.is_empty(), "{paths:?}: {violations:?}");
    let list: Value = serde_json::from_str(&run.stdout).expect("JSON");
    // Exit 1 exactly when a pod is not running (or finished, or bound) at the end.
    let waiting = list["items"].as_array().into_iter().flatten().any(|item| {
        item["kind"] == "Pod"
            && match item["status"]["phase"].as_str() {
                Some(phase) => !matches!(phase, "Running" | "Succeeded"),
                None => item["spec"]["nodeName"].as_str().is_none_or(str::is_empty),
            }
    });
    assert_eq!(
        run.code,
        i32::from(waiting),
        "{paths:?}: exit code and pending pods"
    );
    assert_eq!(list["apiVersion"], "v1");
    assert_eq!(list["kind"], "List");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// The item of `kind` named `name` (any namespace); panics naming it when there is none.
pub fn find<'a>(items: &'a [Value], kind: &str, name: &str) -> &'a Value {
    items
        .iter()
        .find(|i| i["kind"] == kind && i["metadata"]["name"] == name)
        .unwrap_or_else(|| panic!("no {kind} {name}"))
}
