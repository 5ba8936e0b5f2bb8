//! The scheduler's view of the cluster, kept up to date from the store's event log.
//!
//! Everything here can be rebuilt from the store: the cache only saves the scheduler from
//! scanning every pod, slice and claim for every pod it places.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use allot_api::core::v1::{Namespace, Node, Pod};
use allot_api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice, SmolStr,
};
use allot_api::scheduling::v1beta1::PodGroup;
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::framework::{HostPort, PodInfo, host_ports};
use crate::resources::{Resources, node_allocatable, pod_non_zero_requests_with, pod_requests};

/// A pool: (driver, pool name), as allocation results name it (names of up to 23 bytes are
/// copied inline, without an allocation).
pub type PoolKey = (SmolStr, SmolStr);

/// What the scheduler knows about one node (upstream `NodeInfo`).
#[derive(Debug, Clone)]
pub struct NodeInfo {
    /// The node's name.
    pub name: String,
    /// The node's slot in the cache (stable while the node exists).
    pub slot: usize,
    /// The node object (shared with the store).
    pub node: Arc<Node>,
    /// Allocatable resources.
    pub allocatable: Resources,
    /// Sum of the requests of pods assigned to the node.
    pub requested: Resources,
    /// Sum of the scoring (non-zero) CPU and memory requests of pods assigned to the node.
    pub non_zero: (i64, i64),
    /// How many pods are assigned to the node.
    pub pod_count: i64,
    /// The pods assigned to the node, in the order they arrived.
    pub pods: Vec<Arc<PodInfo>>,
    /// The host ports those pods take (one entry per pod and port).
    pub host_ports: Vec<HostPort>,
    /// How many of those pods have pod affinity or anti-affinity terms.
    pub affinity_pods: usize,
    /// How many of those pods have required pod anti-affinity terms.
    pub anti_affinity_pods: usize,
    /// The node's images by name, with their sizes (`None` when it reports none).
    pub images: Option<Arc<HashMap<String, i64>>>,
    /// Slices published for this node (`spec.nodeName`), by name.
    pub slices: BTreeMap<String, Arc<ResourceSlice>>,
    /// The pools of those slices (indexes into [`Cache::pools`]).
    pub pool_ids: Vec<usize>,
    /// Changes whenever the slices the node sees (its own and the cluster's non-local ones)
    /// may have changed: plugins keep derived data per node and compare this.
    pub slices_generation: u64,
}

impl NodeInfo {
    /// A node without pods or slices.
    pub fn new(node: Arc<Node>) -> Self {
        NodeInfo {
            name: node.metadata.name.clone(),
            slot: 0,
            allocatable: node_allocatable(&node),
            images: node_images(&node),
            node,
            requested: Resources::default(),
            non_zero: (0, 0),
            pod_count: 0,
            pods: Vec::new(),
            host_ports: Vec::new(),
            affinity_pods: 0,
            anti_affinity_pods: 0,
            slices: BTreeMap::new(),
            pool_ids: Vec::new(),
            slices_generation: 0,
        }
    }

    /// A node with these totals and no pods (for tests).
    #[cfg(test)]
    pub(crate) fn for_test(
        node: Arc<Node>,
        allocatable: Resources,
        requested: Resources,
        pods: i64,
    ) -> Self {
        let mut info = NodeInfo::new(node);
        info.non_zero = (requested.milli_cpu, requested.memory);
        info.allocatable = allocatable;
        info.requested = requested;
        info.pod_count = pods;
        info
    }

    /// Counts a pod assigned to this node (upstream `NodeInfo.AddPod`).
    pub fn add_pod(&mut self, info: Arc<PodInfo>, requests: &Resources, non_zero: (i64, i64)) {
        self.requested.add(requests);
        self.non_zero.0 += non_zero.0;
        self.non_zero.1 += non_zero.1;
        self.pod_count += 1;
        self.host_ports.extend(host_ports(&info.pod));
        if info.has_affinity() {
            self.affinity_pods += 1;
        }
        if !info.required_anti_affinity_terms.is_empty() {
            self.anti_affinity_pods += 1;
        }
        self.pods.push(info);
    }

    /// Forgets a pod counted by [`NodeInfo::add_pod`] (upstream `NodeInfo.RemovePod`).
    pub fn remove_pod(&mut self, key: &ObjectKey, requests: &Resources, non_zero: (i64, i64)) {
        self.requested.sub(requests);
        self.non_zero.0 -= non_zero.0;
        self.non_zero.1 -= non_zero.1;
        self.pod_count -= 1;
        let Some(at) = self.pods.iter().position(|p| {
            p.pod.metadata.name == key.name && p.pod.metadata.namespace == key.namespace
        }) else {
            return;
        };
        let info = self.pods.remove(at);
        for port in host_ports(&info.pod) {
            if let Some(i) = self.host_ports.iter().position(|p| *p == port) {
                self.host_ports.remove(i);
            }
        }
        if info.has_affinity() {
            self.affinity_pods -= 1;
        }
        if !info.required_anti_affinity_terms.is_empty() {
            self.anti_affinity_pods -= 1;
        }
    }

    /// The node's labels.
    pub fn labels(&self) -> &BTreeMap<String, String> {
        &self.node.metadata.labels
    }
}

/// A node's images by name (`None` when it reports none).
fn node_images(node: &Node) -> Option<Arc<HashMap<String, i64>>> {
    if node.status.images.is_empty() {
        return None;
    }
    let mut out = HashMap::new();
    for image in &node.status.images {
        for name in &image.names {
            out.insert(name.clone(), image.size_bytes.unwrap_or(0));
        }
    }
    Some(Arc::new(out))
}

/// Devices of one pool and how many of them are allocated exclusively.
#[derive(Debug, Clone, Default)]
pub struct PoolState {
    /// Device counts and whether any device allows multiple allocations, per slice name.
    pub slices: BTreeMap<String, (usize, bool)>,
    total: usize,
    multi: usize,
    /// The claims version of the last change to `claims`.
    changed_at: u64,
    /// Allocated claims with at least one device of this pool (shared with the store).
    pub claims: BTreeMap<ObjectKey, Arc<ResourceClaim>>,
    /// Exclusively allocated devices of this pool, by name, with how many claims hold them.
    pub allocated: BTreeMap<SmolStr, usize>,
}

impl PoolState {
    /// Devices not allocated exclusively; `None` when a device allows multiple allocations
    /// (then counting devices says nothing).
    pub fn free(&self) -> Option<usize> {
        if self.multi > 0 {
            return None;
        }
        Some(self.total.saturating_sub(self.allocated.len()))
    }

    fn recount(&mut self) {
        self.total = self.slices.values().map(|(n, _)| n).sum();
        self.multi = self.slices.values().filter(|(_, m)| *m).count();
    }
}

/// The cache's log of pod list changes keeps at least this many.
const POD_LOG_KEEP: usize = 4096;

/// `NodeSummary::free` of a node whose free devices cannot be bounded cheaply.
pub const UNBOUNDED: usize = usize::MAX;

/// What the cheap filters and the resource score read of one node, kept in one contiguous
/// array by slot (see [`Cache::summaries`]) so that walking nodes for a plain pod does not
/// touch the scattered [`NodeInfo`]s. Derived from the node's state and its pools'
/// counts by [`NodeSummary::of`] whenever they change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// [`Cache::free_devices`], [`UNBOUNDED`] for `None` (and for a deleted node).
    pub free: usize,
    /// The node exists, is not `spec.unschedulable` and has no taints: NodeUnschedulable and
    /// TaintToleration pass and the taint score is 0 for every pod.
    pub plain: bool,
    /// Allocatable CPU (millicores), memory, ephemeral storage and pods.
    pub allocatable: [i64; 4],
    /// Requested CPU (millicores), memory and ephemeral storage of the pods assigned to it,
    /// and their number.
    pub requested: [i64; 4],
    /// The scoring (non-zero) CPU and memory requests of those pods.
    pub non_zero: (i64, i64),
    /// The node reports images.
    pub images: bool,
}

impl NodeSummary {
    /// The summary of a node (`None`: a deleted slot) with `free` devices.
    pub fn of(state: Option<&NodeInfo>, free: Option<usize>) -> Self {
        let Some(state) = state else {
            return NodeSummary {
                free: UNBOUNDED,
                ..NodeSummary::default()
            };
        };
        let (a, r) = (&state.allocatable, &state.requested);
        NodeSummary {
            free: free.unwrap_or(UNBOUNDED),
            plain: state.node.spec.unschedulable != Some(true) && state.node.spec.taints.is_empty(),
            allocatable: [a.milli_cpu, a.memory, a.ephemeral_storage, a.pods],
            requested: [r.milli_cpu, r.memory, r.ephemeral_storage, state.pod_count],
            non_zero: state.non_zero,
            images: state.images.is_some(),
        }
    }

    /// [`crate::filters::fits_plain`] on these numbers: a request without scalar resources
    /// (`[cpu, memory, ephemeral storage]`) fits beside the assigned pods.
    #[inline]
    pub fn fits(&self, request: &[i64; 3]) -> bool {
        let ok =
            |i: usize| request[i] <= 0 || request[i] <= self.allocatable[i] - self.requested[i];
        self.requested[3] < self.allocatable[3] && ok(0) && ok(1) && ok(2)
    }
}

/// A pod assigned to a node, as counted in that node's requests.
#[derive(Debug, Clone)]
struct Assigned {
    node: String,
    requests: Resources,
    non_zero: (i64, i64),
    info: Arc<PodInfo>,
}

/// Namespace -> label key -> label value -> the assigned pods carrying it.
type LabelIndex = HashMap<String, HashMap<String, HashMap<String, BTreeSet<ObjectKey>>>>;

/// The cluster as the scheduler sees it.
#[derive(Debug, Default)]
pub struct Cache {
    seen_rv: u64,
    /// Bumped by every change that can make a pod fit where it did not, or the other way
    /// round (anything but status writes on unscheduled pods).
    pub epoch: u64,
    claims_version: u64,
    nodes: Vec<Option<NodeInfo>>,
    node_index: BTreeMap<String, usize>,
    /// Node slots in name order, shared so that a scheduling cycle can walk it while it
    /// changes the cache (no copy per pod).
    order: Arc<[usize]>,
    order_dirty: bool,
    /// Slices not bound to one node (`allNodes`, `nodeSelector`, per-device node selection).
    pub global_slices: BTreeMap<String, Arc<ResourceSlice>>,
    pool_index: BTreeMap<PoolKey, usize>,
    /// Pools, indexed by `pool_index`.
    pools: Vec<PoolState>,
    /// Device classes, in name order.
    pub classes: Vec<DeviceClass>,
    /// DeviceTaintRules, in name order.
    pub taint_rules: Vec<DeviceTaintRule>,
    /// Namespaces, in name order.
    pub namespaces: Vec<Namespace>,
    /// The pod selectors of Services, ReplicationControllers, ReplicaSets and StatefulSets
    /// (for PodTopologySpread's system default constraints).
    pub workloads: Workloads,
    /// Pods waiting for the node preemption nominated for them, by node name (kept by the
    /// scheduler): filters count them on that node for pods of lower or equal priority
    /// (upstream `RunFilterPluginsWithNominatedPods`).
    pub nominated: BTreeMap<String, Vec<Arc<PodInfo>>>,
    orphans: BTreeMap<String, Arc<ResourceSlice>>,
    slice_home: BTreeMap<String, (PoolKey, Option<String>)>,
    claim_pools: BTreeMap<ObjectKey, Vec<(usize, SmolStr, bool)>>,
    assigned: BTreeMap<ObjectKey, Assigned>,
    /// Per slot, what the cheap filters read (brought up to date at the end of every sync).
    summaries: Vec<NodeSummary>,
    /// The node slots whose pools include each pool (by pool id; may name deleted slots).
    pool_nodes: Vec<Vec<usize>>,
    /// Slots whose summary is out of date (may repeat).
    dirty: Vec<usize>,
    /// Every summary is out of date.
    all_dirty: bool,
    /// Per rank in `order`, whether the node may have a free device (`free > 0` in its
    /// summary), 64 ranks to a word; valid after [`Cache::order`].
    free_bits: Vec<u64>,
    /// Per slot, its rank in `order` (`usize::MAX` for none).
    rank_of: Vec<usize>,
    /// `free_bits` and `rank_of` need rebuilding.
    bits_stale: bool,
    /// The last slices generation handed out (see [`NodeInfo::slices_generation`]).
    generation: u64,
    /// Assigned pods with pod affinity or anti-affinity terms, cluster-wide.
    affinity_pods: usize,
    /// Assigned pods with required pod anti-affinity terms, cluster-wide.
    anti_affinity_pods: usize,
    /// Per image name, how many nodes report it.
    image_nodes: HashMap<String, usize>,
    /// Pods that arrived unassigned since the scheduler last took them.
    new_pending: Vec<(ObjectKey, Arc<Pod>)>,
    /// PodGroups by (namespace, name).
    pod_groups: BTreeMap<(String, String), Arc<PodGroup>>,
    /// Per PodGroup (namespace, name), the pods naming it in `spec.schedulingGroup` that are
    /// neither terminal nor being deleted.
    group_members: BTreeMap<(String, String), BTreeSet<ObjectKey>>,
    /// Pods assumed on a node (counted there) before they are bound (upstream's assumed pods:
    /// a pod waiting at Permit).
    assumed: BTreeSet<ObjectKey>,
    /// This cache among others (see [`Cache::instance`]).
    instance: Instance,
    /// Bumped when a node is added or removed or its labels or taints change.
    topology_version: u64,
    /// Pods added to (1) and removed from (-1) nodes' pod lists, by slot, oldest first.
    pod_log: Vec<PodChange>,
    /// The position of `pod_log[0]` in the whole history of changes.
    pod_log_base: u64,
    /// Assigned pods by namespace, then label key, then label value: where a selector with an
    /// equality requirement finds its candidates without walking every placed pod.
    label_index: LabelIndex,
}

/// A pod added to (sign 1) or removed from (sign -1) the node in a slot.
pub type PodChange = (usize, Arc<PodInfo>, i64);

/// A number told apart from every other cache's.
#[derive(Debug)]
struct Instance(u64);

impl Default for Instance {
    fn default() -> Self {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Instance(NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
    }
}

/// The PodGroup a pod names in `spec.schedulingGroup`: (namespace, name).
pub fn pod_group_key(pod: &Pod) -> Option<(String, String)> {
    let group = pod.spec.scheduling_group.as_ref()?;
    Some((pod.metadata.namespace.clone(), group.pod_group_name.clone()))
}

/// The selectors of the objects that group pods for spreading (upstream
/// `helper.DefaultSelector` reads Services, ReplicationControllers, ReplicaSets and
/// StatefulSets).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Workloads {
    /// Per namespace, the selectors of its Services that have one.
    pub services: BTreeMap<String, Vec<BTreeMap<String, String>>>,
    /// ReplicationControllers' selectors by (namespace, name).
    pub replication_controllers: BTreeMap<(String, String), BTreeMap<String, String>>,
    /// ReplicaSets' selectors by (namespace, name).
    pub replica_sets: BTreeMap<(String, String), Option<allot_api::meta::v1::LabelSelector>>,
    /// StatefulSets' selectors by (namespace, name).
    pub stateful_sets: BTreeMap<(String, String), Option<allot_api::meta::v1::LabelSelector>>,
}

impl Workloads {
    /// The Services' selectors as the store has them, per namespace in key order.
    fn services_from_store(store: &Store) -> BTreeMap<String, Vec<BTreeMap<String, String>>> {
        let mut services: BTreeMap<String, Vec<BTreeMap<String, String>>> = BTreeMap::new();
        for s in store.list::<allot_api::core::v1::Service>() {
            if !s.spec.selector.is_empty() {
                services
                    .entry(s.metadata.namespace.clone())
                    .or_default()
                    .push(s.spec.selector.clone());
            }
        }
        services
    }

    /// Takes in one event of a Service, ReplicationController, ReplicaSet or StatefulSet;
    /// returns whether a selector changed. Only the object's own entry is looked at (its
    /// status changes, frequent while it scales, cost a comparison), but for Services, whose
    /// selectors are kept per namespace, which are read again from the store.
    fn apply(&mut self, event: &Event, store: &Store) -> bool {
        fn put<V: PartialEq + Clone>(
            map: &mut BTreeMap<(String, String), V>,
            event: &Event,
            value: Option<&V>,
        ) -> bool {
            let key = (event.key.namespace.to_string(), event.key.name.to_string());
            match value.filter(|_| event.event_type != EventType::Deleted) {
                Some(v) if map.get(&key) != Some(v) => {
                    map.insert(key, v.clone());
                    true
                }
                Some(_) => false,
                None => map.remove(&key).is_some(),
            }
        }
        match &event.object {
            Stored::Service(_) => {
                let services = Self::services_from_store(store);
                let changed = services != self.services;
                self.services = services;
                changed
            }
            Stored::ReplicationController(rc) => put(
                &mut self.replication_controllers,
                event,
                Some(&rc.spec.selector),
            ),
            Stored::ReplicaSet(rs) => put(&mut self.replica_sets, event, Some(&rs.spec.selector)),
            Stored::StatefulSet(ss) => put(&mut self.stateful_sets, event, Some(&ss.spec.selector)),
            _ => false,
        }
    }
}

impl Cache {
    /// Applies every store event since the last call.
    pub fn sync(&mut self, store: &Store) {
        let events = store.events_since(self.seen_rv);
        let Some(last) = events.last() else { return };
        let last_rv = last.resource_version;
        let mut classes_dirty = false;
        let mut rules_dirty = false;
        let mut namespaces_dirty = false;
        for event in events {
            match event.key.kind {
                Kind::Node => self.node_event(event),
                Kind::ResourceSlice => self.slice_event(event),
                Kind::ResourceClaim => self.claim_event(event),
                Kind::Pod => self.pod_event(event),
                Kind::DeviceClass => classes_dirty = true,
                Kind::DeviceTaintRule => rules_dirty = true,
                Kind::Namespace => namespaces_dirty = true,
                Kind::PodGroup => self.pod_group_event(event),
                Kind::Service
                | Kind::ReplicationController
                | Kind::ReplicaSet
                | Kind::StatefulSet
                    if self.workloads.apply(event, store) =>
                {
                    self.epoch += 1;
                }
                _ => {}
            }
        }
        if classes_dirty {
            self.classes = store.list::<DeviceClass>().cloned().collect();
            self.epoch += 1;
        }
        if rules_dirty {
            self.taint_rules = store.list::<DeviceTaintRule>().cloned().collect();
            self.epoch += 1;
        }
        if namespaces_dirty {
            self.namespaces = store.list::<Namespace>().cloned().collect();
            self.epoch += 1;
        }
        self.seen_rv = last_rv;
        self.refresh_summaries();
    }

    /// Recomputes the summaries of the nodes whose state or pools changed.
    fn refresh_summaries(&mut self) {
        self.summaries
            .resize(self.nodes.len(), NodeSummary::of(None, None));
        let slots: Vec<usize> = if self.all_dirty {
            self.dirty.clear();
            (0..self.nodes.len()).collect()
        } else {
            std::mem::take(&mut self.dirty)
        };
        if self.all_dirty || self.order_dirty {
            self.bits_stale = true;
        }
        self.all_dirty = false;
        for slot in slots {
            let summary = NodeSummary::of(self.node(slot), self.free_devices(slot));
            if let Some(s) = self.summaries.get_mut(slot) {
                *s = summary;
            }
            if !self.bits_stale {
                match self.rank_of.get(slot) {
                    Some(&rank) if rank != usize::MAX => {
                        let (word, bit) = (rank / 64, 1u64 << (rank % 64));
                        if summary.free > 0 {
                            self.free_bits[word] |= bit;
                        } else {
                            self.free_bits[word] &= !bit;
                        }
                    }
                    // A deleted node's slot (pools may still name it).
                    Some(_) if self.nodes.get(slot).is_some_and(Option::is_none) => {}
                    // A slot the order does not know yet.
                    _ => self.bits_stale = true,
                }
            }
        }
    }

    /// Per node slot, what the cheap filters read (see [`NodeSummary`]).
    pub fn summaries(&self) -> &[NodeSummary] {
        &self.summaries
    }

    fn mark_dirty(&mut self, name: &str) {
        if let Some(slot) = self.node_index.get(name) {
            self.dirty.push(*slot);
        }
    }

    fn mark_pool_dirty(&mut self, id: usize) {
        if let Some(slots) = self.pool_nodes.get(id) {
            self.dirty.extend_from_slice(slots);
        }
    }

    /// The resourceVersion of the last store event applied.
    pub fn seen_rv(&self) -> u64 {
        self.seen_rv
    }

    /// How many nodes there are.
    pub fn node_count(&self) -> usize {
        self.node_index.len()
    }

    /// Node slots in name order.
    pub fn order(&mut self) -> Arc<[usize]> {
        if self.order_dirty {
            let mut order: Vec<usize> = self.node_index.values().copied().collect();
            order.sort_by(|a, b| self.node_name(*a).cmp(self.node_name(*b)).then(a.cmp(b)));
            self.order = order.into();
            self.order_dirty = false;
            self.bits_stale = true;
        }
        if self.bits_stale {
            self.rank_of = vec![usize::MAX; self.nodes.len()];
            self.free_bits = vec![0; self.order.len().div_ceil(64)];
            for (rank, slot) in self.order.iter().enumerate() {
                self.rank_of[*slot] = rank;
                if self.summaries.get(*slot).is_some_and(|s| s.free > 0) {
                    self.free_bits[rank / 64] |= 1 << (rank % 64);
                }
            }
            self.bits_stale = false;
        }
        Arc::clone(&self.order)
    }

    /// The node slots in name order as of the last [`Cache::order`] call.
    pub fn current_order(&self) -> Arc<[usize]> {
        Arc::clone(&self.order)
    }

    /// Per rank in [`Cache::order`] (as last returned), whether the node may have a free
    /// device, 64 ranks to a word (bit `rank % 64` of word `rank / 64`).
    pub fn free_bits(&self) -> &[u64] {
        &self.free_bits
    }

    fn node_name(&self, index: usize) -> &str {
        self.nodes
            .get(index)
            .and_then(Option::as_ref)
            .map(|s| s.name.as_str())
            .unwrap_or("")
    }

    /// One node by slot.
    pub fn node(&self, index: usize) -> Option<&NodeInfo> {
        self.nodes.get(index).and_then(Option::as_ref)
    }

    /// A node's slot.
    pub fn slot_of(&self, name: &str) -> Option<usize> {
        self.node_index.get(name).copied()
    }

    /// One node by name.
    pub fn node_by_name(&self, name: &str) -> Option<&NodeInfo> {
        self.node_index.get(name).and_then(|i| self.node(*i))
    }

    fn node_mut(&mut self, name: &str) -> Option<&mut NodeInfo> {
        let index = *self.node_index.get(name)?;
        self.nodes.get_mut(index).and_then(Option::as_mut)
    }

    fn pool_id(&mut self, pool: &PoolKey) -> usize {
        if let Some(id) = self.pool_index.get(pool) {
            return *id;
        }
        let id = self.pools.len();
        self.pools.push(PoolState::default());
        self.pool_nodes.push(Vec::new());
        self.pool_index.insert(pool.clone(), id);
        id
    }

    fn refresh_node_pools(&mut self, name: &str) {
        let pools: BTreeSet<PoolKey> = match self.node_by_name(name) {
            Some(state) => state
                .slices
                .values()
                .map(|s| {
                    (
                        SmolStr::from(&s.spec.driver),
                        SmolStr::from(&s.spec.pool.name),
                    )
                })
                .collect(),
            None => return,
        };
        let ids: Vec<usize> = pools.iter().map(|p| self.pool_id(p)).collect();
        let Some(slot) = self.node_index.get(name).copied() else {
            return;
        };
        let mut old = Vec::new();
        let generation = self.next_generation();
        if let Some(state) = self.node_mut(name) {
            old = std::mem::replace(&mut state.pool_ids, ids.clone());
            state.slices_generation = generation;
        }
        for id in old {
            if let Some(slots) = self.pool_nodes.get_mut(id) {
                slots.retain(|s| *s != slot);
            }
        }
        for id in ids {
            if let Some(slots) = self.pool_nodes.get_mut(id) {
                slots.push(slot);
            }
        }
        self.dirty.push(slot);
    }

    fn node_event(&mut self, event: &Event) {
        let Stored::Node(node) = &event.object else {
            return;
        };
        let name = node.metadata.name.clone();
        self.epoch += 1;
        if let Some(old) = self.node_by_name(&name).map(|s| Arc::clone(&s.node)) {
            self.count_images(&old, false);
            if event.event_type == EventType::Deleted
                || old.metadata.labels != node.metadata.labels
                || old.spec.taints != node.spec.taints
            {
                self.topology_version += 1;
            }
        } else {
            self.topology_version += 1;
        }
        if event.event_type == EventType::Deleted {
            if let Some(index) = self.node_index.remove(&name) {
                self.nodes[index] = None;
                self.order_dirty = true;
                self.dirty.push(index);
            }
            return;
        }
        self.count_images(node, true);
        let allocatable = node_allocatable(node);
        self.mark_dirty(&name);
        let generation = self.next_generation();
        if let Some(state) = self.node_mut(&name) {
            state.node = node.clone();
            state.allocatable = allocatable;
            state.images = node_images(node);
            state.slices_generation = generation;
            return;
        }
        let mut state = NodeInfo::new(node.clone());
        state.slices_generation = generation;
        state.slot = self.nodes.len();
        // Pods and slices may have arrived before their node.
        for assigned in self.assigned.values().filter(|a| a.node == name) {
            state.add_pod(
                Arc::clone(&assigned.info),
                &assigned.requests,
                assigned.non_zero,
            );
        }
        self.nodes.push(Some(state));
        self.node_index.insert(name.clone(), self.nodes.len() - 1);
        self.dirty.push(self.nodes.len() - 1);
        self.order_dirty = true;
        self.pending_slices_for(&name);
    }

    /// Hands the slices that arrived before their node to the node.
    fn pending_slices_for(&mut self, node: &str) {
        let names: Vec<String> = self
            .orphans
            .iter()
            .filter(|(_, s)| s.spec.node_name.as_deref() == Some(node))
            .map(|(n, _)| n.clone())
            .collect();
        if names.is_empty() {
            return;
        }
        for name in names {
            if let Some(slice) = self.orphans.remove(&name)
                && let Some(state) = self.node_mut(node)
            {
                state.slices.insert(name, slice);
            }
        }
        self.refresh_node_pools(node);
    }

    fn slice_event(&mut self, event: &Event) {
        let Stored::ResourceSlice(slice) = &event.object else {
            return;
        };
        self.epoch += 1;
        let name = slice.metadata.name.clone();
        let pool: PoolKey = (
            SmolStr::from(&slice.spec.driver),
            SmolStr::from(&slice.spec.pool.name),
        );
        let node_name = slice.spec.node_name.clone().filter(|n| !n.is_empty());
        // Forget the previous version of this slice wherever it was.
        if let Some((old_pool, old_node)) = self.slice_home.remove(&name) {
            let id = self.pool_id(&old_pool);
            self.pools[id].slices.remove(&name);
            self.pools[id].recount();
            self.mark_pool_dirty(id);
            match old_node {
                Some(old_node) => {
                    if let Some(state) = self.node_mut(&old_node) {
                        state.slices.remove(&name);
                    }
                    self.refresh_node_pools(&old_node);
                    self.orphans.remove(&name);
                }
                None => {
                    self.global_slices.remove(&name);
                    self.invalidate_all();
                }
            }
        }
        if event.event_type == EventType::Deleted {
            return;
        }
        let multi = slice
            .spec
            .devices
            .iter()
            .any(|d| d.allow_multiple_allocations == Some(true));
        let id = self.pool_id(&pool);
        self.pools[id]
            .slices
            .insert(name.clone(), (slice.spec.devices.len(), multi));
        self.pools[id].recount();
        self.mark_pool_dirty(id);
        self.slice_home
            .insert(name.clone(), (pool, node_name.clone()));
        match node_name {
            Some(node) => {
                if let Some(state) = self.node_mut(&node) {
                    state.slices.insert(name, slice.clone());
                    self.refresh_node_pools(&node);
                } else {
                    self.orphans.insert(name, slice.clone());
                }
            }
            None => {
                self.global_slices.insert(name, slice.clone());
                self.invalidate_all();
            }
        }
    }

    fn invalidate_all(&mut self) {
        let generation = self.next_generation();
        for state in self.nodes.iter_mut().flatten() {
            state.slices_generation = generation;
        }
        // Whether there are global slices decides whether free devices are bounded at all.
        self.all_dirty = true;
    }

    fn claim_event(&mut self, event: &Event) {
        let Stored::ResourceClaim(claim) = &event.object else {
            return;
        };
        let key = event.key.clone();
        let had = self.claim_pools.remove(&key);
        self.claims_version += 1;
        let version = self.claims_version;
        if let Some(old) = &had {
            for (id, device, dedicated) in old {
                if *dedicated && let Some(slots) = self.pool_nodes.get(*id) {
                    self.dirty.extend_from_slice(slots);
                }
                let state = &mut self.pools[*id];
                state.changed_at = version;
                state.claims.remove(&key);
                if *dedicated && let Some(n) = state.allocated.get_mut(device) {
                    *n -= 1;
                    if *n == 0 {
                        state.allocated.remove(device);
                    }
                }
            }
        }
        let allocation = if event.event_type == EventType::Deleted {
            None
        } else {
            claim.status.allocation.as_ref()
        };
        if had.is_some() || allocation.is_some() {
            self.epoch += 1;
        }
        let Some(allocation) = allocation else { return };
        let mut entries = Vec::new();
        for result in &allocation.devices.results {
            let pool: PoolKey = (result.driver.clone(), result.pool.clone());
            let dedicated = result.admin_access != Some(true) && result.share_id.is_none();
            let id = self.pool_id(&pool);
            if dedicated {
                self.mark_pool_dirty(id);
            }
            let state = &mut self.pools[id];
            state.changed_at = version;
            state.claims.insert(key.clone(), Arc::clone(claim));
            if dedicated {
                *state.allocated.entry(result.device.clone()).or_insert(0) += 1;
            }
            entries.push((id, result.device.clone(), dedicated));
        }
        self.claim_pools.insert(key, entries);
    }

    fn pod_group_event(&mut self, event: &Event) {
        let Stored::PodGroup(group) = &event.object else {
            return;
        };
        let key = (event.key.namespace.to_string(), event.key.name.to_string());
        if event.event_type == EventType::Deleted {
            self.pod_groups.remove(&key);
        } else {
            self.pod_groups.insert(key, Arc::clone(group));
        }
        self.epoch += 1;
    }

    fn track_member(&mut self, event: &Event, pod: &Pod) {
        let Some(group) = pod_group_key(pod) else {
            return;
        };
        let gone = event.event_type == EventType::Deleted
            || is_terminal(pod)
            || pod.metadata.deletion_timestamp.is_some();
        if gone {
            if let Some(members) = self.group_members.get_mut(&group) {
                members.remove(&event.key);
                if members.is_empty() {
                    self.group_members.remove(&group);
                }
            }
        } else {
            self.group_members
                .entry(group)
                .or_default()
                .insert(event.key.clone());
        }
    }

    /// A PodGroup by namespace and name.
    pub fn pod_group(&self, namespace: &str, name: &str) -> Option<&Arc<PodGroup>> {
        self.pod_groups
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// The pods of a PodGroup that are neither terminal nor being deleted, in key order.
    pub fn group_members(&self, namespace: &str, name: &str) -> Option<&BTreeSet<ObjectKey>> {
        self.group_members
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Whether a pod is bound (or assumed) to a node in the cache's view.
    pub fn is_assigned_or_assumed(&self, key: &ObjectKey) -> bool {
        self.assigned.contains_key(key)
    }

    /// Whether a pod is assumed (counted on a node, not yet bound).
    pub fn is_assumed(&self, key: &ObjectKey) -> bool {
        self.assumed.contains(key)
    }

    /// Counts `pod` on `node` before it is bound (upstream `AssumePod`): the next scheduling
    /// cycles see its resources taken. Its binding (a store event with `spec.nodeName`) or
    /// [`Cache::forget`] ends the assumption.
    pub fn assume(&mut self, key: &ObjectKey, pod: &Pod, node: &str) {
        let mut bound = pod.clone();
        bound.spec.node_name = Some(node.to_string());
        self.forget(key);
        self.remove_assigned(key);
        self.add_assigned(key, Arc::new(bound));
        self.assumed.insert(key.clone());
        self.epoch += 1;
        self.refresh_summaries();
    }

    /// Ends an assumption that did not lead to a binding (upstream `ForgetPod`).
    pub fn forget(&mut self, key: &ObjectKey) {
        if self.assumed.remove(key) {
            self.remove_assigned(key);
            self.epoch += 1;
            self.refresh_summaries();
        }
    }

    fn remove_assigned(&mut self, key: &ObjectKey) {
        let Some(old) = self.assigned.remove(key) else {
            return;
        };
        self.count_affinity(&old.info, false);
        self.index_labels(key, &old.info.pod, false);
        if let Some(slot) = self.node_index.get(&old.node).copied() {
            self.dirty.push(slot);
            if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                state.remove_pod(key, &old.requests, old.non_zero);
                self.log_pod(slot, Arc::clone(&old.info), -1);
            }
        }
    }

    fn add_assigned(&mut self, key: &ObjectKey, pod: Arc<Pod>) {
        let node = pod.spec.node_name.clone().unwrap_or_default();
        let requests = pod_requests(&pod);
        let non_zero = pod_non_zero_requests_with(&pod, &requests);
        let info = Arc::new(PodInfo::new(pod));
        self.count_affinity(&info, true);
        self.index_labels(key, &info.pod, true);
        if let Some(slot) = self.node_index.get(&node).copied() {
            self.dirty.push(slot);
            if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                state.add_pod(Arc::clone(&info), &requests, non_zero);
                self.log_pod(slot, Arc::clone(&info), 1);
            }
        }
        self.assigned.insert(
            key.clone(),
            Assigned {
                node,
                requests,
                non_zero,
                info,
            },
        );
    }

    fn pod_event(&mut self, event: &Event) {
        let Stored::Pod(pod) = &event.object else {
            return;
        };
        self.track_member(event, pod);
        let now_assigned = event.event_type != EventType::Deleted && is_assigned(pod);
        let was_assumed = self.assumed.contains(&event.key);
        if was_assumed {
            if event.event_type != EventType::Deleted && !now_assigned {
                // A write of an assumed pod's status: it stays assumed.
                return;
            }
            self.assumed.remove(&event.key);
        }
        if event.event_type == EventType::Added
            && !now_assigned
            && !is_terminal(pod)
            && pod.spec.node_name.as_deref().is_none_or(str::is_empty)
        {
            self.new_pending.push((event.key.clone(), Arc::clone(pod)));
        }
        let node = pod.spec.node_name.as_deref().unwrap_or_default();
        let counted = now_assigned.then(|| {
            let requests = pod_requests(pod);
            let non_zero = pod_non_zero_requests_with(pod, &requests);
            (requests, non_zero)
        });
        if let Some((requests, non_zero)) = &counted
            && !was_assumed
            && let Some(a) = self.assigned.get_mut(&event.key)
            && a.node == node
            && a.requests == *requests
            && a.non_zero == *non_zero
            && same_placement_inputs(&a.info.pod, pod)
        {
            // A write that leaves an assigned pod's node, requests, labels, affinity and ports
            // as they were (its status, mostly): nothing to recount, but the pod's new version
            // replaces the old one, which would otherwise stay in memory beside the store's.
            self.epoch += 1;
            if !Arc::ptr_eq(&a.info.pod, pod) {
                let old = Arc::clone(&a.info);
                let info = Arc::new(old.with_pod(Arc::clone(pod)));
                a.info = Arc::clone(&info);
                if let Some(state) = self
                    .node_index
                    .get(node)
                    .and_then(|slot| self.nodes.get_mut(*slot))
                    .and_then(Option::as_mut)
                    && let Some(entry) = state.pods.iter_mut().find(|p| Arc::ptr_eq(p, &old))
                {
                    *entry = info;
                }
            }
            return;
        }
        let old = self.assigned.remove(&event.key);
        if old.is_none() && !now_assigned {
            return;
        }
        self.epoch += 1;
        if let Some(old) = old {
            self.count_affinity(&old.info, false);
            self.index_labels(&event.key, &old.info.pod, false);
            if let Some(slot) = self.node_index.get(&old.node).copied() {
                self.dirty.push(slot);
                if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                    state.remove_pod(&event.key, &old.requests, old.non_zero);
                    self.log_pod(slot, Arc::clone(&old.info), -1);
                }
            }
        }
        if let Some((requests, non_zero)) = counted {
            let info = Arc::new(PodInfo::new(Arc::clone(pod)));
            self.count_affinity(&info, true);
            self.index_labels(&event.key, pod, true);
            let assigned = Assigned {
                node: node.to_string(),
                requests,
                non_zero,
                info,
            };
            if let Some(slot) = self.node_index.get(node).copied() {
                self.dirty.push(slot);
                if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                    state.add_pod(
                        Arc::clone(&assigned.info),
                        &assigned.requests,
                        assigned.non_zero,
                    );
                    self.log_pod(slot, Arc::clone(&assigned.info), 1);
                }
            }
            self.assigned.insert(event.key.clone(), assigned);
        }
    }

    /// Whether an allocated claim is known under this key.
    pub fn claim_allocated(&self, key: &ObjectKey) -> bool {
        self.claim_pools.contains_key(key)
    }

    /// An upper bound of the devices a node could still hand out exclusively; `None` when it
    /// cannot be bounded cheaply (non-local slices or devices allowing multiple allocations).
    pub fn free_devices(&self, index: usize) -> Option<usize> {
        if !self.global_slices.is_empty() {
            return None;
        }
        let state = self.node(index)?;
        let mut free = 0usize;
        for id in &state.pool_ids {
            free += self.pools.get(*id)?.free()?;
        }
        Some(free)
    }

    /// The slices the allocator sees on a node: its own, then the cluster's non-local ones.
    pub fn visible_slices(&self, index: usize) -> Vec<Arc<ResourceSlice>> {
        let Some(state) = self.node(index) else {
            return Vec::new();
        };
        let mut all: Vec<Arc<ResourceSlice>> = state.slices.values().cloned().collect();
        all.extend(self.global_slices.values().cloned());
        all
    }

    fn node_pool_ids(&self, state: &NodeInfo) -> Vec<usize> {
        let mut ids: Vec<usize> = state.pool_ids.clone();
        for slice in self.global_slices.values() {
            if let Some(id) = self.pool_index.get(&(
                SmolStr::from(&slice.spec.driver),
                SmolStr::from(&slice.spec.pool.name),
            )) {
                ids.push(*id);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// A counter bumped by every claim event.
    pub fn claims_version(&self) -> u64 {
        self.claims_version
    }

    /// The claims version of the newest change to the allocated claims of the pools a node
    /// sees: [`Cache::in_use`] gives the same answer while this stays the same.
    pub fn in_use_version(&self, index: usize) -> u64 {
        let Some(state) = self.node(index) else {
            return 0;
        };
        self.node_pool_ids(state)
            .iter()
            .filter_map(|id| self.pools.get(*id))
            .map(|p| p.changed_at)
            .max()
            .unwrap_or(0)
    }

    /// The allocated claims whose devices come from pools the node sees (every allocated
    /// claim is in use, including the pod's own).
    pub fn in_use(&self, index: usize) -> Vec<Arc<ResourceClaim>> {
        let Some(state) = self.node(index) else {
            return Vec::new();
        };
        let ids = self.node_pool_ids(state);
        let mut keys = BTreeSet::new();
        let mut out = Vec::new();
        // A claim with devices of several pools is in each; one pool lists it once.
        let several = ids.len() > 1;
        for id in ids {
            let Some(pool_state) = self.pools.get(id) else {
                continue;
            };
            for (key, claim) in &pool_state.claims {
                if !several || keys.insert(key) {
                    out.push(Arc::clone(claim));
                }
            }
        }
        out
    }

    /// The pods nominated to `node` that a pod of priority `priority` (key `key`) must leave
    /// room for: those of higher or equal priority, but itself.
    pub fn nominated_for(&self, node: &str, priority: i32, key: &ObjectKey) -> Vec<Arc<PodInfo>> {
        self.nominated
            .get(node)
            .into_iter()
            .flatten()
            .filter(|q| {
                q.pod.spec.priority.unwrap_or(0) >= priority
                    && !(q.pod.metadata.namespace == key.namespace
                        && q.pod.metadata.name == key.name)
            })
            .cloned()
            .collect()
    }

    /// Every node in name order.
    pub fn nodes_in_order(&self) -> impl Iterator<Item = &NodeInfo> {
        self.order.iter().filter_map(|slot| self.node(*slot))
    }

    /// Assigned pods with pod affinity or anti-affinity terms, cluster-wide.
    pub fn affinity_pod_count(&self) -> usize {
        self.affinity_pods
    }

    /// Assigned pods with required pod anti-affinity terms, cluster-wide.
    pub fn anti_affinity_pod_count(&self) -> usize {
        self.anti_affinity_pods
    }

    /// How many nodes report an image name.
    pub fn image_node_count(&self, name: &str) -> usize {
        self.image_nodes.get(name).copied().unwrap_or(0)
    }

    /// Whether any node reports images.
    pub fn has_images(&self) -> bool {
        !self.image_nodes.is_empty()
    }

    /// The labels of a namespace (empty when it does not exist).
    pub fn namespace_labels(&self, name: &str) -> &BTreeMap<String, String> {
        static EMPTY: BTreeMap<String, String> = BTreeMap::new();
        self.namespaces
            .binary_search_by(|n| n.metadata.name.as_str().cmp(name))
            .ok()
            .map_or(&EMPTY, |i| &self.namespaces[i].metadata.labels)
    }

    /// Pods that arrived unassigned since the last call, in arrival order.
    pub fn take_new_pending(&mut self) -> Vec<(ObjectKey, Arc<Pod>)> {
        std::mem::take(&mut self.new_pending)
    }

    /// The assigned pod under a key, as the cache counted it.
    pub fn assigned_pod(&self, key: &ObjectKey) -> Option<&Arc<PodInfo>> {
        self.assigned.get(key).map(|a| &a.info)
    }

    /// Records a change of a node's pod list; the log keeps the last [`POD_LOG_KEEP`] to
    /// twice as many changes (a reader further behind recounts).
    fn log_pod(&mut self, slot: usize, info: Arc<PodInfo>, sign: i64) {
        self.pod_log.push((slot, info, sign));
        if self.pod_log.len() > 2 * POD_LOG_KEEP {
            let drop = self.pod_log.len() - POD_LOG_KEEP;
            self.pod_log.drain(..drop);
            self.pod_log_base += drop as u64;
        }
    }

    /// This cache's number: different for every cache made in the process, so that counts
    /// kept against one cache are never taken for another's.
    pub fn instance(&self) -> u64 {
        self.instance.0
    }

    /// Bumped whenever a node is added or removed or its labels or taints change (counts
    /// per node label are then recounted).
    pub fn topology_version(&self) -> u64 {
        self.topology_version
    }

    /// The position after the last change of the nodes' pod lists.
    pub fn pod_changes_end(&self) -> u64 {
        self.pod_log_base + self.pod_log.len() as u64
    }

    /// The changes of the nodes' pod lists from position `from` on (see
    /// [`Cache::pod_changes_end`]), in order; `None` when the log no longer reaches back to
    /// it. Replaying them over counts taken at `from` gives the counts of now, provided the
    /// [`Cache::topology_version`] stayed the same.
    pub fn pod_changes_since(&self, from: u64) -> Option<&[PodChange]> {
        let start = from.checked_sub(self.pod_log_base)?;
        self.pod_log.get(usize::try_from(start).ok()?..)
    }

    /// How many pods are assigned to nodes (or to nodes not known yet).
    pub fn assigned_pod_total(&self) -> usize {
        self.assigned.len()
    }

    fn next_generation(&mut self) -> u64 {
        self.generation += 1;
        self.generation
    }

    /// Adds an assigned pod's labels to the label index, or takes them out.
    fn index_labels(&mut self, key: &ObjectKey, pod: &Pod, add: bool) {
        let namespace = pod.metadata.namespace.as_str();
        for (label, value) in &pod.metadata.labels {
            if add {
                self.label_index
                    .entry(namespace.to_string())
                    .or_default()
                    .entry(label.clone())
                    .or_default()
                    .entry(value.clone())
                    .or_default()
                    .insert(key.clone());
                continue;
            }
            let Some(labels) = self.label_index.get_mut(namespace) else {
                continue;
            };
            let Some(values) = labels.get_mut(label) else {
                continue;
            };
            if let Some(keys) = values.get_mut(value) {
                keys.remove(key);
                if keys.is_empty() {
                    values.remove(value);
                }
            }
            if values.is_empty() {
                labels.remove(label);
            }
            if labels.is_empty() {
                self.label_index.remove(namespace);
            }
        }
    }

    /// The assigned pods of `namespace` labelled `label: value` on known nodes, each with
    /// its node, in pod key order.
    pub fn assigned_labelled<'a>(
        &'a self,
        namespace: &str,
        label: &str,
        value: &str,
    ) -> impl Iterator<Item = (&'a NodeInfo, &'a Arc<PodInfo>)> + 'a {
        self.label_index
            .get(namespace)
            .and_then(|labels| labels.get(label))
            .and_then(|values| values.get(value))
            .into_iter()
            .flatten()
            .filter_map(|key| {
                let assigned = self.assigned.get(key)?;
                let slot = *self.node_index.get(&assigned.node)?;
                let node = self.nodes.get(slot)?.as_ref()?;
                Some((node, &assigned.info))
            })
    }

    fn count_affinity(&mut self, info: &PodInfo, add: bool) {
        let (a, r) = (
            usize::from(info.has_affinity()),
            usize::from(!info.required_anti_affinity_terms.is_empty()),
        );
        if add {
            self.affinity_pods += a;
            self.anti_affinity_pods += r;
        } else {
            self.affinity_pods -= a;
            self.anti_affinity_pods -= r;
        }
    }

    fn count_images(&mut self, node: &Node, add: bool) {
        let names: BTreeSet<&String> = node.status.images.iter().flat_map(|i| &i.names).collect();
        for name in names {
            if add {
                *self.image_nodes.entry(name.clone()).or_insert(0) += 1;
            } else if let Some(n) = self.image_nodes.get_mut(name) {
                *n -= 1;
                if *n == 0 {
                    self.image_nodes.remove(name);
                }
            }
        }
    }
}

/// Whether two versions of an assigned pod look the same to every plugin that reads the pods
/// on a node (labels, namespace, affinity, ports).
fn same_placement_inputs(a: &Pod, b: &Pod) -> bool {
    a.metadata.labels == b.metadata.labels
        && a.metadata.deletion_timestamp == b.metadata.deletion_timestamp
        && a.spec.affinity == b.spec.affinity
        && a.spec
            .containers
            .iter()
            .map(|c| &c.ports)
            .eq(b.spec.containers.iter().map(|c| &c.ports))
        && a.spec
            .init_containers
            .iter()
            .map(|c| (&c.ports, &c.restart_policy))
            .eq(b
                .spec
                .init_containers
                .iter()
                .map(|c| (&c.ports, &c.restart_policy)))
}

/// Whether a pod holds node resources: bound and not finished.
pub fn is_assigned(pod: &Pod) -> bool {
    pod.spec.node_name.as_deref().is_some_and(|n| !n.is_empty()) && !is_terminal(pod)
}

/// Whether a pod has finished (`Succeeded` or `Failed`).
pub fn is_terminal(pod: &Pod) -> bool {
    matches!(
        pod.status.phase.as_deref(),
        Some("Succeeded") | Some("Failed")
    )
}
