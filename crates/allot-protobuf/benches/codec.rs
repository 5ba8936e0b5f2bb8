//! Protobuf against JSON for a running Pod (as kube-scheduler and the kubelet see one: labels,
//! owner, a container with resources and probes, volumes, a claim, status with conditions) and
//! a ResourceSlice of 8 GPUs (attributes, capacity): encoding an allot object and decoding it
//! back into one.
//!
//! What "JSON" is, both measured: `json` is serde_json straight to and from the typed object
//! (the fastest JSON there is for these types); `json via Value` is the way `allot serve`
//! handles JSON bodies: a response is the object rendered as a `serde_json::Value` (where older
//! versions are converted), then bytes; a request body is parsed into a `Value`, then decoded
//! into the typed object. Protobuf decoding is measured both ways: through serde
//! (`allot_protobuf::decode`) and with the kind's typed reader (`decode_typed`, field number by
//! field number into the struct); `to Value` is the first step of `allot serve`'s request path. Decoding is also measured without building the object (`no object`:
//! every value visited into `serde::de::IgnoredAny`), to tell the wire format's share from the
//! typed object's: allot-api keeps the fields it does not interpret as `serde_json::Value`s,
//! and building those costs the same whatever the wire format. `to JSON text` is the request
//! path of `allot serve`, which reads bodies as JSON text: protobuf through a `Value`, and
//! straight from the wire.

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

mod fixtures;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use fixtures::{pod, slice};

fn compare<T>(c: &mut Criterion, name: &str, api_version: &str, kind: &str, object: &T)
where
    T: serde::Serialize + allot_protobuf::Typed,
{
    let json = serde_json::to_vec(object).expect("json");
    let protobuf = allot_protobuf::encode(api_version, kind, object).expect("protobuf");
    println!(
        "{name}: {} bytes of JSON, {} bytes of protobuf",
        json.len(),
        protobuf.len()
    );
    let mut group = c.benchmark_group(format!("{name}/encode"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("json", |b| {
        b.iter(|| serde_json::to_vec(std::hint::black_box(object)).expect("json"))
    });
    group.bench_function("json via Value", |b| {
        b.iter(|| {
            let value = serde_json::to_value(std::hint::black_box(object)).expect("value");
            serde_json::to_vec(&value).expect("json")
        })
    });
    group.bench_function("protobuf", |b| {
        b.iter(|| {
            allot_protobuf::encode(api_version, kind, std::hint::black_box(object))
                .expect("protobuf")
        })
    });
    group.finish();
    let mut group = c.benchmark_group(format!("{name}/decode"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("json", |b| {
        b.iter(|| serde_json::from_slice::<T>(std::hint::black_box(&json)).expect("json"))
    });
    group.bench_function("json via Value", |b| {
        b.iter(|| {
            let value: serde_json::Value =
                serde_json::from_slice(std::hint::black_box(&json)).expect("json");
            serde_json::from_value::<T>(value).expect("typed")
        })
    });
    group.bench_function("protobuf", |b| {
        b.iter(|| allot_protobuf::decode::<T>(std::hint::black_box(&protobuf)).expect("protobuf"))
    });
    group.bench_function("protobuf, typed reader", |b| {
        b.iter(|| {
            allot_protobuf::decode_typed::<T>(std::hint::black_box(&protobuf)).expect("protobuf")
        })
    });
    // The wire formats alone: the bytes read and every value visited, no object built.
    group.bench_function("json, no object", |b| {
        b.iter(|| {
            serde_json::from_slice::<serde::de::IgnoredAny>(std::hint::black_box(&json))
                .expect("json")
        })
    });
    group.bench_function("protobuf, no object", |b| {
        b.iter(|| {
            allot_protobuf::decode::<serde::de::IgnoredAny>(std::hint::black_box(&protobuf))
                .expect("protobuf")
        })
    });
    group.finish();
    // allot serve reads a request body into a `Value` first (then admits it).
    let mut group = c.benchmark_group(format!("{name}/to Value"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("json", |b| {
        b.iter(|| {
            serde_json::from_slice::<serde_json::Value>(std::hint::black_box(&json)).expect("json")
        })
    });
    group.bench_function("protobuf", |b| {
        b.iter(|| {
            allot_protobuf::decode::<serde_json::Value>(std::hint::black_box(&protobuf))
                .expect("protobuf")
        })
    });
    group.bench_function("protobuf, typed reader", |b| {
        b.iter(|| {
            allot_protobuf::decode_typed::<serde_json::Value>(std::hint::black_box(&protobuf))
                .expect("protobuf")
        })
    });
    group.finish();
    // allot serve reads a protobuf request body as JSON text: through a `Value` (before), or
    // written straight from the wire (`decode_json`).
    let mut group = c.benchmark_group(format!("{name}/to JSON text"));
    group.throughput(Throughput::Elements(1));
    group.bench_function("protobuf via Value", |b| {
        b.iter(|| {
            let value: serde_json::Value =
                allot_protobuf::decode(std::hint::black_box(&protobuf)).expect("protobuf");
            serde_json::to_vec(&value).expect("json")
        })
    });
    group.bench_function("protobuf", |b| {
        b.iter(|| allot_protobuf::decode_json(std::hint::black_box(&protobuf)).expect("protobuf"))
    });
    group.finish();
}

fn bench(c: &mut Criterion) {
    compare(c, "pod", "v1", "Pod", &pod());
    compare(
        c,
        "resourceslice",
        "resource.k8s.io/v1",
        "ResourceSlice",
        &slice(),
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
