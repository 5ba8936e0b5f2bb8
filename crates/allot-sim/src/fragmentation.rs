//! Fragmentation of a cluster's final state: per device class and per node, what is free, how
//! many copies of the cluster's common request shapes still fit, and how much free capacity is
//! stranded (cannot serve the largest common shape); the same for exclusive CPUs and NUMA
//! alignment.
//!
//! Everything here is computed from a store (and each node's machine and kubelet
//! configuration), without running anything: the answers come from the engines themselves.
//! Whether a device belongs to a class, and how many copies of a shape fit on a node, are asked
//! of `allot_dra::allocate` on the node's free state (its slices, with every allocated claim in
//! use), copy after copy, exactly as the scheduler would allocate them one claim at a time.
//! CPU picks are the static CPU Manager policy's own (`StaticPolicy::take_by_topology`).
//!
//! Definitions (the ones `allot simulate --fragmentation` prints and `-o json` reports):
//!
//! - A *shape* is a claim's `spec` (requests, constraints, configuration): claims with identical
//!   specs (every claim made from one template, say) are one shape. The *common shapes* are the
//!   [`Options::common`] shapes with the most claims (ties by name), plus those given with
//!   `--shape`. A shape's size in a class is the number of devices of that class one copy asks
//!   for (`count`, 1 by default; a prioritized list counts its first choice; `All` counts 0).
//! - *Free units* of a class on a node measure free capacity in whole-device equivalents: a free
//!   plain device is 1; a device that allows multiple allocations counts the smallest free
//!   fraction of its capacities; devices that consume shared counters are counted through their
//!   counter sets, each set being the smallest free fraction of its counters that the class's
//!   devices consume (a MIG-style GPU with one of seven memory slices in use is 6/7).
//! - *Fits*: how many copies of a shape the allocator places on the node one after another
//!   (capped at [`Options::max_copies`]).
//! - *Stranded units*: the free units left on the node once as many copies of the class's
//!   largest common shape (most devices of the class per copy, then most claims, then name)
//!   as fit were placed. The class's *fragmentation score* is stranded / free units over the
//!   cluster, in [0, 1]: 0 when every free unit can serve the largest shape, 1 when none can.
//! - For exclusive CPUs (nodes with the static CPU Manager policy): free CPUs are the policy's
//!   allocatable CPUs (all minus reserved) not assigned to a container (the `allot.dev/resources`
//!   annotation's `cpuIds`). The common sizes are the integer CPU requests of Guaranteed pods'
//!   containers (most frequent first, plus `--cpu-size`). A pick is *NUMA-aligned* when it spans
//!   no more NUMA nodes than the size needs (`ceil(size / CPUs per NUMA node)`); fits count
//!   aligned picks one after another; stranded CPUs are those left after the largest common
//!   size was packed; the NUMA fragmentation score is stranded / free CPUs.
//!
//! Devices that several nodes see (slices with `allNodes` or a node selector) are counted on
//! each node that sees them, and in the class totals once per such node.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::rc::Rc;

use allot_api::core::v1::{Namespace, Node, Pod};
use allot_api::meta::v1::ObjectMeta;
use allot_api::resource::v1::{
    AllocationResult, Device, DeviceAllocationMode, DeviceClaim, DeviceClass, DeviceRequest,
    DeviceRequestAllocationResult, DeviceTaintRule, ExactDeviceRequest, ResourceClaim,
    ResourceClaimSpec, ResourceClaimStatus, ResourcePool, ResourceSlice,
};
use allot_dra::{AllocationInput, CelCache, Features, Outcome};
use allot_kubelet_config::KubeletConfiguration;
use allot_store::Store;
use allot_topology::{CpuSet, NodeTopology};
use serde::Serialize;

/// What to measure beyond the defaults.
#[derive(Debug, Clone)]
pub struct Options {
    /// Shapes given by the user (`--shape`), measured besides the common ones.
    pub shapes: Vec<GivenShape>,
    /// Exclusive CPU sizes given by the user (`--cpu-size`).
    pub cpu_sizes: Vec<usize>,
    /// How many of the most frequent claim shapes and CPU sizes count as common.
    pub common: usize,
    /// At most this many copies of a shape are counted per node.
    pub max_copies: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            shapes: Vec::new(),
            cpu_sizes: Vec::new(),
            common: 4,
            max_copies: 256,
        }
    }
}

/// A shape given by the user: a claim (or a template's claim) spec.
#[derive(Debug, Clone, PartialEq)]
pub struct GivenShape {
    /// `namespace/name` of the document it came from.
    pub name: String,
    /// The namespace its copies are allocated in.
    pub namespace: String,
    /// The claim spec.
    pub spec: ResourceClaimSpec,
}

/// One common request shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Shape {
    /// `namespace/template` (or `namespace/claim`) of its first claim, or the given document.
    pub name: String,
    /// What one copy asks for, e.g. `1×gpu.example.com[selectors]`.
    pub description: String,
    /// How many claims of the input have this spec.
    pub claims: usize,
    /// Devices per copy by device class.
    pub devices: BTreeMap<String, i64>,
    /// Given with `--shape` rather than taken from the claims.
    pub given: bool,
}

/// How many copies of a shape fit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ShapeFit {
    /// The shape's name.
    pub shape: String,
    /// Copies that fit (at most the cap).
    pub copies: usize,
}

/// One device class over the whole cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClassFragmentation {
    /// The DeviceClass.
    pub class: String,
    /// Devices of the class.
    pub devices: usize,
    /// Devices of the class allocated (at least once).
    pub allocated: usize,
    /// Devices of the class not allocated, whose counters allow them.
    pub free: usize,
    /// Devices of the class not allocated, but blocked by shared counters others use.
    pub blocked: usize,
    /// Free capacity in whole-device equivalents (see the module documentation).
    pub free_units: f64,
    /// The largest common shape asking for the class.
    pub largest_shape: Option<String>,
    /// Free units left once the largest shape was packed on every node.
    pub stranded_units: f64,
    /// `stranded_units / free_units` (0 when nothing is free).
    pub score: f64,
    /// Copies of each common shape asking for the class that fit, summed over the nodes.
    pub fits: Vec<ShapeFit>,
    /// Nodes with at least one device of the class.
    pub nodes: usize,
}

/// A device class on one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeClass {
    /// The DeviceClass.
    pub class: String,
    /// Devices of the class the node sees.
    pub devices: usize,
    /// Of those, allocated.
    pub allocated: usize,
    /// Free and usable.
    pub free: usize,
    /// Free but blocked by counters.
    pub blocked: usize,
    /// Free units.
    pub free_units: f64,
    /// Stranded units.
    pub stranded_units: f64,
    /// Copies of each common shape asking for the class that fit on this node.
    pub fits: Vec<ShapeFit>,
}

/// A shared counter of a pool.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CounterUse {
    /// The driver.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The counter set.
    pub counter_set: String,
    /// The counter.
    pub counter: String,
    /// Its value.
    pub total: String,
    /// What allocated devices leave of it.
    pub free: String,
}

/// The capacity of a device that allows multiple allocations.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CapacityUse {
    /// The driver.
    pub driver: String,
    /// The pool.
    pub pool: String,
    /// The device.
    pub device: String,
    /// The capacity's name.
    pub capacity: String,
    /// Its value.
    pub total: String,
    /// What the allocations' consumed capacity leaves of it.
    pub free: String,
}

/// Exclusive CPUs of one node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeCpus {
    /// CPUs the static policy can hand out exclusively (all minus reserved).
    pub allocatable: usize,
    /// Of those, not assigned.
    pub free: usize,
    /// Free CPUs per NUMA node, in NUMA order.
    pub free_by_numa: Vec<NumaFree>,
    /// NUMA-aligned picks of each common size that fit one after another.
    pub fits: Vec<CpuFit>,
    /// Free CPUs left after packing the largest common size.
    pub stranded: usize,
}

/// Free CPUs of one NUMA node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NumaFree {
    /// The NUMA node.
    pub numa: u32,
    /// Its free CPUs.
    pub free: usize,
}

/// NUMA-aligned picks of one size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuFit {
    /// CPUs per pick.
    pub cpus: usize,
    /// Picks that fit.
    pub copies: usize,
}

/// One node.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeFragmentation {
    /// The node.
    pub node: String,
    /// Its device classes (those with at least one device here), in class order.
    pub classes: Vec<NodeClass>,
    /// Shared counters of the pools it sees.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub counters: Vec<CounterUse>,
    /// Capacity of its devices that allow multiple allocations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub capacity: Vec<CapacityUse>,
    /// Exclusive CPUs, when its kubelet runs the static CPU Manager policy.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<NodeCpus>,
}

/// Exclusive CPUs over the cluster.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuFragmentation {
    /// Nodes with the static CPU Manager policy.
    pub nodes: usize,
    /// Common exclusive sizes: CPUs and how many containers ask for that many.
    pub sizes: Vec<CpuSize>,
    /// The largest common size.
    pub largest: Option<usize>,
    /// Allocatable exclusive CPUs.
    pub allocatable: usize,
    /// Free exclusive CPUs.
    pub free: usize,
    /// Free CPUs left after packing the largest common size on every node.
    pub stranded: usize,
    /// `stranded / free` (0 when nothing is free).
    pub score: f64,
    /// NUMA-aligned picks of each common size, summed over the nodes.
    pub fits: Vec<CpuFit>,
}

/// A common exclusive CPU size.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CpuSize {
    /// CPUs.
    pub cpus: usize,
    /// Containers of Guaranteed pods asking for exactly that many (0 for a given size).
    pub containers: usize,
}

/// The whole answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Fragmentation {
    /// The common shapes, most claims first.
    pub shapes: Vec<Shape>,
    /// Device classes in name order.
    pub classes: Vec<ClassFragmentation>,
    /// Exclusive CPUs.
    pub cpus: CpuFragmentation,
    /// Nodes in name order.
    pub nodes: Vec<NodeFragmentation>,
}

/// A node's machine and kubelet configuration, when known.
pub type NodeSetup<'a> = &'a dyn Fn(&Node) -> Option<(NodeTopology, KubeletConfiguration)>;

/// Measures the fragmentation of `store`'s state.
pub fn fragmentation(
    store: &Store,
    setup: NodeSetup<'_>,
    features: &Features,
    options: &Options,
) -> Fragmentation {
    let cluster = Cluster::new(store);
    let shapes = shapes(store, options);
    let sizes = cpu_sizes(store, options);
    let largest_cpu = sizes.iter().map(|s| s.cpus).max();
    let mut membership = Membership::default();
    let cel = CelCache::default();
    let mut cpu_nodes = CpuNodes::new(store);
    let mut nodes = Vec::new();
    for node in store.list::<Node>() {
        let mut measure = NodeMeasure {
            cluster: &cluster,
            node,
            features,
            cel: &cel,
            options,
        };
        let classes = measure.classes(&shapes, &mut membership);
        let (counters, capacity) = measure.counters_and_capacity();
        let cpus = setup(node).and_then(|(topology, config)| {
            cpu_nodes.measure(node, topology, &config, &sizes, largest_cpu, options)
        });
        nodes.push(NodeFragmentation {
            node: node.metadata.name.clone(),
            classes,
            counters,
            capacity,
            cpus,
        });
    }
    let classes = class_totals(&cluster.classes, &shapes, &nodes);
    let cpus = cpu_totals(sizes, largest_cpu, &nodes);
    Fragmentation {
        shapes: shapes.into_iter().map(|s| s.shape).collect(),
        classes,
        cpus,
        nodes,
    }
}

/// Rounds a fraction for output (4 decimals), so the JSON stays stable across platforms.
fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

fn ratio(part: f64, whole: f64) -> f64 {
    if whole <= 0.0 {
        0.0
    } else {
        round((part / whole).clamp(0.0, 1.0))
    }
}

fn class_totals(
    classes: &[DeviceClass],
    shapes: &[ShapeDef],
    nodes: &[NodeFragmentation],
) -> Vec<ClassFragmentation> {
    let mut out = Vec::new();
    for class in classes {
        let name = &class.metadata.name;
        let mut total = ClassFragmentation {
            class: name.clone(),
            devices: 0,
            allocated: 0,
            free: 0,
            blocked: 0,
            free_units: 0.0,
            largest_shape: largest_shape(shapes, name).map(|s| s.shape.name.clone()),
            stranded_units: 0.0,
            score: 0.0,
            fits: Vec::new(),
            nodes: 0,
        };
        let mut fits: BTreeMap<&str, usize> = BTreeMap::new();
        for node_class in nodes
            .iter()
            .flat_map(|n| &n.classes)
            .filter(|c| &c.class == name)
        {
            total.nodes += 1;
            total.devices += node_class.devices;
            total.allocated += node_class.allocated;
            total.free += node_class.free;
            total.blocked += node_class.blocked;
            total.free_units += node_class.free_units;
            total.stranded_units += node_class.stranded_units;
            for fit in &node_class.fits {
                *fits.entry(&fit.shape).or_default() += fit.copies;
            }
        }
        total.free_units = round(total.free_units);
        total.stranded_units = round(total.stranded_units);
        total.score = ratio(total.stranded_units, total.free_units);
        // In the shapes' order (most claims first).
        total.fits = shapes
            .iter()
            .filter_map(|s| {
                fits.get(s.shape.name.as_str()).map(|&copies| ShapeFit {
                    shape: s.shape.name.clone(),
                    copies,
                })
            })
            .collect();
        if total.devices > 0 {
            out.push(total);
        }
    }
    out
}

fn cpu_totals(
    sizes: Vec<CpuSize>,
    largest: Option<usize>,
    nodes: &[NodeFragmentation],
) -> CpuFragmentation {
    let mut total = CpuFragmentation {
        nodes: 0,
        largest,
        allocatable: 0,
        free: 0,
        stranded: 0,
        score: 0.0,
        fits: sizes
            .iter()
            .map(|s| CpuFit {
                cpus: s.cpus,
                copies: 0,
            })
            .collect(),
        sizes,
    };
    for cpus in nodes.iter().filter_map(|n| n.cpus.as_ref()) {
        total.nodes += 1;
        total.allocatable += cpus.allocatable;
        total.free += cpus.free;
        total.stranded += cpus.stranded;
        for fit in &cpus.fits {
            if let Some(sum) = total.fits.iter_mut().find(|f| f.cpus == fit.cpus) {
                sum.copies += fit.copies;
            }
        }
    }
    total.score = ratio(total.stranded as f64, total.free as f64);
    total
}

/// A shape with what measuring it needs.
#[derive(Debug, Clone)]
struct ShapeDef {
    shape: Shape,
    namespace: String,
    spec: ResourceClaimSpec,
}

/// The largest common shape asking for `class`: most devices of the class per copy, then most
/// claims, then name.
fn largest_shape<'a>(shapes: &'a [ShapeDef], class: &str) -> Option<&'a ShapeDef> {
    shapes
        .iter()
        .filter(|s| s.shape.devices.contains_key(class))
        .max_by(|a, b| {
            let size = |s: &ShapeDef| s.shape.devices.get(class).copied().unwrap_or(0);
            size(a)
                .cmp(&size(b))
                .then(a.shape.claims.cmp(&b.shape.claims))
                .then_with(|| b.shape.name.cmp(&a.shape.name))
        })
}

/// The template each generated claim came from: `(namespace, claim) → template`, read from
/// the pods' `spec.resourceClaims` and `status.resourceClaimStatuses`.
fn claim_templates(store: &Store) -> HashMap<(String, String), String> {
    let mut out = HashMap::new();
    for pod in store.list::<Pod>() {
        for claim in &pod.spec.resource_claims {
            let Some(template) = &claim.resource_claim_template_name else {
                continue;
            };
            if let Some(name) = pod
                .status
                .resource_claim_statuses
                .iter()
                .find(|s| s.name == claim.name)
                .and_then(|s| s.resource_claim_name.clone())
            {
                out.insert((pod.metadata.namespace.clone(), name), template.to_string());
            }
        }
    }
    out
}

/// The common shapes: claims grouped by identical spec, most claims first (then name), the
/// first [`Options::common`] of them; then the given ones.
fn shapes(store: &Store, options: &Options) -> Vec<ShapeDef> {
    let templates = claim_templates(store);
    let mut groups: BTreeMap<String, (ShapeDef, BTreeMap<String, usize>)> = BTreeMap::new();
    for claim in store.list::<ResourceClaim>() {
        if claim.spec.devices.requests.iter().any(admin_access) {
            continue;
        }
        let key = serde_json::to_string(&claim.spec).unwrap_or_default();
        let source = match templates.get(&(
            claim.metadata.namespace.clone(),
            claim.metadata.name.clone(),
        )) {
            Some(template) => format!("{}/{template}", claim.metadata.namespace),
            None => format!("{}/{}", claim.metadata.namespace, claim.metadata.name),
        };
        let entry = groups.entry(key).or_insert_with(|| {
            (
                ShapeDef {
                    shape: describe(&claim.spec, String::new(), false),
                    namespace: claim.metadata.namespace.clone(),
                    spec: claim.spec.clone(),
                },
                BTreeMap::new(),
            )
        });
        entry.0.shape.claims += 1;
        *entry.1.entry(source).or_default() += 1;
    }
    let mut found: Vec<ShapeDef> = groups
        .into_values()
        .map(|(mut def, sources)| {
            // Named after its most frequent source (then the first by name).
            let name = sources
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then_with(|| b.0.cmp(a.0)))
                .map(|(name, _)| name.clone())
                .unwrap_or_default();
            def.shape.name = name;
            def
        })
        .collect();
    found.sort_by(|a, b| {
        b.shape
            .claims
            .cmp(&a.shape.claims)
            .then_with(|| a.shape.name.cmp(&b.shape.name))
    });
    found.truncate(options.common);
    for given in &options.shapes {
        let mut shape = describe(&given.spec, given.name.clone(), true);
        shape.claims = 0;
        found.push(ShapeDef {
            shape,
            namespace: given.namespace.clone(),
            spec: given.spec.clone(),
        });
    }
    // Two shapes of one name (a given shape named like a claim's) keep distinct names.
    let mut seen = BTreeSet::new();
    for def in &mut found {
        let base = def.shape.name.clone();
        let mut n = 1;
        while !seen.insert(def.shape.name.clone()) {
            n += 1;
            def.shape.name = format!("{base}#{n}");
        }
    }
    found
}

fn admin_access(request: &DeviceRequest) -> bool {
    request
        .exactly
        .as_ref()
        .is_some_and(|e| e.admin_access == Some(true))
}

/// A shape's description and devices per class.
fn describe(spec: &ResourceClaimSpec, name: String, given: bool) -> Shape {
    let mut devices: BTreeMap<String, i64> = BTreeMap::new();
    let mut parts = Vec::new();
    for request in &spec.devices.requests {
        if let Some(exactly) = &request.exactly {
            let (text, count) = one_request(
                &exactly.device_class_name,
                exactly.allocation_mode.as_ref(),
                exactly.count,
                !exactly.selectors.is_empty(),
                exactly.capacity.as_ref().map(|c| &c.requests),
            );
            *devices
                .entry(exactly.device_class_name.clone())
                .or_default() += count;
            parts.push(text);
        } else if !request.first_available.is_empty() {
            let mut alternatives = Vec::new();
            for (i, sub) in request.first_available.iter().enumerate() {
                let (text, count) = one_request(
                    &sub.device_class_name,
                    sub.allocation_mode.as_ref(),
                    sub.count,
                    !sub.selectors.is_empty(),
                    sub.capacity.as_ref().map(|c| &c.requests),
                );
                if i == 0 {
                    *devices.entry(sub.device_class_name.clone()).or_default() += count;
                } else {
                    devices.entry(sub.device_class_name.clone()).or_default();
                }
                alternatives.push(text);
            }
            parts.push(format!("({})", alternatives.join(" | ")));
        }
    }
    if !spec.devices.constraints.is_empty() {
        parts.push("constrained".to_string());
    }
    Shape {
        name,
        description: parts.join(" + "),
        claims: 0,
        devices,
        given,
    }
}

fn one_request(
    class: &str,
    mode: Option<&DeviceAllocationMode>,
    count: Option<i64>,
    selectors: bool,
    capacity: Option<&BTreeMap<String, allot_quantity::Quantity>>,
) -> (String, i64) {
    let all = matches!(mode, Some(DeviceAllocationMode::All));
    let count = if all { 0 } else { count.unwrap_or(1) };
    let mut text = if all {
        format!("all×{class}")
    } else {
        format!("{count}×{class}")
    };
    if selectors {
        text.push_str("[selectors]");
    }
    if let Some(capacity) = capacity.filter(|c| !c.is_empty()) {
        let items: Vec<String> = capacity.iter().map(|(k, v)| format!("{k}={v}")).collect();
        text.push_str(&format!("{{{}}}", items.join(",")));
    }
    (text, count)
}

/// Common exclusive CPU sizes: integer CPU requests of Guaranteed pods' containers, most
/// frequent first (then smaller), the first [`Options::common`]; then the given ones.
fn cpu_sizes(store: &Store, options: &Options) -> Vec<CpuSize> {
    let mut counts: BTreeMap<usize, usize> = BTreeMap::new();
    for pod in store.list::<Pod>() {
        if allot_kubelet::compute_pod_qos(pod, false) != allot_kubelet::QosClass::Guaranteed {
            continue;
        }
        for container in &pod.spec.containers {
            let Some(cpu) = container
                .resources
                .as_ref()
                .and_then(|r| r.requests.get("cpu").or_else(|| r.limits.get("cpu")))
            else {
                continue;
            };
            let milli = cpu.milli_value();
            if milli > 0 && milli % 1000 == 0 {
                *counts.entry((milli / 1000) as usize).or_default() += 1;
            }
        }
    }
    let mut sizes: Vec<CpuSize> = counts
        .into_iter()
        .map(|(cpus, containers)| CpuSize { cpus, containers })
        .collect();
    sizes.sort_by(|a, b| b.containers.cmp(&a.containers).then(a.cpus.cmp(&b.cpus)));
    sizes.truncate(options.common);
    for &cpus in &options.cpu_sizes {
        if cpus > 0 && !sizes.iter().any(|s| s.cpus == cpus) {
            sizes.push(CpuSize {
                cpus,
                containers: 0,
            });
        }
    }
    sizes
}

/// A device's identity.
type DeviceId = (String, String, String);

/// The cluster's DRA objects, indexed.
struct Cluster<'a> {
    classes: Vec<DeviceClass>,
    taint_rules: Vec<DeviceTaintRule>,
    namespaces: Vec<Namespace>,
    /// Slices naming a node, by node.
    node_slices: HashMap<&'a str, Vec<&'a ResourceSlice>>,
    /// Slices for several nodes (`allNodes`, a node selector, per-device selection).
    shared_slices: Vec<&'a ResourceSlice>,
    /// Slices of each pool, for their counter sets.
    pools: HashMap<(&'a str, &'a str), Vec<&'a ResourceSlice>>,
    /// Allocated claims by the pools of their devices.
    pool_claims: HashMap<(&'a str, &'a str), Vec<&'a ResourceClaim>>,
    /// Every device by identity.
    devices: HashMap<DeviceId, &'a Device>,
    /// What the allocated claims use.
    usage: Usage,
}

impl<'a> Cluster<'a> {
    fn new(store: &'a Store) -> Self {
        let mut node_slices: HashMap<&str, Vec<&ResourceSlice>> = HashMap::new();
        let mut shared_slices = Vec::new();
        let mut pools: HashMap<(&str, &str), Vec<&ResourceSlice>> = HashMap::new();
        let mut devices = HashMap::new();
        for slice in store.list::<ResourceSlice>() {
            match slice.spec.node_name.as_deref().filter(|n| !n.is_empty()) {
                Some(node) => node_slices.entry(node).or_default().push(slice),
                None => shared_slices.push(slice),
            }
            pools
                .entry((slice.spec.driver.as_str(), slice.spec.pool.name.as_str()))
                .or_default()
                .push(slice);
            for device in &slice.spec.devices {
                devices.insert(
                    (
                        slice.spec.driver.clone(),
                        slice.spec.pool.name.clone(),
                        device.name.clone(),
                    ),
                    device,
                );
            }
        }
        let mut pool_claims: HashMap<(&str, &str), Vec<&ResourceClaim>> = HashMap::new();
        let mut usage = Usage::default();
        for claim in store.list::<ResourceClaim>() {
            let Some(allocation) = &claim.status.allocation else {
                continue;
            };
            let mut seen = BTreeSet::new();
            for result in &allocation.devices.results {
                usage.add(result, &devices);
                if seen.insert((result.driver.as_str(), result.pool.as_str())) {
                    pool_claims
                        .entry((result.driver.as_str(), result.pool.as_str()))
                        .or_default()
                        .push(claim);
                }
            }
        }
        Cluster {
            classes: store.list::<DeviceClass>().cloned().collect(),
            taint_rules: store.list::<DeviceTaintRule>().cloned().collect(),
            namespaces: store.list::<Namespace>().cloned().collect(),
            node_slices,
            shared_slices,
            pools,
            pool_claims,
            devices,
            usage,
        }
    }
}

/// What allocations use: devices, consumed capacity, shared counters.
#[derive(Debug, Clone, Default)]
struct Usage {
    devices: HashSet<DeviceId>,
    /// Consumed capacity by (device, capacity name), in milli-units.
    capacity: HashMap<(DeviceId, String), i128>,
    /// Consumed counters by (driver, pool, counter set, counter), in milli-units.
    counters: HashMap<(String, String, String, String), i128>,
}

fn milli(q: &allot_quantity::Quantity) -> i128 {
    let (value, scale) = q.to_parts();
    // value × 10^scale × 1000, saturating.
    let exponent = scale + 3;
    if exponent >= 0 {
        value.saturating_mul(10i128.saturating_pow(exponent as u32))
    } else {
        value / 10i128.saturating_pow((-exponent) as u32)
    }
}

fn show_milli(value: i128) -> String {
    if value % 1000 == 0 {
        (value / 1000).to_string()
    } else {
        format!("{value}m")
    }
}

impl Usage {
    /// Adds one allocated device: capacity per result, counters once per device.
    fn add(
        &mut self,
        result: &DeviceRequestAllocationResult,
        devices: &HashMap<DeviceId, &Device>,
    ) {
        if result.admin_access == Some(true) {
            return;
        }
        let id: DeviceId = (
            result.driver.to_string(),
            result.pool.to_string(),
            result.device.to_string(),
        );
        for (name, quantity) in result.consumed_capacity.iter() {
            *self.capacity.entry((id.clone(), name.clone())).or_default() += milli(quantity);
        }
        if self.devices.insert(id.clone())
            && let Some(device) = devices.get(&id)
        {
            for consumption in &device.consumes_counters {
                for (counter, value) in &consumption.counters {
                    *self
                        .counters
                        .entry((
                            id.0.clone(),
                            id.1.clone(),
                            consumption.counter_set.clone(),
                            counter.clone(),
                        ))
                        .or_default() += milli(&value.value);
                }
            }
        }
    }
}

impl Usage {
    /// [`Usage::add`] on top of `base`: a device `base` already uses does not consume its
    /// counters again.
    fn add_over(
        &mut self,
        result: &DeviceRequestAllocationResult,
        devices: &HashMap<DeviceId, &Device>,
        base: &Usage,
    ) {
        let id: DeviceId = (
            result.driver.to_string(),
            result.pool.to_string(),
            result.device.to_string(),
        );
        if base.devices.contains(&id) {
            self.devices.insert(id.clone());
            // Counters were counted with the first allocation; only the capacity adds up.
            for (name, quantity) in result.consumed_capacity.iter() {
                *self.capacity.entry((id.clone(), name.clone())).or_default() += milli(quantity);
            }
            return;
        }
        self.add(result, devices);
    }
}

/// A usage with, optionally, more on top.
struct Layered<'a>(&'a Usage, Option<&'a Usage>);

impl Layered<'_> {
    fn has_device(&self, id: &DeviceId) -> bool {
        self.0.devices.contains(id) || self.1.is_some_and(|u| u.devices.contains(id))
    }

    fn capacity(&self, key: &(DeviceId, String)) -> i128 {
        self.0.capacity.get(key).copied().unwrap_or(0)
            + self
                .1
                .and_then(|u| u.capacity.get(key))
                .copied()
                .unwrap_or(0)
    }

    fn counter(&self, key: &(String, String, String, String)) -> i128 {
        self.0.counters.get(key).copied().unwrap_or(0)
            + self
                .1
                .and_then(|u| u.counters.get(key))
                .copied()
                .unwrap_or(0)
    }
}

/// Which devices belong to which class, asked of the allocator on a one-device slice and
/// remembered by the device's content (identical devices on many nodes are asked once).
#[derive(Default)]
struct Membership {
    known: HashMap<String, Rc<[bool]>>,
}

impl Membership {
    /// Whether the device belongs to each class, in class order.
    fn classes_of(
        &mut self,
        cluster: &Cluster<'_>,
        node: &Node,
        slice: &ResourceSlice,
        device: &Device,
        features: &Features,
        cel: &CelCache,
    ) -> Rc<[bool]> {
        let mut probe = device.clone();
        probe.name = "probe".to_string();
        probe.taints.clear();
        probe.binding_conditions.clear();
        probe.binding_failure_conditions.clear();
        let local = slice
            .spec
            .node_name
            .as_deref()
            .is_some_and(|n| !n.is_empty());
        // A device visible to several nodes may be visible to some only: its answer is the
        // node's own.
        let key = format!(
            "{}\u{0}{}\u{0}{}",
            slice.spec.driver,
            if local {
                ""
            } else {
                node.metadata.name.as_str()
            },
            serde_json::to_string(&probe).unwrap_or_default()
        );
        if let Some(known) = self.known.get(&key) {
            return known.clone();
        }
        let answer: Rc<[bool]> = (0..cluster.classes.len())
            .map(|class| {
                probe_membership(cluster, node, class, slice, probe.clone(), features, cel)
            })
            .collect();
        self.known.insert(key, answer.clone());
        answer
    }
}

fn probe_membership(
    cluster: &Cluster<'_>,
    node: &Node,
    class: usize,
    slice: &ResourceSlice,
    device: Device,
    features: &Features,
    cel: &CelCache,
) -> bool {
    // The pool's counter sets come along, untouched, so that a device consuming them can be
    // allocated; the probe slice completes the pool.
    let counter_slices: Vec<ResourceSlice> = cluster
        .pools
        .get(&(slice.spec.driver.as_str(), slice.spec.pool.name.as_str()))
        .into_iter()
        .flatten()
        .filter(|s| !s.spec.shared_counters.is_empty())
        .map(|s| {
            let mut s = (*s).clone();
            s.spec.devices.clear();
            s
        })
        .collect();
    let count = counter_slices.len() as i64 + 1;
    let mut slices: Vec<ResourceSlice> = counter_slices;
    let mut probe = slice.clone();
    probe.metadata = ObjectMeta {
        name: "allot-fragmentation-probe".to_string(),
        ..ObjectMeta::default()
    };
    probe.spec.shared_counters.clear();
    probe.spec.devices = vec![device];
    slices.push(probe);
    for (i, s) in slices.iter_mut().enumerate() {
        if s.metadata.name.is_empty() || i + 1 < count as usize {
            s.metadata.name = format!("allot-fragmentation-counters-{i}");
        }
        s.metadata.uid.clear();
        s.metadata.resource_version.clear();
        s.spec.pool = ResourcePool {
            resource_slice_count: count,
            ..s.spec.pool.clone()
        };
    }
    let slice_refs: Vec<&ResourceSlice> = slices.iter().collect();
    let class_name = &cluster.classes[class].metadata.name;
    let claim = probe_claim(
        "default",
        ResourceClaimSpec {
            devices: DeviceClaim {
                requests: vec![DeviceRequest {
                    name: "probe".to_string(),
                    exactly: Some(ExactDeviceRequest {
                        device_class_name: class_name.clone(),
                        ..ExactDeviceRequest::default()
                    }),
                    ..DeviceRequest::default()
                }],
                ..DeviceClaim::default()
            },
        },
        0,
    );
    let input = AllocationInput {
        node,
        classes: std::slice::from_ref(&cluster.classes[class]),
        slices: &slice_refs,
        allocated_claims: &[],
        claims: std::slice::from_ref(&claim),
        taint_rules: &[],
        namespaces: &[],
    };
    matches!(
        allot_dra::allocate_with_cache(&input, features, cel),
        Ok(Outcome::Allocated(_))
    )
}

/// A claim to allocate (or, with an allocation, one in use) for the probes.
fn probe_claim(namespace: &str, spec: ResourceClaimSpec, index: usize) -> ResourceClaim {
    ResourceClaim {
        metadata: ObjectMeta {
            name: format!("allot-fragmentation-{index}"),
            namespace: namespace.to_string(),
            uid: format!("allot-fragmentation-{index}"),
            ..ObjectMeta::default()
        },
        spec,
        ..ResourceClaim::default()
    }
}

/// One node's measurement.
struct NodeMeasure<'a> {
    cluster: &'a Cluster<'a>,
    node: &'a Node,
    features: &'a Features,
    cel: &'a CelCache,
    options: &'a Options,
}

/// A device the node sees, with its slice.
struct Seen<'a> {
    slice: &'a ResourceSlice,
    device: &'a Device,
}

impl<'a> NodeMeasure<'a> {
    /// The slices the node may see: its own, then the shared ones (the allocator decides
    /// which of those it really sees).
    fn slices(&self) -> Vec<&'a ResourceSlice> {
        let mut out: Vec<&ResourceSlice> = self
            .cluster
            .node_slices
            .get(self.node.metadata.name.as_str())
            .cloned()
            .unwrap_or_default();
        out.extend(self.cluster.shared_slices.iter().copied());
        out
    }

    /// The claims whose devices are in the pools of `slices`.
    fn allocated(&self, slices: &[&ResourceSlice]) -> Vec<&'a ResourceClaim> {
        let pools: BTreeSet<(&str, &str)> = slices
            .iter()
            .map(|s| (s.spec.driver.as_str(), s.spec.pool.name.as_str()))
            .collect();
        let mut out: Vec<&ResourceClaim> = Vec::new();
        let mut seen = HashSet::new();
        for pool in pools {
            for claim in self.cluster.pool_claims.get(&pool).into_iter().flatten() {
                if seen.insert((&claim.metadata.namespace, &claim.metadata.name)) {
                    out.push(claim);
                }
            }
        }
        out
    }

    fn classes(&mut self, shapes: &[ShapeDef], membership: &mut Membership) -> Vec<NodeClass> {
        let slices = self.slices();
        let allocated = self.allocated(&slices);
        // Shapes are packed once each; their results serve every class they ask for.
        let mut packed: HashMap<usize, (usize, Vec<AllocationResult>)> = HashMap::new();
        let mut out = Vec::new();
        let seen: Vec<(Seen<'_>, Rc<[bool]>)> = slices
            .iter()
            .flat_map(|slice| {
                slice
                    .spec
                    .devices
                    .iter()
                    .map(move |device| Seen { slice, device })
            })
            .map(|seen| {
                let classes = membership.classes_of(
                    self.cluster,
                    self.node,
                    seen.slice,
                    seen.device,
                    self.features,
                    self.cel,
                );
                (seen, classes)
            })
            .collect();
        for (index, class) in self.cluster.classes.iter().enumerate() {
            let members: Vec<Seen<'_>> = seen
                .iter()
                .filter(|(_, classes)| classes[index])
                .map(|(seen, _)| Seen {
                    slice: seen.slice,
                    device: seen.device,
                })
                .collect();
            if members.is_empty() {
                continue;
            }
            let name = &class.metadata.name;
            let (allocated_devices, free, blocked) = count_devices(
                &members,
                &Layered(&self.cluster.usage, None),
                &self.cluster.pools,
            );
            let units = free_units(
                &members,
                &Layered(&self.cluster.usage, None),
                &self.cluster.pools,
            );
            let mut fits = Vec::new();
            for (i, shape) in shapes.iter().enumerate() {
                if !shape.shape.devices.contains_key(name) {
                    continue;
                }
                let entry = packed
                    .entry(i)
                    .or_insert_with(|| self.pack(shape, &slices, &allocated));
                fits.push(ShapeFit {
                    shape: shape.shape.name.clone(),
                    copies: entry.0,
                });
            }
            let stranded_units = match largest_shape(shapes, name) {
                Some(largest) => {
                    let i = shapes
                        .iter()
                        .position(|s| std::ptr::eq(s, largest))
                        .unwrap_or(0);
                    let results = packed
                        .entry(i)
                        .or_insert_with(|| self.pack(largest, &slices, &allocated));
                    let mut extra = Usage::default();
                    for result in results.1.iter().flat_map(|r| &r.devices.results) {
                        extra.add_over(result, &self.cluster.devices, &self.cluster.usage);
                    }
                    let usage = Layered(&self.cluster.usage, Some(&extra));
                    free_units(&members, &usage, &self.cluster.pools)
                }
                None => units,
            };
            out.push(NodeClass {
                class: name.clone(),
                devices: members.len(),
                allocated: allocated_devices,
                free,
                blocked,
                free_units: round(units),
                stranded_units: round(stranded_units),
                fits,
            });
        }
        out
    }

    /// Allocates copies of `shape` one after another on the node's free state, as the
    /// scheduler would; returns how many fit and their results.
    fn pack(
        &self,
        shape: &ShapeDef,
        slices: &[&ResourceSlice],
        allocated: &[&ResourceClaim],
    ) -> (usize, Vec<AllocationResult>) {
        let mut placed: Vec<ResourceClaim> = Vec::new();
        let mut results = Vec::new();
        while placed.len() < self.options.max_copies {
            let claim = probe_claim(&shape.namespace, shape.spec.clone(), placed.len());
            let in_use: Vec<&ResourceClaim> =
                allocated.iter().copied().chain(placed.iter()).collect();
            let input = AllocationInput {
                node: self.node,
                classes: &self.cluster.classes,
                slices,
                allocated_claims: &in_use,
                claims: std::slice::from_ref(&claim),
                taint_rules: &self.cluster.taint_rules,
                namespaces: &self.cluster.namespaces,
            };
            match allot_dra::allocate_with_cache(&input, self.features, self.cel) {
                Ok(Outcome::Allocated(mut allocations)) if allocations.len() == 1 => {
                    let allocation = allocations.remove(0);
                    let mut claim = claim;
                    claim.status = ResourceClaimStatus {
                        allocation: Some(allocation.clone()),
                        ..ResourceClaimStatus::default()
                    };
                    results.push(allocation);
                    placed.push(claim);
                }
                _ => break,
            }
        }
        (placed.len(), results)
    }

    fn counters_and_capacity(&self) -> (Vec<CounterUse>, Vec<CapacityUse>) {
        let usage = &self.cluster.usage;
        let mut counters = Vec::new();
        let mut capacity = Vec::new();
        let mut pools_seen = BTreeSet::new();
        for slice in self
            .cluster
            .node_slices
            .get(self.node.metadata.name.as_str())
            .into_iter()
            .flatten()
        {
            let pool = (slice.spec.driver.as_str(), slice.spec.pool.name.as_str());
            if pools_seen.insert(pool) {
                for counter_slice in self.cluster.pools.get(&pool).into_iter().flatten() {
                    for set in &counter_slice.spec.shared_counters {
                        for (counter, value) in &set.counters {
                            let total = milli(&value.value);
                            let used = usage
                                .counters
                                .get(&(
                                    pool.0.to_string(),
                                    pool.1.to_string(),
                                    set.name.clone(),
                                    counter.clone(),
                                ))
                                .copied()
                                .unwrap_or(0);
                            counters.push(CounterUse {
                                driver: pool.0.to_string(),
                                pool: pool.1.to_string(),
                                counter_set: set.name.clone(),
                                counter: counter.clone(),
                                total: value.value.to_string(),
                                free: show_milli((total - used).max(0)),
                            });
                        }
                    }
                }
            }
            for device in slice
                .spec
                .devices
                .iter()
                .filter(|d| d.allow_multiple_allocations == Some(true))
            {
                let id: DeviceId = (
                    slice.spec.driver.clone(),
                    slice.spec.pool.name.clone(),
                    device.name.clone(),
                );
                for (name, value) in &device.capacity {
                    let used = usage
                        .capacity
                        .get(&(id.clone(), name.clone()))
                        .copied()
                        .unwrap_or(0);
                    capacity.push(CapacityUse {
                        driver: id.0.clone(),
                        pool: id.1.clone(),
                        device: id.2.clone(),
                        capacity: name.clone(),
                        total: value.value.to_string(),
                        free: show_milli((milli(&value.value) - used).max(0)),
                    });
                }
            }
        }
        (counters, capacity)
    }
}

fn device_id(seen: &Seen<'_>) -> DeviceId {
    (
        seen.slice.spec.driver.clone(),
        seen.slice.spec.pool.name.clone(),
        seen.device.name.clone(),
    )
}

/// Whether an unallocated device's counters still allow it.
fn counters_allow(
    seen: &Seen<'_>,
    usage: &Layered<'_>,
    pools: &HashMap<(&str, &str), Vec<&ResourceSlice>>,
) -> bool {
    let driver = seen.slice.spec.driver.as_str();
    let pool = seen.slice.spec.pool.name.as_str();
    seen.device.consumes_counters.iter().all(|consumption| {
        consumption.counters.iter().all(|(counter, need)| {
            let total = counter_total(pools, driver, pool, &consumption.counter_set, counter);
            let used = usage.counter(&(
                driver.to_string(),
                pool.to_string(),
                consumption.counter_set.clone(),
                counter.clone(),
            ));
            total - used >= milli(&need.value)
        })
    })
}

fn counter_total(
    pools: &HashMap<(&str, &str), Vec<&ResourceSlice>>,
    driver: &str,
    pool: &str,
    set: &str,
    counter: &str,
) -> i128 {
    pools
        .get(&(driver, pool))
        .into_iter()
        .flatten()
        .flat_map(|s| &s.spec.shared_counters)
        .filter(|s| s.name == set)
        .find_map(|s| s.counters.get(counter))
        .map_or(0, |c| milli(&c.value))
}

/// `(allocated, free, blocked)` among a class's devices.
fn count_devices(
    members: &[Seen<'_>],
    usage: &Layered<'_>,
    pools: &HashMap<(&str, &str), Vec<&ResourceSlice>>,
) -> (usize, usize, usize) {
    let mut allocated = 0;
    let mut free = 0;
    let mut blocked = 0;
    for seen in members {
        if usage.has_device(&device_id(seen)) {
            allocated += 1;
        } else if counters_allow(seen, usage, pools) {
            free += 1;
        } else {
            blocked += 1;
        }
    }
    (allocated, free, blocked)
}

/// Free units of a class's devices (see the module documentation).
fn free_units(
    members: &[Seen<'_>],
    usage: &Layered<'_>,
    pools: &HashMap<(&str, &str), Vec<&ResourceSlice>>,
) -> f64 {
    let mut units = 0.0;
    // Counter sets the class's devices consume: (driver, pool, set) → counters consumed.
    let mut sets: BTreeMap<(String, String, String), BTreeSet<String>> = BTreeMap::new();
    for seen in members {
        let id = device_id(seen);
        if !seen.device.consumes_counters.is_empty() {
            for consumption in &seen.device.consumes_counters {
                sets.entry((id.0.clone(), id.1.clone(), consumption.counter_set.clone()))
                    .or_default()
                    .extend(consumption.counters.keys().cloned());
            }
        } else if seen.device.allow_multiple_allocations == Some(true) {
            let mut fraction: f64 = 1.0;
            for (name, value) in &seen.device.capacity {
                let total = milli(&value.value);
                if total <= 0 {
                    continue;
                }
                let used = usage.capacity(&(id.clone(), name.clone()));
                fraction = fraction.min(((total - used).max(0)) as f64 / total as f64);
            }
            units += fraction;
        } else if !usage.has_device(&id) {
            units += 1.0;
        }
    }
    for ((driver, pool, set), counters) in sets {
        let mut fraction: f64 = 1.0;
        for counter in counters {
            let total = counter_total(pools, &driver, &pool, &set, &counter);
            if total <= 0 {
                continue;
            }
            let used = usage.counter(&(driver.clone(), pool.clone(), set.clone(), counter.clone()));
            fraction = fraction.min(((total - used).max(0)) as f64 / total as f64);
        }
        units += fraction;
    }
    units
}

/// The static CPU policies of the nodes, built once per distinct machine and configuration.
struct CpuNodes {
    policies: HashMap<String, Option<Rc<allot_kubelet::Node>>>,
    /// Exclusive CPUs assigned on each node (pods not finished).
    assigned: HashMap<String, CpuSet>,
}

impl CpuNodes {
    fn new(store: &Store) -> Self {
        let mut assigned: HashMap<String, CpuSet> = HashMap::new();
        for pod in store.list::<Pod>() {
            let Some(node) = pod.spec.node_name.as_deref().filter(|n| !n.is_empty()) else {
                continue;
            };
            if matches!(pod.status.phase.as_deref(), Some("Succeeded" | "Failed")) {
                continue;
            }
            let (cpus, _) = crate::output::pod_cpus_and_numa(pod);
            if !cpus.is_empty() {
                assigned
                    .entry(node.to_string())
                    .or_default()
                    .union_with(&cpus);
            }
        }
        CpuNodes {
            policies: HashMap::new(),
            assigned,
        }
    }

    fn policy(
        &mut self,
        topology: NodeTopology,
        config: &KubeletConfiguration,
    ) -> Option<Rc<allot_kubelet::Node>> {
        if !config.cpu_manager_policy.eq_ignore_ascii_case("static") {
            return None;
        }
        let mut anonymous = topology.clone();
        anonymous.metadata.name.clear();
        let key = format!(
            "{}\u{0}{}",
            serde_json::to_string(&anonymous).unwrap_or_default(),
            serde_json::to_string(config).unwrap_or_default()
        );
        self.policies
            .entry(key)
            .or_insert_with(|| {
                allot_kubelet::Node::start(
                    topology,
                    config,
                    allot_kubelet_config::ValidateOptions::default(),
                    &allot_kubelet::Checkpoints::default(),
                )
                .ok()
                .map(Rc::new)
            })
            .clone()
    }

    #[allow(clippy::too_many_arguments)]
    fn measure(
        &mut self,
        node: &Node,
        topology: NodeTopology,
        config: &KubeletConfiguration,
        sizes: &[CpuSize],
        largest: Option<usize>,
        options: &Options,
    ) -> Option<NodeCpus> {
        let kubelet = self.policy(topology, config)?;
        let allot_kubelet::CpuPolicy::Static(policy) = &kubelet.cpu else {
            return None;
        };
        let allocatable = policy.allocatable_cpus();
        let empty = CpuSet::new();
        let assigned = self
            .assigned
            .get(node.metadata.name.as_str())
            .unwrap_or(&empty);
        let free = allocatable.difference(assigned);
        let topology = policy.topology();
        let numa_level = topology.numa_level();
        let free_by_numa = (0..numa_level.len())
            .map(|i| NumaFree {
                numa: numa_level.id(i),
                free: free.intersection(numa_level.mask(i)).len(),
            })
            .collect();
        let per_numa = (topology.cpus().len() / numa_level.len().max(1)).max(1);
        let numa_ids: Vec<u32> = (0..numa_level.len()).map(|i| numa_level.id(i)).collect();
        let pack = |size: usize| -> (usize, CpuSet) {
            let mut left = free.clone();
            let mut copies = 0;
            let width = size.div_ceil(per_numa).clamp(1, numa_ids.len().max(1));
            while copies < options.max_copies && left.len() >= size {
                let Some(pick) = aligned_pick(policy, &left, size, &numa_ids, width) else {
                    break;
                };
                left = left.difference(&pick);
                copies += 1;
            }
            (copies, left)
        };
        let fits = sizes
            .iter()
            .map(|s| CpuFit {
                cpus: s.cpus,
                copies: pack(s.cpus).0,
            })
            .collect();
        let stranded = largest.map_or(free.len(), |size| pack(size).1.len());
        Some(NodeCpus {
            allocatable: allocatable.len(),
            free: free.len(),
            free_by_numa,
            fits,
            stranded,
        })
    }
}

/// A NUMA-aligned pick of `size` CPUs from `free`, as the kubelet makes it when the Topology
/// Manager hands the CPU Manager a hint: the policy's own pick among the free CPUs of the
/// first set of `width` NUMA nodes (the narrowest that can hold the size, lowest ids first)
/// that has enough of them.
fn aligned_pick(
    policy: &allot_cpumanager::policy_static::StaticPolicy,
    free: &CpuSet,
    size: usize,
    numa_ids: &[u32],
    width: usize,
) -> Option<CpuSet> {
    let topology = policy.topology();
    let mut combination: Vec<usize> = (0..width).collect();
    loop {
        let ids: Vec<u32> = combination.iter().map(|&i| numa_ids[i]).collect();
        let available = free.intersection(&topology.cpus_in_numa_nodes(&ids));
        if available.len() >= size
            && let Ok(pick) = policy.take_by_topology(&available, size)
            && pick.len() == size
        {
            return Some(pick);
        }
        // The next combination in lexicographic order.
        let n = numa_ids.len();
        let mut i = width;
        loop {
            if i == 0 {
                return None;
            }
            i -= 1;
            if combination[i] < n - width + i {
                break;
            }
        }
        combination[i] += 1;
        for j in i + 1..width {
            combination[j] = combination[j - 1] + 1;
        }
    }
}

#[cfg(test)]
mod tests;
