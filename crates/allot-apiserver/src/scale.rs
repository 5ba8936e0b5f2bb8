//! The `scale` subresource of Deployments, ReplicaSets, StatefulSets and ReplicationControllers
//! (autoscaling/v1 `Scale`), which `kubectl scale`, the HPA and the disruption controller use:
//! reading it shows the desired and observed replicas and the selector; writing it (PUT, or any
//! patch of the Scale) changes only `spec.replicas` of the object.

use allot_store::Kind;
use serde_json::{Value, json};

/// Whether a kind has the `scale` subresource.
pub fn has_scale(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::Deployment | Kind::ReplicaSet | Kind::StatefulSet | Kind::ReplicationController
    )
}

/// A label selector as upstream's `LabelSelectorAsSelector(...).String()` writes it: sorted
/// requirements, `k=v`, `k in (a,b)`, `k notin (a)`, `k`, `!k`.
fn selector_string(selector: Option<&Value>) -> String {
    let Some(selector) = selector.filter(|s| s.is_object()) else {
        return String::new();
    };
    let mut parts: Vec<(String, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (k, v) in labels {
            parts.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())));
        }
    }
    for expression in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = expression["key"].as_str().unwrap_or_default();
        let mut values: Vec<&str> = expression["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let list = values.join(",");
        let text = match expression["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({list})"),
            "NotIn" => format!("{key} notin ({list})"),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other} ({list})"),
        };
        parts.push((key.to_string(), text));
    }
    parts.sort();
    parts
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join(",")
}

/// The Scale of an object (its JSON as served).
pub fn to_scale(kind: Kind, object: &Value) -> Value {
    let metadata = &object["metadata"];
    let mut meta = serde_json::Map::new();
    for field in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(value) = metadata.get(field) {
            meta.insert(field.into(), value.clone());
        }
    }
    let selector = if kind == Kind::ReplicationController {
        let labels = object
            .pointer("/spec/selector")
            .filter(|s| s.is_object())
            .map(|s| json!({"matchLabels": s}));
        selector_string(labels.as_ref())
    } else {
        selector_string(object.pointer("/spec/selector"))
    };
    let mut status = json!({"replicas": object.pointer("/status/replicas").and_then(Value::as_i64).unwrap_or(0)});
    if !selector.is_empty() {
        status["selector"] = Value::String(selector);
    }
    json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": meta,
        "spec": {"replicas": object.pointer("/spec/replicas").and_then(Value::as_i64).unwrap_or(0)},
        "status": status,
    })
}

/// The object with the replicas of `scale` (and its resourceVersion precondition, if any).
pub fn from_scale(object: &Value, scale: &Value) -> Result<Value, String> {
    let replicas = match scale.pointer("/spec/replicas") {
        None | Some(Value::Null) => 0,
        Some(value) => value
            .as_i64()
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| format!("spec.replicas: Invalid value: {value}: must be an int32"))?,
    };
    if replicas < 0 {
        return Err(format!(
            "spec.replicas: Invalid value: {replicas}: must be greater than or equal to 0"
        ));
    }
    let mut object = object.clone();
    object["spec"]["replicas"] = json!(replicas);
    match scale.pointer("/metadata/resourceVersion") {
        Some(Value::String(rv)) if !rv.is_empty() => {
            object["metadata"]["resourceVersion"] = Value::String(rv.clone());
        }
        _ => {}
    }
    Ok(object)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_shows_replicas_and_selector_and_changes_only_replicas() {
        let deployment = json!({
            "metadata": {"name": "web", "namespace": "default", "resourceVersion": "7", "labels": {"a": "b"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}},
            "status": {"replicas": 2},
        });
        let scale = to_scale(Kind::Deployment, &deployment);
        assert_eq!(scale["spec"]["replicas"], 3);
        assert_eq!(scale["status"]["replicas"], 2);
        assert_eq!(scale["status"]["selector"], "app=web,tier in (a,b)");
        assert!(scale["metadata"].get("labels").is_none());
        let updated = from_scale(&deployment, &json!({"spec": {"replicas": 5}})).expect("valid");
        assert_eq!(updated["spec"]["replicas"], 5);
        assert_eq!(updated["spec"]["selector"], deployment["spec"]["selector"]);
        assert!(from_scale(&deployment, &json!({"spec": {"replicas": -1}})).is_err());
        let rc =
            json!({"metadata": {"name": "rc"}, "spec": {"replicas": 1, "selector": {"app": "x"}}});
        assert_eq!(
            to_scale(Kind::ReplicationController, &rc)["status"]["selector"],
            "app=x"
        );
    }
}
