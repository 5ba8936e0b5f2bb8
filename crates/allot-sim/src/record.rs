//! What happened over time: the [`Ledger`] loop watches every pod and Event of a run and keeps,
//! per pod, when it was created, scheduled, started, finished or deleted (to the millisecond
//! of simulated time) and how it ended, the timeline of Events (every occurrence, also those a
//! repeat folded into one Event's `count`), and the CPUs and devices running pods hold.
//! [`Report`] turns that into the run's figures: makespan, queue wait percentiles, and the
//! utilisation of CPUs and of each device class over time.
//!
//! Key design decision: the ledger is a controller like the others, fed by store events, so it
//! sees a pod that is deleted (evicted, scaled down, garbage collected) before it goes and
//! nothing disappears from the output. The cost: one more reader of every pod event.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use allot_api::core::v1::{Event as CoreEvent, Node, Pod};
use allot_api::resource::v1::{ResourceClaim, ResourceSlice};
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};
use serde::Serialize;

/// One pod's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodRecord {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Its controller, as `Kind/name`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub owner: Option<String>,
    /// Its node.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// How it ended, or where it is: `Pending`, `Running`, `Succeeded`, `Failed`, `Deleted`.
    pub phase: String,
    /// Why it ended that way (the pod's reason, or the Event that came with its deletion).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Created, in milliseconds of simulated time (written as seconds, `createdAt`).
    #[serde(
        rename = "createdAt",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub created: Option<u64>,
    /// Bound to its node.
    #[serde(
        rename = "scheduledAt",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub scheduled: Option<u64>,
    /// Its containers started.
    #[serde(
        rename = "startedAt",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub started: Option<u64>,
    /// It finished (`Succeeded` or `Failed`).
    #[serde(
        rename = "finishedAt",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub finished: Option<u64>,
    /// It was deleted.
    #[serde(
        rename = "deletedAt",
        serialize_with = "seconds",
        skip_serializing_if = "Option::is_none"
    )]
    pub deleted: Option<u64>,
    #[serde(skip)]
    uid: String,
    #[serde(skip)]
    held: Option<Held>,
}

/// Milliseconds as seconds (`1.5`), the unit the report's times are written in.
fn seconds<S: serde::Serializer>(ms: &Option<u64>, serializer: S) -> Result<S::Ok, S::Error> {
    match ms {
        Some(ms) if ms % 1000 == 0 => serializer.serialize_u64(ms / 1000),
        Some(ms) => serializer.serialize_f64(*ms as f64 / 1000.0),
        None => serializer.serialize_none(),
    }
}

/// What a running pod holds: CPU millicores and devices by class.
#[derive(Debug, Clone, Default, PartialEq)]
struct Held {
    cpu_millis: u64,
    /// (device class, `driver/pool/device`) of each allocated device.
    devices: Vec<(String, String)>,
}

/// One Event occurrence.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TimelineEntry {
    /// Milliseconds of simulated time.
    pub at: u64,
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// The reason.
    pub reason: String,
    /// `Kind namespace/name`.
    pub object: String,
    /// The message.
    pub message: String,
    /// The reporting component.
    pub source: String,
}

/// A change of what running pods hold, at a time.
#[derive(Debug, Clone, PartialEq)]
struct Usage {
    at: SimTime,
    cpu_millis: i64,
    devices: BTreeMap<String, i64>,
}

/// What the ledger gathered.
#[derive(Debug, Default)]
pub struct LedgerData {
    pods: Vec<PodRecord>,
    by_uid: HashMap<String, usize>,
    events: Vec<TimelineEntry>,
    usage: Vec<Usage>,
    /// Pod states offered since the last reconcile, reduced to what the record needs.
    pending_pods: Vec<PodState>,
    pending_events: Vec<Arc<CoreEvent>>,
    /// Running pods holding each device (`driver/pool/device`): a device shared by several
    /// pods (one claim, or several claims of a shareable device) counts once.
    device_holders: HashMap<String, u32>,
    /// The drivers each device class allocated from.
    class_drivers: BTreeMap<String, std::collections::BTreeSet<String>>,
}

/// The loop that keeps the record; [`Ledger::data`] is the handle to read it afterwards.
#[derive(Debug, Default)]
pub struct Ledger {
    data: Rc<RefCell<LedgerData>>,
}

impl Ledger {
    /// A ledger.
    pub fn new() -> Self {
        Ledger::default()
    }

    /// A handle on what it gathers, usable after the ledger moved into a runtime.
    pub fn data(&self) -> Rc<RefCell<LedgerData>> {
        self.data.clone()
    }
}

fn key() -> ObjectKey {
    ObjectKey::new(Kind::Pod, "", "ledger")
}

impl Controller for Ledger {
    fn name(&self) -> &'static str {
        "ledger"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        let mut data = self.data.borrow_mut();
        match &event.object {
            Stored::Pod(pod) => data
                .pending_pods
                .push(PodState::of(pod, event.event_type == EventType::Deleted)),
            Stored::Event(e) if event.event_type != EventType::Deleted => {
                data.pending_events.push(Arc::clone(e))
            }
            _ => return Vec::new(),
        }
        vec![key()]
    }

    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Kind(Kind::Pod));
        subscriptions.add(Topic::Kind(Kind::Event));
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        _key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        let mut data = self.data.borrow_mut();
        let pods = std::mem::take(&mut data.pending_pods);
        for pod in pods {
            data.observe(store, pod, ctx.now);
        }
        let events = std::mem::take(&mut data.pending_events);
        for e in events {
            data.events.push(TimelineEntry {
                at: ctx.now.0,
                type_: e.type_.clone().unwrap_or_default(),
                reason: e.reason.clone().unwrap_or_default(),
                object: format!(
                    "{} {}",
                    e.involved_object.kind.as_deref().unwrap_or_default(),
                    match e.involved_object.namespace.as_deref() {
                        Some(ns) if !ns.is_empty() => format!(
                            "{ns}/{}",
                            e.involved_object.name.as_deref().unwrap_or_default()
                        ),
                        _ => e.involved_object.name.clone().unwrap_or_default(),
                    }
                ),
                message: e.message.clone().unwrap_or_default(),
                source: e
                    .source
                    .as_ref()
                    .and_then(|s| s.component.clone())
                    .unwrap_or_default(),
            });
        }
        Ok(Action::Done)
    }
}

/// CPU millicores a pod requests (its containers', or the init containers' largest if more).
fn cpu_millis(pod: &Pod) -> u64 {
    let millis = |c: &allot_api::core::v1::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.requests.get("cpu"))
            .map_or(0, |q| q.milli_value().max(0) as u64)
    };
    let app: u64 = pod.spec.containers.iter().map(millis).sum();
    let init = pod
        .spec
        .init_containers
        .iter()
        .map(millis)
        .max()
        .unwrap_or(0);
    app.max(init)
}

/// The devices a pod's claims hold, by device class; notes the drivers of each class.
fn devices_by_class(
    store: &Store,
    namespace: &str,
    claims: &[String],
    drivers: &mut BTreeMap<String, std::collections::BTreeSet<String>>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for claim in claims {
        let Some(claim) = store.get::<ResourceClaim>(namespace, claim) else {
            continue;
        };
        let Some(allocation) = &claim.status.allocation else {
            continue;
        };
        for r in &allocation.devices.results {
            let (request, sub) = match r.request.split_once('/') {
                Some((a, b)) => (a, Some(b)),
                None => (r.request.as_str(), None),
            };
            let class = claim
                .spec
                .devices
                .requests
                .iter()
                .find(|q| q.name == request)
                .and_then(|q| match sub {
                    Some(sub) => q
                        .first_available
                        .iter()
                        .find(|s| s.name == sub)
                        .map(|s| s.device_class_name.clone()),
                    None => q.exactly.as_ref().map(|e| e.device_class_name.clone()),
                })
                .unwrap_or_else(|| r.driver.to_string());
            drivers
                .entry(class.clone())
                .or_default()
                .insert(r.driver.to_string());
            out.push((class, format!("{}/{}/{}", r.driver, r.pool, r.device)));
        }
    }
    out
}

/// A pod state offered to the ledger, reduced when it is offered to what the record needs:
/// the ledger reconciles after every other loop due at the same instant, so holding the store's
/// copies would keep every state of every pod of a big run alive until then.
#[derive(Debug)]
struct PodState {
    uid: String,
    namespace: String,
    name: String,
    /// The controller, as `Kind/name`.
    owner: Option<String>,
    node: Option<String>,
    phase: String,
    /// `status.reason`, when set.
    reason: Option<String>,
    /// The True DisruptionTarget condition's reason, when there is one.
    disruption: Option<Option<String>>,
    /// What the pod holds in this state, when it runs and is not going.
    holds: Option<Holds>,
    /// Whether the state was the pod's deletion.
    deleted: bool,
}

/// What a running pod holds: its CPU request and the claims whose devices it uses.
#[derive(Debug)]
struct Holds {
    cpu_millis: u64,
    claims: Vec<String>,
}

impl PodState {
    fn of(pod: &Pod, deleted: bool) -> PodState {
        let phase = pod.status.phase.clone().unwrap_or_else(|| "Pending".into());
        let runs = phase == "Running" && !deleted && pod.metadata.deletion_timestamp.is_none();
        PodState {
            uid: pod.metadata.uid.clone(),
            namespace: pod.metadata.namespace.clone(),
            name: pod.metadata.name.clone(),
            owner: allot_controllers::workload::controller_of(&pod.metadata)
                .map(|o| format!("{}/{}", o.kind, o.name)),
            node: pod.spec.node_name.clone().filter(|n| !n.is_empty()),
            phase,
            reason: pod.status.reason.clone().filter(|r| !r.is_empty()),
            disruption: pod
                .status
                .conditions
                .iter()
                .find(|c| c.type_ == "DisruptionTarget" && c.status == "True")
                .map(|c| c.reason.clone()),
            holds: runs.then(|| Holds {
                cpu_millis: cpu_millis(pod),
                claims: crate::output::pod_claims(pod)
                    .into_iter()
                    .map(|(_, claim)| claim)
                    .collect(),
            }),
            deleted,
        }
    }
}

impl LedgerData {
    fn observe(&mut self, store: &Store, pod: PodState, now: SimTime) {
        let index = match self.by_uid.get(&pod.uid) {
            Some(&i) => i,
            None => {
                self.pods.push(PodRecord {
                    namespace: pod.namespace.clone(),
                    name: pod.name,
                    owner: pod.owner,
                    created: Some(now.0),
                    uid: pod.uid.clone(),
                    ..PodRecord::default()
                });
                self.by_uid.insert(pod.uid, self.pods.len() - 1);
                self.pods.len() - 1
            }
        };
        let phase = pod.phase;
        let record = &mut self.pods[index];
        if pod.node.is_some() && record.scheduled.is_none() {
            record.scheduled = Some(now.0);
            record.node = pod.node;
        }
        if phase == "Running" && record.started.is_none() {
            record.started = Some(now.0);
        }
        let ended = matches!(phase.as_str(), "Succeeded" | "Failed");
        if ended && record.finished.is_none() {
            record.finished = Some(now.0);
        }
        record.phase = phase;
        if let Some(reason) = pod.reason {
            record.reason = Some(reason);
        }
        if let Some(reason) = pod.disruption {
            record.reason = reason;
        }
        if pod.deleted {
            record.deleted = Some(now.0);
            record.phase = "Deleted".into();
        }
        // Holding: from the start until it ends or goes.
        match (&record.held, pod.holds) {
            (None, Some(holds)) => {
                let held = Held {
                    cpu_millis: holds.cpu_millis,
                    devices: devices_by_class(
                        store,
                        &pod.namespace,
                        &holds.claims,
                        &mut self.class_drivers,
                    ),
                };
                let mut devices: BTreeMap<String, i64> = BTreeMap::new();
                for (class, device) in &held.devices {
                    let holders = self.device_holders.entry(device.clone()).or_default();
                    *holders += 1;
                    if *holders == 1 {
                        *devices.entry(class.clone()).or_default() += 1;
                    }
                }
                self.usage.push(Usage {
                    at: now,
                    cpu_millis: held.cpu_millis as i64,
                    devices,
                });
                self.pods[index].held = Some(held);
            }
            (Some(held), None) => {
                let mut devices: BTreeMap<String, i64> = BTreeMap::new();
                for (class, device) in &held.devices {
                    if let Some(holders) = self.device_holders.get_mut(device) {
                        *holders -= 1;
                        if *holders == 0 {
                            self.device_holders.remove(device);
                            *devices.entry(class.clone()).or_default() -= 1;
                        }
                    }
                }
                self.usage.push(Usage {
                    at: now,
                    cpu_millis: -(held.cpu_millis as i64),
                    devices,
                });
                self.pods[index].held = None;
            }
            _ => {}
        }
    }

    /// The pods, in the order they were first seen.
    pub fn pods(&self) -> &[PodRecord] {
        &self.pods
    }

    /// Every Event occurrence, in time order.
    pub fn events(&self) -> &[TimelineEntry] {
        &self.events
    }
}

/// Time-weighted average and peak of a quantity, with its capacity.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Utilisation {
    /// What there is (CPU cores, or devices of the class).
    pub capacity: f64,
    /// The time-weighted average in use, as a fraction of the capacity.
    pub average: f64,
    /// The most in use at once, as a fraction of the capacity.
    pub peak: f64,
}

/// One sample of the utilisation over time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// The start of the interval, in seconds.
    pub at: f64,
    /// CPU in use (fraction, averaged over the interval).
    pub cpu: f64,
    /// Devices in use per class (fraction, averaged over the interval).
    pub devices: BTreeMap<String, f64>,
}

/// Queue wait percentiles, in seconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Percentiles {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
}

/// The run's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Summary {
    /// Pods seen.
    pub pods: usize,
    /// Pods that ran (were started).
    pub started: usize,
    /// Pods that succeeded.
    pub succeeded: usize,
    /// Pods that failed.
    pub failed: usize,
    /// Pods deleted.
    pub deleted: usize,
    /// Pods never scheduled.
    pub pending: usize,
    /// From the first pod's creation to the last pod's end (or the end of the run while some
    /// still run), in seconds.
    pub makespan_seconds: f64,
    /// Time from creation to binding of the scheduled pods, in seconds.
    pub queue_wait_seconds: Percentiles,
    /// CPU requested by running pods against the nodes' allocatable CPU.
    pub cpu: Utilisation,
    /// Devices held by running pods, per device class, against the devices of the drivers
    /// that class allocated from.
    pub devices: BTreeMap<String, Utilisation>,
    /// The utilisation in (at most) 50 intervals of the run.
    pub timeline: Vec<Sample>,
}

/// The report of a run: its figures and every pod's life.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The figures.
    pub summary: Summary,
    /// Every pod, in the order first seen.
    pub pods: Vec<PodRecord>,
    /// Every Event occurrence.
    #[serde(skip)]
    pub events: Vec<TimelineEntry>,
    /// Devices running pods hold at the end, per class (the record's running count).
    #[serde(skip)]
    pub devices_in_use: BTreeMap<String, i64>,
    /// Every gang (PodGroup with a gang policy) at the end: scheduled as a unit or why not.
    #[serde(skip)]
    pub gangs: Vec<crate::gangs::Gang>,
}

fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Rounds to milliseconds' precision in seconds (three decimals), so outputs stay short.
fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Report {
    /// The report as an object of the output's `v1 List`: `allot.dev/v1alpha1
    /// SimulationReport`, with the pods `keep` selects.
    pub fn to_json(&self, keep: &dyn Fn(&PodRecord) -> bool) -> serde_json::Value {
        let pods: Vec<&PodRecord> = self.pods.iter().filter(|p| keep(p)).collect();
        let mut out = serde_json::json!({
            "apiVersion": crate::timeline::API_VERSION,
            "kind": crate::timeline::REPORT_KIND,
            "metadata": {"name": "report"},
            "summary": self.summary,
            "pods": pods,
        });
        if !self.gangs.is_empty() {
            out["gangs"] = serde_json::json!(self.gangs);
        }
        out
    }

    /// Whether anything in the run played out over time: a pod that finished or was deleted.
    pub fn eventful(&self) -> bool {
        self.pods
            .iter()
            .any(|p| p.finished.is_some() || p.deleted.is_some())
    }

    /// The report from what the ledger gathered and the final store, at the end of the run.
    pub fn new(data: &LedgerData, store: &Store, end: SimTime) -> Report {
        let pods = data.pods.clone();
        let mut summary = Summary {
            pods: pods.len(),
            ..Summary::default()
        };
        let mut waits = Vec::new();
        let mut first = None::<u64>;
        let mut last = None::<u64>;
        let mut open = false;
        for p in &pods {
            summary.started += usize::from(p.started.is_some());
            match p.phase.as_str() {
                "Succeeded" => summary.succeeded += 1,
                "Failed" => summary.failed += 1,
                "Deleted" => summary.deleted += 1,
                _ => {}
            }
            if p.scheduled.is_none() && p.deleted.is_none() {
                summary.pending += 1;
            }
            if let (Some(c), Some(s)) = (p.created, p.scheduled) {
                waits.push(s.saturating_sub(c) as f64 / 1000.0);
            }
            if let Some(c) = p.created {
                first = Some(first.map_or(c, |f| f.min(c)));
            }
            match p.finished.or(p.deleted) {
                Some(e) => last = Some(last.map_or(e, |l| l.max(e))),
                None if p.started.is_some() => open = true,
                None => {}
            }
        }
        if open {
            last = Some(end.0);
        }
        summary.makespan_seconds = match (first, last) {
            (Some(f), Some(l)) => round3(l.saturating_sub(f) as f64 / 1000.0),
            _ => 0.0,
        };
        waits.sort_by(f64::total_cmp);
        summary.queue_wait_seconds = Percentiles {
            p50: round3(percentile(&waits, 0.50)),
            p90: round3(percentile(&waits, 0.90)),
            p99: round3(percentile(&waits, 0.99)),
        };
        utilisation(&mut summary, data, store, end);
        let mut devices_in_use: BTreeMap<String, i64> = BTreeMap::new();
        for (class, n) in data.usage.iter().flat_map(|u| &u.devices) {
            *devices_in_use.entry(class.clone()).or_default() += n;
        }
        Report {
            summary,
            pods,
            events: data.events.clone(),
            devices_in_use,
            gangs: crate::gangs::gangs(store),
        }
    }
}

/// CPU cores the nodes can give pods (allocatable, else capacity).
fn cpu_capacity(store: &Store) -> f64 {
    store
        .list::<Node>()
        .map(|n| {
            n.status
                .allocatable
                .get("cpu")
                .or_else(|| n.status.capacity.get("cpu"))
                .map_or(0.0, |q| q.milli_value() as f64 / 1000.0)
        })
        // (Not `sum`: an empty f64 sum is -0.0.)
        .fold(0.0, |a, b| a + b)
}

fn utilisation(summary: &mut Summary, data: &LedgerData, store: &Store, end: SimTime) {
    // The devices of the drivers each class allocated from.
    let mut per_driver: BTreeMap<String, f64> = BTreeMap::new();
    for slice in store.list::<ResourceSlice>() {
        *per_driver.entry(slice.spec.driver.clone()).or_default() +=
            slice.spec.devices.len() as f64;
    }
    let capacity_of = |class: &str| -> f64 {
        data.class_drivers
            .get(class)
            .into_iter()
            .flatten()
            .filter_map(|d| per_driver.get(d))
            .fold(0.0, |a, b| a + b)
    };
    let start = data.usage.first().map_or(SimTime::ZERO, |u| u.at);
    let span = end.0.saturating_sub(start.0).max(1) as f64;
    let cpu_cap = cpu_capacity(store);
    let mut cpu_now: i64 = 0;
    let mut dev_now: BTreeMap<String, i64> = BTreeMap::new();
    let mut cpu_area = 0.0;
    let mut cpu_peak: i64 = 0;
    let mut dev_area: BTreeMap<String, f64> = BTreeMap::new();
    let mut dev_peak: BTreeMap<String, i64> = BTreeMap::new();
    const BUCKETS: u64 = 50;
    let bucket = (end.0.saturating_sub(start.0) / BUCKETS).max(1);
    let mut samples: Vec<(f64, BTreeMap<String, f64>)> =
        vec![(0.0, BTreeMap::new()); BUCKETS as usize + 1];
    let mut last = start;
    let mut add_area = |from: SimTime,
                        to: SimTime,
                        cpu: i64,
                        dev: &BTreeMap<String, i64>,
                        cpu_area: &mut f64,
                        dev_area: &mut BTreeMap<String, f64>| {
        let width = to.0.saturating_sub(from.0);
        if width == 0 {
            return;
        }
        *cpu_area += cpu as f64 * width as f64;
        for (k, v) in dev {
            *dev_area.entry(k.clone()).or_default() += *v as f64 * width as f64;
        }
        // Spread over the buckets the interval covers.
        let mut t = from.0;
        while t < to.0 {
            let b = ((t - start.0) / bucket).min(BUCKETS) as usize;
            let bucket_end = (start.0 + (b as u64 + 1) * bucket).min(to.0).max(t + 1);
            let w = (bucket_end - t) as f64;
            samples[b].0 += cpu as f64 * w;
            for (k, v) in dev {
                *samples[b].1.entry(k.clone()).or_default() += *v as f64 * w;
            }
            t = bucket_end;
        }
    };
    for u in &data.usage {
        add_area(last, u.at, cpu_now, &dev_now, &mut cpu_area, &mut dev_area);
        last = u.at;
        cpu_now += u.cpu_millis;
        cpu_peak = cpu_peak.max(cpu_now);
        for (k, v) in &u.devices {
            let now = dev_now.entry(k.clone()).or_default();
            *now += v;
            let peak = dev_peak.entry(k.clone()).or_default();
            *peak = (*peak).max(*now);
        }
    }
    add_area(last, end, cpu_now, &dev_now, &mut cpu_area, &mut dev_area);
    let fraction = |x: f64, cap: f64| if cap > 0.0 { round3(x / cap) } else { 0.0 };
    summary.cpu = Utilisation {
        capacity: round3(cpu_cap),
        average: fraction(cpu_area / span / 1000.0, cpu_cap),
        peak: fraction(cpu_peak as f64 / 1000.0, cpu_cap),
    };
    for (class, peak) in &dev_peak {
        let cap = capacity_of(class);
        summary.devices.insert(
            class.clone(),
            Utilisation {
                capacity: cap,
                average: fraction(dev_area.get(class).copied().unwrap_or(0.0) / span, cap),
                peak: fraction(*peak as f64, cap),
            },
        );
    }
    if data.usage.is_empty() {
        return;
    }
    for (b, (cpu, dev)) in samples.into_iter().enumerate() {
        let from = start.0 + b as u64 * bucket;
        if from >= end.0 {
            break;
        }
        let width = (from + bucket).min(end.0) - from;
        summary.timeline.push(Sample {
            at: round3(from as f64 / 1000.0),
            cpu: fraction(cpu / width as f64 / 1000.0, cpu_cap),
            devices: dev
                .into_iter()
                .map(|(k, v)| {
                    let cap = capacity_of(&k);
                    (k, fraction(v / width as f64, cap))
                })
                .collect(),
        });
    }
}

#[cfg(test)]
mod tests;
