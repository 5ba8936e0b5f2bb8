//! `KubeletConfiguration` (`kubelet.config.k8s.io/v1beta1`): the part of the kubelet's configuration
//! that drives the CPU, Memory and Topology managers, and the checks the kubelet makes on it at
//! start-up.
//!
//! Key design decision: the wire type ([`KubeletConfiguration`]) is kept as close to upstream's JSON
//! as possible (strings and string maps, upstream defaults, unknown fields rejected), and
//! [`KubeletConfiguration::validate`] turns it into a typed [`ManagerConfig`] once. Engines only ever
//! see the typed value, so "options as `map[string]string`" and feature gates read from globals stay
//! at this edge. The cost is two representations of the same settings; the typed one is the only one
//! that the managers accept.

#![deny(missing_docs)]

use std::collections::{BTreeMap, BTreeSet};

use allot_quantity::Quantity;
use serde::{Deserialize, Serialize};

/// The API version this crate reads.
pub const API_VERSION: &str = "kubelet.config.k8s.io/v1beta1";
/// The kind this crate reads.
pub const KIND: &str = "KubeletConfiguration";

/// Errors in a kubelet configuration, worded like the kubelet's start-up errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// `apiVersion` or `kind` is not the one this crate reads.
    #[error("unexpected apiVersion/kind {api_version:?}/{kind:?}, want {API_VERSION}/{KIND}")]
    WrongKind {
        /// The apiVersion found.
        api_version: String,
        /// The kind found.
        kind: String,
    },
    /// A feature gate name the kubelet does not know.
    #[error("unrecognized feature gate: {0}")]
    UnknownFeatureGate(String),
    /// `cpuManagerPolicy` is neither `none` nor `static`.
    #[error("unknown policy: \"{0}\"")]
    UnknownCpuManagerPolicy(String),
    /// A CPU Manager policy option name that does not exist.
    #[error("unknown CPU Manager Policy option: \"{0}\"")]
    UnknownCpuManagerOption(String),
    /// An alpha CPU Manager option used without `CPUManagerPolicyAlphaOptions`.
    #[error("CPU Manager Policy Alpha-level Options not enabled, but option \"{0}\" provided")]
    CpuManagerAlphaOptionDisabled(String),
    /// A beta CPU Manager option used with `CPUManagerPolicyBetaOptions` turned off.
    #[error("CPU Manager Policy Beta-level Options not enabled, but option \"{0}\" provided")]
    CpuManagerBetaOptionDisabled(String),
    /// An option value that is not a Go boolean (or integer, where one is expected).
    #[error("bad value for option \"{option}\": {detail}")]
    BadOptionValue {
        /// The option name.
        option: String,
        /// What was wrong with the value, as Go's strconv says it.
        detail: String,
    },
    /// Two CPU Manager options that cannot be combined.
    #[error("static policy options {0} and {1} can not be used at the same time")]
    IncompatibleCpuManagerOptions(&'static str, &'static str),
    /// CPU Manager options given with the `none` policy.
    #[error(
        "invalid configuration: cpuManagerPolicyOptions (--cpu-manager-policy-options) can only be set with the static policy, got policy \"none\""
    )]
    OptionsWithNonePolicy,
    /// `align-by-socket` with the `single-numa-node` Topology Manager policy.
    #[error(
        "Topolgy manager single-numa-node policy is incompatible with CPUManager align-by-socket policy option"
    )]
    AlignBySocketWithSingleNumaNode,
    /// The static policy without any CPU reserved for the system.
    #[error(
        "[cpumanager] the static policy requires systemreserved.cpu + kubereserved.cpu to be greater than zero"
    )]
    StaticPolicyWithoutReservation,
    /// `reservedSystemCPUs` is not a Linux CPU list.
    #[error("invalid configuration: reservedSystemCPUs (--reserved-cpus) \"{0}\" is invalid")]
    BadReservedSystemCpus(String),
    /// `topologyManagerPolicy` is not one of the four policies.
    #[error(
        "invalid configuration: topologyManagerPolicy (--topology-manager-policy) \"{0}\" must be one of: [\"none\" \"best-effort\" \"restricted\" \"single-numa-node\"]"
    )]
    UnknownTopologyManagerPolicy(String),
    /// `topologyManagerScope` is neither `container` nor `pod`.
    #[error(
        "invalid configuration: topologyManagerScope (--topology-manager-scope) \"{0}\" must be one of: \"container\", or \"pod\""
    )]
    UnknownTopologyManagerScope(String),
    /// A Topology Manager policy option name that does not exist.
    #[error("unknown Topology Manager Policy option: \"{0}\"")]
    UnknownTopologyManagerOption(String),
    /// An alpha Topology Manager option without `TopologyManagerPolicyAlphaOptions`.
    #[error("Topology Manager Policy Alpha-level Options not enabled, but option \"{0}\" provided")]
    TopologyManagerAlphaOptionDisabled(String),
    /// A beta Topology Manager option with `TopologyManagerPolicyBetaOptions` turned off.
    #[error("Topology Manager Policy Beta-level Options not enabled, but option \"{0}\" provided")]
    TopologyManagerBetaOptionDisabled(String),
    /// `max-allowable-numa-nodes` below the kubelet's minimum of 8.
    #[error("the minimum value of \"max-allowable-numa-nodes\" should not be less than 8")]
    MaxAllowableNumaNodesTooSmall(u64),
    /// `memoryManagerPolicy` is neither `None` nor `Static`.
    #[error(
        "invalid configuration: memoryManagerPolicy (--memory-manager-policy) \"{0}\" must be one of: \"None\", or \"Static\""
    )]
    UnknownMemoryManagerPolicy(String),
    /// `reservedMemory` given with the `None` memory manager policy.
    #[error(
        "invalid configuration: reservedMemory (--reserved-memory) can only be set with the Static memory manager policy"
    )]
    ReservedMemoryWithNonePolicy,
    /// Two `reservedMemory` entries for the same NUMA node.
    #[error("invalid configuration: reservedMemory has the NUMA node {0} more than once")]
    DuplicateReservedMemoryNode(i64),
    /// A negative NUMA node id in `reservedMemory`.
    #[error("invalid configuration: reservedMemory numaNode {0} must not be negative")]
    NegativeReservedMemoryNode(i64),
}

/// Feature gates this crate knows, with their default values (Kubernetes 1.34 defaults).
pub const KNOWN_FEATURE_GATES: &[(&str, bool)] = &[
    ("CPUManagerPolicyAlphaOptions", false),
    ("CPUManagerPolicyBetaOptions", true),
    ("CPUManagerPolicyOptions", true),
    ("TopologyManagerPolicyAlphaOptions", false),
    ("TopologyManagerPolicyBetaOptions", true),
    ("TopologyManagerPolicyOptions", true),
    ("MemoryManager", true),
    ("PodLevelResources", true),
    ("PodLevelResourceManagers", false),
    ("SidecarContainers", true),
    ("DynamicResourceAllocation", true),
    ("InPlacePodVerticalScaling", true),
    ("KubeletPodResourcesGet", true),
    ("KubeletPodResourcesDynamicResources", true),
];

/// One `reservedMemory` entry: memory kept back from pods on one NUMA node.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemoryReservation {
    /// The NUMA node id.
    pub numa_node: i64,
    /// Resource name (`memory`, `hugepages-2Mi`, ...) to the amount reserved.
    #[serde(default)]
    pub limits: BTreeMap<String, Quantity>,
}

fn default_api_version() -> String {
    API_VERSION.to_string()
}
fn default_kind() -> String {
    KIND.to_string()
}
fn default_none() -> String {
    "none".to_string()
}
fn default_scope() -> String {
    "container".to_string()
}
fn default_memory_policy() -> String {
    "None".to_string()
}
fn default_reconcile() -> String {
    "10s".to_string()
}

/// The resource-manager part of `KubeletConfiguration`, as written in YAML or JSON.
///
/// Absent fields take upstream's defaults: `cpuManagerPolicy: none`, `topologyManagerPolicy: none`,
/// `topologyManagerScope: container`, `memoryManagerPolicy: None`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeletConfiguration {
    /// Always `kubelet.config.k8s.io/v1beta1`.
    #[serde(default = "default_api_version")]
    pub api_version: String,
    /// Always `KubeletConfiguration`.
    #[serde(default = "default_kind")]
    pub kind: String,
    /// `none` or `static`.
    #[serde(default = "default_none")]
    pub cpu_manager_policy: String,
    /// Static policy options by name; values are Go booleans.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub cpu_manager_policy_options: BTreeMap<String, String>,
    /// How often the CPU manager reconciles (a Go duration such as `10s`).
    #[serde(default = "default_reconcile")]
    pub cpu_manager_reconcile_period: String,
    /// An explicit CPU list for system daemons (Linux list format).
    #[serde(
        default,
        rename = "reservedSystemCPUs",
        skip_serializing_if = "String::is_empty"
    )]
    pub reserved_system_cpus: String,
    /// Resources reserved for Kubernetes daemons.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub kube_reserved: BTreeMap<String, Quantity>,
    /// Resources reserved for OS daemons.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub system_reserved: BTreeMap<String, Quantity>,
    /// `none`, `best-effort`, `restricted` or `single-numa-node`.
    #[serde(default = "default_none")]
    pub topology_manager_policy: String,
    /// `container` or `pod`.
    #[serde(default = "default_scope")]
    pub topology_manager_scope: String,
    /// Topology Manager policy options by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub topology_manager_policy_options: BTreeMap<String, String>,
    /// `None` or `Static`.
    #[serde(default = "default_memory_policy")]
    pub memory_manager_policy: String,
    /// Memory reserved per NUMA node (Static memory manager policy).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved_memory: Vec<MemoryReservation>,
    /// Feature gates by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub feature_gates: BTreeMap<String, bool>,
}

impl Default for KubeletConfiguration {
    fn default() -> Self {
        KubeletConfiguration {
            api_version: default_api_version(),
            kind: default_kind(),
            cpu_manager_policy: default_none(),
            cpu_manager_policy_options: BTreeMap::new(),
            cpu_manager_reconcile_period: default_reconcile(),
            reserved_system_cpus: String::new(),
            kube_reserved: BTreeMap::new(),
            system_reserved: BTreeMap::new(),
            topology_manager_policy: default_none(),
            topology_manager_scope: default_scope(),
            topology_manager_policy_options: BTreeMap::new(),
            memory_manager_policy: default_memory_policy(),
            reserved_memory: Vec::new(),
            feature_gates: BTreeMap::new(),
        }
    }
}

/// Resolved feature gates: every known gate with its effective value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FeatureGates {
    gates: BTreeMap<String, bool>,
}

impl FeatureGates {
    /// Resolves explicit settings over the defaults; unknown names are an error, as in the kubelet.
    pub fn resolve(explicit: &BTreeMap<String, bool>) -> Result<Self, ConfigError> {
        let mut gates: BTreeMap<String, bool> = KNOWN_FEATURE_GATES
            .iter()
            .map(|(name, default)| (name.to_string(), *default))
            .collect();
        for (name, value) in explicit {
            match gates.get_mut(name) {
                Some(slot) => *slot = *value,
                None => return Err(ConfigError::UnknownFeatureGate(name.clone())),
            }
        }
        Ok(FeatureGates { gates })
    }

    /// Whether a gate is on; unknown gates are off.
    pub fn enabled(&self, name: &str) -> bool {
        self.gates.get(name).copied().unwrap_or(false)
    }
}

impl Default for FeatureGates {
    fn default() -> Self {
        // The empty map has no unknown names, so resolution cannot fail.
        FeatureGates {
            gates: KNOWN_FEATURE_GATES
                .iter()
                .map(|(name, default)| (name.to_string(), *default))
                .collect(),
        }
    }
}

/// The CPU Manager policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CpuManagerPolicy {
    /// No exclusive CPUs; every container uses the whole machine.
    None,
    /// Exclusive CPUs for Guaranteed containers with integer CPU requests.
    Static,
}

impl CpuManagerPolicy {
    /// The name used in configuration and in the `cpu_manager_state` checkpoint.
    pub fn name(self) -> &'static str {
        match self {
            CpuManagerPolicy::None => "none",
            CpuManagerPolicy::Static => "static",
        }
    }
}

/// Parsed options of the static CPU Manager policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StaticPolicyOptions {
    /// `full-pcpus-only`: allocate whole physical cores only.
    pub full_physical_cpus_only: bool,
    /// `distribute-cpus-across-numa`: spread evenly over NUMA nodes when more than one is needed.
    pub distribute_cpus_across_numa: bool,
    /// `align-by-socket`: consider alignment at socket rather than NUMA-node boundaries.
    pub align_by_socket: bool,
    /// `distribute-cpus-across-cores`: prefer one thread per core.
    pub distribute_cpus_across_cores: bool,
    /// `strict-cpu-reservation`: keep reserved CPUs out of the shared pool too.
    pub strict_cpu_reservation: bool,
    /// `prefer-align-cpus-by-uncorecache`: best-effort alignment to uncore (L3) caches.
    pub prefer_align_by_uncore_cache: bool,
}

/// Option names of the static CPU Manager policy.
pub mod cpu_options {
    /// `full-pcpus-only` (stable).
    pub const FULL_PCPUS_ONLY: &str = "full-pcpus-only";
    /// `distribute-cpus-across-numa` (beta).
    pub const DISTRIBUTE_CPUS_ACROSS_NUMA: &str = "distribute-cpus-across-numa";
    /// `align-by-socket` (alpha).
    pub const ALIGN_BY_SOCKET: &str = "align-by-socket";
    /// `distribute-cpus-across-cores` (alpha).
    pub const DISTRIBUTE_CPUS_ACROSS_CORES: &str = "distribute-cpus-across-cores";
    /// `strict-cpu-reservation` (beta).
    pub const STRICT_CPU_RESERVATION: &str = "strict-cpu-reservation";
    /// `prefer-align-cpus-by-uncorecache` (beta).
    pub const PREFER_ALIGN_BY_UNCORE_CACHE: &str = "prefer-align-cpus-by-uncorecache";
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Maturity {
    Alpha,
    Beta,
    Stable,
}

fn cpu_option_maturity(name: &str) -> Option<Maturity> {
    use cpu_options::*;
    match name {
        ALIGN_BY_SOCKET | DISTRIBUTE_CPUS_ACROSS_CORES => Some(Maturity::Alpha),
        STRICT_CPU_RESERVATION | DISTRIBUTE_CPUS_ACROSS_NUMA | PREFER_ALIGN_BY_UNCORE_CACHE => {
            Some(Maturity::Beta)
        }
        FULL_PCPUS_ONLY => Some(Maturity::Stable),
        _ => None,
    }
}

/// Parses a boolean the way Go's `strconv.ParseBool` does.
pub fn parse_go_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        other => Err(format!(
            "strconv.ParseBool: parsing \"{other}\": invalid syntax"
        )),
    }
}

impl StaticPolicyOptions {
    /// Parses and checks the options as the kubelet's `NewStaticPolicyOptions` does.
    pub fn parse(
        options: &BTreeMap<String, String>,
        gates: &FeatureGates,
    ) -> Result<Self, ConfigError> {
        use cpu_options::*;
        let mut opts = StaticPolicyOptions::default();
        for (name, value) in options {
            match cpu_option_maturity(name) {
                None => return Err(ConfigError::UnknownCpuManagerOption(name.clone())),
                Some(Maturity::Alpha) if !gates.enabled("CPUManagerPolicyAlphaOptions") => {
                    return Err(ConfigError::CpuManagerAlphaOptionDisabled(name.clone()));
                }
                Some(Maturity::Beta) if !gates.enabled("CPUManagerPolicyBetaOptions") => {
                    return Err(ConfigError::CpuManagerBetaOptionDisabled(name.clone()));
                }
                Some(_) => {}
            }
            let parsed = parse_go_bool(value).map_err(|detail| ConfigError::BadOptionValue {
                option: name.clone(),
                detail,
            })?;
            let slot = match name.as_str() {
                FULL_PCPUS_ONLY => &mut opts.full_physical_cpus_only,
                DISTRIBUTE_CPUS_ACROSS_NUMA => &mut opts.distribute_cpus_across_numa,
                ALIGN_BY_SOCKET => &mut opts.align_by_socket,
                DISTRIBUTE_CPUS_ACROSS_CORES => &mut opts.distribute_cpus_across_cores,
                STRICT_CPU_RESERVATION => &mut opts.strict_cpu_reservation,
                _ => &mut opts.prefer_align_by_uncore_cache,
            };
            *slot = parsed;
        }
        let pairs = [
            (
                opts.full_physical_cpus_only && opts.distribute_cpus_across_cores,
                FULL_PCPUS_ONLY,
                DISTRIBUTE_CPUS_ACROSS_CORES,
            ),
            (
                opts.distribute_cpus_across_numa && opts.distribute_cpus_across_cores,
                DISTRIBUTE_CPUS_ACROSS_NUMA,
                DISTRIBUTE_CPUS_ACROSS_CORES,
            ),
            (
                opts.prefer_align_by_uncore_cache && opts.distribute_cpus_across_cores,
                PREFER_ALIGN_BY_UNCORE_CACHE,
                DISTRIBUTE_CPUS_ACROSS_CORES,
            ),
            (
                opts.prefer_align_by_uncore_cache && opts.distribute_cpus_across_numa,
                PREFER_ALIGN_BY_UNCORE_CACHE,
                DISTRIBUTE_CPUS_ACROSS_NUMA,
            ),
        ];
        for (conflict, a, b) in pairs {
            if conflict {
                return Err(ConfigError::IncompatibleCpuManagerOptions(a, b));
            }
        }
        Ok(opts)
    }
}

/// The Topology Manager policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum TopologyManagerPolicy {
    /// No alignment.
    None,
    /// Prefer aligned placements, admit anyway.
    BestEffort,
    /// Admit only preferred placements.
    Restricted,
    /// Admit only placements on one NUMA node.
    SingleNumaNode,
}

impl TopologyManagerPolicy {
    /// The policy name as written in configuration.
    pub fn name(self) -> &'static str {
        match self {
            TopologyManagerPolicy::None => "none",
            TopologyManagerPolicy::BestEffort => "best-effort",
            TopologyManagerPolicy::Restricted => "restricted",
            TopologyManagerPolicy::SingleNumaNode => "single-numa-node",
        }
    }
}

/// The Topology Manager scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TopologyManagerScope {
    /// One alignment per container.
    Container,
    /// One alignment for the whole pod.
    Pod,
}

/// Parsed Topology Manager policy options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopologyManagerOptions {
    /// `prefer-closest-numa-nodes`: among equally narrow hints prefer the one with the smallest
    /// average distance.
    pub prefer_closest_numa: bool,
    /// `max-allowable-numa-nodes`: the largest NUMA node count the Topology Manager accepts.
    pub max_allowable_numa_nodes: u64,
}

impl Default for TopologyManagerOptions {
    fn default() -> Self {
        TopologyManagerOptions {
            prefer_closest_numa: false,
            max_allowable_numa_nodes: 8,
        }
    }
}

impl TopologyManagerOptions {
    /// Parses and checks the options as the kubelet's `NewPolicyOptions` does.
    pub fn parse(
        options: &BTreeMap<String, String>,
        gates: &FeatureGates,
    ) -> Result<Self, ConfigError> {
        let mut opts = TopologyManagerOptions::default();
        for (name, value) in options {
            match name.as_str() {
                // Stable since 1.32: no gate needed.
                "prefer-closest-numa-nodes" => {
                    opts.prefer_closest_numa =
                        parse_go_bool(value).map_err(|detail| ConfigError::BadOptionValue {
                            option: name.clone(),
                            detail,
                        })?;
                }
                "max-allowable-numa-nodes" => {
                    if !gates.enabled("TopologyManagerPolicyBetaOptions") {
                        return Err(ConfigError::TopologyManagerBetaOptionDisabled(name.clone()));
                    }
                    let n: u64 = value.parse().map_err(|_| ConfigError::BadOptionValue {
                        option: name.clone(),
                        detail: format!("strconv.Atoi: parsing \"{value}\": invalid syntax"),
                    })?;
                    if n < 8 {
                        return Err(ConfigError::MaxAllowableNumaNodesTooSmall(n));
                    }
                    opts.max_allowable_numa_nodes = n;
                }
                _ => return Err(ConfigError::UnknownTopologyManagerOption(name.clone())),
            }
        }
        Ok(opts)
    }
}

/// The Memory Manager policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum MemoryManagerPolicy {
    /// No NUMA pinning of memory.
    None,
    /// NUMA-pinned memory for Guaranteed pods.
    Static,
}

impl MemoryManagerPolicy {
    /// The name used in configuration and in the `memory_manager_state` checkpoint.
    pub fn name(self) -> &'static str {
        match self {
            MemoryManagerPolicy::None => "None",
            MemoryManagerPolicy::Static => "Static",
        }
    }
}

/// Where the reserved CPUs come from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CpuReservation {
    /// `reservedSystemCPUs`: exactly these CPU ids.
    Explicit(BTreeSet<u32>),
    /// `kubeReserved.cpu + systemReserved.cpu`, rounded up to whole CPUs; the static policy picks
    /// them by topology.
    Count(u32),
}

impl CpuReservation {
    /// The number of CPUs reserved.
    pub fn count(&self) -> usize {
        match self {
            CpuReservation::Explicit(set) => set.len(),
            CpuReservation::Count(n) => *n as usize,
        }
    }
}

/// Which of the kubelet's start-up checks to relax.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ValidateOptions {
    /// Accept the static CPU policy with no CPU reserved. The kubelet refuses this (the shared
    /// pool could be emptied completely), but upstream's policy tests construct such policies.
    pub allow_zero_cpu_reservation: bool,
}

/// The checked, typed configuration the managers consume.
#[derive(Debug, Clone, PartialEq)]
pub struct ManagerConfig {
    /// Resolved feature gates.
    pub feature_gates: FeatureGates,
    /// The CPU Manager policy.
    pub cpu_manager_policy: CpuManagerPolicy,
    /// Static policy options (all off for `none`).
    pub cpu_manager_options: StaticPolicyOptions,
    /// Reserved CPUs.
    pub reserved_cpus: CpuReservation,
    /// The Topology Manager policy.
    pub topology_manager_policy: TopologyManagerPolicy,
    /// The Topology Manager scope.
    pub topology_manager_scope: TopologyManagerScope,
    /// Topology Manager options.
    pub topology_manager_options: TopologyManagerOptions,
    /// The Memory Manager policy.
    pub memory_manager_policy: MemoryManagerPolicy,
    /// Reserved memory per NUMA node: node -> resource -> amount.
    pub reserved_memory: BTreeMap<i64, BTreeMap<String, Quantity>>,
}

/// Parses a Linux CPU list (`0-3,8,10-11`; empty = no CPUs).
pub fn parse_cpu_list(text: &str) -> Option<BTreeSet<u32>> {
    let mut out = BTreeSet::new();
    let text = text.trim();
    if text.is_empty() {
        return Some(out);
    }
    for part in text.split(',') {
        let part = part.trim();
        match part.split_once('-') {
            Some((a, b)) => {
                let a: u32 = a.trim().parse().ok()?;
                let b: u32 = b.trim().parse().ok()?;
                if a > b {
                    return None;
                }
                out.extend(a..=b);
            }
            None => {
                out.insert(part.parse().ok()?);
            }
        }
    }
    Some(out)
}

impl KubeletConfiguration {
    /// The CPU milli-units reserved by `kubeReserved.cpu + systemReserved.cpu`.
    pub fn reserved_cpu_millis(&self) -> i64 {
        let mut total = 0i64;
        for map in [&self.kube_reserved, &self.system_reserved] {
            if let Some(q) = map.get("cpu") {
                total = total.saturating_add(q.milli_value());
            }
        }
        total
    }

    /// Checks the configuration as the kubelet does at start-up and returns the typed form.
    ///
    /// The checks follow `pkg/kubelet/apis/config/validation`, the CPU Manager's
    /// `NewStaticPolicyOptions` and `ValidateStaticPolicyOptions` (the hardware part of which needs
    /// the topology and is left to the CPU Manager), the Topology Manager's `NewPolicyOptions` and
    /// the kubelet's reservation rule for the static policy.
    pub fn validate(&self) -> Result<ManagerConfig, ConfigError> {
        self.validate_with(ValidateOptions::default())
    }

    /// [`KubeletConfiguration::validate`] with some of the kubelet's checks relaxed, for
    /// what-if runs and for upstream's policy-level test tables.
    pub fn validate_with(&self, relax: ValidateOptions) -> Result<ManagerConfig, ConfigError> {
        if self.api_version != API_VERSION || self.kind != KIND {
            return Err(ConfigError::WrongKind {
                api_version: self.api_version.clone(),
                kind: self.kind.clone(),
            });
        }
        let feature_gates = FeatureGates::resolve(&self.feature_gates)?;

        let topology_manager_policy = match self.topology_manager_policy.as_str() {
            "none" => TopologyManagerPolicy::None,
            "best-effort" => TopologyManagerPolicy::BestEffort,
            "restricted" => TopologyManagerPolicy::Restricted,
            "single-numa-node" => TopologyManagerPolicy::SingleNumaNode,
            other => return Err(ConfigError::UnknownTopologyManagerPolicy(other.to_string())),
        };
        let topology_manager_scope = match self.topology_manager_scope.as_str() {
            "container" => TopologyManagerScope::Container,
            "pod" => TopologyManagerScope::Pod,
            other => return Err(ConfigError::UnknownTopologyManagerScope(other.to_string())),
        };
        let topology_manager_options =
            TopologyManagerOptions::parse(&self.topology_manager_policy_options, &feature_gates)?;

        let reserved_cpus = if self.reserved_system_cpus.trim().is_empty() {
            let millis = self.reserved_cpu_millis().max(0);
            // Ceiling of millis / 1000, as the kubelet does with math.Ceil.
            let whole = (millis + 999) / 1000;
            CpuReservation::Count(u32::try_from(whole).unwrap_or(u32::MAX))
        } else {
            match parse_cpu_list(&self.reserved_system_cpus) {
                Some(set) => CpuReservation::Explicit(set),
                None => {
                    return Err(ConfigError::BadReservedSystemCpus(
                        self.reserved_system_cpus.clone(),
                    ));
                }
            }
        };

        let cpu_manager_policy = match self.cpu_manager_policy.as_str() {
            "none" => CpuManagerPolicy::None,
            "static" => CpuManagerPolicy::Static,
            other => return Err(ConfigError::UnknownCpuManagerPolicy(other.to_string())),
        };
        let cpu_manager_options = match cpu_manager_policy {
            CpuManagerPolicy::None => {
                if !self.cpu_manager_policy_options.is_empty() {
                    return Err(ConfigError::OptionsWithNonePolicy);
                }
                StaticPolicyOptions::default()
            }
            CpuManagerPolicy::Static => {
                let opts =
                    StaticPolicyOptions::parse(&self.cpu_manager_policy_options, &feature_gates)?;
                if opts.align_by_socket
                    && topology_manager_policy == TopologyManagerPolicy::SingleNumaNode
                {
                    return Err(ConfigError::AlignBySocketWithSingleNumaNode);
                }
                if reserved_cpus.count() == 0 && !relax.allow_zero_cpu_reservation {
                    return Err(ConfigError::StaticPolicyWithoutReservation);
                }
                opts
            }
        };

        let memory_manager_policy = match self.memory_manager_policy.as_str() {
            "None" => MemoryManagerPolicy::None,
            "Static" => MemoryManagerPolicy::Static,
            other => return Err(ConfigError::UnknownMemoryManagerPolicy(other.to_string())),
        };
        let mut reserved_memory: BTreeMap<i64, BTreeMap<String, Quantity>> = BTreeMap::new();
        for entry in &self.reserved_memory {
            if entry.numa_node < 0 {
                return Err(ConfigError::NegativeReservedMemoryNode(entry.numa_node));
            }
            if reserved_memory
                .insert(entry.numa_node, entry.limits.clone())
                .is_some()
            {
                return Err(ConfigError::DuplicateReservedMemoryNode(entry.numa_node));
            }
        }
        if memory_manager_policy == MemoryManagerPolicy::None && !reserved_memory.is_empty() {
            return Err(ConfigError::ReservedMemoryWithNonePolicy);
        }

        Ok(ManagerConfig {
            feature_gates,
            cpu_manager_policy,
            cpu_manager_options,
            reserved_cpus,
            topology_manager_policy,
            topology_manager_scope,
            topology_manager_options,
            memory_manager_policy,
            reserved_memory,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(yaml: &str) -> KubeletConfiguration {
        serde_saphyr::from_str(yaml).expect("valid yaml")
    }

    #[test]
    fn defaults_match_upstream() {
        let cfg = parse("apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n");
        let m = cfg.validate().expect("valid");
        assert_eq!(m.cpu_manager_policy, CpuManagerPolicy::None);
        assert_eq!(m.topology_manager_policy, TopologyManagerPolicy::None);
        assert_eq!(m.topology_manager_scope, TopologyManagerScope::Container);
        assert_eq!(m.memory_manager_policy, MemoryManagerPolicy::None);
        assert_eq!(m.topology_manager_options.max_allowable_numa_nodes, 8);
    }

    #[test]
    fn unknown_fields_are_rejected() {
        let r: Result<KubeletConfiguration, _> =
            serde_saphyr::from_str("kind: KubeletConfiguration\ncpuManagerPolicyy: static\n");
        assert!(r.is_err());
    }

    #[test]
    fn static_policy_needs_a_reservation() {
        let cfg = parse("cpuManagerPolicy: static\n");
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::StaticPolicyWithoutReservation
        );
        let relaxed = ValidateOptions {
            allow_zero_cpu_reservation: true,
        };
        assert_eq!(
            cfg.validate_with(relaxed).expect("relaxed").reserved_cpus,
            CpuReservation::Count(0)
        );
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: 500m}\nsystemReserved: {cpu: 600m}\n",
        );
        assert_eq!(
            cfg.validate().expect("valid").reserved_cpus,
            CpuReservation::Count(2)
        );
        let cfg = parse("cpuManagerPolicy: static\nreservedSystemCPUs: \"0,2-3\"\n");
        assert_eq!(
            cfg.validate().expect("valid").reserved_cpus,
            CpuReservation::Explicit([0, 2, 3].into_iter().collect())
        );
    }

    #[test]
    fn option_gates() {
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n",
        );
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::CpuManagerAlphaOptionDisabled("align-by-socket".into())
        );
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {strict-cpu-reservation: \"true\"}\nfeatureGates: {CPUManagerPolicyBetaOptions: false}\n",
        );
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::CpuManagerBetaOptionDisabled("strict-cpu-reservation".into())
        );
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {full-pcpus-only: \"yes\"}\n",
        );
        assert!(matches!(
            cfg.validate().unwrap_err(),
            ConfigError::BadOptionValue { .. }
        ));
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ncpuManagerPolicyOptions: {bogus: \"true\"}\n",
        );
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::UnknownCpuManagerOption("bogus".into())
        );
    }

    #[test]
    fn incompatible_options() {
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\nfeatureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {full-pcpus-only: \"true\", distribute-cpus-across-cores: \"true\"}\n",
        );
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::IncompatibleCpuManagerOptions(
                "full-pcpus-only",
                "distribute-cpus-across-cores"
            )
        );
        let cfg = parse(
            "cpuManagerPolicy: static\nkubeReserved: {cpu: \"1\"}\ntopologyManagerPolicy: single-numa-node\nfeatureGates: {CPUManagerPolicyAlphaOptions: true}\ncpuManagerPolicyOptions: {align-by-socket: \"true\"}\n",
        );
        assert_eq!(
            cfg.validate().unwrap_err(),
            ConfigError::AlignBySocketWithSingleNumaNode
        );
    }

    #[test]
    fn topology_manager_checks() {
        assert!(matches!(
            parse("topologyManagerPolicy: strict\n").validate(),
            Err(ConfigError::UnknownTopologyManagerPolicy(_))
        ));
        assert!(matches!(
            parse("topologyManagerScope: node\n").validate(),
            Err(ConfigError::UnknownTopologyManagerScope(_))
        ));
        assert_eq!(
            parse("topologyManagerPolicyOptions: {max-allowable-numa-nodes: \"4\"}\n")
                .validate()
                .unwrap_err(),
            ConfigError::MaxAllowableNumaNodesTooSmall(4)
        );
        let m = parse("topologyManagerPolicyOptions: {max-allowable-numa-nodes: \"16\", prefer-closest-numa-nodes: \"true\"}\n")
            .validate()
            .expect("valid");
        assert_eq!(m.topology_manager_options.max_allowable_numa_nodes, 16);
        assert!(m.topology_manager_options.prefer_closest_numa);
    }

    #[test]
    fn memory_manager_checks() {
        assert!(matches!(
            parse("memoryManagerPolicy: static\n").validate(),
            Err(ConfigError::UnknownMemoryManagerPolicy(_))
        ));
        assert_eq!(
            parse("reservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}]\n")
                .validate()
                .unwrap_err(),
            ConfigError::ReservedMemoryWithNonePolicy
        );
        assert_eq!(
            parse("memoryManagerPolicy: Static\nreservedMemory: [{numaNode: 0, limits: {memory: 1Gi}}, {numaNode: 0, limits: {}}]\n")
                .validate()
                .unwrap_err(),
            ConfigError::DuplicateReservedMemoryNode(0)
        );
    }

    #[test]
    fn unknown_feature_gate() {
        assert_eq!(
            parse("featureGates: {NoSuchGate: true}\n")
                .validate()
                .unwrap_err(),
            ConfigError::UnknownFeatureGate("NoSuchGate".into())
        );
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list(""), Some(BTreeSet::new()));
        assert_eq!(
            parse_cpu_list("0-2,7"),
            Some([0, 1, 2, 7].into_iter().collect())
        );
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("a"), None);
    }
}
