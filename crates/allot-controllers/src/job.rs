//! The Job controller (upstream `pkg/controller/job`) with the TTL-after-finished controller.
//!
//! Per Job: create pods from the template until `min(parallelism, completions - succeeded)`
//! are active (NonIndexed: `<job>-<5 characters>`; Indexed: `<job>-<index>-<5 characters>`,
//! with the completion index as annotation, label, `JOB_COMPLETION_INDEX` environment variable
//! and hostname `<job>-<index>`), each with the `batch.kubernetes.io/job-tracking` finalizer;
//! count finished pods as upstream does (through `status.uncountedTerminatedPods`, then the
//! finalizer removed, then the counters), with the pod failure policy (`FailJob`, `FailIndex`,
//! `Ignore`, `Count`, on exit codes or pod conditions), `backoffLimit` (failed pods, or container
//! restarts with `OnFailure`), `backoffLimitPerIndex` and `maxFailedIndexes`, the success policy,
//! `activeDeadlineSeconds` and `suspend`; a pod failure delays the next pod by upstream's
//! back-off (10 s doubling to 6 min). A finished Job first gets the interim condition
//! (`SuccessCriteriaMet` or `FailureTarget`), its active pods are deleted, then the terminal
//! one (`Complete` with `completionTime`, or `Failed`) and the Event (`Completed` "Job
//! completed", or a Warning with the failure's reason, e.g. `BackoffLimitExceeded`). With
//! `ttlSecondsAfterFinished` the Job is deleted (in the foreground) that long after it finished.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::batch::v1::{
    CompletionMode, Job, JobCondition, JobStatus, PodFailurePolicy, PodFailurePolicyAction,
    PodFailurePolicyOnExitCodesOperator, PodReplacementPolicy, SuccessPolicy,
    UncountedTerminatedPods,
};
use std::sync::Arc;

use allot_api::core::v1::{Pod, PodTemplateSpec};
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::events::{self, EventKind, Source};
use crate::garbagecollector::{Propagation, delete_with};
use crate::workload::{
    self, controlled_shared, controller_key, earliest, is_active, is_ready, is_terminated,
    owned_pod, pods_prefix, remove_finalizer, requeue_at,
};

/// The component name of the controller's Events.
pub const COMPONENT: &str = "job-controller";
/// The finalizer that keeps a Job's pod until the Job counted it.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// A pod's completion index (annotation and label).
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// How many pods of the index failed before this one (`backoffLimitPerIndex`).
pub const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
/// The environment variable with the completion index.
pub const COMPLETION_INDEX_ENV: &str = "JOB_COMPLETION_INDEX";
/// The most pods one sync creates or deletes (upstream's `MaxPodCreateDeletePerSync`).
pub const MAX_PODS_PER_SYNC: usize = 500;
/// The first back-off after a pod failure, in milliseconds (`DefaultJobPodFailureBackOff`).
pub const POD_FAILURE_BACKOFF_MILLIS: u64 = 10_000;
/// The longest back-off, in milliseconds (`MaxJobPodFailureBackOff`).
pub const MAX_POD_FAILURE_BACKOFF_MILLIS: u64 = 360_000;

/// The Job controller.
#[derive(Debug, Default)]
pub struct JobController {
    /// Per Job uid: failures since the last success, and when the last one finished.
    backoff: BTreeMap<String, (u32, SimTime)>,
}

impl JobController {
    /// A controller.
    pub fn new() -> Self {
        JobController::default()
    }
}

fn job_of(pod: &Pod, namespace: &str) -> Option<ObjectKey> {
    controller_key(&pod.metadata, namespace, Kind::Job)
}

fn has_tracking(pod: &Pod) -> bool {
    pod.metadata
        .finalizers
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
}

impl Controller for JobController {
    fn name(&self) -> &'static str {
        "job-controller"
    }

    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey> {
        match &event.object {
            Stored::Job(_) if event.event_type != EventType::Deleted => vec![event.key.clone()],
            Stored::Pod(pod) => {
                let job = job_of(pod, &event.key.namespace);
                // A pod whose Job is gone keeps its finalizer until someone removes it.
                let orphaned = has_tracking(pod)
                    && event.event_type != EventType::Deleted
                    && job.as_ref().is_none_or(|k| {
                        store.get::<Job>(&k.namespace, &k.name).is_none_or(|j| {
                            !crate::workload::controlled_by(&pod.metadata, &j.metadata.uid)
                        })
                    });
                let mut keys: Vec<ObjectKey> = job.into_iter().collect();
                if orphaned {
                    keys.push(event.key.clone());
                }
                keys
            }
            _ => Vec::new(),
        }
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::Job));
        subscriptions.add(Topic::Kind(Kind::Pod));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        match key.kind {
            Kind::Pod => {
                let orphan = store
                    .get::<Pod>(&key.namespace, &key.name)
                    .is_some_and(|pod| {
                        has_tracking(pod)
                            && job_of(pod, &key.namespace).is_none_or(|k| {
                                store.get::<Job>(&k.namespace, &k.name).is_none_or(|j| {
                                    !crate::workload::controlled_by(&pod.metadata, &j.metadata.uid)
                                })
                            })
                    });
                if orphan {
                    remove_finalizer(store, key, TRACKING_FINALIZER)?;
                }
                Ok(Action::Done)
            }
            Kind::Job => {
                let Some(job) = store.get_shared::<Job>(&key.namespace, &key.name).cloned() else {
                    return Ok(Action::Done);
                };
                self.sync(store, job, ctx.now)
            }
            _ => Ok(Action::Done),
        }
    }
}

/// A condition of a Job that is True.
fn condition_true<'a>(status: &'a JobStatus, type_: &str) -> Option<&'a JobCondition> {
    status
        .conditions
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
}

/// Whether a Job finished (`Complete` or `Failed` is True).
pub fn is_finished(job: &Job) -> bool {
    condition_true(&job.status, "Complete").is_some()
        || condition_true(&job.status, "Failed").is_some()
}

fn new_condition(type_: &str, reason: &str, message: &str, now: SimTime) -> JobCondition {
    let stamp = now.rfc3339();
    JobCondition {
        type_: type_.into(),
        status: "True".into(),
        last_probe_time: Some(stamp.clone()),
        last_transition_time: Some(stamp),
        reason: reason.into(),
        message: message.into(),
    }
}

fn is_indexed(job: &Job) -> bool {
    job.spec.completion_mode == Some(CompletionMode::Indexed)
}

fn completion_index(pod: &Pod) -> Option<i32> {
    pod.metadata
        .annotations
        .get(COMPLETION_INDEX)
        .and_then(|v| v.parse::<i32>().ok())
        .filter(|i| *i >= 0)
}

/// Whether a pod counts as failed for the Job (upstream's `isPodFailed`).
fn is_failed(pod: &Pod, job: &Job) -> bool {
    if pod.status.phase.as_deref() == Some("Failed") {
        return true;
    }
    if job.spec.pod_replacement_policy == Some(PodReplacementPolicy::Failed) {
        return false;
    }
    pod.metadata.deletion_timestamp.is_some() && pod.status.phase.as_deref() != Some("Succeeded")
}

/// Indexes as the API writes them: `1,3-5,7`.
pub fn format_indexes(indexes: &BTreeSet<i32>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
    }
    out.join(",")
}

/// Parses [`format_indexes`]' format; malformed parts are skipped.
pub fn parse_indexes(text: &str) -> BTreeSet<i32> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i32>(), b.parse::<i32>()) {
                    out.extend(a..=b);
                }
            }
            None => {
                if let Ok(i) = part.parse::<i32>() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

/// What the pod failure policy says about a failed pod: the rule's action and the message of
/// a `FailJob`, or `None` when no rule matches (upstream's `matchPodFailurePolicy`).
fn match_failure_policy(
    policy: &PodFailurePolicy,
    pod: &Pod,
) -> Option<(PodFailurePolicyAction, String)> {
    let statuses = |field: &Option<serde_json::Value>| -> Vec<serde_json::Value> {
        field
            .as_ref()
            .and_then(|s| s.as_array())
            .cloned()
            .unwrap_or_default()
    };
    let containers: Vec<serde_json::Value> = statuses(&pod.status.init_container_statuses)
        .into_iter()
        .chain(statuses(&pod.status.container_statuses))
        .collect();
    let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
    for (index, rule) in policy.rules.iter().enumerate() {
        let Some(action) = rule.action.clone() else {
            continue;
        };
        if let Some(requirement) = &rule.on_exit_codes {
            let found = containers.iter().find_map(|c| {
                let code = c.pointer("/state/terminated/exitCode")?.as_i64()? as i32;
                let cname = c.get("name")?.as_str()?;
                if requirement
                    .container_name
                    .as_deref()
                    .is_some_and(|want| want != cname)
                    || code == 0
                {
                    return None;
                }
                let listed = requirement.values.contains(&code);
                let matches = match requirement.operator {
                    Some(PodFailurePolicyOnExitCodesOperator::NotIn) => !listed,
                    _ => listed,
                };
                matches.then(|| (cname.to_string(), code))
            });
            if let Some((cname, code)) = found {
                let message = format!(
                    "Container {cname} for pod {name} failed with exit code {code} matching {} rule at index {index}",
                    action.as_str()
                );
                return Some((action, message));
            }
        }
        for pattern in &rule.on_pod_conditions {
            if pod
                .status
                .conditions
                .iter()
                .any(|c| c.type_ == pattern.type_ && c.status == pattern.status)
            {
                let message = format!(
                    "Pod {name} has condition {} matching {} rule at index {index}",
                    pattern.type_,
                    action.as_str()
                );
                return Some((action, message));
            }
        }
    }
    None
}

/// Upstream's `matchSuccessPolicy`: the message of the first rule the succeeded indexes meet.
fn match_success_policy(
    policy: &SuccessPolicy,
    completions: i32,
    succeeded: &BTreeSet<i32>,
) -> Option<String> {
    for (index, rule) in policy.rules.iter().enumerate() {
        let wanted: BTreeSet<i32> = match &rule.succeeded_indexes {
            Some(text) => parse_indexes(text)
                .into_iter()
                .filter(|i| *i < completions)
                .collect(),
            None => (0..completions).collect(),
        };
        let done = wanted.intersection(succeeded).count() as i32;
        let met = match rule.succeeded_count {
            Some(count) => done >= count,
            None => done == wanted.len() as i32 && !wanted.is_empty(),
        };
        if met {
            return Some(format!("Matched rules at index {index}"));
        }
    }
    None
}

/// The restart counts of a pod's containers, summed (for `OnFailure` pods).
fn restarts(pod: &Pod) -> i64 {
    pod.status
        .init_container_statuses
        .iter()
        .chain(pod.status.container_statuses.iter())
        .filter_map(|s| s.as_array())
        .flatten()
        .filter_map(|c| c.get("restartCount").and_then(|r| r.as_i64()))
        .sum()
}

/// The pods a sync deletes first (upstream's `ActivePods` order: unassigned, pending, not
/// ready, then newer first).
fn removal_order(pods: &mut [&Pod]) {
    let phase = |p: &Pod| match p.status.phase.as_deref() {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        _ => 2,
    };
    let assigned = |p: &Pod| p.spec.node_name.as_deref().is_some_and(|n| !n.is_empty());
    pods.sort_by(|a, b| {
        assigned(a)
            .cmp(&assigned(b))
            .then_with(|| phase(a).cmp(&phase(b)))
            .then_with(|| is_ready(a).cmp(&is_ready(b)))
            .then_with(|| restarts(b).cmp(&restarts(a)))
            .then_with(|| {
                b.metadata
                    .creation_timestamp
                    .cmp(&a.metadata.creation_timestamp)
            })
            .then_with(|| b.metadata.uid.cmp(&a.metadata.uid))
    });
}

/// What one sync found.
struct Counts {
    /// Finished pods still carrying the finalizer: uid, succeeded, name.
    new_finished: Vec<(String, bool, String)>,
    succeeded: i32,
    failed: i32,
    succeeded_indexes: BTreeSet<i32>,
    failed_indexes: BTreeSet<i32>,
    /// A `FailJob` rule's message.
    fail_job: Option<String>,
    /// When the newest counted failure finished.
    failures: u32,
    last_failure: Option<SimTime>,
}

impl JobController {
    fn sync(&mut self, store: &mut Store, job: Arc<Job>, now: SimTime) -> Result<Action, String> {
        if is_finished(&job) {
            return self.expire(store, &job, now);
        }
        if job
            .spec
            .managed_by
            .as_deref()
            .is_some_and(|m| m != "kubernetes.io/job-controller")
        {
            return Ok(Action::Done);
        }
        let pods = controlled_shared::<Pod>(store, &job.metadata.uid);
        let counts = self.count(&job, &pods);
        let mut status = job.status.clone();
        status
            .uncounted_terminated_pods
            .get_or_insert_with(UncountedTerminatedPods::default);
        let suspended = job.spec.suspend == Some(true);
        if status.start_time.is_none() && !suspended {
            status.start_time = Some(now.rfc3339());
        }
        let mut finished = self.finished_condition(&job, &pods, &counts, &status, now);
        let active_pods: Vec<&Pod> = pods.iter().map(|p| &**p).filter(|p| is_active(p)).collect();
        let mut active = active_pods.len() as i32;
        let mut next = None;
        if finished.is_some() {
            let deleted = delete_pods(store, &job, &active_pods, active_pods.len(), now)?;
            active -= deleted as i32;
            if active > 0 {
                finished = None;
            }
        } else {
            let (left, wait) = self.manage(store, &job, &pods, &counts, now)?;
            active = left;
            next = wait;
            let complete = match job.spec.completions {
                None => counts.succeeded > 0 && active == 0,
                Some(c) => counts.succeeded >= c && active == 0,
            };
            if complete {
                finished = Some(new_condition(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    now,
                ));
            } else {
                self.suspend_condition(store, &job, &mut status, now)?;
            }
            if let Some(deadline) = job.spec.active_deadline_seconds
                && !suspended
                && let Some(start) = status
                    .start_time
                    .as_deref()
                    .and_then(SimTime::parse_rfc3339)
            {
                next = earliest(next, Some(start.plus_seconds(deadline.max(0) as u64)));
            }
        }
        // Refreshed after any deletions above.
        let pods = controlled_shared::<Pod>(store, &job.metadata.uid);
        status.active = active;
        status.ready = Some(pods.iter().filter(|p| is_active(p) && is_ready(p)).count() as i32);
        status.terminating = Some(
            pods.iter()
                .filter(|p| crate::workload::is_terminating(p))
                .count() as i32,
        );
        self.track(store, &job, status, &counts, finished, now)?;
        Ok(requeue_at(next, now))
    }

    /// Counts succeeded and failed pods (the counted ones from the status plus the newly
    /// finished ones), with the pod failure policy and the per-index back-off.
    fn count(&self, job: &Job, pods: &[Arc<Pod>]) -> Counts {
        let uncounted = job
            .status
            .uncounted_terminated_pods
            .clone()
            .unwrap_or_default();
        let mut counts = Counts {
            new_finished: Vec::new(),
            succeeded: job.status.succeeded,
            failed: job.status.failed,
            succeeded_indexes: parse_indexes(&job.status.completed_indexes),
            failed_indexes: job
                .status
                .failed_indexes
                .as_deref()
                .map(parse_indexes)
                .unwrap_or_default(),
            fail_job: None,
            failures: self.backoff.get(&job.metadata.uid).map_or(0, |b| b.0),
            last_failure: self.backoff.get(&job.metadata.uid).map(|b| b.1),
        };
        let completions = job.spec.completions.unwrap_or(0);
        let per_index = job.spec.backoff_limit_per_index;
        for pod in pods {
            let uid = &pod.metadata.uid;
            let pending = uncounted.succeeded.contains(uid) || uncounted.failed.contains(uid);
            if !has_tracking(pod) && !pending {
                continue;
            }
            let succeeded = pod.status.phase.as_deref() == Some("Succeeded");
            let failed = !succeeded && is_failed(pod, job);
            if !succeeded && !failed {
                continue;
            }
            let index = completion_index(pod).filter(|i| !is_indexed(job) || *i < completions);
            if succeeded {
                counts.failures = 0;
                if is_indexed(job) {
                    if let Some(i) = index
                        && counts.succeeded_indexes.insert(i)
                    {
                        counts
                            .new_finished
                            .push((uid.clone(), true, pod.metadata.name.clone()));
                        continue;
                    }
                    // A second success of an index, or one without a valid index, counts
                    // nothing but still loses its finalizer.
                    counts
                        .new_finished
                        .push((uid.clone(), true, pod.metadata.name.clone()));
                    continue;
                }
                counts.succeeded += 1;
                counts
                    .new_finished
                    .push((uid.clone(), true, pod.metadata.name.clone()));
                continue;
            }
            let mut counted = true;
            let mut fail_index = false;
            if pod.status.phase.as_deref() == Some("Failed")
                && let Some(policy) = &job.spec.pod_failure_policy
                && let Some((action, message)) = match_failure_policy(policy, pod)
            {
                match action {
                    PodFailurePolicyAction::FailJob => {
                        counts.fail_job.get_or_insert(message);
                    }
                    PodFailurePolicyAction::Ignore => counted = false,
                    PodFailurePolicyAction::FailIndex => fail_index = true,
                    PodFailurePolicyAction::Count | PodFailurePolicyAction::Other(_) => {}
                }
            }
            if counted {
                counts.failed += 1;
                counts.failures += 1;
                let finished_at = finish_time(pod);
                counts.last_failure = Some(
                    counts
                        .last_failure
                        .map_or(finished_at, |l| l.max(finished_at)),
                );
            }
            if let (Some(limit), Some(i)) = (per_index, index)
                && counted
            {
                let before: i32 = pod
                    .metadata
                    .annotations
                    .get(INDEX_FAILURE_COUNT)
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0);
                if fail_index || before + 1 > limit {
                    counts.failed_indexes.insert(i);
                }
            } else if let Some(i) = index.filter(|_| fail_index) {
                counts.failed_indexes.insert(i);
            }
            counts
                .new_finished
                .push((uid.clone(), false, pod.metadata.name.clone()));
        }
        if is_indexed(job) {
            counts.succeeded = counts.succeeded_indexes.len() as i32;
        }
        counts
    }

    /// The interim condition of a Job that is done: already recorded, or a failure policy,
    /// back-off, deadline, failed indexes or success policy that decides it now.
    fn finished_condition(
        &self,
        job: &Job,
        pods: &[Arc<Pod>],
        counts: &Counts,
        status: &JobStatus,
        now: SimTime,
    ) -> Option<JobCondition> {
        if let Some(c) = condition_true(status, "FailureTarget") {
            return Some(c.clone());
        }
        if let Some(c) = condition_true(status, "SuccessCriteriaMet") {
            return Some(c.clone());
        }
        let failure = |reason: &str, message: &str| {
            Some(new_condition("FailureTarget", reason, message, now))
        };
        if let Some(message) = &counts.fail_job {
            return failure("PodFailurePolicy", message);
        }
        let limit = job.spec.backoff_limit.unwrap_or(6);
        let on_failure_restarts: i64 = pods
            .iter()
            .filter(|p| {
                p.spec.restart_policy.as_deref() == Some("OnFailure")
                    && matches!(p.status.phase.as_deref(), Some("Running" | "Pending"))
            })
            .map(|p| restarts(p))
            .sum();
        let past_on_failure = if limit == 0 {
            on_failure_restarts > 0
        } else {
            on_failure_restarts >= i64::from(limit)
        };
        if counts.failed > limit || past_on_failure {
            return failure(
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            );
        }
        if let Some(deadline) = job.spec.active_deadline_seconds
            && job.spec.suspend != Some(true)
            && let Some(start) = status
                .start_time
                .as_deref()
                .and_then(SimTime::parse_rfc3339)
            && start.plus_seconds(deadline.max(0) as u64) <= now
        {
            return failure(
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            );
        }
        if is_indexed(job) {
            let completions = job.spec.completions.unwrap_or(0);
            if job.spec.backoff_limit_per_index.is_some() {
                let failed = counts.failed_indexes.len() as i32;
                if job.spec.max_failed_indexes.is_some_and(|m| failed > m) {
                    return failure(
                        "MaxFailedIndexesExceeded",
                        "Job has exceeded the specified maximal number of failed indexes",
                    );
                }
                if failed > 0 && failed + counts.succeeded_indexes.len() as i32 >= completions {
                    return failure("FailedIndexes", "Job has failed indexes");
                }
            }
            if let Some(policy) = &job.spec.success_policy
                && let Some(message) =
                    match_success_policy(policy, completions, &counts.succeeded_indexes)
            {
                return Some(new_condition(
                    "SuccessCriteriaMet",
                    "SuccessPolicy",
                    &message,
                    now,
                ));
            }
        }
        None
    }

    /// Creates or deletes pods toward the wanted number of active pods (upstream's
    /// `manageJob`). Returns how many stay active and when to come back (a back-off).
    fn manage(
        &mut self,
        store: &mut Store,
        job: &Job,
        pods: &[Arc<Pod>],
        counts: &Counts,
        now: SimTime,
    ) -> Result<(i32, Option<SimTime>), String> {
        let mut active_pods: Vec<&Pod> =
            pods.iter().map(|p| &**p).filter(|p| is_active(p)).collect();
        let active = active_pods.len() as i32;
        if job.metadata.deletion_timestamp.is_some() {
            return Ok((active, None));
        }
        if job.spec.suspend == Some(true) {
            removal_order(&mut active_pods);
            let deleted = delete_pods(store, job, &active_pods, active_pods.len(), now)?;
            return Ok((active - deleted as i32, None));
        }
        let parallelism = job.spec.parallelism.unwrap_or(1).max(0);
        let want = match job.spec.completions {
            None if counts.succeeded > 0 => active,
            None => parallelism,
            Some(c) => (c - counts.succeeded).clamp(0, parallelism),
        };
        // Indexed: pods of indexes already done or out of range go first.
        let mut surplus: Vec<&Pod> = Vec::new();
        if is_indexed(job) {
            let completions = job.spec.completions.unwrap_or(0);
            let mut seen = BTreeSet::new();
            active_pods.retain(|p| {
                let keep = completion_index(p).is_some_and(|i| {
                    i < completions
                        && !counts.succeeded_indexes.contains(&i)
                        && !counts.failed_indexes.contains(&i)
                        && seen.insert(i)
                });
                if !keep {
                    surplus.push(p);
                }
                keep
            });
        }
        removal_order(&mut active_pods);
        let remove_at_least = (active - want).max(0) as usize;
        let mut victims = surplus;
        let more = remove_at_least.saturating_sub(victims.len());
        victims.extend(active_pods.iter().take(more).copied());
        if !victims.is_empty() {
            let deleted = delete_pods(store, job, &victims, MAX_PODS_PER_SYNC, now)?;
            return Ok((active - deleted as i32, None));
        }
        let terminating = if job.spec.pod_replacement_policy == Some(PodReplacementPolicy::Failed) {
            pods.iter()
                .filter(|p| crate::workload::is_terminating(p))
                .count() as i32
        } else {
            0
        };
        let indexes: Vec<i32> = if is_indexed(job) {
            let completions = job.spec.completions.unwrap_or(0);
            let taken: BTreeSet<i32> = active_pods
                .iter()
                .filter_map(|p| completion_index(p))
                .collect();
            (0..completions)
                .filter(|i| {
                    !counts.succeeded_indexes.contains(i)
                        && !counts.failed_indexes.contains(i)
                        && !taken.contains(i)
                })
                .take((want - active).max(0) as usize)
                .collect()
        } else {
            Vec::new()
        };
        let diff = if is_indexed(job) {
            indexes.len() as i32
        } else {
            want - terminating - active
        };
        if diff <= 0 {
            return Ok((active, None));
        }
        // A failure delays the next pods (upstream's back-off record).
        if counts.failures > 0
            && let Some(last) = counts.last_failure
        {
            let shift = counts.failures.saturating_sub(1).min(16);
            let delay = POD_FAILURE_BACKOFF_MILLIS
                .saturating_mul(1 << shift)
                .min(MAX_POD_FAILURE_BACKOFF_MILLIS);
            let at = last.plus_millis(delay);
            if at > now {
                return Ok((active, Some(at)));
            }
        }
        let count = (diff as usize).min(MAX_PODS_PER_SYNC);
        let created = create_pods(store, job, pods, &indexes, count, now)?;
        Ok((active + created as i32, None))
    }

    /// The `Suspended` condition and its Events; a resumed Job's start time restarts.
    fn suspend_condition(
        &self,
        store: &mut Store,
        job: &Job,
        status: &mut JobStatus,
        now: SimTime,
    ) -> Result<(), String> {
        let suspended = job.spec.suspend == Some(true);
        let current = status.conditions.iter().find(|c| c.type_ == "Suspended");
        let (want, reason, message, event) = if suspended {
            ("True", "JobSuspended", "Job suspended", "Suspended")
        } else {
            if current.is_none() {
                return Ok(());
            }
            ("False", "JobResumed", "Job resumed", "Resumed")
        };
        if current.is_some_and(|c| c.status == want) {
            return Ok(());
        }
        let mut c = new_condition("Suspended", reason, message, now);
        c.status = want.into();
        status.conditions.retain(|c| c.type_ != "Suspended");
        status.conditions.push(c);
        if !suspended {
            status.start_time = Some(now.rfc3339());
        }
        let involved = events::reference(job);
        events::record(
            store,
            now,
            &involved,
            EventKind::Normal,
            event,
            message,
            Source::component(COMPONENT),
        )
    }

    /// Writes the counts as upstream's `trackJobStatusAndRemoveFinalizers`: the newly finished
    /// pods into `uncountedTerminatedPods` (with the interim condition), their finalizers
    /// removed, then the counters; and once nothing is left to count or delete, the terminal
    /// condition and its Event.
    fn track(
        &mut self,
        store: &mut Store,
        job: &Job,
        mut status: JobStatus,
        counts: &Counts,
        finished: Option<JobCondition>,
        now: SimTime,
    ) -> Result<(), String> {
        let uid = &job.metadata.uid;
        if let Some(c) = &finished
            && !status.conditions.iter().any(|x| x.type_ == c.type_)
        {
            status.conditions.push(c.clone());
        }
        if !counts.new_finished.is_empty() {
            let uncounted = status
                .uncounted_terminated_pods
                .get_or_insert_with(UncountedTerminatedPods::default);
            for (pod_uid, succeeded, _) in &counts.new_finished {
                let list = if *succeeded {
                    &mut uncounted.succeeded
                } else {
                    &mut uncounted.failed
                };
                if !list.contains(pod_uid) {
                    list.push(pod_uid.clone());
                }
            }
            let job = write_status(store, job, status.clone())?;
            for (_, _, name) in &counts.new_finished {
                let key = ObjectKey::new(Kind::Pod, job.metadata.namespace.as_str(), name.as_str());
                remove_finalizer(store, &key, TRACKING_FINALIZER)?;
            }
            status = job.status.clone();
        }
        status.uncounted_terminated_pods = Some(UncountedTerminatedPods::default());
        status.succeeded = counts.succeeded;
        status.failed = counts.failed;
        if is_indexed(job) {
            status.completed_indexes = format_indexes(&counts.succeeded_indexes);
        }
        if job.spec.backoff_limit_per_index.is_some() {
            status.failed_indexes = Some(format_indexes(&counts.failed_indexes));
        }
        if counts.failures > 0 {
            if let Some(last) = counts.last_failure {
                self.backoff.insert(uid.clone(), (counts.failures, last));
            }
        } else {
            self.backoff.remove(uid);
        }
        let mut event = None;
        if let Some(c) = &finished
            && status.active == 0
            && status.terminating.unwrap_or(0) == 0
        {
            let (type_, kind, reason, message) = if c.type_ == "SuccessCriteriaMet" {
                status.completion_time = Some(now.rfc3339());
                (
                    "Complete",
                    EventKind::Normal,
                    "Completed".to_string(),
                    "Job completed".to_string(),
                )
            } else {
                (
                    "Failed",
                    EventKind::Warning,
                    c.reason.clone(),
                    c.message.clone(),
                )
            };
            if !status.conditions.iter().any(|x| x.type_ == type_) {
                status
                    .conditions
                    .push(new_condition(type_, &c.reason, &c.message, now));
                event = Some((kind, reason, message));
            }
        }
        let written = write_status(store, job, status)?;
        if let Some((kind, reason, message)) = event {
            let involved = events::reference(&*written);
            events::record(
                store,
                now,
                &involved,
                kind,
                &reason,
                &message,
                Source::component(COMPONENT),
            )?;
            self.backoff.remove(uid);
        }
        Ok(())
    }

    /// A finished Job with `ttlSecondsAfterFinished`: deleted (in the foreground, as the TTL
    /// controller does) once that long has passed since it finished.
    fn expire(&mut self, store: &mut Store, job: &Job, now: SimTime) -> Result<Action, String> {
        let Some(ttl) = job.spec.ttl_seconds_after_finished else {
            return Ok(Action::Done);
        };
        if job.metadata.deletion_timestamp.is_some() {
            return Ok(Action::Done);
        }
        let finished_at = job
            .status
            .conditions
            .iter()
            .filter(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
            .filter_map(|c| c.last_transition_time.as_deref())
            .filter_map(SimTime::parse_rfc3339)
            .min()
            .unwrap_or(now);
        let due = finished_at.plus_seconds(ttl.max(0) as u64);
        if due > now {
            return Ok(Action::RequeueAfterMillis(due.0 - now.0));
        }
        delete_with(store, &Store::key_of(job), Propagation::Foreground, now)?;
        Ok(Action::Done)
    }
}

/// When a finished pod's last container finished (its `finishedAt`), else its start.
fn finish_time(pod: &Pod) -> SimTime {
    pod.status
        .container_statuses
        .as_ref()
        .and_then(|s| s.as_array())
        .into_iter()
        .flatten()
        .filter_map(|c| c.pointer("/state/terminated/finishedAt")?.as_str())
        .filter_map(SimTime::parse_rfc3339)
        .max()
        .unwrap_or(SimTime::ZERO)
}

fn write_status(store: &mut Store, job: &Job, status: JobStatus) -> Result<Arc<Job>, String> {
    let current = store
        .get_shared::<Job>(&job.metadata.namespace, &job.metadata.name)
        .ok_or_else(|| {
            format!(
                "Job {}/{} is gone",
                job.metadata.namespace, job.metadata.name
            )
        })?;
    if current.status == status {
        return Ok(current.clone());
    }
    let mut updated = Job::clone(current);
    updated.status = status;
    store.update_shared(updated).map_err(|e| e.to_string())
}

/// Deletes up to `limit` of the pods, with `SuccessfulDelete` Events. Returns how many went
/// (or started going).
fn delete_pods(
    store: &mut Store,
    job: &Job,
    pods: &[&Pod],
    limit: usize,
    now: SimTime,
) -> Result<usize, String> {
    let involved = events::reference(job);
    let mut deleted = 0;
    for pod in pods.iter().take(limit) {
        let key = Store::key_of(*pod);
        crate::workload::delete_object(store, &key, now)?;
        deleted += 1;
        events::record(
            store,
            now,
            &involved,
            EventKind::Normal,
            "SuccessfulDelete",
            &format!("Deleted pod: {}", pod.metadata.name),
            Source::component(COMPONENT),
        )?;
    }
    Ok(deleted)
}

/// Creates `count` pods (for the given indexes, when Indexed), with `SuccessfulCreate` Events.
fn create_pods(
    store: &mut Store,
    job: &Job,
    pods: &[Arc<Pod>],
    indexes: &[i32],
    count: usize,
    now: SimTime,
) -> Result<usize, String> {
    let involved = events::reference(job);
    let mut template = job.spec.template.clone();
    if !template
        .metadata
        .finalizers
        .iter()
        .any(|f| f == TRACKING_FINALIZER)
    {
        Arc::make_mut(&mut template)
            .metadata
            .finalizers
            .push(TRACKING_FINALIZER.to_string());
    }
    let indexed = is_indexed(job);
    let mut created = 0;
    for n in 0..count {
        let index = indexed.then(|| indexes.get(n).copied()).flatten();
        if indexed && index.is_none() {
            break;
        }
        // Only an Indexed Job's pods differ from the template (one copy each).
        let mut with_index = None;
        let prefix = match index {
            Some(i) => {
                let t = with_index.insert(PodTemplateSpec::clone(&template));
                add_index(t, i, &job.metadata.name);
                if job.spec.backoff_limit_per_index.is_some() {
                    let failures = pods
                        .iter()
                        .filter(|p| {
                            completion_index(p) == Some(i) && is_failed(p, job) && is_terminated(p)
                        })
                        .count();
                    t.metadata
                        .annotations
                        .insert(INDEX_FAILURE_COUNT.into(), failures.to_string());
                }
                pods_prefix(&format!("{}-{i}", job.metadata.name))
            }
            None => pods_prefix(&job.metadata.name),
        };
        let t = with_index.as_ref().unwrap_or(&template);
        let pod = owned_pod(Kind::Job, &job.metadata, t, &prefix);
        workload::create_pod(store, now, &involved, Source::component(COMPONENT), pod)?;
        created += 1;
    }
    Ok(created)
}

/// The completion index on a pod template: annotation, label (`PodIndexLabel`), the
/// `JOB_COMPLETION_INDEX` variable in every container (from the annotation, as upstream's
/// downward API reference) and the hostname `<job>-<index>`.
fn add_index(template: &mut PodTemplateSpec, index: i32, job: &str) {
    let value = index.to_string();
    template
        .metadata
        .annotations
        .insert(COMPLETION_INDEX.into(), value.clone());
    template
        .metadata
        .labels
        .insert(COMPLETION_INDEX.into(), value);
    let variable = serde_json::json!({
        "name": COMPLETION_INDEX_ENV,
        "valueFrom": {"fieldRef": {
            "apiVersion": "v1",
            "fieldPath": format!("metadata.annotations['{COMPLETION_INDEX}']"),
        }},
    });
    for c in template
        .spec
        .init_containers
        .iter_mut()
        .chain(template.spec.containers.iter_mut())
    {
        let mut env = match c.env.take() {
            Some(serde_json::Value::Array(list)) => list,
            _ => Vec::new(),
        };
        if !env
            .iter()
            .any(|e| e.get("name").and_then(|n| n.as_str()) == Some(COMPLETION_INDEX_ENV))
        {
            env.push(variable.clone());
        }
        c.env = Some(serde_json::Value::Array(env));
    }
    if template.spec.hostname.is_none() {
        template.spec.hostname = Some(serde_json::Value::String(format!("{job}-{index}")));
    }
}

#[cfg(test)]
mod tests;
