//! Every CEL expression in the vendored DRA conformance scenarios (tests/conformance/dra*/)
//! compiles (or fails as the scenario expects) and evaluates on every device of its scenario
//! without errors other than upstream's runtime "no such key" errors.

use allot_cel::{AttributeValue, CelDevice, CelError, compile};
use allot_quantity::Quantity;
use serde_json::Value;
use std::path::Path;

const CONFORMANCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance");

/// Collects every `expression` string in a YAML value.
fn expressions(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                match (k.as_str(), v) {
                    ("expression", Value::String(s)) => out.push(s.clone()),
                    _ => expressions(v, out),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| expressions(i, out)),
        _ => {}
    }
}

fn attribute_value(v: &Value) -> Option<AttributeValue> {
    let obj = v.as_object()?;
    let strings = |v: &Value| -> Option<Vec<String>> {
        v.as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_string))
            .collect()
    };
    if let Some(i) = obj.get("int").and_then(Value::as_i64) {
        return Some(AttributeValue::Int(i));
    }
    if let Some(b) = obj.get("bool").and_then(Value::as_bool) {
        return Some(AttributeValue::Bool(b));
    }
    if let Some(s) = obj.get("string").and_then(Value::as_str) {
        return Some(AttributeValue::String(s.to_string()));
    }
    if let Some(s) = obj.get("version").and_then(Value::as_str) {
        return Some(AttributeValue::Version(s.to_string()));
    }
    if let Some(l) = obj.get("ints").and_then(Value::as_array) {
        return Some(AttributeValue::IntList(
            l.iter().filter_map(Value::as_i64).collect(),
        ));
    }
    if let Some(l) = obj.get("bools").and_then(Value::as_array) {
        return Some(AttributeValue::BoolList(
            l.iter().filter_map(Value::as_bool).collect(),
        ));
    }
    if let Some(l) = obj.get("strings") {
        return strings(l).map(AttributeValue::StringList);
    }
    if let Some(l) = obj.get("versions") {
        return strings(l).map(AttributeValue::VersionList);
    }
    None
}

/// The devices of every ResourceSlice in a scenario. Attributes without a value are skipped:
/// the allocator reports those itself ("unsupported attribute value").
fn devices(docs: &[Value]) -> Vec<(String, CelDevice)> {
    let mut out = Vec::new();
    for doc in docs {
        if doc.get("kind").and_then(Value::as_str) != Some("ResourceSlice") {
            continue;
        }
        let spec = &doc["spec"];
        let driver = spec["driver"].as_str().unwrap_or_default();
        for d in spec["devices"].as_array().into_iter().flatten() {
            let allow = d["allowMultipleAllocations"].as_bool().unwrap_or(false);
            let mut device = CelDevice::new(driver, allow);
            for (name, v) in d["attributes"].as_object().into_iter().flatten() {
                if let Some(value) = attribute_value(v) {
                    device = device.attribute(name, value);
                }
            }
            for (name, c) in d["capacity"].as_object().into_iter().flatten() {
                let text = match &c["value"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                if let Ok(q) = text.parse::<Quantity>() {
                    device = device.capacity(name, q);
                }
            }
            let name = d["name"].as_str().unwrap_or_default();
            out.push((format!("{driver}/{name}"), device));
        }
    }
    out
}

#[test]
fn conformance_expressions_compile_and_evaluate() {
    let mut files = Vec::new();
    for dir in ["dra", "dra-random"] {
        let path = Path::new(CONFORMANCE).join(dir);
        for entry in std::fs::read_dir(&path).expect("conformance folder") {
            let p = entry.expect("entry").path();
            if p.extension().is_some_and(|e| e == "yaml") {
                files.push(p);
            }
        }
    }
    files.sort();
    let (mut compiled, mut evaluations, mut matches) = (0, 0, 0);
    let mut failures = Vec::new();
    for file in &files {
        let name = file
            .file_name()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        let text = std::fs::read_to_string(file).expect("read scenario");
        let docs: Vec<Value> = match serde_saphyr::from_multiple(&text) {
            Ok(d) => d,
            Err(e) => {
                failures.push(format!("{name}: YAML: {e}"));
                continue;
            }
        };
        let mut exprs = Vec::new();
        docs.iter().for_each(|d| expressions(d, &mut exprs));
        let devices = devices(&docs);
        for expr in exprs {
            match compile(&expr) {
                Err(CelError::UndeclaredReference { name: n, .. })
                    if expr == "noSuchVar" && n == "noSuchVar" => {}
                Err(e) => failures.push(format!("{name}: {expr:?}: {e}")),
                Ok(_) if expr == "noSuchVar" => failures.push(format!("{name}: {expr:?} compiled")),
                Ok(program) => {
                    compiled += 1;
                    for (dev_name, device) in &devices {
                        evaluations += 1;
                        let reference = program.evaluate_interpreted(device);
                        if program.evaluate(device) != reference {
                            failures.push(format!(
                                "{name}: {expr:?} on {dev_name}: fast path {:?}, interpreter {reference:?}",
                                program.evaluate(device)
                            ));
                        }
                        match reference {
                            Ok(true) => matches += 1,
                            Ok(false) | Err(CelError::NoSuchKey { .. }) => {}
                            Err(e) => failures.push(format!("{name}: {expr:?} on {dev_name}: {e}")),
                        }
                    }
                }
            }
        }
    }
    eprintln!(
        "{} files, {compiled} expressions compiled, {evaluations} evaluations ({matches} matches), {} failures",
        files.len(),
        failures.len()
    );
    assert!(compiled > 500, "only {compiled} expressions found");
    assert!(
        matches > 0 && matches < evaluations,
        "{matches}/{evaluations} matched"
    );
    assert!(
        failures.is_empty(),
        "{} files, {compiled} expressions compiled, {evaluations} evaluations ({matches} matches); {} failures:\n{}",
        files.len(),
        failures.len(),
        failures.join("\n")
    );
}
