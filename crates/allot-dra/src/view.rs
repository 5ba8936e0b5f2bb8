//! What the allocator works out from a node and the slices it sees, kept across calls.
//!
//! kube-scheduler builds a fresh allocator per scheduling cycle over informer objects that do
//! not change between cycles. Everything here depends only on the node (its name and labels,
//! which node selectors read), the feature gates and the slices, so it is prepared once per
//! node and reused while those are the same objects: slices are recognised by
//! `metadata.uid` and `metadata.resourceVersion` (which change whenever a slice does, as the
//! store assigns them), never by hashing their content. Slices without both are not
//! recognisable: their view serves one call only.
//!
//! The devices a view speaks about are the allocator's devices in search order (index `d`),
//! which the same node, gates and slices always produce.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::sync::Arc;

use allot_api::core::v1::{Node, NodeSelector};
use allot_api::resource::v1::{DeviceAttribute, ResourceSlice, SmolStr};

use crate::Features;
use crate::attributes;
use crate::cel::FxBuild;
use crate::pools::{Pool, gather_pools};

/// Views kept beyond this many (nodes) are dropped, all at once, to bound memory.
const MAX_VIEWS: usize = 4096;

/// One attribute of every device, with its `matchAttribute` keys interned to small numbers so
/// that the pigeonhole bound counts in arrays instead of hash maps.
pub(crate) struct Column {
    pub attrs: Vec<Option<DeviceAttribute>>,
    pub keys: Vec<smallvec::SmallVec<[u32; 2]>>,
    pub ids: HashMap<attributes::Value, u32, FxBuild>,
}

/// Identity of the inputs a view depends on.
#[derive(PartialEq, Eq)]
struct Key {
    node: String,
    /// The node's labels in key order (a flat list: cheaper to walk than a second map), when
    /// they matter: only node selectors read them, so when no slice and no device of the
    /// view's slices has one, they are not kept and not compared (a real node carries a dozen
    /// labels or more, and a label change then leaves the view as it was).
    labels: Option<Vec<(String, String)>>,
    features: Features,
    /// `(uid, resourceVersion)` of every slice, in input order.
    slices: Vec<(String, String)>,
}

impl Key {
    /// Whether the key describes these inputs, without building a key for them.
    fn matches(&self, node: &Node, features: &Features, slices: &[&ResourceSlice]) -> bool {
        self.features == *features
            && same(&self.node, &node.metadata.name)
            && self.slices.len() == slices.len()
            && self.labels.as_ref().is_none_or(|labels| {
                labels.len() == node.metadata.labels.len()
                    && labels
                        .iter()
                        .zip(&node.metadata.labels)
                        .all(|((k, v), (key, value))| same(k, key) && same(v, value))
            })
            && self.slices.iter().zip(slices).all(|((uid, rv), slice)| {
                same(uid, &slice.metadata.uid) && same(rv, &slice.metadata.resource_version)
            })
    }

    /// The key of these inputs, or `None` when a slice cannot be recognised again.
    fn of(node: &Node, features: &Features, slices: &[&ResourceSlice]) -> Option<Self> {
        let selectors = slices.iter().any(|slice| {
            slice.spec.node_selector.is_some()
                || slice
                    .spec
                    .devices
                    .iter()
                    .any(|device| device.node_selector.is_some())
        });
        let slices = slices
            .iter()
            .map(|slice| {
                let (uid, rv) = (&slice.metadata.uid, &slice.metadata.resource_version);
                (!uid.is_empty() && !rv.is_empty()).then(|| (uid.clone(), rv.clone()))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Key {
            node: node.metadata.name.clone(),
            labels: selectors.then(|| {
                node.metadata
                    .labels
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            }),
            features: *features,
            slices,
        })
    }
}

/// Per-device facts of one node's slices, filled on first use.
#[derive(Default)]
pub(crate) struct NodeView {
    key: Option<Key>,
    /// Content hashes of devices, for the cross-call verdict cache.
    pub hashes: RefCell<Vec<Option<u128>>>,
    /// Attribute columns by (attribute name, list semantics).
    columns: RefCell<HashMap<(String, bool), Rc<Column>, FxBuild>>,
    /// The pools the node sees, once gathered.
    pools: RefCell<Option<Vec<PoolShape>>>,
    /// Device indexes by name, once numbered.
    index: RefCell<Option<Rc<DeviceIndex>>>,
    /// Selector rows by the compile-cache ids of a request's selectors (its class's, then its
    /// own): per device, whether it is selectable: its binding conditions (if any) may be
    /// used, the selectors all accept it and per-device node selection admits it;
    /// `None` when some device raised an error (the search then evaluates per device, so that
    /// the error surfaces where upstream's does).
    rows: RefCell<HashMap<Vec<usize>, Option<Row>, FxBuild>>,
    /// The devices in search order, for the fast path, once laid out.
    flat: RefCell<Option<Rc<Flat>>>,
    /// The fast path's plans of the claim specs it allocated on this node last (see
    /// [`crate::fast`]), oldest first.
    pub plans: RefCell<Vec<Rc<crate::fast::Plan>>>,
    /// The fast path's buffers.
    pub scratch: RefCell<crate::fast::Scratch>,
    /// The node selector `metadata.name In [node]` of results on this node, shared by them.
    named: RefCell<Option<Arc<NodeSelector>>>,
}

/// The node's devices in search order (index `d`), laid out once per view for the fast path
/// ([`crate::fast`]).
pub(crate) struct Flat {
    /// Per device: the position of its slice in the input's slices and its position in that
    /// slice's devices.
    pub devices: Vec<(u32, u32)>,
    /// Per device: draws from no counter set, does not ask for multiple allocations, has no
    /// capacity with a request policy and no taints of its own; only such devices are handed
    /// out by the fast path.
    pub simple: Vec<bool>,
    /// Per device: an allocation of it names the node by name (its slice, or the device
    /// itself under per-device node selection, gives a node name, or the device binds to the
    /// node), so the result's node selector is `metadata.name In [node]` whatever else is
    /// picked with it.
    pub named: Vec<bool>,
    /// Per device: its driver, pool and name as allocation results hold them (shared).
    pub names: Vec<[SmolStr; 3]>,
    /// Device indexes by driver, pool and name.
    pub index: Rc<DeviceIndex>,
}

/// Per device of a view: selectable by some request.
pub(crate) type Row = Rc<[bool]>;

/// Selector rows kept per view beyond this many are dropped, all at once, to bound memory.
const MAX_ROWS: usize = 1024;

impl NodeView {
    /// A view that serves one call only.
    fn transient() -> Self {
        NodeView {
            key: None,
            hashes: RefCell::default(),
            columns: RefCell::default(),
            pools: RefCell::default(),
            index: RefCell::default(),
            rows: RefCell::default(),
            flat: RefCell::default(),
            plans: RefCell::default(),
            scratch: RefCell::default(),
            named: RefCell::default(),
        }
    }

    /// The node selector of results that name this view's node (the node is part of the
    /// view's key), built once and shared.
    pub(crate) fn named_selector(&self, node: &str) -> Arc<NodeSelector> {
        Arc::clone(
            self.named
                .borrow_mut()
                .get_or_insert_with(|| crate::search::named_node(node)),
        )
    }

    /// The devices in search order, laid out on first use; `None` for views that serve one
    /// call only, and when gathering the pools fails (the general path reports that).
    pub(crate) fn flat(
        &self,
        slices: &[&ResourceSlice],
        node: &Node,
        features: &Features,
    ) -> Option<Rc<Flat>> {
        if !self.is_kept() {
            return None;
        }
        if let Some(flat) = self.flat.borrow().as_ref() {
            return Some(Rc::clone(flat));
        }
        let pools = self.pools(slices, node, features).ok()?;
        let mut devices = Vec::new();
        let mut simple = Vec::new();
        let mut named = Vec::new();
        let mut names = Vec::new();
        for pool in &pools {
            for slice in &pool.slices {
                let at = position(slices, slice)?;
                let driver = SmolStr::from(&slice.spec.driver);
                let pool_name = SmolStr::from(&slice.spec.pool.name);
                for (i, device) in slice.spec.devices.iter().enumerate() {
                    names.push([
                        driver.clone(),
                        pool_name.clone(),
                        SmolStr::from(&device.name),
                    ]);
                    devices.push((u32::try_from(at).ok()?, u32::try_from(i).ok()?));
                    let node_name = if slice.spec.per_device_node_selection == Some(true) {
                        &device.node_name
                    } else {
                        &slice.spec.node_name
                    };
                    named.push(node_name.is_some() || device.binds_to_node == Some(true));
                    simple.push(
                        device.consumes_counters.is_empty()
                            && device.allow_multiple_allocations != Some(true)
                            && device.taints.is_empty()
                            && device
                                .capacity
                                .values()
                                .all(|capacity| capacity.request_policy.is_none()),
                    );
                }
            }
        }
        let flat = Rc::new(Flat {
            devices,
            simple,
            named,
            names,
            index: self.index(&pools),
        });
        *self.flat.borrow_mut() = Some(Rc::clone(&flat));
        Some(flat)
    }

    /// Whether this view is kept across calls (so that rows are worth keeping in it).
    pub(crate) fn is_kept(&self) -> bool {
        self.key.is_some()
    }

    /// The kept selector row of selector ids `ids`, if worked out before.
    pub(crate) fn row(&self, ids: &[usize]) -> Option<Option<Rc<[bool]>>> {
        self.rows.borrow().get(ids).cloned()
    }

    /// Keeps a selector row.
    pub(crate) fn keep_row(&self, ids: Vec<usize>, row: Option<Rc<[bool]>>) {
        let mut rows = self.rows.borrow_mut();
        if rows.len() >= MAX_ROWS {
            rows.clear();
        }
        rows.insert(ids, row);
    }

    /// The column of attribute `name` over `devices` (driver and attributes per device in
    /// search order), built on first use.
    pub(crate) fn column<'d>(
        &self,
        name: &str,
        list: bool,
        devices: impl Iterator<Item = (&'d str, &'d BTreeMap<String, DeviceAttribute>)>,
    ) -> Rc<Column> {
        if let Some(column) = self.columns.borrow().get(&(name.to_string(), list)) {
            return Rc::clone(column);
        }
        let mut column = Column {
            attrs: Vec::new(),
            keys: Vec::new(),
            ids: HashMap::default(),
        };
        for (driver, attrs) in devices {
            let attribute = attributes::lookup(attrs, driver, name);
            let mut keys = smallvec::SmallVec::new();
            if let Some(attribute) = attribute {
                for value in attributes::match_keys(attribute, list) {
                    let next = column.ids.len() as u32;
                    keys.push(*column.ids.entry(value).or_insert(next));
                }
            }
            column.attrs.push(attribute.cloned());
            column.keys.push(keys);
        }
        let column = Rc::new(column);
        self.columns
            .borrow_mut()
            .insert((name.to_string(), list), Rc::clone(&column));
        column
    }
}

/// The views of the nodes seen so far, by node name.
#[derive(Default)]
pub(crate) struct Views {
    by_node: RefCell<HashMap<String, Rc<NodeView>, FxBuild>>,
    /// The view handed out last: a caller that allocates on one node call after call (or the
    /// search after the fast path) finds it without hashing the node name.
    front: RefCell<Option<Rc<NodeView>>>,
}

impl Views {
    /// The view of `node` with these gates and slices: the kept one when the inputs are the
    /// same objects, else a new one (kept when the slices can be recognised again).
    pub(crate) fn get(
        &self,
        node: &Node,
        features: &Features,
        slices: &[&ResourceSlice],
    ) -> Rc<NodeView> {
        if let Some(view) = self.front.borrow().as_ref()
            && view
                .key
                .as_ref()
                .is_some_and(|key| key.matches(node, features, slices))
        {
            return Rc::clone(view);
        }
        if let Some(view) = self.by_node.borrow().get(&node.metadata.name)
            && view
                .key
                .as_ref()
                .is_some_and(|key| key.matches(node, features, slices))
        {
            *self.front.borrow_mut() = Some(Rc::clone(view));
            return Rc::clone(view);
        }
        let mut view = NodeView::transient();
        let Some(key) = Key::of(node, features, slices) else {
            return Rc::new(view);
        };
        view.key = Some(key);
        let view = Rc::new(view);
        let mut by_node = self.by_node.borrow_mut();
        if by_node.len() >= MAX_VIEWS && !by_node.contains_key(&node.metadata.name) {
            by_node.clear();
        }
        by_node.insert(node.metadata.name.clone(), Rc::clone(&view));
        *self.front.borrow_mut() = Some(Rc::clone(&view));
        view
    }

    /// How many nodes have a view kept.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.by_node.borrow().len()
    }
}

/// A gathered pool with its slices as positions in the input's slices.
pub(crate) struct PoolShape {
    /// A slice of the pool (for its driver and pool name).
    named_by: usize,
    incomplete: bool,
    invalid: Option<String>,
    slices: Vec<usize>,
    not_targeting: Vec<usize>,
    /// Counter sets in name order, as (slice, position in its `sharedCounters`).
    counter_sets: Vec<(usize, usize)>,
}

/// The position of `slice` in `slices` (it is one of them).
fn position(slices: &[&ResourceSlice], slice: &ResourceSlice) -> Option<usize> {
    slices.iter().position(|s| std::ptr::eq(*s, slice))
}

impl PoolShape {
    /// The shape of `pool`, gathered from `slices`.
    fn of(pool: &Pool<'_>, slices: &[&ResourceSlice]) -> Option<Self> {
        let named_by = slices
            .iter()
            .position(|s| s.spec.driver == pool.driver && s.spec.pool.name == pool.name)?;
        let positions = |list: &[&ResourceSlice]| -> Option<Vec<usize>> {
            list.iter().map(|slice| position(slices, slice)).collect()
        };
        let mut counter_sets = Vec::with_capacity(pool.counter_sets.len());
        for set in pool.counter_sets.values() {
            let found = slices.iter().enumerate().find_map(|(i, slice)| {
                slice
                    .spec
                    .shared_counters
                    .iter()
                    .position(|s| std::ptr::eq(s, *set))
                    .map(|j| (i, j))
            })?;
            counter_sets.push(found);
        }
        Some(PoolShape {
            named_by,
            incomplete: pool.incomplete,
            invalid: pool.invalid.clone(),
            slices: positions(&pool.slices)?,
            not_targeting: positions(&pool.slices_not_targeting)?,
            counter_sets,
        })
    }

    /// The pool again, over the same slices.
    fn pool<'a>(&self, slices: &'a [&'a ResourceSlice]) -> Pool<'a> {
        let named = &slices[self.named_by].spec;
        Pool {
            driver: named.driver.as_str(),
            name: named.pool.name.as_str(),
            incomplete: self.incomplete,
            invalid: self.invalid.clone(),
            slices: self.slices.iter().map(|&i| slices[i]).collect(),
            slices_not_targeting: self.not_targeting.iter().map(|&i| slices[i]).collect(),
            counter_sets: self
                .counter_sets
                .iter()
                .map(|&(i, j)| {
                    let set = &slices[i].spec.shared_counters[j];
                    (set.name.as_str(), set)
                })
                .collect(),
        }
    }
}

impl NodeView {
    /// The pools `node` sees (see [`gather_pools`]), gathered on first use; a gathering that
    /// fails is not kept.
    pub(crate) fn pools<'a>(
        &self,
        slices: &'a [&'a ResourceSlice],
        node: &Node,
        features: &Features,
    ) -> Result<Vec<Pool<'a>>, crate::Error> {
        if let Some(shapes) = self.pools.borrow().as_ref() {
            return Ok(shapes.iter().map(|shape| shape.pool(slices)).collect());
        }
        let pools = gather_pools(slices, node, features)?;
        if self.key.is_some() {
            let shapes: Option<Vec<PoolShape>> = pools
                .iter()
                .map(|pool| PoolShape::of(pool, slices))
                .collect();
            *self.pools.borrow_mut() = shapes;
        }
        Ok(pools)
    }
}

#[cfg(test)]
mod tests {
    use crate::{CelCache, Outcome, Scenario, allocate_with_cache};

    const GPU8: &str = include_str!("../../../bench/dra/gpu8-1claim-1gpu.yaml");

    /// The device allocated to the scenario's one claim.
    fn allocated_device(scenario: &Scenario, cache: &CelCache) -> String {
        let features = scenario.features().expect("features");
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &allocated);
        match allocate_with_cache(&input, &features, cache) {
            Ok(Outcome::Allocated(results)) => results[0].devices.results[0].device.to_string(),
            other => panic!("expected an allocation, got {other:?}"),
        }
    }

    #[test]
    fn a_view_is_kept_for_the_same_slices_and_replaced_for_changed_ones() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        assert_eq!(cache.views.len(), 1);
        let node = scenario.node(None).expect("node").clone();
        let features = scenario.features().expect("features");
        let kept = cache.views.get(
            &node,
            &features,
            &scenario.slices.iter().collect::<Vec<_>>(),
        );
        assert!(std::rc::Rc::ptr_eq(
            &kept,
            &cache.views.get(
                &node,
                &features,
                &scenario.slices.iter().collect::<Vec<_>>()
            )
        ));
        // The driver rewrites the slice: gpu-0 is no GPU any more, and the store gives the
        // slice a new resourceVersion; the kept view must not answer for it.
        let device = &mut scenario.slices[0].spec.devices[0];
        device
            .attributes
            .get_mut("type")
            .expect("type attribute")
            .string_value = Some("nic".to_string());
        scenario.slices[0].metadata.resource_version = "2".to_string();
        assert_eq!(allocated_device(&scenario, &cache), "gpu-1");
        assert!(!std::rc::Rc::ptr_eq(
            &kept,
            &cache.views.get(
                &node,
                &features,
                &scenario.slices.iter().collect::<Vec<_>>()
            )
        ));
        assert_eq!(cache.views.len(), 1, "one view per node");
    }

    /// Node labels are part of a view's identity only when a node selector could read them.
    #[test]
    fn node_labels_count_only_when_a_slice_or_device_has_a_node_selector() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        let features = scenario.features().expect("features");
        let view_of = |scenario: &Scenario| {
            let node = scenario.node(None).expect("node");
            cache
                .views
                .get(node, &features, &scenario.slices.iter().collect::<Vec<_>>())
        };
        // The slice names its node: a new label leaves the view as it was.
        let kept = view_of(&scenario);
        scenario.nodes[0]
            .metadata
            .labels
            .insert("example.com/rack".into(), "r1".into());
        assert!(std::rc::Rc::ptr_eq(&kept, &view_of(&scenario)));

        // The slice selects nodes by label: the view follows the labels.
        let slice = &mut scenario.slices[0];
        slice.spec.node_name = None;
        slice.spec.node_selector = Some(allot_api::core::v1::NodeSelector {
            node_selector_terms: vec![allot_api::core::v1::NodeSelectorTerm {
                match_expressions: vec![allot_api::core::v1::NodeSelectorRequirement {
                    key: "example.com/rack".into(),
                    operator: allot_api::core::v1::NodeSelectorOperator::In,
                    values: vec!["r1".into()],
                }],
                match_fields: Vec::new(),
            }],
        });
        slice.metadata.resource_version = "2".into();
        let selecting = view_of(&scenario);
        assert!(!std::rc::Rc::ptr_eq(&kept, &selecting));
        assert!(std::rc::Rc::ptr_eq(&selecting, &view_of(&scenario)));
        assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        scenario.nodes[0]
            .metadata
            .labels
            .insert("example.com/rack".into(), "r2".into());
        assert!(!std::rc::Rc::ptr_eq(&selecting, &view_of(&scenario)));
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &allocated);
        assert!(
            !allocate_with_cache(&input, &features, &cache)
                .expect("no error")
                .is_allocated(),
            "the node no longer matches the slice's selector"
        );
    }

    #[test]
    fn a_kept_plan_is_not_used_for_a_changed_class() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        // First a class without an identity (recognised by its spec).
        scenario.classes[0].metadata.uid.clear();
        scenario.classes[0].metadata.resource_version.clear();
        // The first call prepares the view, the second makes and keeps the fast path's plan,
        // the third uses it.
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        }
        // The class, same name and no identity, now excludes gpu-0.
        let selector = scenario.classes[0].spec.selectors[0]
            .cel
            .as_mut()
            .expect("cel selector");
        selector
            .expression
            .push_str(" && device.attributes[\"gpu.example.com\"].index > 0");
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-1");
        }
        // With an identity the class is recognised by uid and resourceVersion.
        scenario.classes[0].metadata.uid = "class-uid".to_string();
        scenario.classes[0].metadata.resource_version = "1".to_string();
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-1");
        }
        let selector = scenario.classes[0].spec.selectors[0]
            .cel
            .as_mut()
            .expect("cel selector");
        selector
            .expression
            .push_str(" && device.attributes[\"gpu.example.com\"].index > 1");
        scenario.classes[0].metadata.resource_version = "2".to_string();
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-2");
        }
    }

    /// Gives the scenario's first claim one selector: GPUs whose index is above `above`.
    fn only_above(scenario: &mut Scenario, above: u32) {
        let exactly = scenario.claims[0].spec.devices.requests[0]
            .exactly
            .as_mut()
            .expect("exactly");
        exactly.selectors = vec![allot_api::resource::v1::DeviceSelector {
            cel: Some(allot_api::resource::v1::CelDeviceSelector {
                expression: format!("device.attributes[\"gpu.example.com\"].index > {above}"),
            }),
        }];
    }

    #[test]
    fn a_kept_plan_follows_the_claims_identity_and_spec() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        assert!(!scenario.claims[0].metadata.uid.is_empty());
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        }
        // A write to the claim changes its resourceVersion: the new spec gets its own plan.
        only_above(&mut scenario, 2);
        scenario.claims[0].metadata.resource_version = "2".into();
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-3");
        }
        // Another claim with the same spec has the same spec number (and so the same plan).
        let number = cache.specs.number(&scenario.claims[0]);
        scenario.claims[0].metadata.uid = "another-claim".into();
        assert_eq!(cache.specs.number(&scenario.claims[0]), number);
        assert_eq!(allocated_device(&scenario, &cache), "gpu-3");
        only_above(&mut scenario, 4);
        scenario.claims[0].metadata.resource_version = "3".into();
        assert_ne!(cache.specs.number(&scenario.claims[0]), number);
        for _ in 0..3 {
            assert_eq!(allocated_device(&scenario, &cache), "gpu-5");
        }
        // Without an identity the spec itself is compared, call after call.
        scenario.claims[0].metadata.uid.clear();
        for above in [1, 5, 1, 6] {
            only_above(&mut scenario, above);
            for _ in 0..2 {
                assert_eq!(
                    allocated_device(&scenario, &cache),
                    format!("gpu-{}", above + 1)
                );
            }
        }
    }

    #[test]
    fn many_claims_are_recognised_through_the_ring_of_identities() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        // More claims than the ring holds, each seen twice (the second time by identity),
        // with specs that come back: an entry overwritten in place must answer for its new
        // claim only.
        for i in 0..40u32 {
            let claim = &mut scenario.claims[0];
            claim.metadata.uid = format!("00000000-0000-4000-8000-{i:012x}");
            claim.metadata.resource_version = format!("{}", 100 + i);
            only_above(&mut scenario, i % 7);
            for _ in 0..2 {
                assert_eq!(
                    allocated_device(&scenario, &cache),
                    format!("gpu-{}", i % 7 + 1),
                    "claim {i}"
                );
            }
        }
    }

    #[test]
    fn claims_sharing_a_uid_and_version_are_told_apart_by_name() {
        let cache = CelCache::default();
        let mut scenario = Scenario::parse(GPU8).expect("scenario");
        scenario.assign_identities();
        let mut other = scenario.claims[0].clone();
        other.metadata.name = "claim-1".into();
        let exactly = other.spec.devices.requests[0]
            .exactly
            .as_mut()
            .expect("exactly");
        exactly.count = Some(2);
        scenario.claims.push(other);
        let features = scenario.features().expect("features");
        let node = scenario.node(None).expect("node");
        let claims = scenario.claims_to_allocate().expect("claims");
        let allocated = scenario.allocated_claims(&claims);
        let input = scenario.input(node, &claims, &allocated);
        for _ in 0..3 {
            let Ok(Outcome::Allocated(results)) = allocate_with_cache(&input, &features, &cache)
            else {
                panic!("both claims fit");
            };
            let devices = |i: usize| -> Vec<String> {
                results[i]
                    .devices
                    .results
                    .iter()
                    .map(|r| r.device.to_string())
                    .collect()
            };
            assert_eq!(devices(0), ["gpu-0"]);
            assert_eq!(devices(1), ["gpu-1", "gpu-2"]);
        }
    }

    #[test]
    fn short_strings_compare_as_strings() {
        let words = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abcde",
            "gpu-7",
            "gpu-12",
            "node-1x",
            "abcdefgh",
            "gpu.example.com",
            "gpu.example.co",
            "0123456789abcdef",
            "0123456789abcdeg",
            "0123456789abcdefg",
            "0123456789abcdefh",
        ];
        for a in words {
            for b in words {
                assert_eq!(super::same(a, b), a == b, "{a:?} vs {b:?}");
            }
        }
        // Every byte position counts.
        let base = "0123456789abcdef".to_string();
        for n in 1..=base.len() {
            let word = &base[..n];
            for i in 0..n {
                let mut other = word.as_bytes().to_vec();
                other[i] ^= 1;
                let other = String::from_utf8(other).expect("ascii");
                assert!(!super::same(word, &other), "{word:?} vs {other:?}");
            }
        }
    }

    #[test]
    fn pool_tables_find_every_name_and_keep_the_last_of_a_duplicate() {
        let names: Vec<(String, usize)> = (0..100)
            .map(|i| (format!("gpu-{i}"), i))
            .chain([("gpu-3".to_string(), 100)])
            .collect();
        let index = super::PoolIndex::of(names);
        for i in 0..100 {
            let expected = if i == 3 { 100 } else { i };
            assert_eq!(index.get(&format!("gpu-{i}")), Some(expected));
        }
        assert_eq!(index.get("gpu-100"), None);
        assert_eq!(index.get(""), None);
        assert_eq!(super::PoolIndex::of(Vec::new()).get("gpu-0"), None);
    }

    #[test]
    fn slices_without_identity_are_prepared_per_call() {
        let cache = CelCache::default();
        let scenario = Scenario::parse(GPU8).expect("scenario");
        assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        assert_eq!(allocated_device(&scenario, &cache), "gpu-0");
        assert_eq!(cache.views.len(), 0);
    }
}

/// The allocator's device index (search order) of each visible device, by driver, pool and
/// device name.
#[derive(Default)]
pub(crate) struct DeviceIndex {
    pools: Vec<(String, String, PoolIndex)>,
}

/// The device indexes of one pool, by device name: an open-addressing table of name hashes
/// (names are short and looked up for every device of every allocated claim on every call,
/// so a probe compares a hash and then the name in place).
#[derive(Default)]
pub(crate) struct PoolIndex {
    /// Per table slot: the name's hash and its entry + 1 (0: empty).
    slots: Vec<(u64, u32)>,
    /// The names with their device index.
    entries: Vec<(Box<str>, usize)>,
}

impl PoolIndex {
    fn hash(name: &str) -> u64 {
        use std::hash::BuildHasher;
        FxBuild::default().hash_one(name)
    }

    /// The slot of `name`: where it is, or the empty slot where it belongs.
    fn slot(&self, name: &str, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let (h, entry) = self.slots[at];
            if entry == 0 || (h == hash && same(&self.entries[entry as usize - 1].0, name)) {
                return at;
            }
            at = (at + 1) & mask;
        }
    }

    /// Builds the table of `names` (device name, index); a name given twice keeps its last
    /// index.
    fn of(names: Vec<(String, usize)>) -> Self {
        let size = (names.len() * 2).next_power_of_two().max(2);
        let mut index = PoolIndex {
            slots: vec![(0, 0); size],
            entries: Vec::with_capacity(names.len()),
        };
        for (name, d) in names {
            let hash = Self::hash(&name);
            let at = index.slot(&name, hash);
            match index.slots[at] {
                (_, 0) => {
                    index.entries.push((name.into_boxed_str(), d));
                    index.slots[at] = (hash, index.entries.len() as u32);
                }
                (_, entry) => index.entries[entry as usize - 1].1 = d,
            }
        }
        index
    }

    /// The index of the device called `name`.
    #[inline]
    pub(crate) fn get(&self, name: &str) -> Option<usize> {
        if self.slots.is_empty() {
            return None;
        }
        match self.slots[self.slot(name, Self::hash(name))] {
            (_, 0) => None,
            (_, entry) => Some(self.entries[entry as usize - 1].1),
        }
    }
}

/// String equality without a `memcmp` call for short strings (names, pools, drivers): two
/// overlapping loads cover 4 to 16 bytes, fewer bytes are compared one by one.
#[inline(always)]
pub(crate) fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let n = a.len();
    if n != b.len() {
        return false;
    }
    #[inline(always)]
    fn word(s: &[u8], at: usize) -> u64 {
        let mut word = [0u8; 8];
        word.copy_from_slice(&s[at..at + 8]);
        u64::from_le_bytes(word)
    }
    #[inline(always)]
    fn half(s: &[u8], at: usize) -> u32 {
        let mut half = [0u8; 4];
        half.copy_from_slice(&s[at..at + 4]);
        u32::from_le_bytes(half)
    }
    match n {
        0..4 => a.iter().zip(b).all(|(x, y)| x == y),
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        8..=16 => word(a, 0) == word(b, 0) && word(a, n - 8) == word(b, n - 8),
        _ => a == b,
    }
}

impl DeviceIndex {
    /// Numbers the devices of `pools` in search order (pools, their slices, their devices).
    fn of(pools: &[Pool<'_>]) -> Self {
        let mut index = DeviceIndex::default();
        let mut d = 0;
        for pool in pools {
            let mut names = Vec::new();
            for slice in &pool.slices {
                for device in &slice.spec.devices {
                    names.push((device.name.clone(), d));
                    d += 1;
                }
            }
            index.pools.push((
                pool.driver.to_string(),
                pool.name.to_string(),
                PoolIndex::of(names),
            ));
        }
        index
    }

    /// The index of a visible device.
    pub(crate) fn get(&self, driver: &str, pool: &str, device: &str) -> Option<usize> {
        self.pool(driver, pool).and_then(|names| names.get(device))
    }

    /// The device indexes of a pool the node sees.
    pub(crate) fn pool(&self, driver: &str, pool: &str) -> Option<&PoolIndex> {
        self.pools
            .iter()
            .find(|(d, p, _)| same(d, driver) && same(p, pool))
            .map(|(_, _, names)| names)
    }
}

impl NodeView {
    /// The device index of `pools` (the pools this view gathered), built on first use.
    pub(crate) fn index(&self, pools: &[Pool<'_>]) -> Rc<DeviceIndex> {
        if let Some(index) = self.index.borrow().as_ref() {
            return Rc::clone(index);
        }
        let index = Rc::new(DeviceIndex::of(pools));
        *self.index.borrow_mut() = Some(Rc::clone(&index));
        index
    }
}
