//! `core/v1`: the subset of Node, Pod and Namespace this domain uses, plus node selectors,
//! taints and tolerations.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Quantity;
use crate::meta::v1::{LabelSelector, ObjectMeta, Time};
use crate::strenum::string_enum;

mod config;
mod service;
mod volume;
mod workload;
pub use config::*;
pub use service::*;
pub use volume::*;
pub use workload::*;

string_enum! {
    /// The operator of a [`NodeSelectorRequirement`].
    pub enum NodeSelectorOperator {
        /// The value is one of `values`.
        In = "In",
        /// The value is none of `values`.
        NotIn = "NotIn",
        /// The key exists.
        Exists = "Exists",
        /// The key does not exist.
        DoesNotExist = "DoesNotExist",
        /// The value, as an integer, is greater than the single entry of `values`.
        Gt = "Gt",
        /// The value, as an integer, is less than the single entry of `values`.
        Lt = "Lt",
    }
}

/// A node selector: the union (OR) of its terms.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelector {
    /// The terms; a node matches if any term matches.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// A node selector term: the intersection (AND) of its requirements.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on node fields (only `metadata.name`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// One requirement of a [`NodeSelectorTerm`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSelectorRequirement {
    /// The label key (or field name).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
    /// The operator.
    pub operator: NodeSelectorOperator,
    /// The values; empty for `Exists` and `DoesNotExist`, one entry for `Gt` and `Lt`.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub values: Vec<String>,
}

string_enum! {
    /// The effect of a node taint.
    pub enum TaintEffect {
        /// Do not schedule new pods.
        NoSchedule = "NoSchedule",
        /// Prefer not to schedule new pods.
        PreferNoSchedule = "PreferNoSchedule",
        /// Evict running pods that do not tolerate the taint.
        NoExecute = "NoExecute",
    }
}

/// A node taint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Taint {
    /// The taint key.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub key: String,
    /// The taint value.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub value: String,
    /// The effect.
    pub effect: TaintEffect,
    /// When the taint was added (NoExecute only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_added: Option<Time>,
}

string_enum! {
    /// The operator of a pod [`Toleration`].
    pub enum TolerationOperator {
        /// The key exists (any value).
        Exists = "Exists",
        /// The value equals.
        Equal = "Equal",
        /// The value, as an integer, is less than the taint's.
        Lt = "Lt",
        /// The value, as an integer, is greater than the taint's.
        Gt = "Gt",
    }
}

/// A pod toleration.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Toleration {
    /// The taint key; empty means every key (with operator `Exists`).
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub key: String,
    /// The operator; the API server defaults nothing here, empty means `Equal`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator: Option<TolerationOperator>,
    /// The value to match.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub value: String,
    /// The effect to match; empty means every effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub effect: Option<TaintEffect>,
    /// How long a NoExecute taint is tolerated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// Resource amounts by resource name (`cpu`, `memory`, `example.com/gpu`, ...).
pub type ResourceList = BTreeMap<String, Quantity>;

/// Opaque JSON for fields this domain accepts but does not interpret.
pub type Opaque = serde_json::Value;

/// A node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Node {
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Node`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata (labels are what node selectors match).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The node's spec.
    #[serde(default)]
    pub spec: NodeSpec,
    /// The node's status.
    #[serde(default)]
    pub status: NodeStatus,
}

/// The spec of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeSpec {
    /// The pod CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<String>,
    /// The pod CIDRs.
    #[serde(
        default,
        rename = "podCIDRs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub pod_cidrs: Vec<String>,
    /// The provider's id of the node.
    #[serde(
        default,
        rename = "providerID",
        skip_serializing_if = "Option::is_none"
    )]
    pub provider_id: Option<String>,
    /// Whether new pods may not be scheduled here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<bool>,
    /// The node's taints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub taints: Vec<Taint>,
    /// Deprecated dynamic kubelet config source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_source: Option<Opaque>,
    /// Deprecated external id.
    #[serde(
        default,
        rename = "externalID",
        skip_serializing_if = "Option::is_none"
    )]
    pub external_id: Option<String>,
}

/// The status of a node.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeStatus {
    /// Total resources of the node.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub capacity: ResourceList,
    /// Resources available for pods.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub allocatable: ResourceList,
    /// Deprecated node phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Node conditions (kept opaque).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Opaque>,
    /// Node addresses (kept opaque).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub addresses: Vec<Opaque>,
    /// Kubelet endpoints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daemon_endpoints: Option<Opaque>,
    /// Node system information.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_info: Option<Opaque>,
    /// Images on the node (ImageLocality reads their names and sizes).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub images: Vec<ContainerImage>,
    /// Volumes in use.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volumes_in_use: Vec<String>,
    /// Volumes attached.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub volumes_attached: Vec<Opaque>,
    /// Dynamic config status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<Opaque>,
    /// Available runtime handlers.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub runtime_handlers: Vec<Opaque>,
    /// Features implemented by the CRI.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub features: Option<Opaque>,
    /// Features the node declares (e.g. `DRAOptionalNodeOperations`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub declared_features: Vec<String>,
}

/// An image present on a node.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerImage {
    /// The names the image is known by (`registry.k8s.io/pause:3.10`, digests).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub names: Vec<String>,
    /// The image's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<i64>,
}

/// A namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Namespace {
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Namespace`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata (the admin-access label lives here).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The namespace's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<NamespaceSpec>,
    /// The namespace's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<NamespaceStatus>,
}

/// The spec of a namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceSpec {
    /// Finalizers.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub finalizers: Vec<String>,
}

/// The status of a namespace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NamespaceStatus {
    /// `Active` or `Terminating`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Conditions (kept opaque).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Opaque>,
}

/// A pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pod {
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Pod`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The pod's spec.
    #[serde(default)]
    pub spec: PodSpec,
    /// The pod's status.
    #[serde(default)]
    pub status: PodStatus,
}

/// The spec of a pod. Fields this domain does not interpret are kept as opaque JSON, so that
/// real pod manifests load while misspelt fields are still rejected.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSpec {
    /// Init containers; those with `restartPolicy: Always` are sidecars.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub init_containers: Vec<Container>,
    /// The containers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub containers: Vec<Container>,
    /// Ephemeral debug containers (kept opaque).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ephemeral_containers: Vec<Opaque>,
    /// Pod-level resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// The pod's claims.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_claims: Vec<PodResourceClaim>,
    /// The node the pod is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// Node labels the pod requires.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub node_selector: BTreeMap<String, String>,
    /// Affinity rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tolerations of node taints.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub tolerations: Vec<Toleration>,
    /// The PodGroup this pod belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduling_group: Option<PodSchedulingGroup>,
    /// The Workload and PodGroup this pod belongs to (earlier API shape).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload_ref: Option<WorkloadReference>,
    /// Per-pod overhead.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub overhead: ResourceList,
    /// Pod priority.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// Priority class name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    /// Restart policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// Scheduler name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// Scheduling gates: while any is present the scheduler does not try the pod.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub scheduling_gates: Vec<PodSchedulingGate>,
    /// Runtime class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime_class_name: Option<String>,
    /// Opaque: volumes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volumes: Option<Opaque>,
    /// Opaque: termination grace period.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<Opaque>,
    /// Opaque: active deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<Opaque>,
    /// Opaque: DNS policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_policy: Option<Opaque>,
    /// Opaque: service account name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account_name: Option<Opaque>,
    /// Opaque: deprecated service account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_account: Option<Opaque>,
    /// Opaque: token automount.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub automount_service_account_token: Option<Opaque>,
    /// Opaque: host network.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<Opaque>,
    /// Opaque: host PID namespace.
    #[serde(default, rename = "hostPID", skip_serializing_if = "Option::is_none")]
    pub host_pid: Option<Opaque>,
    /// Opaque: host IPC namespace.
    #[serde(default, rename = "hostIPC", skip_serializing_if = "Option::is_none")]
    pub host_ipc: Option<Opaque>,
    /// Opaque: shared process namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub share_process_namespace: Option<Opaque>,
    /// Opaque: pod security context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<Opaque>,
    /// Opaque: image pull secrets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_secrets: Option<Opaque>,
    /// Opaque: hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<Opaque>,
    /// Opaque: hostname override.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname_override: Option<Opaque>,
    /// Opaque: subdomain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<Opaque>,
    /// Opaque: host aliases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_aliases: Option<Opaque>,
    /// Opaque: DNS config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_config: Option<Opaque>,
    /// Opaque: readiness gates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_gates: Option<Opaque>,
    /// Opaque: service links.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_service_links: Option<Opaque>,
    /// Whether the pod may preempt lower-priority pods (`PreemptLowerPriority`, the default
    /// of its priority class, or `Never`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<PreemptionPolicy>,
    /// How the pod's group spreads across topology domains.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Opaque: hostname as FQDN.
    #[serde(
        default,
        rename = "setHostnameAsFQDN",
        skip_serializing_if = "Option::is_none"
    )]
    pub set_hostname_as_fqdn: Option<Opaque>,
    /// Opaque: OS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub os: Option<Opaque>,
    /// Opaque: user namespaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_users: Option<Opaque>,
}

/// A container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Container {
    /// The container's name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Resource requests, limits and claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// For init containers: `Always` makes a sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// The container image (ImageLocality compares it with the nodes' images).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Opaque: command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Opaque>,
    /// Opaque: arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Opaque>,
    /// Opaque: working directory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<Opaque>,
    /// Ports the container exposes; those with a `hostPort` take it on the node (NodePorts).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ports: Vec<ContainerPort>,
    /// Opaque: environment sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Opaque>,
    /// Opaque: environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Opaque>,
    /// Opaque: resize policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resize_policy: Option<Opaque>,
    /// Opaque: restart policy rules.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy_rules: Option<Opaque>,
    /// Opaque: volume mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Opaque>,
    /// Opaque: volume devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_devices: Option<Opaque>,
    /// Opaque: liveness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub liveness_probe: Option<Opaque>,
    /// Opaque: readiness probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub readiness_probe: Option<Opaque>,
    /// Opaque: startup probe.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub startup_probe: Option<Opaque>,
    /// Opaque: lifecycle hooks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lifecycle: Option<Opaque>,
    /// Opaque: termination message path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_message_path: Option<Opaque>,
    /// Opaque: termination message policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_message_policy: Option<Opaque>,
    /// Opaque: image pull policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<Opaque>,
    /// Opaque: security context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<Opaque>,
    /// Opaque: stdin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin: Option<Opaque>,
    /// Opaque: stdin once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stdin_once: Option<Opaque>,
    /// Opaque: TTY.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tty: Option<Opaque>,
}

/// A network port of a container.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ContainerPort {
    /// An IANA_SVC_NAME unique in the pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The port on the node (0 or absent: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i32>,
    /// The port in the pod's network namespace.
    #[serde(default)]
    pub container_port: i32,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// The host IP to bind the host port to (absent: every address, `0.0.0.0`).
    #[serde(default, rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
}

/// A gate that keeps a pod from being scheduled while present.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSchedulingGate {
    /// The gate's name (a qualified name).
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
}

string_enum! {
    /// What the scheduler does with a pod that cannot satisfy a spread constraint.
    pub enum UnsatisfiableConstraintAction {
        /// Do not schedule it (a filter).
        DoNotSchedule = "DoNotSchedule",
        /// Schedule it anyway, preferring nodes with less skew (a score).
        ScheduleAnyway = "ScheduleAnyway",
    }
}

string_enum! {
    /// Whether a spread constraint's node inclusion honours the pod's node affinity or taints.
    pub enum NodeInclusionPolicy {
        /// Count only nodes the pod could be placed on by this criterion.
        Honor = "Honor",
        /// Count every node.
        Ignore = "Ignore",
    }
}

/// How a group of pods spreads among topology domains.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopologySpreadConstraint {
    /// The largest allowed difference of matching pods between two domains (at least 1).
    #[serde(default)]
    pub max_skew: i32,
    /// The node label whose values are the domains.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub topology_key: String,
    /// `DoNotSchedule` or `ScheduleAnyway`.
    #[serde(default = "default_unsatisfiable")]
    pub when_unsatisfiable: UnsatisfiableConstraintAction,
    /// The pods counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The fewest eligible domains; with fewer, the global minimum is taken as 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// `Honor` (default) or `Ignore` the pod's node affinity when counting nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// `Honor` or `Ignore` (default) node taints when counting nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<NodeInclusionPolicy>,
    /// Pod label keys whose values (from the incoming pod) narrow the selector.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_label_keys: Vec<String>,
}

/// An absent `whenUnsatisfiable` decodes as the empty value, which validation rejects as
/// upstream does (the field is required).
fn default_unsatisfiable() -> UnsatisfiableConstraintAction {
    UnsatisfiableConstraintAction::Other(String::new())
}

// `string_enum!` declares the enum, so `#[derive(Default)]` cannot mark a variant.
#[allow(clippy::derivable_impls)]
impl Default for UnsatisfiableConstraintAction {
    fn default() -> Self {
        UnsatisfiableConstraintAction::DoNotSchedule
    }
}

/// Compute resources of a container or pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceRequirements {
    /// Limits.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub limits: ResourceList,
    /// Requests.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub requests: ResourceList,
    /// Claims (entries of `spec.resourceClaims`) this container uses.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub claims: Vec<ResourceClaim>,
}

/// A container's reference to one of the pod's claims.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ResourceClaim {
    /// The name of an entry in `spec.resourceClaims`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// Only this request of the claim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request: Option<String>,
}

/// A pod's reference to a ResourceClaim or ResourceClaimTemplate.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodResourceClaim {
    /// The name, unique in the pod.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// A ResourceClaim in the pod's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A ResourceClaimTemplate in the pod's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// The PodGroup a pod belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSchedulingGroup {
    /// The PodGroup's name, in the pod's namespace.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pod_group_name: String,
}

/// A reference to a Workload's pod group (earlier API shape).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadReference {
    /// The Workload's name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The pod group within the Workload.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub pod_group: String,
    /// The replica key of the pod group.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_group_replica_key: Option<String>,
}

/// Affinity rules of a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Affinity {
    /// Node affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Co-location with other pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Separation from other pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAntiAffinity>,
}

/// Pod affinity: the pod wants to run in the same topology domain as certain pods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAffinity {
    /// Hard requirements: every term must hold.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Soft preferences, weighted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// Pod anti-affinity: the pod wants to stay out of topology domains running certain pods.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAntiAffinity {
    /// Hard requirements: every term must hold.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub required_during_scheduling_ignored_during_execution: Vec<PodAffinityTerm>,
    /// Soft preferences, weighted.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub preferred_during_scheduling_ignored_during_execution: Vec<WeightedPodAffinityTerm>,
}

/// A set of pods (selector and namespaces) and the topology key whose domains they define.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodAffinityTerm {
    /// The pods; absent matches none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces of the pods; with no namespace selector either, the pod's own namespace.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub namespaces: Vec<String>,
    /// The node label whose values are the domains.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub topology_key: String,
    /// Namespaces by label; an empty selector matches every namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Pod label keys whose values (from this pod) must match too (`key in (value)`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub match_label_keys: Vec<String>,
    /// Pod label keys whose values (from this pod) must not match (`key notin (value)`).
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub mismatch_label_keys: Vec<String>,
}

/// A pod affinity term with a weight (1..=100) added to matching nodes' scores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WeightedPodAffinityTerm {
    /// Weight 1..=100.
    #[serde(default)]
    pub weight: i32,
    /// The term.
    #[serde(default)]
    pub pod_affinity_term: PodAffinityTerm,
}

/// Node affinity of a pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodeAffinity {
    /// Hard requirement.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_during_scheduling_ignored_during_execution: Option<NodeSelector>,
    /// Soft preferences.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub preferred_during_scheduling_ignored_during_execution: Vec<PreferredSchedulingTerm>,
}

/// A weighted node preference.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreferredSchedulingTerm {
    /// Weight 1..=100.
    #[serde(default)]
    pub weight: i32,
    /// The preferred term.
    #[serde(default)]
    pub preference: NodeSelectorTerm,
}

/// The status of a pod.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Pod conditions.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<PodCondition>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A brief reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The node nominated by preemption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nominated_node_name: Option<String>,
    /// The QoS class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<String>,
    /// Names of the claims generated for the pod.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub resource_claim_statuses: Vec<PodResourceClaimStatus>,
    /// Opaque: the claim generated for extended resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_resource_claim_status: Option<Opaque>,
    /// Opaque: node-allocatable resources allocated through claims.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_allocatable_resource_claim_statuses: Option<Opaque>,
    /// Opaque: host IP.
    #[serde(default, rename = "hostIP", skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<Opaque>,
    /// Opaque: host IPs.
    #[serde(default, rename = "hostIPs", skip_serializing_if = "Option::is_none")]
    pub host_ips: Option<Opaque>,
    /// Opaque: pod IP.
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<Opaque>,
    /// Opaque: pod IPs.
    #[serde(default, rename = "podIPs", skip_serializing_if = "Option::is_none")]
    pub pod_ips: Option<Opaque>,
    /// Opaque: start time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Opaque>,
    /// Opaque: init container statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container_statuses: Option<Opaque>,
    /// Opaque: container statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Opaque>,
    /// Opaque: ephemeral container statuses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ephemeral_container_statuses: Option<Opaque>,
    /// Opaque: resize status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resize: Option<Opaque>,
    /// Opaque: observed generation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<Opaque>,
    /// Opaque: allocated resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocated_resources: Option<Opaque>,
    /// Opaque: resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Opaque>,
}

/// A pod condition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodCondition {
    /// The condition type.
    #[serde(
        default,
        rename = "type",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: String,
    /// The generation observed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Last probe time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<Time>,
    /// Last transition time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<Time>,
    /// Reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// The claim generated for one of the pod's claim entries.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodResourceClaimStatus {
    /// The entry of `spec.resourceClaims`.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The generated claim; absent when none was needed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

/// A reference to an object, as events name the object they are about.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectReference {
    /// The referent's kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The referent's namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// The referent's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The referent's uid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The referent's API version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The referent's resourceVersion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// A field within the referent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field_path: Option<String>,
}

/// The component that reported an event.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventSource {
    /// The component (`default-scheduler`, `kubelet`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub component: Option<String>,
    /// The node name, for node components.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
}

/// A series of repeated events.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EventSeries {
    /// How many times it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// When it was last seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_observed_time: Option<Time>,
}

/// A core/v1 Event: something that happened to an object (what `kubectl describe` lists).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Event {
    /// `v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `Event`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object the event is about.
    #[serde(default)]
    pub involved_object: ObjectReference,
    /// A short, machine-readable reason (`FailedScheduling`, `Scheduled`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Who reported it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<EventSource>,
    /// When it was first recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_timestamp: Option<Time>,
    /// When it was last recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_timestamp: Option<Time>,
    /// How many times it happened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// `Normal` or `Warning`.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "type")]
    pub type_: Option<String>,
    /// When it was first observed (microsecond time).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_time: Option<Time>,
    /// A series of repeats.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<EventSeries>,
    /// What was done (or failed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// A second object involved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub related: Option<ObjectReference>,
    /// The controller that emitted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_component: Option<String>,
    /// The controller instance that emitted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reporting_instance: Option<String>,
}
