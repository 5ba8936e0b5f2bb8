//! The `apps` API group: Deployment, ReplicaSet, StatefulSet, DaemonSet, ControllerRevision.

pub mod v1;
