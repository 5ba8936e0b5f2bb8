//! The command-line conventions (README, "Command-line conventions"), end to end through the
//! binary: `-f FILE|DIR|-` and `-R` everywhere, `-o` formats, exit codes 0/1/2 for every
//! command, a closed stdout, `--version`, completion, NO_COLOR and simulate's progress on a
//! terminal, merge-hints' bounds, simulate's filters and table.

#[path = "support/cli.rs"]
mod cli;

use std::io::{Read, Write};
use std::process::{Command, Stdio};

use cli::{Run, allot, allot_in, workspace_root};

fn example(path: &str) -> String {
    workspace_root()
        .join("examples")
        .join(path)
        .display()
        .to_string()
}

/// Runs `allot ARGS` with `input` on standard input.
fn allot_stdin(args: &[&str], input: &str) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_allot"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run allot");
    let mut stdin = child.stdin.take().expect("stdin");
    stdin.write_all(input.as_bytes()).expect("write stdin");
    drop(stdin);
    let output = child.wait_with_output().expect("wait");
    Run {
        code: output.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
    }
}

fn read(path: &str) -> String {
    std::fs::read_to_string(example(path)).expect("example")
}

#[test]
fn stdin_works_wherever_f_does() {
    let cases: [(&[&str], &str, i32); 8] = [
        (&["validate", "-f", "-"], "allocate/two-gpus.yaml", 0),
        (&["allocate", "-f", "-"], "allocate/two-gpus.yaml", 0),
        (
            &["simulate", "-f", "-", "-o", "name", "--fail-on-pending"],
            "what-if-pod.yaml",
            1,
        ),
        (&["node", "admit", "-f", "-"], "node/gpu-node.yaml", 1),
        (&["node", "show", "-f", "-"], "node/gpu-node.yaml", 0),
        (
            &["node", "take-cpus", "-f", "-", "--count", "2"],
            "node/topology.yaml",
            0,
        ),
        (
            &["node", "merge-hints", "-f", "-"],
            "node/merge-hints.json",
            0,
        ),
        (
            &["simulate", "--what-if", "-", &example("simulate")],
            "what-if-pod.yaml",
            0,
        ),
    ];
    for (args, input, code) in cases {
        let run = allot_stdin(args, &read(input));
        assert_eq!(run.code, code, "{args:?}: {}{}", run.stdout, run.stderr);
        // validate prints errors only; its count goes to stderr.
        assert!(
            !run.stdout.is_empty() || run.stderr.contains("4 documents valid"),
            "{args:?}: {}",
            run.stderr
        );
    }
    // Standard input is read once.
    let run = allot_stdin(&["validate", "-f", "-", "-f", "-"], "");
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("only once"), "{}", run.stderr);
}

#[test]
fn directories_with_and_without_recursion() {
    let dir = tempfile::tempdir().expect("tempdir");
    let nested = dir.path().join("a/b");
    std::fs::create_dir_all(&nested).expect("mkdir");
    let (first, second) = read("allocate/two-gpus.yaml")
        .split_once("---\napiVersion: resource.k8s.io/v1\nkind: ResourceClaim")
        .map(|(a, b)| {
            (
                a.to_string(),
                format!("apiVersion: resource.k8s.io/v1\nkind: ResourceClaim{b}"),
            )
        })
        .expect("the example has a claim");
    std::fs::write(dir.path().join("a/10-node.yaml"), first).expect("write");
    std::fs::write(nested.join("20-claim.yaml"), second).expect("write");
    let top = dir.path().join("a").display().to_string();
    // Without -R the claim below is not read: nothing to allocate is an empty table.
    let flat = allot(&["allocate", "-f", &top, "-o", "json"]);
    assert_eq!(flat.code, 0, "{}", flat.stderr);
    assert!(!flat.stdout.contains("default/pair"), "{}", flat.stdout);
    let deep = allot(&["allocate", "-R", "-f", &top, "-o", "json"]);
    assert_eq!(deep.code, 0, "{}", deep.stderr);
    assert!(deep.stdout.contains("default/pair"), "{}", deep.stdout);
    let validate = allot(&["validate", "-R", "-f", &top]);
    assert_eq!(validate.code, 0, "{}", validate.stderr);
    assert!(
        validate.stderr.contains("4 documents valid"),
        "{}",
        validate.stderr
    );
    // A directory of the example works for allocate (issue 19 item 6).
    let split = allot(&["allocate", "-f", &example("allocate/split")]);
    assert_eq!(split.code, 0, "{}", split.stderr);
}

#[test]
fn exit_codes_for_bad_input_are_2_everywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.yaml");
    std::fs::write(&bad, "kind: [unclosed\n").expect("write");
    let bad = bad.display().to_string();
    let missing = dir.path().join("missing.yaml").display().to_string();
    let cases: Vec<Vec<&str>> = vec![
        vec!["validate", "-f", &bad],
        vec!["validate", "-f", &missing],
        vec!["simulate", &bad],
        vec!["simulate", "-f", &missing],
        vec!["allocate", "-f", &bad],
        vec!["allocate", "-f", &missing],
        vec!["node", "admit", "-f", &bad],
        vec!["node", "show", "-f", &missing],
        vec!["node", "take-cpus", "-f", &bad, "--count", "1"],
        vec!["node", "merge-hints", "-f", &bad],
        vec!["simulate", "--what-if", &missing],
        vec!["gen", "--pods", "many"],
        vec!["simulate", "-l", "a in b"],
        vec!["node", "discover", "--sysfs-root", &missing],
        vec!["no-such-command"],
    ];
    for args in cases {
        let run = allot(&args);
        assert_eq!(run.code, 2, "{args:?}: {}{}", run.stdout, run.stderr);
        assert!(!run.stderr.is_empty(), "{args:?}: says why");
        assert!(!run.stderr.contains("panicked"), "{args:?}: {}", run.stderr);
    }
}

#[test]
fn validate_exits_2_on_a_parse_error_and_on_an_invalid_object() {
    // Issue 15: validate exited 1 on a parse error; the README promises 2 for bad input.
    let run = allot_stdin(&["validate", "-f", "-"], "apiVersion: v1\nkind: Pod\n: :\n");
    assert_eq!(run.code, 2, "{}", run.stderr);
    let invalid = "apiVersion: v1\nkind: Namespace\nmetadata: {name: Not_Valid}\n";
    let run = allot_stdin(&["validate", "-f", "-"], invalid);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("<stdin>:3:"), "{}", run.stdout);
    assert!(
        run.stderr.contains("1 error in 1 document"),
        "{}",
        run.stderr
    );
}

#[test]
fn a_closed_stdout_never_panics() {
    // `allot node admit -o json | head -c1` panicked: every command writes through one helper.
    let admit = example("node/gpu-node.yaml");
    let topology = example("node/topology.yaml");
    let hints = example("node/merge-hints.json");
    let cluster = example("cluster");
    let pod = example("what-if-pod.yaml");
    let commands: Vec<Vec<&str>> = vec![
        vec!["node", "admit", "-f", &admit, "-o", "json"],
        vec!["node", "admit", "-f", &admit],
        vec!["node", "show", "-f", &admit, "-o", "svg"],
        vec!["node", "show", "-f", &admit],
        vec!["node", "take-cpus", "-f", &topology, "--count", "2"],
        vec!["node", "merge-hints", "-f", &hints, "-o", "json"],
        vec!["node", "discover", "-o", "json"],
        vec!["validate", "-f", &cluster, "-o", "json"],
        vec!["allocate", "-f", &admit, "-o", "yaml"],
        vec!["simulate", "-o", "json"],
        vec!["simulate"],
        vec!["simulate", "--what-if", &pod],
        vec!["gen", "--pods", "40"],
        vec!["completion", "zsh"],
        vec!["--help"],
    ];
    for args in commands {
        let (reader, writer) = std::io::pipe().expect("pipe");
        // The reader is gone before the command writes anything.
        drop(reader);
        let output = Command::new(env!("CARGO_BIN_EXE_allot"))
            .args(&args)
            .stdout(writer)
            .stderr(Stdio::piped())
            .output()
            .expect("run allot");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            !stderr.contains("panicked") && output.status.code() != Some(101),
            "{args:?}: {stderr}"
        );
        assert!(
            output.status.code().is_some(),
            "{args:?}: killed by a signal"
        );
    }
}

#[test]
fn version_names_the_commit() {
    let run = allot(&["--version"]);
    assert_eq!(run.code, 0);
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match commit {
        Some(commit) => assert_eq!(
            run.stdout.trim(),
            format!("allot 0.0.0 (commit {commit})"),
            "built from another commit? cargo reruns build.rs when HEAD moves"
        ),
        None => assert_eq!(run.stdout.trim(), "allot 0.0.0 (commit unknown)"),
    }
}

#[test]
fn completion_scripts_for_three_shells() {
    for (shell, marker) in [
        ("bash", "complete -F"),
        ("zsh", "#compdef allot"),
        ("fish", "complete -c allot"),
    ] {
        let run = allot(&["completion", shell]);
        assert_eq!(run.code, 0, "{shell}: {}", run.stderr);
        assert!(run.stdout.contains(marker), "{shell}");
        assert!(run.stdout.contains("merge-hints"), "{shell}: subcommands");
    }
}

#[test]
fn gen_writes_a_folder_with_output_dir_and_still_with_the_old_o() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, warned) in [
        (vec!["--output-dir", "new"], false),
        (vec!["-o", "old"], true),
    ] {
        let mut full = vec!["gen", "--nodes", "2", "--pods", "3"];
        full.extend(args.iter().copied());
        let run = allot_in(dir.path(), &full);
        assert_eq!(run.code, 0, "{full:?}: {}", run.stderr);
        let folder = dir.path().join(args[1]);
        assert!(folder.join("30-pods.yaml").is_file(), "{full:?}");
        assert_eq!(run.stderr.contains("deprecated"), warned, "{}", run.stderr);
    }
    let json = allot(&["gen", "--nodes", "1", "--pods", "1", "-o", "json"]);
    assert_eq!(json.code, 0, "{}", json.stderr);
    let list: serde_json::Value = serde_json::from_str(&json.stdout).expect("a JSON List");
    assert_eq!(list["kind"], "List");
    // What gen writes, simulate reads.
    let run = allot_stdin(&["simulate", "-f", "-", "-o", "name"], &json.stdout);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(run.stdout, "pod/pod-000000\n");
}

#[test]
fn merge_hints_refuses_numa_ids_it_does_not_know_without_allocating() {
    // Issue 15: NUMA id 40000000000 or 2^64-1 allocated gigabytes for the mask and aborted.
    for id in ["40000000000", "18446744073709551615"] {
        let document = format!(
            r#"{{"policy": "best-effort", "numaNodes": [0, 1],
                "providersHints": [{{"cpu": [{{"affinity": [0, {id}], "preferred": true}}]}}]}}"#
        );
        let run = allot_stdin(&["node", "merge-hints", "-f", "-"], &document);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(
            run.stderr
                .contains("providersHints[0][cpu][0].affinity[1]: Invalid value"),
            "{}",
            run.stderr
        );
        let document = format!(r#"{{"policy": "none", "numaNodes": [{id}]}}"#);
        let run = allot_stdin(&["node", "merge-hints", "-f", "-"], &document);
        assert_eq!(run.code, 2, "{}", run.stderr);
        assert!(run.stderr.contains("numaNodes[0]"), "{}", run.stderr);
    }
}

#[test]
fn explanations_write_values_as_kubernetes_and_count_in_the_right_number() {
    let run = allot(&["allocate", "-f", &example("allocate/does-not-fit.yaml")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("(value 7)"), "{}", run.stdout);
    assert!(!run.stdout.contains("Int("), "{}", run.stdout);
    let dir = tempfile::tempdir().expect("tempdir");
    // One candidate: "1 candidate", never "1 candidates".
    let one = read("allocate/does-not-fit.yaml").replace(
        "expression: device.driver == \"gpu.example.com\"",
        "expression: device.attributes[\"gpu.example.com\"].model == \"h100\"",
    );
    let path = dir.path().join("one.yaml");
    std::fs::write(&path, one).expect("write");
    let run = allot(&["allocate", "-f", &path.display().to_string()]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(run.stdout.contains("; 1 candidate ("), "{}", run.stdout);
    assert!(!run.stdout.contains("1 candidates"), "{}", run.stdout);
}

#[test]
fn simulate_filters_by_namespace_and_labels_and_decides_its_exit_code_on_them() {
    let simulate = example("simulate");
    let all = allot(&["simulate", &simulate, "-o", "name", "--fail-on-pending"]);
    assert_eq!(all.code, 1, "ml/too-big stays pending: {}", all.stderr);
    let answer = allot(&["simulate", &simulate, "-o", "name"]);
    assert_eq!(answer.code, 0, "pending is an answer without the flag");
    assert_eq!(answer.stdout, all.stdout);
    assert!(all.stdout.contains("pod/too-big\n"), "{}", all.stdout);
    let inference = allot(&[
        "simulate",
        &simulate,
        "-l",
        "app=inference",
        "-o",
        "name",
        "--fail-on-pending",
    ]);
    assert_eq!(inference.code, 0, "{}", inference.stderr);
    assert_eq!(inference.stdout, "pod/inference-0\npod/inference-1\n");
    let not = allot(&[
        "simulate",
        &simulate,
        "-l",
        "app!=inference",
        "-o",
        "name",
        "--fail-on-pending",
    ]);
    assert_eq!(not.code, 1);
    assert!(!not.stdout.contains("inference"), "{}", not.stdout);
    let other = allot(&["simulate", &simulate, "-n", "other", "-o", "json"]);
    assert_eq!(other.code, 0, "no pod there: {}", other.stderr);
    let list: serde_json::Value = serde_json::from_str(&other.stdout).expect("JSON");
    let items = list["items"].as_array().expect("items");
    assert!(
        items.iter().any(|i| i["kind"] == "Node"),
        "cluster objects stay"
    );
    assert!(!items.iter().any(|i| i["kind"] == "Pod"), "no pod of ml");
    let wide = allot(&["simulate", &simulate, "-A", "-n", "ml"]);
    assert_eq!(wide.code, 2, "-A and -n conflict");
}

#[test]
fn simulate_table_fits_120_columns_and_explains_numa_and_pools() {
    let run = allot(&["simulate"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    for line in run.stdout.lines() {
        assert!(line.chars().count() <= 120, "{line:?}");
    }
    let header = run.stdout.lines().next().expect("header");
    for column in ["SCHEDULED", "DEVICES", "CPUS", "CPU-NUMA", "DEV-NUMA"] {
        assert!(header.contains(column), "{header}");
    }
    let trainer = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ml/trainer-1 "))
        .expect("trainer-1");
    assert!(trainer.ends_with(" 1         0!"), "{trainer}");
    assert!(
        run.stdout
            .contains("DRA devices give the kubelet's Topology Manager no hints")
    );
    // batch-0 arrives at 1m (the timeline) and runs in the shared pool.
    let batch = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ml/batch-0 "))
        .expect("batch-0");
    let cells: Vec<&str> = batch.split_whitespace().collect();
    assert_eq!(
        &cells[..4],
        ["ml/batch-0", "Running", "gpu-node-1", "1m"],
        "{batch}"
    );
    assert!(batch.contains("shared pool"), "{batch}");
    assert!(run.stdout.contains("\nResourcePoolStatusRequests:\n"));
    assert!(
        run.stdout
            .contains("gpu-usage  gpu.example.com  gpu-node-2  gpu-node-2  4")
    );
    // Wide: the claims by name with drivers, and the start times; not wrapped.
    let wide = allot(&["simulate", "-o", "wide"]);
    assert!(wide.stdout.lines().next().unwrap().contains("STARTED"));
    assert!(
        wide.stdout
            .contains("gpu=inference-0-gpu-g4fqm (gpu.example.com/gpu-node-1/gpu-0)")
    );
    assert!(wide.stdout.lines().any(|l| l.chars().count() > 120));
}

#[test]
fn what_if_prints_json_and_writes_metadata_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("meta");
    let run = allot(&[
        "simulate",
        "--what-if",
        &example("what-if-pod.yaml"),
        "-o",
        "json",
        "--out",
        &out.display().to_string(),
        &example("simulate"),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let answer: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(answer["placed"], 7);
    assert_eq!(answer["perNode"]["gpu-node-1"], 4);
    assert!(
        answer["stoppedBecause"]
            .as_str()
            .unwrap()
            .contains("TopologyAffinityError")
    );
    let files = std::fs::read_dir(&out).map(|d| d.count()).unwrap_or(0);
    assert!(files > 0, "--out is honoured with --what-if");
}

#[test]
fn simulate_says_nothing_on_a_non_terminal_stderr_unless_asked() {
    let simulate = example("simulate");
    let quiet = allot(&["simulate", &simulate, "-l", "app=inference"]);
    assert_eq!(quiet.code, 0);
    assert_eq!(quiet.stderr, "");
    let asked = allot(&["simulate", &simulate, "-l", "app=inference", "--summary"]);
    let lines: Vec<&str> = asked.stderr.lines().collect();
    assert_eq!(
        &lines[..4]
            .iter()
            .map(|l| l.split(':').next().unwrap())
            .collect::<Vec<_>>(),
        &["load", "validate", "run", "write"],
        "{}",
        asked.stderr
    );
    let summary = lines.last().expect("summary");
    assert!(
        summary.starts_with("2 pods: 2 placed, 0 pending; simulated 10m"),
        "{summary}"
    );
    assert!(summary.contains("peak memory"), "{summary}");
    // --bench counts every phase, loading included, and adds the run's rate.
    let bench = allot(&["simulate", &simulate, "--bench", "-o", "json"]);
    let summary = bench.stderr.lines().last().expect("summary");
    assert!(summary.contains("(load "), "{summary}");
    assert!(summary.contains("pods/s in the run phase"), "{summary}");
}

#[test]
fn every_golden_table_fits_120_columns() {
    let golden = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let mut files = Vec::new();
    for dir in [golden.clone(), golden.join("spec")] {
        for entry in std::fs::read_dir(dir).expect("golden dir") {
            let path = entry.expect("entry").path();
            if path.to_string_lossy().ends_with(".table.txt") {
                files.push(path);
            }
        }
    }
    assert!(files.len() > 20);
    for path in files {
        let text = std::fs::read_to_string(&path).expect("golden");
        for line in text.lines() {
            assert!(line.chars().count() <= 120, "{}: {line:?}", path.display());
        }
    }
}

/// A pseudo-terminal: the binary's stdout and stderr are its slave side, read back here.
fn on_terminal(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut master: libc::c_int = -1;
    let mut slave: libc::c_int = -1;
    // SAFETY: openpty writes two file descriptors into the pointers; the others may be null.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned here.
    let (master, slave) = unsafe {
        use std::os::fd::FromRawFd;
        (
            std::fs::File::from_raw_fd(master),
            std::os::fd::OwnedFd::from_raw_fd(slave),
        )
    };
    let mut command = Command::new(env!("CARGO_BIN_EXE_allot"));
    command
        .args(args)
        .current_dir(workspace_root())
        .stdout(slave.try_clone().expect("dup"))
        .stderr(slave)
        .env_remove("NO_COLOR")
        .env("TERM", "xterm");
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command.spawn().expect("run allot");
    drop(command);
    let reader = std::thread::spawn(move || {
        let mut master = master;
        let mut bytes = Vec::new();
        let mut buffer = [0u8; 4096];
        // Linux answers EIO once every slave side is closed.
        while let Ok(n) = master.read(&mut buffer) {
            if n == 0 {
                break;
            }
            bytes.extend_from_slice(&buffer[..n]);
        }
        bytes
    });
    let code = child.wait().expect("wait").code().unwrap_or(-1);
    let bytes = reader.join().expect("reader");
    (code, String::from_utf8_lossy(&bytes).into_owned())
}

#[test]
fn node_show_colours_a_terminal_unless_no_color_is_set() {
    let args = ["node", "show", "-f", "examples/node/gpu-node.yaml"];
    let (code, coloured) = on_terminal(&args, &[]);
    assert_eq!(code, 0, "{coloured}");
    assert!(coloured.contains("\x1b["), "{coloured}");
    let (code, plain) = on_terminal(&args, &[("NO_COLOR", "1")]);
    assert_eq!(code, 0, "{plain}");
    assert!(!plain.contains("\x1b["), "{plain}");
    assert!(plain.contains("ml/trainer-0/main"), "{plain}");
    let (_, forced) = on_terminal(
        &[
            "node",
            "show",
            "-f",
            "examples/node/gpu-node.yaml",
            "--color",
            "always",
        ],
        &[("NO_COLOR", "1")],
    );
    assert!(forced.contains("\x1b["), "--color always wins");
}

#[test]
fn simulate_ends_with_a_summary_line_on_a_terminal() {
    let (code, screen) = on_terminal(&["simulate", "-l", "app=inference"], &[]);
    assert_eq!(code, 0, "{screen}");
    let last = screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .expect("output");
    assert!(last.contains("2 pods: 2 placed, 0 pending"), "{screen}");
    assert!(last.contains("(load "), "{last}");
    assert!(last.contains("peak memory"), "{last}");
}

/// The fills of `class` rects in an SVG, with their `<title>`s.
fn rects<'a>(svg: &'a roxmltree::Document<'a>, class: &str) -> Vec<roxmltree::Node<'a, 'a>> {
    svg.descendants()
        .filter(|n| n.has_tag_name("rect") && n.attribute("class") == Some(class))
        .collect()
}

fn title(node: &roxmltree::Node<'_, '_>) -> String {
    node.children()
        .find(|c| c.has_tag_name("title"))
        .and_then(|t| t.text())
        .unwrap_or_default()
        .to_string()
}

#[test]
fn node_show_svg_has_a_colour_per_pod_devices_memory_a_legend_and_the_rejected() {
    let run = allot(&[
        "node",
        "show",
        "-f",
        &example("node/gpu-node.yaml"),
        "-o",
        "svg",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let svg = roxmltree::Document::parse(&run.stdout).expect("well-formed SVG");
    let root = svg.root_element();
    let width: f64 = root.attribute("width").unwrap().parse().unwrap();
    // Distinct fills for the two trainers (once nearly the same green), on CPUs and GPUs.
    let cpus = rects(&svg, "cpu");
    let fill_of = |who: &str| -> std::collections::BTreeSet<String> {
        cpus.iter()
            .filter(|r| title(r).ends_with(who))
            .map(|r| r.attribute("fill").unwrap().to_string())
            .collect()
    };
    let (a, b) = (fill_of("ml/trainer-0/main"), fill_of("ml/trainer-1/main"));
    assert_eq!((a.len(), b.len()), (1, 1), "{a:?} {b:?}");
    assert_ne!(a, b);
    let devices = rects(&svg, "device");
    assert_eq!(devices.len(), 2, "a GPU per NUMA node");
    let gpu0 = devices.iter().find(|d| title(d).contains("gpu-0")).unwrap();
    assert_eq!(
        Some(gpu0.attribute("fill").unwrap()),
        a.iter().next().map(String::as_str)
    );
    assert!(run.stdout.contains("memory 64Gi"), "memory per NUMA node");
    // Every owner in the legend, each with its own colour.
    let legend: Vec<String> = rects(&svg, "legend")
        .iter()
        .map(|r| r.attribute("fill").unwrap().to_string())
        .collect();
    let distinct: std::collections::BTreeSet<&String> = legend.iter().collect();
    assert_eq!(distinct.len(), legend.len(), "{legend:?}");
    assert!(
        legend.len() >= 4,
        "reserved, shared, two trainers: {legend:?}"
    );
    // The pod not admitted is listed.
    let rejected: Vec<String> = svg
        .descendants()
        .filter(|n| n.attribute("class") == Some("rejected"))
        .filter_map(|n| n.text().map(str::to_string))
        .collect();
    assert!(
        rejected
            .iter()
            .any(|t| t.starts_with("ml/too-wide (TopologyAffinityError)")),
        "{rejected:?}"
    );
    // One uncore cache per socket here: drawn. The NUMA boxes use the width.
    assert_eq!(rects(&svg, "cache").len(), 2);
    let right_edge = rects(&svg, "numa")
        .iter()
        .map(|r| {
            r.attribute("x").unwrap().parse::<f64>().unwrap()
                + r.attribute("width").unwrap().parse::<f64>().unwrap()
        })
        .fold(0.0, f64::max);
    assert!(
        right_edge > 0.6 * width,
        "boxes end at {right_edge} of {width}"
    );
}

#[test]
fn node_show_svg_draws_no_cache_where_the_topology_has_none() {
    let text = read("node/gpu-node.yaml")
        .replace(", uncoreCache: 1}", "}")
        .replace(", uncoreCache: 0}", "}");
    let run = allot_stdin(&["node", "show", "-f", "-", "-o", "svg"], &text);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let svg = roxmltree::Document::parse(&run.stdout).expect("well-formed SVG");
    assert_eq!(rects(&svg, "cache").len(), 0);
    assert_eq!(rects(&svg, "cpu").len(), 16);
}
