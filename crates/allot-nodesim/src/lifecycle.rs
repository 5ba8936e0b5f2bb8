//! Containers that end: a pod annotated with [`RUN_DURATION_ANNOTATION`] runs its containers
//! for that long after they start, then they exit with [`EXIT_CODE_ANNOTATION`] (default 0).
//! What follows is the kubelet's restart policy: with `Never` the pod ends `Succeeded` (exit 0)
//! or `Failed`; with `OnFailure` a failed container restarts (its `restartCount` grows) and a
//! successful one ends the pod; with `Always` (the default) the container restarts either way
//! and the pod keeps running. A pod that ends frees what it held on the node (the agent forgets
//! it), and the ResourceClaim controller releases its claims.

use allot_api::core::v1::{Pod, PodCondition};
use allot_runtime::SimTime;
use allot_store::{ObjectKey, Store};

/// How long a pod's containers run, as a Go duration (`90s`, `1h30m`, `500ms`).
pub const RUN_DURATION_ANNOTATION: &str = "allot.dev/run-duration";
/// The exit code the containers end with (default `0`: success).
pub const EXIT_CODE_ANNOTATION: &str = "allot.dev/exit-code";

/// Parses a Go duration (`300ms`, `1.5s`, `2m30s`, `1h`; units `ms`, `s`, `m`, `h`) into
/// milliseconds; `0` alone is zero.
pub fn parse_duration_millis(text: &str) -> Option<u64> {
    let text = text.trim();
    if text == "0" {
        return Some(0);
    }
    if text.is_empty() {
        return None;
    }
    let bytes = text.as_bytes();
    let mut total: f64 = 0.0;
    let mut index = 0;
    while index < bytes.len() {
        let start = index;
        while index < bytes.len() && (bytes[index].is_ascii_digit() || bytes[index] == b'.') {
            index += 1;
        }
        let number: f64 = text.get(start..index)?.parse().ok()?;
        let unit_start = index;
        while index < bytes.len() && bytes[index].is_ascii_alphabetic() {
            index += 1;
        }
        let scale = match text.get(unit_start..index)? {
            "ms" => 1.0,
            "s" => 1000.0,
            "m" => 60_000.0,
            "h" => 3_600_000.0,
            _ => return None,
        };
        total += number * scale;
    }
    if !total.is_finite() || !(0.0..=1e15).contains(&total) {
        return None;
    }
    Some(total.round() as u64)
}

/// How long the pod's containers run, when it says.
pub fn run_duration(pod: &Pod) -> Option<u64> {
    pod.metadata
        .annotations
        .get(RUN_DURATION_ANNOTATION)
        .and_then(|d| parse_duration_millis(d))
}

/// The exit code the pod's containers end with.
pub fn exit_code(pod: &Pod) -> i32 {
    pod.metadata
        .annotations
        .get(EXIT_CODE_ANNOTATION)
        .and_then(|c| c.trim().parse().ok())
        .unwrap_or(0)
}

/// What happens when the containers exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// The pod ends in this phase.
    Finished(&'static str),
    /// The containers restart; the pod runs on.
    Restart,
}

/// The kubelet's restart policy applied to an exit code.
pub fn ending(pod: &Pod, code: i32) -> Ending {
    match pod.spec.restart_policy.as_deref() {
        Some("Never") => Ending::Finished(if code == 0 { "Succeeded" } else { "Failed" }),
        Some("OnFailure") if code == 0 => Ending::Finished("Succeeded"),
        _ => Ending::Restart,
    }
}

fn terminated(code: i32, started: &str, finished: &str) -> serde_json::Value {
    serde_json::json!({"terminated": {
        "exitCode": code,
        "reason": if code == 0 { "Completed" } else { "Error" },
        "startedAt": started,
        "finishedAt": finished,
    }})
}

/// Writes the end of the pod's run at `now`: the finished phase with terminated containers, or
/// a restart (restart counts up, the last state kept). Returns the ending.
pub fn finish(
    store: &mut Store,
    key: &ObjectKey,
    pod: &Pod,
    now: SimTime,
) -> Result<Ending, String> {
    let code = exit_code(pod);
    let end = ending(pod, code);
    let stamp = now.rfc3339();
    store
        .modify::<Pod, _>(&key.namespace, &key.name, |p| {
            let statuses = p
                .status
                .container_statuses
                .as_mut()
                .and_then(|s| s.as_array_mut());
            for status in statuses.into_iter().flatten() {
                let started = status
                    .pointer("/state/running/startedAt")
                    .and_then(|s| s.as_str())
                    .unwrap_or(&stamp)
                    .to_string();
                let state = terminated(code, &started, &stamp);
                match end {
                    Ending::Finished(_) => {
                        status["state"] = state;
                        status["ready"] = false.into();
                        status["started"] = false.into();
                    }
                    Ending::Restart => {
                        let restarts = status["restartCount"].as_i64().unwrap_or(0) + 1;
                        status["lastState"] = state;
                        status["restartCount"] = restarts.into();
                        status["state"] = serde_json::json!({"running": {"startedAt": stamp}});
                    }
                }
            }
            if let Ending::Finished(phase) = end {
                p.status.phase = Some(phase.into());
                for c in &mut p.status.conditions {
                    let reason = match c.type_.as_str() {
                        "Ready" | "ContainersReady" => Some("PodCompleted"),
                        "PodReadyToStartContainers" => None,
                        _ => continue,
                    };
                    if c.status != "False" {
                        *c = PodCondition {
                            type_: c.type_.clone(),
                            status: "False".into(),
                            last_transition_time: Some(stamp.clone()),
                            reason: reason.map(str::to_string),
                            ..PodCondition::default()
                        };
                    }
                }
            }
        })
        .map_err(|e| e.to_string())?;
    Ok(end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_policies_decide_what_an_exit_means() {
        let mut pod = Pod::default();
        for (policy, code, want) in [
            (Some("Never"), 0, Ending::Finished("Succeeded")),
            (Some("Never"), 2, Ending::Finished("Failed")),
            (Some("OnFailure"), 0, Ending::Finished("Succeeded")),
            (Some("OnFailure"), 1, Ending::Restart),
            (Some("Always"), 0, Ending::Restart),
            (None, 0, Ending::Restart),
        ] {
            pod.spec.restart_policy = policy.map(str::to_string);
            assert_eq!(ending(&pod, code), want, "{policy:?} {code}");
        }
        assert_eq!(parse_duration_millis("1h30m"), Some(5_400_000));
        assert_eq!(parse_duration_millis("500ms"), Some(500));
        assert_eq!(parse_duration_millis("10"), None);
    }
}
