//! Reading a simulation's input: manifests, node topologies, the kubelet configuration, the
//! timeline and options; defaulting and validating every object before anything runs.
//!
//! Per-node configuration: a NodeTopology or KubeletConfiguration applies to the node with its
//! `metadata.name`, or, with the `allot.dev/node-selector` annotation (`key=value,key2` where a
//! bare key means "the label exists"), to a node label group: every node whose labels match.
//! A node takes the document named after it, else its group's, else (KubeletConfiguration only)
//! the one document with neither name nor selector, else defaults (upstream's kubelet defaults;
//! a one-socket topology from the node's capacity). KubeletConfiguration has no `metadata`
//! upstream: the simulator accepts `name`, `labels` and `annotations` there and strips them
//! before decoding. A node (given or created by the timeline) that two groups of one kind
//! select, without a document named after it, is an input error naming both groups.

use std::collections::BTreeMap;
use std::path::Path;

use allot_api::core::v1::{Namespace, Node};
use allot_api::defaults::default_object;
use allot_api::load::{Document, LoadError, LoadOptions, Loaded, Object, RawDocument, decode};
use allot_dra::Features;
use allot_kubelet_config::KubeletConfiguration;
use allot_runtime::SimTime;
use allot_store::{Kind, ObjectKey, Stored};
use allot_topology::{CpuInfo, NodeTopology, NumaNode};
use allot_validation::{DraCel, FieldError, admit_admin_access, validate_object};

use crate::timeline::{
    API_VERSION, ClaimDeviceCondition, DeviceHealth, NODE_SELECTOR_ANNOTATION, OPTIONS_KIND,
    ObjectRef, REPORT_KIND, SimulationOptions, TIMELINE_KIND, Timeline, TimelineEvent,
    WorkloadDefaults, parse_duration_millis,
};
use crate::{InputError, SimError};

/// The `LoadOptions` the simulator reads with: every kind of `allot-api` plus NodeTopology,
/// KubeletConfiguration, Timeline and SimulationOptions.
pub fn load_options() -> LoadOptions {
    LoadOptions::default()
        .with_kind(allot_topology::API_VERSION, allot_topology::KIND)
        .with_kind(
            allot_kubelet_config::API_VERSION,
            allot_kubelet_config::KIND,
        )
        .with_kind(API_VERSION, TIMELINE_KIND)
        .with_kind(API_VERSION, OPTIONS_KIND)
        .with_kind(API_VERSION, REPORT_KIND)
}

/// A NodeTopology with the nodes it applies to.
#[derive(Debug, Clone, PartialEq)]
pub struct TopologyEntry {
    /// The topology; its name matches a node's name exactly, or `selector` chooses nodes.
    pub topology: NodeTopology,
    /// Label requirements from the [`NODE_SELECTOR_ANNOTATION`] annotation: `(key, Some(value))`
    /// for `key=value`, `(key, None)` for "the label exists".
    pub selector: Option<Vec<(String, Option<String>)>>,
}

/// A KubeletConfiguration with the nodes it applies to.
///
/// KubeletConfiguration has no `metadata` upstream; the simulator accepts an optional one to
/// say which nodes a document configures, the way NodeTopology does: `metadata.name` equal to a
/// node's name configures that node, the [`NODE_SELECTOR_ANNOTATION`] annotation configures
/// every node whose labels match (a node label group), and a document with neither is the
/// default for the other nodes. A node named by a document takes it; otherwise the one group
/// matching the node; otherwise the default; otherwise upstream's defaults. A node matched by
/// two groups is an input error.
#[derive(Debug, Clone, PartialEq)]
pub struct KubeletConfigEntry {
    /// The configuration (without the simulator's `metadata`).
    pub config: KubeletConfiguration,
    /// `metadata.name` (empty when absent).
    pub name: String,
    /// Label requirements from the [`NODE_SELECTOR_ANNOTATION`] annotation, as for
    /// [`TopologyEntry::selector`].
    pub selector: Option<Selector>,
    /// Where the document starts (`file:line`).
    pub origin: String,
}

/// What a timeline event does once its time comes.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create these objects, in order.
    Create(Vec<Stored>),
    /// Delete these objects with a propagation policy (missing ones are skipped).
    Delete(Vec<(ObjectKey, allot_controllers::garbagecollector::Propagation)>),
    /// Replace these objects' spec, labels and annotations.
    Update(Vec<Stored>),
    /// Record a device's health on the slices listing it.
    DeviceHealth(DeviceHealth),
    /// Set a condition on a claim's device status.
    ClaimDeviceCondition(ClaimDeviceCondition),
    /// Only move the clock.
    Advance,
}

/// A timeline event, decoded and validated.
#[derive(Debug, Clone, PartialEq)]
pub struct ScheduledEvent {
    /// When.
    pub at: SimTime,
    /// What.
    pub action: Action,
    /// Where it was written (`file:line`).
    pub origin: String,
}

/// Everything a run needs, validated.
#[derive(Debug, Clone, PartialEq)]
pub struct Input {
    /// The objects the store starts with, in input order (defaulted).
    pub objects: Vec<Stored>,
    /// NodeTopology documents, in input order.
    pub topologies: Vec<TopologyEntry>,
    /// The KubeletConfiguration of nodes no other document names or selects (upstream
    /// defaults when absent).
    pub kubelet_config: KubeletConfiguration,
    /// KubeletConfigurations for one node (`metadata.name`) or a node label group (the
    /// [`NODE_SELECTOR_ANNOTATION`] annotation), in input order.
    pub kubelet_configs: Vec<KubeletConfigEntry>,
    /// Timeline events in time order (ties in input order).
    pub events: Vec<ScheduledEvent>,
    /// The options document (defaults when absent).
    pub options: SimulationOptions,
    /// The DRA feature gates in force.
    pub features: Features,
    /// Every gate in force: allot's defaults (allot-features), then the options'.
    pub gates: allot_features::FeatureGates,
    /// How long to keep running after the last event, in milliseconds.
    pub horizon_millis: u64,
    /// The DynamicResources binding timeout, in seconds.
    pub binding_timeout_seconds: u64,
    /// The driver health timeout, in milliseconds.
    pub driver_health_timeout_millis: u64,
    /// The KubeSchedulerConfiguration document, read (`None`: the default profile).
    pub scheduler_configuration: Option<allot_scheduler::config::SchedulerConfiguration>,
}

impl Input {
    /// Whether a gate is on.
    pub fn gate(&self, name: &str) -> bool {
        self.gates.enabled(name)
    }

    /// The topology and kubelet configuration of one node: the NodeTopology named like the
    /// node, else the first whose selector matches the node's labels, else one made from the
    /// node's CPU and memory capacity (one socket, one NUMA node, no SMT); the
    /// KubeletConfiguration chosen the same way (see [`KubeletConfigEntry`]), else the default.
    /// (Loading rejects a node that two selectors match, so "the first" is "the only".)
    pub fn node_setup(&self, node: &Node) -> (NodeTopology, KubeletConfiguration) {
        let name = &node.metadata.name;
        let labels = &node.metadata.labels;
        let by_name = self
            .topologies
            .iter()
            .find(|t| t.selector.is_none() && &t.topology.metadata.name == name);
        let by_selector = || {
            self.topologies
                .iter()
                .find(|t| t.selector.as_ref().is_some_and(|s| labels_match(s, labels)))
        };
        let topology = match by_name.or_else(by_selector) {
            Some(entry) => {
                let mut topology = entry.topology.clone();
                topology.metadata.name = name.clone();
                topology
            }
            None => default_topology(node),
        };
        let config = self
            .kubelet_configs
            .iter()
            .find(|k| k.selector.is_none() && &k.name == name)
            .or_else(|| {
                self.kubelet_configs
                    .iter()
                    .find(|k| k.selector.as_ref().is_some_and(|s| labels_match(s, labels)))
            })
            .map_or_else(|| self.kubelet_config.clone(), |k| k.config.clone());
        (topology, config)
    }
}

/// Whether node labels satisfy selector requirements (`(key, None)`: the label exists).
fn labels_match(
    requirements: &[(String, Option<String>)],
    labels: &BTreeMap<String, String>,
) -> bool {
    requirements
        .iter()
        .all(|(key, value)| match (labels.get(key), value) {
            (Some(_), None) => true,
            (Some(have), Some(want)) => have == want,
            (None, _) => false,
        })
}

/// Node label requirements of an [`NODE_SELECTOR_ANNOTATION`] annotation.
pub type Selector = Vec<(String, Option<String>)>;

/// Reads the simulator's optional `metadata` of a KubeletConfiguration document (name,
/// labels, annotations), removing it from the document so the rest decodes as upstream's type.
fn kubelet_config_metadata(
    raw: &mut RawDocument,
) -> Result<(String, Option<Selector>), Box<InputError>> {
    let Some(metadata) = raw.value.as_object_mut().and_then(|o| o.remove("metadata")) else {
        return Ok((String::new(), None));
    };
    let serde_json::Value::Object(fields) = metadata else {
        return Err(Box::new(raw_error(
            raw,
            "metadata",
            "Invalid value: must be an object",
        )));
    };
    let mut name = String::new();
    let mut selector = None;
    for (key, value) in &fields {
        match key.as_str() {
            "name" => match value.as_str() {
                Some(text) => name = text.to_string(),
                None => {
                    return Err(Box::new(raw_error(
                        raw,
                        "metadata.name",
                        "Invalid value: must be a string",
                    )));
                }
            },
            "labels" | "annotations" => {
                let Some(map) = value
                    .as_object()
                    .filter(|m| m.values().all(|v| v.is_string()))
                else {
                    return Err(Box::new(raw_error(
                        raw,
                        &format!("metadata.{key}"),
                        "Invalid value: must be a map of strings",
                    )));
                };
                if key == "annotations"
                    && let Some(text) = map.get(NODE_SELECTOR_ANNOTATION).and_then(|v| v.as_str())
                {
                    selector = Some(
                        parse_selector(text).ok_or_else(|| Box::new(selector_error(raw, text)))?,
                    );
                }
            }
            other => {
                return Err(Box::new(raw_error(
                    raw,
                    &format!("metadata.{other}"),
                    "Unsupported value: a KubeletConfiguration's metadata may only have name, labels and annotations",
                )));
            }
        }
    }
    Ok((name, selector))
}

/// Errors for nodes that two node label groups select (NodeTopology or KubeletConfiguration)
/// and are not named by a document of their own.
fn check_group_overlaps(
    nodes: &[(&Node, String)],
    topologies: &[(TopologyEntry, String)],
    kubelet_configs: &[KubeletConfigEntry],
    errors: &mut Vec<InputError>,
) {
    for (node, origin) in nodes {
        let name = &node.metadata.name;
        let labels = &node.metadata.labels;
        let mut report = |kind: &str, groups: Vec<(&str, &str)>| {
            if groups.len() < 2 {
                return;
            }
            let listed: Vec<String> = groups
                .iter()
                .map(|(group, at)| format!("{group:?} ({at})"))
                .collect();
            let (file, line) = origin.rsplit_once(':').unwrap_or((origin.as_str(), "0"));
            errors.push(InputError {
                file: file.to_string(),
                line: line.parse().unwrap_or(0),
                kind: "Node".into(),
                object: name.clone(),
                field: "metadata.labels".into(),
                message: format!(
                    "Invalid value: the {NODE_SELECTOR_ANNOTATION} selectors of {kind} {} all match this node; a node belongs to one node label group (make the selectors exclusive, or give a {kind} named after the node)",
                    listed.join(" and ")
                ),
            });
        };
        if !topologies
            .iter()
            .any(|(t, _)| t.selector.is_none() && &t.topology.metadata.name == name)
        {
            let groups = topologies
                .iter()
                .filter(|(t, _)| t.selector.as_ref().is_some_and(|s| labels_match(s, labels)))
                .map(|(t, at)| (t.topology.metadata.name.as_str(), at.as_str()))
                .collect();
            report(allot_topology::KIND, groups);
        }
        if !kubelet_configs
            .iter()
            .any(|k| k.selector.is_none() && &k.name == name)
        {
            let groups = kubelet_configs
                .iter()
                .filter(|k| k.selector.as_ref().is_some_and(|s| labels_match(s, labels)))
                .map(|k| (k.name.as_str(), k.origin.as_str()))
                .collect();
            report(allot_kubelet_config::KIND, groups);
        }
    }
}

/// A topology from a node's capacity: `cpu` logical CPUs (whole CPUs, at least one) on one
/// socket and one NUMA node holding `memory`.
pub fn default_topology(node: &Node) -> NodeTopology {
    let resources = if node.status.capacity.is_empty() {
        &node.status.allocatable
    } else {
        &node.status.capacity
    };
    let cpus = resources
        .get("cpu")
        .map(|q| (q.milli_value().max(0) / 1000) as u32)
        .unwrap_or(0)
        .clamp(1, 1024);
    let memory = resources
        .get("memory")
        .map(|q| q.value().max(0) as u64)
        .unwrap_or(0);
    let mut topology = NodeTopology::new(node.metadata.name.clone());
    topology.cpus = (0..cpus)
        .map(|id| CpuInfo {
            id,
            core: id,
            socket: 0,
            numa: 0,
            uncore_cache: 0,
        })
        .collect();
    topology.numa_nodes = vec![NumaNode {
        id: 0,
        memory: Some(allot_topology::ByteSize(memory)),
        hugepages: BTreeMap::new(),
        distances: Vec::new(),
        machine_info: None,
        derived: true,
    }];
    topology
}

pub(crate) fn load_error(err: &LoadError) -> InputError {
    InputError {
        file: err.file().to_string(),
        line: err.line(),
        kind: err.kind().to_string(),
        object: err.object().to_string(),
        field: err.field().to_string(),
        message: err.detail(),
    }
}

pub(crate) fn raw_error(raw: &RawDocument, field: &str, message: impl Into<String>) -> InputError {
    InputError {
        file: raw.file.clone(),
        line: raw.line_of(field),
        kind: raw.kind.clone(),
        object: raw.object_name(),
        field: field.to_string(),
        message: message.into(),
    }
}

fn field_error(raw: &RawDocument, prefix: &str, error: &FieldError) -> InputError {
    let field = if prefix.is_empty() {
        error.path.clone()
    } else {
        format!("{prefix}.{}", error.path)
    };
    raw_error(raw, &field, error.message())
}

/// Reads files and directories and builds the input; every problem is reported, none run.
pub fn load_paths<P: AsRef<Path>>(paths: &[P]) -> Result<Input, SimError> {
    let loaded = allot_api::load::load(paths, &load_options());
    build(loaded)
}

/// Builds the input from documents already loaded (with [`load_options`]): what
/// `allot simulate` does after reading `-f` files and standard input itself.
pub fn from_loaded(loaded: Loaded) -> Result<Input, SimError> {
    build(loaded)
}

/// Builds the input from named texts (`(file name, text)`), as the bundled example is kept.
pub fn load_texts(texts: &[(&str, &str)]) -> Result<Input, SimError> {
    build(allot_api::load::load_texts(texts, &load_options()))
}

/// Decodes, defaults and validates one store object; `prefix` is where the document sits in
/// `raw` (empty for a top-level document).
fn admit(
    mut object: Object,
    raw: &RawDocument,
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
    outer: Option<(&RawDocument, &str)>,
) -> Option<Stored> {
    default_object(&mut object);
    let mut field_errors = validate_object(&object, &DraCel);
    field_errors.extend(admit_dra(&object, raw, namespaces));
    for error in &field_errors {
        errors.push(match outer {
            Some((raw, prefix)) => field_error(raw, prefix, error),
            None => field_error(raw, "", error),
        });
    }
    if !field_errors.is_empty() {
        return None;
    }
    Stored::from_object(object)
}

/// DRA admission beyond validation: a claim or claim template asks for admin access only in a
/// namespace labelled for it.
fn admit_dra(
    object: &Object,
    raw: &RawDocument,
    namespaces: &BTreeMap<String, Namespace>,
) -> Vec<FieldError> {
    let namespace = match raw.namespace() {
        "" => "default",
        other => other,
    };
    match object {
        Object::ResourceClaim(claim) => {
            admit_admin_access(&claim.spec, namespace, "spec", namespaces)
        }
        Object::ResourceClaimTemplate(template) => {
            admit_admin_access(&template.spec.spec, namespace, "spec.spec", namespaces)
        }
        _ => Vec::new(),
    }
}

fn parse_selector(text: &str) -> Option<Vec<(String, Option<String>)>> {
    let mut out = Vec::new();
    for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        match item.split_once('=') {
            Some((key, value)) if !key.trim().is_empty() => {
                out.push((key.trim().to_string(), Some(value.trim().to_string())))
            }
            Some(_) => return None,
            None => out.push((item.to_string(), None)),
        }
    }
    (!out.is_empty()).then_some(out)
}

fn duration_field(
    raw: &RawDocument,
    field: &str,
    value: &Option<String>,
    default: u64,
    errors: &mut Vec<InputError>,
) -> u64 {
    match value {
        None => default,
        Some(text) => match parse_duration_millis(text) {
            Some(ms) => ms,
            None => {
                errors.push(raw_error(
                    raw,
                    field,
                    format!("Invalid value: {text:?}: must be a duration such as 90s, 10m or 1h"),
                ));
                default
            }
        },
    }
}

/// The key an object will have in the store (namespaced kinds default to `default`).
pub fn stored_key(stored: &Stored) -> ObjectKey {
    let kind = stored.kind();
    let meta = stored.meta();
    let namespace = store_namespace(kind, &meta.namespace);
    ObjectKey::new(kind, namespace, meta.name.clone())
}

/// The namespace an object of `kind` written with `namespace` has in the store: none for a
/// cluster-scoped kind, `default` when a namespaced one gives none.
fn store_namespace(kind: Kind, namespace: &str) -> String {
    match (kind.namespaced(), namespace) {
        (false, _) => String::new(),
        (true, "") => "default".to_string(),
        (true, ns) => ns.to_string(),
    }
}

/// The Priority admission plugin's rule, over the input: one default PriorityClass.
fn one_default_priority_class(stored: &Stored, objects: &[Stored]) -> Option<String> {
    let Stored::PriorityClass(class) = stored else {
        return None;
    };
    let classes = objects.iter().filter_map(|o| match o {
        Stored::PriorityClass(c) => Some(&**c),
        _ => None,
    });
    allot_validation::core_more::admit_priority_class(class, classes)
}

fn kind_by_name(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.name() == name)
}

/// What an input's documents say, gathered per kind family in document order, with the
/// problems found so far (in the order they are met).
#[derive(Default)]
struct Collected {
    errors: Vec<InputError>,
    /// Store objects (core, workload and DRA kinds), defaulted and validated.
    objects: Vec<Stored>,
    /// Where each store object is defined (`file:line`).
    seen: BTreeMap<ObjectKey, String>,
    /// NodeTopology documents with where they start.
    topologies: Vec<(TopologyEntry, String)>,
    /// KubeletConfigurations for one node or a node label group.
    kubelet_configs: Vec<KubeletConfigEntry>,
    /// The KubeletConfiguration with neither name nor selector, with where it starts.
    default_kubelet_config: Option<(String, KubeletConfiguration)>,
    timelines: Vec<(RawDocument, Timeline)>,
    options: Option<(RawDocument, SimulationOptions)>,
    /// KubeSchedulerConfiguration documents.
    scheduler_configs: Vec<(
        RawDocument,
        allot_api::kubescheduler::v1::KubeSchedulerConfiguration,
    )>,
}

/// What the SimulationOptions document sets (defaults when absent).
struct Settings {
    options: SimulationOptions,
    gates: allot_features::FeatureGates,
    horizon_millis: u64,
    binding_timeout_seconds: u64,
    driver_health_timeout_millis: u64,
}

/// Reads every document by kind family, then the options, the timeline and the workload
/// defaults, then checks node label groups; every problem is reported, in that order.
fn build(loaded: Loaded) -> Result<Input, SimError> {
    let namespaces = input_namespaces(&loaded.documents);
    let mut input = Collected {
        errors: loaded.errors.iter().map(load_error).collect(),
        ..Collected::default()
    };
    for document in loaded.documents {
        input.add(document, &namespaces);
    }
    let Collected {
        mut errors,
        mut objects,
        seen,
        topologies,
        kubelet_configs,
        default_kubelet_config,
        timelines,
        options,
        scheduler_configs,
    } = input;
    crate::priority::admit_pod_priorities(&mut objects, &seen, &mut errors);
    let kubelet_config = default_kubelet_config.map(|(_, c)| c).unwrap_or_default();
    let settings = settings(options, &mut errors);
    let mut events = timeline_events(&timelines, &namespaces, &mut errors);
    apply_workload_defaults(&timelines, &mut objects, &mut events, &mut errors);
    let nodes = input_nodes(&objects, &seen, &events);
    check_group_overlaps(&nodes, &topologies, &kubelet_configs, &mut errors);
    let scheduler_configuration = crate::scheduler_config::read(&scheduler_configs, &mut errors);
    let topologies: Vec<TopologyEntry> = topologies.into_iter().map(|(t, _)| t).collect();

    if !errors.is_empty() {
        return Err(SimError::Input(errors));
    }
    Ok(Input {
        objects,
        topologies,
        kubelet_config,
        kubelet_configs,
        events,
        options: settings.options,
        features: settings.gates.dra(),
        gates: settings.gates,
        horizon_millis: settings.horizon_millis,
        binding_timeout_seconds: settings.binding_timeout_seconds,
        driver_health_timeout_millis: settings.driver_health_timeout_millis,
        scheduler_configuration,
    })
}

/// The input's Namespaces by name (DRA admission reads their labels).
fn input_namespaces(documents: &[Document]) -> BTreeMap<String, Namespace> {
    documents
        .iter()
        .filter_map(|d| match &d.object {
            Object::Namespace(ns) => Some((ns.metadata.name.clone(), ns.clone())),
            _ => None,
        })
        .collect()
}

/// Where a document starts (`file:line`).
fn origin(raw: &RawDocument) -> String {
    format!("{}:{}", raw.file, raw.line)
}

/// The error for an [`NODE_SELECTOR_ANNOTATION`] annotation that does not parse.
fn selector_error(raw: &RawDocument, text: &str) -> InputError {
    raw_error(
        raw,
        &format!("metadata.annotations[{NODE_SELECTOR_ANNOTATION}]"),
        format!("Invalid value: {text:?}: expected key=value[,key=value...]"),
    )
}

impl Collected {
    /// Sorts one document into its kind family.
    fn add(&mut self, document: Document, namespaces: &BTreeMap<String, Namespace>) {
        let Document { raw, object } = document;
        match (&object, raw.api_version.as_str(), raw.kind.as_str()) {
            (Object::Extension, allot_topology::API_VERSION, allot_topology::KIND) => {
                self.add_topology(&raw)
            }
            (Object::Extension, allot_kubelet_config::API_VERSION, allot_kubelet_config::KIND) => {
                self.add_kubelet_config(&raw)
            }
            (Object::Extension, API_VERSION, TIMELINE_KIND) => match decode::<Timeline>(&raw) {
                Ok(timeline) => self.timelines.push((raw, timeline)),
                Err(err) => self.errors.push(load_error(&err)),
            },
            (Object::Extension, API_VERSION, OPTIONS_KIND) => self.add_options(raw),
            // A previous run's report (the last item of `-o json|yaml`) is output: a run fed
            // its own output ignores it.
            (Object::Extension, API_VERSION, REPORT_KIND) => {}
            (Object::KubeSchedulerConfiguration(config), _, _) => {
                self.scheduler_configs.push((raw, config.clone()));
            }
            // Allocation options are accepted; the simulator's own options carry what it uses.
            (Object::AllocationOptions(_), _, _) => {}
            _ => self.add_object(object, &raw, namespaces),
        }
    }

    /// A NodeTopology: decoded and validated, with its node label group's selector if any.
    fn add_topology(&mut self, raw: &RawDocument) {
        let topology = match decode::<NodeTopology>(raw) {
            Ok(topology) => topology,
            Err(err) => {
                self.errors.push(load_error(&err));
                return;
            }
        };
        if let Err(err) = topology.validate() {
            self.errors.push(raw_error(raw, "", err.to_string()));
            return;
        }
        let selector = match topology.metadata.annotations.get(NODE_SELECTOR_ANNOTATION) {
            None => None,
            Some(text) => match parse_selector(text) {
                Some(selector) => Some(selector),
                None => {
                    self.errors.push(selector_error(raw, text));
                    return;
                }
            },
        };
        self.topologies
            .push((TopologyEntry { topology, selector }, origin(raw)));
    }

    /// A KubeletConfiguration: the simulator's metadata stripped, decoded and validated, then
    /// kept as the default, one node's or a node label group's (one default, one per name).
    fn add_kubelet_config(&mut self, raw: &RawDocument) {
        let mut stripped = raw.clone();
        let (name, selector) = match kubelet_config_metadata(&mut stripped) {
            Ok(meta) => meta,
            Err(err) => {
                self.errors.push(*err);
                return;
            }
        };
        let config = match decode::<KubeletConfiguration>(&stripped) {
            Ok(config) => config,
            Err(err) => {
                self.errors.push(load_error(&err));
                return;
            }
        };
        if let Err(err) = config.validate() {
            self.errors.push(raw_error(raw, "", err.to_string()));
            return;
        }
        let origin = origin(raw);
        if name.is_empty() && selector.is_none() {
            if let Some((first, _)) = &self.default_kubelet_config {
                self.errors.push(raw_error(
                    raw,
                    "",
                    format!("Duplicate value: the KubeletConfiguration at {first} is already the default for every node; give this one a metadata.name (one node) or an {NODE_SELECTOR_ANNOTATION} annotation (a node label group)"),
                ));
            } else {
                self.default_kubelet_config = Some((origin, config));
            }
            return;
        }
        if selector.is_none()
            && let Some(first) = self
                .kubelet_configs
                .iter()
                .find(|k| k.selector.is_none() && k.name == name)
        {
            self.errors.push(raw_error(
                raw,
                "metadata.name",
                format!(
                    "Duplicate value: {name:?}: the KubeletConfiguration at {} already configures this node",
                    first.origin
                ),
            ));
            return;
        }
        self.kubelet_configs.push(KubeletConfigEntry {
            config,
            name,
            selector,
            origin,
        });
    }

    /// The SimulationOptions document (one at most).
    fn add_options(&mut self, raw: RawDocument) {
        match decode::<SimulationOptions>(&raw) {
            Ok(_) if self.options.is_some() => self.errors.push(raw_error(
                &raw,
                "",
                "Duplicate value: only one SimulationOptions document is allowed",
            )),
            Ok(parsed) => self.options = Some((raw, parsed)),
            Err(err) => self.errors.push(load_error(&err)),
        }
    }

    /// A store object (core, workload or DRA kind): admitted, then checked against the
    /// objects before it (one object per key, one default PriorityClass).
    fn add_object(
        &mut self,
        object: Object,
        raw: &RawDocument,
        namespaces: &BTreeMap<String, Namespace>,
    ) {
        let Some(stored) = admit(object, raw, namespaces, &mut self.errors, None) else {
            return;
        };
        let key = stored_key(&stored);
        if !key.name.is_empty()
            && let Some(first) = self.seen.get(&key)
        {
            self.errors.push(raw_error(
                raw,
                "metadata.name",
                format!("Duplicate value: {key} is also defined at {first}"),
            ));
        } else if let Some(reason) = one_default_priority_class(&stored, &self.objects) {
            self.errors.push(raw_error(
                raw,
                "globalDefault",
                format!("Forbidden: {reason}"),
            ));
        } else {
            self.seen.insert(key, origin(raw));
            self.objects.push(stored);
        }
    }
}

/// The run settings of the SimulationOptions document: feature gates over allot's defaults
/// (one definition for simulate and serve, allot-features), durations and the eviction mode.
fn settings(
    options: Option<(RawDocument, SimulationOptions)>,
    errors: &mut Vec<InputError>,
) -> Settings {
    let mut settings = Settings {
        options: SimulationOptions::default(),
        gates: allot_features::FeatureGates::defaults(),
        horizon_millis: 3_600_000,
        binding_timeout_seconds: 600,
        driver_health_timeout_millis: 30_000,
    };
    let Some((raw, parsed)) = options else {
        return settings;
    };
    for (gate, enabled) in &parsed.feature_gates {
        if settings.gates.set(gate, *enabled).is_err() {
            errors.push(raw_error(
                &raw,
                &format!("featureGates[{gate}]"),
                format!("Unsupported value: {gate:?}: not a feature gate allot knows"),
            ));
        }
    }
    settings.horizon_millis = duration_field(
        &raw,
        "horizon",
        &parsed.horizon,
        settings.horizon_millis,
        errors,
    );
    settings.binding_timeout_seconds = duration_field(
        &raw,
        "bindingTimeout",
        &parsed.binding_timeout,
        settings.binding_timeout_seconds * 1000,
        errors,
    ) / 1000;
    settings.driver_health_timeout_millis = duration_field(
        &raw,
        "driverHealthTimeout",
        &parsed.driver_health_timeout,
        settings.driver_health_timeout_millis,
        errors,
    );
    if let Some(mode) = &parsed.eviction_mode
        && !matches!(mode.as_str(), "Delete" | "MarkFailed")
    {
        errors.push(raw_error(
            &raw,
            "evictionMode",
            format!("Unsupported value: {mode:?}: supported values: \"Delete\", \"MarkFailed\""),
        ));
    }
    settings.options = parsed;
    settings
}

/// Every Timeline's events, decoded and validated, in time order (ties in input order).
fn timeline_events(
    timelines: &[(RawDocument, Timeline)],
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
) -> Vec<ScheduledEvent> {
    let mut events = Vec::new();
    for (raw, timeline) in timelines {
        let lines = raw.item_lines("events", timeline.events.len());
        for ((index, event), line) in timeline.events.iter().enumerate().zip(lines) {
            events.extend(timeline_event(raw, index, line, event, namespaces, errors));
        }
    }
    // A stable sort keeps input order among events at the same time.
    events.sort_by_key(|e| e.at);
    events
}

/// One timeline event (`events[index]`, at `line` of its document): its time and its one
/// action.
fn timeline_event(
    raw: &RawDocument,
    index: usize,
    line: u32,
    event: &TimelineEvent,
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
) -> Option<ScheduledEvent> {
    let prefix = format!("events[{index}]");
    let origin = format!("{}:{line}", raw.file);
    let Some(at) = parse_duration_millis(&event.at) else {
        errors.push(raw_error(
            raw,
            &format!("{prefix}.at"),
            format!(
                "Invalid value: {:?}: must be a duration such as 90s, 10m or 1h",
                event.at
            ),
        ));
        return None;
    };
    let actions = usize::from(!event.create.is_empty())
        + usize::from(!event.delete.is_empty())
        + usize::from(!event.update.is_empty())
        + usize::from(event.device_health.is_some())
        + usize::from(event.claim_device_condition.is_some());
    if actions > 1 {
        errors.push(raw_error(
            raw,
            &prefix,
            "Invalid value: an event does one thing: create, update, delete, deviceHealth or claimDeviceCondition",
        ));
        return None;
    }
    let action = event_action(raw, &prefix, event, namespaces, errors)?;
    Some(ScheduledEvent {
        at: SimTime(at),
        action,
        origin,
    })
}

/// What a timeline event does (it does one thing at most); `None` when that is invalid.
fn event_action(
    raw: &RawDocument,
    prefix: &str,
    event: &TimelineEvent,
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
) -> Option<Action> {
    if !event.create.is_empty() {
        let path = format!("{prefix}.create");
        let created = inline_objects(raw, &path, &event.create, namespaces, errors);
        Some(Action::Create(created))
    } else if !event.update.is_empty() {
        let path = format!("{prefix}.update");
        let updated = inline_objects(raw, &path, &event.update, namespaces, errors);
        Some(Action::Update(updated))
    } else if !event.delete.is_empty() {
        let keys = delete_keys(raw, prefix, &event.delete, errors);
        Some(Action::Delete(keys))
    } else if let Some(health) = &event.device_health {
        if !matches!(health.health.as_str(), "Healthy" | "Unhealthy" | "Unknown") {
            errors.push(raw_error(
                raw,
                &format!("{prefix}.deviceHealth.health"),
                format!(
                    "Unsupported value: {:?}: supported values: \"Healthy\", \"Unhealthy\", \"Unknown\"",
                    health.health
                ),
            ));
            return None;
        }
        Some(Action::DeviceHealth(health.clone()))
    } else if let Some(condition) = &event.claim_device_condition {
        if !matches!(
            condition.condition.status.as_str(),
            "True" | "False" | "Unknown"
        ) {
            errors.push(raw_error(
                raw,
                &format!("{prefix}.claimDeviceCondition.condition.status"),
                format!(
                    "Unsupported value: {:?}: supported values: \"False\", \"True\", \"Unknown\"",
                    condition.condition.status
                ),
            ));
            return None;
        }
        let mut condition = condition.clone();
        if condition.namespace.is_empty() {
            condition.namespace = "default".into();
        }
        Some(Action::ClaimDeviceCondition(condition))
    } else {
        Some(Action::Advance)
    }
}

/// The manifests of a timeline event's `create` or `update` list (`path`), each admitted; the
/// invalid ones are reported and left out.
fn inline_objects(
    raw: &RawDocument,
    path: &str,
    values: &[serde_json::Value],
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
) -> Vec<Stored> {
    let mut objects = Vec::new();
    let lines = raw.item_lines(path, values.len());
    for ((j, value), line) in values.iter().enumerate().zip(lines) {
        let path = format!("{path}[{j}]");
        if let Some(stored) = inline_object(raw, &path, line, value, namespaces, errors) {
            objects.push(stored);
        }
    }
    objects
}

/// The objects a timeline event deletes, with their propagation policies; invalid references
/// are reported and left out.
fn delete_keys(
    raw: &RawDocument,
    prefix: &str,
    references: &[ObjectRef],
    errors: &mut Vec<InputError>,
) -> Vec<(ObjectKey, allot_controllers::garbagecollector::Propagation)> {
    let mut keys = Vec::new();
    for (j, reference) in references.iter().enumerate() {
        let Some(kind) = kind_by_name(&reference.kind) else {
            errors.push(raw_error(
                raw,
                &format!("{prefix}.delete[{j}].kind"),
                format!("Unsupported value: {:?}", reference.kind),
            ));
            continue;
        };
        let policy = reference
            .propagation_policy
            .as_deref()
            .unwrap_or("Background");
        let Some(policy) = allot_controllers::garbagecollector::Propagation::parse(policy) else {
            errors.push(raw_error(
                raw,
                &format!("{prefix}.delete[{j}].propagationPolicy"),
                format!(
                    "Unsupported value: {policy:?}: supported values: \"Background\", \"Foreground\", \"Orphan\""
                ),
            ));
            continue;
        };
        let namespace = store_namespace(kind, &reference.namespace);
        keys.push((
            ObjectKey::new(kind, namespace, reference.name.clone()),
            policy,
        ));
    }
    keys
}

/// Applies every Timeline's `workloads` defaults (run duration, exit code) to the workload
/// objects of the input and of the timeline's create and update events.
fn apply_workload_defaults(
    timelines: &[(RawDocument, Timeline)],
    objects: &mut [Stored],
    events: &mut [ScheduledEvent],
    errors: &mut Vec<InputError>,
) {
    for (raw, timeline) in timelines {
        for (index, defaults) in timeline.workloads.iter().enumerate() {
            if !workload_defaults_valid(raw, index, defaults, errors) {
                continue;
            }
            for object in objects.iter_mut() {
                crate::workloads::apply_defaults(object, defaults);
            }
            for event in events.iter_mut() {
                if let Action::Create(created) | Action::Update(created) = &mut event.action {
                    for object in created.iter_mut() {
                        crate::workloads::apply_defaults(object, defaults);
                    }
                }
            }
        }
    }
}

/// Whether `workloads[index]` names a workload kind and a valid run duration (reported if not).
fn workload_defaults_valid(
    raw: &RawDocument,
    index: usize,
    defaults: &WorkloadDefaults,
    errors: &mut Vec<InputError>,
) -> bool {
    let path = format!("workloads[{index}]");
    if crate::workloads::KINDS.iter().all(|k| *k != defaults.kind) {
        errors.push(raw_error(
            raw,
            &format!("{path}.kind"),
            format!(
                "Unsupported value: {:?}: supported values: {}",
                defaults.kind,
                crate::workloads::KINDS.map(|k| format!("{k:?}")).join(", ")
            ),
        ));
        return false;
    }
    if allot_nodesim::lifecycle::parse_duration_millis(&defaults.run_duration).is_none() {
        errors.push(raw_error(
            raw,
            &format!("{path}.runDuration"),
            format!(
                "Invalid value: {:?}: must be a duration such as 90s, 10m or 1h",
                defaults.run_duration
            ),
        ));
        return false;
    }
    true
}

/// Every node of the run with where it is written: the input's, then those timeline events
/// create.
fn input_nodes<'a>(
    objects: &'a [Stored],
    seen: &BTreeMap<ObjectKey, String>,
    events: &'a [ScheduledEvent],
) -> Vec<(&'a Node, String)> {
    let mut nodes: Vec<(&Node, String)> = Vec::new();
    for object in objects {
        if let Stored::Node(node) = object {
            let origin = seen.get(&stored_key(object)).cloned().unwrap_or_default();
            nodes.push((node, origin));
        }
    }
    for event in events {
        if let Action::Create(created) = &event.action {
            for object in created {
                if let Stored::Node(node) = object {
                    nodes.push((node, event.origin.clone()));
                }
            }
        }
    }
    nodes
}

/// Decodes and validates a manifest written inline in a timeline, reporting errors at their
/// place in the timeline document.
fn inline_object(
    raw: &RawDocument,
    path: &str,
    line: u32,
    value: &serde_json::Value,
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
) -> Option<Stored> {
    let field = |name: &str| {
        value
            .get(name)
            .and_then(serde_json::Value::as_str)
            .unwrap_or_default()
            .to_string()
    };
    let inner = RawDocument {
        file: raw.file.clone(),
        line,
        api_version: field("apiVersion"),
        kind: field("kind"),
        value: value.clone(),
        source_map: Default::default(),
    };
    if inner.kind.is_empty() || inner.api_version.is_empty() {
        errors.push(raw_error(
            raw,
            path,
            "Required value: an inline manifest needs apiVersion and kind",
        ));
        return None;
    }
    match allot_api::load::decode_object(&inner, &LoadOptions::default()) {
        Ok(object) => {
            let before = errors.len();
            let stored = admit(object, &inner, namespaces, errors, Some((raw, path)));
            if stored.is_none() && errors.len() == before {
                errors.push(raw_error(
                    raw,
                    path,
                    format!("{} cannot be created by a timeline", inner.kind),
                ));
            }
            stored
        }
        Err(err) => {
            let mut error = load_error(&err);
            if !error.field.is_empty() {
                let full = format!("{path}.{}", error.field);
                error.line = raw.line_of(&full);
                error.field = full;
            } else {
                error.field = path.to_string();
                error.line = raw.line_of(path);
            }
            errors.push(error);
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NODES: &str = "
apiVersion: v1
kind: Node
metadata: {name: cpu-1, labels: {pool: cpu}}
status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-1, labels: {pool: gpu, zone: a}}
status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}
---
apiVersion: v1
kind: Node
metadata: {name: gpu-2, labels: {pool: gpu, zone: b}}
status: {capacity: {cpu: '8', memory: 8Gi, pods: '110'}}
";

    fn config(metadata: &str, policy: &str) -> String {
        format!(
            "---\napiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n{metadata}cpuManagerPolicy: {policy}\nreservedSystemCPUs: '0'\n"
        )
    }

    fn node<'a>(input: &'a Input, name: &str) -> &'a Node {
        input
            .objects
            .iter()
            .find_map(|o| match o {
                Stored::Node(n) if n.metadata.name == name => Some(n),
                _ => None,
            })
            .expect("node")
    }

    fn policy(input: &Input, name: &str) -> String {
        input.node_setup(node(input, name)).1.cpu_manager_policy
    }

    fn errors(texts: &[(&str, &str)]) -> Vec<String> {
        match load_texts(texts) {
            Err(SimError::Input(errors)) => errors.iter().map(ToString::to_string).collect(),
            other => panic!("expected input errors, got {other:?}"),
        }
    }

    #[test]
    fn kubelet_configuration_by_name_group_and_default() {
        let text = format!(
            "{NODES}{}{}{}",
            config(
                "metadata:\n  name: gpu-nodes\n  annotations: {allot.dev/node-selector: pool=gpu}\n",
                "static"
            ),
            config("metadata: {name: gpu-2}\n", "none"),
            config("", "none"),
        );
        let input = load_texts(&[("c.yaml", &text)]).expect("valid");
        assert_eq!(input.kubelet_configs.len(), 2);
        assert_eq!(policy(&input, "gpu-1"), "static");
        // The document named after the node wins over its group.
        assert_eq!(policy(&input, "gpu-2"), "none");
        // Neither named nor selected: the default.
        assert_eq!(policy(&input, "cpu-1"), "none");
        assert_eq!(input.kubelet_config.cpu_manager_policy, "none");
    }

    #[test]
    fn without_a_default_unmatched_nodes_get_upstream_defaults() {
        let text = format!(
            "{NODES}{}",
            config(
                "metadata:\n  annotations: {allot.dev/node-selector: zone}\n",
                "static"
            )
        );
        let input = load_texts(&[("c.yaml", &text)]).expect("valid");
        assert_eq!(policy(&input, "gpu-1"), "static");
        assert_eq!(policy(&input, "gpu-2"), "static");
        assert_eq!(policy(&input, "cpu-1"), "none");
    }

    #[test]
    fn two_groups_matching_one_node_is_an_error() {
        let text = format!(
            "{NODES}{}{}",
            config(
                "metadata:\n  name: gpus\n  annotations: {allot.dev/node-selector: pool=gpu}\n",
                "static"
            ),
            config(
                "metadata:\n  name: zone-a\n  annotations: {allot.dev/node-selector: zone=a}\n",
                "none"
            ),
        );
        let errors = errors(&[("c.yaml", &text)]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("c.yaml:7: Node gpu-1: metadata.labels: Invalid value:"),
            "{errors:?}"
        );
        assert!(
            errors[0].contains("KubeletConfiguration \"gpus\" (c.yaml:17) and \"zone-a\""),
            "{errors:?}"
        );
        // A document named after the node settles it.
        let settled = format!("{text}{}", config("metadata: {name: gpu-1}\n", "none"));
        let input = load_texts(&[("c.yaml", &settled)]).expect("valid");
        assert_eq!(policy(&input, "gpu-1"), "none");
    }

    #[test]
    fn overlapping_topology_groups_are_an_error_too() {
        let topology = |name: &str, selector: &str| {
            format!(
                "---\napiVersion: allot.dev/v1alpha1\nkind: NodeTopology\nmetadata:\n  name: {name}\n  annotations: {{allot.dev/node-selector: '{selector}'}}\ncpus:\n- {{id: 0, core: 0, socket: 0, numa: 0}}\n"
            )
        };
        let text = format!(
            "{NODES}{}{}",
            topology("gpus", "pool=gpu"),
            topology("b", "zone=b")
        );
        let errors = errors(&[("t.yaml", &text)]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("Node gpu-2"), "{errors:?}");
        assert!(errors[0].contains("NodeTopology \"gpus\""), "{errors:?}");
    }

    #[test]
    fn duplicate_defaults_and_names_and_bad_metadata() {
        let text = format!(
            "{NODES}{}{}{}{}{}",
            config("", "static"),
            config("", "none"),
            config("metadata: {name: cpu-1}\n", "none"),
            config("metadata: {name: cpu-1}\n", "static"),
            config("metadata: {namespace: x}\n", "none"),
        );
        let errors = errors(&[("d.yaml", &text)]);
        assert_eq!(errors.len(), 3, "{errors:?}");
        assert!(
            errors[0].contains("already the default for every node"),
            "{errors:?}"
        );
        assert!(
            errors[1].contains("metadata.name: Duplicate value: \"cpu-1\""),
            "{errors:?}"
        );
        assert!(errors[2].contains("metadata.namespace:"), "{errors:?}");
        let bad = format!(
            "{NODES}{}",
            config(
                "metadata:\n  annotations: {allot.dev/node-selector: '=x'}\n",
                "none"
            )
        );
        let errors = self::errors(&[("b.yaml", &bad)]);
        assert!(
            errors[0].contains("metadata.annotations[allot.dev/node-selector]: Invalid value"),
            "{errors:?}"
        );
    }

    #[test]
    fn nodes_created_by_the_timeline_are_checked() {
        let text = format!(
            "{}{}\n---\napiVersion: allot.dev/v1alpha1\nkind: Timeline\nmetadata: {{name: t}}\nevents:\n- at: 10s\n  create:\n  - apiVersion: v1\n    kind: Node\n    metadata: {{name: late, labels: {{a: '1', b: '1'}}}}\n",
            config(
                "metadata:\n  name: a\n  annotations: {allot.dev/node-selector: a}\n",
                "static"
            ),
            config(
                "metadata:\n  name: b\n  annotations: {allot.dev/node-selector: b}\n",
                "none"
            ),
        );
        let errors = errors(&[("l.yaml", &text)]);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].contains("Node late"), "{errors:?}");
    }
}
