//! Golden outputs of `allot simulate`: the binary's output on the bundled example, the example
//! folders, every spec example and two generated clusters must equal, byte for byte, the files
//! under `tests/golden/` (README there). This is the "same input, same output, byte for byte"
//! promise, checked by `cargo test`; `ALLOT_BLESS=1 cargo test -p allot --test golden` rewrites
//! the files after a deliberate change, and the diff of the golden files shows what changed.
//!
//! Every case runs the binary from the workspace root with relative paths, so what it prints
//! about its inputs (file names in errors) is the same on every machine; [`check`] refuses
//! output that names the checkout or a temporary folder.

#[path = "support/cli.rs"]
mod cli;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use cli::{allot_in, workspace_root};

/// The golden files' folder.
fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

/// `ALLOT_BLESS=1` (any value but empty or `0`): write the golden files instead of comparing.
fn blessing() -> bool {
    std::env::var_os("ALLOT_BLESS").is_some_and(|v| !v.is_empty() && v != "0")
}

/// Lines of context shown before and after the first differing line.
const CONTEXT: usize = 3;
/// Context lines longer than this are cut (the exact differing lines are printed in full).
const MAX_SHOWN: usize = 160;

/// An error when `actual` names one of `machine_paths` (absolute paths of this run, which
/// differ between machines and runs).
fn portable(case: &str, actual: &str, machine_paths: &[&Path]) -> Result<(), String> {
    for path in machine_paths {
        let path = path.display().to_string();
        if actual.contains(&path) {
            return Err(format!(
                "case {case}: the output names {path}, which differs between machines \
                 (a determinism bug in the output, or a case that should run with relative paths)"
            ));
        }
    }
    Ok(())
}

/// [`check`] against a golden file that another case writes: when blessing, only
/// [`portable`] (two tests writing one file in parallel could leave either's text).
fn check_shared(
    case: &str,
    golden: &str,
    actual: &str,
    machine_paths: &[&Path],
) -> Result<(), String> {
    if blessing() {
        return portable(case, actual, machine_paths);
    }
    check(case, golden, actual, machine_paths)
}

/// Compares `actual` with the golden file `golden` (relative to `tests/golden/`), or writes it
/// when blessing. On a mismatch the actual output is written under the cargo target's tmp dir
/// (`golden/CASE/FILE`) and the error says where, with the first differing line and its context from both.
/// `machine_paths` must not appear in the output ([`portable`]).
fn check(case: &str, golden: &str, actual: &str, machine_paths: &[&Path]) -> Result<(), String> {
    portable(case, actual, machine_paths)?;
    let golden_path = golden_dir().join(golden);
    if blessing() {
        if let Some(parent) = golden_path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("case {case}: {e}"))?;
        }
        std::fs::write(&golden_path, actual)
            .map_err(|e| format!("case {case}: writing {}: {e}", golden_path.display()))?;
        return Ok(());
    }
    let expected = match std::fs::read(&golden_path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) => {
            return Err(format!(
                "case {case}: cannot read the golden file {}: {e}\n  \
                 (a new case? run ALLOT_BLESS=1 cargo test -p allot --test golden)",
                golden_path.display()
            ));
        }
    };
    if expected == actual {
        return Ok(());
    }
    // One folder per case: two cases that share a golden file do not overwrite each other.
    let actual_path = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("golden")
        .join(case)
        .join(Path::new(golden).file_name().unwrap_or(golden.as_ref()));
    let written = actual_path
        .parent()
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(&actual_path, actual));
    let mut message = format!(
        "case {case}: the output differs from the golden file\n  golden: {}\n",
        golden_path.display()
    );
    match written {
        Ok(()) => {
            let _ = writeln!(message, "  actual: {}", actual_path.display());
            let _ = writeln!(
                message,
                "  diff -u {} {}",
                golden_path.display(),
                actual_path.display()
            );
        }
        Err(e) => {
            let _ = writeln!(message, "  (writing {} failed: {e})", actual_path.display());
        }
    }
    message.push_str(&first_difference(&expected, actual));
    message
        .push_str("  if the change is intended: ALLOT_BLESS=1 cargo test -p allot --test golden\n");
    Err(message)
}

/// The first differing line of two texts (1-based), with up to [`CONTEXT`] lines around it
/// from each, and both differing lines quoted exactly (trailing spaces, a missing final
/// newline).
fn first_difference(expected: &str, actual: &str) -> String {
    let expected_lines: Vec<&str> = expected.split_inclusive('\n').collect();
    let actual_lines: Vec<&str> = actual.split_inclusive('\n').collect();
    let index = expected_lines
        .iter()
        .zip(&actual_lines)
        .position(|(e, a)| e != a)
        .unwrap_or(expected_lines.len().min(actual_lines.len()));
    let mut out = format!(
        "  first difference at line {} (golden {} lines, actual {} lines)\n",
        index + 1,
        expected_lines.len(),
        actual_lines.len()
    );
    for (label, lines) in [("golden", &expected_lines), ("actual", &actual_lines)] {
        let _ = writeln!(out, "  --- {label}:");
        let from = index.saturating_sub(CONTEXT);
        let to = (index + CONTEXT + 1).min(lines.len());
        for (n, line) in lines.iter().enumerate().take(to).skip(from) {
            let marker = if n == index { '>' } else { ' ' };
            let line = line.strip_suffix('\n').unwrap_or(line);
            let shown: String = line.chars().take(MAX_SHOWN).collect();
            let cut = if shown.len() < line.len() {
                " [...]"
            } else {
                ""
            };
            let _ = writeln!(out, "  {marker}{:>6} | {shown}{cut}", n + 1);
        }
        if index >= lines.len() {
            let _ = writeln!(out, "  >{:>6} | <end of output>", index + 1);
        }
    }
    let quote = |lines: &[&str]| {
        lines
            .get(index)
            .map_or_else(|| "<end of output>".to_string(), |l| format!("{l:?}"))
    };
    let _ = writeln!(
        out,
        "  golden line {}: {}",
        index + 1,
        quote(&expected_lines)
    );
    let _ = writeln!(out, "  actual line {}: {}", index + 1, quote(&actual_lines));
    out
}

/// Fails the test with the message of every case that failed, if one did.
fn report(results: impl IntoIterator<Item = Result<(), String>>) {
    let failures: Vec<String> = results.into_iter().filter_map(Result::err).collect();
    assert!(
        failures.is_empty(),
        "{} golden case(s) failed:\n\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Runs `allot ARGS... --fail-on-pending` from the workspace root; a run that did not exit 0
/// (every pod runs) or 1 (a pod left pending, which the table's "Not running" part then lists)
/// with an empty stderr (an invariant broken exits 3 and says so there) is an error naming the
/// case.
fn simulate_ok(case: &str, args: &[&str]) -> Result<String, String> {
    let mut args = args.to_vec();
    args.push("--fail-on-pending");
    let args = &args[..];
    let run = allot_in(&workspace_root(), args);
    let table = !args.contains(&"-o");
    let consistent = !table || (run.code == 1) == run.stdout.contains("\nNot running:\n");
    if (run.code == 0 || run.code == 1) && consistent && run.stderr.is_empty() {
        Ok(run.stdout)
    } else {
        Err(format!(
            "case {case}: allot {} exited {} with stderr:\n{}",
            args.join(" "),
            run.code,
            run.stderr
        ))
    }
}

/// One golden case: `allot ARGS...` from the workspace root, its stdout against `golden`.
fn case(case: &str, golden: &str, args: &[&str]) -> Result<(), String> {
    let stdout = simulate_ok(case, args)?;
    check(case, golden, &stdout, &[&workspace_root()])
}

/// [`case`] against the golden file of another case ([`check_shared`]).
fn same_as(case: &str, golden: &str, args: &[&str]) -> Result<(), String> {
    let stdout = simulate_ok(case, args)?;
    check_shared(case, golden, &stdout, &[&workspace_root()])
}

#[test]
fn bundled_example_table() {
    // What the README's first command runs: `allot simulate` without files.
    report([case(
        "bundled-example-table",
        "bundled-example.table.txt",
        &["simulate"],
    )]);
}

#[test]
fn bundled_example_json_and_yaml() {
    let failures = [
        case(
            "bundled-example-json",
            "bundled-example.json",
            &["simulate", "-o", "json"],
        ),
        case(
            "bundled-example-yaml",
            "bundled-example.yaml",
            &["simulate", "-o", "yaml"],
        ),
    ];
    report(failures);
}

/// The metadata files under `dir`, as one text: each file's path relative to `dir` (with `/`)
/// on a `=== PATH` line, then its content, in sorted path order. A file without a final newline
/// is followed by a `\ No newline at end of file` line, as in a diff.
fn listing(dir: &Path) -> std::io::Result<String> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(folder) = stack.pop() {
        for entry in std::fs::read_dir(&folder)? {
            let path = entry?.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                files.push(path);
            }
        }
    }
    let mut named: Vec<(String, PathBuf)> = files
        .into_iter()
        .map(|path| {
            let relative = path.strip_prefix(dir).unwrap_or(&path);
            let name: Vec<String> = relative
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            (name.join("/"), path)
        })
        .collect();
    named.sort();
    let mut out = String::new();
    for (name, path) in named {
        let content = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
        let _ = writeln!(out, "=== {name}");
        out.push_str(&content);
        if !content.ends_with('\n') {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
    Ok(out)
}

#[test]
fn bundled_example_json_with_metadata_files() {
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().join("metadata");
    let dir_arg = dir.display().to_string();
    let args = ["simulate", "-o", "json", "--out", &dir_arg];
    let case = "bundled-example-json-out-dir";
    let machine = [workspace_root(), out.path().to_path_buf()];
    let machine: Vec<&Path> = machine.iter().map(PathBuf::as_path).collect();
    let stdout = match simulate_ok(case, &args) {
        Ok(stdout) => stdout,
        Err(e) => return report([Err(e)]),
    };
    let files = listing(&dir).map_err(|e| format!("case {case}: reading {dir_arg}: {e}"));
    report([
        // --out does not change what is printed: the same List as without it.
        check_shared(case, "bundled-example.json", &stdout, &machine),
        files.and_then(|files| check(case, "bundled-example.out-dir.txt", &files, &machine)),
    ]);
}

#[test]
fn examples_simulate_is_the_bundled_example() {
    // The binary bundles examples/simulate (include_str!), so the folder's output is the
    // bundled example's, golden file for golden file.
    let failures = [
        same_as(
            "examples-simulate-table",
            "bundled-example.table.txt",
            &["simulate", "examples/simulate"],
        ),
        same_as(
            "examples-simulate-json",
            "bundled-example.json",
            &["simulate", "-o", "json", "examples/simulate"],
        ),
    ];
    report(failures);
}

#[test]
fn examples_cluster() {
    let failures = [
        case(
            "examples-cluster-table",
            "examples-cluster.table.txt",
            &["simulate", "examples/cluster"],
        ),
        case(
            "examples-cluster-json",
            "examples-cluster.json",
            &["simulate", "-o", "json", "examples/cluster"],
        ),
    ];
    report(failures);
}

/// The public DRA demos as workloads (examples/workloads): Deployments in the shapes of
/// dra-example-driver's gpu-test1 and NVIDIA's gpu-test4 and gpu-test6, a Job as the bats tests
/// run them, a rollout and a cascading delete on the timeline.
#[test]
fn examples_workloads() {
    let failures = [
        case(
            "examples-workloads-table",
            "examples-workloads.table.txt",
            &["simulate", "examples/workloads"],
        ),
        case(
            "examples-workloads-events",
            "examples-workloads.events.txt",
            &["simulate", "-o", "events", "examples/workloads"],
        ),
        case(
            "examples-workloads-json",
            "examples-workloads.json",
            &["simulate", "-o", "json", "examples/workloads"],
        ),
    ];
    report(failures);
}

/// Storage as kube-scheduler sees it (examples/scheduling/volumes.yaml): local volumes with
/// node affinity, a WaitForFirstConsumer class without a provisioner and one with a CSI
/// provisioner and allowedTopologies, CSINode volume limits, StatefulSets' claims bound by
/// VolumeBinding, a zone-labelled volume, an unbound Immediate claim and a ReadWriteOncePod
/// conflict.
#[test]
fn examples_scheduling_volumes() {
    let failures = [
        case(
            "examples-scheduling-volumes-table",
            "examples-scheduling-volumes.table.txt",
            &["simulate", "examples/scheduling/volumes.yaml"],
        ),
        case(
            "examples-scheduling-volumes-json",
            "examples-scheduling-volumes.json",
            &["simulate", "-o", "json", "examples/scheduling/volumes.yaml"],
        ),
    ];
    report(failures);
}

/// Gang scheduling (examples/workloads/gang): the PodGroup demo's shape (a Deployment whose pods
/// share the claim of their PodGroup, bound together) and a gang that does not fit (reported as
/// one unit with the reason, none of its pods bound, its devices let go at the timeout).
#[test]
fn examples_gangs() {
    let failures = [
        case(
            "examples-gangs-table",
            "examples-gangs.table.txt",
            &["simulate", "examples/workloads/gang"],
        ),
        case(
            "examples-gangs-events",
            "examples-gangs.events.txt",
            &["simulate", "-o", "events", "examples/workloads/gang"],
        ),
        case(
            "examples-gangs-json",
            "examples-gangs.json",
            &["simulate", "-o", "json", "examples/workloads/gang"],
        ),
    ];
    report(failures);
}

/// Two scheduler profiles (examples/scheduling/two-profiles): a KubeSchedulerConfiguration
/// document, pods choosing their profile by schedulerName, one naming none, and a pod that
/// waits in the scheduling queue until batch pods end (its requeue time with backoff).
#[test]
fn examples_scheduling_two_profiles() {
    let failures = [
        case(
            "examples-scheduling-two-profiles-table",
            "examples-scheduling-two-profiles.table.txt",
            &["simulate", "examples/scheduling/two-profiles"],
        ),
        case(
            "examples-scheduling-two-profiles-events",
            "examples-scheduling-two-profiles.events.txt",
            &[
                "simulate",
                "-o",
                "events",
                "examples/scheduling/two-profiles",
            ],
        ),
    ];
    report(failures);
}

/// Preemption with DRA (examples/scheduling/preemption.yaml): a high-priority pod arriving at
/// 5m preempts two of four low-priority GPU pods, which are deleted after their 30s grace
/// period; the pod runs at 5m30s and the Deployment's replacements stay pending.
#[test]
fn examples_scheduling_preemption() {
    let failures = [
        case(
            "examples-preemption-table",
            "examples-preemption.table.txt",
            &["simulate", "examples/scheduling/preemption.yaml"],
        ),
        case(
            "examples-preemption-events",
            "examples-preemption.events.txt",
            &[
                "simulate",
                "-o",
                "events",
                "examples/scheduling/preemption.yaml",
            ],
        ),
    ];
    report(failures);
}

/// The YAML files of `examples/spec`, by file name, sorted.
fn spec_files() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace_root().join("examples/spec"))
        .expect("examples/spec")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name.ends_with(".yaml"))
        .collect();
    names.sort();
    names
}

#[test]
fn every_spec_example() {
    // Each file alone, as tests/simulate.rs runs them (every one is accepted there): the
    // table, and the JSON List because the table of a file without pods is only its header.
    let names = spec_files();
    assert!(names.len() > 20, "{names:?}");
    let mut failures = Vec::new();
    let mut expected_goldens = std::collections::BTreeSet::new();
    for name in &names {
        let stem = name.trim_end_matches(".yaml");
        let path = format!("examples/spec/{name}");
        for (format, golden) in [
            ("table", format!("spec/{stem}.table.txt")),
            ("json", format!("spec/{stem}.json")),
        ] {
            let case_name = format!("spec-{stem}-{format}");
            failures.push(case(
                &case_name,
                &golden,
                &["simulate", "-o", format, &path],
            ));
            expected_goldens.insert(golden);
        }
    }
    // A golden file whose example is gone would never be checked again.
    let spec_dir = golden_dir().join("spec");
    for entry in std::fs::read_dir(&spec_dir)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
    {
        let golden = format!("spec/{}", entry.file_name().to_string_lossy());
        if expected_goldens.contains(&golden) {
            continue;
        }
        if blessing() {
            if let Err(e) = std::fs::remove_file(entry.path()) {
                failures.push(Err(format!("removing the stale golden file {golden}: {e}")));
            }
        } else {
            failures.push(Err(format!(
                "stale golden file {}: no example in examples/spec produces it \
                 (ALLOT_BLESS=1 cargo test -p allot --test golden removes it)",
                entry.path().display()
            )));
        }
    }
    report(failures);
}

#[test]
fn spec_folder_as_a_whole_is_rejected() {
    // The spec's examples are independent snippets: two pairs of files define the same object,
    // so the folder as one cluster is bad input (exit 2, nothing simulated). The errors, with
    // their repository-relative file names and lines, are the golden output.
    let case = "spec-folder-table";
    let args = ["simulate", "examples/spec"];
    let run = allot_in(&workspace_root(), &args);
    let result = if run.code == 2 && run.stdout.is_empty() {
        check(
            case,
            "spec-folder.stderr.txt",
            &run.stderr,
            &[&workspace_root()],
        )
    } else {
        Err(format!(
            "case {case}: allot {} exited {} (expected 2, bad input) with stdout:\n{}\nstderr:\n{}",
            args.join(" "),
            run.code,
            run.stdout,
            run.stderr
        ))
    };
    report([result]);
}

/// `allot gen --nodes N --devices-per-node D --pods P` into a temporary folder, then
/// `allot simulate` on it (table: the JSON of hundreds of pods is megabytes).
fn generated(case: &str, golden: &str, nodes: &str, devices: &str, pods: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let cluster = dir.path().join("cluster");
    let cluster_arg = cluster.display().to_string();
    let gen_args = [
        "gen",
        "--nodes",
        nodes,
        "--devices-per-node",
        devices,
        "--pods",
        pods,
        "--output-dir",
        &cluster_arg,
    ];
    let run = allot_in(&workspace_root(), &gen_args);
    assert_eq!(run.code, 0, "case {case}: allot gen: {}", run.stderr);
    let args = ["simulate", &cluster_arg];
    let result = simulate_ok(case, &args)
        .and_then(|stdout| check(case, golden, &stdout, &[&workspace_root(), dir.path()]));
    report([result]);
}

#[test]
fn generated_cluster_that_fits() {
    // 240 GPUs and 3,840 CPUs for 400 pods (240 with a GPU claim): every pod runs.
    generated(
        "gen-60x4-400pods",
        "gen-60x4-400pods.table.txt",
        "60",
        "4",
        "400",
    );
}

#[test]
fn generated_cluster_short_of_cpu() {
    // 256 CPUs for 300 pods of one CPU each: 44 stay Pending (two of them with a GPU claim),
    // each with the scheduler's explanation.
    generated(
        "gen-4x2-300pods-short-cpu",
        "gen-4x2-300pods-short-cpu.table.txt",
        "4",
        "2",
        "300",
    );
}

#[test]
fn capacity_examples() {
    // Each fleet of examples/capacity: the table with the scale-up, consolidation and
    // fragmentation answers after it.
    let mut failures = Vec::new();
    for fleet in ["mig-fleet", "nic-fleet", "cpu-pinned-fleet"] {
        let cluster = format!("examples/capacity/{fleet}/cluster.yaml");
        let shape = format!("examples/capacity/{fleet}/shape.yaml");
        failures.push(case(
            &format!("capacity-{fleet}"),
            &format!("capacity-{fleet}.table.txt"),
            &[
                "simulate",
                &cluster,
                "--add-nodes",
                &shape,
                "--remove-nodes",
                "--fragmentation",
            ],
        ));
    }
    report(failures);
}
