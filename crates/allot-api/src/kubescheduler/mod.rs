//! The `kubescheduler.config.k8s.io` API group: the scheduler's configuration file.

pub mod v1;
