//! Node admission: the kubelet's resource managers driven together, as the kubelet does when a
//! pod lands on a node. The Topology Manager gathers hints from the Device, CPU and Memory
//! Managers (in that order, as the kubelet registers them), merges them per container or per pod,
//! and lets each manager allocate on the merged affinity.
//!
//! A rejected pod's allocations are released at once; the kubelet releases them when it next
//! garbage-collects state of pods that are not running, before the next admission.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Container, Pod, ResourceRequirements};
use allot_cpumanager::checkpoint::{self, CpuManagerCheckpoint};
use allot_cpumanager::policy_none::NonePolicy;
use allot_cpumanager::policy_static::{
    ContainerView, CpuQuantity, PodView, PolicyError, StaticPolicy, guaranteed_cpus,
};
use allot_cpumanager::state::CpuManagerState;
use allot_kubelet_config::{
    CpuManagerPolicy, CpuReservation, KubeletConfiguration, ManagerConfig, MemoryManagerPolicy,
    ValidateOptions,
};
use allot_memorymanager::{
    ContainerResources, HugePages, MemoryState, NumaNodeInfo, PodResources, SystemReserved,
};
use allot_quantity::Quantity;
use allot_topology::{CpuSet, CpuTopology, NodeTopology};
use allot_topologymanager::{
    Admission, HintProvider, ProviderHints, Rejection, TopologyHint, TopologyManager,
};
use serde::Serialize;

use crate::KubeletError;
use crate::devices::{ContainerKind, DeviceManager, DeviceShortage};
use crate::metrics::{AssignmentType, Metrics, Source};
use crate::qos::{QosClass, compute_pod_qos};

/// The reason given when pod-level exclusive slices leave nothing for the pod's shared pool:
/// upstream's `admission.ErrorReasonEmptyPodSharedPool` (pkg/kubelet/cm/admission), returned by
/// the CPU and Memory Managers' `AllocatePod` with the message of their
/// `validatePodScopeResources`.
pub const EMPTY_POD_SHARED_POOL: &str = "EmptyPodSharedPoolError";

/// What one container was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerResult {
    /// The container name.
    pub name: String,
    /// The CPUs it may run on (Linux list format).
    pub cpus: String,
    /// Whether those CPUs are exclusive to it.
    pub exclusive: bool,
    /// NUMA nodes of its pinned memory (empty: not pinned).
    #[serde(rename = "memoryNUMANodes")]
    pub memory_numa_nodes: Vec<usize>,
    /// Device-plugin devices by resource name.
    pub devices: BTreeMap<String, Vec<String>>,
    /// Whether its CPU usage is bounded by CFS quota.
    pub cfs_quota: bool,
}

/// The admission decision for one pod.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PodAdmission {
    /// `namespace/name`.
    pub pod: String,
    /// Whether the pod was admitted.
    pub admitted: bool,
    /// The kubelet's reason on rejection (`SMTAlignmentError`, `TopologyAffinityError`, ...).
    pub reason: Option<String>,
    /// The kubelet's message on rejection.
    pub message: Option<String>,
    /// A longer explanation of a rejection, where allot can say more than the kubelet.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    /// Per container (init containers first), for admitted pods.
    pub containers: Vec<ContainerResult>,
}

/// The CPU Manager policy in force.
#[derive(Debug, Clone)]
pub enum CpuPolicy {
    /// `none`.
    None(NonePolicy),
    /// `static`.
    Static(Box<StaticPolicy>),
}

impl CpuPolicy {
    /// The policy name.
    pub fn name(&self) -> &'static str {
        match self {
            CpuPolicy::None(p) => p.name(),
            CpuPolicy::Static(p) => p.name(),
        }
    }
}

/// A node: its topology, configuration, managers and their state.
#[derive(Debug)]
pub struct Node {
    /// The machine.
    pub topology: NodeTopology,
    /// The checked configuration.
    pub config: ManagerConfig,
    /// The CPU policy.
    pub cpu: CpuPolicy,
    /// The CPU Manager state.
    pub cpu_state: CpuManagerState,
    /// The Memory Manager policy.
    pub memory: allot_memorymanager::Policy,
    /// The Memory Manager state.
    pub memory_state: MemoryState,
    /// The Device Manager.
    pub devices: DeviceManager,
    /// The Topology Manager.
    pub topology_manager: TopologyManager,
    /// Metrics.
    pub metrics: Metrics,
    /// Admitted pods in order: UID and name.
    pub admitted: Vec<(String, String)>,
}

/// Where the checkpoints a node starts from came from, for start-up error messages.
#[derive(Debug, Clone, Default)]
pub struct Checkpoints {
    /// `cpu_manager_state` bytes, if any.
    pub cpu: Option<Vec<u8>>,
    /// Where they came from (a path, or `NodeState.cpuManager`).
    pub cpu_origin: String,
    /// `memory_manager_state` bytes, if any.
    pub memory: Option<Vec<u8>>,
    /// Where they came from.
    pub memory_origin: String,
}

fn bytes_of(q: &Quantity) -> u64 {
    u64::try_from(q.value()).unwrap_or(0)
}

impl Node {
    /// Starts a node as the kubelet starts its managers: checks the configuration, builds the
    /// policies, restores the checkpoints and validates them against the machine.
    pub fn start(
        topology: NodeTopology,
        config: &KubeletConfiguration,
        relax: ValidateOptions,
        checkpoints: &Checkpoints,
    ) -> Result<Node, KubeletError> {
        let cfg = config.validate_with(relax)?;
        let cpu_topology =
            CpuTopology::new(&topology).map_err(|e| KubeletError::Scenario(e.to_string()))?;
        let cpu = match cfg.cpu_manager_policy {
            CpuManagerPolicy::None => CpuPolicy::None(NonePolicy::new(cpu_topology.cpus().clone())),
            CpuManagerPolicy::Static => {
                let (num, reserved) = match &cfg.reserved_cpus {
                    CpuReservation::Explicit(set) => {
                        (set.len(), set.iter().copied().collect::<CpuSet>())
                    }
                    CpuReservation::Count(n) => (*n as usize, CpuSet::new()),
                };
                let single = cfg.topology_manager_policy
                    == allot_kubelet_config::TopologyManagerPolicy::SingleNumaNode;
                CpuPolicy::Static(Box::new(
                    StaticPolicy::new(
                        cpu_topology,
                        num,
                        &reserved,
                        cfg.cpu_manager_options,
                        single,
                    )
                    .map_err(|e| KubeletError::Start {
                        manager: "CPU",
                        message: e.to_string(),
                        action: "fix the CPU Manager configuration".into(),
                    })?,
                ))
            }
        };

        let cpu_action = |origin: &str| {
            if origin.starts_with("NodeState.") {
                format!(
                    "the kubelet would refuse to start from this state; fix {origin} in the scenario (on a real node: please drain this node and delete the CPU manager checkpoint file before restarting Kubelet)"
                )
            } else {
                format!(
                    "please drain this node and delete the CPU manager checkpoint file \"{origin}\" before restarting Kubelet"
                )
            }
        };
        // As the kubelet: pod entries are restored only with the PodLevelResourceManagers gate;
        // a hand-written NodeState without any checksum is taken as written.
        let pod_level = cfg.feature_gates.enabled("PodLevelResourceManagers");
        let cpu_read = checkpoint::ReadOptions {
            pod_level_resource_managers: pod_level,
            trust_missing_checksum: checkpoints.cpu_origin.starts_with("NodeState."),
        };
        let mut cpu_state = match &checkpoints.cpu {
            Some(bytes) => checkpoint::decode_with(bytes, cpu.name(), cpu_read).map_err(|e| {
                KubeletError::Start {
                    manager: "CPU",
                    message: format!("could not restore state from checkpoint: {e}"),
                    action: cpu_action(&checkpoints.cpu_origin),
                }
            })?,
            None => CpuManagerState::default(),
        };
        if let CpuPolicy::Static(p) = &cpu {
            p.start(&mut cpu_state).map_err(|e| KubeletError::Start {
                manager: "CPU",
                message: e.to_string(),
                action: cpu_action(&checkpoints.cpu_origin),
            })?;
        }

        let machine: Vec<NumaNodeInfo> = topology
            .numa_nodes
            .iter()
            .map(|n| match &n.machine_info {
                Some(mi) => NumaNodeInfo {
                    id: n.id as usize,
                    memory: mi.memory,
                    hugepages: mi
                        .huge_pages
                        .iter()
                        .map(|h| HugePages {
                            page_size_kib: h.page_size,
                            num_pages: h.num_pages,
                        })
                        .collect(),
                },
                None => NumaNodeInfo {
                    id: n.id as usize,
                    memory: n.memory.map_or(0, |m| m.bytes()),
                    hugepages: n
                        .hugepages
                        .iter()
                        .filter_map(|(name, total)| {
                            let size = Quantity::parse(name.strip_prefix("hugepages-")?).ok()?;
                            let page = bytes_of(&size);
                            (page >= 1024).then(|| HugePages {
                                page_size_kib: page / 1024,
                                num_pages: total.bytes() / page,
                            })
                        })
                        .collect(),
                },
            })
            .collect();
        let memory = match cfg.memory_manager_policy {
            MemoryManagerPolicy::None => allot_memorymanager::Policy::None,
            MemoryManagerPolicy::Static => {
                let reserved: SystemReserved = cfg
                    .reserved_memory
                    .iter()
                    .map(|(node, limits)| {
                        (
                            usize::try_from(*node).unwrap_or(usize::MAX),
                            limits
                                .iter()
                                .map(|(name, q)| (name.clone(), bytes_of(q)))
                                .collect(),
                        )
                    })
                    .collect();
                allot_memorymanager::Policy::Static(
                    allot_memorymanager::StaticPolicy::new(machine, reserved).map_err(|e| {
                        KubeletError::Start {
                            manager: "memory",
                            message: e.to_string(),
                            action: "fix reservedMemory in the kubelet configuration".into(),
                        }
                    })?,
                )
            }
        };
        let mem_action = |origin: &str| {
            if origin.starts_with("NodeState.") {
                format!(
                    "the kubelet would refuse to start from this state; fix {origin} in the scenario (on a real node: please drain this node and delete the memory manager checkpoint file before restarting Kubelet)"
                )
            } else {
                format!(
                    "please drain this node and delete the memory manager checkpoint file \"{origin}\" before restarting Kubelet"
                )
            }
        };
        let mut memory_state = match &checkpoints.memory {
            Some(bytes) => {
                let text = String::from_utf8_lossy(bytes);
                let read = allot_memorymanager::ReadOptions {
                    pod_level_resource_managers: pod_level,
                    trust_missing_checksum: checkpoints.memory_origin.starts_with("NodeState."),
                };
                allot_memorymanager::Checkpoint::from_json_with(&text, memory.name(), read)
                    .map_err(|e| KubeletError::Start {
                        manager: "memory",
                        message: format!("could not restore state from checkpoint: {e}"),
                        action: mem_action(&checkpoints.memory_origin),
                    })?
                    .into_state()
            }
            None => MemoryState::default(),
        };
        memory
            .start(&mut memory_state)
            .map_err(|e| KubeletError::Start {
                manager: "memory",
                message: e.to_string(),
                action: mem_action(&checkpoints.memory_origin),
            })?;

        let numa_ids: Vec<u32> = {
            let mut ids: BTreeSet<u32> = topology.cpus.iter().map(|c| c.numa).collect();
            ids.extend(topology.numa_nodes.iter().map(|n| n.id));
            ids.into_iter().collect()
        };
        let devices = DeviceManager::new(&topology.devices, &numa_ids);
        let numa_usize: Vec<usize> = numa_ids.iter().map(|&n| n as usize).collect();
        let distances: BTreeMap<usize, Vec<u64>> = topology
            .numa_nodes
            .iter()
            .filter(|n| !n.distances.is_empty())
            .map(|n| {
                let mut by_node: Vec<(u32, u32)> =
                    n.distances.iter().map(|d| (d.node, d.distance)).collect();
                by_node.sort_unstable();
                (
                    n.id as usize,
                    by_node.into_iter().map(|(_, d)| u64::from(d)).collect(),
                )
            })
            .collect();
        let tm_policy = config
            .topology_manager_policy
            .parse()
            .map_err(|e: allot_topologymanager::Error| KubeletError::Scenario(e.to_string()))?;
        let tm_scope = config
            .topology_manager_scope
            .parse()
            .map_err(|e: allot_topologymanager::Error| KubeletError::Scenario(e.to_string()))?;
        let topology_manager = TopologyManager::new(
            tm_policy,
            tm_scope,
            &config.topology_manager_policy_options,
            &numa_usize,
            (!distances.is_empty()).then_some(&distances),
        )
        .map_err(|e| KubeletError::Start {
            manager: "topology",
            message: e.to_string(),
            action: "fix the Topology Manager configuration".into(),
        })?;

        Ok(Node {
            topology,
            config: cfg,
            cpu,
            cpu_state,
            memory,
            memory_state,
            devices,
            topology_manager,
            metrics: Metrics::new(),
            admitted: Vec::new(),
        })
    }

    /// The `cpu_manager_state` checkpoint of the current state.
    pub fn cpu_checkpoint(&self) -> CpuManagerCheckpoint {
        CpuManagerCheckpoint::from_state(self.cpu.name(), &self.cpu_state)
    }

    /// The `memory_manager_state` checkpoint of the current state.
    pub fn memory_checkpoint(&self) -> allot_memorymanager::Checkpoint {
        allot_memorymanager::Checkpoint::new(self.memory.name(), &self.memory_state)
    }

    fn gate(&self, name: &str) -> bool {
        self.config.feature_gates.enabled(name)
    }

    /// Admits one pod.
    pub fn admit(&mut self, pod: &Pod) -> PodAdmission {
        let name = format!("{}/{}", pod.metadata.namespace, pod.metadata.name);
        let uid = if pod.metadata.uid.is_empty() {
            name.clone()
        } else {
            pod.metadata.uid.clone()
        };
        let plan = self.plan(pod, &uid);
        let reject = |reason: &str, message: String, explanation: Option<String>| PodAdmission {
            pod: name.clone(),
            admitted: false,
            reason: Some(reason.to_string()),
            message: Some(message),
            explanation,
            containers: Vec::new(),
        };
        let names: Vec<String> = plan
            .cpu
            .init_containers
            .iter()
            .chain(&plan.cpu.containers)
            .map(|c| c.name.clone())
            .collect();
        let containers: Vec<(&str, &str)> =
            names.iter().map(|n| (n.as_str(), n.as_str())).collect();

        let outcome = {
            let mut dev = DeviceProvider {
                devices: &mut self.devices,
            };
            let mut cpu = CpuProvider {
                policy: &mut self.cpu,
                state: &mut self.cpu_state,
                metrics: &self.metrics,
            };
            let mut mem = MemoryProvider {
                policy: &mut self.memory,
                state: &mut self.memory_state,
                metrics: &self.metrics,
            };
            let mut providers: [&mut dyn HintProvider<Plan, str, Error = AllocError>; 3] =
                [&mut dev, &mut cpu, &mut mem];
            self.topology_manager
                .admit(&uid, &plan, &containers, &mut providers)
        };
        match outcome {
            Admission::Admitted => {}
            Admission::Rejected(rejection) => {
                self.release(&plan, &names);
                return match rejection {
                    Rejection::TopologyAffinity(err) => {
                        reject(err.reason(), err.to_string(), Some(err.explain()))
                    }
                    Rejection::Allocation { container, error } => {
                        let (reason, message) = error.admission();
                        reject(
                            reason,
                            message,
                            Some(format!("container {container:?}: {error}")),
                        )
                    }
                };
            }
        }
        self.admitted.push((uid.clone(), name.clone()));
        let results = names
            .iter()
            .map(|n| self.container_result(&plan, n))
            .collect();
        PodAdmission {
            pod: name,
            admitted: true,
            reason: None,
            message: None,
            explanation: None,
            containers: results,
        }
    }

    /// Removes an admitted pod, as the kubelet does once its containers are gone: exclusive
    /// CPUs (or the pod's pool) go back to the shared pool, pinned memory (or the pod's memory
    /// budget, with its last container) back to its NUMA nodes, devices back to the free set.
    /// `containers` are the pod's container names (init containers first); unknown names are
    /// ignored.
    pub fn remove_pod(&mut self, uid: &str, containers: &[String]) {
        if let CpuPolicy::Static(p) = &mut self.cpu {
            if self.cpu_state.pod_pools.contains_key(uid) {
                p.release_pod_pool(&mut self.cpu_state, uid);
            } else {
                for n in containers {
                    p.remove_container(&mut self.cpu_state, uid, n);
                }
            }
        }
        for n in containers {
            self.memory.remove_container(&mut self.memory_state, uid, n);
            self.devices.remove_container(uid, n);
        }
        self.topology_manager.remove_pod(uid);
        self.admitted.retain(|(u, _)| u != uid);
    }

    fn release(&mut self, plan: &Plan, names: &[String]) {
        let uid = &plan.cpu.uid;
        if let CpuPolicy::Static(p) = &mut self.cpu {
            if plan.pod_level.is_some() {
                p.release_pod_pool(&mut self.cpu_state, uid);
            } else {
                for n in names {
                    p.remove_container(&mut self.cpu_state, uid, n);
                }
            }
        }
        for n in names {
            self.memory.remove_container(&mut self.memory_state, uid, n);
            self.devices.remove_container(uid, n);
            self.topology_manager.remove_container(uid, n);
        }
    }

    fn container_result(&self, plan: &Plan, name: &str) -> ContainerResult {
        let uid = &plan.cpu.uid;
        let exclusive = self.cpu_state.cpu_set(uid, name).cloned();
        let limits_cpu = plan.cpu_limit.get(name).copied().unwrap_or(false);
        let (cpus, is_exclusive, cfs) = match (&self.cpu, exclusive) {
            (CpuPolicy::None(p), _) => (p.cpus_for_container().clone(), false, limits_cpu),
            (CpuPolicy::Static(_), Some(set)) => (set, true, false),
            (CpuPolicy::Static(_), None) => match self.cpu_state.pod_pools.get(uid) {
                Some(pool) => (self.pod_shared_pool(plan, pool), false, true),
                None => (self.cpu_state.default_cpu_set.clone(), false, limits_cpu),
            },
        };
        let mut numa: BTreeSet<usize> = BTreeSet::new();
        if let Some(blocks) = self.memory_state.blocks(uid, name) {
            for b in blocks {
                numa.extend(b.numa_affinity.iter().copied());
            }
        }
        ContainerResult {
            name: name.to_string(),
            cpus: cpus.to_string(),
            exclusive: is_exclusive,
            memory_numa_nodes: numa.into_iter().collect(),
            devices: self.devices.container_devices(uid, name),
            cfs_quota: cfs,
        }
    }

    /// A pod's shared pool: its pool minus the slices its long-running containers hold.
    fn pod_shared_pool(&self, plan: &Plan, pool: &CpuSet) -> CpuSet {
        let mut shared = pool.clone();
        for c in plan
            .cpu
            .containers
            .iter()
            .chain(plan.cpu.init_containers.iter().filter(|c| c.restartable))
        {
            if let Some(slice) = self.cpu_state.cpu_set(&plan.cpu.uid, &c.name) {
                shared.difference_with(slice);
            }
        }
        shared
    }

    /// Turns a pod into what the managers read.
    fn plan(&self, pod: &Pod, uid: &str) -> Plan {
        let pod_level_gate = self.gate("PodLevelResources");
        let qos = compute_pod_qos(pod, pod_level_gate);
        let guaranteed = qos == QosClass::Guaranteed;
        let pod_resources = pod.spec.resources.as_ref().filter(|_| pod_level_gate);
        let managers_gate = pod_level_gate && self.gate("PodLevelResourceManagers");
        let pod_level_managed = managers_gate
            && pod_resources.is_some()
            && guaranteed
            && matches!(self.cpu, CpuPolicy::Static(_));
        let empty = ResourceRequirements::default();
        let view = |c: &Container| -> ContainerView {
            let res = c.resources.as_ref().unwrap_or(&empty);
            let mut cpu_request = res.requests.get("cpu").map(|q| CpuQuantity {
                value: q.value(),
                milli: q.milli_value(),
            });
            // With pod-level resource managers, only containers that are Guaranteed on their own
            // get exclusive CPUs.
            if pod_level_managed && !container_guaranteed(res) {
                cpu_request = None;
            }
            ContainerView {
                name: c.name.clone(),
                cpu_request,
                restartable: c.restart_policy.as_deref() == Some("Always"),
            }
        };
        let cpu = PodView {
            uid: uid.to_string(),
            guaranteed,
            init_containers: pod.spec.init_containers.iter().map(view).collect(),
            containers: pod.spec.containers.iter().map(view).collect(),
        };
        // With pod-level resource managers, a container of a pod with `.spec.resources` has
        // exclusive memory only when it is Guaranteed on its own (upstream
        // `getContainerRequestedResources`); the others get no requests.
        let pod_level_memory = managers_gate && pod_resources.is_some();
        let none = BTreeMap::new();
        let mem_container = |c: &Container| -> ContainerResources {
            let res = c.resources.as_ref().unwrap_or(&empty);
            let requests = if pod_level_memory && !container_guaranteed(res) {
                &none
            } else {
                &res.requests
            };
            ContainerResources::from_requests(
                &c.name,
                c.restart_policy.as_deref() == Some("Always"),
                requests,
            )
            .unwrap_or_else(|_| ContainerResources {
                name: c.name.clone(),
                ..ContainerResources::default()
            })
        };
        // Pod scope: the Memory Manager aligns and allocates the pod's `.spec.resources` memory
        // budget at once (upstream `AllocatePod`). Requests fall back to limits, as API
        // defaulting would have set them.
        let memory_budget = (pod_level_memory
            && guaranteed
            && self.topology_manager.scope() == allot_topologymanager::Scope::Pod)
            .then(|| {
                let mut requests = pod_resources.map(|r| r.limits.clone()).unwrap_or_default();
                if let Some(r) = pod_resources {
                    requests.extend(r.requests.iter().map(|(k, v)| (k.clone(), v.clone())));
                }
                // Upstream logs a quantity it cannot represent and leaves the pod unmanaged.
                allot_memorymanager::pod_budget(&requests).unwrap_or_default()
            });
        let memory = PodResources {
            uid: uid.to_string(),
            guaranteed,
            // Without the PodLevelResourceManagers gate the Static policy neither hints nor
            // allocates for such pods.
            pod_level_resources: pod_resources.is_some() && !managers_gate,
            init_containers: pod.spec.init_containers.iter().map(mem_container).collect(),
            containers: pod.spec.containers.iter().map(mem_container).collect(),
        };
        let mut devices = BTreeMap::new();
        let mut cpu_limit = BTreeMap::new();
        let pod_cpu_limit =
            pod_resources.is_some_and(|r| r.limits.get("cpu").is_some_and(|q| q.sign() > 0));
        for c in pod.spec.init_containers.iter().chain(&pod.spec.containers) {
            let res = c.resources.as_ref().unwrap_or(&empty);
            let mut want = BTreeMap::new();
            for (name, q) in res.limits.iter().chain(&res.requests) {
                if self.devices.manages(name) {
                    want.insert(name.clone(), usize::try_from(q.value()).unwrap_or(0));
                }
            }
            devices.insert(c.name.clone(), want);
            cpu_limit.insert(
                c.name.clone(),
                pod_cpu_limit || res.limits.get("cpu").is_some_and(|q| q.sign() > 0),
            );
        }
        let pod_level = pod_level_managed.then(|| {
            let budget = pod_resources
                .and_then(|r| r.requests.get("cpu").or_else(|| r.limits.get("cpu")))
                .map(|q| CpuQuantity {
                    value: q.value(),
                    milli: q.milli_value(),
                });
            PodLevel::new(&cpu, budget, self.topology_manager.scope())
        });
        Plan {
            cpu,
            memory,
            memory_budget,
            pod_level_memory,
            devices,
            cpu_limit,
            pod_level: pod_level.flatten(),
        }
    }
}

/// Requests equal limits for CPU and memory, both set (the container is Guaranteed on its own).
fn container_guaranteed(res: &ResourceRequirements) -> bool {
    ["cpu", "memory"]
        .iter()
        .all(|r| match (res.requests.get(*r), res.limits.get(*r)) {
            (Some(a), Some(b)) => a == b && a.sign() > 0,
            (None, Some(b)) => b.sign() > 0,
            _ => false,
        })
}

/// A pod as the managers read it.
pub struct Plan {
    cpu: PodView,
    memory: PodResources,
    /// The pod's memory budget when the Memory Manager allocates it at once (pod scope with
    /// pod-level resources); empty when the pod sets no memory.
    memory_budget: Option<BTreeMap<String, u64>>,
    /// Whether the pod sets `.spec.resources` with the PodLevelResourceManagers gate on.
    pod_level_memory: bool,
    devices: BTreeMap<String, BTreeMap<String, usize>>,
    cpu_limit: BTreeMap<String, bool>,
    pod_level: Option<PodLevel>,
}

/// A pod-scope pod-level CPU pool: the pod's whole CPU budget, NUMA-aligned once, with
/// exclusive slices for Guaranteed containers and a shared pool for the others.
struct PodLevel {
    budget: usize,
    /// Why the exclusive slices do not fit the budget (upstream `validatePodScopeResources`),
    /// if they do not.
    invalid: Option<String>,
}

impl PodLevel {
    fn new(
        pod: &PodView,
        budget: Option<CpuQuantity>,
        scope: allot_topologymanager::Scope,
    ) -> Option<Self> {
        if scope != allot_topologymanager::Scope::Pod {
            return None;
        }
        let q = budget?;
        if q.value <= 0 || q.value.saturating_mul(1000) != q.milli {
            return None;
        }
        let budget = usize::try_from(q.value).ok()?;
        Some(PodLevel {
            budget,
            invalid: validate_pod_scope_cpus(pod, budget),
        })
    }
}

/// Upstream CPU `validatePodScopeResources`, message for message: every exclusive regular init
/// container must fit in what the sidecars started before it leave, a regular init container
/// that shares needs something left, and the long-running containers that share need a
/// non-empty pod shared pool. Exclusive slices that exceed the budget when nobody shares are
/// not refused here (upstream neither): the slice pick fails at allocation.
fn validate_pod_scope_cpus(pod: &PodView, total: usize) -> Option<String> {
    let mut long_running = 0usize;
    let mut has_shared = false;
    for c in &pod.init_containers {
        let n = guaranteed_cpus(pod, c);
        if !c.restartable {
            if n > 0 {
                let pool = total.saturating_sub(long_running);
                if n > pool {
                    return Some(format!(
                        "pod rejected, largest exclusive init container requests {n} cpus, but only {pool} available"
                    ));
                }
            } else if long_running >= total {
                return Some(
                    "pod rejected, pod has shared init containers but no cpus available for them"
                        .to_string(),
                );
            }
            continue;
        }
        if n == 0 {
            has_shared = true;
        } else {
            long_running += n;
        }
    }
    for c in &pod.containers {
        let n = guaranteed_cpus(pod, c);
        if n == 0 {
            has_shared = true;
        } else {
            long_running += n;
        }
    }
    (has_shared && long_running >= total).then(|| {
        "pod rejected, sum of exclusive container cpu requests equals pod budget, leaving no cpus for shared containers"
            .to_string()
    })
}

/// Why a manager could not allocate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AllocError {
    /// The CPU Manager.
    Cpu(PolicyError),
    /// The Memory Manager.
    Memory(String),
    /// The Device Manager.
    Device(DeviceShortage),
    /// Pod-level resources (pod scope): the exclusive slices leave an empty pod shared pool;
    /// the message is the CPU or Memory Manager's.
    EmptyPodSharedPool(String),
}

impl std::fmt::Display for AllocError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AllocError::Cpu(e) => write!(f, "{e}"),
            AllocError::Memory(e) => write!(f, "{e}"),
            AllocError::EmptyPodSharedPool(m) => write!(f, "{m}"),
            AllocError::Device(d) => write!(
                f,
                "requested number of devices unavailable for {}. Requested: {}, Available: {}",
                d.resource, d.requested, d.available
            ),
        }
    }
}

impl AllocError {
    /// The kubelet's admission reason and message.
    pub fn admission(&self) -> (&'static str, String) {
        match self {
            AllocError::Cpu(e) => (e.admission_reason(), e.admission_message()),
            AllocError::EmptyPodSharedPool(m) => (EMPTY_POD_SHARED_POOL, m.clone()),
            other => (
                "UnexpectedAdmissionError",
                format!("Allocate failed due to {other}, which is unexpected"),
            ),
        }
    }
}

struct DeviceProvider<'a> {
    devices: &'a mut DeviceManager,
}

impl HintProvider<Plan, str> for DeviceProvider<'_> {
    type Error = AllocError;

    fn get_topology_hints(&self, pod: &Plan, container: &str) -> ProviderHints {
        let empty = BTreeMap::new();
        let req = pod.devices.get(container).unwrap_or(&empty);
        self.devices
            .get_topology_hints(&pod.cpu.uid, container, req)
    }

    fn get_pod_topology_hints(&self, pod: &Plan) -> ProviderHints {
        // Upstream sums the containers' requests (init containers by their peak).
        let mut total: BTreeMap<String, usize> = BTreeMap::new();
        for c in &pod.cpu.containers {
            for (r, n) in pod.devices.get(&c.name).into_iter().flatten() {
                *total.entry(r.clone()).or_default() += n;
            }
        }
        for c in &pod.cpu.init_containers {
            for (r, n) in pod.devices.get(&c.name).into_iter().flatten() {
                let slot = total.entry(r.clone()).or_default();
                *slot = (*slot).max(*n);
            }
        }
        self.devices
            .get_topology_hints(&pod.cpu.uid, "\u{0}pod", &total)
    }

    fn allocate(
        &mut self,
        pod: &Plan,
        container: &str,
        affinity: &TopologyHint,
    ) -> Result<(), AllocError> {
        let empty = BTreeMap::new();
        let req = pod.devices.get(container).unwrap_or(&empty);
        let kind = match pod.cpu.init_containers.iter().find(|c| c.name == container) {
            Some(c) if c.restartable => ContainerKind::Sidecar,
            Some(_) => ContainerKind::Init,
            None => ContainerKind::App,
        };
        self.devices
            .allocate(
                &pod.cpu.uid,
                container,
                kind,
                req,
                affinity.affinity.as_ref(),
            )
            .map(|_| ())
            .map_err(AllocError::Device)
    }
}

struct CpuProvider<'a> {
    policy: &'a mut CpuPolicy,
    state: &'a mut CpuManagerState,
    metrics: &'a Metrics,
}

impl HintProvider<Plan, str> for CpuProvider<'_> {
    type Error = AllocError;

    fn get_topology_hints(&self, pod: &Plan, container: &str) -> ProviderHints {
        match (&*self.policy, pod.cpu.container(container)) {
            (CpuPolicy::Static(p), Some(c)) => p.get_topology_hints(self.state, &pod.cpu, c),
            _ => ProviderHints::new(),
        }
    }

    fn get_pod_topology_hints(&self, pod: &Plan) -> ProviderHints {
        let CpuPolicy::Static(p) = &*self.policy else {
            return ProviderHints::new();
        };
        if let Some(pl) = &pod.pod_level {
            // As upstream: an empty pod shared pool yields no possible affinity, which every
            // policy but best-effort (and none) refuses; `allocate` then reports the reason.
            if pl.invalid.is_some() {
                return ProviderHints::from([("cpu".to_string(), Some(Vec::new()))]);
            }
            if let Some(pool) = self.state.pod_pools.get(&pod.cpu.uid) {
                let hints = p.generate_cpu_topology_hints(pool, &CpuSet::new(), pl.budget);
                return ProviderHints::from([("cpu".to_string(), Some(hints))]);
            }
            let available = p.available_cpus(self.state);
            let hints = p.generate_cpu_topology_hints(&available, &CpuSet::new(), pl.budget);
            return ProviderHints::from([("cpu".to_string(), Some(hints))]);
        }
        p.get_pod_topology_hints(self.state, &pod.cpu)
    }

    fn allocate(
        &mut self,
        pod: &Plan,
        container: &str,
        affinity: &TopologyHint,
    ) -> Result<(), AllocError> {
        let CpuPolicy::Static(p) = &mut *self.policy else {
            return Ok(());
        };
        let Some(c) = pod.cpu.container(container) else {
            return Ok(());
        };
        let n = guaranteed_cpus(&pod.cpu, c);
        if let Some(pl) = &pod.pod_level {
            let first = !self.state.pod_pools.contains_key(&pod.cpu.uid);
            if let (true, Some(message)) = (first, &pl.invalid) {
                self.metrics.allocation(Source::Pod, false);
                return Err(AllocError::EmptyPodSharedPool(message.clone()));
            }
            let pool = p
                .allocate_pod_pool(
                    self.state,
                    &pod.cpu.uid,
                    pl.budget,
                    affinity.affinity.as_ref(),
                )
                .map_err(AllocError::Cpu);
            if first {
                self.metrics.cpu_pinning(pool.is_ok());
                self.metrics.allocation(Source::Node, pool.is_ok());
            }
            let pool = pool?;
            if n == 0 {
                self.metrics.assignment(AssignmentType::PodShared);
                return Ok(());
            }
            // Slices held by containers still running: apps, sidecars, and init containers
            // that have not finished yet (none, when this container starts).
            let mut held = CpuSet::new();
            for other in pod
                .cpu
                .containers
                .iter()
                .chain(pod.cpu.init_containers.iter().filter(|o| o.restartable))
            {
                if other.name != c.name
                    && let Some(s) = self.state.cpu_set(&pod.cpu.uid, &other.name)
                {
                    held.union_with(s);
                }
            }
            let free = pool.difference(&held);
            let slice = p.allocate_pod_slice(self.state, &pod.cpu, &c.name, n, &free);
            self.metrics.cpu_pinning(slice.is_ok());
            self.metrics.allocation(Source::Pod, slice.is_ok());
            slice.map_err(AllocError::Cpu)?;
            self.metrics.assignment(AssignmentType::PodExclusive);
            return Ok(());
        }
        let result = p.allocate(self.state, &pod.cpu, c, affinity.affinity.as_ref());
        if n > 0 {
            self.metrics.cpu_pinning(result.is_ok());
            self.metrics.allocation(Source::Node, result.is_ok());
            if result.is_ok() {
                self.metrics.assignment(AssignmentType::NodeExclusive);
            }
        }
        result.map(|_| ()).map_err(AllocError::Cpu)
    }
}

struct MemoryProvider<'a> {
    policy: &'a mut allot_memorymanager::Policy,
    state: &'a mut MemoryState,
    metrics: &'a Metrics,
}

impl HintProvider<Plan, str> for MemoryProvider<'_> {
    type Error = AllocError;

    fn get_topology_hints(&self, pod: &Plan, container: &str) -> ProviderHints {
        pod.memory
            .all_containers()
            .find(|c| c.name == container)
            .and_then(|c| self.policy.get_topology_hints(self.state, &pod.memory, c))
            .unwrap_or_default()
    }

    fn get_pod_topology_hints(&self, pod: &Plan) -> ProviderHints {
        if let Some(budget) = &pod.memory_budget {
            return match &*self.policy {
                allot_memorymanager::Policy::Static(p) => p
                    .get_pod_level_topology_hints(self.state, &pod.memory, budget)
                    .unwrap_or_default(),
                allot_memorymanager::Policy::None => ProviderHints::new(),
            };
        }
        self.policy
            .get_pod_topology_hints(self.state, &pod.memory)
            .unwrap_or_default()
    }

    fn allocate(
        &mut self,
        pod: &Plan,
        container: &str,
        affinity: &TopologyHint,
    ) -> Result<(), AllocError> {
        if let Some(budget) = &pod.memory_budget {
            return self.allocate_pod(pod, budget, affinity);
        }
        let Some(c) = pod.memory.all_containers().find(|c| c.name == container) else {
            return Ok(());
        };
        // A container of a pod-level pod that is not Guaranteed on its own has nothing to pin:
        // it runs on the node's memory, as the spec describes for container scope. The upstream
        // code read for this has no such early return: it records empty blocks and, given a
        // merged affinity of several NUMA nodes one of which holds a single-node allocation,
        // would fail with "preferred hint violates NUMA node allocation"; we follow the spec.
        if pod.pod_level_memory && c.requests.is_empty() {
            return Ok(());
        }
        let pinned = matches!(self.policy, allot_memorymanager::Policy::Static(_))
            && pod.memory.guaranteed
            && !pod.memory.pod_level_resources;
        let result = self.policy.allocate(self.state, &pod.memory, c, affinity);
        if pinned {
            self.metrics.memory_pinning(result.is_ok());
            self.metrics.allocation(Source::Node, result.is_ok());
        }
        result.map_err(|e| AllocError::Memory(e.to_string()))
    }
}

impl MemoryProvider<'_> {
    /// Pod scope with pod-level resources: the first container's allocation allocates the
    /// whole budget and partitions it among all containers (upstream `AllocatePod`); the
    /// others find their blocks in place.
    fn allocate_pod(
        &mut self,
        pod: &Plan,
        budget: &BTreeMap<String, u64>,
        affinity: &TopologyHint,
    ) -> Result<(), AllocError> {
        let allot_memorymanager::Policy::Static(p) = &mut *self.policy else {
            return Ok(());
        };
        if budget.is_empty() || self.state.pod_entries.contains_key(&pod.memory.uid) {
            return Ok(());
        }
        let result = p.allocate_pod(self.state, &pod.memory, budget, affinity);
        self.metrics.memory_pinning(result.is_ok());
        self.metrics.allocation(Source::Pod, result.is_ok());
        // Container assignments are counted once, by the CPU Manager: the metric has no
        // resource label here.
        match result {
            Ok(()) => Ok(()),
            Err(allot_memorymanager::Error::EmptyPodSharedPool { message }) => {
                Err(AllocError::EmptyPodSharedPool(message))
            }
            Err(e) => Err(AllocError::Memory(e.to_string())),
        }
    }
}

impl Plan {
    /// The pod's UID.
    pub fn uid(&self) -> &str {
        &self.cpu.uid
    }
}
