//! The ResourcePoolStatusRequest controller (upstream pkg/controller/resourcepoolstatusrequest).
//!
//! A request is answered once: the pools of its driver (optionally one pool), newest generation
//! only, sorted by driver and pool name and cut to `limit`, with device counts (allocated,
//! unavailable because of NoSchedule/NoExecute taints from slices or DeviceTaintRules,
//! available), the partition summary and the shareable summary. The status is written with a
//! `Complete` condition and never touched again. A pool with fewer slices than it announces is
//! re-examined a few times, as upstream's retries give a driver time to publish the rest; unlike
//! upstream (which then drops the request unanswered), the last attempt writes the status with
//! the pool's `PoolIncomplete:` validation error, so a simulation always ends with an answer.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::Quantity;
use allot_api::meta::v1::Condition;
use allot_api::resource::v1::{
    CounterSet, Device, DeviceCounterConsumption, DeviceTaintEffect, DeviceTaintRule,
    ResourceClaim, ResourceSlice,
};
use allot_api::resource::v1alpha3::{
    CapacitySummary, PartitionSummary, PoolStatus, RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT,
    RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX, ResourcePoolStatusRequest,
    ResourcePoolStatusRequestStatus, ShareableSummary,
};
use allot_runtime::{Action, Context, Controller};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::devicetainteviction::RuleMatcher;

/// The controller's name.
pub const POOL_STATUS_CONTROLLER: &str = "resourcepoolstatusrequest-controller";
/// The most entries of a status list (upstream `maxStatusListItems`).
pub const MAX_STATUS_LIST_ITEMS: usize = 32;
/// How often an incomplete pool is re-examined before the answer is written anyway.
pub const INCOMPLETE_RETRIES: u32 = 5;
/// The wait between re-examinations of an incomplete pool.
pub const INCOMPLETE_RETRY_MILLIS: u64 = 1000;

const PREFIX_POOL_INCOMPLETE: &str = "PoolIncomplete:";
const PREFIX_PARTITION_TYPE_MISSING: &str = "PartitionTypeMissing:";
const PREFIX_PARTITION_COST_MISMATCH: &str = "PartitionCostMismatch:";
const PREFIX_PARTITION_SUMMARY_OVER_CAP: &str = "PartitionSummaryOverCap:";
const PREFIX_SHAREABLE_OVER_CAP: &str = "ShareableSummaryOverCap:";

/// Settings of the controller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PoolStatusControllerConfig {
    /// Delete answered requests this long after their condition was set (upstream: one hour).
    /// `None` keeps them, so that a simulation's final state shows every answer.
    pub cleanup_after_millis: Option<u64>,
}

/// The ResourcePoolStatusRequest controller.
#[derive(Debug, Default)]
pub struct PoolStatusController {
    config: PoolStatusControllerConfig,
    /// Attempts so far per request uid that found an incomplete pool.
    attempts: BTreeMap<String, u32>,
    /// DeviceTaintRule selection.
    matcher: RuleMatcher,
}

/// One device as the views see it.
struct DeviceRecord<'a> {
    device: &'a Device,
    /// The grouping attribute: the slice's `partitionTypeAttribute`, else the request's default.
    partition_attribute: Option<String>,
}

/// Counter sets by name, then counters by name.
type Counters = BTreeMap<String, BTreeMap<String, Quantity>>;

/// The string value of a fully qualified attribute on a device; an attribute in the driver's
/// domain may be written bare.
fn partition_type(driver: &str, device: &Device, qualified: &str) -> Option<String> {
    let attribute = device.attributes.get(qualified).or_else(|| {
        qualified
            .strip_prefix(driver)
            .and_then(|rest| rest.strip_prefix('/'))
            .and_then(|bare| device.attributes.get(bare))
    })?;
    attribute.string_value.clone()
}

fn fits(cost: &[DeviceCounterConsumption], available: &Counters) -> bool {
    cost.iter().all(|c| {
        c.counters.iter().all(|(name, counter)| {
            available
                .get(&c.counter_set)
                .and_then(|set| set.get(name))
                .is_some_and(|have| *have >= counter.value)
        })
    })
}

fn deduct(cost: &[DeviceCounterConsumption], available: &mut Counters) {
    for c in cost {
        let Some(set) = available.get_mut(&c.counter_set) else {
            continue;
        };
        for (name, counter) in &c.counters {
            if let Some(have) = set.get_mut(name) {
                *have -= &counter.value;
            }
        }
    }
}

/// A stable text naming a device's counter cost, to find partition types of mixed cost.
fn cost_key(cost: &[DeviceCounterConsumption]) -> String {
    let mut parts: Vec<String> = cost
        .iter()
        .flat_map(|c| {
            c.counters
                .iter()
                .map(move |(name, counter)| format!("{}/{}={}", c.counter_set, name, counter.value))
        })
        .collect();
    parts.sort();
    parts.join(",")
}

fn cap(mut message: String) -> String {
    if message.len() > 256 {
        let mut end = 256;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
    }
    message
}

/// Everything known about one pool while the answer is built.
#[derive(Default)]
struct PoolData<'a> {
    generation: i64,
    node_name: Option<String>,
    node_name_mixed: bool,
    slice_count: i64,
    expected_slice_count: i64,
    total: i32,
    unavailable: i32,
    devices: Vec<DeviceRecord<'a>>,
    shared_counters: Vec<&'a CounterSet>,
}

/// Whether a device is unavailable: a NoSchedule or NoExecute taint of its own or from a rule
/// selecting it (by driver, pool and device as upstream, or by the class and CEL extension).
fn unavailable(
    store: &Store,
    matcher: &mut RuleMatcher,
    driver: &str,
    pool: &str,
    device: &Device,
    rules: &[&DeviceTaintRule],
) -> bool {
    let blocking = |e: &DeviceTaintEffect| {
        matches!(
            e,
            DeviceTaintEffect::NoSchedule | DeviceTaintEffect::NoExecute
        )
    };
    if device.taints.iter().any(|t| blocking(&t.effect)) {
        return true;
    }
    rules.iter().any(|rule| {
        blocking(&rule.spec.taint.effect)
            && matcher.matches(store, rule, driver, pool, &device.name, Some(device))
    })
}

/// The partition summary of a pool, or the pool's validation error.
fn partition_summary(
    driver: &str,
    pool: &str,
    data: &PoolData<'_>,
    in_use: &BTreeSet<&str>,
) -> Result<Vec<PartitionSummary>, String> {
    struct Group<'a> {
        total: i32,
        fresh: Vec<&'a Device>,
        cost: String,
    }
    let mut groups: BTreeMap<(String, String), Group<'_>> = BTreeMap::new();
    for record in &data.devices {
        let device = record.device;
        let Some(attribute) = &record.partition_attribute else {
            continue;
        };
        if device.consumes_counters.is_empty() {
            continue;
        }
        let Some(type_) = partition_type(driver, device, attribute) else {
            return Err(format!(
                "{PREFIX_PARTITION_TYPE_MISSING} device {:?} in pool {driver}/{pool} does not carry partition type attribute {attribute:?}",
                device.name
            ));
        };
        let cost = cost_key(&device.consumes_counters);
        let group = groups
            .entry((attribute.clone(), type_.clone()))
            .or_insert_with(|| Group {
                total: 0,
                fresh: Vec::new(),
                cost: cost.clone(),
            });
        if group.cost != cost {
            return Err(format!(
                "{PREFIX_PARTITION_COST_MISMATCH} devices of partition type {type_:?} in pool {driver}/{pool} consume different counters"
            ));
        }
        group.total += 1;
        if !in_use.contains(device.name.as_str()) {
            group.fresh.push(device);
        }
    }
    let mut baseline: Counters = BTreeMap::new();
    for set in &data.shared_counters {
        let entry = baseline.entry(set.name.clone()).or_default();
        for (name, counter) in &set.counters {
            entry.insert(name.clone(), counter.value.clone());
        }
    }
    for record in &data.devices {
        if in_use.contains(record.device.name.as_str()) {
            deduct(&record.device.consumes_counters, &mut baseline);
        }
    }
    let mut summary = Vec::new();
    for ((attribute, type_), group) in groups {
        let mut available = baseline.clone();
        let mut allocatable = 0;
        for device in group.fresh {
            if fits(&device.consumes_counters, &available) {
                allocatable += 1;
                deduct(&device.consumes_counters, &mut available);
            }
        }
        summary.push(PartitionSummary {
            attribute,
            type_,
            total: group.total,
            allocatable,
        });
    }
    if summary.len() > MAX_STATUS_LIST_ITEMS {
        return Err(format!(
            "{PREFIX_PARTITION_SUMMARY_OVER_CAP} pool {driver}/{pool} has {} partition types, exceeding the maximum of {MAX_STATUS_LIST_ITEMS}",
            summary.len()
        ));
    }
    Ok(summary)
}

/// The shareable summary of a pool (`None` without shareable devices), or its validation error.
fn shareable_summary(
    driver: &str,
    pool: &str,
    data: &PoolData<'_>,
    in_use: &BTreeSet<&str>,
    consumed: Option<&BTreeMap<String, Quantity>>,
) -> Result<Option<ShareableSummary>, String> {
    let mut summary = ShareableSummary::default();
    let mut totals: BTreeMap<String, Quantity> = BTreeMap::new();
    let mut any = false;
    for record in &data.devices {
        let device = record.device;
        if device.allow_multiple_allocations != Some(true) {
            continue;
        }
        any = true;
        if in_use.contains(device.name.as_str()) {
            summary.partially_available_devices += 1;
        } else {
            summary.fully_available_devices += 1;
        }
        for (name, capacity) in &device.capacity {
            let total = totals.entry(name.clone()).or_default();
            *total += &capacity.value;
        }
    }
    if !any {
        return Ok(None);
    }
    if totals.len() > MAX_STATUS_LIST_ITEMS {
        return Err(format!(
            "{PREFIX_SHAREABLE_OVER_CAP} pool {driver}/{pool} has {} shareable capacity keys, exceeding the maximum of {MAX_STATUS_LIST_ITEMS}",
            totals.len()
        ));
    }
    for (name, total) in totals {
        let used = consumed
            .and_then(|c| c.get(&name))
            .cloned()
            .unwrap_or_default();
        let mut available = total.clone() - &used;
        if available.sign() < 0 {
            available = Quantity::from_i64(0, total.format());
        }
        summary.capacity.insert(
            name,
            CapacitySummary {
                total,
                consumed: used,
                available,
            },
        );
    }
    Ok(Some(summary))
}

/// Computes the answer to a request from the store (upstream `calculatePoolStatus`).
pub fn calculate_pool_status(
    store: &Store,
    matcher: &mut RuleMatcher,
    request: &ResourcePoolStatusRequest,
    now: &str,
) -> ResourcePoolStatusRequestStatus {
    let driver = request.spec.driver.as_str();
    let pool_filter = request.spec.pool_name.as_deref().filter(|p| !p.is_empty());
    let default_attribute = request.spec.default_partition_type_attribute.clone();
    let rules: Vec<&DeviceTaintRule> = store.list::<DeviceTaintRule>().collect();

    let matching: Vec<&ResourceSlice> = store
        .list::<ResourceSlice>()
        .filter(|s| s.spec.driver == driver)
        .filter(|s| pool_filter.is_none_or(|p| s.spec.pool.name == p))
        .collect();
    let mut newest: BTreeMap<&str, i64> = BTreeMap::new();
    for slice in &matching {
        let g = newest
            .entry(slice.spec.pool.name.as_str())
            .or_insert(i64::MIN);
        *g = (*g).max(slice.spec.pool.generation);
    }
    let mut pools: BTreeMap<&str, PoolData<'_>> = BTreeMap::new();
    for slice in &matching {
        let name = slice.spec.pool.name.as_str();
        let generation = newest.get(name).copied().unwrap_or(i64::MIN);
        if slice.spec.pool.generation < generation {
            continue;
        }
        let node_name = slice.spec.node_name.clone().filter(|n| !n.is_empty());
        let data = pools.entry(name).or_insert_with(|| PoolData {
            generation,
            node_name: node_name.clone(),
            expected_slice_count: slice.spec.pool.resource_slice_count,
            ..Default::default()
        });
        if data.slice_count > 0 && data.node_name != node_name {
            data.node_name_mixed = true;
        }
        data.slice_count += 1;
        let attribute = slice
            .spec
            .partition_type_attribute
            .clone()
            .or_else(|| default_attribute.clone());
        for device in &slice.spec.devices {
            data.total += 1;
            if unavailable(store, matcher, driver, name, device, &rules) {
                data.unavailable += 1;
            }
            data.devices.push(DeviceRecord {
                device,
                partition_attribute: attribute.clone(),
            });
        }
        data.shared_counters
            .extend(slice.spec.shared_counters.iter());
    }

    // Devices in use per pool (each device once, admin access excluded) and consumed capacity.
    let mut in_use: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    let mut consumed: BTreeMap<&str, BTreeMap<String, Quantity>> = BTreeMap::new();
    for claim in store.list::<ResourceClaim>() {
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        for result in &allocation.devices.results {
            if result.admin_access == Some(true) || result.driver != driver {
                continue;
            }
            let Some(pool) = pools.get_key_value(result.pool.as_str()).map(|(k, _)| *k) else {
                continue;
            };
            in_use
                .entry(pool)
                .or_default()
                .insert(result.device.as_str());
            for (name, quantity) in &result.consumed_capacity {
                let entry = consumed
                    .entry(pool)
                    .or_default()
                    .entry(name.clone())
                    .or_default();
                *entry += quantity;
            }
        }
    }

    let empty = BTreeSet::new();
    let mut statuses: Vec<PoolStatus> = Vec::new();
    for (name, data) in &pools {
        let mut status = PoolStatus {
            driver: driver.to_string(),
            pool_name: name.to_string(),
            generation: Some(data.generation),
            node_name: data.node_name.clone().filter(|_| !data.node_name_mixed),
            ..Default::default()
        };
        if data.slice_count < data.expected_slice_count {
            status.validation_error = Some(cap(format!(
                "{PREFIX_POOL_INCOMPLETE} pool {driver}/{name} is incomplete: observed {}/{} slices at generation {}",
                data.slice_count, data.expected_slice_count, data.generation
            )));
            statuses.push(status);
            continue;
        }
        let used = in_use.get(name).unwrap_or(&empty);
        let allocated = used.len() as i32;
        status.resource_slice_count = Some(data.slice_count);
        status.total_devices = Some(data.total);
        status.allocated_devices = Some(allocated);
        status.unavailable_devices = Some(data.unavailable);
        status.available_devices = Some((data.total - allocated - data.unavailable).max(0));
        let grouped = data.devices.iter().any(|d| d.partition_attribute.is_some());
        let mut error = None;
        let mut partitions = Vec::new();
        if grouped && data.shared_counters.is_empty() {
            error = Some(format!(
                "{PREFIX_PARTITION_TYPE_MISSING} pool {driver}/{name} declares partitionTypeAttribute but publishes no sharedCounters"
            ));
        } else if grouped {
            match partition_summary(driver, name, data, used) {
                Ok(summary) => partitions = summary,
                Err(e) => error = Some(e),
            }
        }
        match shareable_summary(driver, name, data, used, consumed.get(name)) {
            Ok(summary) => status.shareable_summary = summary,
            Err(e) => {
                error.get_or_insert(e);
            }
        }
        if let Some(error) = error {
            partitions.clear();
            status.validation_error = Some(cap(error));
        }
        status.partition_summary = partitions;
        statuses.push(status);
    }

    let pool_count = statuses.len() as i32;
    let limit = request
        .spec
        .limit
        .unwrap_or(RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT)
        .max(0) as usize;
    statuses.truncate(limit);
    let incomplete = statuses
        .iter()
        .filter(|p| p.validation_error.is_some())
        .count();
    let pools = if statuses.len() == 1 {
        "1 pool".to_string()
    } else {
        format!("{} pools", statuses.len())
    };
    let message = if incomplete > 0 {
        format!("Calculated status for {pools} ({incomplete} incomplete)")
    } else {
        format!("Calculated status for {pools}")
    };
    ResourcePoolStatusRequestStatus {
        pool_count: Some(pool_count),
        pools: statuses,
        conditions: vec![Condition {
            type_: "Complete".into(),
            status: "True".into(),
            observed_generation: None,
            last_transition_time: now.to_string(),
            reason: "CalculationComplete".into(),
            message,
        }],
        ..Default::default()
    }
}

/// A `Failed` answer (upstream `errorStatus`).
fn failed_status(message: String, now: &str) -> ResourcePoolStatusRequestStatus {
    ResourcePoolStatusRequestStatus {
        pool_count: Some(0),
        conditions: vec![Condition {
            type_: "Failed".into(),
            status: "True".into(),
            observed_generation: None,
            last_transition_time: now.to_string(),
            reason: "CalculationFailed".into(),
            message,
        }],
        ..Default::default()
    }
}

impl PoolStatusController {
    /// A controller with the given settings.
    pub fn new(config: PoolStatusControllerConfig) -> Self {
        PoolStatusController {
            config,
            ..Default::default()
        }
    }

    /// The optional clean-up of an answered request: delete it once its time is up.
    fn cleanup(
        &self,
        store: &mut Store,
        key: &ObjectKey,
        request: &ResourcePoolStatusRequest,
        ctx: &Context,
    ) -> Result<Action, String> {
        let Some(ttl) = self.config.cleanup_after_millis else {
            return Ok(Action::Done);
        };
        let set = request
            .status
            .conditions
            .iter()
            .find(|c| c.type_ == "Complete" || c.type_ == "Failed")
            .and_then(|c| allot_runtime::SimTime::parse_rfc3339(&c.last_transition_time))
            .unwrap_or(ctx.now);
        let due = set.plus_millis(ttl);
        if ctx.now > due {
            store.delete(key).map_err(|e| e.to_string())?;
            Ok(Action::Done)
        } else {
            Ok(Action::RequeueAfterMillis(due.0 - ctx.now.0 + 1))
        }
    }
}

impl Controller for PoolStatusController {
    fn name(&self) -> &'static str {
        POOL_STATUS_CONTROLLER
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        match (&event.object, event.event_type) {
            (Stored::ResourcePoolStatusRequest(_), EventType::Added | EventType::Modified) => {
                vec![event.key.clone()]
            }
            _ => Vec::new(),
        }
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if key.kind != Kind::ResourcePoolStatusRequest {
            return Ok(Action::Done);
        }
        let Some(request) = store
            .get::<ResourcePoolStatusRequest>("", &key.name)
            .cloned()
        else {
            return Ok(Action::Done);
        };
        if !request.status.is_empty() {
            // Answered: immutable, only the optional clean-up remains.
            return self.cleanup(store, key, &request, ctx);
        }
        let now = ctx.now.rfc3339();
        let limit = request
            .spec
            .limit
            .unwrap_or(RESOURCE_POOL_STATUS_REQUEST_LIMIT_DEFAULT);
        let status = if request.spec.driver.is_empty() {
            failed_status("spec.driver: Required value".into(), &now)
        } else if !(1..=RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX).contains(&limit) {
            failed_status(
                format!(
                    "spec.limit: Invalid value: {limit}: must be between 1 and {RESOURCE_POOL_STATUS_REQUEST_LIMIT_MAX}, inclusive"
                ),
                &now,
            )
        } else {
            let status = calculate_pool_status(store, &mut self.matcher, &request, &now);
            let incomplete = status.pools.iter().any(|p| {
                p.validation_error
                    .as_deref()
                    .is_some_and(|e| e.starts_with(PREFIX_POOL_INCOMPLETE))
            });
            let attempts = self
                .attempts
                .entry(request.metadata.uid.clone())
                .or_default();
            if incomplete && *attempts < INCOMPLETE_RETRIES {
                *attempts += 1;
                return Ok(Action::RequeueAfterMillis(INCOMPLETE_RETRY_MILLIS));
            }
            status
        };
        self.attempts.remove(&request.metadata.uid);
        store
            .modify::<ResourcePoolStatusRequest, _>("", &key.name, |r| {
                r.status = status.clone();
            })
            .map_err(|e| e.to_string())?;
        Ok(Action::Done)
    }
}

#[cfg(test)]
mod tests;
