//! The kube-controller-manager loops allot runs, as `allot_runtime::Controller`s: the DRA loops,
//! the workload controllers, the garbage collector, and the recording of Events.
//!
//! Key design decision: each controller keeps only indexes it can rebuild from store events
//! (which claim a pod's template produced, which pods belong to a group), and writes every
//! decision to the store, so the scheduler and node agents are woken by the same events a
//! real cluster would produce. The cost: a controller's view can lag one event behind, so every
//! reconcile re-reads what it needs and is idempotent.
//!
//! The DRA loops: [`ResourceClaimController`] (claims from templates, reservations,
//! deallocation), [`DeviceTaintEvictionController`] (evicts pods from NoExecute-tainted devices
//! once their tolerations run out; `EvictionInProgress` on DeviceTaintRules) and
//! [`PoolStatusController`] (answers ResourcePoolStatusRequests once). The workload loops:
//! [`DeploymentController`], [`ReplicaSetController`], [`StatefulSetController`],
//! [`DaemonSetController`], [`JobController`] (with TTL after finished), [`CronJobController`];
//! the [`GarbageCollector`] (owner references: background, foreground and orphan deletion);
//! and [`EventRecorder`] with [`events::record`], the one way Events are written. Waiting is
//! never sleeping: a toleration that runs out, a `minReadySeconds`, a back-off or a cron
//! schedule is a reconcile that asks to come back at that simulated time.

#![deny(missing_docs)]

pub mod cron;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod devicetainteviction;
pub mod events;
pub mod garbagecollector;
pub mod job;
pub mod persistentvolume;
pub mod poolstatus;
pub mod replicaset;
pub mod resourceclaim;
pub mod statefulset;
pub mod workload;

pub(crate) mod history;
#[cfg(test)]
mod testkit;

pub use cronjob::CronJobController;
pub use daemonset::DaemonSetController;
pub use deployment::DeploymentController;
pub use devicetainteviction::{DeviceTaintEvictionController, EvictionMode};
pub use events::EventRecorder;
pub use garbagecollector::GarbageCollector;
pub use job::JobController;
pub use persistentvolume::PersistentVolumeController;
pub use poolstatus::{PoolStatusController, PoolStatusControllerConfig};
pub use replicaset::ReplicaSetController;
pub use resourceclaim::{ResourceClaimController, ResourceClaimControllerConfig};
pub use statefulset::StatefulSetController;
