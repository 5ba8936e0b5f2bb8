//! Every vendored kubelet scenario (static CPU policy and Memory Manager tables) reads as a
//! `node admit` scenario under strict decoding, and runs through full node admission without an
//! input error.
//!
//! Many of upstream's policy tests hand the policy a state the kubelet would refuse at start-up
//! (reserved CPUs missing from the shared pool, machine states that do not match the machine),
//! because those tests never call `Start`; full admission refuses them with the kubelet's
//! start-up error, so refusals are allowed here. Their decisions are checked at policy level by
//! the conformance runners of allot-cpumanager and allot-memorymanager.

use std::path::PathBuf;

use allot_kubelet::{KubeletError, Scenario, run};
use allot_kubelet_config::ValidateOptions;

const ROOT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../tests/conformance/kubelet"
);

#[test]
fn every_scenario_reads_and_runs() {
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in ["static_policy", "memory_static_policy"] {
        for e in std::fs::read_dir(format!("{ROOT}/{dir}"))
            .expect("dir")
            .flatten()
        {
            if e.path().extension().is_some_and(|x| x == "yaml") {
                files.push(e.path());
            }
        }
    }
    files.sort();
    let relax = ValidateOptions {
        allow_zero_cpu_reservation: true,
    };
    let mut failures = Vec::new();
    let (mut admitted, mut refused_at_start) = (0usize, 0usize);
    for f in &files {
        let name = f
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_default();
        let text = std::fs::read_to_string(f).expect("read");
        let scenario = match Scenario::parse(&name, &text) {
            Ok(s) => s,
            Err(e) => {
                failures.push(format!("{name}: does not read: {e}"));
                continue;
            }
        };
        match run(&scenario, None, relax) {
            Ok((_, report)) => admitted += report.pods.iter().filter(|p| p.admitted).count(),
            Err(KubeletError::Start {
                message, action, ..
            }) => {
                refused_at_start += 1;
                if !action.contains("please drain this node") && !action.contains("fix") {
                    failures.push(format!("{name}: refusal without advice: {message}"));
                }
            }
            Err(e) => failures.push(format!("{name}: {e}")),
        }
    }
    println!(
        "{} scenarios: {admitted} pods admitted, {refused_at_start} refused at start-up",
        files.len()
    );
    assert_eq!(files.len(), 113);
    assert!(admitted >= 20, "only {admitted} pods admitted");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
