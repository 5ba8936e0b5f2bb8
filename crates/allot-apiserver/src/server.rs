//! The HTTP server: Kubernetes REST conventions over the store.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use allot_api::load::{LoadOptions, RawDocument, SourceMap, decode_object};
use allot_store::{Kind, ObjectKey, Store, StoreError, Stored};
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::Error;
use crate::resources::{self, ResourceInfo};
use crate::selector::Selector;
use crate::storage::{self, Backend, Renumber};

/// Request bodies larger than this are refused (upstream's limit is 3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// The data directory (event log, kubeconfig, tokens).
    pub data_dir: PathBuf,
    /// The address to listen on; port 0 picks a free port.
    pub listen: String,
    /// When the port of `listen` is taken, listen on a free port of the same host instead
    /// (the default address of `allot serve`, as kind picks a free port).
    pub listen_fallback: bool,
    /// How many resourceVersions back a watch may start; older ones get 410 Gone.
    pub watch_window: u64,
    /// How often watches that allow bookmarks get one.
    pub bookmark_interval: Duration,
    /// The tokens file (`--token-auth-file`); `None` uses `DATA_DIR/tokens.csv`, created with
    /// an admin user when missing.
    pub token_auth_file: Option<PathBuf>,
    /// Store everything in etcd instead of the log under the data directory.
    pub etcd: Option<crate::etcd::EtcdOptions>,
    /// The KubeletConfiguration of simulated nodes (`--kubelet-config`); the kubelet's
    /// defaults when `None`.
    pub kubelet_config: Option<allot_kubelet_config::KubeletConfiguration>,
    /// The feature gates of the control plane (`--feature-gates`), the same defaults as
    /// `allot simulate`'s.
    pub feature_gates: allot_features::FeatureGates,
    /// Start even when the event log is missing or empty in a data directory an earlier
    /// server used (`--allow-empty-store`).
    pub allow_empty_store: bool,
    /// The served API versions (`--runtime-config`).
    pub runtime_config: crate::versions::RuntimeConfig,
    /// Objects to create before serving (`allot serve --from`); only into an unused data
    /// directory or etcd prefix.
    pub preload: Vec<Stored>,
    /// The control-plane loops that run (`--controllers`).
    pub controllers: crate::controllers::Enabled,
    /// Where to log every request (`--request-log`).
    pub request_log: Option<PathBuf>,
    /// The scheduler's KubeSchedulerConfiguration (`--scheduler-config`); `None`: the
    /// default profile.
    pub scheduler_configuration: Option<allot_scheduler::config::SchedulerConfiguration>,
}

impl ServeOptions {
    /// Defaults for a data directory.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        ServeOptions {
            data_dir: data_dir.into(),
            listen: "127.0.0.1:6443".into(),
            listen_fallback: false,
            watch_window: 10_000,
            bookmark_interval: Duration::from_secs(60),
            token_auth_file: None,
            etcd: None,
            kubelet_config: None,
            feature_gates: allot_features::FeatureGates::defaults(),
            allow_empty_store: false,
            runtime_config: crate::versions::RuntimeConfig::defaults(),
            preload: Vec::new(),
            controllers: crate::controllers::Enabled::default(),
            request_log: None,
            scheduler_configuration: None,
        }
    }
}

struct Inner {
    store: Store,
    backend: Box<dyn Backend>,
    persisted: u64,
    failed: Option<String>,
    /// Held while serving: no second server on the same data directory.
    _lock: storage::DirLock,
}

pub(crate) struct Shared {
    inner: Mutex<Inner>,
    changed: tokio::sync::watch::Sender<u64>,
    /// Authentication (tokens) and authorization (RBAC).
    security: Arc<crate::auth::Security>,
    options: ServeOptions,
    /// `--request-log`.
    request_log: Option<crate::request_log::RequestLog>,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// A bound, loaded server ready to run.
pub struct Server {
    shared: Arc<Shared>,
    listener: tokio::net::TcpListener,
    kubeconfig: PathBuf,
    tls: Arc<rustls::ServerConfig>,
}

/// Creates `objects` (`allot serve --from`) in one commit, refusing storage that holds
/// objects already or a data directory an earlier server used.
fn preload(
    data_dir: &Path,
    objects: Vec<Stored>,
    inner: &mut Inner,
    now: &str,
) -> Result<(), Error> {
    if objects.is_empty() {
        return Ok(());
    }
    let used = [data_dir.join("pki"), data_dir.join("tokens.csv")]
        .into_iter()
        .find(|p| p.exists());
    if inner.store.resource_version() > 0 || used.is_some() {
        let sign = used.map_or_else(
            || "its storage holds objects".to_string(),
            |p| format!("{} exists", p.display()),
        );
        return Err(Error::Preload {
            message: format!(
                "{}: --from needs an unused data directory ({sign}); use a new --data-dir",
                data_dir.display()
            ),
        });
    }
    let count = objects.len();
    for object in objects {
        let key = format!("{} {}", object.kind().name(), object.meta().name);
        inner
            .store
            .create_stored(object, now)
            .map_err(|err| Error::Preload {
                message: format!("{key}: {err}"),
            })?;
    }
    persist(inner, true)?;
    tracing::info!("pre-loaded {count} objects");
    Ok(())
}

impl Server {
    /// Opens the data directory (replaying its log), binds the address and writes the
    /// kubeconfig and tokens file.
    pub async fn bind(mut options: ServeOptions) -> Result<Server, Error> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| Error::Io { path, source }
        };
        std::fs::create_dir_all(&options.data_dir).map_err(io(&options.data_dir))?;
        let (backend, store, lock) = storage::open(
            &options.data_dir,
            options.etcd.as_ref(),
            options.allow_empty_store,
        )?;
        let persisted = store.resource_version();
        let mut inner = Inner {
            store,
            backend,
            persisted,
            failed: None,
            _lock: lock,
        };
        let now = now_rfc3339();
        preload(
            &options.data_dir,
            std::mem::take(&mut options.preload),
            &mut inner,
            &now,
        )?;
        for name in ["default", "kube-system", "kube-public"] {
            if inner
                .store
                .get::<allot_api::core::v1::Namespace>("", name)
                .is_none()
            {
                // As kube-apiserver's system namespaces controller creates them: through
                // the registry's create (phase Active, finalizer, name label).
                let mut namespace =
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
                crate::namespace::prepare_create(&mut namespace);
                let object = storage::stored_from_json(&namespace)
                    .map_err(|message| Error::Replay { rv: 0, message })?;
                let _ = inner.store.create_stored(object, &now);
                // Another server sharing the storage may have created it first.
                if let Err(err) = persist(&mut inner, true)
                    && err.is_fatal()
                {
                    return Err(err);
                }
            }
        }
        if crate::legacy_token_tracking::ensure(&mut inner.store, &now)
            .map_err(|message| Error::Replay { rv: 0, message })?
            && let Err(err) = persist(&mut inner, true)
            && err.is_fatal()
        {
            return Err(err);
        }
        // RBAC objects: an earlier version's rbac.json, then the defaults that are missing;
        // one commit each (another server on the same etcd may create one first).
        let mut commit = |store: &mut Store| {
            let result = inner.backend.commit(store, true);
            match result {
                Err(err) if err.is_fatal() => Err(err),
                _ => Ok(()),
            }
        };
        let imported =
            crate::rbac::import_file(&options.data_dir, &mut inner.store, &now, &mut commit)?;
        if imported > 0 {
            tracing::info!("imported {imported} RBAC objects from the data directory's rbac.json");
        }
        crate::rbac::bootstrap(&mut inner.store, &now, &mut commit)?;
        inner.persisted = inner.store.resource_version();
        let security =
            crate::auth::Security::open(&options.data_dir, options.token_auth_file.as_deref())?;
        security
            .rbac
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .refresh(&inner.store, inner.persisted);
        let listener = match tokio::net::TcpListener::bind(&options.listen).await {
            Err(err) if options.listen_fallback && err.kind() == std::io::ErrorKind::AddrInUse => {
                let host = options
                    .listen
                    .rsplit_once(':')
                    .map_or(options.listen.as_str(), |(host, _)| host);
                tokio::net::TcpListener::bind(format!("{host}:0")).await
            }
            bound => bound,
        }
        .map_err(|source| Error::Bind {
            address: options.listen.clone(),
            source,
        })?;
        let address = listener.local_addr().map_err(|source| Error::Bind {
            address: options.listen.clone(),
            source,
        })?;
        let kubeconfig = options.data_dir.join("kubeconfig");
        let pki = crate::tls::load_or_create(&options.data_dir.join("pki"), address)?;
        crate::rbac::write_private(
            &kubeconfig,
            &crate::tls::kubeconfig_text(address, security.admin_token.as_deref(), &pki.ca_pem),
        )?;
        let (changed, _) = tokio::sync::watch::channel(inner.persisted);
        let request_log = match &options.request_log {
            Some(path) => Some(crate::request_log::RequestLog::open(path)?),
            None => None,
        };
        let shared = Arc::new(Shared {
            inner: Mutex::new(inner),
            changed,
            security: Arc::new(security),
            options,
            request_log,
        });
        Ok(Server {
            shared,
            listener,
            kubeconfig,
            tls: pki.config,
        })
    }

    /// The kubeconfig written for the admin user.
    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    /// The bound address.
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.listener.local_addr().ok()
    }

    /// Serves until the process ends.
    pub async fn run(self) -> Result<(), Error> {
        let address = self.local_addr().map(|a| a.to_string()).unwrap_or_default();
        let controllers = self.shared.clone();
        std::thread::spawn(move || run_controllers(controllers));
        let app = axum::Router::new().fallback(handle).with_state(self.shared);
        let listener = crate::tls::TlsListener::new(self.listener, self.tls).map_err(|source| {
            Error::Bind {
                address: address.clone(),
                source,
            }
        })?;
        axum::serve(listener, app)
            .await
            .map_err(|source| Error::Bind { address, source })
    }
}

/// The control-plane loops of `allot simulate` in its order (ResourceClaim controller,
/// scheduler, the simulated nodes' agents, device-taint eviction, pool status requests, the
/// workload controllers), then the recorder of Events, the garbage collector, the namespace
/// controller, ClusterRole aggregation and the leader's Lease object; those `--controllers`
/// disables are left out.
fn controllers(options: &ServeOptions) -> Vec<Box<dyn allot_runtime::Controller>> {
    // Their writes record managedFields as the upstream component that makes them.
    let as_ = |manager: &'static str, inner: Box<dyn allot_runtime::Controller>| {
        Box::new(crate::apply::ControllerWrites::new(inner, manager))
            as Box<dyn allot_runtime::Controller>
    };
    const KCM: &str = "kube-controller-manager";
    // The gates as `allot simulate` passes them on (allot-sim's run.rs).
    let gates = &options.feature_gates;
    let features = gates.dra();
    let enabled = &options.controllers;
    let mut loops: Vec<Box<dyn allot_runtime::Controller>> = Vec::new();
    if enabled.runs("resourceclaim-controller") {
        loops.push(as_(
            KCM,
            Box::new(allot_controllers::ResourceClaimController::new(
                allot_controllers::ResourceClaimControllerConfig {
                    workload_resource_claims: gates.enabled("DRAWorkloadResourceClaims"),
                },
            )),
        ));
    }
    if enabled.runs("scheduler") {
        loops.push(as_(
            "kube-scheduler",
            Box::new(allot_scheduler::Scheduler::new(
                allot_scheduler::SchedulerConfig {
                    features,
                    extended_resource: gates.enabled("DRAExtendedResource"),
                    node_allocatable_resources: gates.enabled("DRANodeAllocatableResources"),
                    configuration: options.scheduler_configuration.clone(),
                    ..allot_scheduler::SchedulerConfig::default()
                },
            )),
        ));
    }
    if enabled.runs("kubelet") {
        loops.push(as_(
            "kubelet",
            Box::new(
                crate::nodes::NodeFleet::new(options.kubelet_config.clone().unwrap_or_default())
                    .with_state_dir(options.data_dir.join("nodes"))
                    .with_features(allot_nodesim::NodeFeatures {
                        resource_health_status: gates.enabled("ResourceHealthStatus"),
                        resource_claim_device_status: features.resource_claim_device_status,
                        node_allocatable_resources: gates.enabled("DRANodeAllocatableResources"),
                        optional_node_operations: features.optional_node_operations,
                    }),
            ),
        ));
    }
    if enabled.runs("device-taint-eviction-controller") {
        loops.push(as_(
            KCM,
            Box::new(allot_controllers::DeviceTaintEvictionController::new(
                allot_controllers::EvictionMode::Delete,
            )),
        ));
    }
    if enabled.runs("resourcepoolstatusrequest-controller") {
        loops.push(as_(
            KCM,
            Box::new(allot_controllers::PoolStatusController::new(
                allot_controllers::PoolStatusControllerConfig::default(),
            )),
        ));
    }
    // The workload controllers of kube-controller-manager, as `allot simulate` runs them.
    type MakeLoop = fn() -> Box<dyn allot_runtime::Controller>;
    let workloads: [(&str, MakeLoop); 7] = [
        ("deployment-controller", || {
            Box::new(allot_controllers::DeploymentController::new())
        }),
        ("replicaset-controller", || {
            Box::new(allot_controllers::ReplicaSetController::new())
        }),
        ("statefulset-controller", || {
            Box::new(allot_controllers::StatefulSetController::new())
        }),
        ("persistentvolume-binder-controller", || {
            Box::new(allot_controllers::PersistentVolumeController::new())
        }),
        ("daemonset-controller", || {
            Box::new(allot_controllers::DaemonSetController::new())
        }),
        ("job-controller", || {
            Box::new(allot_controllers::JobController::new())
        }),
        ("cronjob-controller", || {
            Box::new(allot_controllers::CronJobController::new())
        }),
    ];
    for (name, make) in workloads {
        if enabled.runs(name) {
            loops.push(as_(KCM, make()));
        }
    }
    // The Events of the loops that run (a real component records its own).
    let mut recorder = crate::events::EventRecorder::new();
    for (name, component) in [
        ("scheduler", crate::events::SCHEDULER),
        ("kubelet", crate::events::KUBELET),
        (
            "device-taint-eviction-controller",
            crate::events::TAINT_EVICTION,
        ),
    ] {
        if !enabled.runs(name) {
            recorder = recorder.without(component);
        }
    }
    loops.push(Box::new(recorder));
    if enabled.runs("garbage-collector-controller") {
        loops.push(as_(
            KCM,
            Box::new(allot_controllers::GarbageCollector::new()),
        ));
    }
    if enabled.runs("namespace-controller") {
        loops.push(as_(
            KCM,
            Box::new(crate::namespace::NamespaceController::new()),
        ));
    }
    if enabled.runs("clusterrole-aggregation-controller") {
        loops.push(as_(
            KCM,
            Box::new(crate::aggregation::AggregationController::new()),
        ));
    }
    loops.push(Box::new(match &options.etcd {
        Some(etcd) => {
            crate::lease::LeaseMirror::new(etcd.election.identity.clone(), &etcd.election)
        }
        // One server always leads: the Lease is renewed once a minute (every renewal is
        // a record of the log, which is replayed at start).
        None => crate::lease::LeaseMirror::new(
            crate::lease::process_identity(),
            &crate::lease::ElectionOptions {
                lease_duration: Duration::from_secs(120),
                renew_deadline: Duration::from_secs(90),
                retry_period: Duration::from_secs(60),
                ..crate::lease::ElectionOptions::default()
            },
        ),
    }));
    loops
}

/// The real clock as the runtime's time (milliseconds since 2026-01-01T00:00:00Z).
fn sim_now() -> allot_runtime::SimTime {
    let epoch = chrono::DateTime::parse_from_rfc3339("2026-01-01T00:00:00Z")
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or_default();
    let millis = (chrono::Utc::now() - epoch).num_milliseconds();
    allot_runtime::SimTime(u64::try_from(millis).unwrap_or(0))
}

/// How long the controllers hold the store at a time: then their writes are persisted and
/// announced, and the lock is let go so that requests waiting for it are served.
const CONTROLLER_SLICE: Duration = Duration::from_millis(20);

/// Runs the controllers on the real clock, on a thread that owns them (they are not `Send`).
/// Every tick the shared store is lent to the runtime under the lock, what is due runs for at
/// most [`CONTROLLER_SLICE`] (whole reconciles; one scheduling attempt is bounded by the
/// allocator's step budget), and the controllers' writes are persisted and announced like API
/// writes. While work is left, the next slice follows at once, after the lock was let go: a
/// long backlog (or a pod whose claims cannot fit) never keeps the API from the store.
/// With shared storage the tick first applies other servers' changes, and the controllers run
/// only on the elected leader; they start over (from the store as it is) when they become
/// leader or when shared storage refused their writes.
fn run_controllers(shared: Arc<Shared>) {
    let mut runtime: Option<allot_runtime::Runtime> = None;
    let mut more = false;
    loop {
        // With work left, only long enough for requests waiting for the lock to take it.
        std::thread::sleep(if more {
            Duration::from_millis(1)
        } else {
            Duration::from_millis(100)
        });
        more = false;
        let rv = {
            let mut inner = shared.lock();
            if inner.failed.is_some() {
                continue;
            }
            let inner = &mut *inner;
            let epoch = inner.backend.epoch();
            match inner.backend.sync(&mut inner.store) {
                Ok(_) => inner.persisted = inner.store.resource_version(),
                Err(err) => {
                    tracing::warn!("storage: {err}");
                    if err.is_fatal() {
                        inner.failed = Some(err.to_string());
                        continue;
                    }
                }
            }
            if inner.backend.epoch() != epoch {
                // The store was rebuilt: the controllers start over from it.
                runtime = None;
            }
            if inner.backend.is_leader() {
                let runtime = runtime.get_or_insert_with(|| {
                    allot_runtime::Runtime::new(
                        Store::new(),
                        controllers(&shared.options),
                        sim_now(),
                    )
                });
                runtime.store = std::mem::take(&mut inner.store);
                let (started, now) = (std::time::Instant::now(), sim_now());
                loop {
                    more = runtime.advance_some(now, 1);
                    if !more || started.elapsed() >= CONTROLLER_SLICE {
                        break;
                    }
                }
                inner.store = std::mem::take(&mut runtime.store);
            }
            match persist(inner, false) {
                Ok(committed) if !committed.rebased => {}
                Ok(_) => runtime = None,
                Err(err) => {
                    tracing::warn!("controllers: {err}");
                    runtime = None;
                }
            }
            if !inner.backend.is_leader() {
                runtime = None;
            }
            inner.persisted
        };
        shared.changed.send_if_modified(|current| {
            let modified = *current != rv;
            *current = rv;
            modified
        });
    }
}

pub(crate) fn now_rfc3339() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Commits the store's new changes to the backend (see [`Backend::commit`] for `rebase`);
/// after a fatal failure every write is refused.
fn persist(inner: &mut Inner, rebase: bool) -> Result<storage::Committed, Error> {
    let result = inner.backend.commit(&mut inner.store, rebase);
    match &result {
        Err(err) if err.is_fatal() => inner.failed = Some(err.to_string()),
        _ => inner.persisted = inner.store.resource_version(),
    }
    result
}

/// A storage error as the response to the write it failed.
fn storage_error(err: Error) -> ApiError {
    match err {
        Error::Conflict {
            key,
            not_found,
            exists,
            message,
        } => {
            let info = crate::resources::info_of(key.kind);
            match info {
                Some(info) if not_found => ApiError::not_found(info, &key.name),
                Some(info) if exists => store_error(info, StoreError::AlreadyExists { key }),
                Some(info) => store_error(
                    info,
                    StoreError::Conflict {
                        key,
                        have: String::new(),
                        stored: message,
                    },
                ),
                None => ApiError::new(StatusCode::CONFLICT, "Conflict", message),
            }
        }
        other => ApiError::internal(other.to_string()),
    }
}

/// An API error rendered as a `Status`.
#[derive(Debug)]
pub(crate) struct ApiError {
    code: StatusCode,
    reason: &'static str,
    message: String,
    details: Value,
}

impl ApiError {
    pub(crate) fn new(code: StatusCode, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: Value::Null,
        }
    }
    pub(crate) fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "BadRequest", message)
    }
    fn not_found_named(resource: &str, name: &str) -> Self {
        Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{resource} \"{name}\" not found"),
        )
    }
    fn not_found(info: &ResourceInfo, name: &str) -> Self {
        let mut e = Self::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            format!("{} \"{name}\" not found", qualified(info)),
        );
        e.details = json!({"name": name, "group": info.group, "kind": info.plural});
        e
    }
    pub(crate) fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "InternalError", message)
    }
    /// The same error with `details`.
    pub(crate) fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    fn status(&self) -> Value {
        let mut status = json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": self.message, "reason": self.reason, "code": self.code.as_u16(),
        });
        if !self.details.is_null() {
            status["details"] = self.details.clone();
        }
        status
    }
}

impl From<crate::query::QueryError> for ApiError {
    fn from(err: crate::query::QueryError) -> Self {
        ApiError {
            code: StatusCode::from_u16(err.code).unwrap_or(StatusCode::BAD_REQUEST),
            reason: err.reason,
            message: err.message,
            details: err.details,
        }
    }
}

/// The checked read parameters of a request (see [`crate::query`]).
fn read_query(
    verb: crate::query::Verb,
    target: &Target,
    query: &[(String, String)],
) -> Result<crate::query::ReadQuery, ApiError> {
    crate::query::check(verb, target.info.kind, |key| {
        query
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    })
    .map_err(ApiError::from)
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        json_response(self.code, &self.status())
    }
}

/// `plural.group` as upstream names a resource in messages.
/// The admission checks of `kinds_admission`, as upstream's admission plugins answer: 403.
fn admit_kinds(info: &ResourceInfo, store: &Store, object: &Stored) -> Result<(), ApiError> {
    match crate::kinds_admission::forbidden(store, object) {
        None => Ok(()),
        Some(reason) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "Forbidden",
            format!(
                "{} \"{}\" is forbidden: {reason}",
                qualified(info),
                object.meta().name
            ),
        )),
    }
}

fn qualified(info: &ResourceInfo) -> String {
    if info.group.is_empty() {
        info.plural.to_string()
    } else {
        format!("{}.{}", info.plural, info.group)
    }
}

fn store_error(info: &ResourceInfo, err: StoreError) -> ApiError {
    match err {
        StoreError::AlreadyExists { key } => {
            let mut e = ApiError::new(
                StatusCode::CONFLICT,
                "AlreadyExists",
                format!("{} \"{}\" already exists", qualified(info), key.name),
            );
            e.details = json!({"name": key.name, "group": info.group, "kind": info.plural});
            e
        }
        StoreError::NotFound { key } => ApiError::not_found(info, &key.name),
        StoreError::Conflict { key, .. } => {
            let mut e = ApiError::new(
                StatusCode::CONFLICT,
                "Conflict",
                format!(
                    "Operation cannot be fulfilled on {} \"{}\": the object has been modified; please apply your changes to the latest version and try again",
                    qualified(info),
                    key.name
                ),
            );
            e.details = json!({"name": key.name, "group": info.group, "kind": info.plural});
            e
        }
        StoreError::NameRequired { .. } => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!(
                "{} \"\" is invalid: metadata.name: Required value: name or generateName is required",
                info.kind.name()
            ),
        ),
    }
}

/// A store error of a pod write (a subresource's).
pub(crate) fn pod_store_error(name: &str, err: StoreError) -> ApiError {
    match resources::info_of(Kind::Pod) {
        Some(info) => store_error(info, err),
        None => ApiError::not_found_named("pods", name),
    }
}

/// An object as served at the requested version (one kind may be served at several; older
/// versions are converted from the stored one: `versions`).
pub(crate) fn render(info: &ResourceInfo, object: &Stored) -> Value {
    if info.group == "events.k8s.io" {
        return crate::events_v1::from_core(&object.to_json());
    }
    crate::versions::render(info, object)
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_default();
    (code, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}

/// What a URL addresses.
pub(crate) struct Target {
    pub(crate) info: &'static ResourceInfo,
    /// `?dryRun=All`: run the write on a copy of the store and persist nothing.
    pub(crate) dry_run: bool,
    pub(crate) namespace: String,
    pub(crate) name: Option<String>,
    status: bool,
    /// `binding` or `eviction` (of a pod): served by [`crate::subresources`].
    pub(crate) subresource: Option<&'static str>,
    /// The `scale` subresource (see `crate::scale`).
    scale: bool,
    /// A namespace's `finalize` subresource: an update that takes `spec.finalizers` from the
    /// body (a plain update keeps them), as kube-controller-manager's namespace controller
    /// uses it to say the namespace's content is gone.
    finalize: bool,
    /// Who asks (for admission checks that authorize parts of an object).
    requester: Option<crate::auth::Requester>,
    /// Field manager, `force`, field validation and the warnings collected on the way.
    options: crate::apply::WriteOptions,
}

/// How much of an oversized body is read (and dropped) before the 413 answer: a client still
/// sending when the connection closes gets a reset that can swallow the answer.
const DRAIN_BYTES: usize = 64 * 1024 * 1024;

/// The request body, or `Err` when it is larger than [`MAX_BODY_BYTES`] (or broken). An
/// oversized body is read to its end (up to [`DRAIN_BYTES`]) so that the client sees the 413.
async fn read_body(body: axum::body::Body) -> Result<axum::body::Bytes, ()> {
    use futures_util::StreamExt;
    let mut stream = body.into_data_stream();
    let mut bytes = Vec::new();
    let mut total = 0usize;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|_| ())?;
        total = total.saturating_add(chunk.len());
        if total > MAX_BODY_BYTES {
            bytes = Vec::new();
            if total > DRAIN_BYTES {
                break;
            }
            continue;
        }
        bytes.extend_from_slice(&chunk);
    }
    if total > MAX_BODY_BYTES {
        Err(())
    } else {
        Ok(bytes.into())
    }
}

/// Serves a request, logging it first when `--request-log` is on.
async fn handle(State(shared): State<Arc<Shared>>, request: Request) -> Response {
    if shared.request_log.is_none() {
        return serve(shared, request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = read_body(body).await else {
        return serve(shared, Request::from_parts(parts, Body::empty())).await;
    };
    let header = |name: header::HeaderName| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string()
    };
    let (method, path) = (parts.method.to_string(), parts.uri.path().to_string());
    let query = parts.uri.query().unwrap_or_default().to_string();
    let (content_type, accept, user_agent) = (
        header(header::CONTENT_TYPE),
        header(header::ACCEPT),
        header(header::USER_AGENT),
    );
    let response = serve(
        shared.clone(),
        Request::from_parts(parts, Body::from(bytes.clone())),
    )
    .await;
    if let Some(log) = &shared.request_log {
        let response_type = response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        log.write(&crate::request_log::Entry {
            method: &method,
            path: &path,
            query: &query,
            content_type: &content_type,
            accept: &accept,
            user_agent: &user_agent,
            body: &bytes,
            status: response.status().as_u16(),
            response_type,
        });
    }
    response
}

/// The single entry point: routing by hand keeps every error a `Status`.
async fn serve(shared: Arc<Shared>, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path().to_string();
    let query = parse_query(parts.uri.query().unwrap_or_default());
    match path.as_str() {
        "/livez" | "/healthz" => return (StatusCode::OK, "ok").into_response(),
        "/readyz" => return readyz(&shared, None, &query).await,
        _ => {
            if let Some(check) = path.strip_prefix("/readyz/") {
                return readyz(&shared, Some(check), &query).await;
            }
        }
    }
    let user = match shared.security.authenticate(
        parts
            .headers
            .get(header::AUTHORIZATION)
            .map(|v| v.as_bytes()),
    ) {
        Ok(user) => user,
        Err(_) => {
            return json_response(
                StatusCode::UNAUTHORIZED,
                &crate::auth::unauthorized_status(),
            );
        }
    };
    let user = match shared.security.impersonate(user, &parts.headers) {
        Ok(user) => Arc::new(user),
        Err((code, status)) => {
            let code = StatusCode::from_u16(code).unwrap_or(StatusCode::FORBIDDEN);
            return json_response(code, &status);
        }
    };
    let attributes =
        crate::auth::Attributes::of_request(user, parts.method.as_str(), &path, &query);
    refresh_rbac(&shared);
    if let Some(denied) = shared.security.check(&attributes) {
        return json_response(StatusCode::FORBIDDEN, &denied);
    }
    if parts.method == Method::GET && path == "/metrics" {
        let text = {
            let inner = shared.lock();
            crate::metrics::render(&inner.store, inner.backend.torn_bytes_dropped())
        };
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, crate::metrics::CONTENT_TYPE)],
            text,
        )
            .into_response();
    }
    if parts.method == Method::GET && crate::ui::is_ui(&path) {
        let config = shared.options.kubelet_config.clone().unwrap_or_default();
        let page = crate::ui::page(&shared.lock().store, &config);
        return (
            StatusCode::OK,
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            page,
        )
            .into_response();
    }
    if parts.method == Method::GET {
        let accept = parts
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        // Discovery and OpenAPI answer for the versions `--runtime-config` serves.
        let runtime = &shared.options.runtime_config;
        let served = |path: &str| runtime.filter_document(path, discovery_json(path));
        if let Some(response) = crate::discovery::respond(&path, accept, &served) {
            return response;
        }
        if path == "/openapi/v2" {
            return crate::openapi::v2_response(accept);
        }
        if let Some(value) = served(&path) {
            return json_response(StatusCode::OK, &value);
        }
    }
    let bytes = match read_body(body).await {
        Ok(bytes) => bytes,
        Err(()) => {
            return ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestEntityTooLarge",
                format!("the request body is larger than {MAX_BODY_BYTES} bytes"),
            )
            .into_response();
        }
    };
    let body_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let protobuf = body_type.starts_with(allot_protobuf::MEDIA_TYPE);
    let mut body = if protobuf && !bytes.is_empty() {
        match decode_protobuf(&bytes) {
            Ok(object) => RequestBody::decoded(object),
            Err(err) => return err.into_response(),
        }
    } else {
        RequestBody::text(bytes)
    };
    // Bodies of creates, updates and deletes in a media type the server does not decode (415);
    // a patch's type is checked with the patch.
    let decodes_body = matches!(parts.method, Method::POST | Method::PUT)
        || (parts.method == Method::DELETE && !body.is_empty());
    if decodes_body && let Err(err) = crate::query::check_body_type(body_type) {
        return ApiError::from(err).into_response();
    }
    if let Some(response) = review_request(&shared, &attributes, &parts, &mut body) {
        return response;
    }
    let Some(mut target) = route(&path).filter(|t| shared.options.runtime_config.serves(t.info))
    else {
        return ApiError::new(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        )
        .into_response();
    };
    target.requester = Some(crate::auth::Requester {
        security: shared.security.clone(),
        attributes,
    });
    match query_get(&query, "dryRun") {
        "" => {}
        "All" => target.dry_run = true,
        other => {
            return ApiError::bad_request(format!("unsupported dryRun value {other:?}: only All"))
                .into_response();
        }
    }
    let user_agent = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    match crate::apply::WriteOptions::parse(|k| query_get(&query, k), user_agent) {
        Ok(options) => target.options = options,
        Err(message) => return ApiError::bad_request(message).into_response(),
    }
    let content_type = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json")
        .to_string();
    if matches!(parts.method, Method::POST | Method::PUT | Method::PATCH)
        && !content_type.starts_with("application/json-patch")
    {
        // Upstream reads YAML bodies and server-side apply bodies with its YAML reader.
        let yaml_body = content_type.starts_with("application/yaml")
            || content_type.starts_with("application/apply-patch");
        // (A protobuf body has no text, and no key twice.)
        target.options.duplicates = crate::decode::duplicates(&body.text, yaml_body);
        target.options.whole_object = parts.method != Method::PATCH;
    }
    let accept = parts
        .headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string();
    let watching =
        parts.method == Method::GET && target.name.is_none() && is_true(query_get(&query, "watch"));
    let media = match crate::media::negotiate(
        &accept,
        allot_protobuf::supports(&target.info.group_version(), target.info.kind.name()),
        watching,
    ) {
        Ok(media) => media,
        Err(response) => return *response,
    };
    // A watch cannot change its format midway: when objects of the kind hold fields the
    // protobuf schema lacks, it is JSON (if the client takes JSON).
    let media = if watching
        && media.format == crate::media::Format::Protobuf
        && matches!(
            target.info.kind,
            Kind::ResourceClaim
                | Kind::ResourceClaimTemplate
                | Kind::ResourceSlice
                | Kind::DeviceTaintRule
        )
        && shared
            .lock()
            .store
            .list_kind(target.info.kind)
            .any(crate::media::wire_lacks_fields)
    {
        crate::media::negotiate(&accept, false, true).unwrap_or(media)
    } else {
        media
    };
    if let Some(subresource) = target.subresource {
        let result =
            crate::subresources::create(&shared, &target, subresource, &parts.method, &mut body);
        return respond(media, result, &target);
    }
    if parts.method == Method::GET && !watching {
        await_resource_version(&shared, &query).await;
    }
    let result = match (&parts.method, &target.name) {
        (&Method::GET, None) if watching => {
            return watch(shared, target, &query, media);
        }
        (&Method::GET, None) => match list(&shared, &target, &query, media) {
            Ok(Got::Encoded(body)) => return encoded(body, &target),
            Ok(Got::Value(value)) => Ok((StatusCode::OK, value)),
            Err(err) => Err(err),
        },
        (method, Some(_)) if target.finalize && method != Method::PUT => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("{method} is not supported on namespaces/finalize"),
        )),
        (method, Some(name)) if target.scale => {
            scale(&shared, &target, method, name, &mut body, &content_type)
        }
        (&Method::GET, Some(name)) => match get(&shared, &target, name, &query, media) {
            Ok(Got::Encoded(body)) => return encoded(body, &target),
            Ok(Got::Value(value)) => Ok((StatusCode::OK, value)),
            Err(err) => Err(err),
        },
        (&Method::POST, None) => create(&shared, &target, &mut body),
        (&Method::PUT, Some(name)) => update(&shared, &target, name, &mut body),
        (&Method::PATCH, Some(name)) => patch(&shared, &target, name, &body.text, &content_type),
        (&Method::DELETE, Some(name)) => delete_options(&mut body)
            .and_then(|options| delete(&shared, &target, name, &options, &query)),
        (&Method::DELETE, None) => delete_collection(&shared, &target, &mut body, &query),
        _ => Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            format!("{} is not supported on this resource", parts.method),
        )),
    };
    respond(media, result, &target)
}

/// The response to a request: the object in the negotiated form (errors as JSON `Status`),
/// with the request's warnings.
fn respond(
    media: crate::media::Media,
    result: Result<(StatusCode, Value), ApiError>,
    target: &Target,
) -> Response {
    let response = match result {
        Ok((code, value)) => {
            let value = if media.shape == crate::media::Shape::Metadata {
                crate::media::metadata_only(&value)
            } else {
                value
            };
            let (content_type, body) = crate::media::body(media, &value);
            (code, [(header::CONTENT_TYPE, content_type)], body).into_response()
        }
        Err(err) => err.into_response(),
    };
    with_warnings(response, target)
}

/// A 200 whose protobuf body a GET encoded from the typed object(s) (`Got::Encoded`), with
/// the request's warnings.
fn encoded(body: Vec<u8>, target: &Target) -> Response {
    let response = (
        StatusCode::OK,
        [(header::CONTENT_TYPE, allot_protobuf::MEDIA_TYPE)],
        body,
    )
        .into_response();
    with_warnings(response, target)
}

/// A response with the request's warnings.
fn with_warnings(mut response: Response, target: &Target) -> Response {
    for warning in target.options.warning_headers() {
        if let Ok(value) = header::HeaderValue::from_str(&warning) {
            response.headers_mut().append(header::WARNING, value);
        }
    }
    response
}

/// The body of a GET of one object as serve writes it for `media` (`get` and `respond`, for
/// the `Object` and `Metadata` shapes): protobuf from the typed object where it can
/// ([`crate::media::typed_body`]), else rendered into a `Value` and written from it. Public
/// for the `serve_ops` example, which counts its instructions.
#[doc(hidden)]
pub fn object_body(
    media: crate::media::Media,
    info: &ResourceInfo,
    object: &Stored,
) -> (&'static str, Vec<u8>) {
    if let Some(body) = crate::media::typed_body(media, info, object) {
        return (allot_protobuf::MEDIA_TYPE, body);
    }
    let value = render(info, object);
    let value = if media.shape == crate::media::Shape::Metadata {
        crate::media::metadata_only(&value)
    } else {
        value
    };
    crate::media::body(media, &value)
}

/// A create's request body (at `path`, in `content_type`) as the typed object serve admits:
/// a JSON body parsed into a `Value`, a protobuf body decoded into one, then admitted
/// (`admit`: type meta, namespace, the typed decode). Public for the `serve_ops` example.
#[doc(hidden)]
pub fn request_object(path: &str, content_type: &str, bytes: &[u8]) -> Result<Stored, String> {
    let target = route(path).ok_or_else(|| format!("no resource at {path}"))?;
    let value = if content_type.starts_with(allot_protobuf::MEDIA_TYPE) {
        decode_protobuf(bytes)
    } else {
        parse_body(bytes)
    }
    .map_err(|e| e.message.clone())?;
    admit(&target, value, None).map_err(|e| e.message.clone())
}

/// A request body: the text sent (JSON or YAML), or the object a protobuf body decoded to.
pub(crate) struct RequestBody {
    /// The text sent; empty for a protobuf body.
    pub(crate) text: axum::body::Bytes,
    /// The object of a protobuf body, until a handler takes it.
    decoded: Option<Value>,
}

impl RequestBody {
    fn text(text: axum::body::Bytes) -> Self {
        RequestBody {
            text,
            decoded: None,
        }
    }

    fn decoded(object: Value) -> Self {
        RequestBody {
            text: axum::body::Bytes::new(),
            decoded: Some(object),
        }
    }

    /// Whether nothing was sent.
    pub(crate) fn is_empty(&self) -> bool {
        self.decoded.is_none() && self.text.is_empty()
    }

    /// Whether nothing but whitespace was sent.
    pub(crate) fn is_blank(&self) -> bool {
        self.decoded.is_none() && self.text.iter().all(u8::is_ascii_whitespace)
    }

    /// The body as one JSON object: the decoded protobuf object (taken: a request's body is
    /// read once), or the text parsed ([`parse_body`]).
    pub(crate) fn object(&mut self) -> Result<Value, ApiError> {
        match self.decoded.take() {
            Some(object) => Ok(object),
            None => parse_body(&self.text),
        }
    }
}

/// A protobuf request body as the JSON object the rest of the server reads, decoded straight
/// from the wire. A kind without a protobuf form is 415 as upstream answers for custom
/// resources; a body that does not decode is 400, naming the field.
fn decode_protobuf(bytes: &[u8]) -> Result<Value, ApiError> {
    let envelope = allot_protobuf::envelope(bytes)
        .map_err(|e| ApiError::bad_request(format!("the protobuf body does not decode: {e}")))?;
    if !allot_protobuf::supports(envelope.api_version, envelope.kind) {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (got {} for {} {})",
                allot_protobuf::MEDIA_TYPE,
                envelope.api_version,
                envelope.kind
            ),
        ));
    }
    allot_protobuf::decode_typed::<Value>(bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "{} in version \"{}\" cannot be handled as a {}: {e}",
            envelope.kind, envelope.api_version, envelope.kind
        ))
    })
}

/// How long the storage check of `/readyz` waits for etcd (kube-apiserver's
/// `--etcd-healthcheck-timeout`).
const STORAGE_CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// The storage check of `/readyz`: on etcd, etcd answers and this server's copy caught up with
/// it (named `etcd`, as kube-apiserver's); on the embedded log, no write to it has failed
/// (`storage`).
async fn storage_check(shared: &Shared) -> (&'static str, Result<(), String>) {
    let barrier = {
        let inner = shared.lock();
        if let Some(err) = &inner.failed {
            let name = if shared.options.etcd.is_some() {
                "etcd"
            } else {
                "storage"
            };
            return (name, Err(err.clone()));
        }
        inner.backend.read_barrier(None)
    };
    let Some(barrier) = barrier else {
        return ("storage", Ok(()));
    };
    let waited =
        tokio::time::timeout(STORAGE_CHECK_TIMEOUT, tokio::task::spawn_blocking(barrier)).await;
    let result = match waited {
        Err(_) => Err(format!(
            "etcd did not answer within {} s",
            STORAGE_CHECK_TIMEOUT.as_secs()
        )),
        Ok(Err(join)) => Err(join.to_string()),
        Ok(Ok(Err(storage::ReadError::Unavailable(message)))) => Err(message),
        Ok(Ok(Err(storage::ReadError::TooLarge { wanted, current }))) => Err(format!(
            "this server's copy is at revision {current}, etcd at {wanted}"
        )),
        Ok(Ok(Ok(()))) => Ok(()),
    };
    ("etcd", result)
}

/// `/readyz` as kube-apiserver answers it: every check as `[+]name ok` or `[-]name failed:
/// reason withheld` (the reason goes to the log), 500 and "readyz check failed" when one
/// failed, else "ok" (the list and "readyz check passed" with `?verbose`); `?exclude=name`
/// skips a check. `/readyz/NAME` runs one check: "ok", or 500 with the reason.
async fn readyz(shared: &Shared, only: Option<&str>, query: &[(String, String)]) -> Response {
    let text = |code: StatusCode, body: String| {
        (
            code,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    };
    let (storage_name, storage) = storage_check(shared).await;
    let checks: [(&str, Result<(), String>); 4] = [
        ("ping", Ok(())),
        ("log", Ok(())),
        (storage_name, storage),
        ("shutdown", Ok(())),
    ];
    if let Some(name) = only {
        return match checks.iter().find(|(n, _)| *n == name) {
            Some((_, Ok(()))) => text(StatusCode::OK, "ok".into()),
            Some((_, Err(reason))) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {reason}\n"),
            ),
            None => text(StatusCode::NOT_FOUND, "404 page not found\n".into()),
        };
    }
    let excluded: Vec<&str> = query
        .iter()
        .filter(|(k, _)| k == "exclude")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut lines = String::new();
    let mut failed = false;
    for (name, result) in &checks {
        if excluded.contains(name) {
            lines.push_str(&format!("[+]{name} excluded: ok\n"));
            continue;
        }
        match result {
            Ok(()) => lines.push_str(&format!("[+]{name} ok\n")),
            Err(reason) => {
                tracing::warn!("readyz: [-]{name} failed: {reason}");
                lines.push_str(&format!("[-]{name} failed: reason withheld\n"));
                failed = true;
            }
        }
    }
    if failed {
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}readyz check failed\n"),
        );
    }
    if query.iter().any(|(k, _)| k == "verbose") {
        text(StatusCode::OK, format!("{lines}readyz check passed\n"))
    } else {
        text(StatusCode::OK, "ok".into())
    }
}

/// Serves the access reviews (`authorization.k8s.io`), which are not stored.
fn review_request(
    shared: &Shared,
    attributes: &crate::auth::Attributes,
    parts: &axum::http::request::Parts,
    body: &mut RequestBody,
) -> Option<Response> {
    let review_group = [crate::auth::REVIEW_GROUP, crate::auth::AUTHENTICATION_GROUP]
        .contains(&attributes.api_group.as_str());
    if !attributes.resource_request || !review_group {
        return None;
    }
    if attributes.api_version != "v1" {
        return Some(
            ApiError::new(
                StatusCode::NOT_FOUND,
                "NotFound",
                "the server could not find the requested resource",
            )
            .into_response(),
        );
    }
    let body = if body.is_empty() || parts.method == Method::PATCH {
        None
    } else {
        match body.object() {
            Ok(value) => Some(value),
            Err(err) => return Some(err.into_response()),
        }
    };
    let (code, value) = shared
        .security
        .review(attributes, body)
        .unwrap_or_else(|failure| failure);
    Some(json_response(
        StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &value,
    ))
}

/// Brings the authorizer's RBAC cache up to the store when the store moved on since it was
/// last checked (RBAC objects written here, or by another server and mirrored).
fn refresh_rbac(shared: &Shared) {
    let rv = *shared.changed.borrow();
    let current = shared
        .security
        .rbac
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .checked_at(rv);
    if !current {
        let inner = shared.lock();
        shared
            .security
            .rbac
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .refresh(&inner.store, rv);
    }
}

/// RBAC admission of an API write (see [`crate::rbac::admit`]).
fn admit_rbac(
    target: &Target,
    store: &Store,
    old: Option<&Stored>,
    new: &Stored,
) -> Result<(), ApiError> {
    let Some(requester) = &target.requester else {
        return Ok(());
    };
    crate::rbac::admit(&requester.attributes, &requester.security, store, old, new).map_err(
        |refusal| match refusal {
            crate::rbac::Refusal::Invalid(errors) => {
                invalid(target.info, &new.meta().name, &errors)
            }
            crate::rbac::Refusal::Forbidden(message) => {
                let mut err = ApiError::new(StatusCode::FORBIDDEN, "Forbidden", message);
                err.details = json!({"name": new.meta().name, "group": target.info.group, "kind": target.info.plural});
                err
            }
        },
    )
}

/// The legacy discovery and OpenAPI documents, by path.
fn discovery_json(path: &str) -> Option<Value> {
    let value = match path {
        "/version" => {
            json!({"major": "1", "minor": "37", "gitVersion": "v1.37.0-allot", "gitCommit": "", "gitTreeState": "clean", "buildDate": "", "goVersion": "", "compiler": "rust", "platform": "linux/amd64"})
        }
        "/api" => {
            json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}]})
        }
        "/apis" => {
            let mut list = resources::api_group_list();
            if let Some(groups) = list.get_mut("groups").and_then(Value::as_array_mut) {
                groups.push(crate::auth::review_api_group());
                groups.push(crate::auth::authentication_api_group());
            }
            list
        }
        "/apis/authorization.k8s.io/v1" => crate::auth::review_resource_list(),
        "/apis/authentication.k8s.io/v1" => crate::auth::authentication_resource_list(),
        "/openapi/v3" => crate::openapi::v3_root(),
        "/openapi/v2" => crate::openapi::v2(),
        _ => {
            if let Some(rest) = path.strip_prefix("/openapi/v3/") {
                let (group, version) = split_gv_path(rest)?;
                crate::openapi::v3_group(group, version)?
            } else if let Some(rest) = path.strip_prefix('/') {
                let (group, version) = split_gv_path(rest)?;
                resources::api_resource_list(group, version)?
            } else {
                return None;
            }
        }
    };
    Some(value)
}

/// `api/v1` or `apis/g/v`, exactly.
fn split_gv_path(path: &str) -> Option<(&str, &str)> {
    let segments: Vec<&str> = path.split('/').collect();
    match segments.as_slice() {
        ["api", version] => Some(("", version)),
        ["apis", group, version] => Some((group, version)),
        _ => None,
    }
}

fn route(path: &str) -> Option<Target> {
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (group, version, rest) = match segments.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return None,
    };
    let namespaced_rest = match rest {
        ["namespaces", namespace, plural, tail @ ..]
            if resources::lookup(group, version, plural).is_some_and(|r| r.kind.namespaced()) =>
        {
            Some((namespace.to_string(), *plural, tail))
        }
        _ => None,
    };
    let (namespace, plural, tail) = match namespaced_rest {
        Some(found) => found,
        None => match rest {
            [plural, tail @ ..] => (String::new(), *plural, tail),
            _ => return None,
        },
    };
    let info = resources::lookup(group, version, plural)?;
    let (name, status, subresource) = match tail {
        [] => (None, false, None),
        [name] => (Some(name.to_string()), false, None),
        [name, "status"] if info.status => (Some(name.to_string()), true, None),
        [name, "scale"] if crate::scale::has_scale(info.kind) => {
            (Some(name.to_string()), false, None)
        }
        [name, "binding"] if info.kind == Kind::Pod => {
            (Some(name.to_string()), false, Some("binding"))
        }
        [name, "eviction"] if info.kind == Kind::Pod => {
            (Some(name.to_string()), false, Some("eviction"))
        }
        [name, "finalize"] if info.kind == Kind::Namespace => (Some(name.to_string()), false, None),
        _ => return None,
    };
    Some(Target {
        info,
        dry_run: false,
        options: crate::apply::WriteOptions::default(),
        namespace,
        name,
        status,
        subresource,
        scale: matches!(tail, [_, "scale"]),
        finalize: matches!(tail, [_, "finalize"]),
        requester: None,
    })
}

fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3])
                    .ok()
                    .and_then(|h| u8::from_str_radix(h, 16).ok());
                match hex {
                    Some(b) => {
                        out.push(b);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_get<'a>(query: &'a [(String, String)], key: &str) -> &'a str {
    query
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map_or("", |(_, v)| v.as_str())
}

fn is_true(value: &str) -> bool {
    matches!(value, "true" | "1")
}

struct Filter {
    namespace: String,
    labels: Selector,
    fields: Selector,
}

impl Filter {
    fn new(target: &Target, query: &[(String, String)]) -> Result<Filter, ApiError> {
        let labels = Selector::parse_labels(query_get(query, "labelSelector"))
            .map_err(ApiError::bad_request)?;
        let fields = Selector::parse_fields(query_get(query, "fieldSelector"))
            .map_err(ApiError::bad_request)?;
        Ok(Filter {
            namespace: target.namespace.clone(),
            labels,
            fields,
        })
    }

    fn matches(&self, object: &Stored, json: &Value) -> bool {
        self.matches_meta(object)
            && (self.fields.requirements.is_empty() || self.fields.matches_fields(json))
    }

    /// The namespace and label selector (what needs no rendered object).
    fn matches_meta(&self, object: &Stored) -> bool {
        (self.namespace.is_empty() || object.meta().namespace == self.namespace)
            && self.labels.matches_labels(&object.meta().labels)
    }
}

fn list(
    shared: &Shared,
    target: &Target,
    query: &[(String, String)],
    media: crate::media::Media,
) -> Result<Got, ApiError> {
    let read = read_query(crate::query::Verb::List, target, query)?;
    let filter = Filter::new(target, query)?;
    consistent_read(shared, query)?;
    let inner = shared.lock();
    let past = past_list(&inner, target, query)?;
    let rv = past
        .as_ref()
        .map_or_else(|| inner.store.resource_version(), |(rv, _)| *rv)
        .to_string();
    let objects: Box<dyn Iterator<Item = &Stored>> = match &past {
        Some((_, objects)) => Box::new(objects.iter()),
        None => Box::new(inner.store.list_kind(target.info.kind)),
    };
    // A continue token (allot returns none: it lists in one page) starts at its key.
    let after = |o: &Stored| {
        read.continue_from.as_deref().is_none_or(|start| {
            let meta = o.meta();
            crate::query::relative_key(&target.namespace, &meta.namespace, &meta.name).as_str()
                >= start
        })
    };
    // Protobuf from the typed objects (when no field selector needs the rendered ones),
    // shared out of the store and encoded outside the lock.
    if media.format == crate::media::Format::Protobuf
        && media.shape == crate::media::Shape::Object
        && filter.fields.requirements.is_empty()
    {
        let objects: Vec<Stored> = objects
            .filter(|o| after(o) && filter.matches_meta(o))
            .cloned()
            .collect();
        drop(inner);
        if let Some(body) = crate::media::typed_list_body(media, target.info, &rv, &objects) {
            return Ok(Got::Encoded(body));
        }
        let items = objects.iter().map(|o| render(target.info, o)).collect();
        return Ok(Got::Value(list_value(target.info, &rv, items)));
    }
    let items: Vec<Value> = objects
        .filter(|o| after(o))
        .filter_map(|o| {
            let json = render(target.info, o);
            filter.matches(o, &json).then_some(json)
        })
        .collect();
    drop(inner);
    if media.shape == crate::media::Shape::Table {
        return Ok(Got::Value(resources::table(
            target.info.kind,
            &items,
            &rv,
            query_get(query, "includeObject") == "Object",
            true,
        )));
    }
    Ok(Got::Value(list_value(target.info, &rv, items)))
}

/// A list response's value: the rendered items at `rv`.
pub(crate) fn list_value(info: &ResourceInfo, rv: &str, items: Vec<Value>) -> Value {
    json!({"kind": format!("{}List", info.kind.name()), "apiVersion": info.group_version(), "metadata": {"resourceVersion": rv}, "items": items})
}

/// The revision a list must be read at, when it is not the newest: `resourceVersionMatch=Exact`,
/// or a `limit` with a resourceVersion other than "0" and no match (upstream's legacy exact
/// read, which it sends to etcd).
fn exact_revision(query: &[(String, String)]) -> Option<u64> {
    let rv = query_get(query, "resourceVersion");
    let exact = match query_get(query, "resourceVersionMatch") {
        "Exact" => true,
        "" => {
            rv != "0"
                && query_get(query, "continue").is_empty()
                && query_get(query, "limit")
                    .parse::<i64>()
                    .is_ok_and(|limit| limit > 0)
        }
        _ => false,
    };
    if exact { rv.parse().ok() } else { None }
}

/// A list at an older revision (see [`exact_revision`]), rebuilt from the store's event log as
/// etcd reads an older revision: `(revision, objects)`, or `None` to list the newest state.
/// As upstream, where such a list goes to etcd and a watch to the watch cache, the bound is
/// the history the storage keeps, not the watch window: a revision before it (compacted from
/// the log, or before an etcd mirror's rebuild) is 410 Expired with etcd's message.
fn past_list(
    inner: &Inner,
    target: &Target,
    query: &[(String, String)],
) -> Result<Option<(u64, Vec<Stored>)>, ApiError> {
    let Some(rv) = exact_revision(query) else {
        return Ok(None);
    };
    let current = inner.store.resource_version();
    if rv >= current {
        // consistent_read waited for it: the store is at rv.
        return Ok(None);
    }
    let expired = || {
        ApiError::new(
            StatusCode::GONE,
            "Expired",
            "The resourceVersion for the provided list is too old.",
        )
    };
    if rv < inner.backend.oldest_resource_version() {
        return Err(expired());
    }
    inner
        .store
        .list_kind_at(target.info.kind, rv)
        .map(|objects| Some((rv, objects)))
        .ok_or_else(expired)
}

/// A read without resourceVersion sees every write acknowledged before it, by any server
/// sharing the storage: kube-apiserver answers it with a quorum read of etcd; here the store
/// first takes in everything etcd committed up to the revision it has now. A resourceVersion
/// N (match NotOlderThan, the default, or Exact) is served once the store reached N (504 if it
/// does not in time); "0" is served by the store as it is, as kube-apiserver's watch cache does.
fn consistent_read(shared: &Shared, query: &[(String, String)]) -> Result<(), ApiError> {
    let at_least = match query_get(query, "resourceVersion") {
        "" => None,
        _ => match read_at_least(query) {
            Some(rv) if rv > 0 => Some(rv),
            _ => return Ok(()),
        },
    };
    let (barrier, current) = {
        let inner = shared.lock();
        let current = inner.store.resource_version();
        if at_least.is_some_and(|rv| rv <= current) {
            return Ok(());
        }
        (inner.backend.read_barrier(at_least), current)
    };
    let Some(barrier) = barrier else {
        // The store is all there is, and the resourceVersion did not come in the wait
        // (`await_resource_version`).
        return match at_least {
            Some(rv) => Err(too_large_resource_version(rv, current)),
            None => Ok(()),
        };
    };
    barrier().map_err(|err| match err {
        storage::ReadError::TooLarge { wanted, current } => {
            too_large_resource_version(wanted, current)
        }
        storage::ReadError::Unavailable(message) => ApiError::internal(message),
    })?;
    let rv = {
        let mut inner = shared.lock();
        let inner = &mut *inner;
        if inner.failed.is_none() {
            inner
                .backend
                .sync(&mut inner.store)
                .map_err(|e| ApiError::internal(e.to_string()))?;
            inner.persisted = inner.store.resource_version();
        }
        inner.persisted
    };
    shared.changed.send_if_modified(|current| {
        let modified = *current != rv;
        *current = rv;
        modified
    });
    Ok(())
}

/// How long a watch, list or get at a resourceVersion the store has not reached waits for it
/// (kube-apiserver's watch cache: 3 s).
const FUTURE_RESOURCE_VERSION_WAIT: Duration = Duration::from_secs(3);

/// A list or get at a resourceVersion (match NotOlderThan or Exact) the embedded store has not
/// reached: waits for it as kube-apiserver's watch cache waits (a write under way may bring
/// it), up to [`FUTURE_RESOURCE_VERSION_WAIT`], before [`consistent_read`] answers 504. On etcd
/// the read barrier waits instead.
async fn await_resource_version(shared: &Shared, query: &[(String, String)]) {
    let Some(wanted) = read_at_least(query) else {
        return;
    };
    let mut changed = shared.changed.subscribe();
    wait_for_store(shared, &mut changed, |inner| {
        inner.store.resource_version() >= wanted
            || inner.backend.read_barrier(Some(wanted)).is_some()
    })
    .await;
}

/// The resourceVersion a read asks to see at least: a number, matched NotOlderThan (the
/// default) or Exact.
fn read_at_least(query: &[(String, String)]) -> Option<u64> {
    match query_get(query, "resourceVersionMatch") {
        "" | "NotOlderThan" | "Exact" => query_get(query, "resourceVersion").parse().ok(),
        _ => None,
    }
}

/// Waits until `reached` holds of the server's state, each change of the store seen through
/// `changed`, for at most [`FUTURE_RESOURCE_VERSION_WAIT`] (kube-apiserver's watch cache
/// waits so long for a resourceVersion it has not reached).
async fn wait_for_store(
    shared: &Shared,
    changed: &mut tokio::sync::watch::Receiver<u64>,
    reached: impl Fn(&Inner) -> bool,
) {
    let deadline = tokio::time::Instant::now() + FUTURE_RESOURCE_VERSION_WAIT;
    while !reached(&shared.lock()) {
        match tokio::time::timeout_at(deadline, changed.changed()).await {
            Ok(Ok(())) => {}
            Ok(Err(_)) | Err(_) => return,
        }
    }
}

/// Upstream's answer when the store has not reached a resourceVersion in time (504, retry in
/// a second).
fn too_large_resource_version(wanted: u64, current: u64) -> ApiError {
    let mut err = ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "Timeout",
        format!("Timeout: Too large resource version: {wanted}, current: {current}"),
    );
    err.details = json!({
        "causes": [{"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}],
        "retryAfterSeconds": 1,
    });
    err
}

fn key(target: &Target, name: &str) -> ObjectKey {
    let namespace = if target.info.kind.namespaced() {
        target.namespace.as_str()
    } else {
        ""
    };
    ObjectKey::new(target.info.kind, namespace, name)
}

/// What a GET (of one object or a list) answers.
enum Got {
    /// The object or list, rendered (the response body is written from it).
    Value(Value),
    /// The protobuf body, encoded from the typed object(s) (`media::typed_body`,
    /// `media::typed_list_body`).
    Encoded(Vec<u8>),
}

fn get(
    shared: &Shared,
    target: &Target,
    name: &str,
    query: &[(String, String)],
    media: crate::media::Media,
) -> Result<Got, ApiError> {
    read_query(crate::query::Verb::Get, target, query)?;
    consistent_read(shared, query)?;
    let inner = shared.lock();
    let stored = inner
        .store
        .get_stored(&key(target, name))
        .ok_or_else(|| ApiError::not_found(target.info, name))?;
    // Protobuf from the typed object, shared out of the store and encoded outside the lock.
    if media.format == crate::media::Format::Protobuf && media.shape == crate::media::Shape::Object
    {
        let stored = stored.clone();
        drop(inner);
        if let Some(body) = crate::media::typed_body(media, target.info, &stored) {
            return Ok(Got::Encoded(body));
        }
        return Ok(Got::Value(render(target.info, &stored)));
    }
    let object = render(target.info, stored);
    let rv = inner.store.resource_version().to_string();
    drop(inner);
    if media.shape == crate::media::Shape::Table {
        return Ok(Got::Value(resources::table(
            target.info.kind,
            &[object],
            &rv,
            query_get(query, "includeObject") == "Object",
            true,
        )));
    }
    Ok(Got::Value(object))
}

/// Parses a request body (JSON or YAML) into one JSON object.
pub(crate) fn parse_body(bytes: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| ApiError::bad_request("the request body is not UTF-8"))?;
    if let Ok(value) = serde_json::from_str::<Value>(text) {
        return match value {
            Value::Object(_) => Ok(value),
            _ => Err(ApiError::bad_request("the request body must be an object")),
        };
    }
    let mut documents = match allot_api::load::parse_str("request", text) {
        Ok(documents) => documents,
        Err(err) => {
            // A YAML body that repeats keys: the later value wins, and `fieldValidation`
            // decides about the repeats (see `admit`).
            if let Some((value @ Value::Object(_), found)) = crate::decode::yaml(text)
                && !found.is_empty()
            {
                return Ok(value);
            }
            return Err(ApiError::bad_request(err.to_string()));
        }
    };
    if documents.len() != 1 {
        return Err(ApiError::bad_request(
            "the request body must hold exactly one object",
        ));
    }
    Ok(documents.remove(0).value)
}

/// Decodes, defaults and validates an object for the target; the body's type and namespace
/// must agree with the URL. An update (`old`: the stored object) is also held to the update
/// rules of its kind, reported with the other errors as upstream's `ValidateUpdate` does.
fn admit(target: &Target, mut value: Value, old: Option<&Stored>) -> Result<Stored, ApiError> {
    let info = target.info;
    let Some(map) = value.as_object_mut() else {
        return Err(ApiError::bad_request("the request body must be an object"));
    };
    let api_version = map
        .entry("apiVersion")
        .or_insert_with(|| Value::String(info.group_version()))
        .clone();
    let kind = map
        .entry("kind")
        .or_insert_with(|| Value::String(info.kind.name().into()))
        .clone();
    if api_version.as_str() != Some(info.group_version().as_str())
        || kind.as_str() != Some(info.kind.name())
    {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({}) or kind {} is not {}",
            api_version.as_str().unwrap_or_default(),
            info.group_version(),
            kind.as_str().unwrap_or_default(),
            info.kind.name()
        )));
    }
    let metadata = map.entry("metadata").or_insert_with(|| json!({}));
    let Some(metadata) = metadata.as_object_mut() else {
        return Err(ApiError::bad_request("metadata must be an object"));
    };
    if info.kind.namespaced() {
        let body_namespace = metadata
            .get("namespace")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_namespace.is_empty() {
            metadata.insert("namespace".into(), Value::String(target.namespace.clone()));
        } else if !target.namespace.is_empty() && body_namespace != target.namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    } else {
        metadata.remove("namespace");
    }
    // Server-managed fields that clients may echo back but never set.
    metadata.remove("managedFields");
    metadata.remove("selfLink");
    // events.k8s.io/v1 Events are stored as the core/v1 Events they convert to.
    let events_v1 = info.group == "events.k8s.io";
    let (value, api_version) = if events_v1 {
        (crate::events_v1::to_core(&value), "v1".to_string())
    } else {
        (value, info.group_version())
    };
    let mut raw = RawDocument {
        file: "request".into(),
        line: 1,
        api_version,
        kind: info.kind.name().into(),
        value,
        source_map: SourceMap::default(),
    };
    // Unknown fields are dropped one by one to find them all; `fieldValidation` says whether
    // that refuses the request, warns or is silent.
    let mut unknown = Vec::new();
    let mut object = loop {
        match decode_object(&raw, &LoadOptions::default()) {
            Ok(object) => break object,
            Err(allot_api::load::LoadError::UnknownField { path, .. })
                if unknown.len() < 100 && crate::apply::remove_field(&mut raw.value, &path) =>
            {
                unknown.push(path);
            }
            Err(e) => {
                return Err(ApiError::bad_request(
                    e.to_string().trim_start_matches("request:1: ").to_string(),
                ));
            }
        }
    };
    let problems = strict_problems(&target.options, unknown);
    match target.options.validation {
        _ if problems.is_empty() => {}
        crate::apply::FieldValidation::Strict => {
            // As upstream's decoder words it.
            let duplicates = &target.options.duplicates;
            let mut texts = problems;
            if duplicates.syntax == crate::decode::Syntax::Yaml && !duplicates.is_empty() {
                // Upstream's YAML reader reports all its repeats as one error.
                texts.drain(..duplicates.found.len());
                texts.insert(0, duplicates.yaml_error());
            }
            return Err(ApiError::bad_request(format!(
                "{kind} in version \"{version}\" cannot be handled as a {kind}: strict decoding error: {}",
                texts.join(", "),
                kind = info.kind.name(),
                version = info.version,
            )));
        }
        crate::apply::FieldValidation::Warn => {
            problems.into_iter().for_each(|w| target.options.warn(w))
        }
        crate::apply::FieldValidation::Ignore => {}
    }
    allot_api::defaults::default_object(&mut object);
    if let allot_api::load::Object::Pod(pod) = &mut object {
        crate::pods::default(pod);
    }
    let mut errors = allot_validation::validate_object(&object, &allot_validation::DraCel);
    if let Some(old) = old {
        let subresource = if target.status {
            allot_validation::Subresource::Status
        } else {
            allot_validation::Subresource::Main
        };
        errors.extend(allot_validation::validate_object_update(
            &object,
            &old.to_object(),
            subresource,
        ));
    }
    if events_v1 && let allot_api::load::Object::Event(event) = &object {
        let old = match old {
            Some(Stored::Event(old)) => Some(&**old),
            _ => None,
        };
        errors.extend(crate::events_v1::validate(event, old));
    }
    if !errors.is_empty() {
        let name = raw.name().to_string();
        return Err(invalid(info, &name, &errors));
    }
    let stored = Stored::from_object(object)
        .ok_or_else(|| ApiError::internal("decoded object of an unserved kind"))?;
    let errors = crate::nodes::admit(&stored);
    if !errors.is_empty() {
        return Err(invalid(info, raw.name(), &errors));
    }
    Ok(stored)
}

/// The unknown fields (decoder paths) and the body's repeated keys, in the order upstream's
/// decoders report them: a YAML reader's repeats first, then the fields; a JSON body's in
/// document order, where a repeated unknown field of a whole object is only unknown.
fn strict_problems(options: &crate::apply::WriteOptions, unknown: Vec<String>) -> Vec<String> {
    let duplicates = &options.duplicates;
    let mut unknown: Vec<(usize, String)> = unknown
        .into_iter()
        .map(|path| (duplicates.position_of(&path), path))
        .collect();
    let unknown_text = |path: &str| format!("unknown field {}", Value::String(path.to_string()));
    if duplicates.syntax == crate::decode::Syntax::Yaml {
        return duplicates
            .warnings()
            .into_iter()
            .chain(unknown.iter().map(|(_, path)| unknown_text(path)))
            .collect();
    }
    let mut all: Vec<(usize, String)> = duplicates
        .found
        .iter()
        .filter(|d| {
            !options.whole_object
                || !unknown.iter().any(|(_, path)| {
                    d.path == *path
                        || d.path
                            .strip_prefix(path.as_str())
                            .is_some_and(|rest| rest.starts_with(['.', '[']))
                })
        })
        .map(|d| (d.position, duplicates.text(d)))
        .collect();
    if options.whole_object {
        all.extend(
            unknown
                .drain(..)
                .map(|(at, path)| (at, unknown_text(&path))),
        );
        all.sort_by_key(|(at, _)| *at);
    } else {
        // A patch's repeats are met decoding the patch, its unknown fields in the result.
        all.extend(
            unknown
                .drain(..)
                .map(|(_, path)| (usize::MAX, unknown_text(&path))),
        );
    }
    all.into_iter().map(|(_, text)| text).collect()
}

fn invalid(info: &ResourceInfo, name: &str, errors: &[allot_validation::FieldError]) -> ApiError {
    use allot_validation::ErrorType;
    let rendered: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let list = if rendered.len() == 1 {
        rendered[0].clone()
    } else {
        format!("[{}]", rendered.join(", "))
    };
    let causes: Vec<Value> = errors
        .iter()
        .map(|e| {
            let reason = match e.kind {
                ErrorType::NotFound => "FieldValueNotFound",
                ErrorType::Required => "FieldValueRequired",
                ErrorType::Duplicate => "FieldValueDuplicate",
                ErrorType::Invalid => "FieldValueInvalid",
                ErrorType::NotSupported => "FieldValueNotSupported",
                ErrorType::Forbidden => "FieldValueForbidden",
                ErrorType::TooLong => "FieldValueTooLong",
                ErrorType::TooMany => "FieldValueTooMany",
                ErrorType::Internal => "InternalError",
            };
            json!({"reason": reason, "message": e.message(), "field": e.path})
        })
        .collect();
    let mut err = ApiError::new(
        StatusCode::UNPROCESSABLE_ENTITY,
        "Invalid",
        format!("{} \"{name}\" is invalid: {list}", info.kind.name()),
    );
    err.details =
        json!({"name": name, "group": info.group, "kind": info.kind.name(), "causes": causes});
    err
}

/// Runs a write under the lock and persists it before answering.
/// A dry run changes a copy of the store instead.
pub(crate) fn write<T: Renumber>(
    shared: &Shared,
    dry_run: bool,
    change: impl FnOnce(&mut Store) -> Result<T, ApiError>,
) -> Result<T, ApiError> {
    let mut inner = shared.lock();
    if let Some(err) = &inner.failed {
        return Err(ApiError::internal(format!("storage failed earlier: {err}")));
    }
    if dry_run {
        let mut copy = inner.store.clone();
        drop(inner);
        return change(&mut copy);
    }
    let mut out = change(&mut inner.store)?;
    let committed = persist(&mut inner, true).map_err(storage_error);
    let rv = inner.persisted;
    drop(inner);
    // Even a refused write may have brought other servers' changes in.
    shared.changed.send_replace(rv);
    out.renumber(&committed?);
    Ok(out)
}

fn create(
    shared: &Shared,
    target: &Target,
    body: &mut RequestBody,
) -> Result<(StatusCode, Value), ApiError> {
    if target.status {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "create is not supported on status",
        ));
    }
    create_value(shared, target, body.object()?, None)
}

/// What the request may change, for field ownership.
fn scope(target: &Target) -> crate::apply::Scope {
    if target.status {
        crate::apply::Scope::Status
    } else if target.info.status {
        crate::apply::Scope::MainWithoutStatus
    } else {
        crate::apply::Scope::Main
    }
}

/// Sets `metadata.managedFields`: the entries given (server-side apply), or an `Update` by the
/// request's field manager from `old` to the admitted object.
fn manage_fields(
    target: &Target,
    old: Option<&Value>,
    requested: &Value,
    object: &mut Stored,
    entries: Option<Vec<crate::apply::Entry>>,
    now: &str,
) {
    use crate::apply::Requested;
    let entries = entries.unwrap_or_else(|| {
        let api_version = target.info.group_version();
        let writer = crate::apply::Writer {
            manager: &target.options.field_manager,
            api_version: &api_version,
            scope: scope(target),
            now,
        };
        let schema = crate::patch::KindSchema(target.info.kind);
        let new = render(target.info, object);
        match crate::apply::requested(requested, target.status) {
            Requested::Reset => Vec::new(),
            Requested::Entries(base) => {
                crate::apply::record_update_from(old, base, &new, &writer, &schema)
            }
            Requested::Stored => crate::apply::record_update(old, &new, &writer, &schema),
        }
    });
    object.meta_mut().managed_fields = crate::apply::entries_json(&entries);
}

/// Creates an object from a request body or an apply; `entries` are the apply's managed fields.
fn create_value(
    shared: &Shared,
    target: &Target,
    mut value: Value,
    entries: Option<Vec<crate::apply::Entry>>,
) -> Result<(StatusCode, Value), ApiError> {
    if let Some(metadata) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        for field in [
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
        ] {
            metadata.remove(field);
        }
    }
    if target.info.status
        && !matches!(target.info.kind, Kind::Namespace | Kind::Node)
        && let Some(map) = value.as_object_mut()
    {
        map.remove("status");
    }
    if target.info.kind == Kind::Namespace {
        crate::namespace::prepare_create(&mut value);
    }
    let requested = value
        .pointer("/metadata/managedFields")
        .cloned()
        .unwrap_or(Value::Null);
    let mut object = admit(target, value, None)?;
    let now = now_rfc3339();
    manage_fields(target, None, &requested, &mut object, entries, &now);
    if target.info.kind.namespaced() {
        let namespace = object.meta().namespace.clone();
        let (exists, terminating) = {
            let inner = shared.lock();
            let ns = ObjectKey::new(Kind::Namespace, "", namespace.as_str());
            (
                inner.store.get_stored(&ns).is_some(),
                crate::namespace::is_terminating(&inner.store, &namespace),
            )
        };
        if !exists {
            let ns_info = resources::info_of(Kind::Namespace)
                .ok_or_else(|| ApiError::internal("namespaces are not served"))?;
            return Err(ApiError::not_found(ns_info, &namespace));
        }
        if terminating {
            let mut err = ApiError::new(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!(
                    "{} \"{}\" is forbidden: unable to create new content in namespace {namespace} because it is being terminated",
                    qualified(target.info),
                    object.meta().name
                ),
            );
            err.details = json!({"name": object.meta().name, "group": target.info.group, "kind": target.info.plural, "causes": [{"reason": "NamespaceTerminating", "message": format!("namespace {namespace} is being terminated"), "field": "metadata.namespace"}]});
            return Err(err);
        }
    }
    let created = write(shared, target.dry_run, |store| {
        let mut object = object;
        if let Stored::Pod(pod) = &mut object {
            crate::pods::prepare_create(Arc::make_mut(pod), store).map_err(|reason| {
                ApiError::new(
                    StatusCode::FORBIDDEN,
                    "Forbidden",
                    format!("pods \"{}\" is forbidden: {reason}", pod.metadata.name),
                )
            })?;
        }
        let errors = crate::auth::admit_admin_access(store, &object);
        if !errors.is_empty() {
            return Err(invalid(target.info, &object.meta().name, &errors));
        }
        admit_kinds(target.info, store, &object)?;
        admit_rbac(target, store, None, &object)?;
        store
            .create_stored(object, &now)
            .map_err(|e| store_error(target.info, e))
    })?;
    let mut created = render(target.info, &created);
    // A dry run stores nothing, so the answer has no resourceVersion (as upstream).
    if target.dry_run
        && let Some(metadata) = created.get_mut("metadata").and_then(Value::as_object_mut)
    {
        metadata.remove("resourceVersion");
    }
    Ok((StatusCode::CREATED, created))
}

/// Replaces the object at `name` with `value`, keeping what the endpoint may not change: the
/// status for the main resource, everything but the status for `/status`.
fn replace(
    shared: &Shared,
    target: &Target,
    name: &str,
    value: Value,
) -> Result<(StatusCode, Value), ApiError> {
    replace_with(shared, target, name, move |_| Ok((value, None)))
}

/// Like [`replace`], with the new object made from the stored one under the lock (patches,
/// applies); `make` may also return the managed fields (server-side apply).
fn replace_with(
    shared: &Shared,
    target: &Target,
    name: &str,
    make: impl FnOnce(&Value) -> Result<(Value, Option<Vec<crate::apply::Entry>>), ApiError>,
) -> Result<(StatusCode, Value), ApiError> {
    let key = key(target, name);
    let info = target.info;
    let now = now_rfc3339();
    let result = write(shared, target.dry_run, |store| {
        let current = store
            .get_stored(&key)
            .map(|o| render(info, o))
            .ok_or_else(|| ApiError::not_found(info, name))?;
        let (mut value, entries) = make(&current)?;
        let requested = value
            .pointer("/metadata/managedFields")
            .cloned()
            .unwrap_or(Value::Null);
        let body_name = value
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if body_name != name {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        let have = value
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        let mut merged = if target.status {
            let mut merged = current.clone();
            merged["status"] = value.get("status").cloned().unwrap_or(Value::Null);
            if merged["status"].is_null()
                && let Some(map) = merged.as_object_mut()
            {
                map.remove("status");
            }
            merged["metadata"]["resourceVersion"] = Value::String(have);
            merged
        } else {
            if info.status {
                match current.get("status") {
                    Some(status) => value["status"] = status.clone(),
                    None => {
                        if let Some(map) = value.as_object_mut() {
                            map.remove("status");
                        }
                    }
                }
            }
            value.clone()
        };
        // Server-managed metadata comes from the stored object.
        for field in [
            "uid",
            "creationTimestamp",
            "generation",
            "deletionTimestamp",
        ] {
            match current["metadata"].get(field) {
                Some(v) => merged["metadata"][field] = v.clone(),
                None => {
                    if let Some(m) = merged["metadata"].as_object_mut() {
                        m.remove(field);
                    }
                }
            }
        }
        if info.kind == Kind::Namespace {
            if !target.status && !target.finalize {
                crate::namespace::keep_spec_finalizers(&current, &mut merged);
            }
            crate::namespace::label_name(&mut merged);
        }
        let mut object = admit(target, merged, store.get_stored(&key))?;
        // metadata.generation counts changes of everything but metadata and status, made
        // after defaulting (a patch that restates defaults changes nothing).
        let stored = store
            .get_stored(&key)
            .map(Stored::to_json)
            .unwrap_or_default();
        if !target.status
            && outside_metadata_and_status(&object.to_json())
                != outside_metadata_and_status(&stored)
            && let Some(generation) = object.meta().generation
        {
            object.meta_mut().generation = Some(generation + 1);
        }
        if target.status
            && info.kind == Kind::ResourceClaim
            && let Some(requester) = &target.requester
        {
            let old = store
                .get_stored(&key)
                .map(Stored::to_json)
                .unwrap_or_default();
            let labels = crate::auth::namespace_labels(store, &object.meta().namespace);
            let errors = crate::auth::admit_claim_status(
                requester,
                &old,
                &object.to_json(),
                labels.as_ref(),
            );
            if !errors.is_empty() {
                return Err(invalid(info, name, &errors));
            }
        }
        if !target.status {
            admit_kinds(info, store, &object)?;
            let errors = crate::auth::admit_admin_access_update(store, &current, &object);
            if !errors.is_empty() {
                return Err(invalid(info, name, &errors));
            }
            admit_rbac(target, store, store.get_stored(&key), &object)?;
        }
        let mut object = object;
        manage_fields(
            target,
            Some(&current),
            &requested,
            &mut object,
            entries,
            &now,
        );
        object.meta_mut().resource_version = value_rv(&value, target, &current);
        // A write that changes nothing is not made, as kube-apiserver's storage skips it: the
        // object keeps its resourceVersion, generation and managedFields (a patch or apply of
        // an unchanged manifest is a no-op). A stale resourceVersion still conflicts.
        let have = object.meta().resource_version.clone();
        let stored_rv = stored
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if (have.is_empty() || have == stored_rv)
            && unchanged(&object.to_json(), &stored)
            && let Some(existing) = store.get_stored(&key)
        {
            return Ok(existing.clone());
        }
        let mut updated =
            storage::update_stored(store, object).map_err(|e| store_error(info, e))?;
        // The last finalizer of an object being deleted is gone: it goes now.
        if crate::namespace::ready_to_delete(&updated) {
            return store.delete(&key).map_err(|e| store_error(info, e));
        }
        // A dry run answers with the stored resourceVersion, as nothing was written.
        if target.dry_run
            && let Some(rv) = current
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
        {
            updated.meta_mut().resource_version = rv.to_string();
        }
        Ok(updated)
    })?;
    Ok((StatusCode::OK, render(target.info, &result)))
}

/// An object without its metadata and status (and type): what `metadata.generation` counts
/// changes of.
fn outside_metadata_and_status(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        for field in ["metadata", "status", "apiVersion", "kind"] {
            map.remove(field);
        }
    }
    object
}

/// Whether an update leaves the stored object as it is: equal but for the resourceVersion and
/// the times of managedFields entries (which a write that changes nothing does not renew).
fn unchanged(new: &Value, stored: &Value) -> bool {
    let normal = |object: &Value| {
        let mut object = object.clone();
        if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.remove("resourceVersion");
            if let Some(entries) = meta.get_mut("managedFields").and_then(Value::as_array_mut) {
                for entry in entries.iter_mut().filter_map(Value::as_object_mut) {
                    entry.remove("time");
                }
            }
        }
        object
    };
    normal(new) == normal(stored)
}

fn value_rv(value: &Value, target: &Target, _current: &Value) -> String {
    let _ = target;
    value
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn update(
    shared: &Shared,
    target: &Target,
    name: &str,
    body: &mut RequestBody,
) -> Result<(StatusCode, Value), ApiError> {
    let value = body.object()?;
    replace(shared, target, name, value)
}

fn patch(
    shared: &Shared,
    target: &Target,
    name: &str,
    bytes: &[u8],
    content_type: &str,
) -> Result<(StatusCode, Value), ApiError> {
    use crate::patch::PatchType;
    let Some(patch_type) = PatchType::from_content_type(content_type) else {
        return Err(ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "UnsupportedMediaType",
            format!(
                "the body of the request was in an unknown format - accepted media types include: {}",
                crate::patch::ACCEPTED_PATCH_TYPES
            ),
        ));
    };
    if patch_type != PatchType::Apply && target.options.force {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: force: Forbidden: may not be specified for non-apply patch",
        ));
    }
    if patch_type == PatchType::Apply {
        return apply_patch(shared, target, name, bytes);
    }
    let schema = crate::patch::KindSchema(target.info.kind);
    // As upstream's patch handler: a patch without a resourceVersion precondition that loses a
    // race with another writer (a controller, another server on the same etcd) is applied
    // again to the object now stored, a few times, before the conflict is reported.
    let mut attempt = 0;
    loop {
        let precondition = std::cell::Cell::new(false);
        let result = replace_with(shared, target, name, |current| {
            let mut patched = crate::patch::patch_object(patch_type, current, bytes, &schema)
                .map_err(|e| patch_error(&e))?;
            // A resourceVersion the patch sets is a precondition; without one the patch
            // applies to whatever is stored.
            if patched.pointer("/metadata/resourceVersion").is_some() {
                precondition.set(true);
            } else if let Some(rv) = current.pointer("/metadata/resourceVersion")
                && let Some(metadata) = patched.get_mut("metadata").and_then(Value::as_object_mut)
            {
                metadata.insert("resourceVersion".into(), rv.clone());
            }
            Ok((patched, None))
        });
        attempt += 1;
        match result {
            Err(err) if err.code == StatusCode::CONFLICT && !precondition.get() && attempt < 8 => {
                // On etcd the other write reaches this server's mirror through the watch:
                // give it a moment before reading the object again.
                std::thread::sleep(std::time::Duration::from_millis(25 * attempt));
                continue;
            }
            other => return other,
        }
    }
}

/// The `scale` subresource: GET the Scale, or PUT or PATCH it to change the replicas.
fn scale(
    shared: &Shared,
    target: &Target,
    method: &Method,
    name: &str,
    body: &mut RequestBody,
    content_type: &str,
) -> Result<(StatusCode, Value), ApiError> {
    let kind = target.info.kind;
    let key = key(target, name);
    if *method == Method::GET {
        let inner = shared.lock();
        let object = inner
            .store
            .get_stored(&key)
            .map(|o| render(target.info, o))
            .ok_or_else(|| ApiError::not_found(target.info, name))?;
        return Ok((StatusCode::OK, crate::scale::to_scale(kind, &object)));
    }
    let patch_type = match *method {
        Method::PUT => None,
        Method::PATCH => match crate::patch::PatchType::from_content_type(content_type) {
            Some(crate::patch::PatchType::Apply) | None => {
                return Err(ApiError::new(
                    StatusCode::UNSUPPORTED_MEDIA_TYPE,
                    "UnsupportedMediaType",
                    format!(
                        "the body of the request was in an unknown format - accepted media types include: {}",
                        crate::patch::ACCEPTED_PATCH_TYPES
                    ),
                ));
            }
            Some(patch_type) => Some(patch_type),
        },
        _ => {
            return Err(ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "MethodNotAllowed",
                format!("{method} is not supported on this resource"),
            ));
        }
    };
    let invalid_scale = |message: String| {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            format!("Scale.autoscaling \"{name}\" is invalid: {message}"),
        )
    };
    let (code, object) = replace_with(shared, target, name, |current| {
        let scale = match patch_type {
            None => body.object()?,
            Some(patch_type) => {
                let current_scale = crate::scale::to_scale(kind, current);
                let schema = crate::patch::KindSchema(kind);
                crate::patch::patch_object(patch_type, &current_scale, &body.text, &schema)
                    .map_err(|e| patch_error(&e))?
            }
        };
        let object = crate::scale::from_scale(current, &scale).map_err(invalid_scale)?;
        Ok((object, None))
    })?;
    Ok((code, crate::scale::to_scale(kind, &object)))
}

fn patch_error(err: &crate::patch::PatchError) -> ApiError {
    if err.malformed {
        ApiError::bad_request(err.message.clone())
    } else {
        ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            err.message.clone(),
        )
    }
}

/// Server-side apply: `PATCH` with `application/apply-patch+yaml`.
fn apply_patch(
    shared: &Shared,
    target: &Target,
    name: &str,
    bytes: &[u8],
) -> Result<(StatusCode, Value), ApiError> {
    if !target.options.explicit_manager {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
        ));
    }
    let config = parse_body(bytes)?;
    let body_name = config
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    let api_version = target.info.group_version();
    let now = now_rfc3339();
    let writer = crate::apply::Writer {
        manager: &target.options.field_manager,
        api_version: &api_version,
        scope: scope(target),
        now: &now,
    };
    let schema = crate::patch::KindSchema(target.info.kind);
    let conflict = |c: crate::apply::Conflicts| {
        let mut err = ApiError::new(StatusCode::CONFLICT, "Conflict", c.message());
        err.details = json!({"causes": c.causes()});
        err
    };
    let exists = shared.lock().store.get_stored(&key(target, name)).is_some();
    if !exists && !target.status {
        let (merged, entries) =
            crate::apply::apply(None, &config, &writer, target.options.force, &schema)
                .map_err(conflict)?;
        return create_value(shared, target, merged, Some(entries));
    }
    replace_with(shared, target, name, |current| {
        let (mut merged, entries) = crate::apply::apply(
            Some(current),
            &config,
            &writer,
            target.options.force,
            &schema,
        )
        .map_err(conflict)?;
        // A resourceVersion in the configuration is a precondition.
        let rv = config
            .pointer("/metadata/resourceVersion")
            .or_else(|| current.pointer("/metadata/resourceVersion"))
            .cloned()
            .unwrap_or(Value::Null);
        merged["metadata"]["resourceVersion"] = rv;
        Ok((merged, Some(entries)))
    })
}

/// How a DELETE treats the object's dependents: `propagationPolicy` (body or query), else the
/// older `orphanDependents`, else the kind's default (Orphan for batch/v1 Jobs, for backward
/// compatibility as upstream; Background for the rest).
fn propagation(
    options: &Value,
    query: &[(String, String)],
    kind: Kind,
) -> Result<allot_controllers::garbagecollector::Propagation, ApiError> {
    use allot_controllers::garbagecollector::Propagation;
    let policy = options
        .get("propagationPolicy")
        .and_then(Value::as_str)
        .map(str::to_string)
        .or_else(|| {
            let q = query_get(query, "propagationPolicy");
            (!q.is_empty()).then(|| q.to_string())
        });
    if let Some(policy) = policy {
        return Propagation::parse(&policy).ok_or_else(|| {
            ApiError::bad_request(format!(
                "DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"{policy}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            ))
        });
    }
    let orphan = options
        .get("orphanDependents")
        .and_then(Value::as_bool)
        .or_else(|| match query_get(query, "orphanDependents") {
            "true" => Some(true),
            "false" => Some(false),
            _ => None,
        });
    Ok(match orphan {
        Some(true) => Propagation::Orphan,
        Some(false) => Propagation::Background,
        None if kind == Kind::Job => Propagation::Orphan,
        None => Propagation::Background,
    })
}

/// A DELETE's options: kubectl sends them as a DeleteOptions body (dryRun and preconditions
/// live there); none is `null`.
fn delete_options(body: &mut RequestBody) -> Result<Value, ApiError> {
    if body.is_blank() {
        Ok(Value::Null)
    } else {
        body.object()
    }
}

/// DELETE of a collection (`deletecollection`), as upstream's generic store does it: the
/// objects a list with the request's selectors returns, each deleted as its own DELETE with
/// the request's options would delete it (one already gone is passed over), answered with the
/// list as it was read. Namespaces have no such verb upstream (405), and a namespaced kind is
/// deleted by collection only within one namespace: the path without a namespace serves
/// reads only.
fn delete_collection(
    shared: &Shared,
    target: &Target,
    body: &mut RequestBody,
    query: &[(String, String)],
) -> Result<(StatusCode, Value), ApiError> {
    if !resources::deletes_collections(target.info.kind)
        || (target.info.kind.namespaced() && target.namespace.is_empty())
    {
        return Err(ApiError::new(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "the server does not allow this method on the requested resource",
        ));
    }
    let options = delete_options(body)?;
    let listed = match list(shared, target, query, crate::media::Media::JSON)? {
        Got::Value(listed) => listed,
        Got::Encoded(_) => return Err(ApiError::internal("a JSON list came back encoded")),
    };
    let items = listed
        .get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for item in items {
        let name = item
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        match delete(shared, target, name, &options, query) {
            Ok(_) => {}
            Err(err) if err.code == StatusCode::NOT_FOUND => {}
            Err(err) => return Err(err),
        }
    }
    Ok((StatusCode::OK, listed))
}

fn delete(
    shared: &Shared,
    target: &Target,
    name: &str,
    options: &Value,
    query: &[(String, String)],
) -> Result<(StatusCode, Value), ApiError> {
    let key = key(target, name);
    let info = target.info;
    let dry_run = target.dry_run
        || options
            .get("dryRun")
            .and_then(Value::as_array)
            .is_some_and(|d| d.iter().any(|v| v == "All"));
    use allot_controllers::garbagecollector::{
        FOREGROUND_FINALIZER, ORPHAN_FINALIZER, Propagation,
    };
    let propagation = propagation(options, query, key.kind)?;
    let deleted = write(shared, dry_run, |store| {
        let current = store
            .get_stored(&key)
            .ok_or_else(|| ApiError::not_found(info, name))?
            .clone();
        for (field, have, label) in [
            ("uid", current.meta().uid.as_str(), "UID"),
            (
                "resourceVersion",
                current.meta().resource_version.as_str(),
                "ResourceVersion",
            ),
        ] {
            if let Some(want) = options
                .pointer(&format!("/preconditions/{field}"))
                .and_then(Value::as_str)
                && want != have
            {
                let mut err = ApiError::new(
                    StatusCode::CONFLICT,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on {} \"{name}\": Precondition failed: {label} in precondition: {want}, {label} in object meta: {have}",
                        qualified(info)
                    ),
                );
                err.details = json!({"name": name, "group": info.group, "kind": info.plural});
                return Err(err);
            }
        }
        if current.kind() == Kind::Namespace && crate::namespace::is_protected(name) {
            let mut err = ApiError::new(
                StatusCode::FORBIDDEN,
                "Forbidden",
                format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted"),
            );
            err.details = json!({"name": name, "kind": "namespaces"});
            return Err(err);
        }
        if current.kind() == Kind::Namespace
            && let Some(marked) = crate::namespace::mark_terminating(&current, &now_rfc3339())
                .map_err(ApiError::internal)?
        {
            return storage::update_stored(store, marked).map_err(|e| store_error(info, e));
        }
        // Foreground and Orphan leave the object with the garbage collector's finalizer.
        let gc_finalizer = match propagation {
            Propagation::Foreground => Some(FOREGROUND_FINALIZER),
            Propagation::Orphan => Some(ORPHAN_FINALIZER),
            Propagation::Background => None,
        };
        delete_stored_as(store, current, &now_rfc3339(), gc_finalizer)
            .map_err(|e| store_error(info, e))
    })?;
    Ok((StatusCode::OK, render(target.info, &deleted)))
}

/// One watch event of a stored object, or `None` when the filter leaves the object out: a
/// protobuf frame written from the typed object when no field selector needs the rendered
/// value and [`crate::media::typed_body`] can encode it; else the rendered object, written by
/// `encode` (the watch's tables, metadata and JSON lines).
fn watch_line(
    info: &ResourceInfo,
    media: crate::media::Media,
    filter: &Filter,
    event_type: &str,
    object: &Stored,
    encode: impl FnOnce(&str, Value) -> Vec<u8>,
) -> Option<Vec<u8>> {
    if filter.fields.requirements.is_empty() {
        if !filter.matches_meta(object) {
            return None;
        }
        if let Some(bytes) = crate::media::typed_body(media, info, object) {
            let mut frame = Vec::with_capacity(bytes.len() + 32);
            allot_protobuf::watch_frame(&mut frame, event_type, &bytes);
            return Some(frame);
        }
    }
    let json = render(info, object);
    filter
        .matches(object, &json)
        .then(|| encode(event_type, json))
}

/// One watch event in the negotiated stream format: a JSON line, or a length-prefixed
/// protobuf frame. An object the wire format cannot carry (an alpha field upstream's protobuf
/// lacks) ends a protobuf watch with an ERROR event that says so, rather than losing the field.
pub(crate) fn watch_event(media: crate::media::Media, event_type: &str, object: &Value) -> Vec<u8> {
    if media.format == crate::media::Format::Protobuf {
        let api_version = object
            .get("apiVersion")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let kind = object
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let mut frame = Vec::new();
        match allot_protobuf::encode(api_version, kind, object) {
            Ok(bytes) => allot_protobuf::watch_frame(&mut frame, event_type, &bytes),
            Err(err) => {
                let status = ApiError::internal(format!(
                    "{api_version} {kind} cannot be sent as protobuf ({err}); watch with application/json"
                ))
                .status();
                let bytes = allot_protobuf::encode("v1", "Status", &status).unwrap_or_default();
                allot_protobuf::watch_frame(&mut frame, "ERROR", &bytes);
            }
        }
        return frame;
    }
    let mut line =
        serde_json::to_vec(&json!({"type": event_type, "object": object})).unwrap_or_default();
    line.push(b'\n');
    line
}

/// Deletes an object, or marks it deleted (deletionTimestamp) while it has finalizers.
pub(crate) fn delete_stored(
    store: &mut Store,
    current: Stored,
    now: &str,
) -> Result<Stored, StoreError> {
    delete_stored_as(store, current, now, None)
}

/// [`delete_stored`] with a propagation policy's garbage-collector finalizer
/// (`foregroundDeletion` or `orphan`), which leaves the object marked for the collector.
fn delete_stored_as(
    store: &mut Store,
    current: Stored,
    now: &str,
    gc_finalizer: Option<&str>,
) -> Result<Stored, StoreError> {
    if !current.meta().finalizers.is_empty() || gc_finalizer.is_some() {
        let mut marked = current;
        if let Some(finalizer) = gc_finalizer {
            let finalizers = &mut marked.meta_mut().finalizers;
            finalizers.retain(|f| {
                f != allot_controllers::garbagecollector::FOREGROUND_FINALIZER
                    && f != allot_controllers::garbagecollector::ORPHAN_FINALIZER
            });
            finalizers.push(finalizer.to_string());
        }
        if marked.meta().deletion_timestamp.is_none() {
            marked.meta_mut().deletion_timestamp = Some(now.to_string());
        }
        return storage::update_stored(store, marked);
    }
    let key = ObjectKey::new(
        current.kind(),
        current.meta().namespace.as_str(),
        current.meta().name.as_str(),
    );
    store.delete(&key)
}

fn watch(
    shared: Arc<Shared>,
    target: Target,
    query: &[(String, String)],
    media: crate::media::Media,
) -> Response {
    if let Err(err) = read_query(crate::query::Verb::Watch, &target, query) {
        return err.into_response();
    }
    let filter = match Filter::new(&target, query) {
        Ok(filter) => filter,
        Err(err) => return err.into_response(),
    };
    let table = media.shape == crate::media::Shape::Table;
    let bookmarks = is_true(query_get(query, "allowWatchBookmarks"));
    let initial = is_true(query_get(query, "sendInitialEvents"));
    let timeout = query_get(query, "timeoutSeconds")
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs);
    let requested = query_get(query, "resourceVersion").to_string();
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(64);
    let kind = target.info.kind;
    let info = target.info;
    let mut changed = shared.changed.subscribe();
    let encode = move |event_type: &str, object: Value, first: &mut bool| -> Vec<u8> {
        let object = if table && event_type != "BOOKMARK" && event_type != "ERROR" {
            let rv = object
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let t = resources::table(kind, &[object], &rv, false, *first);
            *first = false;
            t
        } else if media.shape == crate::media::Shape::Metadata && event_type != "ERROR" {
            crate::media::metadata_only(&object)
        } else {
            object
        };
        watch_event(media, event_type, &object)
    };
    tokio::spawn(async move {
        let mut first = true;
        let bookmark = |rv: u64| json!({"kind": kind.name(), "apiVersion": info.group_version(), "metadata": {"resourceVersion": rv.to_string()}});
        // A resourceVersion the store has not reached yet (another server's write on etcd, on
        // its way through the watch): wait for it a while, as kube-apiserver's watch cache does.
        if !initial && let Ok(wanted) = requested.parse::<u64>() {
            wait_for_store(&shared, &mut changed, |inner| {
                inner.store.resource_version() >= wanted
            })
            .await;
        }
        // Where the watch starts, and the synthetic ADDED events for "now".
        let mut lines = Vec::new();
        let (mut from, epoch) = {
            let inner = shared.lock();
            let epoch = inner.backend.epoch();
            let current = inner.store.resource_version();
            let from = if requested.is_empty() || requested == "0" || initial {
                for object in inner.store.list_kind(kind) {
                    lines.extend(watch_line(info, media, &filter, "ADDED", object, |t, v| {
                        encode(t, v, &mut first)
                    }));
                }
                if initial && bookmarks {
                    let mut b = bookmark(current);
                    b["metadata"]["annotations"] = json!({"k8s.io/initial-events-end": "true"});
                    lines.push(encode("BOOKMARK", b, &mut first));
                }
                current
            } else {
                match requested.parse::<u64>() {
                    Ok(rv)
                        if rv + shared.options.watch_window >= current
                            && rv >= inner.backend.oldest_resource_version()
                            && rv <= current =>
                    {
                        rv
                    }
                    Ok(rv) if rv > current => {
                        let status = too_large_resource_version(rv, current).status();
                        lines.push(encode("ERROR", status, &mut first));
                        u64::MAX
                    }
                    Ok(rv) => {
                        let status = ApiError::new(
                            StatusCode::GONE,
                            "Expired",
                            format!(
                                "too old resource version: {rv} ({})",
                                current.saturating_sub(shared.options.watch_window)
                            ),
                        )
                        .status();
                        lines.push(encode("ERROR", status, &mut first));
                        u64::MAX
                    }
                    Err(_) => {
                        let status =
                            ApiError::bad_request(format!("invalid resourceVersion {requested:?}"))
                                .status();
                        lines.push(encode("ERROR", status, &mut first));
                        u64::MAX
                    }
                }
            };
            (from, epoch)
        };
        for line in lines {
            if tx.send(Ok(line)).await.is_err() {
                return;
            }
        }
        if from == u64::MAX {
            return;
        }
        let deadline = timeout.map(|t| tokio::time::Instant::now() + t);
        let interval = shared.options.bookmark_interval;
        // One timer across wake-ups: frequent changes (a Lease renewal moves etcd's revision)
        // must not postpone bookmarks forever.
        let mut next_bookmark = tokio::time::Instant::now() + interval;
        loop {
            let lines: Vec<Vec<u8>> = {
                let inner = shared.lock();
                if inner.backend.epoch() != epoch {
                    // The store was rebuilt from a new list: the client watches again from
                    // its last resourceVersion (410 Gone if that is older than the list).
                    return;
                }
                let events = inner.store.events_since(from);
                let persisted = inner.persisted;
                let mut lines = Vec::new();
                for event in events
                    .iter()
                    .filter(|e| e.resource_version <= persisted && e.key.kind == kind)
                {
                    lines.extend(watch_line(
                        info,
                        media,
                        &filter,
                        storage::event_type_name(event.event_type),
                        &event.object,
                        |t, v| encode(t, v, &mut first),
                    ));
                }
                from = from.max(persisted);
                lines
            };
            for line in lines {
                if tx.send(Ok(line)).await.is_err() {
                    return;
                }
            }
            let sleep = tokio::time::sleep_until(next_bookmark);
            let until_deadline = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                changed_result = changed.changed() => {
                    if changed_result.is_err() {
                        return;
                    }
                }
                () = sleep => {
                    next_bookmark = tokio::time::Instant::now() + interval;
                    if bookmarks && tx.send(Ok(encode("BOOKMARK", bookmark(from), &mut first))).await.is_err() {
                        return;
                    }
                }
                () = until_deadline => return,
                () = tx.closed() => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    });
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            crate::media::content_type(media.format, true),
        )
        .body(Body::from_stream(stream))
        .unwrap_or_else(|_| ApiError::internal("cannot build the watch response").into_response())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes_follow_kubernetes_paths() {
        let cases = [
            (
                "/api/v1/namespaces",
                Some((Kind::Namespace, "", None, false)),
            ),
            (
                "/api/v1/namespaces/ns1",
                Some((Kind::Namespace, "", Some("ns1"), false)),
            ),
            (
                "/api/v1/namespaces/ns1/status",
                Some((Kind::Namespace, "", Some("ns1"), true)),
            ),
            (
                "/api/v1/namespaces/ns1/pods",
                Some((Kind::Pod, "ns1", None, false)),
            ),
            (
                "/api/v1/namespaces/ns1/pods/p/status",
                Some((Kind::Pod, "ns1", Some("p"), true)),
            ),
            ("/api/v1/pods", Some((Kind::Pod, "", None, false))),
            (
                "/apis/resource.k8s.io/v1/deviceclasses/gpu",
                Some((Kind::DeviceClass, "", Some("gpu"), false)),
            ),
            ("/apis/resource.k8s.io/v1/deviceclasses/gpu/status", None),
            (
                "/apis/resource.k8s.io/v1/namespaces/a/resourceclaims/c",
                Some((Kind::ResourceClaim, "a", Some("c"), false)),
            ),
            ("/apis/nope/v1/things", None),
            ("/api/v1/pods/a/b/c", None),
        ];
        let mut failures = Vec::new();
        for (path, want) in cases {
            let got =
                route(path).map(|t| (t.info.kind, t.namespace.clone(), t.name.clone(), t.status));
            let want = want.map(|(k, ns, n, s): (Kind, &str, Option<&str>, bool)| {
                (k, ns.to_string(), n.map(str::to_string), s)
            });
            if got != want {
                failures.push(format!("{path}: got {got:?}, want {want:?}"));
            }
        }
        assert!(failures.is_empty(), "{failures:#?}");
    }

    #[test]
    fn pods_with_negative_requests_are_refused_as_upstream_words_it() {
        let target = route("/api/v1/namespaces/team/pods").expect("a route");
        let body = b"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: main\n    resources: {requests: {cpu: \"-1\"}}\n";
        let value = parse_body(body).expect("a body");
        let err = admit(&target, value, None).expect_err("refused");
        assert_eq!(err.code, StatusCode::UNPROCESSABLE_ENTITY);
        assert!(
            err.message.contains("spec.containers[0].resources.requests[cpu]: Invalid value: \"-1\": must be greater than or equal to 0"),
            "{}",
            err.message
        );
    }

    #[test]
    fn alias_bombs_in_bodies_are_refused_in_words() {
        let mut bomb = String::from(
            "apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\na0: &a0 [\"lol\"]\n",
        );
        for level in 1..=9 {
            let refs = vec![format!("*a{}", level - 1); 9].join(", ");
            bomb.push_str(&format!("a{level}: &a{level} [{refs}]\n"));
        }
        let err = parse_body(bomb.as_bytes()).expect_err("refused");
        assert_eq!(err.code, StatusCode::BAD_REQUEST);
        assert!(
            err.message.contains("excessive aliasing"),
            "{}",
            err.message
        );
    }

    /// A protobuf body is decoded straight into the object serve admits: the same object as
    /// its JSON form, taken once.
    #[test]
    fn protobuf_bodies_are_admitted_as_their_json_is() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "team", "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "main", "image": "nginx",
                "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}],
                "tolerations": [{"key": "k", "operator": "Exists"}]}});
        let path = "/api/v1/namespaces/team/pods";
        let json = serde_json::to_vec(&pod).expect("json");
        let protobuf = allot_protobuf::encode("v1", "Pod", &pod).expect("protobuf");
        let from_json = request_object(path, "application/json", &json).expect("admitted");
        let from_protobuf =
            request_object(path, allot_protobuf::MEDIA_TYPE, &protobuf).expect("admitted");
        assert_eq!(from_protobuf.to_json(), from_json.to_json());

        let mut body = RequestBody::decoded(json!({"kind": "Binding"}));
        assert!(!body.is_empty() && !body.is_blank());
        assert_eq!(
            body.object().expect("the object"),
            json!({"kind": "Binding"})
        );
        let mut blank = RequestBody::text(axum::body::Bytes::from_static(b" \n"));
        assert!(blank.is_blank() && !blank.is_empty());
        assert!(blank.object().is_err());
    }

    #[test]
    fn query_strings_decode() {
        let q = parse_query("labelSelector=app%3Dweb%2Ctier+in+%28a%29&watch=1&bad=%zz");
        assert_eq!(query_get(&q, "labelSelector"), "app=web,tier in (a)");
        assert!(is_true(query_get(&q, "watch")));
        assert_eq!(query_get(&q, "bad"), "%zz");
        assert_eq!(percent_decode("%"), "%");
        assert_eq!(percent_decode("%4"), "%4");
    }
}
