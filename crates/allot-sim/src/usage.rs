//! Utilisation over simulated time: a passive controller that watches claims and pods and
//! records, whenever the simulated clock has moved and something changed, how many devices of
//! each device class are allocated and how many pods are running, waiting on their node or
//! pending.
//!
//! A device counts for the class its request names (`exactly.deviceClassName`, or the chosen
//! subrequest's); admin-access results do not count. The recorder writes nothing: its
//! `keys_for` notes the change and asks for one reconcile of its own key, whose only job is to
//! read the clock (`keys_for` does not see it), so every change made at one instant ends up in
//! one sample stamped with that instant.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use allot_api::core::v1::Pod;
use allot_api::resource::v1::ResourceClaim;
use allot_runtime::{Action, Context, Controller, SimTime};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};
use serde::Serialize;

/// One sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    /// Seconds since the start of the simulated clock.
    pub seconds: u64,
    /// Allocated devices per device class.
    pub devices: BTreeMap<String, u64>,
    /// Pods running (phase `Running`).
    pub running: u64,
    /// Pods bound to a node, not running yet.
    pub bound: u64,
    /// Pods not bound to a node (and not finished).
    pub pending: u64,
}

/// The recorded series.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Series {
    /// Samples in time order, one per instant at which something changed.
    pub samples: Vec<Sample>,
}

/// What a pod counts as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum PodState {
    Running,
    Bound,
    Pending,
    Gone,
}

fn pod_state(pod: &Pod) -> PodState {
    match pod.status.phase.as_deref() {
        Some("Running") => PodState::Running,
        Some("Succeeded" | "Failed") => PodState::Gone,
        _ if pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) => PodState::Bound,
        _ => PodState::Pending,
    }
}

/// Devices per class a claim's allocation holds.
fn claim_devices(claim: &ResourceClaim) -> Vec<(String, u64)> {
    let Some(allocation) = &claim.status.allocation else {
        return Vec::new();
    };
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for result in &allocation.devices.results {
        if result.admin_access == Some(true) {
            continue;
        }
        let (request, sub) = match result.request.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (result.request.as_str(), None),
        };
        let class = claim
            .spec
            .devices
            .requests
            .iter()
            .find(|r| r.name == request)
            .and_then(|r| match (sub, &r.exactly) {
                (None, Some(exactly)) => Some(exactly.device_class_name.clone()),
                (Some(sub), _) => r
                    .first_available
                    .iter()
                    .find(|s| s.name == sub)
                    .map(|s| s.device_class_name.clone()),
                _ => None,
            })
            .unwrap_or_else(|| format!("(driver {})", result.driver));
        *out.entry(class).or_default() += 1;
    }
    out.into_iter().collect()
}

#[derive(Default)]
struct State {
    claims: HashMap<ObjectKey, Vec<(String, u64)>>,
    pods: HashMap<ObjectKey, PodState>,
    devices: BTreeMap<String, u64>,
    counts: [u64; 3],
    dirty: bool,
    series: Series,
}

impl State {
    fn count(&mut self, state: PodState, delta: i64) {
        let index = match state {
            PodState::Running => 0,
            PodState::Bound => 1,
            PodState::Pending => 2,
            PodState::Gone => return,
        };
        self.counts[index] = self.counts[index].saturating_add_signed(delta);
    }

    fn observe(&mut self, event: &Event) {
        match &event.object {
            Stored::ResourceClaim(claim) => {
                let now = if event.event_type == EventType::Deleted {
                    Vec::new()
                } else {
                    claim_devices(claim)
                };
                let before = self.claims.remove(&event.key).unwrap_or_default();
                if before == now {
                    if !now.is_empty() {
                        self.claims.insert(event.key.clone(), now);
                    }
                    return;
                }
                for (class, n) in &before {
                    if let Some(total) = self.devices.get_mut(class) {
                        *total = total.saturating_sub(*n);
                    }
                }
                for (class, n) in &now {
                    *self.devices.entry(class.clone()).or_default() += n;
                }
                if !now.is_empty() {
                    self.claims.insert(event.key.clone(), now);
                }
                self.dirty = true;
            }
            Stored::Pod(pod) => {
                let now = if event.event_type == EventType::Deleted {
                    PodState::Gone
                } else {
                    pod_state(pod)
                };
                let before = self
                    .pods
                    .insert(event.key.clone(), now)
                    .unwrap_or(PodState::Gone);
                if now == PodState::Gone {
                    self.pods.remove(&event.key);
                }
                if before != now {
                    self.count(before, -1);
                    self.count(now, 1);
                    self.dirty = true;
                }
            }
            _ => {}
        }
    }

    fn sample(&mut self, now: SimTime) {
        if !self.dirty {
            return;
        }
        self.dirty = false;
        let sample = Sample {
            seconds: now.seconds(),
            devices: self
                .devices
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(c, n)| (c.clone(), *n))
                .collect(),
            running: self.counts[0],
            bound: self.counts[1],
            pending: self.counts[2],
        };
        match self.series.samples.last_mut() {
            Some(last) if last.seconds == sample.seconds => *last = sample,
            _ => self.series.samples.push(sample),
        }
    }
}

/// The recorder, as a controller; [`UsageRecorder::series`] reads what it recorded, also
/// after the runtime took it.
#[derive(Clone, Default)]
pub struct UsageRecorder {
    state: Rc<RefCell<State>>,
}

/// The recorder's one work item.
fn own_key() -> ObjectKey {
    ObjectKey::new(Kind::Node, "", "allot.dev/usage-recorder")
}

impl UsageRecorder {
    /// A recorder with nothing recorded.
    pub fn new() -> Self {
        UsageRecorder::default()
    }

    /// The samples so far (the pending change included, stamped `now`).
    pub fn series(&self, now: SimTime) -> Series {
        let mut state = self.state.borrow_mut();
        state.sample(now);
        state.series.clone()
    }
}

impl Controller for UsageRecorder {
    fn name(&self) -> &'static str {
        "usage-recorder"
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        if !matches!(event.object, Stored::ResourceClaim(_) | Stored::Pod(_)) {
            return Vec::new();
        }
        let mut state = self.state.borrow_mut();
        state.observe(event);
        if state.dirty {
            vec![own_key()]
        } else {
            Vec::new()
        }
    }

    fn reconcile(
        &mut self,
        _store: &mut Store,
        _key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        self.state.borrow_mut().sample(ctx.now);
        Ok(Action::Done)
    }
}
