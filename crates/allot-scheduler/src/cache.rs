//! The scheduler's view of the cluster, kept up to date from the store's event log.
//!
//! Everything here can be rebuilt from the store: the cache only saves the scheduler from
//! scanning every pod, slice and claim for every pod it places.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{Namespace, Node, Pod};
use allot_api::resource::v1::{
    DeviceClass, DeviceTaintRule, ResourceClaim, ResourceSlice, SmolStr,
};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::resources::{Resources, node_allocatable, pod_non_zero_requests_with, pod_requests};

/// A pool: (driver, pool name), as allocation results name it (names of up to 23 bytes are
/// copied inline, without an allocation).
pub type PoolKey = (SmolStr, SmolStr);

/// What the scheduler knows about one node.
#[derive(Debug, Clone)]
pub struct NodeState {
    /// The node's name.
    pub name: String,
    /// The node object (shared with the store).
    pub node: Arc<Node>,
    /// Allocatable resources.
    pub allocatable: Resources,
    /// Sum of the requests of pods assigned to the node.
    pub requested: Resources,
    /// Sum of the scoring (non-zero) CPU and memory requests of pods assigned to the node.
    pub non_zero: (i64, i64),
    /// Pods assigned to the node.
    pub pods: i64,
    /// Slices published for this node (`spec.nodeName`), by name.
    pub slices: BTreeMap<String, Arc<ResourceSlice>>,
    /// The pools of those slices (indexes into [`Cache::pools`]).
    pub pool_ids: Vec<usize>,
    /// The slices the allocator sees on this node (its own plus the cluster's non-local ones),
    /// rebuilt when `None`.
    pub visible_slices: Option<Vec<Arc<ResourceSlice>>>,
    /// The allocated claims using devices the node sees, with the claims version they were
    /// gathered at.
    in_use: Option<(u64, Vec<Arc<ResourceClaim>>)>,
}

#[cfg(test)]
impl NodeState {
    /// A node's state without slices.
    pub(crate) fn for_test(
        node: Arc<Node>,
        allocatable: Resources,
        requested: Resources,
        pods: i64,
    ) -> Self {
        NodeState {
            name: node.metadata.name.clone(),
            node,
            non_zero: (requested.milli_cpu, requested.memory),
            allocatable,
            requested,
            pods,
            slices: BTreeMap::new(),
            pool_ids: Vec::new(),
            visible_slices: None,
            in_use: None,
        }
    }
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

/// `NodeSummary::free` of a node whose free devices cannot be bounded cheaply.
pub const UNBOUNDED: usize = usize::MAX;

/// What the cheap filters and the resource score read of one node, kept in one contiguous
/// array by slot (see [`Cache::summaries`]) so that walking nodes for a plain pod does not
/// touch the scattered [`NodeState`]s. Derived from the node's state and its pools'
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
}

impl NodeSummary {
    /// The summary of a node (`None`: a deleted slot) with `free` devices.
    pub fn of(state: Option<&NodeState>, free: Option<usize>) -> Self {
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
            requested: [r.milli_cpu, r.memory, r.ephemeral_storage, state.pods],
            non_zero: state.non_zero,
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
}

/// The cluster as the scheduler sees it.
#[derive(Debug, Default)]
pub struct Cache {
    seen_rv: u64,
    /// Bumped by every change that can make a pod fit where it did not, or the other way
    /// round (anything but status writes on unscheduled pods).
    pub epoch: u64,
    claims_version: u64,
    nodes: Vec<Option<NodeState>>,
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
    pub fn node(&self, index: usize) -> Option<&NodeState> {
        self.nodes.get(index).and_then(Option::as_ref)
    }

    /// A node's slot.
    pub fn slot_of(&self, name: &str) -> Option<usize> {
        self.node_index.get(name).copied()
    }

    /// One node by name.
    pub fn node_by_name(&self, name: &str) -> Option<&NodeState> {
        self.node_index.get(name).and_then(|i| self.node(*i))
    }

    fn node_mut(&mut self, name: &str) -> Option<&mut NodeState> {
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
        if let Some(state) = self.node_mut(name) {
            old = std::mem::replace(&mut state.pool_ids, ids.clone());
            state.visible_slices = None;
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
        if event.event_type == EventType::Deleted {
            if let Some(index) = self.node_index.remove(&name) {
                self.nodes[index] = None;
                self.order_dirty = true;
                self.dirty.push(index);
            }
            return;
        }
        let allocatable = node_allocatable(node);
        self.mark_dirty(&name);
        if let Some(state) = self.node_mut(&name) {
            state.node = node.clone();
            state.allocatable = allocatable;
            state.visible_slices = None;
            return;
        }
        let mut state = NodeState {
            name: name.clone(),
            node: node.clone(),
            allocatable,
            requested: Resources::default(),
            non_zero: (0, 0),
            pods: 0,
            slices: BTreeMap::new(),
            pool_ids: Vec::new(),
            visible_slices: None,
            in_use: None,
        };
        // Pods and slices may have arrived before their node.
        for assigned in self.assigned.values().filter(|a| a.node == name) {
            state.requested.add(&assigned.requests);
            state.non_zero.0 += assigned.non_zero.0;
            state.non_zero.1 += assigned.non_zero.1;
            state.pods += 1;
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
        for state in self.nodes.iter_mut().flatten() {
            state.visible_slices = None;
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

    fn pod_event(&mut self, event: &Event) {
        let Stored::Pod(pod) = &event.object else {
            return;
        };
        let now_assigned = event.event_type != EventType::Deleted && is_assigned(pod);
        let node = pod.spec.node_name.as_deref().unwrap_or_default();
        let counted = now_assigned.then(|| {
            let requests = pod_requests(pod);
            let non_zero = pod_non_zero_requests_with(pod, &requests);
            (requests, non_zero)
        });
        if let Some((requests, non_zero)) = &counted
            && self.assigned.get(&event.key).is_some_and(|a| {
                a.node == node && a.requests == *requests && a.non_zero == *non_zero
            })
        {
            // A write that leaves an assigned pod's node and requests as they were (its
            // status, mostly): nothing to recount.
            self.epoch += 1;
            return;
        }
        let old = self.assigned.remove(&event.key);
        if old.is_none() && !now_assigned {
            return;
        }
        self.epoch += 1;
        if let Some(old) = old
            && let Some(slot) = self.node_index.get(&old.node).copied()
        {
            self.dirty.push(slot);
            if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                state.requested.sub(&old.requests);
                state.non_zero.0 -= old.non_zero.0;
                state.non_zero.1 -= old.non_zero.1;
                state.pods -= 1;
            }
        }
        if let Some((requests, non_zero)) = counted {
            let assigned = Assigned {
                node: node.to_string(),
                requests,
                non_zero,
            };
            if let Some(slot) = self.node_index.get(node).copied() {
                self.dirty.push(slot);
                if let Some(state) = self.nodes.get_mut(slot).and_then(Option::as_mut) {
                    state.requested.add(&assigned.requests);
                    state.non_zero.0 += assigned.non_zero.0;
                    state.non_zero.1 += assigned.non_zero.1;
                    state.pods += 1;
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

    /// Builds the slices the allocator sees for a node, when not cached.
    pub fn prepare_slices(&mut self, index: usize) {
        let globals = &self.global_slices;
        let Some(state) = self.nodes.get_mut(index).and_then(Option::as_mut) else {
            return;
        };
        if state.visible_slices.is_none() {
            let mut all: Vec<Arc<ResourceSlice>> = state.slices.values().cloned().collect();
            all.extend(globals.values().cloned());
            state.visible_slices = Some(all);
        }
    }

    fn node_pool_ids(&self, state: &NodeState) -> Vec<usize> {
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

    /// Gathers the allocated claims whose devices come from pools the node sees (every
    /// allocated claim is in use, including the pod's own), when not cached.
    pub fn prepare_in_use(&mut self, index: usize) {
        let Some(state) = self.node(index) else {
            return;
        };
        let ids = self.node_pool_ids(state);
        let newest = ids
            .iter()
            .filter_map(|id| self.pools.get(*id))
            .map(|p| p.changed_at)
            .max()
            .unwrap_or(0);
        if state.in_use.as_ref().is_some_and(|(at, _)| *at >= newest) {
            return;
        }
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
        let version = self.claims_version;
        if let Some(state) = self.nodes.get_mut(index).and_then(Option::as_mut) {
            state.in_use = Some((version, out));
        }
    }

    /// The claims gathered by [`Cache::prepare_in_use`].
    pub fn in_use(&self, index: usize) -> &[Arc<ResourceClaim>] {
        self.node(index)
            .and_then(|s| s.in_use.as_ref())
            .map(|(_, v)| v.as_slice())
            .unwrap_or(&[])
    }
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
