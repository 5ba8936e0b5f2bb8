//! Every resource.k8s.io/v1 document in the DRA conformance data decodes into the v1 types and
//! serialises back to the same JSON.

use allot_api::resource::v1::{DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice};

/// Removes `null` members: Go writes `"requests": null` for a nil slice, we omit it.
fn strip_nulls(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.retain(|_, v| !v.is_null());
            map.values_mut().for_each(strip_nulls);
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(strip_nulls),
        _ => {}
    }
}

fn roundtrip<T: serde::de::DeserializeOwned + serde::Serialize>(
    mut value: serde_json::Value,
) -> Result<(), String> {
    strip_nulls(&mut value);
    let typed: T = serde_json::from_value(value.clone()).map_err(|e| e.to_string())?;
    let back = serde_json::to_value(&typed).map_err(|e| e.to_string())?;
    if back != value {
        return Err(format!("round trip differs:\n{value}\n{back}"));
    }
    Ok(())
}

#[test]
fn conformance_dra_documents_decode() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/conformance/dra");
    let mut failures = Vec::new();
    let mut count = 0;
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.extension().and_then(|e| e.to_str()) != Some("yaml") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let docs: Vec<serde_json::Value> = serde_saphyr::from_multiple_with_options(
            &text,
            serde_saphyr::options! { strict_booleans: true },
        )
        .unwrap();
        for doc in docs {
            let kind = doc["kind"].as_str().unwrap_or_default().to_string();
            let result = match kind.as_str() {
                "ResourceSlice" => roundtrip::<ResourceSlice>(doc),
                "ResourceClaim" => roundtrip::<ResourceClaim>(doc),
                "DeviceClass" => roundtrip::<DeviceClass>(doc),
                "DeviceTaintRule" => roundtrip::<DeviceTaintRule>(doc),
                _ => continue,
            };
            count += 1;
            if let Err(err) = result {
                failures.push(format!("{}: {kind}: {err}", path.display()));
            }
        }
    }
    eprintln!("{count} documents");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
