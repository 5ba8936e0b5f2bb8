//! Every DRA conformance scenario loads strictly (the allot.dev `Expected` documents are
//! registered as an extension kind), and every resource.k8s.io document serialises back to the
//! JSON it was read from.

use allot_api::load::{LoadOptions, Object, load};

/// Removes `null` and empty-object members: Go writes `"requests": null` for a nil slice and
/// `"status": {}` for an empty struct; inputs differ in whether they spell these out.
fn strip_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.values_mut().for_each(strip_nulls);
            map.retain(|_, v| !v.is_null() && v.as_object().is_none_or(|o| !o.is_empty()));
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn reserialised(object: &Object) -> Option<serde_json::Value> {
    let value = match object {
        Object::DeviceClass(o) => serde_json::to_value(o),
        Object::ResourceClaim(o) => serde_json::to_value(o),
        Object::ResourceSlice(o) => serde_json::to_value(o),
        Object::DeviceTaintRule(o) => serde_json::to_value(o),
        _ => return None,
    };
    value.ok()
}

fn check_folder(folder: &str) -> (usize, Vec<String>) {
    let dir = format!(
        "{}/../../tests/conformance/{folder}",
        env!("CARGO_MANIFEST_DIR")
    );
    let options = LoadOptions::default().with_kind("allot.dev/v1alpha1", "Expected");
    let loaded = load(&[dir], &options);
    let mut failures: Vec<String> = loaded.errors.iter().map(ToString::to_string).collect();
    for document in &loaded.documents {
        if let Some(mut back) = reserialised(&document.object) {
            strip_nulls(&mut back);
            let mut original = document.raw.value.clone();
            strip_nulls(&mut original);
            if back != original {
                failures.push(format!(
                    "{}:{}: {} does not round-trip",
                    document.raw.file, document.raw.line, document.raw.kind
                ));
            }
        }
    }
    (loaded.documents.len(), failures)
}

#[test]
fn dra_conformance_scenarios_load() {
    let mut failures = Vec::new();
    let mut total = 0;
    for folder in ["dra", "dra-random"] {
        let (count, folder_failures) = check_folder(folder);
        eprintln!(
            "{folder}: {count} documents, {} failures",
            folder_failures.len()
        );
        assert!(count > 0, "no documents found in {folder}");
        total += count;
        failures.extend(folder_failures);
    }
    eprintln!("{total} documents loaded");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
