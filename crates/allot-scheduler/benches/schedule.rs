//! Scheduling throughput on a generated cluster: N nodes with 8 GPUs each, pods that each have
//! one claim from a template (the claim controller's work done up front), one GPU per claim.
//!
//! `ALLOT_BENCH_FULL=1` adds the full size (5,000 nodes, 50,000 pods).

use std::hint::black_box;

use allot_api::Quantity;
use allot_api::core::v1::{
    Container, Node, Pod, PodResourceClaim, PodResourceClaimStatus, ResourceRequirements,
};
use allot_api::meta::v1::OwnerReference;
use allot_api::resource::v1::{
    CelDeviceSelector, Device, DeviceClaim, DeviceClass, DeviceRequest, DeviceSelector,
    ExactDeviceRequest, ResourceClaim, ResourcePool, ResourceSlice,
};
use allot_runtime::{Runtime, SimTime};
use allot_scheduler::{Scheduler, SchedulerConfig};
use allot_store::Store;
use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};

const DEVICES_PER_NODE: usize = 8;

fn cluster(nodes: usize, pods: usize) -> Store {
    let now = SimTime::ZERO.rfc3339();
    let mut store = Store::new();
    let mut class = DeviceClass::default();
    class.metadata.name = "gpu".into();
    class.spec.selectors = vec![DeviceSelector {
        cel: Some(CelDeviceSelector {
            expression: "device.driver == \"gpu.example.com\"".into(),
        }),
    }];
    store.create(class, &now).expect("class");
    for n in 0..nodes {
        let name = format!("node-{n:05}");
        let mut node = Node::default();
        node.metadata.name = name.clone();
        for (k, v) in [("cpu", "64"), ("memory", "512Gi"), ("pods", "110")] {
            node.status
                .allocatable
                .insert(k.into(), Quantity::parse(v).expect("quantity"));
        }
        store.create(node, &now).expect("node");
        let mut slice = ResourceSlice::default();
        slice.metadata.name = format!("{name}-gpus");
        slice.spec.driver = "gpu.example.com".into();
        slice.spec.node_name = Some(name.clone());
        slice.spec.pool = ResourcePool {
            name: name.clone(),
            generation: 1,
            resource_slice_count: 1,
        };
        slice.spec.devices = (0..DEVICES_PER_NODE)
            .map(|d| Device {
                name: format!("gpu-{d}"),
                ..Default::default()
            })
            .collect();
        store.create(slice, &now).expect("slice");
    }
    for p in 0..pods {
        let name = format!("pod-{p:06}");
        let mut pod = Pod::default();
        pod.metadata.name = name.clone();
        pod.metadata.namespace = "default".into();
        let mut requests = allot_api::core::v1::ResourceList::new();
        requests.insert("cpu".into(), Quantity::parse("500m").expect("quantity"));
        requests.insert("memory".into(), Quantity::parse("1Gi").expect("quantity"));
        pod.spec.containers = vec![Container {
            name: "c".into(),
            resources: Some(ResourceRequirements {
                requests,
                ..Default::default()
            }),
            ..Default::default()
        }];
        pod.spec.resource_claims = vec![PodResourceClaim {
            name: "gpu".into(),
            resource_claim_name: None,
            resource_claim_template_name: Some("gpu".into()),
        }];
        let claim_name = format!("{name}-gpu-bench");
        pod.status.resource_claim_statuses = vec![PodResourceClaimStatus {
            name: "gpu".into(),
            resource_claim_name: Some(claim_name.clone()),
        }];
        let pod = store.create(pod, &now).expect("pod");
        let mut claim = ResourceClaim::default();
        claim.metadata.name = claim_name;
        claim.metadata.namespace = "default".into();
        claim.metadata.owner_references = vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Pod".into(),
            name: name.clone(),
            uid: pod.metadata.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }];
        claim.spec.devices = DeviceClaim {
            requests: vec![DeviceRequest {
                name: "gpu".into(),
                exactly: Some(ExactDeviceRequest {
                    device_class_name: "gpu".into(),
                    count: Some(1),
                    ..Default::default()
                }),
                ..Default::default()
            }],
            ..Default::default()
        };
        store.create(claim, &now).expect("claim");
    }
    store
}

fn run(store: Store) -> usize {
    let mut rt = Runtime::new(
        store,
        vec![Box::new(Scheduler::new(SchedulerConfig::default()))],
        SimTime::ZERO,
    );
    rt.run_until_idle(SimTime::ZERO.plus_seconds(3600), u64::MAX)
        .expect("run");
    rt.store
        .list::<Pod>()
        .filter(|p| p.spec.node_name.is_some())
        .count()
}

fn bench(c: &mut Criterion) {
    let mut sizes = vec![(500usize, 5_000usize)];
    if std::env::var_os("ALLOT_BENCH_FULL").is_some() {
        sizes.push((5_000, 50_000));
    }
    let mut group = c.benchmark_group("schedule");
    group.sample_size(10);
    for (nodes, pods) in sizes {
        let template = cluster(nodes, pods);
        let bound = run(template.clone());
        eprintln!("{nodes} nodes x {DEVICES_PER_NODE} devices, {pods} pods: {bound} bound");
        group.throughput(Throughput::Elements(pods as u64));
        group.bench_function(format!("{nodes}nodes-{pods}pods"), |b| {
            b.iter_batched(
                || template.clone(),
                |store| black_box(run(store)),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
