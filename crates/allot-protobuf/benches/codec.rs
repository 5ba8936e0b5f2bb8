//! Protobuf against JSON for a running Pod (as kube-scheduler and the kubelet see one: labels,
//! owner, a container with resources and probes, volumes, a claim, status with conditions) and
//! a ResourceSlice of 8 GPUs (attributes, capacity): encoding an allot object and decoding it
//! back into one.
//!
//! What "JSON" is, both measured: `json` is serde_json straight to and from the typed object
//! (the fastest JSON there is for these types); `json via Value` is the way `allot serve`
//! handles JSON bodies: a response is the object rendered as a `serde_json::Value` (where older
//! versions are converted), then bytes; a request body is parsed into a `Value`, then decoded
//! into the typed object. Decoding is also measured without building the object (`no object`:
//! every value visited into `serde::de::IgnoredAny`), to tell the wire format's share from the
//! typed object's: allot-api keeps the fields it does not interpret as `serde_json::Value`s,
//! and building those costs the same whatever the wire format.

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::ResourceSlice;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::json;

fn pod() -> Pod {
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "trainer-7d9f8c6b5-x2k4p", "generateName": "trainer-7d9f8c6b5-",
            "namespace": "team-a", "uid": "0f0e0d0c-0b0a-4908-8706-050403020100",
            "resourceVersion": "123456", "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"app": "trainer", "pod-template-hash": "7d9f8c6b5", "team": "a"},
            "annotations": {"example.com/owner": "ml-platform"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": "trainer-7d9f8c6b5", "uid": "0a0b0c0d-0e0f-4a4b-8c8d-0e0f00010203",
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {
            "containers": [{"name": "app", "image": "registry.example.com/trainer:1.2.3",
                "command": ["python", "-m", "train"], "args": ["--epochs", "10"],
                "env": [{"name": "RANK", "value": "0"}, {"name": "POD_NAME",
                    "valueFrom": {"fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
                "resources": {"requests": {"cpu": "2", "memory": "8Gi"},
                    "limits": {"cpu": "4", "memory": "8Gi"}, "claims": [{"name": "gpu"}]},
                "readinessProbe": {"httpGet": {"path": "/ready", "port": 8080, "scheme": "HTTP"},
                    "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
                "volumeMounts": [{"name": "data", "mountPath": "/data"}],
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "IfNotPresent"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "nodeName": "node-17", "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists",
                "effect": "NoExecute", "tolerationSeconds": 300}],
            "priority": 0, "enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority"},
        "status": {"phase": "Running", "hostIP": "10.0.0.17", "podIP": "10.244.3.9",
            "startTime": "2026-01-01T00:00:02Z", "qosClass": "Burstable",
            "conditions": [
                {"type": "PodScheduled", "status": "True", "lastTransitionTime": "2026-01-01T00:00:01Z"},
                {"type": "Initialized", "status": "True", "lastTransitionTime": "2026-01-01T00:00:02Z"},
                {"type": "ContainersReady", "status": "True", "lastTransitionTime": "2026-01-01T00:00:09Z"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:09Z"}],
            "containerStatuses": [{"name": "app", "ready": true, "restartCount": 0, "started": true,
                "image": "registry.example.com/trainer:1.2.3",
                "imageID": "registry.example.com/trainer@sha256:0123456789abcdef",
                "containerID": "containerd://0123456789abcdef",
                "state": {"running": {"startedAt": "2026-01-01T00:00:05Z"}}}],
            "resourceClaimStatuses": [{"name": "gpu", "resourceClaimName": "trainer-7d9f8c6b5-x2k4p-gpu-abcde"}]}
    }))
    .expect("a pod")
}

fn slice() -> ResourceSlice {
    let devices: Vec<_> = (0..8)
        .map(|i| {
            json!({"name": format!("gpu-{i}"),
                "attributes": {
                    "model": {"string": "A100"}, "driverVersion": {"version": "1.2.3"},
                    "numa": {"int": i / 4}, "index": {"int": i},
                    "uuid": {"string": format!("GPU-0f0e0d0c-0b0a-4908-8706-0504030201{i:02}")},
                    "gpu.example.com/mig-capable": {"bool": true}},
                "capacity": {"memory": {"value": "80Gi"}, "sms": {"value": "108"}}})
        })
        .collect();
    serde_json::from_value(json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
        "metadata": {"name": "node-17-gpu.example.com-x7k2q", "uid": "1f0e0d0c-0b0a-4908-8706-050403020100",
            "resourceVersion": "4242", "creationTimestamp": "2026-01-01T00:00:00Z",
            "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-17",
                "uid": "2f0e0d0c-0b0a-4908-8706-050403020100", "controller": true}]},
        "spec": {"driver": "gpu.example.com", "nodeName": "node-17",
            "pool": {"name": "node-17", "generation": 1, "resourceSliceCount": 1},
            "devices": devices}
    }))
    .expect("a slice")
}

fn compare<T>(c: &mut Criterion, name: &str, api_version: &str, kind: &str, object: &T)
where
    T: serde::Serialize + serde::de::DeserializeOwned,
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
