//! The `batch` API group: Job and CronJob.

pub mod v1;
