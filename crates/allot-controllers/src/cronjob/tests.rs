use super::*;
use crate::testkit::{FakeKubelet, events_of, runtime, store_from};
use crate::{GarbageCollector, JobController};

fn cron(policy: &str, duration: u64) -> String {
    format!(
        r#"
apiVersion: batch/v1
kind: CronJob
metadata: {{name: nightly, namespace: default}}
spec:
  schedule: "*/10 * * * *"
  concurrencyPolicy: {policy}
  successfulJobsHistoryLimit: 2
  jobTemplate:
    spec:
      template:
        metadata: {{annotations: {{allot.dev/run-duration: "{duration}"}}}}
        spec:
          restartPolicy: Never
          containers: [{{name: c, image: batch}}]
"#
    )
}

fn run(yaml: &str, minutes: u64) -> allot_runtime::Runtime {
    let mut rt = runtime(
        store_from(yaml),
        vec![
            Box::new(CronJobController::new()),
            Box::new(JobController::new()),
            Box::new(FakeKubelet::new()),
            Box::new(GarbageCollector::new()),
        ],
    );
    rt.run_until_idle(SimTime(minutes * 60_000), 1_000_000)
        .unwrap();
    rt
}

fn jobs(store: &Store) -> Vec<String> {
    store
        .list_in::<Job>("default")
        .map(|j| j.metadata.name.clone())
        .collect()
}

#[test]
fn jobs_run_on_schedule_and_history_is_kept_short() {
    let rt = run(&cron("Allow", 60), 45);
    // Runs at 10, 20, 30, 40 minutes; two successful ones kept.
    let base = SIM_EPOCH_UNIX / 60;
    assert_eq!(
        jobs(&rt.store),
        [
            format!("nightly-{}", base + 30),
            format!("nightly-{}", base + 40)
        ]
    );
    let j = rt
        .store
        .get::<Job>("default", &format!("nightly-{}", base + 40))
        .unwrap();
    assert_eq!(
        j.metadata.annotations[SCHEDULED_TIMESTAMP],
        "2026-01-01T00:40:00Z"
    );
    let cj = rt.store.get::<CronJob>("default", "nightly").unwrap();
    assert_eq!(
        cj.status.last_schedule_time.as_deref(),
        Some("2026-01-01T00:40:00Z")
    );
    assert_eq!(
        cj.status.last_successful_time.as_deref(),
        Some("2026-01-01T00:41:00Z")
    );
    assert!(cj.status.active.is_empty());
    let reasons: Vec<String> = events_of(&rt.store, "CronJob", "nightly")
        .into_iter()
        .map(|e| e.0)
        .collect();
    assert!(reasons.contains(&"SawCompletedJob".to_string()));
    assert!(reasons.contains(&"SuccessfulDelete".to_string()));
}

#[test]
fn forbid_skips_runs_while_one_is_active_and_replace_replaces_it() {
    // Each run takes 15 minutes.
    let rt = run(&cron("Forbid", 900), 35);
    let base = SIM_EPOCH_UNIX / 60;
    // The 20-minute run was skipped while the first ran; as upstream, it starts late when the
    // first finishes (at 25, no startingDeadlineSeconds), and the 30-minute run is skipped.
    assert_eq!(
        jobs(&rt.store),
        [
            format!("nightly-{}", base + 10),
            format!("nightly-{}", base + 20)
        ]
    );
    let late = rt
        .store
        .get::<Job>("default", &format!("nightly-{}", base + 20))
        .unwrap();
    assert_eq!(
        late.metadata.creation_timestamp.as_deref(),
        Some("2026-01-01T00:25:00Z")
    );
    let events = events_of(&rt.store, "CronJob", "nightly");
    assert!(
        events.contains(&(
            "JobAlreadyActive".into(),
            "Not starting job because prior execution is running and concurrency policy is Forbid"
                .into()
        ))
    );
    let rt = run(&cron("Replace", 900), 25);
    assert_eq!(jobs(&rt.store), [format!("nightly-{}", base + 20)]);
}
