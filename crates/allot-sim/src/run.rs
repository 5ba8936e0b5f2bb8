//! Running a simulation: the store from the input, the controllers in their fixed order, the
//! timeline on the simulated clock, then the run until nothing is left to do.

use std::path::PathBuf;

use allot_api::core::v1::Pod;
use allot_api::meta::v1::Condition;
use allot_api::resource::v1::{AllocatedDeviceStatus, ResourceClaim, ResourceSlice};
use allot_runtime::{Controller, Runtime, RuntimeError, SimTime};
use allot_store::{Store, StoreError, Stored};

use crate::SimError;
use crate::input::{Action, Input, ScheduledEvent, stored_key};
use crate::timeline::{ClaimDeviceCondition, DEVICE_HEALTH_ANNOTATION, DeviceHealth};

/// How far a run has got, for a progress display.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Reconciles so far.
    pub reconciles: u64,
    /// Pods bound to a node.
    pub bound_pods: usize,
    /// Pods running (or finished) on their node.
    pub running_pods: usize,
    /// Pods in total.
    pub pods: usize,
    /// The simulated time reached.
    pub now: SimTime,
}

/// The result of a run.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// Every object's final state.
    pub store: Store,
    /// The simulated time the run stopped at.
    pub end: SimTime,
    /// How many reconciles ran.
    pub reconciles: u64,
    /// Reconcile failures (`time: controller: key: message`), in order.
    pub reconcile_errors: Vec<String>,
    /// Timeline events that could not be applied (`file:line: message`), in order.
    pub event_errors: Vec<String>,
    /// Device metadata files the node agents wrote, as paths relative to the output folder
    /// and their final contents, in path order.
    pub metadata_files: Vec<(PathBuf, Vec<u8>)>,
    /// The names of the controllers that ran, in order.
    pub controllers: Vec<String>,
    /// Where the run's time went (reconciles and time per controller, event dispatch).
    pub stats: allot_runtime::Stats,
    /// Every pod's life, the Event timeline and the run's figures.
    pub report: crate::record::Report,
}

/// Reconciles between two progress reports.
const PROGRESS_CHUNK: u64 = 5_000;

/// The controllers of a run, and the metadata logs of its node agents.
struct Controllers {
    list: Vec<Box<dyn Controller>>,
    metadata: Vec<allot_nodesim::MetadataLog>,
}

/// The controllers in their fixed order: ResourceClaimController, Scheduler, one NodeAgent per
/// node (in node name order), DeviceTaintEvictionController, PoolStatusController, the workload
/// controllers (Deployment, ReplicaSet, StatefulSet, the PersistentVolume binder, DaemonSet, Job,
/// CronJob), the
/// EventRecorder and the GarbageCollector.
fn controllers(input: &Input, store: &Store) -> Result<Controllers, SimError> {
    controllers_for(input, store, &[], &[])
}

/// [`controllers`], with node agents also for `later` nodes (created after the start, with
/// their slices `later_slices`), in node name order among the others.
fn controllers_for(
    input: &Input,
    store: &Store,
    later: &[allot_api::core::v1::Node],
    later_slices: &[ResourceSlice],
) -> Result<Controllers, SimError> {
    let mut list: Vec<Box<dyn Controller>> = Vec::new();
    list.push(Box::new(allot_controllers::ResourceClaimController::new(
        allot_controllers::ResourceClaimControllerConfig {
            workload_resource_claims: input.gate("DRAWorkloadResourceClaims"),
        },
    )));
    list.push(Box::new(allot_scheduler::Scheduler::new(
        allot_scheduler::SchedulerConfig {
            features: input.features,
            binding_timeout_seconds: input.binding_timeout_seconds,
            extended_resource: input.gate("DRAExtendedResource"),
            node_allocatable_resources: input.gate("DRANodeAllocatableResources"),
            configuration: input.scheduler_configuration.clone(),
            ..allot_scheduler::SchedulerConfig::default()
        },
    )));
    let drivers: std::collections::BTreeSet<String> = store
        .list::<ResourceSlice>()
        .chain(later_slices)
        .map(|s| s.spec.driver.clone())
        .collect();
    let timeout_seconds = input.driver_health_timeout_millis.div_ceil(1000);
    let mut metadata = Vec::new();
    let mut nodes: Vec<&allot_api::core::v1::Node> = store
        .list::<allot_api::core::v1::Node>()
        .chain(later)
        .collect();
    nodes.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    for node in nodes {
        let (topology, kubelet_config) = input.node_setup(node);
        let mut config = allot_nodesim::NodeAgentConfig::new(
            node.metadata.name.clone(),
            topology,
            kubelet_config,
        );
        config.features = allot_nodesim::NodeFeatures {
            resource_health_status: input.gate("ResourceHealthStatus"),
            resource_claim_device_status: input.features.resource_claim_device_status,
            node_allocatable_resources: input.gate("DRANodeAllocatableResources"),
            optional_node_operations: input.features.optional_node_operations,
        };
        config.driver_health_timeout = drivers
            .iter()
            .map(|d| (d.clone(), timeout_seconds))
            .collect();
        let agent = allot_nodesim::NodeAgent::new(config).map_err(|err| SimError::Node {
            node: node.metadata.name.clone(),
            message: err.to_string(),
        })?;
        metadata.push(agent.metadata_log());
        list.push(Box::new(agent));
    }
    let mode = match input.options.eviction_mode.as_deref() {
        Some("MarkFailed") => allot_controllers::EvictionMode::MarkFailed,
        _ => allot_controllers::EvictionMode::Delete,
    };
    list.push(Box::new(
        allot_controllers::DeviceTaintEvictionController::new(mode),
    ));
    list.push(Box::new(allot_controllers::PoolStatusController::new(
        allot_controllers::PoolStatusControllerConfig::default(),
    )));
    list.push(Box::new(allot_controllers::DeploymentController::new()));
    list.push(Box::new(allot_controllers::ReplicaSetController::new()));
    list.push(Box::new(allot_controllers::StatefulSetController::new()));
    list.push(Box::new(
        allot_controllers::PersistentVolumeController::new(),
    ));
    list.push(Box::new(allot_controllers::DaemonSetController::new()));
    list.push(Box::new(allot_controllers::JobController::new()));
    list.push(Box::new(allot_controllers::CronJobController::new()));
    list.push(Box::new(allot_controllers::EventRecorder::new()));
    list.push(Box::new(allot_controllers::GarbageCollector::new()));
    Ok(Controllers { list, metadata })
}

/// Creates the input's objects in input order at the start of time. The store copies each
/// object it is given while the input still shares it.
fn initial_store(objects: Vec<Stored>) -> Result<Store, SimError> {
    let mut store = Store::new();
    let now = SimTime::ZERO.rfc3339();
    for object in objects {
        let key = stored_key(&object);
        store
            .create_stored(object, &now)
            .map_err(|err| SimError::Store {
                key: key.to_string(),
                message: err.to_string(),
            })?;
    }
    Ok(store)
}

/// How many reconciles may run without the clock moving before the run is declared stuck.
fn reconcile_bound(store: &Store) -> u64 {
    let objects = store.iter().count() as u64;
    (objects.saturating_mul(200)).max(1_000_000)
}

/// The run's progress at this point.
fn progress_now(runtime: &Runtime) -> Progress {
    let mut progress = Progress {
        reconciles: runtime.reconciles(),
        bound_pods: 0,
        running_pods: 0,
        pods: 0,
        now: runtime.now(),
    };
    for pod in runtime.store.list::<Pod>() {
        progress.pods += 1;
        if pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) {
            progress.bound_pods += 1;
        }
        if matches!(pod.status.phase.as_deref(), Some("Running" | "Succeeded")) {
            progress.running_pods += 1;
        }
    }
    progress
}

/// Whether enough wall time has passed since the last progress report of this thread to make
/// another: counting the pods walks all of them (a few milliseconds at 50,000 pods), so a
/// display is refreshed once a second.
fn progress_due() -> bool {
    use std::cell::Cell;
    use std::time::{Duration, Instant};
    thread_local! {
        static LAST: Cell<Option<Instant>> = const { Cell::new(None) };
    }
    let now = Instant::now();
    LAST.with(|last| {
        let due = last
            .get()
            .is_none_or(|at| now.duration_since(at) >= Duration::from_millis(1000));
        if due {
            last.set(Some(now));
        }
        due
    })
}

/// Runs everything due now in chunks, reporting progress between chunks (at most every 200
/// ms of wall time).
fn run_due_reporting(
    runtime: &mut Runtime,
    bound: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), SimError> {
    let mut used = 0;
    loop {
        match runtime.run_due(PROGRESS_CHUNK) {
            Ok(()) => return Ok(()),
            Err(RuntimeError::NoProgress { at, .. }) => {
                used += PROGRESS_CHUNK;
                if used >= bound {
                    return Err(SimError::Runtime(RuntimeError::NoProgress {
                        at,
                        reconciles: bound,
                    }));
                }
                if progress_due() {
                    progress(progress_now(runtime));
                }
            }
        }
    }
}

/// Moves the clock to `to` without running anything: with a zero budget `advance_to` stops at
/// the first due item, reporting `NoProgress`, which is expected here; the work then runs in
/// chunks.
fn move_clock(runtime: &mut Runtime, to: SimTime) {
    let _expected_no_progress = runtime.advance_to(to, 0);
}

/// Moves the clock to `to` (or, with `idle`, until nothing is queued but not past `to`),
/// running what falls due on the way.
fn run_until(
    runtime: &mut Runtime,
    to: SimTime,
    idle: bool,
    bound: u64,
    progress: &mut dyn FnMut(Progress),
) -> Result<(), SimError> {
    run_due_reporting(runtime, bound, progress)?;
    while let Some(next) = runtime.next_due() {
        if next > to {
            break;
        }
        move_clock(runtime, next);
        run_due_reporting(runtime, bound, progress)?;
    }
    if !idle {
        move_clock(runtime, to);
        run_due_reporting(runtime, bound, progress)?;
    }
    Ok(())
}

/// Runs a simulation of `input` with every controller. `progress` is called now and then
/// during long runs.
pub fn run(input: &Input, progress: &mut dyn FnMut(Progress)) -> Result<Outcome, SimError> {
    let store = initial_store(input.objects.clone())?;
    run_routed(input, store, progress, true)
}

/// [`run`], moving the input's objects into the store instead of copying them (a big cluster
/// then is not held twice): `input.objects` is empty afterwards; the rest of the input stays
/// (what the output needs of it: topologies, configuration).
pub fn run_moving(
    input: &mut Input,
    progress: &mut dyn FnMut(Progress),
) -> Result<Outcome, SimError> {
    let store = initial_store(std::mem::take(&mut input.objects))?;
    run_routed(input, store, progress, true)
}

/// A controller that takes every store event, whatever the one inside would subscribe to:
/// with `routed == false` a run offers every event to every controller and keeps the whole
/// event log, which must make the same decisions as routing and compaction do (the tests
/// compare both).
struct Broadcast(Box<dyn Controller>);

impl Controller for Broadcast {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn keys_for(&self, event: &allot_store::Event, store: &Store) -> Vec<allot_store::ObjectKey> {
        self.0.keys_for(event, store)
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &allot_store::ObjectKey,
        ctx: &allot_runtime::Context,
    ) -> Result<allot_runtime::Action, String> {
        self.0.reconcile(store, key, ctx)
    }
}

fn run_routed(
    input: &Input,
    store: Store,
    progress: &mut dyn FnMut(Progress),
    routed: bool,
) -> Result<Outcome, SimError> {
    let Controllers { mut list, metadata } = controllers(input, &store)?;
    if !routed {
        list = list
            .into_iter()
            .map(|c| Box::new(Broadcast(c)) as Box<dyn Controller>)
            .collect();
    }
    let ledger = crate::record::Ledger::new();
    let record = ledger.data();
    list.push(Box::new(ledger));
    let names = list.iter().map(|c| c.name().to_string()).collect();
    let bound = reconcile_bound(&store);
    let mut runtime = Runtime::new(store, list, SimTime::ZERO);
    // Nothing outside the runtime's controllers reads the log of a simulation's store.
    runtime.compact_events(routed);
    let mut event_errors = Vec::new();
    for event in &input.events {
        run_until(&mut runtime, event.at, false, bound, progress)?;
        let now = runtime.now();
        if let Err(message) = apply(&mut runtime.store, event, now) {
            event_errors.push(format!("{}: {message}", event.origin));
        }
    }
    let last = input.events.last().map_or(SimTime::ZERO, |e| e.at);
    let limit = last.plus_millis(input.horizon_millis);
    run_until(&mut runtime, limit, true, bound, progress)?;
    progress(progress_now(&runtime));
    let reconcile_errors = runtime
        .errors()
        .iter()
        .map(|(at, err)| format!("{at}: {err}"))
        .collect();
    let report = crate::record::Report::new(&record.borrow(), &runtime.store, runtime.now());
    Ok(Outcome {
        report,
        end: runtime.now(),
        reconciles: runtime.reconciles(),
        reconcile_errors,
        event_errors,
        metadata_files: {
            let mut files: Vec<(PathBuf, Vec<u8>)> =
                metadata.iter().flat_map(|log| log.files()).collect();
            files.sort();
            files
        },
        controllers: names,
        stats: runtime.stats().clone(),
        store: runtime.into_store(),
    })
}

/// Applies one timeline event to the store at `now`.
fn apply(store: &mut Store, event: &ScheduledEvent, now: SimTime) -> Result<(), String> {
    match &event.action {
        Action::Advance => Ok(()),
        Action::Create(objects) => {
            let stamp = now.rfc3339();
            let mut problems = Vec::new();
            for object in objects {
                // A pod arriving later meets the Priority admission plugin as at the start.
                let object = match object {
                    Stored::Pod(pod) => {
                        match allot_controllers::workload::admit_priority(store, (**pod).clone()) {
                            Ok(pod) => Stored::Pod(std::sync::Arc::new(pod)),
                            Err(err) => {
                                problems.push(err);
                                continue;
                            }
                        }
                    }
                    other => other.clone(),
                };
                if let Err(err) = store.create_stored(object, &stamp) {
                    problems.push(err.to_string());
                }
            }
            join(problems)
        }
        Action::Delete(keys) => {
            let mut problems = Vec::new();
            for (key, propagation) in keys {
                if store.get_stored(key).is_none() {
                    problems.push(StoreError::NotFound { key: key.clone() }.to_string());
                    continue;
                }
                if let Err(err) =
                    allot_controllers::garbagecollector::delete_with(store, key, *propagation, now)
                {
                    problems.push(err);
                }
            }
            join(problems)
        }
        Action::Update(objects) => {
            let mut problems = Vec::new();
            for object in objects {
                if let Err(err) = update_object(store, object) {
                    problems.push(err);
                }
            }
            join(problems)
        }
        Action::DeviceHealth(health) => set_device_health(store, health),
        Action::ClaimDeviceCondition(condition) => set_claim_condition(store, condition, now),
    }
}

/// Replaces an existing object's spec, labels and annotations with those of `object`, as a
/// `kubectl apply` of a changed manifest would; the generation counts a changed spec.
fn update_object(store: &mut Store, object: &Stored) -> Result<(), String> {
    let key = stored_key(object);
    let Some(current) = store.get_stored(&key).cloned() else {
        return Err(StoreError::NotFound { key }.to_string());
    };
    let mut merged = current.to_json();
    let new = object.to_json();
    let spec_changed = merged.get("spec") != new.get("spec");
    for field in ["spec", "data", "revision"] {
        if let Some(value) = new.get(field) {
            merged[field] = value.clone();
        }
    }
    for field in ["labels", "annotations"] {
        match new["metadata"].get(field) {
            Some(value) => merged["metadata"][field] = value.clone(),
            None => {
                if let Some(meta) = merged["metadata"].as_object_mut() {
                    meta.remove(field);
                }
            }
        }
    }
    if spec_changed && let Some(generation) = merged["metadata"]["generation"].as_i64() {
        merged["metadata"]["generation"] = (generation + 1).into();
    }
    let raw = allot_api::load::RawDocument {
        file: "timeline".into(),
        line: 0,
        api_version: object.kind().api_version().into(),
        kind: object.kind().name().into(),
        value: merged,
        source_map: Default::default(),
    };
    let decoded = allot_api::load::decode_object(&raw, &allot_api::load::LoadOptions::default())
        .map_err(|e| e.to_string())?;
    let stored = Stored::from_object(decoded).ok_or("not a stored kind")?;
    store
        .update_stored(stored)
        .map(drop)
        .map_err(|e| e.to_string())
}

fn join(problems: Vec<String>) -> Result<(), String> {
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// Records a device's health in the [`DEVICE_HEALTH_ANNOTATION`] of every slice listing it.
fn set_device_health(store: &mut Store, health: &DeviceHealth) -> Result<(), String> {
    let slices: Vec<String> = store
        .list::<ResourceSlice>()
        .filter(|s| {
            s.spec.driver == health.driver
                && s.spec.pool.name == health.pool
                && s.spec.devices.iter().any(|d| d.name == health.device)
        })
        .map(|s| s.metadata.name.clone())
        .collect();
    if slices.is_empty() {
        return Err(format!(
            "no ResourceSlice lists device {}/{}/{}",
            health.driver, health.pool, health.device
        ));
    }
    for name in slices {
        store
            .modify::<ResourceSlice, _>("", &name, |slice| {
                let mut map: serde_json::Map<String, serde_json::Value> = slice
                    .metadata
                    .annotations
                    .get(DEVICE_HEALTH_ANNOTATION)
                    .and_then(|text| serde_json::from_str(text).ok())
                    .unwrap_or_default();
                if health.health == "Healthy" {
                    map.remove(&health.device);
                } else {
                    map.insert(
                        health.device.clone(),
                        serde_json::Value::String(health.health.clone()),
                    );
                }
                let mut sorted: Vec<(String, serde_json::Value)> = map.into_iter().collect();
                sorted.sort_by(|a, b| a.0.cmp(&b.0));
                if sorted.is_empty() {
                    slice.metadata.annotations.remove(DEVICE_HEALTH_ANNOTATION);
                } else {
                    let map: serde_json::Map<String, serde_json::Value> =
                        sorted.into_iter().collect();
                    slice.metadata.annotations.insert(
                        DEVICE_HEALTH_ANNOTATION.to_string(),
                        serde_json::Value::Object(map).to_string(),
                    );
                }
            })
            .map_err(|err: StoreError| err.to_string())?;
    }
    Ok(())
}

/// Sets (or replaces, by type) a condition in a claim's `status.devices` entry for a device,
/// adding the entry when the device is allocated to the claim but has none yet.
fn set_claim_condition(
    store: &mut Store,
    spec: &ClaimDeviceCondition,
    now: SimTime,
) -> Result<(), String> {
    let Some(claim) = store.get::<ResourceClaim>(&spec.namespace, &spec.claim) else {
        return Err(format!(
            "ResourceClaim {}/{} not found",
            spec.namespace, spec.claim
        ));
    };
    let allocated = claim.status.allocation.as_ref().is_some_and(|a| {
        a.devices
            .results
            .iter()
            .any(|r| r.driver == spec.driver && r.pool == spec.pool && r.device == spec.device)
    });
    if !allocated {
        return Err(format!(
            "device {}/{}/{} is not allocated to ResourceClaim {}/{}",
            spec.driver, spec.pool, spec.device, spec.namespace, spec.claim
        ));
    }
    let stamp = now.rfc3339();
    store
        .modify::<ResourceClaim, _>(&spec.namespace, &spec.claim, |claim| {
            let devices = &mut claim.status.devices;
            let index = match devices.iter().position(|d| {
                d.driver == spec.driver && d.pool == spec.pool && d.device == spec.device
            }) {
                Some(index) => index,
                None => {
                    devices.push(AllocatedDeviceStatus {
                        driver: spec.driver.clone(),
                        pool: spec.pool.clone(),
                        device: spec.device.clone(),
                        ..AllocatedDeviceStatus::default()
                    });
                    devices.len() - 1
                }
            };
            let entry = &mut devices[index];
            let reason = if spec.condition.reason.is_empty() {
                spec.condition.type_.clone()
            } else {
                spec.condition.reason.clone()
            };
            let transition = match entry
                .conditions
                .iter()
                .find(|c| c.type_ == spec.condition.type_)
            {
                Some(existing) if existing.status == spec.condition.status => {
                    existing.last_transition_time.clone()
                }
                _ => stamp.clone(),
            };
            entry.conditions.retain(|c| c.type_ != spec.condition.type_);
            entry.conditions.push(Condition {
                type_: spec.condition.type_.clone(),
                status: spec.condition.status.clone(),
                observed_generation: None,
                last_transition_time: transition,
                reason,
                message: spec.condition.message.clone(),
            });
            entry.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
        })
        .map_err(|err| err.to_string())
}

/// The answer to "how many more copies of this pod fit, and where".
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WhatIf {
    /// How many copies were placed before one stayed pending (or failed on its node).
    pub placed: usize,
    /// Copies per node, in node name order.
    pub per_node: Vec<(String, usize)>,
    /// Why the first copy that did not fit stayed pending (the pod's `PodScheduled` message
    /// or failure reason), when one did not fit within the limit.
    pub stopped_because: Option<String>,
    /// The device metadata files at the end (the copies' included), as in [`Outcome`].
    pub metadata_files: Vec<(PathBuf, Vec<u8>)>,
}

/// After running `input`, adds copies of `pod` one at a time (named `<name>-what-if-<n>`),
/// running the controllers after each, until one does not end up running on a node or `limit`
/// copies were placed.
pub fn what_if(
    input: &Input,
    pod: &Pod,
    limit: usize,
    progress: &mut dyn FnMut(Progress),
) -> Result<WhatIf, SimError> {
    let store = initial_store(input.objects.clone())?;
    let Controllers { list, metadata } = controllers(input, &store)?;
    let controllers = Controllers {
        list: Vec::new(),
        metadata,
    };
    let bound = reconcile_bound(&store);
    let mut runtime = Runtime::new(store, list, SimTime::ZERO);
    runtime.compact_events(true);
    for event in &input.events {
        run_until(&mut runtime, event.at, false, bound, progress)?;
        let now = runtime.now();
        // Event failures are reported by the plain run; here they only shape the state.
        let _ = apply(&mut runtime.store, event, now);
    }
    let last = input.events.last().map_or(SimTime::ZERO, |e| e.at);
    run_until(
        &mut runtime,
        last.plus_millis(input.horizon_millis),
        true,
        bound,
        progress,
    )?;
    let mut per_node: std::collections::BTreeMap<String, usize> = Default::default();
    let mut placed = 0;
    let mut stopped_because = None;
    let base = if pod.metadata.name.is_empty() {
        pod.metadata.generate_name.trim_end_matches('-').to_string()
    } else {
        pod.metadata.name.clone()
    };
    while placed < limit {
        let mut copy = pod.clone();
        copy.metadata.name = format!("{base}-what-if-{}", placed + 1);
        copy.metadata.generate_name.clear();
        copy.metadata.uid.clear();
        copy.metadata.resource_version.clear();
        copy.status = Default::default();
        let now = runtime.now();
        let created = runtime
            .store
            .create_stored(Stored::Pod(std::sync::Arc::new(copy)), &now.rfc3339())
            .map_err(|err| SimError::Store {
                key: format!("Pod {base}-what-if-{}", placed + 1),
                message: err.to_string(),
            })?;
        let key = stored_key(&created);
        let limit_time = runtime.now().plus_millis(input.horizon_millis);
        run_until(&mut runtime, limit_time, true, bound, progress)?;
        let Some(Stored::Pod(after)) = runtime.store.get_stored(&key) else {
            stopped_because = Some("the copy was deleted".to_string());
            break;
        };
        let node = after.spec.node_name.clone().filter(|n| !n.is_empty());
        let failed = after.status.phase.as_deref() == Some("Failed");
        match node {
            Some(node) if !failed => {
                *per_node.entry(node).or_default() += 1;
                placed += 1;
            }
            _ => {
                stopped_because = Some(crate::output::pod_problem(after));
                break;
            }
        }
    }
    let mut metadata_files: Vec<(PathBuf, Vec<u8>)> = controllers
        .metadata
        .iter()
        .flat_map(|log| log.files())
        .collect();
    metadata_files.sort();
    Ok(WhatIf {
        placed,
        per_node: per_node.into_iter().collect(),
        stopped_because,
        metadata_files,
    })
}

pub mod session;

#[cfg(test)]
mod tests;
