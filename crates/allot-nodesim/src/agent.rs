//! The node agent: a kubelet over the shared store.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use allot_api::core::v1::{Pod, PodCondition};
use allot_api::meta::v1::Condition;
use allot_api::resource::v1::{
    AllocatedDeviceStatus, Device, ResourceClaim, ResourceSlice, SkipNodeOperation,
};
use allot_kubelet::{CpuPolicy, Node, PodAdmission, compute_pod_qos};
use allot_kubelet_config::ValidateOptions;
use allot_runtime::{Action, Context, Controller, SimTime, Subscriptions, Topic};
use allot_scheduler::resources::Resources;
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::claims::{self, PodClaim};
use crate::fit;
use crate::health::{self, DeviceId, HealthCache, device_id};
use crate::metadata::{self, Generations, MetadataDevice};
use crate::podresources::{self, RESOURCES_ANNOTATION};
use crate::{
    DEFAULT_HEALTH_TIMEOUT_SECONDS, DRA_OPTIONAL_NODE_OPERATIONS, NodeAgentConfig, NodeSimError,
};

/// The condition type drivers set on a prepared device.
const READY: &str = "Ready";
/// The reason of the Ready condition the simulated drivers set.
const PREPARED_REASON: &str = "DevicePrepared";

/// Metadata files written so far, shared between an agent and whoever writes them to disk
/// (the runtime owns the agent once it runs).
#[derive(Debug, Clone, Default)]
pub struct MetadataLog {
    inner: Arc<Mutex<MetadataState>>,
}

#[derive(Debug, Default)]
struct MetadataState {
    /// Every version written, sharing its bytes with `current` and the agent's generations.
    versions: Vec<(Arc<Path>, Arc<[u8]>)>,
    current: BTreeMap<Arc<Path>, Arc<[u8]>>,
}

impl MetadataLog {
    fn with<T>(&self, f: impl FnOnce(&mut MetadataState) -> T) -> T {
        let mut guard = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        f(&mut guard)
    }

    fn write(&self, path: &Arc<Path>, bytes: &Arc<[u8]>) {
        self.with(|s| {
            let same = s
                .current
                .get(&**path)
                .is_some_and(|b| Arc::ptr_eq(b, bytes) || **b == **bytes);
            if !same {
                s.versions.push((path.clone(), bytes.clone()));
                s.current.insert(path.clone(), bytes.clone());
            }
        });
    }

    fn remove(&self, path: &Path) {
        self.with(|s| {
            s.current.remove(path);
        });
    }

    /// Every version of every file in the order written (a file's later versions carry
    /// higher generations).
    pub fn versions(&self) -> Vec<(PathBuf, Vec<u8>)> {
        self.with(|s| {
            s.versions
                .iter()
                .map(|(p, b)| (p.to_path_buf(), b.to_vec()))
                .collect()
        })
    }

    /// The files that exist now (pods still running), with their latest contents, in path
    /// order.
    pub fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        self.with(|s| {
            s.current
                .iter()
                .map(|(p, b)| (p.to_path_buf(), b.to_vec()))
                .collect()
        })
    }
}

/// A pod the kubelet admitted.
#[derive(Debug, Clone)]
struct AdmittedPod {
    uid: String,
    /// Containers in admission order (init containers first).
    containers: Vec<String>,
    /// Claim uids the pod holds a reference to.
    claims: Vec<String>,
    /// Devices of its claims.
    devices: Vec<DeviceId>,
    /// Its metadata files.
    files: BTreeSet<Arc<Path>>,
    /// What it requests of the node (with its DRA node-allocatable resources).
    requests: Resources,
    /// What its metadata files were last written from ([`NodeAgent::metadata_inputs`]).
    metadata_inputs: MetadataInputs,
    /// The pod's resourceVersion once its `allocatedResourcesStatus` is known to be current
    /// and cannot change by itself (no health timeout pending); `None` otherwise. While the
    /// pod and the metadata inputs stay as they were, a refresh has nothing to do.
    settled: Option<String>,
    /// When its containers exit ([`crate::lifecycle`]), if they do.
    ends_at: Option<SimTime>,
}

/// What a pod's metadata files are made of: the slice events seen, and the resourceVersion of
/// each of its claims as stored.
type MetadataInputs = (u64, Vec<String>);

/// A claim prepared on this node.
#[derive(Debug, Clone)]
struct PreparedClaim {
    namespace: String,
    name: String,
    /// Pods using it, by uid.
    pods: BTreeSet<String>,
    /// Drivers that were called (not skipped), with whether they skip unprepare.
    drivers: BTreeMap<String, bool>,
}

/// The devices of a pod's claims as their slices list them ([`NodeAgent::find_device`]),
/// looked up once per reconcile: several steps need them, and the agent's own writes in
/// between touch no slice. Devices not looked up in advance fall through to the store.
struct Devices {
    found: Vec<(DeviceId, Option<FoundDevice>)>,
}

/// A device's slice (shared with the store) and its index in the slice's device list.
type FoundDevice = (Arc<ResourceSlice>, usize);

impl Devices {
    fn new(agent: &NodeAgent, store: &Store, claims: &[PodClaim]) -> Devices {
        let mut found: Vec<(DeviceId, Option<FoundDevice>)> = Vec::new();
        for pc in claims {
            let Some(allocation) = &pc.claim.status.allocation else {
                continue;
            };
            for r in &allocation.devices.results {
                if found
                    .iter()
                    .any(|(id, _)| id.0 == r.driver && id.1 == r.pool && id.2 == r.device)
                {
                    continue;
                }
                let hit = agent
                    .find_device(store, &r.driver, &r.pool, &r.device)
                    .and_then(|(slice, _)| {
                        let index = slice.spec.devices.iter().position(|d| d.name == r.device)?;
                        let shared = store.get_shared::<ResourceSlice>("", &slice.metadata.name)?;
                        Some((shared.clone(), index))
                    });
                found.push((device_id(r), hit));
            }
        }
        Devices { found }
    }

    /// [`NodeAgent::find_device`], answered from what was looked up in advance.
    fn get<'a>(
        &'a self,
        agent: &NodeAgent,
        store: &'a Store,
        driver: &str,
        pool: &str,
        device: &str,
    ) -> Option<(&'a ResourceSlice, &'a Device)> {
        match self
            .found
            .iter()
            .find(|(id, _)| id.0 == driver && id.1 == pool && id.2 == device)
        {
            Some((_, hit)) => hit
                .as_ref()
                .map(|(slice, index)| (&**slice, &slice.spec.devices[*index])),
            None => agent.find_device(store, driver, pool, device),
        }
    }
}

/// The kubelet of one node, as a reconcile loop over pods bound to it.
pub struct NodeAgent {
    name: &'static str,
    config: NodeAgentConfig,
    kubelet: Node,
    pods: BTreeMap<ObjectKey, AdmittedPod>,
    /// What the admitted pods request together (upstream `NodeInfo.Requested`).
    requested: Resources,
    rejected: BTreeSet<String>,
    waiting: RefCell<BTreeSet<ObjectKey>>,
    /// Pods bound to this node, with their PodGroup, kept from the events `keys_for` sees, so
    /// that events of other kinds map to pods without scanning the store.
    bound: RefCell<BTreeMap<ObjectKey, Option<String>>>,
    prepared: BTreeMap<String, PreparedClaim>,
    generations: Generations,
    health: HealthCache,
    device_pods: BTreeMap<DeviceId, BTreeSet<ObjectKey>>,
    device_plugin_numa: BTreeMap<(String, String), Option<u32>>,
    /// Pools of the pods' devices added to `subscriptions` (so that each is added once).
    subscribed_pools: BTreeSet<(String, String)>,
    log: MetadataLog,
    /// ResourceSlice events seen (a slice of a pool the pods' devices come from changed).
    slice_events: Cell<u64>,
    /// The topics this agent is offered events of, when a runtime routes events (see
    /// [`NodeAgent::subscribe`]).
    subscriptions: Subscriptions,
}

impl std::fmt::Debug for NodeAgent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeAgent")
            .field("name", &self.name)
            .field("pods", &self.pods.len())
            .finish()
    }
}

fn kubelet_owned(t: &str) -> bool {
    matches!(
        t,
        "PodReadyToStartContainers" | "Initialized" | "Ready" | "ContainersReady"
    )
}

impl NodeAgent {
    /// Starts the kubelet's managers for the node. The controller's name is
    /// `node-agent/<node>` (leaked once, as the runtime wants a `&'static str`).
    pub fn new(config: NodeAgentConfig) -> Result<NodeAgent, NodeSimError> {
        for version in &config.metadata_versions {
            if version != crate::METADATA_API_V1BETA1 && version != crate::METADATA_API_V1ALPHA1 {
                return Err(NodeSimError::MetadataVersion {
                    node: config.node_name.clone(),
                    version: version.clone(),
                });
            }
        }
        let kubelet = Node::start(
            config.topology.clone(),
            &config.kubelet_config,
            ValidateOptions::default(),
            &config.checkpoints,
        )
        .map_err(|e| NodeSimError::Start {
            node: config.node_name.clone(),
            message: e.to_string(),
        })?;
        let device_plugin_numa = config
            .topology
            .devices
            .iter()
            .map(|d| ((d.resource_name.clone(), d.id.clone()), d.numa))
            .collect();
        let name: &'static str =
            Box::leak(format!("node-agent/{}", config.node_name).into_boxed_str());
        Ok(NodeAgent {
            name,
            config,
            kubelet,
            pods: BTreeMap::new(),
            requested: Resources::default(),
            rejected: BTreeSet::new(),
            waiting: RefCell::new(BTreeSet::new()),
            bound: RefCell::new(BTreeMap::new()),
            prepared: BTreeMap::new(),
            generations: Generations::default(),
            health: HealthCache::default(),
            device_pods: BTreeMap::new(),
            device_plugin_numa,
            subscribed_pools: BTreeSet::new(),
            log: MetadataLog::default(),
            slice_events: Cell::new(0),
            subscriptions: Subscriptions::detached(),
        })
    }

    /// The node's name.
    pub fn node_name(&self) -> &str {
        &self.config.node_name
    }

    /// The kubelet's managers and their state.
    pub fn kubelet(&self) -> &Node {
        &self.kubelet
    }

    /// The device metadata files that exist now, as paths relative to an output folder
    /// (`<node>/<namespace>/<pod>/resourceclaims/...` or `.../resourceclaimtemplates/...`)
    /// with their latest contents, in path order.
    pub fn metadata_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        self.log.files()
    }

    /// Every version of every metadata file, in the order written.
    pub fn metadata_versions(&self) -> Vec<(PathBuf, Vec<u8>)> {
        self.log.versions()
    }

    /// A handle on the metadata files that stays usable after the agent moved into a
    /// `Runtime`.
    pub fn metadata_log(&self) -> MetadataLog {
        self.log.clone()
    }

    /// Marks a pod as waiting on its claims (or not). A waiting pod re-checks on every claim
    /// change in its namespace, so the agent subscribes to that namespace's claims while it has
    /// one.
    fn set_waiting(&self, key: &ObjectKey, on: bool) {
        let mut waiting = self.waiting.borrow_mut();
        let changed = if on {
            waiting.insert(key.clone())
        } else {
            waiting.remove(key)
        };
        if changed {
            let any = waiting.iter().any(|k| k.namespace == key.namespace);
            self.subscriptions.set(
                Topic::Namespace(Kind::ResourceClaim, key.namespace.clone()),
                any,
            );
        }
    }

    fn on_this_node(&self, pod: &Pod) -> bool {
        pod.spec.node_name.as_deref() == Some(self.config.node_name.as_str())
    }

    /// Whether the kubelet skips node operations the allocation says to skip: the gate is on
    /// and the node declares the feature (from its configuration or the Node object).
    fn honours_skip(&self, store: &Store) -> bool {
        self.config.features.optional_node_operations
            || self
                .config
                .declared_features
                .iter()
                .any(|f| f == DRA_OPTIONAL_NODE_OPERATIONS)
            || store
                .get::<allot_api::core::v1::Node>("", &self.config.node_name)
                .is_some_and(|n| {
                    n.status
                        .declared_features
                        .iter()
                        .any(|f| f == DRA_OPTIONAL_NODE_OPERATIONS)
                })
    }

    fn timeout_ms(&self, driver: &str) -> u64 {
        self.config
            .driver_health_timeout
            .get(driver)
            .copied()
            .unwrap_or(DEFAULT_HEALTH_TIMEOUT_SECONDS)
            .saturating_mul(1000)
    }

    /// The slice listing a device and the device, preferring the pool's newest generation.
    fn find_device<'s>(
        &self,
        store: &'s Store,
        driver: &str,
        pool: &str,
        device: &str,
    ) -> Option<(&'s ResourceSlice, &'s Device)> {
        store
            .pool_slices(driver, pool)
            .filter_map(|s| {
                s.spec
                    .devices
                    .iter()
                    .find(|d| d.name == device)
                    .map(|d| (s, d))
            })
            .max_by(|a, b| {
                a.0.spec
                    .pool
                    .generation
                    .cmp(&b.0.spec.pool.generation)
                    .then_with(|| b.0.metadata.name.cmp(&a.0.metadata.name))
            })
    }

    /// Ends the subscription to a claim that is no longer prepared, unless another prepared
    /// claim (an older one of the same name) still needs it.
    fn unsubscribe_claim(&self, gone: &PreparedClaim) {
        let still = self
            .prepared
            .values()
            .any(|p| p.namespace == gone.namespace && p.name == gone.name);
        if !still {
            self.subscriptions.remove(&Topic::Object(ObjectKey::new(
                Kind::ResourceClaim,
                gone.namespace.as_str(),
                gone.name.as_str(),
            )));
        }
    }

    /// Frees what a pod held: manager state, claim references (unpreparing claims no pod
    /// uses any more) and its metadata files.
    fn forget_pod(&mut self, store: &mut Store, key: &ObjectKey) -> Result<(), String> {
        self.set_waiting(key, false);
        let Some(pod) = self.pods.remove(key) else {
            return Ok(());
        };
        self.subscriptions.remove(&Topic::Object(key.clone()));
        self.requested.sub(&pod.requests);
        let node = &mut self.kubelet;
        let uid = pod.uid.as_str();
        if let CpuPolicy::Static(policy) = &mut node.cpu {
            if node.cpu_state.pod_pools.contains_key(uid) {
                policy.release_pod_pool(&mut node.cpu_state, uid);
            } else {
                for c in &pod.containers {
                    policy.remove_container(&mut node.cpu_state, uid, c);
                }
            }
        }
        for c in &pod.containers {
            node.memory.remove_container(&mut node.memory_state, uid, c);
            node.devices.remove_container(uid, c);
        }
        node.topology_manager.remove_pod(uid);
        node.admitted.retain(|(u, _)| u != uid);
        for device in &pod.devices {
            if let Some(set) = self.device_pods.get_mut(device) {
                set.remove(key);
                if set.is_empty() {
                    self.device_pods.remove(device);
                }
            }
        }
        for path in &pod.files {
            self.log.remove(path);
        }
        for claim_uid in &pod.claims {
            let done = match self.prepared.get_mut(claim_uid) {
                Some(p) => {
                    p.pods.remove(uid);
                    p.pods.is_empty()
                }
                None => false,
            };
            if done && let Some(p) = self.prepared.remove(claim_uid) {
                self.unsubscribe_claim(&p);
                self.generations.forget(claim_uid);
                self.unprepare(store, &p, claim_uid)?;
            }
        }
        Ok(())
    }

    /// NodeUnprepareResources: the simulated drivers withdraw the Ready condition they set.
    fn unprepare(
        &self,
        store: &mut Store,
        p: &PreparedClaim,
        claim_uid: &str,
    ) -> Result<(), String> {
        if !self.config.features.resource_claim_device_status {
            return Ok(());
        }
        let Some(claim) = store.get::<ResourceClaim>(&p.namespace, &p.name) else {
            return Ok(());
        };
        if claim.metadata.uid != claim_uid {
            return Ok(());
        }
        let drivers: BTreeSet<&String> = p
            .drivers
            .iter()
            .filter(|(_, skip_unprepare)| !**skip_unprepare)
            .map(|(d, _)| d)
            .collect();
        store
            .modify::<ResourceClaim, _>(&p.namespace, &p.name, |c| {
                for entry in &mut c.status.devices {
                    if drivers.contains(&entry.driver) {
                        entry
                            .conditions
                            .retain(|k| !(k.type_ == READY && k.reason == PREPARED_REASON));
                    }
                }
                c.status.devices.retain(|e| {
                    !e.conditions.is_empty() || e.data.is_some() || e.network_data.is_some()
                });
            })
            .map_err(|e| e.to_string())
    }

    /// NodePrepareResources for the drivers of a claim that are not skipped: the simulated
    /// drivers report each allocated device in `status.devices` with a Ready condition.
    fn prepare(
        &mut self,
        store: &mut Store,
        pc: &PodClaim,
        pod_uid: &str,
        honours_skip: bool,
        stamp: &str,
    ) -> Result<(), String> {
        let uid = pc.claim.metadata.uid.clone();
        if let Some(p) = self.prepared.get_mut(&uid) {
            p.pods.insert(pod_uid.to_string());
            return Ok(());
        }
        let Some(allocation) = &pc.claim.status.allocation else {
            return Ok(());
        };
        let mut drivers = BTreeMap::new();
        for (driver, skip_prepare) in claims::drivers(&pc.claim) {
            if skip_prepare && honours_skip {
                continue;
            }
            let skip_unprepare = honours_skip
                && allocation
                    .devices
                    .results
                    .iter()
                    .filter(|r| r.driver == *driver)
                    .all(|r| claims::skips(r, SkipNodeOperation::NodeUnprepareResources));
            drivers.insert(driver, skip_unprepare);
        }
        self.subscriptions.add(Topic::Object(ObjectKey::new(
            Kind::ResourceClaim,
            pc.claim.metadata.namespace.as_str(),
            pc.claim.metadata.name.as_str(),
        )));
        self.prepared.insert(
            uid,
            PreparedClaim {
                namespace: pc.claim.metadata.namespace.clone(),
                name: pc.claim.metadata.name.clone(),
                pods: BTreeSet::from([pod_uid.to_string()]),
                drivers: drivers.clone(),
            },
        );
        if !self.config.features.resource_claim_device_status || drivers.is_empty() {
            return Ok(());
        }
        let node = self.config.node_name.clone();
        let results = allocation.devices.results.clone();
        let generation = pc.claim.metadata.generation;
        store
            .modify::<ResourceClaim, _>(
                &pc.claim.metadata.namespace,
                &pc.claim.metadata.name,
                |c| {
                    // Entries for devices no longer allocated go, as the API server drops them.
                    c.status.devices.retain(|e| {
                        results.iter().any(|r| {
                            r.driver == e.driver
                                && r.pool == e.pool
                                && r.device == e.device
                                && r.share_id == e.share_id
                        })
                    });
                    for r in results
                        .iter()
                        .filter(|r| drivers.contains_key(r.driver.as_str()))
                    {
                        let index = match c.status.devices.iter().position(|e| {
                            e.driver == r.driver
                                && e.pool == r.pool
                                && e.device == r.device
                                && e.share_id == r.share_id
                        }) {
                            Some(i) => i,
                            None => {
                                c.status.devices.push(AllocatedDeviceStatus {
                                    driver: r.driver.to_string(),
                                    pool: r.pool.to_string(),
                                    device: r.device.to_string(),
                                    share_id: r.share_id.clone(),
                                    ..AllocatedDeviceStatus::default()
                                });
                                c.status.devices.len() - 1
                            }
                        };
                        let entry = &mut c.status.devices[index];
                        if !entry.conditions.iter().any(|k| k.type_ == READY) {
                            entry.conditions.push(Condition {
                                type_: READY.into(),
                                status: "True".into(),
                                observed_generation: generation,
                                last_transition_time: stamp.to_string(),
                                reason: PREPARED_REASON.into(),
                                message: format!(
                                    "prepared by the {} kubelet plugin on node {node}",
                                    r.driver
                                ),
                            });
                            entry.conditions.sort_by(|a, b| a.type_.cmp(&b.type_));
                        }
                    }
                },
            )
            .map_err(|e| e.to_string())
    }

    /// Writes the metadata files of the pod's prepared claims (new generations where the
    /// content changed) and returns their paths.
    fn write_metadata(
        &mut self,
        store: &Store,
        pod: &Pod,
        claims: &[PodClaim],
        found: &Devices,
    ) -> BTreeSet<Arc<Path>> {
        let mut paths = BTreeSet::new();
        let prefix = PathBuf::from(&self.config.node_name)
            .join(&pod.metadata.namespace)
            .join(&pod.metadata.name);
        for pc in claims {
            let uid = &pc.claim.metadata.uid;
            let Some(prepared) = self.prepared.get(uid) else {
                continue;
            };
            let drivers: Vec<String> = prepared.drivers.keys().cloned().collect();
            // The claim as it is now: drivers may have added network data since.
            let claim = store
                .get::<ResourceClaim>(&pc.claim.metadata.namespace, &pc.claim.metadata.name)
                .filter(|c| c.metadata.uid == *uid)
                .unwrap_or(&pc.claim);
            let Some(allocation) = &claim.status.allocation else {
                continue;
            };
            let pod_claim = pc.from_template.then_some(pc.pod_claim_name.as_str());
            for driver in &drivers {
                // Top-level requests in allocation order.
                let mut requests: Vec<&str> = Vec::new();
                for r in allocation
                    .devices
                    .results
                    .iter()
                    .filter(|r| r.driver == **driver)
                {
                    let top = r.request.split('/').next().unwrap_or_default();
                    if !requests.contains(&top) {
                        requests.push(top);
                    }
                }
                for top in requests {
                    let devices: Vec<MetadataDevice<'_>> = allocation
                        .devices
                        .results
                        .iter()
                        .filter(|r| {
                            r.driver == **driver
                                && r.request.split('/').next().unwrap_or_default() == top
                        })
                        .map(|r| MetadataDevice {
                            request: &r.request,
                            pool: &r.pool,
                            name: &r.device,
                            device: found
                                .get(self, store, &r.driver, &r.pool, &r.device)
                                .map(|(_, d)| d),
                            network_data: claim
                                .status
                                .devices
                                .iter()
                                .find(|e| {
                                    e.driver == r.driver
                                        && e.pool == r.pool
                                        && e.device == r.device
                                        && e.share_id == r.share_id
                                })
                                .and_then(|e| e.network_data.as_ref()),
                        })
                        .collect();
                    let content = metadata::content(claim, pod_claim, driver, &devices);
                    let relative =
                        metadata::relative_path(&claim.metadata.name, pod_claim, top, driver);
                    let bytes = self.generations.bytes(
                        uid,
                        &relative,
                        &content,
                        &self.config.metadata_versions,
                    );
                    let path: Arc<Path> = prefix.join(&relative).into();
                    self.log.write(&path, &bytes);
                    paths.insert(path);
                }
            }
        }
        paths
    }

    /// What the pod's metadata files are made of now (see [`MetadataInputs`]).
    fn metadata_inputs(&self, store: &Store, claims: &[PodClaim]) -> MetadataInputs {
        let versions = claims
            .iter()
            .map(|pc| {
                store
                    .get::<ResourceClaim>(&pc.claim.metadata.namespace, &pc.claim.metadata.name)
                    .filter(|c| c.metadata.uid == pc.claim.metadata.uid)
                    .map(|c| c.metadata.resource_version.clone())
                    .unwrap_or_default()
            })
            .collect();
        (self.slice_events.get(), versions)
    }

    /// Updates the health cache from the slices and returns, per container, its
    /// `allocatedResourcesStatus`, plus when a health answer next changes by itself.
    fn health_statuses(
        &mut self,
        store: &Store,
        pod: &Pod,
        claims: &[PodClaim],
        found: &Devices,
        now: SimTime,
    ) -> (BTreeMap<String, Vec<serde_json::Value>>, Option<SimTime>) {
        let mut out = BTreeMap::new();
        let mut next: Option<SimTime> = None;
        if !self.config.features.resource_health_status {
            return (out, None);
        }
        for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
            let Some(res) = &c.resources else { continue };
            let mut list = Vec::new();
            for reference in &res.claims {
                let Some(pc) = claims.iter().find(|pc| pc.pod_claim_name == reference.name) else {
                    continue;
                };
                let Some(allocation) = &pc.claim.status.allocation else {
                    continue;
                };
                let called: BTreeSet<String> = self
                    .prepared
                    .get(&pc.claim.metadata.uid)
                    .map(|p| p.drivers.keys().cloned().collect())
                    .unwrap_or_default();
                let mut resources = Vec::new();
                for r in &allocation.devices.results {
                    let top = r.request.split('/').next().unwrap_or_default();
                    if reference.request.as_deref().is_some_and(|want| want != top) {
                        continue;
                    }
                    let id = device_id(r);
                    let health = if called.contains(r.driver.as_str()) {
                        let report = found
                            .get(self, store, &r.driver, &r.pool, &r.device)
                            .map(|(slice, _)| health::reported(slice, &r.device))
                            .unwrap_or_else(|| "Unknown".into());
                        self.health.observe(&id, &report, now);
                        let (health, change) =
                            self.health.health(&id, now, self.timeout_ms(&r.driver));
                        if let Some(t) = change {
                            next = Some(next.map_or(t, |n| n.min(t)));
                        }
                        health
                    } else {
                        // No kubelet plugin was involved, so nobody reports health.
                        "Unknown".to_string()
                    };
                    resources.push(serde_json::json!({
                        "resourceID": format!("{}/{}/{}", r.driver, r.pool, r.device),
                        "health": health,
                    }));
                }
                let name = match &reference.request {
                    Some(request) => format!("claim:{}/{request}", reference.name),
                    None => format!("claim:{}", reference.name),
                };
                list.push(serde_json::json!({"name": name, "resources": resources}));
            }
            if !list.is_empty() {
                out.insert(c.name.clone(), list);
            }
        }
        (out, next)
    }

    /// Writes the features this kubelet declares into the Node's `status.declaredFeatures`.
    fn declare_features(&self, store: &mut Store, key: &ObjectKey) -> Result<(), String> {
        let mut declared: BTreeSet<String> =
            self.config.declared_features.iter().cloned().collect();
        if self.config.features.optional_node_operations {
            declared.insert(DRA_OPTIONAL_NODE_OPERATIONS.to_string());
        }
        let Some(node) = store.get::<allot_api::core::v1::Node>("", &key.name) else {
            return Ok(());
        };
        if declared
            .iter()
            .all(|f| node.status.declared_features.contains(f))
        {
            return Ok(());
        }
        store
            .modify::<allot_api::core::v1::Node, _>("", &key.name, |n| {
                declared.extend(n.status.declared_features.iter().cloned());
                n.status.declared_features = declared.into_iter().collect();
            })
            .map_err(|e| e.to_string())
    }

    fn admit(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        pod: &Pod,
        ctx: &Context,
    ) -> Result<Action, String> {
        let claims = match claims::ready_claims(store, pod) {
            Ok(claims) => claims,
            Err(waiting) => {
                self.set_waiting(key, true);
                write_waiting(store, key, pod, ctx.now, &waiting.to_string())?;
                return Ok(Action::Done);
            }
        };
        let honours_skip = self.honours_skip(store);
        let missing_plugin = claims.iter().find_map(|pc| {
            claims::drivers(&pc.claim)
                .into_iter()
                .find(|(_, skip)| *skip)
                .map(|(driver, _)| (pc.claim.metadata.name.clone(), driver))
        });
        if let Some((claim, driver)) = missing_plugin.filter(|_| !honours_skip) {
            // The allocation skips preparation because the driver has no kubelet plugin; a
            // kubelet that does not honour skipNodeOperations waits for that plugin forever.
            self.set_waiting(key, true);
            let message = format!(
                "ResourceClaim {claim}: DRA driver {driver} has no kubelet plugin on this node: \
                 its devices skip NodePrepareResources, but the node does not declare \
                 {DRA_OPTIONAL_NODE_OPERATIONS}"
            );
            write_waiting(store, key, pod, ctx.now, &message)?;
            return Ok(Action::Done);
        }
        self.set_waiting(key, false);
        let now = ctx.now.rfc3339();
        let found = Devices::new(self, store, &claims);
        // The pod's node-allocatable claim statuses: the scheduler's, or (for a pod it did not
        // place) those the agent records for it below.
        let node_allocatable = if self.config.features.node_allocatable_resources {
            let find =
                |d: &str, p: &str, n: &str| found.get(self, store, d, p, n).map(|(_, dev)| dev);
            claims::node_allocatable_statuses(pod, &claims, &find)
        } else {
            Vec::new()
        };
        let footprint = if self.config.features.node_allocatable_resources {
            let recorded = pod
                .status
                .node_allocatable_resource_claim_statuses
                .as_ref()
                .and_then(serde_json::Value::as_array);
            fit::pod_footprint(pod, Some(recorded.unwrap_or(&node_allocatable)))
        } else {
            fit::pod_footprint(pod, None)
        };
        // The resource managers' admit handler runs before the predicate admit handler.
        let admission = self.kubelet.admit(pod);
        let rejection = if !admission.admitted {
            Some((
                admission.reason.clone().unwrap_or_default(),
                admission.message.clone().unwrap_or_default(),
            ))
        } else {
            let node = store.get::<allot_api::core::v1::Node>("", &self.config.node_name);
            let shortage =
                node.and_then(|n| fit::check(n, &footprint, &self.requested, self.pods.len()));
            if shortage.is_some() {
                let names: Vec<String> = admission
                    .containers
                    .iter()
                    .map(|c| c.name.clone())
                    .collect();
                self.kubelet.remove_pod(&pod.metadata.uid, &names);
            }
            shortage
        };
        if let Some((reason, message)) = rejection {
            self.rejected.insert(pod.metadata.uid.clone());
            let qos = compute_pod_qos(pod, true).name();
            let message = format!("Pod was rejected: {message}");
            store
                .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                    p.status.phase = Some("Failed".into());
                    p.status.reason = Some(reason);
                    p.status.message = Some(message);
                    p.status.qos_class = Some(qos.into());
                    p.status.conditions.retain(|c| !kubelet_owned(&c.type_));
                })
                .map_err(|e| e.to_string())?;
            return Ok(Action::Done);
        }
        let uid = pod.metadata.uid.clone();
        for pc in &claims {
            self.prepare(store, pc, &uid, honours_skip, &now)?;
        }
        let mut devices = Vec::new();
        for pc in &claims {
            if let Some(a) = &pc.claim.status.allocation {
                for r in &a.devices.results {
                    let id = device_id(r);
                    let pool = (id.0.clone(), id.1.clone());
                    if !self.subscribed_pools.contains(&pool) {
                        self.subscriptions
                            .add(Topic::Pool(pool.0.clone(), pool.1.clone()));
                        self.subscribed_pools.insert(pool);
                    }
                    self.device_pods
                        .entry(id.clone())
                        .or_default()
                        .insert(key.clone());
                    devices.push(id);
                }
            }
        }
        let files = self.write_metadata(store, pod, &claims, &found);
        let metadata_inputs = self.metadata_inputs(store, &claims);
        // An admitted pod's events matter even if it no longer names this node.
        self.subscriptions.add(Topic::Object(key.clone()));
        self.pods.insert(
            key.clone(),
            AdmittedPod {
                uid,
                containers: admission
                    .containers
                    .iter()
                    .map(|c| c.name.clone())
                    .collect(),
                claims: claims
                    .iter()
                    .map(|pc| pc.claim.metadata.uid.clone())
                    .collect(),
                devices,
                files,
                requests: footprint.clone(),
                metadata_inputs,
                settled: None,
                ends_at: crate::lifecycle::run_duration(pod).map(|d| ctx.now.plus_millis(d)),
            },
        );
        self.requested.add(&footprint);
        let annotation = self.annotation(store, pod, &admission, &claims, &found);
        let (health, next) = self.health_statuses(store, pod, &claims, &found, ctx.now);
        let before = store.resource_version();
        write_running(store, key, pod, &now, annotation, node_allocatable, &health)?;
        self.settle(store, key, pod, before, next);
        Ok(requeue(next, ctx.now))
    }

    fn annotation(
        &self,
        store: &Store,
        pod: &Pod,
        admission: &PodAdmission,
        claims: &[PodClaim],
        found: &Devices,
    ) -> String {
        let node = &self.kubelet;
        let uid = pod.metadata.uid.as_str();
        let memory = |container: &str| {
            node.memory_state
                .blocks(uid, container)
                .map(|blocks| {
                    blocks
                        .iter()
                        .map(|b| (b.resource.clone(), b.size, b.numa_affinity.clone()))
                        .collect()
                })
                .unwrap_or_default()
        };
        let device_of =
            |d: &str, p: &str, n: &str| found.get(self, store, d, p, n).map(|(_, dev)| dev);
        podresources::annotation(
            pod,
            admission,
            &memory,
            &self.device_plugin_numa,
            claims,
            &device_of,
        )
    }

    /// Records that the pod's status as stored now is current, unless a health answer changes
    /// by itself at `next`. `pod` is the pod as read before its status write, which the store
    /// took (or found changing nothing) when its resourceVersion was `before`: the pod's
    /// resourceVersion is then the store's newest if the write happened, else the one read.
    fn settle(
        &mut self,
        store: &Store,
        key: &ObjectKey,
        pod: &Pod,
        before: u64,
        next: Option<SimTime>,
    ) {
        let version = next.is_none().then(|| {
            if store.resource_version() == before {
                pod.metadata.resource_version.clone()
            } else {
                store.resource_version().to_string()
            }
        });
        if let Some(admitted) = self.pods.get_mut(key) {
            admitted.settled = version;
        }
    }

    /// A pod already running: metadata files and device health follow the store.
    fn refresh(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        pod: &Pod,
        ctx: &Context,
    ) -> Result<Action, String> {
        // Claims of a running pod stay; if one went away the kubelet keeps what it prepared.
        let claims = claims::ready_claims(store, pod).unwrap_or_default();
        // The files follow the claims and the slices of their devices: when neither changed
        // since they were written, they would come out the same.
        // The claims were just read from the store: their resourceVersions are those stored.
        let inputs: MetadataInputs = (
            self.slice_events.get(),
            claims
                .iter()
                .map(|pc| pc.claim.metadata.resource_version.clone())
                .collect(),
        );
        let admitted = self.pods.get(key);
        if admitted.is_some_and(|a| {
            a.metadata_inputs == inputs
                && a.settled.as_deref() == Some(pod.metadata.resource_version.as_str())
        }) {
            // Neither the pod nor what its files and health follow changed since its status
            // was last known current: the files and the status would come out the same.
            return Ok(Action::Done);
        }
        let found = Devices::new(self, store, &claims);
        if admitted.is_none_or(|a| a.metadata_inputs != inputs) {
            let files = self.write_metadata(store, pod, &claims, &found);
            if let Some(admitted) = self.pods.get_mut(key) {
                admitted.files.extend(files);
                admitted.metadata_inputs = inputs;
            }
        }
        let (health, next) = self.health_statuses(store, pod, &claims, &found, ctx.now);
        let before = store.resource_version();
        if !health.is_empty() && !allocated_status_current(pod, &health) {
            store
                .modify::<Pod, _>(&key.namespace, &key.name, |p| {
                    set_allocated_status(p, &health);
                })
                .map_err(|e| e.to_string())?;
        }
        self.settle(store, key, pod, before, next);
        Ok(requeue(next, ctx.now))
    }
}

impl NodeAgent {
    /// The containers of an admitted pod exit once its run duration has passed: the pod
    /// finishes (and frees what it held) or its containers restart. `None` when nothing ended
    /// or the pod runs on.
    fn end_run(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        pod: &Pod,
        ctx: &Context,
    ) -> Result<Option<Action>, String> {
        let Some(at) = self.pods.get(key).and_then(|p| p.ends_at) else {
            return Ok(None);
        };
        if at > ctx.now {
            return Ok(None);
        }
        match crate::lifecycle::finish(store, key, pod, ctx.now)? {
            crate::lifecycle::Ending::Finished(_) => {
                self.forget_pod(store, key)?;
                Ok(Some(Action::Done))
            }
            crate::lifecycle::Ending::Restart => {
                let next =
                    crate::lifecycle::run_duration(pod).map(|d| ctx.now.plus_millis(d.max(1)));
                if let Some(admitted) = self.pods.get_mut(key) {
                    admitted.ends_at = next;
                    admitted.settled = None;
                }
                Ok(None)
            }
        }
    }
}

fn requeue(next: Option<SimTime>, now: SimTime) -> Action {
    match next {
        Some(t) if t > now => Action::RequeueAfterMillis(t.0 - now.0),
        Some(_) => Action::RequeueAfterMillis(1),
        None => Action::Done,
    }
}

fn condition(type_: &str, time: &str, old: &[PodCondition]) -> PodCondition {
    let transition = old
        .iter()
        .find(|c| c.type_ == type_ && c.status == "True")
        .and_then(|c| c.last_transition_time.clone())
        .unwrap_or_else(|| time.to_string());
    PodCondition {
        type_: type_.into(),
        status: "True".into(),
        observed_generation: None,
        last_probe_time: None,
        last_transition_time: Some(transition),
        reason: None,
        message: None,
    }
}

/// Sets `allocatedResourcesStatus` in the container statuses (init and app).
/// Whether [`set_allocated_status`] would change nothing: a refresh then writes nothing
/// (without copying the pod to find out).
fn allocated_status_current(pod: &Pod, health: &BTreeMap<String, Vec<serde_json::Value>>) -> bool {
    [
        &pod.status.container_statuses,
        &pod.status.init_container_statuses,
    ]
    .into_iter()
    .filter_map(|statuses| statuses.as_ref()?.as_array())
    .flatten()
    .all(|status| {
        let Some(name) = status.get("name").and_then(|n| n.as_str()) else {
            return true;
        };
        match (health.get(name), status) {
            (Some(h), serde_json::Value::Object(map)) => {
                map.get("allocatedResourcesStatus")
                    .and_then(serde_json::Value::as_array)
                    == Some(h)
            }
            _ => true,
        }
    })
}

fn set_allocated_status(pod: &mut Pod, health: &BTreeMap<String, Vec<serde_json::Value>>) {
    for statuses in [
        &mut pod.status.container_statuses,
        &mut pod.status.init_container_statuses,
    ] {
        let Some(serde_json::Value::Array(list)) = statuses else {
            continue;
        };
        for status in list.iter_mut() {
            let Some(name) = status
                .get("name")
                .and_then(|n| n.as_str())
                .map(str::to_string)
            else {
                continue;
            };
            if let (Some(h), serde_json::Value::Object(map)) = (health.get(&name), status) {
                map.insert("allocatedResourcesStatus".into(), h.clone().into());
            }
        }
    }
}

/// The status the kubelet writes for a pod it cannot start yet (its DRA resources cannot be
/// prepared): Pending, containers waiting in `ContainerCreating`. As an explanation the kubelet
/// only gives in an event, `PodReadyToStartContainers` carries the reason in its message.
fn write_waiting(
    store: &mut Store,
    key: &ObjectKey,
    pod: &Pod,
    now: SimTime,
    message: &str,
) -> Result<(), String> {
    let now = now.rfc3339();
    let names = |list: &[allot_api::core::v1::Container]| -> Vec<String> {
        list.iter().map(|c| c.name.clone()).collect()
    };
    let init = names(&pod.spec.init_containers);
    let app = names(&pod.spec.containers);
    let waiting = |name: &String| {
        serde_json::json!({
            "name": name,
            "image": "",
            "imageID": "",
            "ready": false,
            "restartCount": 0,
            "started": false,
            "state": {"waiting": {"reason": if init.is_empty() { "ContainerCreating" } else { "PodInitializing" }}},
        })
    };
    let mut app_statuses: Vec<serde_json::Value> = app.iter().map(waiting).collect();
    app_statuses.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let qos = compute_pod_qos(pod, true).name();
    store
        .modify::<Pod, _>(&key.namespace, &key.name, |p| {
            let old = p.status.conditions.clone();
            let keep = |t: &str, status: &str| {
                old.iter()
                    .find(|c| c.type_ == t && c.status == status)
                    .and_then(|c| c.last_transition_time.clone())
                    .unwrap_or_else(|| now.clone())
            };
            let make = |t: &str, status: &str, reason: Option<&str>, message: Option<String>| {
                PodCondition {
                    type_: t.into(),
                    status: status.into(),
                    observed_generation: None,
                    last_probe_time: None,
                    last_transition_time: Some(keep(t, status)),
                    reason: reason.map(str::to_string),
                    message,
                }
            };
            let unready = Some(format!(
                "containers with unready status: [{}]",
                app.join(" ")
            ));
            let mut conditions = vec![
                make(
                    "PodReadyToStartContainers",
                    "False",
                    None,
                    Some(message.to_string()),
                ),
                if init.is_empty() {
                    make("Initialized", "True", None, None)
                } else {
                    make(
                        "Initialized",
                        "False",
                        Some("ContainersNotInitialized"),
                        Some(format!(
                            "containers with incomplete status: [{}]",
                            init.join(" ")
                        )),
                    )
                },
                make(
                    "Ready",
                    "False",
                    Some("ContainersNotReady"),
                    unready.clone(),
                ),
                make(
                    "ContainersReady",
                    "False",
                    Some("ContainersNotReady"),
                    unready,
                ),
                make("PodScheduled", "True", None, None),
            ];
            conditions.extend(
                old.iter()
                    .filter(|c| !kubelet_owned(&c.type_) && c.type_ != "PodScheduled")
                    .cloned(),
            );
            p.status.conditions = conditions;
            p.status.phase = Some("Pending".into());
            p.status.qos_class = Some(qos.into());
            p.status.container_statuses = Some(app_statuses.into());
        })
        .map_err(|e| e.to_string())
}

/// The status the kubelet writes for a pod whose containers all started.
fn write_running(
    store: &mut Store,
    key: &ObjectKey,
    pod: &Pod,
    now: &str,
    annotation: String,
    node_allocatable: Vec<serde_json::Value>,
    health: &BTreeMap<String, Vec<serde_json::Value>>,
) -> Result<(), String> {
    let qos = compute_pod_qos(pod, true).name();
    let started = pod.status.start_time.clone().unwrap_or_else(|| now.into());
    let started_text = started.as_str().unwrap_or(now).to_string();
    let image =
        |c: &allot_api::core::v1::Container| c.image.as_deref().unwrap_or_default().to_string();
    let mut app: Vec<serde_json::Value> = pod
        .spec
        .containers
        .iter()
        .map(|c| {
            serde_json::json!({
                "name": c.name,
                "image": image(c),
                "imageID": "",
                "ready": true,
                "restartCount": 0,
                "started": true,
                "state": {"running": {"startedAt": started_text}},
            })
        })
        .collect();
    app.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let init: Vec<serde_json::Value> = pod
        .spec
        .init_containers
        .iter()
        .map(|c| {
            if c.restart_policy.as_deref() == Some("Always") {
                serde_json::json!({
                    "name": c.name,
                    "image": image(c),
                    "imageID": "",
                    "ready": true,
                    "restartCount": 0,
                    "started": true,
                    "state": {"running": {"startedAt": started_text}},
                })
            } else {
                serde_json::json!({
                    "name": c.name,
                    "image": image(c),
                    "imageID": "",
                    "ready": true,
                    "restartCount": 0,
                    "started": false,
                    "state": {"terminated": {
                        "exitCode": 0,
                        "reason": "Completed",
                        "startedAt": started_text,
                        "finishedAt": started_text,
                    }},
                })
            }
        })
        .collect();
    store
        .modify::<Pod, _>(&key.namespace, &key.name, |p| {
            let old = p.status.conditions.clone();
            let mut conditions: Vec<PodCondition> = [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled",
            ]
            .iter()
            .map(|t| condition(t, now, &old))
            .collect();
            conditions.extend(
                old.iter()
                    .filter(|c| !kubelet_owned(&c.type_) && c.type_ != "PodScheduled")
                    .cloned(),
            );
            p.status.conditions = conditions;
            p.status.phase = Some("Running".into());
            p.status.qos_class = Some(qos.into());
            p.status.start_time = Some(started);
            p.status.container_statuses = Some(app.into());
            p.status.init_container_statuses = if init.is_empty() {
                None
            } else {
                Some(init.into())
            };
            if !node_allocatable.is_empty()
                && p.status.node_allocatable_resource_claim_statuses.is_none()
            {
                p.status.node_allocatable_resource_claim_statuses = Some(node_allocatable.into());
            }
            set_allocated_status(p, health);
            p.metadata
                .annotations
                .insert(RESOURCES_ANNOTATION.into(), annotation);
        })
        .map_err(|e| e.to_string())
}

impl Controller for NodeAgent {
    fn name(&self) -> &'static str {
        self.name
    }

    fn keys_for(&self, event: &Event, _store: &Store) -> Vec<ObjectKey> {
        let mine = |pod: &Pod| self.on_this_node(pod);
        match &event.object {
            Stored::Pod(pod) => {
                if mine(pod) && event.event_type != EventType::Deleted {
                    let group = pod.spec.scheduling_group.as_ref();
                    self.bound
                        .borrow_mut()
                        .insert(event.key.clone(), group.map(|g| g.pod_group_name.clone()));
                } else {
                    self.bound.borrow_mut().remove(&event.key);
                }
                if mine(pod) || self.pods.contains_key(&event.key) {
                    vec![event.key.clone()]
                } else {
                    Vec::new()
                }
            }
            Stored::ResourceClaim(claim) => {
                let ns = &claim.metadata.namespace;
                let bound = self.bound.borrow();
                if bound.is_empty() {
                    return Vec::new();
                }
                // Pods waiting on their node re-check their claims on any claim change in
                // their namespace, as the kubelet re-checks them periodically.
                let mut keys: BTreeSet<ObjectKey> = self
                    .waiting
                    .borrow()
                    .iter()
                    .filter(|k| k.namespace == *ns)
                    .cloned()
                    .collect();
                for r in &claim.status.reserved_for {
                    match r.resource.as_str() {
                        "pods" => {
                            let key = ObjectKey::new(Kind::Pod, ns.as_str(), r.name.as_str());
                            if bound.contains_key(&key) {
                                keys.insert(key);
                            }
                        }
                        "podgroups" => {
                            keys.extend(
                                bound
                                    .iter()
                                    .filter(|(k, g)| {
                                        k.namespace == *ns && g.as_deref() == Some(r.name.as_str())
                                    })
                                    .map(|(k, _)| k.clone()),
                            );
                        }
                        _ => {}
                    }
                }
                if let Some(p) = self.prepared.get(&claim.metadata.uid) {
                    for (key, admitted) in &self.pods {
                        if key.namespace == p.namespace && p.pods.contains(&admitted.uid) {
                            keys.insert(key.clone());
                        }
                    }
                }
                keys.into_iter().collect()
            }
            Stored::ResourceSlice(slice) => {
                self.slice_events
                    .set(self.slice_events.get().wrapping_add(1));
                let pool = (slice.spec.driver.clone(), slice.spec.pool.name.clone());
                let mut keys = BTreeSet::new();
                for d in &slice.spec.devices {
                    let id = (pool.0.clone(), pool.1.clone(), d.name.clone());
                    if let Some(pods) = self.device_pods.get(&id) {
                        keys.extend(pods.iter().cloned());
                    }
                }
                keys.into_iter().collect()
            }
            Stored::PodGroup(group) => self
                .bound
                .borrow()
                .iter()
                .filter(|(k, g)| {
                    k.namespace == group.metadata.namespace
                        && g.as_deref() == Some(group.metadata.name.as_str())
                })
                .map(|(k, _)| k.clone())
                .collect(),
            Stored::Node(node) if node.metadata.name == self.config.node_name => {
                let mut keys: Vec<ObjectKey> = self.waiting.borrow().iter().cloned().collect();
                keys.push(event.key.clone());
                keys
            }
            _ => Vec::new(),
        }
    }

    /// The agent's `keys_for` only reacts to events of its node ([`Topic::Node`]: its pods,
    /// the Node, its slices, claims reserved for its pods or their PodGroups, those PodGroups),
    /// claims in namespaces where a pod waits, claims it prepared, and slices of pools whose
    /// devices its pods hold.
    fn subscribe(&mut self, subscriptions: Subscriptions) -> bool {
        subscriptions.add(Topic::Node(self.config.node_name.clone()));
        for key in self.pods.keys() {
            subscriptions.add(Topic::Object(key.clone()));
        }
        for key in self.waiting.borrow().iter() {
            subscriptions.add(Topic::Namespace(Kind::ResourceClaim, key.namespace.clone()));
        }
        for p in self.prepared.values() {
            subscriptions.add(Topic::Object(ObjectKey::new(
                Kind::ResourceClaim,
                p.namespace.as_str(),
                p.name.as_str(),
            )));
        }
        let pools: BTreeSet<(String, String)> = self
            .device_pods
            .keys()
            .map(|(d, p, _)| (d.clone(), p.clone()))
            .collect();
        for (driver, pool) in &pools {
            subscriptions.add(Topic::Pool(driver.clone(), pool.clone()));
        }
        self.subscribed_pools = pools;
        self.subscriptions = subscriptions;
        true
    }

    fn reconcile(
        &mut self,
        store: &mut Store,
        key: &ObjectKey,
        ctx: &Context,
    ) -> Result<Action, String> {
        if key.kind == Kind::Node {
            self.declare_features(store, key)?;
            return Ok(Action::Done);
        }
        if key.kind != Kind::Pod {
            return Ok(Action::Done);
        }
        let Some(pod) = store.get_shared::<Pod>(&key.namespace, &key.name).cloned() else {
            self.forget_pod(store, key)?;
            return Ok(Action::Done);
        };
        let tracked_uid = self.pods.get(key).map(|p| p.uid.clone());
        if tracked_uid
            .as_deref()
            .is_some_and(|u| u != pod.metadata.uid)
        {
            // A new pod with the old one's name: the old one is gone.
            self.forget_pod(store, key)?;
        }
        let finished = pod.metadata.deletion_timestamp.is_some()
            || matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed"));
        if !self.on_this_node(&pod) || finished {
            self.forget_pod(store, key)?;
            return Ok(Action::Done);
        }
        if self.rejected.contains(&pod.metadata.uid) {
            return Ok(Action::Done);
        }
        let action = if self.pods.contains_key(key) {
            if let Some(action) = self.end_run(store, key, &pod, ctx)? {
                return Ok(action);
            }
            self.refresh(store, key, &pod, ctx)?
        } else {
            self.admit(store, key, &pod, ctx)?
        };
        // A queued wake-up for the containers' exit is replaced by any earlier one: ask again.
        let ends_at = self.pods.get(key).and_then(|p| p.ends_at);
        Ok(match (action, ends_at) {
            (action, None) => action,
            (Action::Done, Some(at)) => requeue(Some(at), ctx.now),
            (Action::RequeueAfterMillis(ms), Some(at)) => {
                requeue(Some(at.min(ctx.now.plus_millis(ms))), ctx.now)
            }
        })
    }
}
