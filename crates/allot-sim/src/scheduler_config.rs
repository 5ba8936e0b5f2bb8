//! The `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration document of a simulation:
//! read into allot-scheduler's profiles and queue settings, its problems reported at their
//! line as every other input error.

use allot_api::kubescheduler::v1::KubeSchedulerConfiguration;
use allot_api::load::RawDocument;
use allot_scheduler::config::SchedulerConfiguration;

use crate::InputError;
use crate::input::raw_error;

/// Reads the simulation's scheduler configuration (at most one document). `None` without one:
/// kube-scheduler's default profile.
pub(crate) fn read(
    documents: &[(RawDocument, KubeSchedulerConfiguration)],
    errors: &mut Vec<InputError>,
) -> Option<SchedulerConfiguration> {
    let (raw, config) = documents.first()?;
    for (other, _) in &documents[1..] {
        errors.push(raw_error(
            other,
            "",
            format!(
                "Duplicate value: only one KubeSchedulerConfiguration document is allowed (the first is at {}:{})",
                raw.file, raw.line
            ),
        ));
    }
    let value = serde_json::to_value(config).unwrap_or_default();
    let parsed = match SchedulerConfiguration::from_value(&value, &allot_scheduler::plugins::exists)
    {
        Ok(parsed) => parsed,
        Err(problems) => {
            for problem in problems {
                let (field, message) = split(&problem);
                errors.push(raw_error(raw, field, message));
            }
            return None;
        }
    };
    // The plugins' own checks run when they are built.
    if let Err(problem) = allot_scheduler::Scheduler::try_new(allot_scheduler::SchedulerConfig {
        configuration: Some(parsed.clone()),
        ..allot_scheduler::SchedulerConfig::default()
    }) {
        let (field, message) = split(&problem);
        errors.push(raw_error(raw, field, message));
        return None;
    }
    Some(parsed)
}

/// `path: message` into its field path and message.
fn split(problem: &str) -> (&str, &str) {
    match problem.split_once(": ") {
        Some((field, message)) if !field.contains(' ') => (field, message),
        _ => ("", problem),
    }
}
