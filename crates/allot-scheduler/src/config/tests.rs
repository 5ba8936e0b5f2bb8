//! KubeSchedulerConfiguration: defaults, merge and expansion, and upstream's validation cases
//! (`tests/conformance/scheduler_config/validation.yaml`).

use serde_json::{Value, json};

use super::*;
use crate::plugins;

fn read(value: Value) -> Result<SchedulerConfiguration, Vec<String>> {
    SchedulerConfiguration::from_value(&value, &plugins::exists)
}

fn order<'a>(profile: &'a Profile, point: &str) -> Vec<&'a str> {
    profile
        .point_order
        .iter()
        .find(|(p, _)| p == point)
        .map(|(_, e)| e.iter().map(|e| e.name.as_str()).collect())
        .unwrap_or_default()
}

/// An empty configuration gives kube-scheduler 1.37's default profile, as allot's default.
#[test]
fn empty_configuration_is_the_default_profile() {
    let config = read(json!({})).unwrap();
    assert_eq!(config.profiles.len(), 1);
    let profile = &config.profiles[0];
    let default = Profile::default_profile(DEFAULT_SCHEDULER_NAME);
    assert_eq!(profile.scheduler_name, "default-scheduler");
    assert_eq!(profile.plugins, default.plugins);
    assert_eq!(
        (
            config.pod_initial_backoff_seconds,
            config.pod_max_backoff_seconds
        ),
        (1, 10)
    );
    assert!(config.warnings.is_empty());
    // The built framework runs the same points in the same order as the default profile.
    let a = crate::Scheduler::try_new(crate::SchedulerConfig {
        configuration: Some(config.clone()),
        ..Default::default()
    })
    .unwrap();
    let b = crate::Scheduler::try_new(crate::SchedulerConfig::default()).unwrap();
    assert_eq!(
        format!("{:?}", a.frameworks[0]),
        format!("{:?}", b.frameworks[0])
    );
}

/// Disabling at one point with `*`, enabling by name with a weight, and `multiPoint` overrides.
#[test]
fn merge_and_multi_point_expansion() {
    let config = read(json!({
        "profiles": [{
            "schedulerName": "bin-packing",
            "plugins": {
                "score": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "NodeResourcesFit", "weight": 5}, {"name": "ImageLocality"}]
                },
                "filter": {"disabled": [{"name": "NodePorts"}]},
                "multiPoint": {"enabled": [{"name": "TaintToleration", "weight": 7}]}
            },
            "pluginConfig": [{
                "name": "NodeResourcesFit",
                "args": {"scoringStrategy": {"type": "MostAllocated"}}
            }]
        }]
    }))
    .unwrap();
    let profile = &config.profiles[0];
    assert_eq!(
        order(profile, "Score"),
        ["NodeResourcesFit", "ImageLocality"]
    );
    assert!(!order(profile, "Filter").contains(&"NodePorts"));
    assert!(order(profile, "PreFilter").contains(&"NodePorts"));
    let weight = |n: &str| profile.plugins.iter().find(|p| p.name == n).unwrap().weight;
    assert_eq!(weight("NodeResourcesFit"), 5);
    assert_eq!(weight("TaintToleration"), 7);
    assert_eq!(
        profile
            .plugins
            .iter()
            .find(|p| p.name == "NodeResourcesFit")
            .unwrap()
            .args,
        json!({"scoringStrategy": {"type": "MostAllocated"}})
    );
    crate::Scheduler::try_new(crate::SchedulerConfig {
        configuration: Some(config),
        ..Default::default()
    })
    .unwrap();
}

/// A plugin enabled at a point by name and in multiPoint runs first there (upstream's
/// "override" part of the expansion order).
#[test]
fn named_plugin_overrides_come_first() {
    let config = read(json!({
        "profiles": [{
            "plugins": {"filter": {"enabled": [{"name": "NodeAffinity"}]}}
        }]
    }))
    .unwrap();
    assert_eq!(order(&config.profiles[0], "Filter")[0], "NodeAffinity");
}

/// Percentage per profile wins over the global one.
#[test]
fn percentage_of_nodes_to_score_per_profile() {
    let config = read(json!({
        "percentageOfNodesToScore": 30,
        "profiles": [
            {"schedulerName": "a"},
            {"schedulerName": "b", "percentageOfNodesToScore": 70}
        ]
    }))
    .unwrap();
    let p: Vec<u32> = config
        .profiles
        .iter()
        .map(|p| p.percentage_of_nodes_to_score)
        .collect();
    assert_eq!(p, [30, 70]);
}

/// Upstream plugins allot lacks are left out, with a warning when named, and their
/// arguments are kept as data.
#[test]
fn upstream_only_plugins_are_left_out_with_a_warning() {
    let exists = |n: &str| n != "DefaultPreemption" && plugins::exists(n);
    let config = SchedulerConfiguration::from_value(
        &json!({"profiles": [{
            "plugins": {"postFilter": {"enabled": [{"name": "DefaultPreemption"}]}},
            "pluginConfig": [{"name": "DefaultPreemption", "args": {"minCandidateNodesAbsolute": 5}}]
        }]}),
        &exists,
    )
    .unwrap();
    assert_eq!(config.warnings.len(), 1, "{:?}", config.warnings);
    assert!(config.warnings[0].contains("\"DefaultPreemption\""));
    assert_eq!(
        config.plugin_args[0]["DefaultPreemption"],
        json!({"minCandidateNodesAbsolute": 5})
    );
}

#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    name: String,
    config: Value,
    #[serde(default)]
    errors: Vec<String>,
}

/// Upstream's validation tables (`validation_test.go`, `validation_pluginargs_test.go`) as
/// data: each case's configuration and the exact messages.
#[test]
fn upstream_validation_cases() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/conformance/scheduler_config/validation.yaml"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let cases: Vec<Case> = serde_saphyr::from_str(&text).unwrap();
    assert!(cases.len() >= 20, "{} cases", cases.len());
    for case in cases {
        let got = match read(case.config.clone()) {
            Ok(config) => crate::Scheduler::try_new(crate::SchedulerConfig {
                configuration: Some(config),
                ..Default::default()
            })
            .err()
            .map(|e| vec![e])
            .unwrap_or_default(),
            Err(errors) => errors,
        };
        assert_eq!(got, case.errors, "case {:?}", case.name);
    }
}
