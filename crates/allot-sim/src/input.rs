//! Reading a simulation's input: manifests, node topologies, the kubelet configuration, the
//! timeline and options; defaulting and validating every object before anything runs.

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
    SimulationOptions, TIMELINE_KIND, Timeline, parse_duration_millis,
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

/// What a timeline event does once its time comes.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create these objects, in order.
    Create(Vec<Stored>),
    /// Delete these objects (missing ones are skipped).
    Delete(Vec<ObjectKey>),
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
    /// The KubeletConfiguration every node uses (upstream defaults when absent).
    pub kubelet_config: KubeletConfiguration,
    /// Timeline events in time order (ties in input order).
    pub events: Vec<ScheduledEvent>,
    /// The options document (defaults when absent).
    pub options: SimulationOptions,
    /// The DRA feature gates in force.
    pub features: Features,
    /// Other gates ([`OTHER_GATES`]) as set in the options, over their defaults.
    pub other_gates: BTreeMap<String, bool>,
    /// How long to keep running after the last event, in milliseconds.
    pub horizon_millis: u64,
    /// The DynamicResources binding timeout, in seconds.
    pub binding_timeout_seconds: u64,
    /// The driver health timeout, in milliseconds.
    pub driver_health_timeout_millis: u64,
}

/// Feature gates besides the allocator's that the simulator passes on, with their defaults.
pub const OTHER_GATES: &[(&str, bool)] = &[
    ("DRAWorkloadResourceClaims", true),
    ("ResourceHealthStatus", true),
    ("DRANodeAllocatableResources", true),
];

impl Input {
    /// Whether one of [`OTHER_GATES`] is on.
    pub fn gate(&self, name: &str) -> bool {
        self.other_gates.get(name).copied().unwrap_or_else(|| {
            OTHER_GATES
                .iter()
                .find(|(gate, _)| *gate == name)
                .is_some_and(|(_, default)| *default)
        })
    }

    /// The topology and kubelet configuration of one node: the NodeTopology named like the
    /// node, else the first whose selector matches the node's labels, else one made from the
    /// node's CPU and memory capacity (one socket, one NUMA node, no SMT).
    pub fn node_setup(&self, node: &Node) -> (NodeTopology, KubeletConfiguration) {
        let name = &node.metadata.name;
        let by_name = self
            .topologies
            .iter()
            .find(|t| t.selector.is_none() && &t.topology.metadata.name == name);
        let by_selector = || {
            self.topologies.iter().find(|t| {
                t.selector.as_ref().is_some_and(|requirements| {
                    requirements.iter().all(|(key, value)| {
                        match (node.metadata.labels.get(key), value) {
                            (Some(_), None) => true,
                            (Some(have), Some(want)) => have == want,
                            (None, _) => false,
                        }
                    })
                })
            })
        };
        let topology = match by_name.or_else(by_selector) {
            Some(entry) => {
                let mut topology = entry.topology.clone();
                topology.metadata.name = name.clone();
                topology
            }
            None => default_topology(node),
        };
        (topology, self.kubelet_config.clone())
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

fn load_error(err: &LoadError) -> InputError {
    let mut out = InputError {
        file: err.file().to_string(),
        line: err.line(),
        kind: String::new(),
        object: String::new(),
        field: String::new(),
        message: String::new(),
    };
    match err {
        LoadError::UnknownField {
            kind, object, path, ..
        } => {
            out.kind = kind.clone();
            out.object = object.clone();
            out.field = path.clone();
            out.message = "unknown field".into();
        }
        LoadError::InvalidField {
            kind,
            object,
            path,
            message,
            ..
        } => {
            out.kind = kind.clone();
            out.object = object.clone();
            out.field = path.clone();
            out.message = message.clone();
        }
        LoadError::DuplicateField { kind, path, .. } => {
            out.kind = kind.clone();
            out.field = path.clone();
            out.message = "duplicate field".into();
        }
        LoadError::Io { message, .. }
        | LoadError::Syntax { message, .. }
        | LoadError::NotAnObject { message, .. } => out.message = message.clone(),
        LoadError::UnknownKind {
            api_version, kind, ..
        } => {
            out.message = format!("no kind \"{kind}\" is registered for version \"{api_version}\"")
        }
    }
    out
}

fn raw_error(raw: &RawDocument, field: &str, message: impl Into<String>) -> InputError {
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

/// Builds the input from named texts (`(file name, text)`), as the bundled example is kept.
pub fn load_texts(texts: &[(&str, &str)]) -> Result<Input, SimError> {
    let mut all = Loaded::default();
    for (file, text) in texts {
        let loaded = allot_api::load::load_str(file, text, &load_options());
        all.documents.extend(loaded.documents);
        all.errors.extend(loaded.errors);
    }
    build(all)
}

/// Decodes, defaults and validates one store object; `prefix` is where the document sits in
/// `raw` (empty for a top-level document).
fn admit(
    document: &mut Document,
    namespaces: &BTreeMap<String, Namespace>,
    errors: &mut Vec<InputError>,
    outer: Option<(&RawDocument, &str)>,
) -> Option<Stored> {
    default_object(&mut document.object);
    let mut field_errors = validate_object(&document.object, &DraCel);
    let namespace = match document.raw.namespace() {
        "" => "default",
        other => other,
    };
    match &document.object {
        Object::ResourceClaim(claim) => field_errors.extend(admit_admin_access(
            &claim.spec,
            namespace,
            "spec",
            namespaces,
        )),
        Object::ResourceClaimTemplate(template) => field_errors.extend(admit_admin_access(
            &template.spec.spec,
            namespace,
            "spec.spec",
            namespaces,
        )),
        _ => {}
    }
    for error in &field_errors {
        errors.push(match outer {
            Some((raw, prefix)) => field_error(raw, prefix, error),
            None => field_error(&document.raw, "", error),
        });
    }
    if !field_errors.is_empty() {
        return None;
    }
    Stored::from_object(document.object.clone())
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
    let namespace = match (kind.namespaced(), meta.namespace.as_str()) {
        (false, _) => String::new(),
        (true, "") => "default".to_string(),
        (true, ns) => ns.to_string(),
    };
    ObjectKey::new(kind, namespace, meta.name.clone())
}

fn kind_by_name(name: &str) -> Option<Kind> {
    Kind::ALL.into_iter().find(|k| k.name() == name)
}

fn build(loaded: Loaded) -> Result<Input, SimError> {
    let mut errors: Vec<InputError> = loaded.errors.iter().map(load_error).collect();
    let mut documents = loaded.documents;
    let namespaces: BTreeMap<String, Namespace> = documents
        .iter()
        .filter_map(|d| match &d.object {
            Object::Namespace(ns) => Some((ns.metadata.name.clone(), ns.clone())),
            _ => None,
        })
        .collect();
    let mut objects = Vec::new();
    let mut seen: BTreeMap<ObjectKey, String> = BTreeMap::new();
    let mut topologies = Vec::new();
    let mut kubelet_configs: Vec<(RawDocument, KubeletConfiguration)> = Vec::new();
    let mut timelines: Vec<(RawDocument, Timeline)> = Vec::new();
    let mut options: Option<(RawDocument, SimulationOptions)> = None;
    for document in &mut documents {
        let raw = document.raw.clone();
        match (
            &document.object,
            raw.api_version.as_str(),
            raw.kind.as_str(),
        ) {
            (Object::Extension, allot_topology::API_VERSION, allot_topology::KIND) => {
                match decode::<NodeTopology>(&raw) {
                    Ok(topology) => {
                        if let Err(err) = topology.validate() {
                            errors.push(raw_error(&raw, "", err.to_string()));
                            continue;
                        }
                        let selector = match topology
                            .metadata
                            .annotations
                            .get(NODE_SELECTOR_ANNOTATION)
                        {
                            None => None,
                            Some(text) => match parse_selector(text) {
                                Some(selector) => Some(selector),
                                None => {
                                    errors.push(raw_error(
                                        &raw,
                                        &format!("metadata.annotations[{NODE_SELECTOR_ANNOTATION}]"),
                                        format!("Invalid value: {text:?}: expected key=value[,key=value...]"),
                                    ));
                                    continue;
                                }
                            },
                        };
                        topologies.push(TopologyEntry { topology, selector });
                    }
                    Err(err) => errors.push(load_error(&err)),
                }
            }
            (Object::Extension, allot_kubelet_config::API_VERSION, allot_kubelet_config::KIND) => {
                match decode::<KubeletConfiguration>(&raw) {
                    Ok(config) => match config.validate() {
                        Ok(_) => kubelet_configs.push((raw, config)),
                        Err(err) => errors.push(raw_error(&raw, "", err.to_string())),
                    },
                    Err(err) => errors.push(load_error(&err)),
                }
            }
            (Object::Extension, API_VERSION, TIMELINE_KIND) => match decode::<Timeline>(&raw) {
                Ok(timeline) => timelines.push((raw, timeline)),
                Err(err) => errors.push(load_error(&err)),
            },
            (Object::Extension, API_VERSION, OPTIONS_KIND) => {
                match decode::<SimulationOptions>(&raw) {
                    Ok(parsed) => {
                        if options.is_some() {
                            errors.push(raw_error(
                                &raw,
                                "",
                                "Duplicate value: only one SimulationOptions document is allowed",
                            ));
                        } else {
                            options = Some((raw, parsed));
                        }
                    }
                    Err(err) => errors.push(load_error(&err)),
                }
            }
            // Scheduler configuration and allocation options are accepted; the simulator's
            // own options carry what it uses.
            (Object::AllocationOptions(_) | Object::KubeSchedulerConfiguration(_), _, _) => {}
            _ => {
                if let Some(stored) = admit(document, &namespaces, &mut errors, None) {
                    let key = stored_key(&stored);
                    if !key.name.is_empty()
                        && let Some(first) = seen.get(&key)
                    {
                        errors.push(raw_error(
                            &raw,
                            "metadata.name",
                            format!("Duplicate value: {key} is also defined at {first}"),
                        ));
                    } else {
                        seen.insert(key, format!("{}:{}", raw.file, raw.line));
                        objects.push(stored);
                    }
                }
            }
        }
    }
    if kubelet_configs.len() > 1 {
        let (raw, _) = &kubelet_configs[1];
        errors.push(raw_error(
            raw,
            "",
            "Duplicate value: one KubeletConfiguration applies to every node; give only one",
        ));
    }
    let kubelet_config = kubelet_configs
        .into_iter()
        .next()
        .map(|(_, c)| c)
        .unwrap_or_default();

    let mut features = Features::all();
    let mut other_gates = BTreeMap::new();
    let mut horizon_millis = 3_600_000;
    let mut binding_timeout_seconds = 600;
    let mut driver_health_timeout_millis = 30_000;
    let options = match options {
        Some((raw, parsed)) => {
            for (gate, enabled) in &parsed.feature_gates {
                if OTHER_GATES.iter().any(|(name, _)| name == gate) {
                    other_gates.insert(gate.clone(), *enabled);
                } else if features.set(gate, *enabled).is_err() {
                    errors.push(raw_error(
                        &raw,
                        &format!("featureGates[{gate}]"),
                        format!("Unsupported value: {gate:?}: not a DRA feature gate"),
                    ));
                }
            }
            horizon_millis = duration_field(
                &raw,
                "horizon",
                &parsed.horizon,
                horizon_millis,
                &mut errors,
            );
            binding_timeout_seconds = duration_field(
                &raw,
                "bindingTimeout",
                &parsed.binding_timeout,
                600_000,
                &mut errors,
            ) / 1000;
            driver_health_timeout_millis = duration_field(
                &raw,
                "driverHealthTimeout",
                &parsed.driver_health_timeout,
                driver_health_timeout_millis,
                &mut errors,
            );
            if let Some(mode) = &parsed.eviction_mode
                && !matches!(mode.as_str(), "Delete" | "MarkFailed")
            {
                errors.push(raw_error(
                    &raw,
                    "evictionMode",
                    format!(
                        "Unsupported value: {mode:?}: supported values: \"Delete\", \"MarkFailed\""
                    ),
                ));
            }
            parsed
        }
        None => SimulationOptions::default(),
    };

    let mut events = Vec::new();
    for (raw, timeline) in &timelines {
        for (index, event) in timeline.events.iter().enumerate() {
            let prefix = format!("events[{index}]");
            let origin = format!("{}:{}", raw.file, raw.line_of(&prefix));
            let Some(at) = parse_duration_millis(&event.at) else {
                errors.push(raw_error(
                    raw,
                    &format!("{prefix}.at"),
                    format!(
                        "Invalid value: {:?}: must be a duration such as 90s, 10m or 1h",
                        event.at
                    ),
                ));
                continue;
            };
            let actions = usize::from(!event.create.is_empty())
                + usize::from(!event.delete.is_empty())
                + usize::from(event.device_health.is_some())
                + usize::from(event.claim_device_condition.is_some());
            if actions > 1 {
                errors.push(raw_error(
                    raw,
                    &prefix,
                    "Invalid value: an event does one thing: create, delete, deviceHealth or claimDeviceCondition",
                ));
                continue;
            }
            let action = if !event.create.is_empty() {
                let mut created = Vec::new();
                for (j, value) in event.create.iter().enumerate() {
                    let path = format!("{prefix}.create[{j}]");
                    if let Some(stored) = inline_object(raw, &path, value, &namespaces, &mut errors)
                    {
                        created.push(stored);
                    }
                }
                Action::Create(created)
            } else if !event.delete.is_empty() {
                let mut keys = Vec::new();
                for (j, reference) in event.delete.iter().enumerate() {
                    match kind_by_name(&reference.kind) {
                        Some(kind) => {
                            let namespace = match (kind.namespaced(), reference.namespace.as_str())
                            {
                                (false, _) => String::new(),
                                (true, "") => "default".to_string(),
                                (true, ns) => ns.to_string(),
                            };
                            keys.push(ObjectKey::new(kind, namespace, reference.name.clone()));
                        }
                        None => errors.push(raw_error(
                            raw,
                            &format!("{prefix}.delete[{j}].kind"),
                            format!("Unsupported value: {:?}", reference.kind),
                        )),
                    }
                }
                Action::Delete(keys)
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
                    continue;
                }
                Action::DeviceHealth(health.clone())
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
                    continue;
                }
                let mut condition = condition.clone();
                if condition.namespace.is_empty() {
                    condition.namespace = "default".into();
                }
                Action::ClaimDeviceCondition(condition)
            } else {
                Action::Advance
            };
            events.push(ScheduledEvent {
                at: SimTime(at),
                action,
                origin,
            });
        }
    }
    // A stable sort keeps input order among events at the same time.
    events.sort_by_key(|e| e.at);

    if !errors.is_empty() {
        return Err(SimError::Input(errors));
    }
    Ok(Input {
        objects,
        topologies,
        kubelet_config,
        events,
        options,
        features,
        other_gates,
        horizon_millis,
        binding_timeout_seconds,
        driver_health_timeout_millis,
    })
}

/// Decodes and validates a manifest written inline in a timeline, reporting errors at their
/// place in the timeline document.
fn inline_object(
    raw: &RawDocument,
    path: &str,
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
        line: raw.line_of(path),
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
            let mut document = Document { raw: inner, object };
            let stored = admit(&mut document, namespaces, errors, Some((raw, path)));
            if stored.is_none() && errors.len() == before {
                errors.push(raw_error(
                    raw,
                    path,
                    format!("{} cannot be created by a timeline", document.raw.kind),
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
