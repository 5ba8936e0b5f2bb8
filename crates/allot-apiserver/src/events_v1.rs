//! `events.k8s.io/v1` Events: served from the same stored Event as core/v1, converted field by
//! field as upstream does (`note` ↔ `message`, `regarding` ↔ `involvedObject`,
//! `reportingController` ↔ `reportingComponent`, `deprecatedSource`/`deprecatedFirstTimestamp`/
//! `deprecatedLastTimestamp`/`deprecatedCount` ↔ `source`/`firstTimestamp`/`lastTimestamp`/
//! `count`; the rest keeps its name), with the stricter validation upstream applies to Events
//! created through this API (eventTime, reportingController, reportingInstance, action and
//! reason required; the deprecated fields must be unset).

use allot_api::core::v1::Event;
use allot_validation::FieldError;
use serde_json::{Map, Value};

/// The group version.
pub const API_VERSION: &str = "events.k8s.io/v1";

/// `(events.k8s.io/v1 name, core/v1 name)` of the renamed fields.
const RENAMED: &[(&str, &str)] = &[
    ("note", "message"),
    ("regarding", "involvedObject"),
    ("reportingController", "reportingComponent"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

fn rename(value: &Value, to_core: bool, api_version: &str) -> Value {
    let Some(map) = value.as_object() else {
        return value.clone();
    };
    let mut out = Map::new();
    for (key, field) in map {
        let name = RENAMED
            .iter()
            .find(|(v1, core)| if to_core { v1 == key } else { core == key })
            .map(|(v1, core)| if to_core { *core } else { *v1 })
            .unwrap_or(key.as_str());
        out.insert(name.to_string(), field.clone());
    }
    if out.contains_key("apiVersion") {
        out.insert("apiVersion".into(), Value::String(api_version.into()));
    }
    Value::Object(out)
}

/// A core/v1 Event (JSON) as `events.k8s.io/v1` shows it.
pub fn from_core(core: &Value) -> Value {
    let mut out = rename(core, false, API_VERSION);
    // core/v1's `series.state` (deprecated) has no events.k8s.io/v1 field.
    if let Some(series) = out.get_mut("series").and_then(Value::as_object_mut) {
        series.remove("state");
    }
    out
}

/// An `events.k8s.io/v1` Event (JSON) as the core/v1 Event it is stored as.
pub fn to_core(v1: &Value) -> Value {
    rename(v1, true, "v1")
}

/// A field path of the core Event as this API names it.
fn v1_path(core: &str) -> String {
    for (v1, name) in RENAMED {
        if let Some(rest) = core.strip_prefix(name)
            && (rest.is_empty() || rest.starts_with('.'))
        {
            return format!("{v1}{rest}");
        }
    }
    core.to_string()
}

fn qualified_name(value: &str, path: &str, errors: &mut Vec<FieldError>) {
    let (prefix, name) = match value.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, value),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    if !name_ok {
        errors.push(FieldError::invalid(
            path,
            value,
            "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
        ));
    }
    if let Some(prefix) = prefix {
        let ok = !prefix.is_empty()
            && prefix.len() <= 253
            && prefix.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            });
        if !ok {
            errors.push(FieldError::invalid(
                path,
                value,
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
            ));
        }
    }
}

/// Upstream's validation of an Event created (`old` = None) or updated through
/// `events.k8s.io/v1`, on the core Event it is stored as, with this API's field names.
pub fn validate(event: &Event, old: Option<&Event>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let text = |v: &Option<String>| v.clone().unwrap_or_default();
    let namespace = event.metadata.namespace.as_str();
    let controller = text(&event.reporting_component);
    let instance = text(&event.reporting_instance);
    let action = text(&event.action);
    let reason = text(&event.reason);
    // The legacy rules every Event passes, for one with an eventTime.
    if event
        .involved_object
        .namespace
        .as_deref()
        .unwrap_or_default()
        .is_empty()
        && namespace != "default"
        && namespace != "kube-system"
        && event.event_time.is_some()
    {
        errors.push(FieldError::invalid(
            "involvedObject.namespace",
            "",
            "does not match event.namespace",
        ));
    }
    if event.event_time.is_some() {
        if controller.is_empty() {
            errors.push(FieldError::required("reportingController", ""));
        }
        qualified_name(&controller, "reportingController", &mut errors);
        if instance.is_empty() {
            errors.push(FieldError::required("reportingInstance", ""));
        }
        if instance.len() > 128 {
            errors.push(FieldError::invalid(
                "reportingInstance",
                "",
                "can have at most 128 characters",
            ));
        }
        if action.is_empty() {
            errors.push(FieldError::required("action", ""));
        }
        if action.len() > 128 {
            errors.push(FieldError::invalid(
                "action",
                "",
                "can have at most 128 characters",
            ));
        }
        if reason.is_empty() {
            errors.push(FieldError::required("reason", ""));
        }
        if reason.len() > 128 {
            errors.push(FieldError::invalid(
                "reason",
                "",
                "can have at most 128 characters",
            ));
        }
        if text(&event.message).len() > 1024 {
            errors.push(FieldError::invalid(
                "note",
                "",
                "can have at most 1024 characters",
            ));
        }
    }
    let series_changed = old.is_none_or(|o| o.series != event.series);
    if series_changed && let Some(series) = &event.series {
        if series.count.unwrap_or(0) < 2 {
            errors.push(FieldError::invalid(
                "series.count",
                "",
                "should be at least 2",
            ));
        }
        if series
            .last_observed_time
            .as_deref()
            .unwrap_or_default()
            .is_empty()
        {
            errors.push(FieldError::required("series.lastObservedTime", ""));
        }
    }
    match old {
        None => {
            if event.event_time.is_none() {
                errors.push(FieldError::required("eventTime", ""));
            }
            let kind = text(&event.type_);
            if kind != "Normal" && kind != "Warning" {
                errors.push(FieldError::invalid(
                    "type",
                    "",
                    format!("has invalid value: {kind}"),
                ));
            }
            for (set, field) in [
                (event.first_timestamp.is_some(), "deprecatedFirstTimestamp"),
                (event.last_timestamp.is_some(), "deprecatedLastTimestamp"),
                (event.count.unwrap_or(0) != 0, "deprecatedCount"),
                (
                    event.source.as_ref().is_some_and(|s| {
                        s.component.as_deref().is_some_and(|c| !c.is_empty())
                            || s.host.as_deref().is_some_and(|h| !h.is_empty())
                    }),
                    "deprecatedSource",
                ),
            ] {
                if set {
                    errors.push(FieldError::invalid(field, "", "needs to be unset"));
                }
            }
        }
        Some(old) => {
            let immutable = |same: bool, field: &str, errors: &mut Vec<FieldError>| {
                if !same {
                    errors.push(FieldError::invalid(
                        &v1_path(field),
                        "",
                        "field is immutable",
                    ));
                }
            };
            immutable(
                event.involved_object == old.involved_object,
                "involvedObject",
                &mut errors,
            );
            immutable(event.reason == old.reason, "reason", &mut errors);
            immutable(event.message == old.message, "message", &mut errors);
            immutable(event.source == old.source, "source", &mut errors);
            immutable(
                event.first_timestamp == old.first_timestamp,
                "firstTimestamp",
                &mut errors,
            );
            immutable(
                event.last_timestamp == old.last_timestamp,
                "lastTimestamp",
                &mut errors,
            );
            immutable(event.count == old.count, "count", &mut errors);
            immutable(event.type_ == old.type_, "type", &mut errors);
            immutable(event.event_time == old.event_time, "eventTime", &mut errors);
            immutable(event.action == old.action, "action", &mut errors);
            immutable(event.related == old.related, "related", &mut errors);
            immutable(
                event.reporting_component == old.reporting_component,
                "reportingComponent",
                &mut errors,
            );
            immutable(
                event.reporting_instance == old.reporting_instance,
                "reportingInstance",
                &mut errors,
            );
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What kube-scheduler's event recorder creates.
    fn scheduled() -> Value {
        json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "p.18a2b", "namespace": "default"},
            "eventTime": "2026-01-01T00:00:00.000001Z",
            "reportingController": "default-scheduler", "reportingInstance": "default-scheduler-host",
            "action": "Binding", "reason": "Scheduled", "type": "Normal",
            "regarding": {"kind": "Pod", "namespace": "default", "name": "p", "uid": "u", "apiVersion": "v1"},
            "note": "Successfully assigned default/p to node-1"})
    }

    #[test]
    fn fields_map_both_ways() {
        let core = to_core(&scheduled());
        assert_eq!(core["apiVersion"], "v1");
        assert_eq!(core["message"], "Successfully assigned default/p to node-1");
        assert_eq!(core["involvedObject"]["name"], "p");
        assert_eq!(core["reportingComponent"], "default-scheduler");
        assert!(core.get("note").is_none());
        assert_eq!(from_core(&core), scheduled());
        let legacy = json!({"apiVersion": "v1", "kind": "Event", "count": 3, "source": {"component": "kubelet"},
            "firstTimestamp": "2026-01-01T00:00:00Z", "series": {"count": 2, "lastObservedTime": "2026-01-01T00:00:01.000000Z", "state": "Ongoing"}});
        let v1 = from_core(&legacy);
        assert_eq!(v1["deprecatedCount"], 3);
        assert_eq!(v1["deprecatedSource"]["component"], "kubelet");
        assert_eq!(v1["deprecatedFirstTimestamp"], "2026-01-01T00:00:00Z");
        assert!(v1["series"].get("state").is_none());
    }

    #[test]
    fn creation_through_this_api_is_strict() {
        let event: Event = serde_json::from_value(to_core(&scheduled())).expect("an event");
        assert!(validate(&event, None).is_empty());
        let mut bare = event.clone();
        bare.event_time = None;
        bare.type_ = Some("Info".into());
        bare.count = Some(2);
        let messages: Vec<String> = validate(&bare, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            messages,
            [
                "eventTime: Required value",
                "type: Invalid value: \"\": has invalid value: Info",
                "deprecatedCount: Invalid value: \"\": needs to be unset",
            ]
        );
        let mut no_controller = event.clone();
        no_controller.reporting_component = None;
        no_controller.action = None;
        let messages: Vec<String> = validate(&no_controller, None)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert!(
            messages.contains(&"reportingController: Required value".to_string()),
            "{messages:?}"
        );
        assert!(
            messages.contains(&"action: Required value".to_string()),
            "{messages:?}"
        );
        // A series update: the note may not change, the series may.
        let mut update = event.clone();
        update.series = Some(
            serde_json::from_value(
                json!({"count": 2, "lastObservedTime": "2026-01-01T00:00:02.000000Z"}),
            )
            .expect("series"),
        );
        assert!(validate(&update, Some(&event)).is_empty());
        update.message = Some("other".into());
        let messages: Vec<String> = validate(&update, Some(&event))
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(messages, ["note: Invalid value: \"\": field is immutable"]);
    }
}
