//! Evaluation throughput: the allocator evaluates selectors on every candidate device.

use allot_cel::{AttributeValue, CelDevice, compile};
use allot_quantity::Quantity;
use criterion::{Criterion, criterion_group, criterion_main};
use std::hint::black_box;

fn device(i: i64) -> CelDevice {
    let mut d = CelDevice::new("x", false)
        .attribute(
            "model",
            AttributeValue::String(if i % 2 == 0 { "a" } else { "b" }.into()),
        )
        .attribute("numa", AttributeValue::Int(i % 4))
        .attribute("driverVersion", AttributeValue::Version("1.2.3".into()));
    for k in 0..8 {
        d = d.attribute(&format!("attr{k}"), AttributeValue::Int(k));
    }
    let memory: Quantity = "40Gi".parse().unwrap_or_default();
    d.capacity("memory", memory)
}

fn bench(c: &mut Criterion) {
    let devices: Vec<CelDevice> = (0..64).map(device).collect();
    // A constant pattern of 500 alternatives: compiled once per expression, not per device.
    let alternatives = (0..500)
        .map(|i| format!("m{i}"))
        .collect::<Vec<_>>()
        .join("|");
    let regex = format!(r#"device.attributes["x"].model.matches("^({alternatives})$")"#);
    let cases = [
        (
            "driver_and_model",
            r#"device.driver == "x" && device.attributes["x"].model == "a""#,
        ),
        (
            "capacity_compare",
            r#"device.capacity["x"].memory.compareTo(quantity("16Gi")) >= 0"#,
        ),
        (
            "semver_greater",
            r#"device.attributes["x"].driverVersion.isGreaterThan(semver("1.1.0"))"#,
        ),
        ("constant_true", "true"),
        ("driver_only", r#"device.driver == "x""#),
        ("regex_500_alternatives", regex.as_str()),
        (
            "string_functions",
            r#"device.attributes["x"].model.startsWith("a") || device.attributes["x"].model.size() > 3"#,
        ),
        (
            "exists_over_attributes",
            r#"device.attributes["x"].exists(name, name.startsWith("attr") && device.attributes["x"][name] > 6)"#,
        ),
        (
            "map_filter",
            r#"[1, 2, 3, 4, 5, 6, 7, 8].map(i, i * device.attributes["x"].numa).filter(v, v > 8).size() > 2"#,
        ),
    ];
    for (name, expr) in cases {
        let Ok(program) = compile(expr) else {
            continue;
        };
        c.bench_function(&format!("evaluate/{name}"), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % devices.len();
                black_box(program.evaluate(black_box(&devices[i])).ok())
            })
        });
        c.bench_function(&format!("interpreted/{name}"), |b| {
            let mut i = 0;
            b.iter(|| {
                i = (i + 1) % devices.len();
                black_box(program.evaluate_interpreted(black_box(&devices[i])).ok())
            })
        });
    }
    c.bench_function("compile/driver_and_model", |b| {
        b.iter(|| black_box(compile(black_box(cases[0].1)).is_ok()))
    });
    c.bench_function("build_device/12_attributes", |b| {
        b.iter(|| black_box(device(black_box(3))))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
