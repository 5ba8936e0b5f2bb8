//! Placed pods counted per topology pair (node label key, value): the one counting that
//! InterPodAffinity (its PreFilter and PreScore) and PodTopologySpread (its PreFilter and
//! PreScore) share, kept across scheduling cycles.
//!
//! Each of those points sums, over every pod placed in the cluster, what that pod contributes
//! to the domains of its node (a pod matching an affinity term counts once in the node's
//! domain of the term's key, a placed pod's anti-affinity term matching the incoming pod
//! counts in the node's domain of that term's key, ...). Upstream recounts every placed pod in
//! every cycle (in parallel); that makes a cycle O(placed pods), and a workload of thousands
//! of pods with affinity or spreading quadratic. Here a [`Tallies`] memo keeps the counts of
//! each *counter* (what is counted, named by a string identity that includes everything the
//! contribution depends on: selectors, namespaces, the incoming pod's labels, keys) and brings
//! them up to date from the cache's log of pods added to and removed from nodes
//! ([`Cache::pod_changes_since`]): a cycle costs the pods placed or removed since the counter
//! last served, not every placed pod. A counter is recounted from scratch when the nodes'
//! topology changed (a node added, removed, relabelled or retainted:
//! [`Cache::topology_version`]), when the cache's log no longer reaches back to it, when it is
//! another cache, or when replaying would cost more than recounting.
//!
//! The counts are the same as a recount's, entry for entry: an entry exists while at least one
//! contribution is in it (a sum of weights may be 0 with contributions in it, as upstream's
//! maps keep such entries), or, for a counter that [`Counter::seeds`] domains, while its node
//! exists.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::cache::{Cache, NodeInfo};
use crate::framework::PodInfo;

/// One pair's count: the summed weights and how many contributions make them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Count {
    /// The summed weights (pods, or score weights).
    pub sum: i64,
    /// Contributions in the sum.
    pub contributions: i64,
}

/// Counts per topology key, then per value.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairCounts {
    keys: BTreeMap<String, BTreeMap<String, Count>>,
    /// Keep entries without contributions (seeded domains).
    keep_empty: bool,
}

impl PairCounts {
    /// Empty counts; `keep_empty` keeps a pair whose last contribution went (a seeded domain).
    pub fn new(keep_empty: bool) -> Self {
        PairCounts {
            keys: BTreeMap::new(),
            keep_empty,
        }
    }

    /// The summed weights of a pair (0 when absent).
    pub fn get(&self, key: &str, value: &str) -> i64 {
        self.keys
            .get(key)
            .and_then(|values| values.get(value))
            .map_or(0, |c| c.sum)
    }

    /// The pairs of one key, by value.
    pub fn domains(&self, key: &str) -> Option<&BTreeMap<String, Count>> {
        self.keys.get(key)
    }

    /// Every key with its values.
    pub fn iter(&self) -> impl Iterator<Item = (&String, &BTreeMap<String, Count>)> {
        self.keys.iter()
    }

    /// Whether no pair is counted.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Adds `weight` to a pair as one more contribution (`sign` 1) or takes it away as one
    /// contribution less (`sign` -1).
    pub fn add(&mut self, key: &str, value: &str, weight: i64, sign: i64) {
        if !self.keys.contains_key(key) {
            self.keys.insert(key.to_string(), BTreeMap::new());
        }
        let Some(values) = self.keys.get_mut(key) else {
            return;
        };
        let count = match values.get_mut(value) {
            Some(c) => c,
            None => values.entry(value.to_string()).or_default(),
        };
        count.sum += weight * sign;
        count.contributions += sign;
        if count.contributions == 0 && !self.keep_empty {
            values.remove(value);
            if values.is_empty() {
                self.keys.remove(key);
            }
        }
    }

    /// Adds a pair without a contribution (a domain that exists), if it is not there.
    pub fn seed(&mut self, key: &str, value: &str) {
        if let Some(values) = self.keys.get_mut(key) {
            if !values.contains_key(value) {
                values.insert(value.to_string(), Count::default());
            }
            return;
        }
        self.keys.insert(
            key.to_string(),
            BTreeMap::from([(value.to_string(), Count::default())]),
        );
    }

    /// Adds (`sign` 1) or takes away (`sign` -1) what `other` on `node` contributes.
    pub fn apply(&mut self, counter: &dyn Counter, other: &PodInfo, node: &NodeInfo, sign: i64) {
        counter.contribute(other, node, &mut |key, weight| {
            if let Some(value) = node.labels().get(key) {
                self.add(key, value, weight, sign);
            }
        });
    }
}

/// What is counted: each placed pod's contributions to its node's pairs.
pub trait Counter {
    /// Calls `add(key, weight)` once per contribution of `other`, placed on `node`, to the
    /// node's pair of `key` (a node without the label gets nothing).
    fn contribute(&self, other: &PodInfo, node: &NodeInfo, add: &mut dyn FnMut(&str, i64));

    /// Calls `seed(key)` for every domain of `node` that exists without contributions.
    fn seeds(&self, _node: &NodeInfo, _seed: &mut dyn FnMut(&str)) {}

    /// Whether seeded pairs stay without contributions.
    fn keep_empty(&self) -> bool {
        false
    }

    /// A (namespace, label key, value) that every contributing pod carries, when there is
    /// one: a recount then looks only at those pods (the cache's label index) instead of every
    /// placed pod.
    fn candidates(&self) -> Option<(&str, &str, &str)> {
        None
    }

    /// Names everything [`Counter::seeds`] depends on besides the nodes, when the counter
    /// seeds domains: counters of equal seeds ids seed the same domains, which a [`Tallies`]
    /// then finds once per node topology instead of once per counter (a spread constraint's
    /// domains do not depend on its selector, and every new ReplicaSet brings a new selector).
    fn seeds_id(&self) -> Option<String> {
        None
    }
}

/// Counts every placed pod of the cluster afresh.
pub fn recount(cluster: &Cache, counter: &dyn Counter) -> PairCounts {
    let mut counts = seeded(cluster, counter);
    add_placed(&mut counts, cluster, counter);
    counts
}

/// The counter's seeded domains, without contributions.
fn seeded(cluster: &Cache, counter: &dyn Counter) -> PairCounts {
    let mut counts = PairCounts::new(counter.keep_empty());
    for node in cluster.nodes_in_order() {
        counter.seeds(node, &mut |key| {
            if let Some(value) = node.labels().get(key) {
                counts.seed(key, value);
            }
        });
    }
    counts
}

/// Adds every placed pod's contributions.
fn add_placed(counts: &mut PairCounts, cluster: &Cache, counter: &dyn Counter) {
    if let Some((namespace, label, value)) = counter.candidates() {
        for (node, other) in cluster.assigned_labelled(namespace, label, value) {
            counts.apply(counter, other, node, 1);
        }
    } else {
        for node in cluster.nodes_in_order() {
            for other in &node.pods {
                counts.apply(counter, other, node, 1);
            }
        }
    }
}

/// One counter's counts and where in the cache's history they stand.
#[derive(Debug)]
struct Tally {
    cache: u64,
    topology: u64,
    seen: u64,
    counts: Arc<PairCounts>,
}

/// At most this many counters are kept (beyond, the memo starts over).
const MAX_TALLIES: usize = 4096;

/// Seeded domains shared by the counters of one seeds id, and the node topology they are of.
#[derive(Debug)]
struct Seeds {
    cache: u64,
    topology: u64,
    counts: PairCounts,
}

/// The counts of the counters a plugin used, kept across cycles (see the module comment).
#[derive(Debug, Default)]
pub struct Tallies {
    entries: HashMap<String, Tally>,
    /// By [`Counter::seeds_id`].
    seeds: HashMap<String, Seeds>,
}

impl Tallies {
    /// The counts of `counter` (named `id`: equal ids must count equally) over the pods
    /// placed in `cluster` now.
    pub fn counts(
        &mut self,
        cluster: &Cache,
        id: String,
        counter: &dyn Counter,
    ) -> Arc<PairCounts> {
        let end = cluster.pod_changes_end();
        if let Some(tally) = self.entries.get_mut(&id)
            && tally.cache == cluster.instance()
            && tally.topology == cluster.topology_version()
            && let Some(changes) = cluster.pod_changes_since(tally.seen)
            && changes.len() <= cluster.assigned_pod_total().max(64)
        {
            if !changes.is_empty() {
                let counts = Arc::make_mut(&mut tally.counts);
                for (slot, info, sign) in changes {
                    if let Some(node) = cluster.node(*slot) {
                        counts.apply(counter, info, node, *sign);
                    }
                }
                tally.seen = end;
            }
            return Arc::clone(&tally.counts);
        }
        let counts = Arc::new(self.recount(cluster, counter));
        if self.entries.len() >= MAX_TALLIES && !self.entries.contains_key(&id) {
            self.entries.clear();
        }
        self.entries.insert(
            id,
            Tally {
                cache: cluster.instance(),
                topology: cluster.topology_version(),
                seen: end,
                counts: Arc::clone(&counts),
            },
        );
        counts
    }

    /// [`recount`], starting from the seeded domains kept for the counter's seeds id.
    fn recount(&mut self, cluster: &Cache, counter: &dyn Counter) -> PairCounts {
        let Some(id) = counter.seeds_id() else {
            return recount(cluster, counter);
        };
        let (instance, topology) = (cluster.instance(), cluster.topology_version());
        let mut counts = match self.seeds.get(&id) {
            Some(s) if s.cache == instance && s.topology == topology => s.counts.clone(),
            _ => {
                let counts = seeded(cluster, counter);
                if self.seeds.len() >= MAX_TALLIES {
                    self.seeds.clear();
                }
                let kept = Seeds {
                    cache: instance,
                    topology,
                    counts: counts.clone(),
                };
                self.seeds.insert(id, kept);
                counts
            }
        };
        add_placed(&mut counts, cluster, counter);
        counts
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;
    use std::sync::Arc;

    use allot_api::core::v1::{Node, Pod};
    use allot_runtime::SimTime;
    use allot_store::{Kind, ObjectKey, Store, Stored};
    use proptest::prelude::*;

    use super::*;

    /// Pods labelled `app: x` per zone, every zone of a node present.
    struct Zones;

    impl Counter for Zones {
        fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
            if other.pod.metadata.labels.get("app").map(String::as_str) == Some("x") {
                add("zone", 1);
            }
        }

        fn seeds(&self, _node: &NodeInfo, seed: &mut dyn FnMut(&str)) {
            seed("zone");
        }

        fn keep_empty(&self) -> bool {
            true
        }

        fn seeds_id(&self) -> Option<String> {
            Some("zone".into())
        }
    }

    /// [`Zones`] recounted from the cache's label index (pods labelled `app: x` only).
    struct IndexedZones;

    impl Counter for IndexedZones {
        fn contribute(&self, other: &PodInfo, node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
            Zones.contribute(other, node, add)
        }

        fn seeds(&self, node: &NodeInfo, seed: &mut dyn FnMut(&str)) {
            Zones.seeds(node, seed)
        }

        fn keep_empty(&self) -> bool {
            true
        }

        fn candidates(&self) -> Option<(&str, &str, &str)> {
            Some(("default", "app", "x"))
        }

        fn seeds_id(&self) -> Option<String> {
            Zones.seeds_id()
        }
    }

    /// Every pod per host and per zone, `app: x` weighing 2 and others -1 (sums may be 0).
    struct Weights;

    impl Counter for Weights {
        fn contribute(&self, other: &PodInfo, _node: &NodeInfo, add: &mut dyn FnMut(&str, i64)) {
            let x = other.pod.metadata.labels.get("app").map(String::as_str) == Some("x");
            let weight = if x { 2 } else { -1 };
            add("host", weight);
            add("zone", weight);
        }
    }

    #[derive(Debug, Clone)]
    enum Step {
        /// Node i in zone z (`None`: no zone label).
        Node(usize, Option<u8>),
        /// Pod p on node n (`None`: pending), labelled x or not, running or not.
        Pod(usize, Option<usize>, bool, bool),
        DeletePod(usize),
        DeleteNode(usize),
        Sync,
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            (0usize..4, prop::option::of(0u8..3)).prop_map(|(i, z)| Step::Node(i, z)),
            (
                0usize..12,
                prop::option::of(0usize..5),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(p, n, x, r)| Step::Pod(p, n, x, r)),
            (0usize..12).prop_map(Step::DeletePod),
            (0usize..4).prop_map(Step::DeleteNode),
            Just(Step::Sync),
            Just(Step::Sync),
        ]
    }

    fn apply(store: &mut Store, step: &Step) {
        let now = SimTime::ZERO.rfc3339();
        let put = |store: &mut Store, key: ObjectKey, stored: Stored| {
            let result = if store.get_stored(&key).is_some() {
                store.update_stored(stored).map(|_| ())
            } else {
                store.create_stored(stored, &now).map(|_| ())
            };
            result.expect("write");
        };
        match *step {
            Step::Node(i, zone) => {
                let mut node = Node::default();
                node.metadata.name = format!("node-{i}");
                node.metadata.labels = BTreeMap::from([("host".into(), format!("node-{i}"))]);
                if let Some(z) = zone {
                    node.metadata.labels.insert("zone".into(), format!("z{z}"));
                }
                let key = ObjectKey::new(Kind::Node, "", node.metadata.name.clone());
                put(store, key, Stored::Node(Arc::new(node)));
            }
            Step::Pod(p, node, x, running) => {
                let mut pod = Pod::default();
                pod.metadata.name = format!("pod-{p}");
                pod.metadata.namespace = "default".into();
                let app = if x { "x" } else { "y" };
                pod.metadata.labels = BTreeMap::from([("app".into(), app.into())]);
                pod.spec.node_name = node.map(|n| format!("node-{n}"));
                pod.status.phase = Some(if running { "Running" } else { "Pending" }.into());
                let key = ObjectKey::new(Kind::Pod, "default", pod.metadata.name.clone());
                put(store, key, Stored::Pod(Arc::new(pod)));
            }
            Step::DeletePod(p) => {
                let _ = store.delete(&ObjectKey::new(Kind::Pod, "default", format!("pod-{p}")));
            }
            Step::DeleteNode(i) => {
                let _ = store.delete(&ObjectKey::new(Kind::Node, "", format!("node-{i}")));
            }
            Step::Sync => {}
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(300))]

        /// Counts kept across cycles equal a recount after any history of pods and nodes.
        #[test]
        fn kept_counts_equal_a_recount(steps in prop::collection::vec(step(), 1..80)) {
            let mut store = Store::new();
            let mut cache = Cache::default();
            let mut tallies = Tallies::default();
            for step in steps.iter().chain([&Step::Sync]) {
                apply(&mut store, step);
                if matches!(step, Step::Sync) {
                    cache.sync(&store);
                    cache.order();
                    let zones = tallies.counts(&cache, "zones".into(), &Zones);
                    prop_assert_eq!(&*zones, &recount(&cache, &Zones));
                    // The label index finds exactly the pods a walk of every node finds.
                    prop_assert_eq!(&*zones, &recount(&cache, &IndexedZones));
                    let weights = tallies.counts(&cache, "weights".into(), &Weights);
                    prop_assert_eq!(&*weights, &recount(&cache, &Weights));
                    // A counter recounted from the seeds another counter left (same seeds id)
                    // after nodes came, went or were relabelled.
                    let fresh = Tallies::default().counts(&cache, "indexed".into(), &IndexedZones);
                    let seeded = tallies.counts(&cache, format!("indexed {}", cache.topology_version()), &IndexedZones);
                    prop_assert_eq!(&*seeded, &*fresh);
                    prop_assert_eq!(&*seeded, &recount(&cache, &Zones));
                }
            }
        }
    }

    #[test]
    fn a_pod_changed_in_status_only_is_held_in_its_new_version() {
        // The cache kept the version a pod was bound with while the store moved on (every
        // running pod twice in memory).
        let mut store = Store::new();
        let mut cache = Cache::default();
        apply(&mut store, &Step::Node(0, Some(0)));
        apply(&mut store, &Step::Pod(0, Some(0), true, false));
        cache.sync(&store);
        apply(&mut store, &Step::Pod(0, Some(0), true, true));
        cache.sync(&store);
        let key = ObjectKey::new(Kind::Pod, "default", "pod-0");
        let stored = store.get::<Pod>("default", "pod-0").expect("stored");
        let held = cache.assigned_pod(&key).expect("assigned");
        assert!(std::ptr::eq(&*held.pod, stored));
        let on_node = &cache.node_by_name("node-0").expect("node").pods[0];
        assert!(Arc::ptr_eq(on_node, held));
    }
}
