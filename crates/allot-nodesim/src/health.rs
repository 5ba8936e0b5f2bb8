//! Device health as the kubelet's DRA health cache sees it.
//!
//! A driver streams health reports for its devices. In the simulation the stream is the
//! [`DEVICE_HEALTH_ANNOTATION`] of the ResourceSlices listing the device (set by allot-sim's
//! Timeline): a device named there as `Healthy` or `Unhealthy` is reported with that health
//! continuously, a device not named is reported `Healthy`, and a device named `Unknown` is one
//! the driver stopped reporting. As upstream's `healthInfoCache`, the kubelet keeps the last
//! reported health until the driver's timeout has passed since the last report, then says
//! `Unknown`.

use std::collections::BTreeMap;

use allot_api::resource::v1::{DeviceRequestAllocationResult, ResourceSlice};
use allot_runtime::SimTime;

/// ResourceSlice annotation holding device health: a JSON object from device name to
/// `Healthy`, `Unhealthy` or `Unknown` (devices not named are healthy). The same key as
/// allot-sim's Timeline writes.
pub const DEVICE_HEALTH_ANNOTATION: &str = "allot.dev/device-health";

/// A device: driver, pool, name.
pub(crate) type DeviceId = (String, String, String);

/// The device an allocation result names.
pub(crate) fn device_id(result: &DeviceRequestAllocationResult) -> DeviceId {
    (
        result.driver.to_string(),
        result.pool.to_string(),
        result.device.to_string(),
    )
}

/// What the kubelet remembers of one device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DeviceHealth {
    /// The last health reported (`Healthy` or `Unhealthy`).
    pub last: String,
    /// When the driver stopped reporting, if it did.
    pub stopped_at: Option<SimTime>,
}

/// The health the driver currently reports for `device` in `slice`: `Healthy`, `Unhealthy`,
/// or `Unknown` when it stopped reporting.
pub(crate) fn reported(slice: &ResourceSlice, device: &str) -> String {
    slice
        .metadata
        .annotations
        .get(DEVICE_HEALTH_ANNOTATION)
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|value| {
            value
                .get(device)
                .and_then(|v| v.as_str())
                .map(str::to_string)
        })
        .filter(|h| matches!(h.as_str(), "Healthy" | "Unhealthy" | "Unknown"))
        .unwrap_or_else(|| "Healthy".to_string())
}

/// The kubelet's health cache.
#[derive(Debug, Clone, Default)]
pub(crate) struct HealthCache {
    devices: BTreeMap<DeviceId, DeviceHealth>,
}

impl HealthCache {
    /// Records what the driver reports now.
    pub fn observe(&mut self, device: &DeviceId, report: &str, now: SimTime) {
        if !self.devices.contains_key(device) {
            self.devices.insert(
                device.clone(),
                DeviceHealth {
                    last: "Healthy".into(),
                    stopped_at: None,
                },
            );
        }
        let Some(entry) = self.devices.get_mut(device) else {
            return;
        };
        if report == "Unknown" {
            if entry.stopped_at.is_none() {
                entry.stopped_at = Some(now);
            }
        } else {
            if entry.last != report {
                entry.last = report.to_string();
            }
            entry.stopped_at = None;
        }
    }

    /// The health the kubelet shows at `now` with a timeout of `timeout_ms`, and when that
    /// answer next changes by itself (the timeout expiring), if it does.
    pub fn health(
        &self,
        device: &DeviceId,
        now: SimTime,
        timeout_ms: u64,
    ) -> (String, Option<SimTime>) {
        let Some(entry) = self.devices.get(device) else {
            return ("Healthy".into(), None);
        };
        match entry.stopped_at {
            None => (entry.last.clone(), None),
            Some(stopped) => {
                // Upstream turns a device Unknown once more than the timeout has passed.
                let expires = stopped.plus_millis(timeout_ms);
                if now > expires {
                    ("Unknown".into(), None)
                } else {
                    (entry.last.clone(), Some(expires.plus_millis(1)))
                }
            }
        }
    }
}
