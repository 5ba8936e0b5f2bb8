//! Loading speed: parsing YAML with field lines, and strict decoding, on a large generated
//! ResourceSlice stream (64 slices x 64 devices with attributes and capacity).

use allot_api::load::{LoadOptions, decode_object, load_str, parse_str};
use criterion::{Criterion, criterion_group, criterion_main};

fn generated_slices() -> String {
    let mut out = String::new();
    for s in 0..64 {
        out.push_str(&format!(
            "apiVersion: resource.k8s.io/v1\nkind: ResourceSlice\nmetadata:\n  name: node-{s}-gpus\nspec:\n  driver: gpu.example.com\n  nodeName: node-{s}\n  pool:\n    name: node-{s}\n    generation: 1\n    resourceSliceCount: 1\n  devices:\n"
        ));
        for d in 0..64 {
            out.push_str(&format!(
                "  - name: gpu-{d}\n    attributes:\n      model:\n        string: A100\n      numa:\n        int: {}\n      driverVersion:\n        version: 1.2.3\n    capacity:\n      memory:\n        value: 80Gi\n",
                d % 4
            ));
        }
        out.push_str("---\n");
    }
    out
}

fn bench(c: &mut Criterion) {
    let text = generated_slices();
    let options = LoadOptions::default();
    c.bench_function("parse 64x64 slices", |b| {
        b.iter(|| {
            parse_str("bench.yaml", &text)
                .map(|d| d.len())
                .unwrap_or_default()
        })
    });
    c.bench_function("saphyr to json without lines", |b| {
        b.iter(|| {
            serde_saphyr::from_multiple::<serde_json::Value>(&text)
                .map(|d| d.len())
                .unwrap_or_default()
        })
    });
    let raws = parse_str("bench.yaml", &text).unwrap_or_default();
    c.bench_function("decode 64x64 slices", |b| {
        b.iter(|| {
            raws.iter()
                .filter(|raw| decode_object(raw, &options).is_ok())
                .count()
        })
    });
    c.bench_function("load 64x64 slices", |b| {
        b.iter(|| load_str("bench.yaml", &text, &options).documents.len())
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
