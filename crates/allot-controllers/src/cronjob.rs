//! The CronJob controller (upstream `pkg/controller/cronjob`, the v2 controller) on the
//! simulated clock.
//!
//! Per CronJob: track its Jobs (`status.active`, `SawCompletedJob` when one finishes,
//! `lastSuccessfulTime`), find the most recent schedule time since the last one (or since
//! creation, bounded by `startingDeadlineSeconds`; `MissSchedule` when it is too late), honour
//! `concurrencyPolicy` (`Forbid`: `JobAlreadyActive`; `Replace`: the running Jobs deleted), create
//! the Job `<cronjob>-<scheduled time in minutes since the epoch>` with the
//! `batch.kubernetes.io/cronjob-scheduled-timestamp` annotation, keep the finished Jobs within
//! the history limits, and come back at the next schedule time. `spec.timeZone` is honoured for
//! the zones with a fixed offset; another zone gets upstream's `UnknownTimeZone` Warning (allot
//! carries no time zone database).

use allot_api::batch::v1::{ConcurrencyPolicy, CronJob, Job};
use allot_api::core::v1::ObjectReference;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, Kind, ObjectKey, Store, Stored};

use crate::cron::{Schedule, fixed_offset};
use crate::events::{self, EventKind, Source};
use crate::garbagecollector::{Propagation, delete_with};
use crate::job::is_finished;
use crate::workload::{controlled, controller_key, controller_ref, reconciled};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "cronjob-controller";
/// The annotation with the time a Job was scheduled for.
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Missed start times beyond which the controller warns.
const TOO_MANY_MISSED: usize = 100;

/// Seconds between the Unix epoch and [`SimTime::ZERO`] (2026-01-01T00:00:00Z).
pub const SIM_EPOCH_UNIX: i64 = 1_767_225_600;

/// The CronJob controller.
#[derive(Debug, Default)]
pub struct CronJobController;

impl CronJobController {
    /// A controller.
    pub fn new() -> Self {
        CronJobController
    }
}

fn unix(t: SimTime) -> i64 {
    SIM_EPOCH_UNIX + (t.0 / 1000) as i64
}

fn sim(unix_seconds: i64) -> SimTime {
    SimTime(u64::try_from(unix_seconds - SIM_EPOCH_UNIX).unwrap_or(0) * 1000)
}

impl Controller for CronJobController {
    fn name(&self) -> &'static str {
        "cronjob-controller"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::CronJob(_) => vec![event.key.clone()],
            Stored::Job(job) => controller_key(&job.metadata, &event.key.namespace, Kind::CronJob)
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::CronJob));
        subscriptions.add(Topic::Kind(Kind::Job));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(cj) = reconciled::<CronJob>(store, key) else {
            return Ok(Action::Done);
        };
        sync(store, cj, ctx.now)
    }
}

fn job_reference(job: &Job) -> ObjectReference {
    ObjectReference {
        kind: Some("Job".into()),
        namespace: Some(job.metadata.namespace.clone()),
        name: Some(job.metadata.name.clone()),
        uid: Some(job.metadata.uid.clone()),
        api_version: Some("batch/v1".into()),
        resource_version: Some(job.metadata.resource_version.clone()),
        field_path: None,
    }
}

fn record(
    store: &mut Store,
    cj: &CronJob,
    now: SimTime,
    kind: EventKind,
    reason: &str,
    message: &str,
) -> Result<(), String> {
    events::record(
        store,
        now,
        &events::reference(cj),
        kind,
        reason,
        message,
        Source::component(COMPONENT),
    )
}

/// The Job's finished condition (`Complete` or `Failed`) for the `SawCompletedJob` message.
fn finished_type(job: &Job) -> &'static str {
    if job
        .status
        .conditions
        .iter()
        .any(|c| c.type_ == "Complete" && c.status == "True")
    {
        "Complete"
    } else {
        "Failed"
    }
}

fn sync(store: &mut Store, mut cj: CronJob, now: SimTime) -> Result<Action, String> {
    let original = cj.status.clone();
    let jobs: Vec<Job> = controlled::<Job>(store, &cj.metadata.uid)
        .into_iter()
        .cloned()
        .collect();
    // The active list against the Jobs that exist.
    let active_before = cj.status.active.clone();
    cj.status
        .active
        .retain(|r| jobs.iter().any(|j| Some(&j.metadata.uid) == r.uid.as_ref()));
    for gone in active_before
        .iter()
        .filter(|r| !cj.status.active.contains(r))
    {
        let name = gone.name.clone().unwrap_or_default();
        record(
            store,
            &cj,
            now,
            EventKind::Normal,
            "MissingJob",
            &format!("Active job went missing: {name}"),
        )?;
    }
    for job in &jobs {
        let listed = cj
            .status
            .active
            .iter()
            .position(|r| r.uid.as_deref() == Some(job.metadata.uid.as_str()));
        let finished = is_finished(job);
        match (listed, finished) {
            (Some(i), true) => {
                cj.status.active.remove(i);
                record(
                    store,
                    &cj,
                    now,
                    EventKind::Normal,
                    "SawCompletedJob",
                    &format!(
                        "Saw completed job: {}, condition: {}",
                        job.metadata.name,
                        finished_type(job)
                    ),
                )?;
            }
            (None, false) if job.metadata.deletion_timestamp.is_none() => {
                cj.status.active.push(job_reference(job));
                record(
                    store,
                    &cj,
                    now,
                    EventKind::Warning,
                    "UnexpectedJob",
                    &format!(
                        "Saw a job that the controller did not create or forgot: {}",
                        job.metadata.name
                    ),
                )?;
            }
            _ => {}
        }
        if finished_type(job) == "Complete"
            && finished
            && let Some(done) = &job.status.completion_time
            && cj
                .status
                .last_successful_time
                .as_ref()
                .is_none_or(|t| SimTime::parse_rfc3339(t) < SimTime::parse_rfc3339(done))
        {
            cj.status.last_successful_time = Some(done.clone());
        }
    }
    let result = schedule(store, &mut cj, &jobs, now);
    if cj.status != original {
        let mut current = store
            .get::<CronJob>(&cj.metadata.namespace, &cj.metadata.name)
            .cloned()
            .ok_or("the CronJob is gone")?;
        current.status = cj.status.clone();
        store.update_shared(current).map_err(|e| e.to_string())?;
    }
    cleanup(store, &cj, now)?;
    result
}

/// Creates the Job of the most recent schedule time, if one is due; returns when to come back.
fn schedule(
    store: &mut Store,
    cj: &mut CronJob,
    jobs: &[Job],
    now: SimTime,
) -> Result<Action, String> {
    if cj.metadata.deletion_timestamp.is_some() || cj.spec.suspend == Some(true) {
        return Ok(Action::Done);
    }
    let offset = match cj.spec.time_zone.as_deref() {
        None => 0,
        Some(zone) => match fixed_offset(zone) {
            Some(o) => o,
            None => {
                record(
                    store,
                    cj,
                    now,
                    EventKind::Warning,
                    "UnknownTimeZone",
                    &format!("invalid timeZone: \"{zone}\": unknown time zone {zone}"),
                )?;
                return Ok(Action::Done);
            }
        },
    };
    let schedule = match Schedule::parse(&cj.spec.schedule) {
        Ok(s) => s,
        Err(e) => {
            record(
                store,
                cj,
                now,
                EventKind::Warning,
                "UnparseableSchedule",
                &format!("unparseable schedule: \"{}\" : {e}", cj.spec.schedule),
            )?;
            return Ok(Action::Done);
        }
    };
    // Schedule times are computed in the zone's local time.
    let local = |t: i64| t + offset;
    let utc = |t: i64| t - offset;
    let now_unix = unix(now);
    let mut earliest = cj
        .status
        .last_schedule_time
        .as_deref()
        .or(cj.metadata.creation_timestamp.as_deref())
        .and_then(SimTime::parse_rfc3339)
        .map_or(now_unix, unix);
    if let Some(deadline) = cj.spec.starting_deadline_seconds {
        earliest = earliest.max(now_unix - deadline);
    }
    let mut missed = 0;
    let mut most_recent = None;
    let mut t = earliest;
    while let Some(next) = schedule.next_after(local(t)).map(utc) {
        if next > now_unix {
            break;
        }
        missed += 1;
        most_recent = Some(next);
        t = next;
        if missed > 100_000 {
            break;
        }
    }
    let next_time = schedule.next_after(local(now_unix)).map(utc);
    let come_back = next_time.map_or(Action::Done, |n| {
        Action::RequeueAfterMillis((sim(n).0).saturating_sub(now.0).max(1))
    });
    if missed > TOO_MANY_MISSED {
        record(
            store,
            cj,
            now,
            EventKind::Warning,
            "TooManyMissedTimes",
            &format!(
                "too many missed start times: {missed}. Set or decrease .spec.startingDeadlineSeconds or check clock skew"
            ),
        )?;
    }
    let Some(scheduled) = most_recent else {
        return Ok(come_back);
    };
    if let Some(deadline) = cj.spec.starting_deadline_seconds
        && scheduled + deadline < now_unix
    {
        let stamp = sim(scheduled).rfc3339();
        record(
            store,
            cj,
            now,
            EventKind::Warning,
            "MissSchedule",
            &format!("Missed scheduled time to start a job: {stamp}"),
        )?;
        return Ok(come_back);
    }
    let name = format!("{}-{}", cj.metadata.name, scheduled / 60);
    if jobs.iter().any(|j| j.metadata.name == name)
        || store.get::<Job>(&cj.metadata.namespace, &name).is_some()
    {
        return Ok(come_back);
    }
    let policy = cj
        .spec
        .concurrency_policy
        .clone()
        .unwrap_or(ConcurrencyPolicy::Allow);
    if policy == ConcurrencyPolicy::Forbid && !cj.status.active.is_empty() {
        record(
            store,
            cj,
            now,
            EventKind::Normal,
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid",
        )?;
        return Ok(come_back);
    }
    if policy == ConcurrencyPolicy::Replace {
        for r in std::mem::take(&mut cj.status.active) {
            let job_name = r.name.clone().unwrap_or_default();
            let key = ObjectKey::new(Kind::Job, cj.metadata.namespace.as_str(), job_name.as_str());
            delete_with(store, &key, Propagation::Background, now)?;
            record(
                store,
                cj,
                now,
                EventKind::Normal,
                "SuccessfulDelete",
                &format!("Deleted job {job_name}"),
            )?;
        }
    }
    let mut job = Job::default();
    job.metadata.name = name.clone();
    job.metadata.namespace = cj.metadata.namespace.clone();
    job.metadata.labels = cj.spec.job_template.metadata.labels.clone();
    job.metadata.annotations = cj.spec.job_template.metadata.annotations.clone();
    job.metadata
        .annotations
        .insert(SCHEDULED_TIMESTAMP.into(), sim(scheduled).rfc3339());
    job.metadata.owner_references = vec![controller_ref(Kind::CronJob, &cj.metadata)];
    job.spec = cj.spec.job_template.spec.clone();
    allot_api::defaults::workloads::default_job(&mut job);
    let created = store
        .create(job, &now.rfc3339())
        .map_err(|e| e.to_string())?;
    record(
        store,
        cj,
        now,
        EventKind::Normal,
        "SuccessfulCreate",
        &format!("Created job {name}"),
    )?;
    cj.status.active.push(job_reference(&created));
    cj.status.last_schedule_time = Some(sim(scheduled).rfc3339());
    Ok(come_back)
}

/// Deletes the oldest finished Jobs beyond the history limits.
fn cleanup(store: &mut Store, cj: &CronJob, now: SimTime) -> Result<(), String> {
    if cj.metadata.deletion_timestamp.is_some() {
        return Ok(());
    }
    let mut succeeded: Vec<Job> = Vec::new();
    let mut failed: Vec<Job> = Vec::new();
    for job in controlled::<Job>(store, &cj.metadata.uid) {
        if !is_finished(job) || job.metadata.deletion_timestamp.is_some() {
            continue;
        }
        if finished_type(job) == "Complete" {
            succeeded.push(job.clone());
        } else {
            failed.push(job.clone());
        }
    }
    for (mut list, limit) in [
        (
            succeeded,
            cj.spec.successful_jobs_history_limit.unwrap_or(3),
        ),
        (failed, cj.spec.failed_jobs_history_limit.unwrap_or(1)),
    ] {
        let surplus = list.len().saturating_sub(limit.max(0) as usize);
        if surplus == 0 {
            continue;
        }
        list.sort_by(|a, b| {
            a.status
                .start_time
                .as_deref()
                .and_then(SimTime::parse_rfc3339)
                .cmp(
                    &b.status
                        .start_time
                        .as_deref()
                        .and_then(SimTime::parse_rfc3339),
                )
                .then_with(|| a.metadata.name.cmp(&b.metadata.name))
        });
        for job in list.into_iter().take(surplus) {
            delete_with(store, &Store::key_of(&job), Propagation::Background, now)?;
            record(
                store,
                cj,
                now,
                EventKind::Normal,
                "SuccessfulDelete",
                &format!("Deleted job {}", job.metadata.name),
            )?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
