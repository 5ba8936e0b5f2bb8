//! `batch/v1`: Job and CronJob.

use serde::{Deserialize, Serialize};

use crate::core::v1::*;
use crate::meta::v1::{LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "batch/v1";

string_enum! {
    /// How a Job counts completions: any pods (`NonIndexed`) or one per index (`Indexed`).
    pub enum CompletionMode {
        /// `NonIndexed`.
        NonIndexed = "NonIndexed",
        /// `Indexed`.
        Indexed = "Indexed",
    }
}

string_enum! {
    /// When a Job creates a replacement pod.
    pub enum PodReplacementPolicy {
        /// `TerminatingOrFailed`.
        TerminatingOrFailed = "TerminatingOrFailed",
        /// `Failed`.
        Failed = "Failed",
    }
}

string_enum! {
    /// How a CronJob treats a run while the previous one is still going.
    pub enum ConcurrencyPolicy {
        /// `Allow`.
        Allow = "Allow",
        /// `Forbid`.
        Forbid = "Forbid",
        /// `Replace`.
        Replace = "Replace",
    }
}

string_enum! {
    /// What a pod failure policy rule does with a matching failure.
    pub enum PodFailurePolicyAction {
        /// `FailJob`.
        FailJob = "FailJob",
        /// `FailIndex`.
        FailIndex = "FailIndex",
        /// `Ignore`.
        Ignore = "Ignore",
        /// `Count`.
        Count = "Count",
    }
}

string_enum! {
    /// How a pod failure policy compares exit codes.
    pub enum PodFailurePolicyOnExitCodesOperator {
        /// `In`.
        In = "In",
        /// `NotIn`.
        NotIn = "NotIn",
    }
}

/// Runs pods until a number of them complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Job {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: JobSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: JobStatus,
}

/// Creates Jobs on a schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJob {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: CronJobSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: CronJobStatus,
}

/// The desired state of a Job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobSpec {
    /// Parallelism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<i32>,
    /// Completions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<i32>,
    /// Active deadline seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    /// Pod failure policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_failure_policy: Option<PodFailurePolicy>,
    /// Success policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub success_policy: Option<SuccessPolicy>,
    /// Backoff limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit: Option<i32>,
    /// Backoff limit per index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_limit_per_index: Option<i32>,
    /// Max failed indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_failed_indexes: Option<i32>,
    /// The label selector of the pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
    /// Manual selector.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub manual_selector: Option<bool>,
    /// The pods to create.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub template: std::sync::Arc<PodTemplateSpec>,
    /// TTL seconds after finished.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_finished: Option<i32>,
    /// Completion mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_mode: Option<CompletionMode>,
    /// Whether the object is suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Pod replacement policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_replacement_policy: Option<PodReplacementPolicy>,
    /// Managed by.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub managed_by: Option<String>,
    /// Scheduling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling: Option<Opaque>,
}

/// The observed state of a Job.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobStatus {
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<JobCondition>,
    /// Start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
    /// Completion time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,
    /// Active.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub active: i32,
    /// Succeeded.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub succeeded: i32,
    /// Failed.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub failed: i32,
    /// Terminating.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating: Option<i32>,
    /// Completed indexes.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub completed_indexes: String,
    /// Failed indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_indexes: Option<String>,
    /// Uncounted terminated pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncounted_terminated_pods: Option<UncountedTerminatedPods>,
    /// Ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<i32>,
}

/// The desired state of a CronJob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJobSpec {
    /// Schedule.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub schedule: String,
    /// Time zone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_zone: Option<String>,
    /// Starting deadline seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub starting_deadline_seconds: Option<i64>,
    /// Concurrency policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub concurrency_policy: Option<ConcurrencyPolicy>,
    /// Whether the object is suspended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Job template.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub job_template: JobTemplateSpec,
    /// Successful jobs history limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub successful_jobs_history_limit: Option<i32>,
    /// Failed jobs history limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_jobs_history_limit: Option<i32>,
}

/// The observed state of a CronJob.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CronJobStatus {
    /// Active.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub active: Vec<ObjectReference>,
    /// Last schedule time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_schedule_time: Option<Time>,
    /// Last successful time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_successful_time: Option<Time>,
}

/// How a Job treats failed pods.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFailurePolicy {
    /// Rules.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub rules: Vec<PodFailurePolicyRule>,
}

/// When an Indexed Job is declared successful before all indexes complete.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuccessPolicy {
    /// Rules.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub rules: Vec<SuccessPolicyRule>,
}

/// One aspect of a Job's state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobCondition {
    /// The condition type.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// When the condition last changed status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// A CamelCase reason for the last transition.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub reason: String,
    /// A human-readable message.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub message: String,
}

/// Finished pods a Job has not counted yet.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UncountedTerminatedPods {
    /// Succeeded.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub succeeded: Vec<String>,
    /// Failed.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub failed: Vec<String>,
}

/// The Job a CronJob creates.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JobTemplateSpec {
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: JobSpec,
}

/// One rule of a pod failure policy: an action and what it matches.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFailurePolicyRule {
    /// Action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<PodFailurePolicyAction>,
    /// On exit codes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_exit_codes: Option<PodFailurePolicyOnExitCodesRequirement>,
    /// On pod conditions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub on_pod_conditions: Vec<PodFailurePolicyOnPodConditionsPattern>,
}

/// One rule of a success policy.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SuccessPolicyRule {
    /// Succeeded indexes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded_indexes: Option<String>,
    /// Succeeded count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub succeeded_count: Option<i32>,
}

/// Matches container exit codes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFailurePolicyOnExitCodesRequirement {
    /// Container name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    /// Operator.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<PodFailurePolicyOnExitCodesOperator>,
    /// Values.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub values: Vec<i32>,
}

/// Matches a pod condition.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodFailurePolicyOnPodConditionsPattern {
    /// The type.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
}
