//! The `autoscaling` API group: HorizontalPodAutoscaler (v2).

pub mod v2;
