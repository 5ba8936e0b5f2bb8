//! `allot serve --scheduler-config FILE` (kube-scheduler's `--config`): one
//! `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration, decoded strictly, defaulted
//! and validated as kube-scheduler does at start; errors name the file and line.

use std::path::Path;

use allot_api::kubescheduler::v1::{API_VERSION, KubeSchedulerConfiguration};
use allot_api::load::{decode, parse_str};
use allot_scheduler::config::SchedulerConfiguration;

/// Reads and checks a scheduler configuration file. `Err` lists every problem, one a line,
/// as `FILE:LINE: field: message`.
pub fn load(path: &Path) -> Result<SchedulerConfiguration, String> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{file}: {e}"))?;
    let documents = parse_str(&file, &text).map_err(|e| e.to_string())?;
    let [raw] = documents.as_slice() else {
        return Err(format!(
            "{file}: expected exactly one KubeSchedulerConfiguration document, found {}",
            documents.len()
        ));
    };
    if raw.api_version != API_VERSION || raw.kind != "KubeSchedulerConfiguration" {
        return Err(format!(
            "{file}:{}: expected apiVersion {API_VERSION} kind KubeSchedulerConfiguration, found {} {}",
            raw.line, raw.api_version, raw.kind
        ));
    }
    let config: KubeSchedulerConfiguration = decode(raw).map_err(|e| e.to_string())?;
    let value = serde_json::to_value(&config).map_err(|e| format!("{file}: {e}"))?;
    let at = |problem: &str| {
        let field = problem.split_once(": ").map_or("", |(f, _)| f);
        format!("{file}:{}: {problem}", raw.line_of(field))
    };
    let parsed = SchedulerConfiguration::from_value(&value, &allot_scheduler::plugins::exists)
        .map_err(|problems| {
            problems
                .iter()
                .map(|p| at(p))
                .collect::<Vec<_>>()
                .join("\n")
        })?;
    allot_scheduler::Scheduler::try_new(allot_scheduler::SchedulerConfig {
        configuration: Some(parsed.clone()),
        ..allot_scheduler::SchedulerConfig::default()
    })
    .map_err(|e| at(&e))?;
    Ok(parsed)
}
