use super::*;
use crate::testkit::{FakeKubelet, events_of, pod_names, runtime, settle, store_from};

fn job(extra: &str, annotations: &str) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: default}}
spec:
{extra}
  template:
    metadata:
      annotations: {{{annotations}}}
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: trainer}}]
"#
    )
}

fn run(yaml: &str) -> allot_runtime::Runtime {
    let mut rt = runtime(
        store_from(yaml),
        vec![
            Box::new(JobController::new()),
            Box::new(FakeKubelet::new()),
            Box::new(crate::GarbageCollector::new()),
        ],
    );
    settle(&mut rt);
    rt
}

fn conditions(job: &Job) -> Vec<(String, String, String)> {
    job.status
        .conditions
        .iter()
        .map(|c| (c.type_.clone(), c.reason.clone(), c.message.clone()))
        .collect()
}

#[test]
fn completions_and_parallelism_count_to_complete() {
    let rt = run(&job(
        "  completions: 5\n  parallelism: 2",
        "allot.dev/run-duration: \"60\"",
    ));
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert_eq!(
        (j.status.succeeded, j.status.failed, j.status.active),
        (5, 0, 0)
    );
    assert_eq!(
        conditions(j),
        [
            (
                "SuccessCriteriaMet".into(),
                "CompletionsReached".into(),
                "Reached expected number of succeeded pods".into()
            ),
            (
                "Complete".into(),
                "CompletionsReached".into(),
                "Reached expected number of succeeded pods".into()
            ),
        ]
    );
    // Two at a time, each a minute: three waves.
    assert_eq!(
        j.status.completion_time.as_deref(),
        Some("2026-01-01T00:03:00Z")
    );
    assert_eq!(j.status.uncounted_terminated_pods, Some(Default::default()));
    let pods = pod_names(&rt.store, "default");
    assert_eq!(pods.len(), 5);
    for name in &pods {
        let pod = rt.store.get::<Pod>("default", name).unwrap();
        assert!(name.starts_with("train-"));
        assert!(
            pod.metadata.finalizers.is_empty(),
            "finalizer removed once counted"
        );
        assert_eq!(pod.metadata.labels["batch.kubernetes.io/job-name"], "train");
    }
    let events = events_of(&rt.store, "Job", "train");
    assert_eq!(
        events.iter().filter(|e| e.0 == "SuccessfulCreate").count(),
        5
    );
    assert_eq!(
        events.last().unwrap(),
        &("Completed".to_string(), "Job completed".to_string())
    );
}

#[test]
fn failures_beyond_the_backoff_limit_fail_the_job() {
    let rt = run(&job(
        "  backoffLimit: 2",
        "allot.dev/run-duration: \"30\", allot.dev/exit-code: \"1\"",
    ));
    let j = rt.store.get::<Job>("default", "train").unwrap();
    // The limit is exceeded with the third failure.
    assert_eq!((j.status.succeeded, j.status.failed), (0, 3));
    let c = conditions(j);
    assert_eq!(c[0].0, "FailureTarget");
    assert_eq!(c[1].0, "Failed");
    assert_eq!(c[1].1, "BackoffLimitExceeded");
    assert_eq!(c[1].2, "Job has reached the specified backoff limit");
    let events = events_of(&rt.store, "Job", "train");
    assert_eq!(
        events.last().unwrap(),
        &(
            "BackoffLimitExceeded".to_string(),
            "Job has reached the specified backoff limit".to_string()
        )
    );
    // Each new pod waited for the back-off: 30 s run, then 10 s, then 20 s.
    let created: Vec<String> = pod_names(&rt.store, "default")
        .iter()
        .map(|n| {
            rt.store
                .get::<Pod>("default", n)
                .unwrap()
                .metadata
                .creation_timestamp
                .clone()
                .unwrap()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        created,
        [
            "2026-01-01T00:00:00Z",
            "2026-01-01T00:00:40Z",
            "2026-01-01T00:01:30Z"
        ]
    );
}

#[test]
fn the_pod_failure_policy_fails_ignores_or_counts() {
    let policy = |action: &str| {
        format!(
            "  backoffLimit: 0\n  podFailurePolicy:\n    rules:\n    - action: {action}\n      onExitCodes: {{operator: In, values: [1]}}"
        )
    };
    let rt = run(&job(
        &policy("FailJob"),
        "allot.dev/run-duration: \"5\", allot.dev/exit-code: \"1\"",
    ));
    let j = rt.store.get::<Job>("default", "train").unwrap();
    let c = conditions(j);
    assert_eq!(c[1].0, "Failed");
    assert_eq!(c[1].1, "PodFailurePolicy");
    let pod = &pod_names(&rt.store, "default")[0];
    assert_eq!(
        c[1].2,
        format!(
            "Container c for pod default/{pod} failed with exit code 1 matching FailJob rule at index 0"
        )
    );
    // An ignored failure is not counted: the Job keeps trying (the stand-in kubelet fails every
    // pod, so stop after a while).
    let mut rt = runtime(
        store_from(&job(
            &policy("Ignore"),
            "allot.dev/run-duration: \"5\", allot.dev/exit-code: \"1\"",
        )),
        vec![Box::new(JobController::new()), Box::new(FakeKubelet::new())],
    );
    rt.run_until_idle(SimTime(60_000), 100_000).unwrap();
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert_eq!(j.status.failed, 0);
    assert!(!is_finished(j));
    assert!(pod_names(&rt.store, "default").len() > 3);
}

#[test]
fn indexed_pods_carry_their_index() {
    let rt = run(&job(
        "  completions: 3\n  parallelism: 3\n  completionMode: Indexed",
        "allot.dev/run-duration: \"10\"",
    ));
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert_eq!(j.status.completed_indexes, "0-2");
    assert_eq!(j.status.succeeded, 3);
    let mut seen = Vec::new();
    for name in pod_names(&rt.store, "default") {
        let pod = rt.store.get::<Pod>("default", &name).unwrap();
        let index = pod.metadata.annotations[COMPLETION_INDEX].clone();
        assert_eq!(pod.metadata.labels[COMPLETION_INDEX], index);
        assert!(name.starts_with(&format!("train-{index}-")), "{name}");
        assert_eq!(
            pod.spec.hostname.as_ref().and_then(|h| h.as_str()),
            Some(format!("train-{index}").as_str())
        );
        let env = pod.spec.containers[0].env.as_ref().unwrap();
        assert_eq!(env[0]["name"], COMPLETION_INDEX_ENV);
        seen.push(index);
    }
    seen.sort();
    assert_eq!(seen, ["0", "1", "2"]);
}

#[test]
fn per_index_backoff_fails_indexes() {
    let rt = run(&job(
        "  completions: 2\n  parallelism: 2\n  completionMode: Indexed\n  backoffLimitPerIndex: 1",
        "allot.dev/run-duration: \"10\", allot.dev/exit-code: \"3\"",
    ));
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert_eq!(j.status.failed_indexes.as_deref(), Some("0-1"));
    assert_eq!(j.status.failed, 4, "two pods per index");
    assert_eq!(conditions(j)[1].1, "FailedIndexes");
}

#[test]
fn suspended_jobs_wait_and_finished_jobs_expire() {
    let mut rt = run(&job(
        "  suspend: true\n  ttlSecondsAfterFinished: 100",
        "allot.dev/run-duration: \"10\"",
    ));
    assert!(pod_names(&rt.store, "default").is_empty());
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert_eq!(j.status.start_time, None);
    assert_eq!(conditions(j)[0].1, "JobSuspended");
    rt.store
        .modify::<Job, _>("default", "train", |j| j.spec.suspend = Some(false))
        .unwrap();
    rt.run_until_idle(SimTime(50_000), 100_000).unwrap();
    let j = rt.store.get::<Job>("default", "train").unwrap();
    assert!(is_finished(j));
    let reasons: Vec<String> = events_of(&rt.store, "Job", "train")
        .into_iter()
        .map(|e| e.0)
        .collect();
    // As upstream's sync: the pods are created before the condition changes.
    assert_eq!(
        reasons,
        ["Suspended", "SuccessfulCreate", "Resumed", "Completed"]
    );
    // 100 s after it finished the Job goes, and its pods with it.
    settle(&mut rt);
    assert!(rt.store.get::<Job>("default", "train").is_none());
    assert!(pod_names(&rt.store, "default").is_empty());
}

#[test]
fn index_sets_format_as_the_api_writes_them() {
    let set: BTreeSet<i32> = [0, 1, 2, 5, 7, 8].into_iter().collect();
    assert_eq!(format_indexes(&set), "0-2,5,7-8");
    assert_eq!(parse_indexes("0-2,5,7-8"), set);
}
