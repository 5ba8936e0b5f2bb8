//! The kube-controller-manager loops that DRA needs, as `allot_runtime::Controller`s.
//!
//! Key design decision: each controller keeps only indexes it can rebuild from store events
//! (which claim a pod's template produced, which pods belong to a group), and writes every
//! decision to the store, so the scheduler and node agents are woken by the same events a
//! real cluster would produce. The cost: a controller's view can lag one event behind, so every
//! reconcile re-reads what it needs and is idempotent.
//!
//! The loops: [`ResourceClaimController`] (claims from templates, reservations, deallocation),
//! [`DeviceTaintEvictionController`] (evicts pods from NoExecute-tainted devices once their
//! tolerations run out; `EvictionInProgress` on DeviceTaintRules) and [`PoolStatusController`]
//! (answers ResourcePoolStatusRequests once). Waiting is never sleeping: a toleration that runs
//! out later is a reconcile that asks to come back at that simulated time.

#![deny(missing_docs)]

pub mod devicetainteviction;
pub mod poolstatus;
pub mod resourceclaim;

pub use devicetainteviction::{DeviceTaintEvictionController, EvictionMode};
pub use poolstatus::{PoolStatusController, PoolStatusControllerConfig};
pub use resourceclaim::{ResourceClaimController, ResourceClaimControllerConfig};
