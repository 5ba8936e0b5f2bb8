//! core/v1 Events for what happens to pods and workloads: the same recording as `allot
//! simulate`'s, from `allot_controllers::events` (the scheduler's `FailedScheduling` and
//! `Scheduled`, the kubelet's admission rejections and container Events, device-taint
//! eviction, allot's DRA Events, and the workload controllers' own), so `kubectl describe`
//! and `kubectl get events` tell the story.

pub use allot_controllers::events::{
    EventKind, EventRecorder, KUBELET, PodEvent, SCHEDULER, Source, TAINT_EVICTION, event_object,
    pod_events, record, reference,
};
