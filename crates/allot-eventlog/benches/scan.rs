//! Reading a log of 10,000 records (~4 MB, records shaped like `allot serve`'s: a pod as JSON):
//! checksummed, and the same records as version 1 lines without checksums, so the difference
//! is what verifying the checksums costs. The callback does nothing: JSON decoding, the larger
//! cost of a real replay, is left out to show the checksum's share alone.

use allot_eventlog::{HEADER, encode, scan};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn record(rv: usize) -> String {
    format!(
        r#"{{"rv":{rv},"type":"ADDED","object":{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"worker-{rv}","namespace":"team","uid":"0f0e0d0c-0b0a-4908-8706-{rv:012}","resourceVersion":"{rv}","creationTimestamp":"2026-01-01T00:00:00Z","labels":{{"app":"trainer"}}}},"spec":{{"containers":[{{"name":"app","image":"registry.example.com/trainer:1.2.3","resources":{{"requests":{{"cpu":"2","memory":"8Gi"}},"claims":[{{"name":"gpu"}}]}}}}],"resourceClaims":[{{"name":"gpu","resourceClaimTemplateName":"one-gpu"}}],"schedulerName":"default-scheduler","restartPolicy":"Always"}},"status":{{"phase":"Pending"}}}}}}"#
    )
}

fn bench(c: &mut Criterion) {
    let records: Vec<String> = (1..=10_000).map(record).collect();
    let mut checksummed = HEADER.to_vec();
    let mut legacy = Vec::new();
    for r in &records {
        encode(r.as_bytes(), &mut checksummed).expect("encodes");
        legacy.extend_from_slice(r.as_bytes());
        legacy.push(b'\n');
    }
    let mut group = c.benchmark_group("scan");
    group.throughput(Throughput::Bytes(checksummed.len() as u64));
    group.bench_function("checksummed", |b| {
        b.iter(|| scan(&checksummed[..], |_, _| Ok::<(), ()>(())).expect("reads"))
    });
    group.throughput(Throughput::Bytes(legacy.len() as u64));
    group.bench_function("version 1, no checksums", |b| {
        b.iter(|| scan(&legacy[..], |_, _| Ok::<(), ()>(())).expect("reads"))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
