use std::path::{Path, PathBuf};

use super::*;

/// Everything a run decides, as text: every object, the metadata files, errors, the end time
/// and the number of reconciles.
fn fingerprint(outcome: &Outcome) -> String {
    let mut out = String::new();
    for (key, object) in outcome.store.iter() {
        out.push_str(&format!("{key}: {}\n", object.to_json()));
    }
    for (path, bytes) in &outcome.metadata_files {
        out.push_str(&format!(
            "{}: {}\n",
            path.display(),
            String::from_utf8_lossy(bytes)
        ));
    }
    out.push_str(&format!(
        "errors {:?} {:?}\nend {} reconciles {}\n",
        outcome.reconcile_errors, outcome.event_errors, outcome.end, outcome.reconciles
    ));
    out
}

/// A run with or without routing and compaction.
fn routed_run(input: &Input, routed: bool) -> Result<Outcome, SimError> {
    let store = initial_store(input.objects.clone())?;
    run_routed(input, store, &mut |_| {}, routed)
}

fn same_with_and_without_routing_and_compaction(name: &str, input: &Input) {
    let routed = routed_run(input, true).expect("routed run");
    let broadcast = routed_run(input, false).expect("broadcast run");
    assert!(
        routed.stats.keys_for_calls <= broadcast.stats.keys_for_calls,
        "{name}"
    );
    let (a, b) = (fingerprint(&routed), fingerprint(&broadcast));
    if a != b {
        let line = a
            .lines()
            .zip(b.lines())
            .find(|(x, y)| x != y)
            .map(|(x, y)| format!("routed:    {x}\nbroadcast: {y}"))
            .unwrap_or_else(|| "(one is a prefix of the other)".into());
        panic!("{name}: routing changed the outcome\n{line}");
    }
}

fn repo(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(path)
}

#[test]
fn routing_events_to_node_agents_changes_nothing_on_the_bundled_example() {
    let input = crate::example::input().expect("example loads");
    same_with_and_without_routing_and_compaction("bundled example", &input);
}

#[test]
fn routing_events_to_node_agents_changes_nothing_on_a_generated_cluster() {
    let input = crate::generate::load_generated(crate::generate::GenOptions {
        nodes: 50,
        devices_per_node: 8,
        pods: 1500,
    })
    .expect("generated");
    let routed = routed_run(&input, true).expect("routed run");
    let broadcast = routed_run(&input, false).expect("broadcast run");
    assert_eq!(fingerprint(&routed), fingerprint(&broadcast));
    // The routed run dropped the events every reader had seen; the other kept them all.
    assert_eq!(
        broadcast.store.events_since(0).len() as u64,
        broadcast.stats.events
    );
    // The core/v1 Events the recorder writes (four per pod) come after the scheduler last read
    // the log, so they wait for its next read; of the rest, most are gone.
    let not_events = |events: &[allot_store::Event]| {
        events
            .iter()
            .filter(|e| e.key.kind != allot_store::Kind::Event)
            .count()
    };
    let kept = not_events(routed.store.events_since(0));
    let all = not_events(broadcast.store.events_since(0));
    assert!(kept < all / 2, "{kept} of {all} events kept");
    // Each event reaches the node agents it concerns, not all fifty.
    assert!(
        routed.stats.keys_for_calls * 2 < broadcast.stats.keys_for_calls,
        "{} vs {}",
        routed.stats.keys_for_calls,
        broadcast.stats.keys_for_calls
    );
}

#[test]
fn routing_events_to_node_agents_changes_nothing_on_the_spec_examples_and_scenarios() {
    let mut inputs: Vec<PathBuf> = Vec::new();
    for dir in ["examples/spec", "crates/allot/tests/simulate"] {
        let Ok(entries) = std::fs::read_dir(repo(dir)) else {
            continue;
        };
        for entry in entries.flatten() {
            inputs.push(entry.path());
        }
    }
    inputs.sort();
    let mut checked = 0;
    for path in inputs {
        // Inputs that do not load (bad-input on purpose, what-if pods alone) are not runs.
        let Ok(input) = crate::load_paths(std::slice::from_ref(&path)) else {
            continue;
        };
        same_with_and_without_routing_and_compaction(&path.display().to_string(), &input);
        checked += 1;
    }
    assert!(checked > 20, "only {checked} inputs ran");
}
