//! `kubescheduler.config.k8s.io/v1` KubeSchedulerConfiguration read into profiles: defaulting,
//! the merge of the configured plugin sets into the default ones, the expansion of `multiPoint`
//! into the extension points, plugin weights and arguments, and the validation, with
//! kube-scheduler's own messages (`field.path: Invalid value: ...: reason`).
//!
//! As upstream (`pkg/scheduler/apis/config/v1` defaults and `mergePlugins`, the framework's
//! `expandMultiPointPlugins`, `pkg/scheduler/apis/config/validation`):
//! - no profile gives one; a single profile without `schedulerName` is `default-scheduler`;
//! - per point, configured `disabled` names (or `*`) remove default plugins, configured
//!   `enabled` plugins replace a default of the same name in place or are appended;
//! - `multiPoint` plugins run at every point they implement unless disabled there; a plugin
//!   also enabled at a point by name takes that place (overrides first, then the `multiPoint`
//!   ones, then the other named ones);
//! - a Score plugin's weight is its weight under `score` if named there, else under
//!   `multiPoint`; 0 means 1;
//! - `percentageOfNodesToScore` of a profile wins over the global one.
//!
//! Upstream in-tree plugins allot does not implement yet (the volume plugins and
//! DefaultPreemption until their branches land) are left out of the profile; naming one
//! explicitly gives a warning, and their `pluginConfig` arguments are still validated and kept
//! as data ([`SchedulerConfiguration::plugin_args`]).

use std::collections::BTreeMap;

use serde::Deserialize;
use serde_json::{Value, json};

use crate::DEFAULT_SCHEDULER_NAME;
use crate::framework::{PluginConfig, PointEntry, Profile};

/// The configuration's API version.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// Upstream in-tree plugins that may not be in allot's registry yet.
const UPSTREAM_ONLY: [&str; 5] = [
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "DefaultPreemption",
];

/// Plugins removed from the v1 configuration (upstream `invalidPluginsByVersion`).
const INVALID_IN_V1: [&str; 4] = [
    "AzureDiskLimits",
    "CinderLimits",
    "EBSLimits",
    "GCEPDLimits",
];

/// The extension points of a `plugins` section, with their field names, in framework order.
const POINTS: [(&str, &str); 12] = [
    ("preEnqueue", "PreEnqueue"),
    ("queueSort", "QueueSort"),
    ("preFilter", "PreFilter"),
    ("filter", "Filter"),
    ("postFilter", "PostFilter"),
    ("preScore", "PreScore"),
    ("score", "Score"),
    ("reserve", "Reserve"),
    ("permit", "Permit"),
    ("preBind", "PreBind"),
    ("bind", "Bind"),
    ("postBind", "PostBind"),
];

/// The scheduler's configuration, read and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct SchedulerConfiguration {
    /// The profiles, in the file's order (pods pick one by `spec.schedulerName`).
    pub profiles: Vec<Profile>,
    /// Per profile, every plugin's defaulted arguments from `pluginConfig` (by plugin name),
    /// also for plugins allot leaves out.
    pub plugin_args: Vec<BTreeMap<String, Value>>,
    /// `podInitialBackoffSeconds` (default 1).
    pub pod_initial_backoff_seconds: u64,
    /// `podMaxBackoffSeconds` (default 10).
    pub pod_max_backoff_seconds: u64,
    /// Things accepted but not acted on (an upstream plugin allot lacks, named explicitly).
    pub warnings: Vec<String>,
}

impl Default for SchedulerConfiguration {
    fn default() -> Self {
        SchedulerConfiguration::from_value(&json!({}), &|_| true)
            .expect("the default configuration is valid")
    }
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawConfig {
    api_version: Option<String>,
    #[serde(default)]
    profiles: Vec<RawProfile>,
    percentage_of_nodes_to_score: Option<i64>,
    pod_initial_backoff_seconds: Option<i64>,
    pod_max_backoff_seconds: Option<i64>,
    parallelism: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawProfile {
    scheduler_name: Option<String>,
    percentage_of_nodes_to_score: Option<i64>,
    plugins: Option<BTreeMap<String, RawSet>>,
    #[serde(default)]
    plugin_config: Vec<RawPluginConfig>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawSet {
    #[serde(default)]
    enabled: Vec<RawPlugin>,
    #[serde(default)]
    disabled: Vec<RawPlugin>,
}

#[derive(Debug, Default, Clone, PartialEq, Deserialize, serde::Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPlugin {
    name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    weight: Option<i32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct RawPluginConfig {
    name: String,
    args: Option<Value>,
}

/// kube-scheduler 1.37's default `multiPoint` plugins with their weights (DynamicResources
/// before DefaultPreemption, as upstream inserts it).
fn default_multi_point() -> Vec<RawPlugin> {
    let p = |name: &str, weight: Option<i32>| RawPlugin {
        name: name.into(),
        weight,
    };
    vec![
        p("SchedulingGates", None),
        p("PrioritySort", None),
        p("NodeUnschedulable", None),
        p("NodeName", None),
        p("TaintToleration", Some(3)),
        p("NodeAffinity", Some(2)),
        p("NodePorts", None),
        p("NodeResourcesFit", Some(1)),
        p("VolumeRestrictions", None),
        p("NodeVolumeLimits", None),
        p("VolumeBinding", None),
        p("VolumeZone", None),
        p("PodTopologySpread", Some(2)),
        p("InterPodAffinity", Some(2)),
        p("DynamicResources", None),
        p("DefaultPreemption", None),
        p("NodeResourcesBalancedAllocation", Some(1)),
        p("ImageLocality", Some(1)),
        p("DefaultBinder", None),
        // Upstream appends it when the GangScheduling feature is on (allot has it on).
        p("GangScheduling", None),
    ]
}

/// Upstream `mergePluginSet`: the configured set over the default one.
fn merge_set(default: &RawSet, custom: &RawSet) -> RawSet {
    let mut disabled: Vec<RawPlugin> = custom
        .disabled
        .iter()
        .map(|p| RawPlugin {
            name: p.name.clone(),
            weight: None,
        })
        .collect();
    disabled.extend(default.disabled.iter().cloned());
    let off = |name: &str| disabled.iter().any(|d| d.name == name || d.name == "*");
    let mut enabled = Vec::new();
    let mut replaced = Vec::new();
    for plugin in &default.enabled {
        if off(&plugin.name) {
            continue;
        }
        match custom.enabled.iter().position(|c| c.name == plugin.name) {
            Some(i) => {
                replaced.push(i);
                enabled.push(custom.enabled[i].clone());
            }
            None => enabled.push(plugin.clone()),
        }
    }
    for (i, plugin) in custom.enabled.iter().enumerate() {
        if !replaced.contains(&i) {
            enabled.push(plugin.clone());
        }
    }
    RawSet { enabled, disabled }
}

/// A field error's value as upstream prints it: numbers bare, strings quoted, others as JSON.
fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn invalid(path: &str, value: &Value, reason: &str) -> String {
    format!("{path}: Invalid value: {}: {reason}", shown(value))
}

impl SchedulerConfiguration {
    /// Reads a KubeSchedulerConfiguration (as JSON). `exists` tells whether allot's registry
    /// has a plugin. Errors: every problem found, each `path: message`.
    pub fn from_value(
        value: &Value,
        exists: &dyn Fn(&str) -> bool,
    ) -> Result<SchedulerConfiguration, Vec<String>> {
        let raw: RawConfig = serde_json::from_value(value.clone())
            .map_err(|e| vec![format!("KubeSchedulerConfiguration: {e}")])?;
        let mut errors = Vec::new();
        let api_version = raw
            .api_version
            .clone()
            .unwrap_or_else(|| API_VERSION.into());
        if let Some(p) = raw.parallelism
            && p <= 0
        {
            errors.push(invalid(
                "parallelism",
                &json!(p),
                "should be an integer value greater than zero",
            ));
        }
        let global_percentage = percentage(
            "percentageOfNodesToScore",
            raw.percentage_of_nodes_to_score,
            &mut errors,
        );
        let initial = raw.pod_initial_backoff_seconds.unwrap_or(1);
        let max = raw.pod_max_backoff_seconds.unwrap_or(10);
        if initial <= 0 {
            errors.push(invalid(
                "podInitialBackoffSeconds",
                &json!(initial),
                "must be greater than 0",
            ));
        }
        if max < initial {
            errors.push(invalid(
                "podMaxBackoffSeconds",
                &json!(max),
                "must be greater than or equal to PodInitialBackoffSeconds",
            ));
        }
        let mut raw_profiles = raw.profiles;
        if raw_profiles.is_empty() {
            raw_profiles.push(RawProfile::default());
        }
        if raw_profiles.len() == 1 && raw_profiles[0].scheduler_name.is_none() {
            raw_profiles[0].scheduler_name = Some(DEFAULT_SCHEDULER_NAME.into());
        }
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        let mut profiles = Vec::new();
        let mut plugin_args = Vec::new();
        let mut warnings = Vec::new();
        for (i, profile) in raw_profiles.iter().enumerate() {
            let path = format!("profiles[{i}]");
            let name = profile.scheduler_name.clone().unwrap_or_default();
            if name.is_empty() {
                errors.push(format!("{path}.schedulerName: Required value"));
            }
            if let Some(j) = seen.get(&name) {
                errors.push(format!(
                    "{path}.schedulerName: Duplicate value: \"profiles[{j}].schedulerName\""
                ));
            }
            seen.insert(name.clone(), i);
            let own = percentage(
                &format!("{path}.percentageOfNodesToScore"),
                profile.percentage_of_nodes_to_score,
                &mut errors,
            );
            let resolved = resolve_profile(
                &path,
                &api_version,
                profile,
                exists,
                &mut errors,
                &mut warnings,
            );
            let args = profile_args(&path, &api_version, profile, &mut errors);
            let mut out = resolved;
            out.scheduler_name = name;
            out.percentage_of_nodes_to_score = own.or(global_percentage).unwrap_or(0);
            for plugin in &mut out.plugins {
                if let Some(a) = args.get(&plugin.name) {
                    plugin.args = a.clone();
                }
            }
            profiles.push(out);
            plugin_args.push(args);
        }
        common_queue_sort(&raw_profiles, &mut errors);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(SchedulerConfiguration {
            profiles,
            plugin_args,
            pod_initial_backoff_seconds: initial as u64,
            pod_max_backoff_seconds: max as u64,
            warnings,
        })
    }
}

/// A `percentageOfNodesToScore` in `[0, 100]`.
fn percentage(path: &str, value: Option<i64>, errors: &mut Vec<String>) -> Option<u32> {
    let v = value?;
    if !(0..=100).contains(&v) {
        errors.push(invalid(path, &json!(v), "not in valid range [0-100]"));
        return None;
    }
    Some(v as u32)
}

/// Upstream `validateCommonQueueSort`: every profile has the first one's queueSort set.
fn common_queue_sort(profiles: &[RawProfile], errors: &mut Vec<String>) {
    let set = |p: &RawProfile| {
        p.plugins
            .as_ref()
            .and_then(|s| s.get("queueSort").cloned())
            .unwrap_or_default()
    };
    let canon = set(&profiles[0]);
    if canon.enabled.len() > 1 {
        errors.push(invalid(
            "profiles[0].plugins.queueSort.Enabled",
            &json!(canon.enabled.len()),
            "only one queue sort plugin can be enabled",
        ));
    }
    for (i, profile) in profiles.iter().enumerate().skip(1) {
        let current = set(profile);
        if current != canon {
            let value = serde_json::to_value(&current).unwrap_or(Value::Null);
            errors.push(invalid(
                &format!("profiles[{i}].plugins.queueSort"),
                &value,
                "must be the same for all profiles",
            ));
        }
    }
}

/// A profile's plugins: the merge with the defaults and the expansion per point.
fn resolve_profile(
    path: &str,
    api_version: &str,
    profile: &RawProfile,
    exists: &dyn Fn(&str) -> bool,
    errors: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Profile {
    let custom = profile.plugins.clone().unwrap_or_default();
    for key in custom.keys() {
        if key != "multiPoint" && !POINTS.iter().any(|(k, _)| k == key) {
            errors.push(format!("{path}.plugins.{key}: unknown field"));
        }
    }
    let defaults = RawSet {
        enabled: default_multi_point(),
        disabled: Vec::new(),
    };
    let empty = RawSet::default();
    let multi = merge_set(&defaults, custom.get("multiPoint").unwrap_or(&empty));
    let mut sets: Vec<(&str, &str, RawSet)> = Vec::new();
    for (key, point) in POINTS {
        let set = merge_set(&empty, custom.get(key).unwrap_or(&empty));
        for (j, plugin) in set.enabled.iter().enumerate() {
            if INVALID_IN_V1.contains(&plugin.name.as_str()) {
                errors.push(invalid(
                    &format!("{path}.plugins.{key}.enabled[{j}]"),
                    &json!(plugin.name),
                    &format!("was invalid in version {API_VERSION:?} (KubeSchedulerConfiguration is version {api_version:?})"),
                ));
            }
        }
        sets.push((key, point, set));
    }
    let usable = |name: &str| exists(name);
    let missing = |name: &str| !exists(name) && UPSTREAM_ONLY.contains(&name);
    // Plugins named by the configuration that allot lacks.
    let mut named: Vec<&str> = custom
        .values()
        .flat_map(|s| s.enabled.iter().map(|p| p.name.as_str()))
        .filter(|n| missing(n))
        .collect();
    named.dedup();
    for name in named {
        warnings.push(format!(
            "{path}: plugin {name:?} is not implemented by allot yet and is left out of profile {:?}",
            profile.scheduler_name.as_deref().unwrap_or_default()
        ));
    }
    // Unknown plugins: the first point whose expansion meets one (multiPoint at PreEnqueue).
    for plugin in &multi.enabled {
        if !usable(&plugin.name)
            && !missing(&plugin.name)
            && !INVALID_IN_V1.contains(&plugin.name.as_str())
        {
            errors.push(format!(
                "{path}: PreEnqueuePlugin {:?} does not exist",
                plugin.name
            ));
            return Profile::default_profile("");
        }
    }
    for (_, point, set) in &sets {
        for plugin in &set.enabled {
            if !usable(&plugin.name)
                && !missing(&plugin.name)
                && !INVALID_IN_V1.contains(&plugin.name.as_str())
            {
                errors.push(format!(
                    "{path}: {point}Plugin {:?} does not exist",
                    plugin.name
                ));
                return Profile::default_profile("");
            }
        }
    }
    // The plugins to instantiate, first appearance first, with their weights.
    let mut plugins: Vec<PluginConfig> = Vec::new();
    let score_weight = |name: &str| {
        sets.iter()
            .find(|(k, _, _)| *k == "score")
            .and_then(|(_, _, s)| s.enabled.iter().find(|p| p.name == name))
            .map(|p| p.weight.unwrap_or(0))
    };
    let all = multi
        .enabled
        .iter()
        .chain(sets.iter().flat_map(|(_, _, s)| s.enabled.iter()));
    for plugin in all {
        if !usable(&plugin.name) || plugins.iter().any(|p| p.name == plugin.name) {
            continue;
        }
        let multi_weight = multi
            .enabled
            .iter()
            .find(|p| p.name == plugin.name)
            .and_then(|p| p.weight)
            .unwrap_or(0);
        let weight = score_weight(&plugin.name).unwrap_or(multi_weight);
        plugins.push(PluginConfig::new(&plugin.name).weight(i64::from(weight)));
    }
    let mut point_order = Vec::new();
    for (key, point, set) in &sets {
        if *key == "postBind" {
            if let Some(p) = set.enabled.iter().find(|p| usable(&p.name)) {
                errors.push(format!(
                    "{path}: plugin {:?} does not extend PostBindPlugin plugin",
                    p.name
                ));
            }
            continue;
        }
        let specific: Vec<&str> = set.enabled.iter().map(|p| p.name.as_str()).collect();
        let mut entries = Vec::new();
        let wildcard = set.disabled.iter().any(|d| d.name == "*");
        let mut overrides = Vec::new();
        let mut from_multi = Vec::new();
        if !wildcard {
            for plugin in &multi.enabled {
                let name = plugin.name.as_str();
                if set.disabled.iter().any(|d| d.name == name) {
                    continue;
                }
                if specific.contains(&name) {
                    overrides.push(name);
                } else {
                    from_multi.push(name);
                }
            }
        }
        for name in &specific {
            if overrides.contains(name) {
                entries.push((*name, true));
            }
        }
        entries.extend(from_multi.iter().map(|n| (*n, false)));
        for name in &specific {
            if !overrides.contains(name) {
                entries.push((*name, true));
            }
        }
        let entries: Vec<PointEntry> = entries
            .into_iter()
            .filter(|(n, _)| usable(n))
            .map(|(name, explicit)| PointEntry {
                name: name.to_string(),
                explicit,
            })
            .collect();
        point_order.push((point.to_string(), entries));
    }
    Profile {
        scheduler_name: String::new(),
        plugins,
        percentage_of_nodes_to_score: 0,
        point_order,
    }
}

/// A profile's `pluginConfig`: each plugin's arguments (without `apiVersion` and `kind`),
/// checked as upstream's validation does.
fn profile_args(
    path: &str,
    api_version: &str,
    profile: &RawProfile,
    errors: &mut Vec<String>,
) -> BTreeMap<String, Value> {
    let mut out = BTreeMap::new();
    for (i, config) in profile.plugin_config.iter().enumerate() {
        let at = format!("{path}.pluginConfig[{i}]");
        if out.contains_key(&config.name) {
            errors.push(format!("{at}: Duplicate value: {:?}", config.name));
            continue;
        }
        if INVALID_IN_V1.contains(&config.name.as_str()) {
            errors.push(invalid(
                &at,
                &json!(config.name),
                &format!("was invalid in version {API_VERSION:?} (KubeSchedulerConfiguration is version {api_version:?})"),
            ));
            continue;
        }
        let mut args = config
            .args
            .clone()
            .unwrap_or(Value::Object(Default::default()));
        if let Some(map) = args.as_object_mut() {
            map.remove("apiVersion");
            map.remove("kind");
        }
        let args_path = format!("{at}.args");
        crate::config_args::validate(&config.name, &args_path, &args, errors);
        out.insert(config.name.clone(), args);
    }
    out
}

#[cfg(test)]
mod tests;
