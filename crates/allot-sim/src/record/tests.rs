//! Properties of a run's record over generated Jobs and a Deployment on small GPU clusters: no
//! pod is lost silently, and what a pod holds is freed exactly when it finishes.

use std::collections::BTreeSet;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::ResourceClaim;
use proptest::prelude::*;

/// One Job: completions, parallelism, GPUs per pod, minutes each pod runs, exit code.
#[derive(Debug, Clone)]
struct JobSpec {
    completions: u32,
    parallelism: u32,
    gpus: u32,
    minutes: u32,
    exit_code: i32,
}

fn cluster(nodes: u32, gpus: u32) -> String {
    let mut out = String::from(
        "apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors:
  - cel: {expression: device.driver == \"gpu.example.com\"}
",
    );
    for n in 0..nodes {
        out.push_str(&format!(
            "---
apiVersion: v1
kind: Node
metadata:
  name: node-{n}
  labels: {{kubernetes.io/hostname: node-{n}}}
status:
  capacity: {{cpu: \"8\", memory: 16Gi, pods: \"110\"}}
  allocatable: {{cpu: \"8\", memory: 16Gi, pods: \"110\"}}
---
apiVersion: resource.k8s.io/v1
kind: ResourceSlice
metadata: {{name: node-{n}-gpus}}
spec:
  driver: gpu.example.com
  nodeName: node-{n}
  pool: {{name: node-{n}, generation: 1, resourceSliceCount: 1}}
  devices:
"
        ));
        for g in 0..gpus {
            out.push_str(&format!("  - {{name: gpu-{g}}}\n"));
        }
    }
    for count in 1..=2 {
        out.push_str(&format!(
            "---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {{name: gpus-{count}, namespace: default}}
spec:
  spec:
    devices:
      requests:
      - name: gpu
        exactly: {{deviceClassName: gpu.example.com, allocationMode: ExactCount, count: {count}}}
"
        ));
    }
    out
}

fn template(app: &str, gpus: u32, minutes: u32, exit_code: i32, restart: &str) -> String {
    let claims = if gpus == 0 {
        String::new()
    } else {
        format!(
            "
          claims: [{{name: gpu}}]
      resourceClaims:
      - {{name: gpu, resourceClaimTemplateName: gpus-{gpus}}}"
        )
    };
    format!(
        "  template:
    metadata:
      labels: {{app: {app}}}
      annotations: {{allot.dev/run-duration: {minutes}m, allot.dev/exit-code: \"{exit_code}\"}}
    spec:
      restartPolicy: {restart}
      containers:
      - name: main
        image: registry.example.com/main:1
        resources:
          requests: {{cpu: 100m}}{claims}
"
    )
}

fn job(i: usize, j: &JobSpec) -> String {
    format!(
        "---
apiVersion: batch/v1
kind: Job
metadata: {{name: job-{i}, namespace: default}}
spec:
  completions: {}
  parallelism: {}
  backoffLimit: 1
{}",
        j.completions,
        j.parallelism,
        template(&format!("job-{i}"), j.gpus, j.minutes, j.exit_code, "Never")
    )
}

/// A Deployment whose pods run until it is deleted at `delete_at` minutes; the clock runs 3h.
fn deployment(replicas: u32, gpus: u32, delete_at: u32) -> String {
    format!(
        "---
apiVersion: apps/v1
kind: Deployment
metadata: {{name: web, namespace: default}}
spec:
  replicas: {replicas}
  selector: {{matchLabels: {{app: web}}}}
{}---
apiVersion: allot.dev/v1alpha1
kind: Timeline
metadata: {{name: end}}
events:
- at: {delete_at}m
  delete:
  - {{kind: Deployment, namespace: default, name: web}}
- at: 3h
",
        template("web", gpus, 100_000, 0, "Always")
    )
}

fn job_spec() -> impl Strategy<Value = JobSpec> {
    (
        1u32..4,
        1u32..3,
        0u32..3,
        1u32..30,
        prop_oneof![3 => Just(0), 1 => Just(1)],
    )
        .prop_map(
            |(completions, parallelism, gpus, minutes, exit_code)| JobSpec {
                completions,
                parallelism,
                gpus,
                minutes,
                exit_code,
            },
        )
}

/// The devices (`driver/pool/device`) allocated to the claims of running pods.
fn devices_of_running_pods(store: &allot_store::Store) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for pod in store.list::<Pod>() {
        if pod.status.phase.as_deref() != Some("Running") {
            continue;
        }
        for (_, name) in crate::output::pod_claims(pod) {
            let Some(claim) = store.get::<ResourceClaim>(&pod.metadata.namespace, &name) else {
                continue;
            };
            for r in claim
                .status
                .allocation
                .iter()
                .flat_map(|a| &a.devices.results)
            {
                out.insert(format!("{}/{}/{}", r.driver, r.pool, r.device));
            }
        }
    }
    out
}

fn run(text: &str) -> crate::Outcome {
    let input = crate::input::load_texts(&[("gen.yaml", text)]).expect("loads");
    crate::run(&input, &mut |_| {}).expect("runs")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    #[test]
    fn no_pod_is_lost_and_resources_are_freed_when_pods_finish(
        nodes in 1u32..3,
        gpus in 1u32..4,
        jobs in prop::collection::vec(job_spec(), 1..4),
        replicas in 0u32..3,
        deployment_gpus in 0u32..2,
        delete_at in 1u32..60,
    ) {
        let mut text = cluster(nodes, gpus);
        for (i, j) in jobs.iter().enumerate() {
            text.push_str(&job(i, j));
        }
        text.push_str(&deployment(replicas, deployment_gpus, delete_at));
        let outcome = run(&text);
        let store = &outcome.store;
        let report = &outcome.report;

        // No pod is lost silently: every pod a controller created is in the report, still in
        // the store with the phase the report gives, or marked deleted with its time.
        let created = report
            .events
            .iter()
            .filter(|e| e.reason == "SuccessfulCreate" && e.message.starts_with("Created pod: "))
            .count();
        prop_assert_eq!(created, report.pods.len());
        for p in &report.pods {
            let pod = store.get::<Pod>(&p.namespace, &p.name);
            prop_assert!(
                pod.is_some() != p.deleted.is_some(),
                "{}/{}: exists {} deleted {:?}", p.namespace, p.name, pod.is_some(), p.deleted
            );
            if let Some(pod) = pod {
                let phase = pod.status.phase.clone().unwrap_or_else(|| "Pending".into());
                prop_assert_eq!(&phase, &p.phase);
            }
        }
        // Every Job that fits ended (the clock ran 3h, far past its pods' durations).
        for (i, j) in jobs.iter().enumerate() {
            let job = store
                .get::<allot_api::batch::v1::Job>("default", &format!("job-{i}"))
                .expect("job");
            let conditions: Vec<&str> = job
                .status
                .conditions
                .iter()
                .filter(|c| c.status == "True")
                .map(|c| c.type_.as_str())
                .collect();
            if j.gpus > gpus {
                continue;
            }
            if j.exit_code == 0 {
                prop_assert!(conditions.contains(&"Complete"), "job-{} {:?}", i, conditions);
                prop_assert_eq!(job.status.succeeded, j.completions as i32);
            } else {
                prop_assert!(conditions.contains(&"Failed"), "job-{} {:?}", i, conditions);
            }
        }

        // Resources are freed exactly when a pod finishes: the record's count of devices in
        // use at the end is what running pods hold, no finished pod holds a claim, and a pod
        // that waited was placed when another pod ended, or when its queue backoff (at most
        // 10 s, kube-scheduler's podMaxBackoffSeconds) after such an end was over.
        let held = devices_of_running_pods(store);
        let counted: i64 = report.devices_in_use.values().sum();
        prop_assert_eq!(counted, held.len() as i64);
        for claim in store.list::<ResourceClaim>() {
            for consumer in &claim.status.reserved_for {
                let pod = store.get::<Pod>(&claim.metadata.namespace, &consumer.name);
                let phase = pod.and_then(|p| p.status.phase.clone()).unwrap_or_default();
                prop_assert!(
                    !matches!(phase.as_str(), "Succeeded" | "Failed"),
                    "{} reserved for {} ({})", claim.metadata.name, consumer.name, phase
                );
            }
        }
        let ends: BTreeSet<u64> = report
            .pods
            .iter()
            .filter_map(|p| p.finished.or(p.deleted))
            .collect();
        for p in &report.pods {
            if let (Some(created), Some(scheduled)) = (p.created, p.scheduled)
                && scheduled > created
            {
                prop_assert!(
                    ends.range(scheduled.saturating_sub(10_000)..=scheduled).next().is_some(),
                    "{} waited from {} to {}; pods ended at {:?}", p.name, created, scheduled, ends
                );
            }
        }
        let violations = crate::invariants::check_invariants(store);
        prop_assert!(violations.is_empty(), "{:?}", violations);
    }
}
