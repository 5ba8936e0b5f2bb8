//! The README's walkthrough runs: every `allot ...` line of its `## Walkthrough` section, run
//! from the repository root, exits with the code written after it (`# exit N`), and every path
//! it names is in the repository. examples/README.md names only files of the repository.

#[path = "support/cli.rs"]
mod cli;

use cli::{allot_in, workspace_root};

/// The walkthrough's commands: `(arguments, expected exit code)`.
fn walkthrough() -> Vec<(Vec<String>, i32)> {
    let readme = std::fs::read_to_string(workspace_root().join("README.md")).expect("README.md");
    let section = readme
        .split("\n## Walkthrough\n")
        .nth(1)
        .expect("README.md has a ## Walkthrough section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut commands = Vec::new();
    for line in section.lines() {
        let Some(rest) = line.strip_prefix("allot ") else {
            continue;
        };
        let (command, comment) = rest
            .split_once('#')
            .unwrap_or_else(|| panic!("no `# exit N` after {line:?}"));
        let code: i32 = comment
            .trim()
            .strip_prefix("exit ")
            .and_then(|c| c.split(|ch: char| !ch.is_ascii_digit()).next())
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("no `# exit N` after {line:?}"));
        let args: Vec<String> = command.split_whitespace().map(str::to_string).collect();
        commands.push((args, code));
    }
    commands
}

#[test]
fn every_walkthrough_command_exits_as_written() {
    let commands = walkthrough();
    assert!(commands.len() >= 15, "{commands:?}");
    let mut failures = Vec::new();
    for (args, code) in &commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = allot_in(&workspace_root(), &args);
        if run.code != *code {
            failures.push(format!(
                "allot {}: exit {} (README says {code})\nstdout:\n{}\nstderr:\n{}",
                args.join(" "),
                run.code,
                run.stdout,
                run.stderr
            ));
        } else if run.stdout.is_empty() && run.stderr.is_empty() {
            failures.push(format!("allot {}: printed nothing", args.join(" ")));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_walkthrough_covers_every_command_with_an_example() {
    let commands = walkthrough();
    let covered: Vec<String> = commands
        .iter()
        .map(|(args, _)| match args[0].as_str() {
            "node" => format!("node {}", args[1]),
            other => other.to_string(),
        })
        .collect();
    for command in [
        "validate",
        "simulate",
        "allocate",
        "node admit",
        "node show",
        "node take-cpus",
        "node merge-hints",
        "gen",
        "completion",
    ] {
        assert!(covered.iter().any(|c| c == command), "{command}");
    }
    assert!(
        commands
            .iter()
            .any(|(args, _)| args.iter().any(|a| a == "--what-if")),
        "--what-if"
    );
    // Every path a command names exists.
    for (args, _) in &commands {
        for arg in args.iter().filter(|a| a.starts_with("examples/")) {
            assert!(workspace_root().join(arg).exists(), "{arg}");
        }
    }
}

#[test]
fn examples_readme_points_only_inside_the_repository() {
    let root = workspace_root();
    let text =
        std::fs::read_to_string(root.join("examples/README.md")).expect("examples/README.md");
    assert!(
        !text.contains("../"),
        "examples/README.md points outside examples/"
    );
    for word in text.split(|c: char| c == '`' || c.is_whitespace() || c == '(' || c == ')') {
        let word = word.trim_end_matches([',', '.', ':']);
        if let Some(path) = word.strip_prefix("examples/")
            && !path.contains('*')
            && !path.contains("NAME")
        {
            assert!(root.join("examples").join(path).exists(), "{word}");
        } else if word.starts_with("crates/") || word.starts_with("tests/") {
            assert!(root.join(word).exists(), "{word}");
        }
    }
}
