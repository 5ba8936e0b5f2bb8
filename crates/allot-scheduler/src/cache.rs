//! The scheduler's view of the cluster, kept up to date from the store's event log.
//!
//! Everything here can be rebuilt from the store: the cache only saves the scheduler from
//! scanning every pod, slice and claim for every pod it places.

use std::collections::{BTreeMap, BTreeSet};

use allot_api::core::v1::{Namespace, Node, Pod};
use allot_api::resource::v1::{
    AllocationResult, DeviceClass, DeviceTaintRule, ResourceClaim, ResourceClaimStatus,
    ResourceSlice,
};
use allot_store::{Event, EventType, Kind, ObjectKey, Store, Stored};

use crate::resources::{Resources, node_allocatable, pod_non_zero_requests, pod_requests};

/// A pool: (driver, pool name).
pub type PoolKey = (String, String);

/// What the scheduler knows about one node.
#[derive(Debug, Clone)]
pub struct NodeState {
    /// The node object.
    pub node: Node,
    /// Allocatable resources.
    pub allocatable: Resources,
    /// Sum of the requests of pods assigned to the node.
    pub requested: Resources,
    /// Sum of the scoring (non-zero) CPU and memory requests of pods assigned to the node.
    pub non_zero: (i64, i64),
    /// Pods assigned to the node.
    pub pods: i64,
    /// Slices published for this node (`spec.nodeName`), by name.
    pub slices: BTreeMap<String, ResourceSlice>,
    /// The slices the allocator sees on this node (its own plus the cluster's non-local ones),
    /// rebuilt when `None`.
    pub visible_slices: Option<Vec<ResourceSlice>>,
}

/// Devices of one pool and how many of them are allocated exclusively.
#[derive(Debug, Clone, Default)]
pub struct PoolState {
    /// Device counts and whether any device allows multiple allocations, per slice name.
    pub slices: BTreeMap<String, (usize, bool)>,
    /// Claims with at least one device of this pool, reduced to their allocation.
    pub claims: BTreeMap<ObjectKey, ResourceClaim>,
    /// Exclusively allocated devices of this pool, by name, with how many claims hold them.
    pub allocated: BTreeMap<String, usize>,
}

impl PoolState {
    /// Devices not allocated exclusively; `None` when a device allows multiple allocations
    /// (then counting devices says nothing).
    pub fn free(&self) -> Option<usize> {
        let mut total = 0usize;
        for (count, multi) in self.slices.values() {
            if *multi {
                return None;
            }
            total += count;
        }
        Some(total.saturating_sub(self.allocated.len()))
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
    /// Nodes by name.
    pub nodes: BTreeMap<String, NodeState>,
    /// Node names in order (for the rotating scan).
    pub node_names: Vec<String>,
    /// Slices not bound to one node (`allNodes`, `nodeSelector`, per-device node selection).
    pub global_slices: BTreeMap<String, ResourceSlice>,
    /// Pools by (driver, pool).
    pub pools: BTreeMap<PoolKey, PoolState>,
    /// Device classes, in name order.
    pub classes: Vec<DeviceClass>,
    /// DeviceTaintRules, in name order.
    pub taint_rules: Vec<DeviceTaintRule>,
    /// Namespaces, in name order.
    pub namespaces: Vec<Namespace>,
    orphans: BTreeMap<String, ResourceSlice>,
    slice_home: BTreeMap<String, (PoolKey, Option<String>)>,
    claim_pools: BTreeMap<ObjectKey, Vec<(PoolKey, String, bool)>>,
    assigned: BTreeMap<ObjectKey, Assigned>,
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
        }
        if rules_dirty {
            self.taint_rules = store.list::<DeviceTaintRule>().cloned().collect();
        }
        if namespaces_dirty {
            self.namespaces = store.list::<Namespace>().cloned().collect();
        }
        self.seen_rv = last_rv;
    }

    fn node_event(&mut self, event: &Event) {
        let Stored::Node(node) = &event.object else {
            return;
        };
        let name = node.metadata.name.clone();
        if event.event_type == EventType::Deleted {
            self.nodes.remove(&name);
            self.node_names = self.nodes.keys().cloned().collect();
            return;
        }
        let allocatable = node_allocatable(node);
        match self.nodes.get_mut(&name) {
            Some(state) => {
                state.node = node.clone();
                state.allocatable = allocatable;
                state.visible_slices = None;
            }
            None => {
                let mut state = NodeState {
                    node: node.clone(),
                    allocatable,
                    requested: Resources::default(),
                    non_zero: (0, 0),
                    pods: 0,
                    slices: BTreeMap::new(),
                    visible_slices: None,
                };
                // Pods and slices may have arrived before their node.
                for assigned in self.assigned.values().filter(|a| a.node == name) {
                    state.requested.add(&assigned.requests);
                    state.non_zero.0 += assigned.non_zero.0;
                    state.non_zero.1 += assigned.non_zero.1;
                    state.pods += 1;
                }
                self.nodes.insert(name.clone(), state);
                self.node_names = self.nodes.keys().cloned().collect();
                self.pending_slices_for(&name);
            }
        }
    }

    /// Hands the slices that arrived before their node to the node.
    fn pending_slices_for(&mut self, node: &str) {
        let names: Vec<String> = self
            .orphans
            .iter()
            .filter(|(_, s)| s.spec.node_name.as_deref() == Some(node))
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            if let (Some(slice), Some(state)) =
                (self.orphans.remove(&name), self.nodes.get_mut(node))
            {
                state.slices.insert(name, slice);
                state.visible_slices = None;
            }
        }
    }

    fn slice_event(&mut self, event: &Event) {
        let Stored::ResourceSlice(slice) = &event.object else {
            return;
        };
        let name = slice.metadata.name.clone();
        let pool: PoolKey = (slice.spec.driver.clone(), slice.spec.pool.name.clone());
        let node_name = slice.spec.node_name.clone().filter(|n| !n.is_empty());
        // Forget the previous version of this slice wherever it was.
        if let Some((old_pool, old_node)) = self.slice_home.remove(&name) {
            if let Some(pool_state) = self.pools.get_mut(&old_pool) {
                pool_state.slices.remove(&name);
            }
            match old_node {
                Some(old_node) => {
                    if let Some(state) = self.nodes.get_mut(&old_node) {
                        state.slices.remove(&name);
                        state.visible_slices = None;
                    }
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
        self.pools
            .entry(pool.clone())
            .or_default()
            .slices
            .insert(name.clone(), (slice.spec.devices.len(), multi));
        self.slice_home
            .insert(name.clone(), (pool, node_name.clone()));
        match node_name {
            Some(node) => {
                if let Some(state) = self.nodes.get_mut(&node) {
                    state.slices.insert(name, slice.clone());
                    state.visible_slices = None;
                } else {
                    self.orphan_slice(slice.clone());
                }
            }
            None => {
                self.global_slices.insert(name, slice.clone());
                self.invalidate_all();
            }
        }
    }

    /// Keeps a slice for a node the scheduler does not know yet.
    fn orphan_slice(&mut self, slice: ResourceSlice) {
        self.orphans.insert(slice.metadata.name.clone(), slice);
    }

    fn invalidate_all(&mut self) {
        for state in self.nodes.values_mut() {
            state.visible_slices = None;
        }
    }

    fn claim_event(&mut self, event: &Event) {
        let Stored::ResourceClaim(claim) = &event.object else {
            return;
        };
        let key = event.key.clone();
        if let Some(old) = self.claim_pools.remove(&key) {
            for (pool, device, dedicated) in old {
                if let Some(state) = self.pools.get_mut(&pool) {
                    state.claims.remove(&key);
                    if dedicated && let Some(n) = state.allocated.get_mut(&device) {
                        *n -= 1;
                        if *n == 0 {
                            state.allocated.remove(&device);
                        }
                    }
                }
            }
        }
        if event.event_type == EventType::Deleted {
            return;
        }
        let Some(allocation) = &claim.status.allocation else {
            return;
        };
        let reduced = reduced_claim(claim, allocation);
        let mut entries = Vec::new();
        for result in &allocation.devices.results {
            let pool: PoolKey = (result.driver.clone(), result.pool.clone());
            let dedicated = result.admin_access != Some(true) && result.share_id.is_none();
            let state = self.pools.entry(pool.clone()).or_default();
            state.claims.insert(key.clone(), reduced.clone());
            if dedicated {
                *state.allocated.entry(result.device.clone()).or_insert(0) += 1;
            }
            entries.push((pool, result.device.clone(), dedicated));
        }
        self.claim_pools.insert(key, entries);
    }

    fn pod_event(&mut self, event: &Event) {
        let Stored::Pod(pod) = &event.object else {
            return;
        };
        let key = event.key.clone();
        let now_assigned = event.event_type != EventType::Deleted && is_assigned(pod);
        if let Some(old) = self.assigned.remove(&key)
            && let Some(state) = self.nodes.get_mut(&old.node)
        {
            {
                state.requested.sub(&old.requests);
                state.non_zero.0 -= old.non_zero.0;
                state.non_zero.1 -= old.non_zero.1;
                state.pods -= 1;
            }
        }
        if now_assigned {
            let node = pod.spec.node_name.clone().unwrap_or_default();
            let assigned = Assigned {
                node: node.clone(),
                requests: pod_requests(pod),
                non_zero: pod_non_zero_requests(pod),
            };
            if let Some(state) = self.nodes.get_mut(&node) {
                state.requested.add(&assigned.requests);
                state.non_zero.0 += assigned.non_zero.0;
                state.non_zero.1 += assigned.non_zero.1;
                state.pods += 1;
            }
            self.assigned.insert(key, assigned);
        }
    }

    /// Whether an allocated claim is known under this key.
    pub fn claim_allocated(&self, key: &ObjectKey) -> bool {
        self.claim_pools.contains_key(key)
    }

    /// The pools a node sees: its own slices' pools and every non-local pool.
    fn node_pools(&self, state: &NodeState) -> BTreeSet<PoolKey> {
        state
            .slices
            .values()
            .chain(self.global_slices.values())
            .map(|s| (s.spec.driver.clone(), s.spec.pool.name.clone()))
            .collect()
    }

    /// An upper bound of the devices a node could still hand out exclusively; `None` when it
    /// cannot be bounded cheaply (non-local slices or devices allowing multiple allocations).
    pub fn free_devices(&self, node: &str) -> Option<usize> {
        let state = self.nodes.get(node)?;
        if !self.global_slices.is_empty() {
            return None;
        }
        let mut free = 0usize;
        let mut seen = BTreeSet::new();
        for slice in state.slices.values() {
            let pool = (slice.spec.driver.clone(), slice.spec.pool.name.clone());
            if !seen.insert(pool.clone()) {
                continue;
            }
            free += self.pools.get(&pool)?.free()?;
        }
        Some(free)
    }

    /// The slices the allocator sees for a node (cached).
    pub fn visible_slices(&mut self, node: &str) -> &[ResourceSlice] {
        let globals = &self.global_slices;
        let Some(state) = self.nodes.get_mut(node) else {
            return &[];
        };
        if state.visible_slices.is_none() {
            let mut all: Vec<ResourceSlice> = state.slices.values().cloned().collect();
            all.extend(globals.values().cloned());
            state.visible_slices = Some(all);
        }
        state.visible_slices.as_deref().unwrap_or(&[])
    }

    /// The allocated claims whose devices come from pools the node sees, except `exclude`.
    pub fn allocated_claims_for(
        &self,
        node: &str,
        exclude: &BTreeSet<ObjectKey>,
    ) -> Vec<ResourceClaim> {
        let Some(state) = self.nodes.get(node) else {
            return Vec::new();
        };
        let mut keys = BTreeSet::new();
        let mut out = Vec::new();
        for pool in self.node_pools(state) {
            let Some(pool_state) = self.pools.get(&pool) else {
                continue;
            };
            for (key, claim) in &pool_state.claims {
                if !exclude.contains(key) && keys.insert(key.clone()) {
                    out.push(claim.clone());
                }
            }
        }
        out
    }
}

/// A claim reduced to what the allocator reads from in-use claims: its identity and allocation.
fn reduced_claim(claim: &ResourceClaim, allocation: &AllocationResult) -> ResourceClaim {
    let mut reduced = ResourceClaim::default();
    reduced.metadata.name = claim.metadata.name.clone();
    reduced.metadata.namespace = claim.metadata.namespace.clone();
    reduced.metadata.uid = claim.metadata.uid.clone();
    reduced.status = ResourceClaimStatus {
        allocation: Some(allocation.clone()),
        ..Default::default()
    };
    reduced
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
