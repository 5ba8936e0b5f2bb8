//! `allot simulate --trace FILE`: a trace of arrivals, each a time and a manifest, played as a
//! Timeline of creations.
//!
//! Two forms:
//! - YAML or JSON: a list of `{time, manifest}` (`time` a Go duration such as `90s` or a number
//!   of seconds; `manifest` an inline object);
//! - CSV (`.csv`): a header naming the columns `time` and `manifest`, and optionally `name`.
//!   `manifest` is a file (relative to the trace) holding one manifest, or an inline JSON
//!   object; `name`, when given, replaces the manifest's `metadata.name`, so a few template
//!   files serve a trace of thousands of Jobs.
//!
//! Key design decision: the trace becomes one ordinary Timeline document (events at the given
//! times creating the manifests), so it is decoded, defaulted and validated exactly as a
//! Timeline's inline manifests are, with errors naming the trace's file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use allot_api::load::{Document, Object, RawDocument, SourceMap};
use serde_json::{Value, json};

use crate::InputError;

fn error(file: &str, line: u32, field: &str, message: impl Into<String>) -> InputError {
    InputError {
        file: file.to_string(),
        line,
        kind: "Trace".into(),
        object: String::new(),
        field: field.to_string(),
        message: message.into(),
    }
}

/// A trace time: a Go duration, or seconds.
fn time_millis(text: &str) -> Option<u64> {
    let text = text.trim();
    if let Ok(seconds) = text.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64);
    }
    crate::timeline::parse_duration_millis(text)
}

/// Splits one CSV line into fields (RFC 4180 quoting: `"a, b"`, `""` for a quote).
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut was_quoted = false;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => quoted = false,
            (true, c) => field.push(c),
            (false, '"') if field.is_empty() && !was_quoted => {
                quoted = true;
                was_quoted = true;
            }
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                was_quoted = false;
            }
            (false, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quoted field".into());
    }
    fields.push(field);
    Ok(fields)
}

/// One manifest from a file (read once per file).
fn manifest_file(
    path: &Path,
    cache: &mut BTreeMap<PathBuf, Result<Value, String>>,
) -> Result<Value, String> {
    cache
        .entry(path.to_path_buf())
        .or_insert_with(|| {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
            let docs = allot_api::load::parse_str(&path.display().to_string(), &text)
                .map_err(|e| e.to_string())?;
            match <[RawDocument; 1]>::try_from(docs) {
                Ok([doc]) => Ok(doc.value),
                Err(docs) => Err(format!(
                    "{}: expected one manifest, found {}",
                    path.display(),
                    docs.len()
                )),
            }
        })
        .clone()
}

/// The `(time, manifest, line)` entries of a CSV trace.
fn csv_entries(
    file: &str,
    text: &str,
    base: &Path,
    errors: &mut Vec<InputError>,
) -> Vec<(u64, Value, u32)> {
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty());
    let Some((_, header)) = lines.next() else {
        return Vec::new();
    };
    let header: Vec<String> = match csv_fields(header) {
        Ok(h) => h.into_iter().map(|c| c.trim().to_string()).collect(),
        Err(e) => {
            errors.push(error(file, 1, "", e));
            return Vec::new();
        }
    };
    let column = |name: &str| header.iter().position(|h| h == name);
    let (Some(time_col), Some(manifest_col)) = (column("time"), column("manifest")) else {
        errors.push(error(
            file,
            1,
            "",
            "the header must name the columns time and manifest (and optionally name)",
        ));
        return Vec::new();
    };
    let name_col = column("name");
    let mut cache = BTreeMap::new();
    let mut out = Vec::new();
    for (index, line) in lines {
        let number = index as u32 + 1;
        let fields = match csv_fields(line) {
            Ok(f) => f,
            Err(e) => {
                errors.push(error(file, number, "", e));
                continue;
            }
        };
        let get = |i: usize| fields.get(i).map(|f| f.trim()).unwrap_or_default();
        let Some(at) = time_millis(get(time_col)) else {
            errors.push(error(
                file,
                number,
                "time",
                format!(
                    "Invalid value: {:?}: must be seconds or a duration such as 90s",
                    get(time_col)
                ),
            ));
            continue;
        };
        let cell = get(manifest_col);
        let manifest = if cell.starts_with('{') {
            serde_json::from_str::<Value>(cell).map_err(|e| format!("inline manifest: {e}"))
        } else {
            manifest_file(&base.join(cell), &mut cache)
        };
        let mut manifest = match manifest {
            Ok(m) => m,
            Err(e) => {
                errors.push(error(file, number, "manifest", e));
                continue;
            }
        };
        if let Some(name) = name_col.map(get).filter(|n| !n.is_empty()) {
            manifest["metadata"]["name"] = Value::String(name.to_string());
            if let Some(meta) = manifest["metadata"].as_object_mut() {
                meta.remove("generateName");
            }
        }
        out.push((at, manifest, number));
    }
    out
}

/// The `(time, manifest, line)` entries of a YAML or JSON trace.
fn list_entries(file: &str, text: &str, errors: &mut Vec<InputError>) -> Vec<(u64, Value, u32)> {
    let value: Value = match serde_saphyr::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            errors.push(error(file, 1, "", e.to_string()));
            return Vec::new();
        }
    };
    let Some(items) = value.as_array() else {
        errors.push(error(file, 1, "", "a trace is a list of {time, manifest}"));
        return Vec::new();
    };
    // Each entry's line: the list items at the left margin, in order.
    let starts: Vec<u32> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("- ") || l.trim_start().starts_with("{\"time\""))
        .map(|(i, _)| i as u32 + 1)
        .collect();
    let mut out = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let line = starts.get(index).copied().unwrap_or(1);
        let time = match item.get("time") {
            Some(Value::Number(n)) => n.as_f64().map(|s| s.to_string()),
            Some(Value::String(s)) => Some(s.clone()),
            _ => None,
        };
        let Some(at) = time.as_deref().and_then(time_millis) else {
            errors.push(error(
                file,
                line,
                &format!("[{index}].time"),
                "Required value: seconds or a duration such as 90s",
            ));
            continue;
        };
        let Some(manifest) = item.get("manifest").filter(|m| m.is_object()) else {
            errors.push(error(
                file,
                line,
                &format!("[{index}].manifest"),
                "Required value: an inline manifest",
            ));
            continue;
        };
        out.push((at, manifest.clone(), line));
    }
    out
}

/// The trace at `path` as a Timeline document.
pub fn document(path: &Path) -> Result<Document, Vec<InputError>> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path)
        .map_err(|e| vec![error(&file, 0, "", format!("cannot read the trace: {e}"))])?;
    let mut errors = Vec::new();
    let csv = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("csv"));
    let base = path.parent().unwrap_or(Path::new("."));
    let entries = if csv {
        csv_entries(&file, &text, base, &mut errors)
    } else {
        list_entries(&file, &text, &mut errors)
    };
    if !errors.is_empty() {
        return Err(errors);
    }
    let mut source_map = SourceMap::default();
    let events: Vec<Value> = entries
        .iter()
        .enumerate()
        .map(|(i, (at, manifest, line))| {
            source_map.insert(format!("events[{i}]"), *line);
            json!({"at": format!("{at}ms"), "create": [manifest]})
        })
        .collect();
    let value = json!({
        "apiVersion": crate::timeline::API_VERSION,
        "kind": crate::timeline::TIMELINE_KIND,
        "metadata": {"name": "trace"},
        "events": events,
    });
    Ok(Document {
        raw: RawDocument {
            file,
            line: 1,
            api_version: crate::timeline::API_VERSION.into(),
            kind: crate::timeline::TIMELINE_KIND.into(),
            value,
            source_map,
        },
        object: Object::Extension,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_follow_rfc_4180_quoting() {
        assert_eq!(csv_fields("a,b,c").unwrap(), ["a", "b", "c"]);
        assert_eq!(
            csv_fields(r#"1,"{""kind"": ""Job""}",x"#).unwrap(),
            ["1", r#"{"kind": "Job"}"#, "x"]
        );
        assert!(csv_fields("\"open").is_err());
    }

    #[test]
    fn times_are_seconds_or_durations() {
        assert_eq!(time_millis("90"), Some(90_000));
        assert_eq!(time_millis("1.5"), Some(1500));
        assert_eq!(time_millis("2m"), Some(120_000));
        assert_eq!(time_millis("-1"), None);
    }
}
