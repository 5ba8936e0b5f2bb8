//! The checks of plugin arguments in a KubeSchedulerConfiguration's `pluginConfig`, with
//! upstream's messages (`pkg/scheduler/apis/config/validation/validation_pluginargs.go`), on
//! the arguments as JSON after upstream's defaults.

use serde_json::{Value, json};

/// Checks one plugin's arguments; problems are added to `errors` as `path: message`.
pub fn validate(plugin: &str, path: &str, args: &Value, errors: &mut Vec<String>) {
    match plugin {
        "DefaultPreemption" => default_preemption(path, args, errors),
        "InterPodAffinity" => {
            let w = int(args, "hardPodAffinityWeight").unwrap_or(1);
            if !(0..=100).contains(&w) {
                errors.push(invalid(
                    &format!("{path}.hardPodAffinityWeight"),
                    &json!(w),
                    "not in valid range [0, 100]",
                ));
            }
        }
        "PodTopologySpread" => pod_topology_spread(path, args, errors),
        "NodeResourcesFit" => node_resources_fit(path, args, errors),
        "NodeResourcesBalancedAllocation" => balanced_allocation(path, args, errors),
        "DynamicResources" => dynamic_resources(path, args, errors),
        "VolumeBinding" => {
            if let Some(t) = int(args, "bindTimeoutSeconds")
                && t < 0
            {
                errors.push(invalid(
                    &format!("{path}.bindTimeoutSeconds"),
                    &json!(t),
                    "invalid BindTimeoutSeconds, should not be a negative value",
                ));
            }
        }
        _ => {}
    }
}

fn int(args: &Value, key: &str) -> Option<i64> {
    args.get(key).and_then(Value::as_i64)
}

fn shown(value: &Value) -> String {
    match value {
        Value::String(s) => format!("{s:?}"),
        other => other.to_string(),
    }
}

fn invalid(path: &str, value: &Value, reason: &str) -> String {
    format!("{path}: Invalid value: {}: {reason}", shown(value))
}

fn not_supported(path: &str, value: &str, supported: &[&str]) -> String {
    let list: Vec<String> = supported.iter().map(|s| format!("{s:?}")).collect();
    format!(
        "{path}: Unsupported value: {value:?}: supported values: {}",
        list.join(", ")
    )
}

/// `DefaultPreemptionArgs` (defaults: 10 %, 100 nodes).
fn default_preemption(path: &str, args: &Value, errors: &mut Vec<String>) {
    let pct = int(args, "minCandidateNodesPercentage").unwrap_or(10);
    let abs = int(args, "minCandidateNodesAbsolute").unwrap_or(100);
    let pct_path = format!("{path}.minCandidateNodesPercentage");
    let abs_path = format!("{path}.minCandidateNodesAbsolute");
    if !(0..=100).contains(&pct) {
        errors.push(invalid(
            &pct_path,
            &json!(pct),
            "not in valid range [0, 100]",
        ));
    }
    if abs < 0 {
        errors.push(invalid(
            &abs_path,
            &json!(abs),
            "not in valid range [0, inf)",
        ));
    }
    if pct == 0 && abs == 0 {
        errors.push(invalid(
            &pct_path,
            &json!(pct),
            "cannot be zero at the same time as minCandidateNodesAbsolute",
        ));
        errors.push(invalid(
            &abs_path,
            &json!(abs),
            "cannot be zero at the same time as minCandidateNodesPercentage",
        ));
    }
}

/// `PodTopologySpreadArgs`.
fn pod_topology_spread(path: &str, args: &Value, errors: &mut Vec<String>) {
    let defaulting = args
        .get("defaultingType")
        .and_then(Value::as_str)
        .unwrap_or("System");
    let constraints = args
        .get("defaultConstraints")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let type_path = format!("{path}.defaultingType");
    if defaulting != "System" && defaulting != "List" {
        errors.push(not_supported(&type_path, defaulting, &["System", "List"]));
    } else if defaulting == "System" && !constraints.is_empty() {
        errors.push(invalid(
            &type_path,
            &json!(defaulting),
            "when .defaultConstraints are not empty",
        ));
    }
    let list = format!("{path}.defaultConstraints");
    for (i, c) in constraints.iter().enumerate() {
        let p = format!("{list}[{i}]");
        let skew = c.get("maxSkew").and_then(Value::as_i64).unwrap_or(0);
        if skew <= 0 {
            errors.push(invalid(
                &format!("{p}.maxSkew"),
                &json!(skew),
                "not in valid range (0, inf)",
            ));
        }
        let key = c.get("topologyKey").and_then(Value::as_str).unwrap_or("");
        if key.is_empty() {
            errors.push(format!("{p}.topologyKey: Required value: can not be empty"));
        }
        let action = c
            .get("whenUnsatisfiable")
            .and_then(Value::as_str)
            .unwrap_or("");
        if action.is_empty() {
            errors.push(format!(
                "{p}.whenUnsatisfiable: Required value: can not be empty"
            ));
        } else if action != "DoNotSchedule" && action != "ScheduleAnyway" {
            errors.push(not_supported(
                &format!("{p}.whenUnsatisfiable"),
                action,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if c.get("labelSelector").is_some_and(|s| !s.is_null()) {
            errors.push(format!(
                "{p}.labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod"
            ));
        }
        let repeated = constraints[..i].iter().any(|o| {
            o.get("topologyKey") == c.get("topologyKey")
                && o.get("whenUnsatisfiable") == c.get("whenUnsatisfiable")
        });
        if repeated {
            errors.push(format!("{p}: Duplicate value: \"{{{key}, {action}}}\""));
        }
    }
}

/// `NodeResourcesFitArgs`.
fn node_resources_fit(path: &str, args: &Value, errors: &mut Vec<String>) {
    if let Some(groups) = args.get("ignoredResourceGroups").and_then(Value::as_array) {
        for (i, g) in groups.iter().enumerate() {
            let g = g.as_str().unwrap_or("");
            if g.contains('/') {
                errors.push(invalid(
                    &format!("{path}.ignoredResourceGroups[{i}]"),
                    &json!(g),
                    "resource group name can't contain '/'",
                ));
            }
        }
    }
    let Some(strategy) = args.get("scoringStrategy").filter(|s| !s.is_null()) else {
        return;
    };
    let sp = format!("{path}.scoringStrategy");
    let kind = strategy
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("LeastAllocated");
    const TYPES: [&str; 3] = [
        "LeastAllocated",
        "MostAllocated",
        "RequestedToCapacityRatio",
    ];
    if !TYPES.contains(&kind) {
        errors.push(not_supported(&format!("{sp}.type"), kind, &TYPES));
    }
    if let Some(resources) = strategy.get("resources").and_then(Value::as_array) {
        for (i, r) in resources.iter().enumerate() {
            let name = r.get("name").and_then(Value::as_str).unwrap_or("");
            let weight = r.get("weight").and_then(Value::as_i64).unwrap_or(1);
            if weight <= 0 || weight > 100 {
                errors.push(invalid(
                    &format!("{sp}.resources[{i}].weight"),
                    &json!(weight),
                    &format!("resource weight of {name} not in valid range (0, 100]"),
                ));
            }
        }
    }
    let ratio = strategy
        .get("requestedToCapacityRatio")
        .filter(|r| !r.is_null());
    if kind == "RequestedToCapacityRatio" {
        match ratio {
            None => errors.push(format!(
                "{sp}.requestedToCapacityRatio: Required value: must be specified when type is RequestedToCapacityRatio"
            )),
            Some(r) => shape(&format!("{sp}.requestedToCapacityRatio.shape"), r, errors),
        }
    } else if ratio.is_some() {
        errors.push(format!(
            "{sp}.requestedToCapacityRatio: Forbidden: must be nil when type is not RequestedToCapacityRatio"
        ));
    }
}

/// Upstream `validateFunctionShape`.
fn shape(path: &str, ratio: &Value, errors: &mut Vec<String>) {
    let points = ratio
        .get("shape")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    if points.is_empty() {
        errors.push(format!(
            "{path}: Required value: at least one point must be specified"
        ));
        return;
    }
    let util = |p: &Value| p.get("utilization").and_then(Value::as_i64).unwrap_or(0);
    let score = |p: &Value| p.get("score").and_then(Value::as_i64).unwrap_or(0);
    for i in 1..points.len() {
        if util(&points[i - 1]) >= util(&points[i]) {
            errors.push(invalid(
                &format!("{path}[{i}].utilization"),
                &json!(util(&points[i])),
                "values must be sorted in increasing order",
            ));
            break;
        }
    }
    for (i, p) in points.iter().enumerate() {
        if !(0..=100).contains(&util(p)) {
            errors.push(invalid(
                &format!("{path}[{i}].utilization"),
                &json!(util(p)),
                "not in valid range [0, 100]",
            ));
        }
        if !(0..=10).contains(&score(p)) {
            errors.push(invalid(
                &format!("{path}[{i}].score"),
                &json!(score(p)),
                "not in valid range [0, 10]",
            ));
        }
    }
}

/// `NodeResourcesBalancedAllocationArgs`.
fn balanced_allocation(path: &str, args: &Value, errors: &mut Vec<String>) {
    let Some(resources) = args.get("resources").and_then(Value::as_array) else {
        return;
    };
    let mut seen = Vec::new();
    for (i, r) in resources.iter().enumerate() {
        let name = r.get("name").and_then(Value::as_str).unwrap_or("");
        if seen.contains(&name) {
            errors.push(format!(
                "{path}.resources[{i}].name: Duplicate value: {name:?}"
            ));
        } else {
            seen.push(name);
        }
        let weight = r.get("weight").and_then(Value::as_i64).unwrap_or(1);
        if weight != 1 {
            errors.push(invalid(
                &format!("{path}.resources[{i}].weight"),
                &json!(weight),
                "must be 1",
            ));
        }
    }
}

/// `DynamicResourcesArgs`: durations as Go writes them (`10s`, `1m30s`).
fn dynamic_resources(path: &str, args: &Value, errors: &mut Vec<String>) {
    for (key, min_millis, reason) in [
        ("filterTimeout", 0, "must be zero or positive"),
        ("bindingTimeout", 1000, "must be at least 1 second"),
    ] {
        let Some(text) = args.get(key).and_then(Value::as_str) else {
            continue;
        };
        match duration_millis(text) {
            Some(ms) if ms >= min_millis => {}
            Some(_) => errors.push(invalid(&format!("{path}.{key}"), &json!(text), reason)),
            None => errors.push(invalid(
                &format!("{path}.{key}"),
                &json!(text),
                "not a duration (e.g. \"10s\")",
            )),
        }
    }
}

/// A Go duration (`1h2m3.5s`, `250ms`, `-1s`) in milliseconds.
pub fn duration_millis(text: &str) -> Option<i64> {
    duration_exact_millis(text).map(|ms| ms.round() as i64)
}

/// A Go duration in nanoseconds (for limits below a millisecond, as `filterTimeout: 1ns`).
pub fn duration_nanos(text: &str) -> Option<i64> {
    duration_exact_millis(text).map(|ms| (ms * 1e6).round() as i64)
}

/// A Go duration in milliseconds, unrounded.
fn duration_exact_millis(text: &str) -> Option<f64> {
    let (negative, mut rest) = match text.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, text),
    };
    if rest == "0" {
        return Some(0.0);
    }
    let mut total = 0f64;
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number: f64 = rest[..digits].parse().ok()?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let factor = match &rest[..unit_len] {
            "ns" => 1e-6,
            "us" | "µs" => 1e-3,
            "ms" => 1.0,
            "s" => 1e3,
            "m" => 6e4,
            "h" => 3.6e6,
            _ => return None,
        };
        rest = &rest[unit_len..];
        total += number * factor;
    }
    Some(if negative { -total } else { total })
}
