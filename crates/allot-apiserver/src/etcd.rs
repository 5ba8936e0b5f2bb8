//! etcd v3 storage for `allot serve --etcd-servers`.
//!
//! Key design decision: etcd is the truth and each server's in-memory [`Store`] is a mirror of
//! it, fed by one etcd watch on the key prefix, in which every object's resourceVersion is its
//! etcd `mod_revision`. Objects live under kube-apiserver's layout
//! (`/registry/[<group>/]<resource>/[<namespace>/]<name>`, JSON, no resourceVersion inside).
//!
//! A write runs against the mirror (validation, defaulting, controllers all see the same typed
//! store as with the embedded log), then is committed as one etcd transaction per change:
//! compare the key's `mod_revision` with the pre-image's resourceVersion (`create_revision == 0`
//! for a create) *and* the `mod_revision` of a revision guard key with the mirror's own;
//! then put (or delete) the key and put the guard. Every allot transaction touches the guard,
//! so a transaction succeeds only when the mirror was at etcd's head: its revision is then
//! exactly the resourceVersion the mirror gave the change, and the change was decided on
//! the whole current state. The cost is that writes of all servers sharing one etcd are
//! serialised through that key (the embedded store serialises them behind one lock anyway).
//!
//! When the guard moved (another server wrote, or a leader-election renewal), the change is
//! rolled back, the mirror catches up from the watch, and an API write is re-applied on top
//! (a rebase that keeps per-object optimistic concurrency: it fails with 409 only when the
//! object itself changed). Controller writes are never rebased: a refused batch is dropped
//! and the controllers start again from the new state, so an allocation is only ever
//! committed if it was computed from the latest claims — two servers cannot hand out one
//! device twice, even during a leadership hand-over.
//!
//! Reads without resourceVersion see every acknowledged write, whichever server took it (the
//! quorum read kube-apiserver does for them): the read asks etcd for its current revision and
//! waits until the watch delivered it. When etcd compacted revisions the watch still needs,
//! the watch lists everything again at etcd's current revision and the mirror is rebuilt from
//! that list (as kube-apiserver's watch cache re-lists): watches of the old mirror end, and
//! resourceVersions before the list are 410 Gone.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use allot_store::{EventType, Kind, ObjectKey, Store, StoreError, Stored};
use etcd_client::{Client, Compare, CompareOp, GetOptions, Txn, TxnOp, WatchOptions};

use crate::Error;
use crate::lease::{LeaderElection, LeaderState};
use crate::storage::{self, Backend, Committed};

/// How a server reaches etcd and takes part in leader election.
#[derive(Debug, Clone)]
pub struct EtcdOptions {
    /// Client URLs, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// The key prefix (kube-apiserver's `--etcd-prefix`), without a trailing slash.
    pub prefix: String,
    /// Leader election settings for the controllers.
    pub election: crate::lease::ElectionOptions,
}

impl EtcdOptions {
    /// Defaults (`/registry`, client-go's election timings) for these endpoints.
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdOptions {
            endpoints,
            prefix: "/registry".into(),
            election: crate::lease::ElectionOptions::default(),
        }
    }
}

/// How long a write waits for the watch to deliver revisions it needs before failing.
const CATCH_UP_TIMEOUT: Duration = Duration::from_secs(10);
/// How often an API write is re-applied after other servers' writes got in first.
const MAX_REBASES: usize = 50;
/// Keys per page when loading.
const LOAD_PAGE: i64 = 500;
/// The largest watch response accepted (etcd batches many events into one).
const MAX_WATCH_MESSAGE: usize = 256 * 1024 * 1024;
/// How long one etcd request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a read without resourceVersion waits for the mirror to reach etcd's revision
/// (kube-apiserver's watch cache waits 3 s, then answers 504 "Too large resource version").
const FRESH_READ_TIMEOUT: Duration = Duration::from_secs(3);

/// One change seen on the watch.
#[derive(Debug, Clone)]
struct FeedEvent {
    revision: u64,
    key: String,
    change: Change,
}

#[derive(Debug, Clone)]
enum Change {
    Put { value: Vec<u8>, created: bool },
    Delete { previous: Option<Vec<u8>> },
}

#[derive(Debug, Default)]
struct FeedState {
    events: VecDeque<FeedEvent>,
    /// The newest revision the watch has delivered.
    revision: u64,
    /// Everything under the prefix, listed anew after etcd compacted the revisions the watch
    /// still needed: the mirror is rebuilt from it, and `events` follow it.
    relist: Option<Snapshot>,
}

/// Every key under the prefix at one revision: (key, value, mod_revision).
#[derive(Debug, Default)]
struct Snapshot {
    revision: u64,
    kvs: Vec<(Vec<u8>, Vec<u8>, i64)>,
}

/// The watch's output, shared between the watch task and the server.
#[derive(Debug, Default)]
struct Feed {
    state: Mutex<FeedState>,
    arrived: Condvar,
}

impl Feed {
    /// Waits until the watch delivered `revision`; else the revision it reached.
    fn wait_for(&self, revision: u64, timeout: Duration) -> Result<(), u64> {
        let deadline = Instant::now() + timeout;
        let mut state = self.lock();
        while state.revision < revision {
            let now = Instant::now();
            if now >= deadline {
                return Err(state.revision);
            }
            state = self
                .arrived
                .wait_timeout(state, deadline - now)
                .map(|(s, _)| s)
                .unwrap_or_else(|e| e.into_inner().0);
        }
        Ok(())
    }

    fn lock(&self) -> MutexGuard<'_, FeedState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// What the watch delivered since the last call.
    fn take(&self) -> (Option<Snapshot>, Vec<FeedEvent>) {
        let mut state = self.lock();
        (state.relist.take(), state.events.drain(..).collect())
    }
}

/// The etcd backend of one server.
pub struct EtcdBackend {
    /// Runs the etcd client, the watch and the leader election, apart from the HTTP runtime.
    runtime: OwnRuntime,
    client: Client,
    endpoints: String,
    prefix: String,
    guard_key: String,
    /// The guard's mod_revision as of the mirror's head (0: never written).
    guard_rev: u64,
    feed: Arc<Feed>,
    /// The revision the mirror was loaded at: watches from before it get 410 Gone.
    oldest: u64,
    /// How often the mirror was rebuilt from a new list (after etcd compacted past the watch).
    epoch: u64,
    leader: Arc<LeaderState>,
}

impl std::fmt::Debug for EtcdBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdBackend")
            .field("endpoints", &self.endpoints)
            .field("prefix", &self.prefix)
            .field("oldest", &self.oldest)
            .finish_non_exhaustive()
    }
}

/// The etcd key of an object: kube-apiserver's layout, with the group for non-core kinds.
pub fn object_key(prefix: &str, kind: Kind, namespace: &str, name: &str) -> String {
    let (group, plural) = match crate::resources::info_of(kind) {
        Some(info) => (info.group.to_string(), info.plural.to_string()),
        None => {
            let api_version = kind.api_version();
            let group = api_version
                .rsplit_once('/')
                .map_or(String::new(), |(g, _)| g.to_string());
            (group, format!("{}s", kind.name().to_ascii_lowercase()))
        }
    };
    let mut key = String::from(prefix);
    if !group.is_empty() {
        key.push('/');
        key.push_str(&group);
    }
    key.push('/');
    key.push_str(&plural);
    if kind.namespaced() {
        key.push('/');
        key.push_str(namespace);
    }
    key.push('/');
    key.push_str(name);
    key
}

fn key_for(prefix: &str, key: &ObjectKey) -> String {
    object_key(prefix, key.kind, &key.namespace, &key.name)
}

/// The stored value: the object's JSON without its resourceVersion (etcd's revision is it).
fn value_of(object: &Stored) -> Vec<u8> {
    let mut json = object.to_json();
    if let Some(meta) = json.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        meta.remove("resourceVersion");
    }
    serde_json::to_vec(&json).unwrap_or_default()
}

fn decode(value: &[u8]) -> Result<Stored, String> {
    let json: serde_json::Value = serde_json::from_slice(value).map_err(|e| e.to_string())?;
    storage::stored_from_json(&json)
}

fn rev(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn irev(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

impl EtcdBackend {
    /// Connects, loads every object under the prefix into a new mirror, starts the watch from
    /// the next revision and the leader election. The returned store has its journal on.
    pub fn open(options: &EtcdOptions) -> Result<(EtcdBackend, Store), Error> {
        let endpoints = options.endpoints.join(",");
        let etcd_error = |message: String| Error::Etcd {
            endpoints: endpoints.clone(),
            message,
        };
        let runtime = OwnRuntime(Some(
            tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("allot-etcd")
                .enable_all()
                .build()
                .map_err(|e| etcd_error(format!("cannot start the etcd client runtime: {e}")))?,
        ));
        let prefix = options.prefix.trim_end_matches('/').to_string();
        let guard_key = format!("{prefix}/allot.dev/revision");
        let connect = Client::connect(
            options.endpoints.clone(),
            Some(
                etcd_client::ConnectOptions::new()
                    .with_connect_timeout(REQUEST_TIMEOUT)
                    .with_timeout(REQUEST_TIMEOUT),
            ),
        );
        let client = block_on(&runtime, connect).map_err(|e| etcd_error(e.to_string()))?;
        let watched = format!("{prefix}/");
        let (head, kvs) = block_on(&runtime, load(client.clone(), watched.clone()))
            .map_err(|e| etcd_error(e.to_string()))?;
        let (store, guard_rev) =
            mirror(&kvs, head, &guard_key, &prefix, true).map_err(etcd_error)?;
        let feed = Arc::new(Feed::default());
        feed.lock().revision = head;
        runtime.spawn(run_watch(client.clone(), watched, head + 1, feed.clone()));
        let leader = Arc::new(LeaderState::default());
        let election = LeaderElection::new(
            client.clone(),
            &prefix,
            guard_key.clone(),
            options.election.clone(),
            leader.clone(),
        );
        runtime.spawn(election.run());
        Ok((
            EtcdBackend {
                runtime,
                client,
                endpoints,
                prefix,
                guard_key,
                guard_rev,
                feed,
                oldest: head,
                epoch: 0,
                leader,
            },
            store,
        ))
    }

    fn etcd_error(&self, message: impl Into<String>) -> Error {
        Error::Etcd {
            endpoints: self.endpoints.clone(),
            message: message.into(),
        }
    }

    /// Waits until the watch delivered `revision`, then applies everything it delivered;
    /// returns whether any object changed (rather than only the guard or the Lease).
    fn catch_up(&mut self, store: &mut Store, revision: u64) -> Result<bool, Error> {
        let deadline = Instant::now() + CATCH_UP_TIMEOUT;
        {
            let mut state = self.feed.lock();
            while state.revision < revision {
                let now = Instant::now();
                if now >= deadline {
                    return Err(self.etcd_error(format!(
                        "the watch did not reach revision {revision} within {}s (at {})",
                        CATCH_UP_TIMEOUT.as_secs(),
                        state.revision
                    )));
                }
                state = self
                    .feed
                    .arrived
                    .wait_timeout(state, deadline - now)
                    .map(|(s, _)| s)
                    .unwrap_or_else(|e| e.into_inner().0);
            }
        }
        Ok(self.absorb(store))
    }

    /// Applies what the watch delivered: first a new list, if etcd compacted past the watch
    /// (the mirror is rebuilt from it, as kube-apiserver's watch cache re-lists), then the
    /// events; returns whether any object may have changed.
    fn absorb(&mut self, store: &mut Store) -> bool {
        let (relist, events) = self.feed.take();
        let mut changed = false;
        if let Some(snapshot) = relist {
            match mirror(
                &snapshot.kvs,
                snapshot.revision,
                &self.guard_key,
                &self.prefix,
                false,
            ) {
                Ok((rebuilt, guard_rev)) => {
                    tracing::warn!(
                        "etcd compacted past this server's watch: the mirror is rebuilt at revision {} (watches from before it get 410 Gone)",
                        snapshot.revision
                    );
                    *store = rebuilt;
                    self.guard_rev = guard_rev;
                    self.oldest = snapshot.revision;
                    self.epoch += 1;
                    changed = true;
                }
                Err(message) => tracing::warn!("etcd re-list: {message}"),
            }
        }
        if !events.is_empty() {
            changed |= self.apply(store, events);
        }
        changed
    }

    /// Applies watch events to the mirror, in revision order, skipping what it already has;
    /// returns whether any object changed.
    fn apply(&mut self, store: &mut Store, events: Vec<FeedEvent>) -> bool {
        let mut objects = false;
        for event in events {
            if event.key == self.guard_key {
                self.guard_rev = self.guard_rev.max(event.revision);
            }
            if event.revision <= store.resource_version() {
                continue;
            }
            let applied = match &event.change {
                _ if event.key == self.guard_key => Ok(false),
                _ if event
                    .key
                    .starts_with(&crate::lease::lease_prefix(&self.prefix)) =>
                {
                    Ok(false)
                }
                Change::Put { value, created } => decode(value).and_then(|object| {
                    let event_type = if *created {
                        EventType::Added
                    } else {
                        EventType::Modified
                    };
                    store
                        .apply_committed(event.revision, event_type, object)
                        .map(|()| true)
                        .map_err(|e| e.to_string())
                }),
                Change::Delete {
                    previous: Some(value),
                } => decode(value).and_then(|object| {
                    store
                        .apply_committed(event.revision, EventType::Deleted, object)
                        .map(|()| true)
                        .map_err(|e| e.to_string())
                }),
                Change::Delete { previous: None } => {
                    Err("deleted, but etcd sent no previous value".to_string())
                }
            };
            match applied {
                Ok(true) => objects = true,
                Ok(false) => store.skip_to(event.revision),
                Err(message) => {
                    tracing::warn!(
                        "etcd {} at revision {}: {message}",
                        event.key,
                        event.revision
                    );
                    store.skip_to(event.revision);
                }
            }
        }
        store.begin_journal();
        objects
    }

    /// Re-applies one change on the mirror's current state; `Ok(false)`: nothing to write.
    fn reapply(store: &mut Store, change: &Op) -> Result<bool, StoreError> {
        let before = store.resource_version();
        match change.event_type {
            EventType::Added => {
                let mut object = change.object.clone();
                // Decided again under a new uid: what the first decision derived from its uid
                // (a Job's generated selector) goes with it.
                let uid = std::mem::take(&mut object.meta_mut().uid);
                if let Stored::Job(job) = &mut object {
                    allot_api::defaults::workloads::forget_generated_job_selector(
                        Arc::make_mut(job),
                        &uid,
                    );
                }
                object.meta_mut().resource_version.clear();
                let now = object.meta().creation_timestamp.clone().unwrap_or_default();
                match store.create_stored(object.clone(), &now) {
                    Err(StoreError::AlreadyExists { .. })
                        if !object.meta().generate_name.is_empty() =>
                    {
                        // The generated name was taken meanwhile: generate another.
                        object.meta_mut().name.clear();
                        store.create_stored(object, &now)?;
                    }
                    other => {
                        other?;
                    }
                }
            }
            EventType::Modified => {
                let mut object = change.object.clone();
                object.meta_mut().resource_version = change.previous_rv.clone();
                storage::update_stored(store, object)?;
            }
            EventType::Deleted => {
                let current =
                    store
                        .get_stored(&change.key)
                        .ok_or_else(|| StoreError::NotFound {
                            key: change.key.clone(),
                        })?;
                if current.meta().resource_version != change.previous_rv {
                    return Err(StoreError::Conflict {
                        key: change.key.clone(),
                        have: change.previous_rv.clone(),
                        stored: current.meta().resource_version.clone(),
                    });
                }
                store.delete(&change.key)?;
            }
        }
        Ok(store.resource_version() != before)
    }

    /// `op` with its pre-image's resourceVersion as committed, when an earlier change of the
    /// same commit made that pre-image and was committed under another resourceVersion.
    fn follow(op: &Op, moved: &[(ObjectKey, u64, String)]) -> Op {
        let mut op = op.clone();
        if let Ok(previous) = op.previous_rv.parse::<u64>()
            && let Some((_, _, now)) = moved
                .iter()
                .rev()
                .find(|(key, rv, _)| *key == op.key && *rv == previous)
        {
            op.previous_rv = now.clone();
        }
        op
    }

    /// Notes the resourceVersion `op`'s object has in the store now that it is committed,
    /// when it is not the one `op` made.
    fn record_move(store: &Store, op: &Op, moved: &mut Vec<(ObjectKey, u64, String)>) {
        if op.event_type == EventType::Deleted {
            return;
        }
        if let Some(object) = store.get_stored(&op.key)
            && object.meta().resource_version != op.rv.to_string()
        {
            moved.push((
                op.key.clone(),
                op.rv,
                object.meta().resource_version.clone(),
            ));
        }
    }

    /// The transaction that commits the mirror's one uncommitted change.
    fn txn(&self, store: &Store) -> Option<(Txn, ObjectKey, EventType)> {
        let changes = store.uncommitted();
        let change = changes.first()?;
        let event = change.event;
        let key = key_for(&self.prefix, &event.key);
        let mut compares = vec![Compare::mod_revision(
            self.guard_key.clone(),
            CompareOp::Equal,
            irev(self.guard_rev),
        )];
        let previous_rv = change
            .previous
            .and_then(|p| p.meta().resource_version.parse::<u64>().ok());
        compares.push(match previous_rv {
            Some(p) => Compare::mod_revision(key.clone(), CompareOp::Equal, irev(p)),
            None => Compare::create_revision(key.clone(), CompareOp::Equal, 0),
        });
        let op = match event.event_type {
            EventType::Added | EventType::Modified => {
                TxnOp::put(key, value_of(&event.object), None)
            }
            EventType::Deleted => TxnOp::delete(key, None),
        };
        let guard = TxnOp::put(self.guard_key.clone(), Vec::<u8>::new(), None);
        Some((
            Txn::new().when(compares).and_then(vec![op, guard]),
            event.key.clone(),
            event.event_type,
        ))
    }
}

/// One uncommitted change, copied out of the mirror before the rollback.
#[derive(Debug, Clone)]
struct Op {
    rv: u64,
    event_type: EventType,
    key: ObjectKey,
    object: Stored,
    previous_rv: String,
}

/// The backend's own tokio runtime. Dropping a runtime waits for its blocking threads, which
/// tokio forbids inside another runtime (where a server that failed to start drops it), so this
/// one shuts down in the background.
struct OwnRuntime(Option<tokio::runtime::Runtime>);

impl std::ops::Deref for OwnRuntime {
    type Target = tokio::runtime::Runtime;
    fn deref(&self) -> &tokio::runtime::Runtime {
        self.0
            .as_ref()
            .unwrap_or_else(|| unreachable!("taken only on drop"))
    }
}

impl Drop for OwnRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

/// Runs a future on the backend's runtime from synchronous code, inside the HTTP runtime or not.
fn block_on<F>(runtime: &tokio::runtime::Runtime, future: F) -> F::Output
where
    F: std::future::Future + Send,
    F::Output: Send,
{
    off_runtime(|| runtime.block_on(future))
}

/// Runs blocking code (waiting for etcd) from synchronous code that may run on a worker of
/// the HTTP runtime, without stalling that runtime's other tasks.
fn off_runtime<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        Ok(_) => std::thread::scope(|s| {
            s.spawn(work)
                .join()
                .unwrap_or_else(|e| std::panic::resume_unwind(e))
        }),
        Err(_) => work(),
    }
}

impl Backend for EtcdBackend {
    fn commit(&mut self, store: &mut Store, rebase: bool) -> Result<Committed, Error> {
        let ops: Vec<Op> = store
            .uncommitted()
            .iter()
            .map(|u| Op {
                rv: u.event.resource_version,
                event_type: u.event.event_type,
                key: u.event.key.clone(),
                object: u.event.object.clone(),
                previous_rv: u
                    .previous
                    .map(|p| p.meta().resource_version.clone())
                    .unwrap_or_default(),
            })
            .collect();
        let mut committed = Committed::default();
        if !store.rollback() {
            store.begin_journal();
            return Ok(committed);
        }
        let mut rebases = 0;
        let mut index = 0;
        // (resourceVersion an earlier change of this commit had in the store, the one it was
        // committed with) where they differ: a later change of the same write decided on that
        // earlier one (an update that removed the last finalizer, then the delete) expects it
        // under its committed resourceVersion.
        let mut moved: Vec<(ObjectKey, u64, String)> = Vec::new();
        while let Some(op) = ops.get(index) {
            let head = store.resource_version();
            store.begin_journal();
            let op = &Self::follow(op, &moved);
            let changed = match Self::reapply(store, op) {
                Ok(changed) => changed,
                Err(err) => {
                    store.rollback();
                    return Err(Error::Conflict {
                        message: err.to_string(),
                        key: op.key.clone(),
                        not_found: matches!(err, StoreError::NotFound { .. }),
                        exists: matches!(err, StoreError::AlreadyExists { .. }),
                    });
                }
            };
            let Some((txn, key, event_type)) = changed.then(|| self.txn(store)).flatten() else {
                store.end_journal();
                Self::record_move(store, op, &mut moved);
                index += 1;
                continue;
            };
            let mut client = self.client.clone();
            let response = match block_on(&self.runtime, async move {
                tokio::time::timeout(REQUEST_TIMEOUT, client.txn(txn)).await
            }) {
                Ok(Ok(response)) => response,
                Ok(Err(err)) => {
                    store.rollback();
                    return Err(self.etcd_error(err.to_string()));
                }
                Err(_) => {
                    store.rollback();
                    return Err(self.etcd_error("the transaction timed out"));
                }
            };
            let revision = rev(response.header().map_or(0, |h| h.revision()));
            if response.succeeded() {
                if revision == head + 1 {
                    store.end_journal();
                    self.guard_rev = revision;
                } else {
                    // Something outside allot's transactions wrote to etcd: take the change
                    // back and let the watch bring it with etcd's revision.
                    store.rollback();
                    committed.rebased |= self.catch_up(store, revision)?;
                }
                if event_type != EventType::Deleted
                    && let Some(object) = store.get_stored(&key)
                {
                    committed.renumbered.push((op.rv, object.clone()));
                }
                Self::record_move(store, op, &mut moved);
                index += 1;
                continue;
            }
            store.rollback();
            // Only revisions of the guard and the Lease got in first (a leader-election
            // renewal): the objects the change was decided on are the same, so it is re-applied
            // on top even for the controllers.
            let objects_changed = self.catch_up(store, revision)?;
            committed.rebased |= objects_changed;
            if (objects_changed && !rebase) || rebases >= MAX_REBASES {
                return Err(Error::Conflict {
                    message: format!(
                        "etcd moved on to revision {revision} while this change was decided at {head}"
                    ),
                    key: op.key.clone(),
                    not_found: false,
                    exists: false,
                });
            }
            rebases += 1;
        }
        store.begin_journal();
        Ok(committed)
    }

    fn sync(&mut self, store: &mut Store) -> Result<bool, Error> {
        let before = (store.resource_version(), self.epoch);
        self.absorb(store);
        Ok((store.resource_version(), self.epoch) != before)
    }

    fn oldest_resource_version(&self) -> u64 {
        self.oldest
    }

    fn epoch(&self) -> u64 {
        self.epoch
    }

    fn read_barrier(&self, at_least: Option<u64>) -> Option<storage::ReadBarrier> {
        let mut client = self.client.clone();
        let runtime = self.runtime.handle().clone();
        let feed = self.feed.clone();
        let key = self.guard_key.clone();
        let endpoints = self.endpoints.clone();
        Some(Box::new(move || {
            off_runtime(|| {
                let wanted = match at_least {
                    Some(revision) => revision,
                    None => {
                        // etcd's revision now, from the header of the cheapest range request.
                        let options = GetOptions::new().with_count_only();
                        let response = runtime
                            .block_on(async move {
                                tokio::time::timeout(
                                    REQUEST_TIMEOUT,
                                    client.get(key, Some(options)),
                                )
                                .await
                            })
                            .map_err(|_| format!("etcd ({endpoints}) did not answer in time"))
                            .and_then(|r| r.map_err(|e| format!("etcd ({endpoints}): {e}")))
                            .map_err(storage::ReadError::Unavailable)?;
                        rev(response.header().map_or(0, |h| h.revision()))
                    }
                };
                feed.wait_for(wanted, FRESH_READ_TIMEOUT)
                    .map_err(|current| storage::ReadError::TooLarge { wanted, current })
            })
        }))
    }

    fn is_leader(&self) -> bool {
        self.leader.is_leader()
    }
}

/// Lists every key under `watched` at one revision (etcd's current one): paged, as a response
/// is limited to 4 MiB, every page at the first one's revision, as kube-apiserver lists.
async fn load(
    mut client: Client,
    watched: String,
) -> Result<(u64, Vec<(Vec<u8>, Vec<u8>, i64)>), etcd_client::Error> {
    let mut range_end = watched.clone().into_bytes();
    if let Some(last) = range_end.last_mut() {
        *last += 1;
    }
    let mut from = watched.into_bytes();
    let mut head = 0;
    let mut kvs = Vec::new();
    loop {
        let mut options = GetOptions::new()
            .with_range(range_end.clone())
            .with_limit(LOAD_PAGE);
        if head > 0 {
            options = options.with_revision(irev(head));
        }
        let page = client.get(from.clone(), Some(options)).await?;
        if head == 0 {
            head = rev(page.header().map_or(0, |h| h.revision()));
        }
        kvs.extend(
            page.kvs()
                .iter()
                .map(|kv| (kv.key().to_vec(), kv.value().to_vec(), kv.mod_revision())),
        );
        match kvs.last() {
            Some((key, _, _)) if page.more() => {
                from = key.clone();
                from.push(0);
            }
            _ => break,
        }
    }
    Ok((head, kvs))
}

/// A mirror of what `load` listed at revision `head`, with its journal on, and the guard's
/// mod_revision. A value that does not decode is an error when `strict` (at start-up), else
/// it is left out with a warning (a re-list must not stop a running server).
fn mirror(
    kvs: &[(Vec<u8>, Vec<u8>, i64)],
    head: u64,
    guard_key: &str,
    prefix: &str,
    strict: bool,
) -> Result<(Store, u64), String> {
    let mut objects = Vec::new();
    let mut guard_rev = 0;
    let leases = crate::lease::lease_prefix(prefix);
    for (key, value, mod_revision) in kvs {
        let key = String::from_utf8_lossy(key);
        if key == guard_key {
            guard_rev = rev(*mod_revision);
            continue;
        }
        if key.starts_with(&leases) {
            continue;
        }
        match decode(value) {
            Ok(object) => objects.push((rev(*mod_revision), object)),
            Err(message) if strict => return Err(format!("{key}: stored value: {message}")),
            Err(message) => tracing::warn!("etcd {key}: stored value: {message}"),
        }
    }
    objects.sort_by_key(|(r, _)| *r);
    let mut store = Store::new();
    for (revision, object) in objects {
        store
            .apply_committed(revision, EventType::Added, object)
            .map_err(|e| e.to_string())?;
    }
    store.skip_to(head);
    store.begin_journal();
    Ok((store, guard_rev))
}

/// Lists everything again after a compaction and hands it to the server through the feed
/// (events still queued are older, and superseded); retries until etcd answers. Returns the
/// revision of the list.
async fn relist(client: &Client, prefix: &str, feed: &Feed) -> u64 {
    loop {
        match load(client.clone(), prefix.to_string()).await {
            Ok((revision, kvs)) => {
                let mut state = feed.lock();
                state.events.clear();
                state.relist = Some(Snapshot { revision, kvs });
                state.revision = state.revision.max(revision);
                drop(state);
                feed.arrived.notify_all();
                return revision;
            }
            Err(err) => {
                tracing::warn!("etcd re-list: {err}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
        }
    }
}

/// Watches the prefix from `start` and queues every event on the feed; reconnects after
/// errors from the next revision. When etcd compacted past it, lists everything again at
/// etcd's current revision (the server rebuilds its mirror from that) and watches on from there.
async fn run_watch(client: Client, prefix: String, start: u64, feed: Arc<Feed>) {
    let client_of_kv = client.clone();
    let mut client = client
        .watch_client()
        .max_decoding_message_size(MAX_WATCH_MESSAGE);
    let mut next = start;
    'watch: loop {
        let options = WatchOptions::new()
            .with_prefix()
            .with_prev_key()
            .with_progress_notify()
            .with_start_revision(irev(next));
        let mut stream = match client.watch(prefix.clone(), Some(options)).await {
            Ok(stream) => stream,
            Err(err) => {
                tracing::warn!("etcd watch: {err}; retrying");
                tokio::time::sleep(Duration::from_millis(500)).await;
                continue;
            }
        };
        loop {
            match stream.message().await {
                Ok(Some(response)) => {
                    if response.canceled() {
                        if response.compact_revision() > 0 {
                            tracing::warn!(
                                "etcd compacted revision {} before this server read it (the watch needs {next}): listing again",
                                response.compact_revision()
                            );
                            next = relist(&client_of_kv, &prefix, &feed).await + 1;
                            continue 'watch;
                        }
                        break;
                    }
                    let mut state = feed.lock();
                    for event in response.events() {
                        let Some(kv) = event.kv() else { continue };
                        let revision = rev(kv.mod_revision());
                        let key = String::from_utf8_lossy(kv.key()).into_owned();
                        let change = match event.event_type() {
                            etcd_client::EventType::Put => Change::Put {
                                value: kv.value().to_vec(),
                                created: kv.create_revision() == kv.mod_revision(),
                            },
                            etcd_client::EventType::Delete => Change::Delete {
                                previous: event.prev_kv().map(|p| p.value().to_vec()),
                            },
                        };
                        state.events.push_back(FeedEvent {
                            revision,
                            key,
                            change,
                        });
                        state.revision = state.revision.max(revision);
                        next = next.max(revision + 1);
                    }
                    // The response that confirms the watch carries etcd's revision of that
                    // moment, not a promise that everything up to it was sent: events from
                    // `next` on may still follow.
                    if response.events().is_empty()
                        && !response.created()
                        && let Some(header) = response.header()
                    {
                        // A progress notification: everything up to here was sent.
                        state.revision = state.revision.max(rev(header.revision()));
                    }
                    drop(state);
                    feed.arrived.notify_all();
                }
                Ok(None) => break,
                Err(err) => {
                    tracing::warn!("etcd watch: {err}; reconnecting");
                    break;
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private etcd on free loopback ports (`ALLOT_ETCD`, else `etcd` on PATH), killed when
    /// dropped. Without one the test fails and names the README's test command, which
    /// provisions it.
    struct TestEtcd {
        child: std::process::Child,
        url: String,
        _dir: tempfile::TempDir,
    }

    impl TestEtcd {
        fn start() -> TestEtcd {
            let binary = std::env::var_os("ALLOT_ETCD")
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| "etcd".into());
            let works = std::process::Command::new(&binary)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success());
            assert!(
                works,
                "etcd not found ({binary:?} --version does not run): run the README's test command, `cargo xtask test`, which provisions kubectl 1.37 and etcd into target/tools/"
            );
            let port = || {
                std::net::TcpListener::bind("127.0.0.1:0")
                    .and_then(|l| l.local_addr())
                    .map(|a| a.port())
                    .expect("a free port")
            };
            let dir = tempfile::tempdir().expect("tempdir");
            let (client, peer) = (port(), port());
            let url = format!("http://127.0.0.1:{client}");
            let peer_url = format!("http://127.0.0.1:{peer}");
            let child = std::process::Command::new(&binary)
                .arg("--data-dir")
                .arg(dir.path().join("data"))
                .args(["--name", "unit", "--listen-client-urls", &url])
                .args([
                    "--advertise-client-urls",
                    &url,
                    "--listen-peer-urls",
                    &peer_url,
                ])
                .args(["--initial-advertise-peer-urls", &peer_url])
                .args(["--initial-cluster", &format!("unit={peer_url}")])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .expect("etcd starts");
            let etcd = TestEtcd {
                child,
                url,
                _dir: dir,
            };
            let deadline = Instant::now() + Duration::from_secs(20);
            while std::net::TcpStream::connect(("127.0.0.1", client)).is_err() {
                assert!(Instant::now() < deadline, "etcd did not start");
                std::thread::sleep(Duration::from_millis(50));
            }
            etcd
        }

        fn open(&self) -> (EtcdBackend, Store) {
            let deadline = Instant::now() + Duration::from_secs(20);
            loop {
                match EtcdBackend::open(&EtcdOptions::new(vec![self.url.clone()])) {
                    Ok(opened) => return opened,
                    Err(err) => {
                        assert!(Instant::now() < deadline, "{err}");
                        std::thread::sleep(Duration::from_millis(100));
                    }
                }
            }
        }
    }

    impl Drop for TestEtcd {
        fn drop(&mut self) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }

    fn namespace(name: &str) -> Stored {
        storage::stored_from_json(&serde_json::json!({
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}
        }))
        .expect("decodes")
    }

    /// Another writer (a server, a Lease renewal) moves the revision guard behind the
    /// mirror's back.
    fn move_guard(backend: &EtcdBackend) {
        let mut client = backend.client.clone();
        let guard = backend.guard_key.clone();
        block_on(&backend.runtime, async move {
            client.put(guard, Vec::<u8>::new(), None).await
        })
        .expect("puts the guard");
    }

    fn etcd_mod_revision(backend: &EtcdBackend, key: &ObjectKey) -> Option<u64> {
        let mut client = backend.client.clone();
        let key = key_for(&backend.prefix, key);
        let response =
            block_on(&backend.runtime, async move { client.get(key, None).await }).expect("gets");
        response.kvs().first().map(|kv| rev(kv.mod_revision()))
    }

    /// Issue 6: a write of two changes to one object (an update that removes the last
    /// finalizer, then the delete it allows) that has to be rebased once (another writer got
    /// in first) committed the update under a new revision, then refused the delete because it
    /// still expected the update's old resourceVersion: 409 although nothing conflicted.
    #[test]
    fn a_rebased_write_of_two_changes_to_one_object_commits_both() {
        let etcd = TestEtcd::start();
        let (mut backend, mut store) = etcd.open();
        store
            .create_stored(namespace("doomed"), "2026-01-01T00:00:00Z")
            .expect("creates");
        backend
            .commit(&mut store, true)
            .expect("commits the create");
        let key = ObjectKey::new(Kind::Namespace, "", "doomed");
        for attempt in 0..3 {
            move_guard(&backend);
            let mut labelled = store.get_stored(&key).expect("stored").clone();
            labelled
                .meta_mut()
                .labels
                .insert("attempt".into(), attempt.to_string());
            storage::update_stored(&mut store, labelled).expect("updates");
            if attempt == 2 {
                store.delete(&key).expect("deletes");
            }
            let committed = backend.commit(&mut store, true).expect("commits both");
            assert!(!committed.renumbered.is_empty() || attempt == 2);
            let stored = store
                .get_stored(&key)
                .map(|o| o.meta().resource_version.clone());
            assert_eq!(
                stored.and_then(|rv| rv.parse().ok()),
                etcd_mod_revision(&backend, &key),
                "the mirror holds what etcd holds"
            );
        }
        assert!(store.get_stored(&key).is_none());
        assert_eq!(etcd_mod_revision(&backend, &key), None);
    }

    #[test]
    fn keys_follow_the_kube_apiserver_layout() {
        assert_eq!(
            object_key("/registry", Kind::Pod, "ml", "p"),
            "/registry/pods/ml/p"
        );
        assert_eq!(
            object_key("/registry", Kind::Namespace, "", "ml"),
            "/registry/namespaces/ml"
        );
        assert_eq!(
            object_key("/registry", Kind::ResourceClaim, "ml", "c"),
            "/registry/resource.k8s.io/resourceclaims/ml/c"
        );
        assert_eq!(
            object_key("/x", Kind::DeviceClass, "", "gpu"),
            "/x/resource.k8s.io/deviceclasses/gpu"
        );
    }
}
