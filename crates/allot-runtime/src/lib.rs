//! Reconcile loops over the object store, on a clock that is a value.
//!
//! Key design decision: controllers are `reconcile(store, key, ctx) -> Action`, as in
//! kube-runtime: they are woken by the store events their `keys_for` maps to work items, and the
//! returned [`Action`] says when to come back. Nothing sleeps: time is [`SimTime`], advanced by the
//! [`Runtime`] to the next due item, so a 600-second binding timeout costs no real time and every
//! run of the same input makes the same decisions in the same order. The cost: controllers must
//! not keep state that the store does not show, except caches they can rebuild.
//!
//! At scale two things matter. Events are offered only to the controllers that can care: a
//! controller may [`Controller::subscribe`] to [`Topic`]s (a node agent to its node), and the
//! runtime names each event's topics once instead of asking thousands of agents. And a
//! simulation's event log can be compacted ([`Runtime::compact_events`]) once the runtime and
//! every controller reading the log itself ([`Controller::event_log_position`]) have seen it.

#![deny(missing_docs)]

mod routing;

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use allot_store::{Event, ObjectKey, Store};

pub use routing::{Fanout, Subscriptions, Topic};

/// Simulated time in milliseconds since 2026-01-01T00:00:00Z.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(pub u64);

impl SimTime {
    /// The epoch.
    pub const ZERO: SimTime = SimTime(0);

    /// `seconds` after this time.
    pub fn plus_seconds(self, seconds: u64) -> SimTime {
        SimTime(self.0.saturating_add(seconds.saturating_mul(1000)))
    }

    /// `millis` after this time.
    pub fn plus_millis(self, millis: u64) -> SimTime {
        SimTime(self.0.saturating_add(millis))
    }

    /// Whole seconds since the epoch.
    pub fn seconds(self) -> u64 {
        self.0 / 1000
    }

    /// RFC 3339 in UTC with second precision, as Kubernetes writes `metav1.Time`. The last
    /// answer is remembered per thread: a run formats the same second for many writes in a row.
    pub fn rfc3339(self) -> String {
        thread_local! {
            static LAST: std::cell::RefCell<Option<(u64, String)>> =
                const { std::cell::RefCell::new(None) };
        }
        let second = self.seconds();
        LAST.with(|last| {
            let mut last = last.borrow_mut();
            match &*last {
                Some((s, text)) if *s == second => text.clone(),
                _ => {
                    let text = self.format_rfc3339();
                    *last = Some((second, text.clone()));
                    text
                }
            }
        })
    }

    fn format_rfc3339(self) -> String {
        let secs = self.seconds();
        let (days, rem) = (secs / 86_400, secs % 86_400);
        let (h, m, s) = (rem / 3600, (rem % 3600) / 60, rem % 60);
        let (y, mo, d) = civil_from_days(days as i64 + days_from_civil(2026, 1, 1));
        format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
    }

    /// Parses the RFC 3339 form written by [`SimTime::rfc3339`] (`Z` only); `None` when the text
    /// is not such a time or lies before the epoch.
    pub fn parse_rfc3339(text: &str) -> Option<SimTime> {
        let b = text.as_bytes();
        if b.len() != 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[19] != b'Z' {
            return None;
        }
        let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
        let days =
            days_from_civil(num(0..4)?, num(5..7)?, num(8..10)?) - days_from_civil(2026, 1, 1);
        let secs = days * 86_400 + num(11..13)? * 3600 + num(14..16)? * 60 + num(17..19)?;
        u64::try_from(secs).ok().map(|s| SimTime(s * 1000))
    }
}

impl std::fmt::Display for SimTime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.rfc3339())
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// What a reconcile asks for next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing more until an event wakes this item again.
    Done,
    /// Come back after this many milliseconds of simulated time (even without events).
    RequeueAfterMillis(u64),
}

/// What a reconcile sees besides the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Context {
    /// The current simulated time.
    pub now: SimTime,
}

/// A reconcile that failed. The runtime records it and retries the item after a back-off.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{controller}: {key}: {message}")]
pub struct ReconcileError {
    /// The controller's name.
    pub controller: &'static str,
    /// The item.
    pub key: ObjectKey,
    /// What went wrong.
    pub message: String,
}

/// One reconcile loop.
pub trait Controller {
    /// A short name for logs and errors (`"scheduler"`, `"resourceclaim-controller"`).
    fn name(&self) -> &'static str;

    /// The work items an event wakes: usually the changed object itself when it is of this
    /// controller's kind, and related objects (a claim's pods, a pod's claims) otherwise.
    fn keys_for(&self, event: &Event, store: &Store) -> Vec<ObjectKey>;

    /// Brings the world one step closer to what `key` asks for. Must be idempotent.
    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String>;

    /// Called once when a [`Runtime`] takes the controller. Returning `true` means: offer me
    /// only the events of the [`Topic`]s I subscribe to through `subscriptions` (now or
    /// later), because `keys_for` returns nothing and changes nothing for any other event.
    /// The default, `false`, offers every event.
    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        let _ = subscriptions;
        false
    }

    /// For a controller that reads the store's event log itself (`Store::events_since`, for
    /// a cache): the resourceVersion it has read up to. A runtime that compacts the log (see
    /// [`Runtime::compact_events`]) keeps every later event. The default, `None`, means the
    /// controller does not read the log; the runtime asks once, when it takes the controller,
    /// and asks again later only the controllers that answered `Some`.
    fn event_log_position(&self) -> Option<u64> {
        None
    }
}

/// Events a compacting runtime lets pile up before it drops the ones every reader has seen
/// (dropping moves the rest, so it is done in batches).
const COMPACT_BATCH: u64 = 4096;

/// Back-off after a failed reconcile, in milliseconds of simulated time.
pub const ERROR_BACKOFF_MILLIS: u64 = 1000;

/// Runs controllers over a store until nothing is left to do.
pub struct Runtime {
    /// The store every controller shares.
    pub store: Store,
    controllers: Vec<Box<dyn Controller>>,
    now: SimTime,
    /// Items due now or later: (due time, controller index, key), deduplicated.
    queue: BTreeSet<(SimTime, usize, ObjectKey)>,
    /// The earliest due time of each queued (controller, key), for deduplication (looked up
    /// on every push, never iterated: hashed).
    due: HashMap<(usize, ObjectKey), SimTime, foldhash::fast::FixedState>,
    seen_rv: u64,
    errors: Vec<(SimTime, ReconcileError)>,
    reconciles: u64,
    /// Controllers offered every event, in order.
    broadcast: Vec<usize>,
    /// Whether any controller subscribed to topics.
    routed: bool,
    router: routing::Router,
    subscriptions: Arc<Mutex<routing::Table>>,
    stats: Stats,
    /// Whether to drop store events every reader has seen.
    compact: bool,
    compacted_through: u64,
    /// The resourceVersion the runtime will next try to compact at.
    next_compaction: u64,
    /// Controllers that read the event log themselves.
    log_readers: Vec<usize>,
}

/// Where a runtime's time went, for benchmarks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stats {
    /// Per controller, in registration order: its name, how many reconciles it ran and their
    /// wall time in nanoseconds.
    pub controllers: Vec<(&'static str, u64, u64)>,
    /// Store events dispatched.
    pub events: u64,
    /// `keys_for` calls made.
    pub keys_for_calls: u64,
    /// Wall time spent turning events into work items (`keys_for` and routing), in
    /// nanoseconds.
    pub dispatch_nanos: u64,
}

impl Runtime {
    /// A runtime over `store`, starting at `now`. Controllers run in the order given when items
    /// are due at the same time.
    pub fn new(store: Store, mut controllers: Vec<Box<dyn Controller>>, now: SimTime) -> Self {
        let subscriptions = Arc::new(Mutex::new(routing::Table::default()));
        let mut broadcast = Vec::new();
        for (index, controller) in controllers.iter_mut().enumerate() {
            if !controller.subscribe(Subscriptions::new(subscriptions.clone(), index)) {
                broadcast.push(index);
            }
        }
        let stats = Stats {
            controllers: controllers.iter().map(|c| (c.name(), 0, 0)).collect(),
            ..Stats::default()
        };
        let log_readers = controllers
            .iter()
            .enumerate()
            .filter(|(_, c)| c.event_log_position().is_some())
            .map(|(i, _)| i)
            .collect();
        Runtime {
            compact: false,
            compacted_through: 0,
            next_compaction: COMPACT_BATCH,
            log_readers,
            stats,
            store,
            routed: broadcast.len() < controllers.len(),
            controllers,
            now,
            queue: BTreeSet::new(),
            due: HashMap::default(),
            seen_rv: 0,
            errors: Vec::new(),
            reconciles: 0,
            broadcast,
            router: routing::Router::default(),
            subscriptions,
        }
    }

    /// The current simulated time.
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Reconcile failures so far, with when they happened.
    pub fn errors(&self) -> &[(SimTime, ReconcileError)] {
        &self.errors
    }

    /// How many reconciles ran.
    pub fn reconciles(&self) -> u64 {
        self.reconciles
    }

    /// Lets the runtime drop store events that it and every controller reading the log (see
    /// [`Controller::event_log_position`]) have seen. Only for a store nobody else reads the
    /// log of (a simulation; not a server that serves watches from it).
    pub fn compact_events(&mut self, on: bool) {
        self.compact = on;
    }

    fn compact_log(&mut self) {
        if self.seen_rv < self.next_compaction {
            return;
        }
        // Asking the readers costs a call each: not again for a while.
        self.next_compaction = self.seen_rv + COMPACT_BATCH / 8;
        let readers = self
            .log_readers
            .iter()
            .filter_map(|&i| self.controllers[i].event_log_position())
            .min();
        let through = readers.map_or(self.seen_rv, |r| r.min(self.seen_rv));
        if through >= self.compacted_through + COMPACT_BATCH {
            self.store.compact_events(through);
            self.compacted_through = through;
            self.next_compaction = self.next_compaction.max(through + COMPACT_BATCH);
        }
    }

    /// Where the time went so far.
    pub fn stats(&self) -> &Stats {
        &self.stats
    }

    /// Queues an item for a controller (by name) at `at`.
    pub fn enqueue(&mut self, controller: &str, key: ObjectKey, at: SimTime) {
        if let Some(index) = self.controllers.iter().position(|c| c.name() == controller) {
            self.push(index, key, at);
        }
    }

    fn push(&mut self, index: usize, key: ObjectKey, at: SimTime) {
        let at = at.max(self.now);
        // One lookup that takes the key by value: a queued item already due no later costs no
        // copy of the key.
        match self.due.entry((index, key)) {
            std::collections::hash_map::Entry::Occupied(mut entry) => {
                let existing = *entry.get();
                if existing <= at {
                    return;
                }
                entry.insert(at);
                let key = entry.key().1.clone();
                let old = (existing, index, key);
                let item = self.queue.take(&old).unwrap_or(old);
                self.queue.insert((at, item.1, item.2));
            }
            std::collections::hash_map::Entry::Vacant(entry) => {
                let key = entry.key().1.clone();
                entry.insert(at);
                self.queue.insert((at, index, key));
            }
        }
    }

    /// Turns new store events into queued items, due now. The events are read in place (no
    /// copy of the log); the work items are gathered first and queued after. Each event goes
    /// to the controllers that take every event and to the subscribers of its topics.
    fn dispatch_events(&mut self) {
        let events = self.store.events_since(self.seen_rv);
        let Some(last) = events.last() else {
            return;
        };
        let last_rv = last.resource_version;
        let started = std::time::Instant::now();
        let mut work = Vec::new();
        let mut topics = Vec::new();
        let mut targets = BTreeSet::new();
        let mut calls = 0;
        for event in events {
            calls += self.broadcast.len() as u64;
            for &index in &self.broadcast {
                for key in self.controllers[index].keys_for(event, &self.store) {
                    work.push((index, key));
                }
            }
            if !self.routed {
                continue;
            }
            targets.clear();
            self.subscriptions
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .route(&mut self.router, event, &mut topics, &mut targets);
            calls += targets.len() as u64;
            for &index in &targets {
                for key in self.controllers[index].keys_for(event, &self.store) {
                    work.push((index, key));
                }
            }
        }
        self.stats.events += events.len() as u64;
        self.stats.keys_for_calls += calls;
        self.seen_rv = last_rv;
        for (index, key) in work {
            self.push(index, key, self.now);
        }
        self.stats.dispatch_nanos += started.elapsed().as_nanos() as u64;
    }

    /// Runs every item due at or before the current time, including those that their
    /// reconciles cause, until nothing is due now. `max_reconciles` bounds the work (a loop
    /// that keeps waking itself is reported as an error instead of hanging).
    pub fn run_due(&mut self, max_reconciles: u64) -> Result<(), RuntimeError> {
        let mut budget = max_reconciles;
        loop {
            self.dispatch_events();
            if self.compact {
                self.compact_log();
            }
            let Some(first) = self.queue.first() else {
                return Ok(());
            };
            if first.0 > self.now {
                return Ok(());
            }
            if budget == 0 {
                return Err(RuntimeError::NoProgress {
                    at: self.now,
                    reconciles: max_reconciles,
                });
            }
            budget -= 1;
            self.run_first();
        }
    }

    /// Runs the first queued item (which is due).
    fn run_first(&mut self) {
        let Some((_, index, key)) = self.queue.pop_first() else {
            return;
        };
        let probe = (index, key);
        self.due.remove(&probe);
        let key = probe.1;
        let ctx = Context { now: self.now };
        self.reconciles += 1;
        let started = std::time::Instant::now();
        let result = self.controllers[index].reconcile(&mut self.store, &key, &ctx);
        let stat = &mut self.stats.controllers[index];
        stat.1 += 1;
        stat.2 += started.elapsed().as_nanos() as u64;
        match result {
            Ok(Action::Done) => {}
            Ok(Action::RequeueAfterMillis(ms)) => {
                let at = self.now.plus_millis(ms.max(1));
                self.push(index, key, at);
            }
            Err(message) => {
                let error = ReconcileError {
                    controller: self.controllers[index].name(),
                    key: key.clone(),
                    message,
                };
                self.errors.push((self.now, error));
                let at = self.now.plus_millis(ERROR_BACKOFF_MILLIS);
                self.push(index, key, at);
            }
        }
    }

    /// Like [`Runtime::advance_to`], in slices: runs at most `max_reconciles` of the items due
    /// by `to` (in time order, the clock following them), and tells whether some are left, so
    /// that a caller sharing the store with others (a server answering requests) can let go of
    /// it between slices. A loop that keeps waking itself is not an error here: it runs on,
    /// slice after slice.
    pub fn advance_some(&mut self, to: SimTime, max_reconciles: u64) -> bool {
        let mut budget = max_reconciles;
        loop {
            self.dispatch_events();
            if self.compact {
                self.compact_log();
            }
            let Some(&(due, _, _)) = self.queue.first() else {
                self.now = self.now.max(to);
                return false;
            };
            if due > to.max(self.now) {
                self.now = self.now.max(to);
                return false;
            }
            if budget == 0 {
                return true;
            }
            budget -= 1;
            self.now = self.now.max(due);
            self.run_first();
        }
    }

    /// The due time of the next queued item, if any.
    pub fn next_due(&self) -> Option<SimTime> {
        self.queue.first().map(|(t, _, _)| *t)
    }

    /// Moves the clock forward to `to`, running everything that falls due on the way in time
    /// order. The clock never goes back.
    pub fn advance_to(&mut self, to: SimTime, max_reconciles: u64) -> Result<(), RuntimeError> {
        self.run_due(max_reconciles)?;
        while let Some(next) = self.next_due() {
            if next > to {
                break;
            }
            self.now = self.now.max(next);
            self.run_due(max_reconciles)?;
        }
        self.now = self.now.max(to);
        self.run_due(max_reconciles)
    }

    /// Runs until no item is queued at all, advancing the clock to each due time, but never
    /// beyond `limit`. Returns the time reached.
    pub fn run_until_idle(
        &mut self,
        limit: SimTime,
        max_reconciles: u64,
    ) -> Result<SimTime, RuntimeError> {
        self.run_due(max_reconciles)?;
        while let Some(next) = self.next_due() {
            if next > limit {
                break;
            }
            self.now = self.now.max(next);
            self.run_due(max_reconciles)?;
        }
        Ok(self.now)
    }

    /// Gives the store back.
    pub fn into_store(self) -> Store {
        self.store
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RuntimeError {
    /// The controllers kept waking each other without the clock moving.
    #[error("no progress at {at}: more than {reconciles} reconciles without the clock moving")]
    NoProgress {
        /// When.
        at: SimTime,
        /// The bound that was hit.
        reconciles: u64,
    },
}

#[cfg(test)]
mod tests;
