//! Scenarios for the alpha features upstream's table does not cover yet (compatibility groups,
//! derived attributes), in the conformance scenario format, from `tests/features/`.
//!
//! The `Expected` document holds `result` (`allocated`, `unschedulable` or `error`), and
//! optionally `errorContains` (a substring of the error), `devices` (per claim, the results in
//! order as `request=driver/pool/device`) and `explanationContains` (substrings of the printed
//! explanation, for unschedulable results).

use std::path::Path;

use allot_dra::{Outcome, Scenario, allocate};
use serde_json::Value;

const FEATURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/features");

fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|err| format!("read: {err}"))?;
    let scenario = Scenario::parse(&text).map_err(|err| format!("parse: {err}"))?;
    let expected = scenario.expected.clone().ok_or("no Expected document")?;
    let want = expected["result"].as_str().unwrap_or_default();
    let features = scenario.features().map_err(|err| err.to_string())?;
    let node = scenario.node(None).map_err(|err| err.to_string())?;
    let claims = scenario
        .claims_to_allocate()
        .map_err(|err| err.to_string())?;
    let allocated = scenario.allocated_claims(&claims);
    let input = scenario.input(node, &claims, &allocated);
    // The prunings must not change the answer here either.
    let summary = |outcome: &Result<Outcome, allot_dra::Error>| match outcome {
        Ok(Outcome::Allocated(results)) => format!("{results:?}"),
        Ok(Outcome::Unschedulable(_)) => "unschedulable".to_string(),
        Ok(Outcome::GaveUp(gave_up)) => gave_up.to_string(),
        Err(err) => err.to_string(),
    };
    let outcome = allocate(&input, &features);
    let plain = allot_dra::allocate_without_pruning(&input, &features);
    if summary(&outcome) != summary(&plain) {
        return Err(format!(
            "pruned and plain search differ: {} vs {}",
            summary(&outcome),
            summary(&plain)
        ));
    }
    match (outcome, want) {
        (Ok(Outcome::Allocated(results)), "allocated") => {
            let Some(devices) = expected["devices"].as_object() else {
                return Ok(());
            };
            for (claim, result) in claims.iter().zip(&results) {
                let name = allot_dra::display_claim(claim);
                let got: Vec<String> = result
                    .devices
                    .results
                    .iter()
                    .map(|r| format!("{}={}/{}/{}", r.request, r.driver, r.pool, r.device))
                    .collect();
                let want: Vec<String> = devices
                    .get(&name)
                    .and_then(Value::as_array)
                    .map(|items| {
                        items
                            .iter()
                            .filter_map(|v| v.as_str().map(str::to_string))
                            .collect()
                    })
                    .unwrap_or_default();
                if got != want {
                    return Err(format!("claim {name}: want {want:?}, got {got:?}"));
                }
            }
            Ok(())
        }
        (Ok(Outcome::Unschedulable(explanation)), "unschedulable") => {
            let printed = explanation.to_string();
            for needle in expected["explanationContains"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                if !printed.contains(needle) {
                    return Err(format!("explanation lacks {needle:?}:\n{printed}"));
                }
            }
            Ok(())
        }
        (Err(err), "error") => {
            let message = err.to_string();
            let needle = expected["errorContains"].as_str().unwrap_or_default();
            if message.contains(needle) {
                Ok(())
            } else {
                Err(format!("error {message:?} does not contain {needle:?}"))
            }
        }
        (Ok(Outcome::Allocated(results)), _) => Err(format!(
            "expected {want}, got allocated: {:?}",
            results
                .iter()
                .map(|r| r
                    .devices
                    .results
                    .iter()
                    .map(|r| format!("{}={}", r.request, r.device))
                    .collect::<Vec<_>>())
                .collect::<Vec<_>>()
        )),
        (Ok(Outcome::Unschedulable(explanation)), _) => Err(format!(
            "expected {want}, got unschedulable:\n{explanation}"
        )),
        (Ok(Outcome::GaveUp(gave_up)), _) => Err(format!("expected {want}, got {gave_up}")),
        (Err(err), _) => Err(format!("expected {want}, got error {err}")),
    }
}

#[test]
fn feature_scenarios() {
    let mut paths: Vec<_> = std::fs::read_dir(FEATURES)
        .expect("features directory")
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml"))
        .collect();
    paths.sort();
    let mut failures = Vec::new();
    for path in &paths {
        if let Err(message) = check(path) {
            failures.push(format!(
                "{}: {message}",
                path.file_name()
                    .and_then(|n| n.to_str())
                    .unwrap_or_default()
            ));
        }
    }
    for failure in &failures {
        eprintln!("FAIL {failure}");
    }
    eprintln!(
        "features: {}/{} pass",
        paths.len() - failures.len(),
        paths.len()
    );
    assert!(
        paths.len() >= 10,
        "expected the feature scenarios, found {}",
        paths.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {} scenarios failed",
        failures.len(),
        paths.len()
    );
}
