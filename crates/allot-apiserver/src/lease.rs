//! Leader election for the controllers of `allot serve` processes that share one etcd, as
//! client-go's `leaderelection` does it: a `coordination.k8s.io/v1` Lease object
//! (`holderIdentity`, `leaseDurationSeconds`, `acquireTime`, `renewTime`, `leaseTransitions`)
//! written with compare-and-swap on its `mod_revision`.
//!
//! The holder renews every `retry_period` and stops leading when it has not renewed for
//! `renew_deadline`. A candidate takes the lease over only when the record it observes has not
//! changed for `lease_duration` of its own clock (not the holder's `renewTime`, so clocks need
//! not agree), which is longer than the renew deadline: the old leader has stopped by then.
//! Lease writes also move the revision guard of [`crate::etcd`], so every server's mirror sees
//! them as revisions it skips.
//!
//! The election record lives under `/registry/allot.dev/leader-election/` (renewed every retry
//! period, skipped by the mirror); what the API serves is its view, the Lease object
//! `kube-system/allot-controller-manager` of the store, written by [`LeaseMirror`], a controller
//! that runs only on the leader (with one server: always) and renews the object's holder and
//! `renewTime` every retry period, as client-go's elector writes its Lease. So
//! `kubectl get lease -n kube-system` shows who runs the controllers; election itself never
//! reads the object, so a client that edits or deletes it changes nothing but the view (the
//! leader writes it back at its next renewal).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use etcd_client::{Client, Compare, CompareOp, Txn, TxnOp};
use serde_json::{Value, json};

/// Where the controllers' Lease lives.
pub const LEASE_NAMESPACE: &str = "kube-system";
/// The Lease's name.
pub const LEASE_NAME: &str = "allot-controller-manager";

/// The key prefix of the election records (`/registry/allot.dev/leader-election/`), apart
/// from the Lease objects the API serves under `/registry/coordination.k8s.io/leases/`.
pub fn lease_prefix(prefix: &str) -> String {
    format!("{prefix}/allot.dev/leader-election/")
}

/// The controllers' Lease key.
pub fn lease_key(prefix: &str) -> String {
    format!("{}{LEASE_NAMESPACE}/{LEASE_NAME}", lease_prefix(prefix))
}

/// Timings and identity (kube-controller-manager's `--leader-elect-*` flags).
#[derive(Debug, Clone)]
pub struct ElectionOptions {
    /// This server's identity in `holderIdentity`.
    pub identity: String,
    /// How long a candidate waits on an unchanged record before taking over.
    pub lease_duration: Duration,
    /// How long the leader keeps leading without a successful renewal.
    pub renew_deadline: Duration,
    /// How often to try to acquire or renew.
    pub retry_period: Duration,
}

impl Default for ElectionOptions {
    fn default() -> Self {
        ElectionOptions {
            identity: default_identity(),
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
        }
    }
}

/// `hostname_pid_random`, unique per process.
pub fn default_identity() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_else(|_| "allot".into());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos());
    format!("{host}_{}_{nanos:08x}", std::process::id())
}

impl ElectionOptions {
    /// Checks the timings as client-go does.
    pub fn validate(&self) -> Result<(), String> {
        if self.retry_period.is_zero() {
            return Err("leader election: the retry period must be positive".into());
        }
        if self.renew_deadline <= self.retry_period {
            return Err(
                "leader election: the renew deadline must be longer than the retry period".into(),
            );
        }
        if self.lease_duration <= self.renew_deadline {
            return Err(
                "leader election: the lease duration must be longer than the renew deadline".into(),
            );
        }
        if self.identity.is_empty() {
            return Err("leader election: the identity must not be empty".into());
        }
        Ok(())
    }
}

/// Whether this server leads, shared with the controllers' thread.
#[derive(Debug, Default)]
pub struct LeaderState {
    leading_until: Mutex<Option<Instant>>,
}

impl LeaderState {
    /// True while the last successful renewal is younger than the renew deadline.
    pub fn is_leader(&self) -> bool {
        self.leading_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_some_and(|until| Instant::now() < until)
    }

    fn set(&self, until: Option<Instant>) {
        *self
            .leading_until
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = until;
    }
}

/// The Lease's fields that election reads.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LeaseRecord {
    /// `spec.holderIdentity`.
    pub holder: String,
    /// `spec.leaseDurationSeconds`.
    pub duration_seconds: u64,
    /// `spec.acquireTime`.
    pub acquire_time: String,
    /// `spec.leaseTransitions`.
    pub transitions: u64,
}

impl LeaseRecord {
    /// Reads a stored Lease; `None` when it is not one.
    pub fn parse(value: &[u8]) -> Option<LeaseRecord> {
        let json: Value = serde_json::from_slice(value).ok()?;
        if json.get("kind").and_then(Value::as_str) != Some("Lease") {
            return None;
        }
        let spec = json.get("spec")?;
        Some(LeaseRecord {
            holder: spec
                .get("holderIdentity")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            duration_seconds: spec
                .get("leaseDurationSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(0),
            acquire_time: spec
                .get("acquireTime")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string(),
            transitions: spec
                .get("leaseTransitions")
                .and_then(Value::as_u64)
                .unwrap_or(0),
        })
    }
}

/// `MicroTime` as the API writes it.
fn micro_time() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// The Lease this server writes when it acquires or renews.
pub fn lease_object(
    identity: &str,
    duration: Duration,
    acquire_time: &str,
    transitions: u64,
) -> Value {
    json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": LEASE_NAME, "namespace": LEASE_NAMESPACE},
        "spec": {
            "holderIdentity": identity,
            // Whole seconds, rounded up: a candidate must never wait less than configured.
            "leaseDurationSeconds": duration.as_secs() + u64::from(duration.subsec_nanos() > 0),
            "acquireTime": acquire_time,
            "renewTime": micro_time(),
            "leaseTransitions": transitions,
        }
    })
}

/// The election loop of one server.
pub struct LeaderElection {
    client: Client,
    key: String,
    guard_key: String,
    options: ElectionOptions,
    state: Arc<LeaderState>,
    /// The record last seen, its mod_revision, and when it was first seen (this clock).
    observed: Option<(Option<LeaseRecord>, i64, Instant)>,
}

impl LeaderElection {
    /// An election for the controllers' Lease under `prefix`.
    pub fn new(
        client: Client,
        prefix: &str,
        guard_key: String,
        options: ElectionOptions,
        state: Arc<LeaderState>,
    ) -> Self {
        LeaderElection {
            client,
            key: lease_key(prefix),
            guard_key,
            options,
            state,
            observed: None,
        }
    }

    /// Tries to acquire or renew every retry period, forever.
    pub async fn run(mut self) {
        let mut leading = false;
        loop {
            let started = Instant::now();
            let renewed = tokio::time::timeout(self.options.renew_deadline, self.try_once())
                .await
                .unwrap_or(Ok(false));
            match renewed {
                Ok(true) => {
                    self.state.set(Some(started + self.options.renew_deadline));
                    if !leading {
                        eprintln!(
                            "allot serve: leading the controllers as {} (Lease {LEASE_NAMESPACE}/{LEASE_NAME})",
                            self.options.identity
                        );
                    }
                    leading = true;
                }
                Ok(false) | Err(_) => {
                    if let Err(err) = &renewed {
                        tracing::warn!("leader election: {err}");
                    }
                    if leading && !self.state.is_leader() {
                        eprintln!(
                            "allot serve: lost the controllers' Lease ({})",
                            self.options.identity
                        );
                        leading = false;
                    }
                }
            }
            tokio::time::sleep(self.options.retry_period).await;
        }
    }

    /// One acquire-or-renew attempt; `Ok(true)` when this server holds the lease now.
    async fn try_once(&mut self) -> Result<bool, etcd_client::Error> {
        let response = self.client.get(self.key.clone(), None).await?;
        let (record, mod_revision) = match response.kvs().first() {
            Some(kv) => (LeaseRecord::parse(kv.value()), kv.mod_revision()),
            None => (None, 0),
        };
        let now = Instant::now();
        let observed_at = match &self.observed {
            Some((_, seen, at)) if *seen == mod_revision => *at,
            _ => {
                self.observed = Some((record.clone(), mod_revision, now));
                now
            }
        };
        let me = self.options.identity.as_str();
        let (acquire_time, transitions) = match &record {
            Some(r) if r.holder == me => (r.acquire_time.clone(), r.transitions),
            Some(r) if !r.holder.is_empty() => {
                let duration = Duration::from_secs(r.duration_seconds.max(1));
                if now < observed_at + duration {
                    return Ok(false);
                }
                (micro_time(), r.transitions + 1)
            }
            Some(r) => (micro_time(), r.transitions + 1),
            None => (micro_time(), 0),
        };
        let lease = lease_object(me, self.options.lease_duration, &acquire_time, transitions);
        let txn = Txn::new()
            .when(vec![Compare::mod_revision(
                self.key.clone(),
                CompareOp::Equal,
                mod_revision,
            )])
            .and_then(vec![
                TxnOp::put(
                    self.key.clone(),
                    serde_json::to_vec(&lease).unwrap_or_default(),
                    None,
                ),
                TxnOp::put(self.guard_key.clone(), Vec::<u8>::new(), None),
            ]);
        let response = self.client.txn(txn).await?;
        if !response.succeeded() {
            return Ok(false);
        }
        let revision = response.header().map_or(0, |h| h.revision());
        self.observed = Some((
            LeaseRecord::parse(&serde_json::to_vec(&lease).unwrap_or_default()),
            revision,
            Instant::now(),
        ));
        Ok(true)
    }
}

/// This process's identity when no etcd election gives one (one server): stable for the
/// process's life.
pub fn process_identity() -> String {
    static IDENTITY: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    IDENTITY.get_or_init(default_identity).clone()
}

/// The controller that shows the leader as the Lease object `kube-system/allot-controller-manager`
/// (see the module documentation).
#[derive(Debug)]
pub struct LeaseMirror {
    identity: String,
    duration_seconds: i32,
    renew_millis: u64,
    /// When this controller last wrote the Lease (the runtime's clock).
    renewed: Option<allot_runtime::SimTime>,
}

impl LeaseMirror {
    /// A mirror writing `identity` with `options`' lease duration, every retry period.
    pub fn new(identity: String, options: &ElectionOptions) -> Self {
        let secs =
            options.lease_duration.as_secs() + u64::from(options.lease_duration.subsec_nanos() > 0);
        LeaseMirror {
            identity,
            duration_seconds: i32::try_from(secs).unwrap_or(i32::MAX),
            renew_millis: u64::try_from(options.retry_period.as_millis())
                .unwrap_or(u64::MAX)
                .max(1),
            renewed: None,
        }
    }

    fn key() -> allot_store::ObjectKey {
        allot_store::ObjectKey::new(allot_store::Kind::Lease, LEASE_NAMESPACE, LEASE_NAME)
    }
}

impl allot_runtime::Controller for LeaseMirror {
    fn name(&self) -> &'static str {
        "leader-lease"
    }

    fn keys_for(
        &self,
        event: &allot_store::Event,
        _store: &allot_store::Store,
    ) -> Vec<allot_store::ObjectKey> {
        let namespace_ready = event.key.kind == allot_store::Kind::Namespace
            && event.key.name == LEASE_NAMESPACE
            && event.event_type != allot_store::EventType::Deleted;
        if namespace_ready || event.key == LeaseMirror::key() {
            vec![LeaseMirror::key()]
        } else {
            Vec::new()
        }
    }

    fn reconcile(
        &mut self,
        store: &mut allot_store::Store,
        _key: &allot_store::ObjectKey,
        ctx: &allot_runtime::Context,
    ) -> Result<allot_runtime::Action, String> {
        use allot_api::coordination::v1::Lease;
        let current = store.get::<Lease>(LEASE_NAMESPACE, LEASE_NAME).cloned();
        let held = current
            .as_ref()
            .is_some_and(|l| l.spec.holder_identity.as_deref() == Some(self.identity.as_str()));
        if held
            && let Some(at) = self.renewed
            && ctx.now.0 < at.0 + self.renew_millis
        {
            return Ok(allot_runtime::Action::RequeueAfterMillis(
                at.0 + self.renew_millis - ctx.now.0,
            ));
        }
        let now = micro_time();
        let result = match current {
            None => {
                let mut lease = Lease::default();
                lease.metadata.name = LEASE_NAME.into();
                lease.metadata.namespace = LEASE_NAMESPACE.into();
                lease.spec.holder_identity = Some(self.identity.clone());
                lease.spec.lease_duration_seconds = Some(self.duration_seconds);
                lease.spec.acquire_time = Some(now.clone());
                lease.spec.renew_time = Some(now);
                lease.spec.lease_transitions = Some(0);
                store
                    .create(lease, &ctx.now.rfc3339())
                    .map(|_| ())
                    .map_err(|e| e.to_string())
            }
            Some(mut lease) => {
                if !held {
                    lease.spec.holder_identity = Some(self.identity.clone());
                    lease.spec.acquire_time = Some(now.clone());
                    lease.spec.lease_transitions =
                        Some(lease.spec.lease_transitions.unwrap_or(0).saturating_add(1));
                }
                lease.spec.lease_duration_seconds = Some(self.duration_seconds);
                lease.spec.renew_time = Some(now);
                store.update(lease).map(|_| ()).map_err(|e| e.to_string())
            }
        };
        result?;
        self.renewed = Some(ctx.now);
        Ok(allot_runtime::Action::RequeueAfterMillis(self.renew_millis))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_leader_shows_as_the_lease_holder_and_renews() {
        use allot_api::coordination::v1::Lease;
        use allot_runtime::{Runtime, SimTime};
        let mut store = allot_store::Store::new();
        let ns = crate::storage::stored_from_json(
            &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}}),
        )
        .expect("decodes");
        store
            .create_stored(ns, "2026-01-01T00:00:00Z")
            .expect("creates");
        let options = ElectionOptions {
            identity: "a".into(),
            ..ElectionOptions::default()
        };
        let mirror = LeaseMirror::new("a".into(), &options);
        let mut runtime = Runtime::new(store, vec![Box::new(mirror)], SimTime(0));
        runtime.advance_to(SimTime(100), 100).expect("runs");
        let lease = runtime
            .store
            .get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)
            .cloned()
            .expect("created");
        assert_eq!(lease.spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(lease.spec.lease_duration_seconds, Some(15));
        assert_eq!(lease.spec.lease_transitions, Some(0));
        let rv = runtime.store.resource_version();
        runtime.advance_to(SimTime(1000), 100).expect("runs");
        assert_eq!(
            runtime.store.resource_version(),
            rv,
            "no renewal before the retry period"
        );
        runtime.advance_to(SimTime(2500), 100).expect("runs");
        assert!(
            runtime.store.resource_version() > rv,
            "renewed after the retry period"
        );

        // Another holder took it over meanwhile: a new leader counts a transition.
        let mut taken = runtime
            .store
            .get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)
            .cloned()
            .expect("exists");
        taken.spec.holder_identity = Some("b".into());
        runtime.store.update(taken).expect("updates");
        runtime.advance_to(SimTime(2600), 100).expect("runs");
        let lease = runtime
            .store
            .get::<Lease>(LEASE_NAMESPACE, LEASE_NAME)
            .cloned()
            .expect("exists");
        assert_eq!(lease.spec.holder_identity.as_deref(), Some("a"));
        assert_eq!(lease.spec.lease_transitions, Some(1));
    }

    #[test]
    fn lease_records_round_trip() {
        let value = lease_object(
            "a",
            Duration::from_secs(15),
            "2026-01-01T00:00:00.000000Z",
            3,
        );
        let bytes = serde_json::to_vec(&value).expect("encodes");
        let record = LeaseRecord::parse(&bytes).expect("parses");
        assert_eq!(
            record,
            LeaseRecord {
                holder: "a".into(),
                duration_seconds: 15,
                acquire_time: "2026-01-01T00:00:00.000000Z".into(),
                transitions: 3,
            }
        );
        assert!(LeaseRecord::parse(b"{\"kind\":\"Pod\"}").is_none());
        let rounded = lease_object("a", Duration::from_millis(1500), "", 0);
        assert_eq!(rounded["spec"]["leaseDurationSeconds"], 2);
        assert!(LeaseRecord::parse(b"not json").is_none());
        assert_eq!(
            lease_key("/registry"),
            "/registry/allot.dev/leader-election/kube-system/allot-controller-manager",
            "the election record is apart from the Lease objects the API serves"
        );
    }

    #[test]
    fn timings_are_checked_like_client_go() {
        let mut options = ElectionOptions::default();
        assert!(options.validate().is_ok());
        options.renew_deadline = options.lease_duration;
        assert!(options.validate().is_err());
        options = ElectionOptions::default();
        options.retry_period = options.renew_deadline;
        assert!(options.validate().is_err());
        options = ElectionOptions::default();
        options.identity.clear();
        assert!(options.validate().is_err());
    }
}
