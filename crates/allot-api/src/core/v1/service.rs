//! core/v1 Service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::intstr::IntOrString;
use crate::meta::v1::{Condition, ObjectMeta};
use crate::strenum::string_enum;

string_enum! {
    /// How a Service is exposed.
    pub enum ServiceType {
        /// `ClusterIP`.
        ClusterIP = "ClusterIP",
        /// `NodePort`.
        NodePort = "NodePort",
        /// `LoadBalancer`.
        LoadBalancer = "LoadBalancer",
        /// `ExternalName`.
        ExternalName = "ExternalName",
    }
}

string_enum! {
    /// Session affinity of a Service.
    pub enum ServiceAffinity {
        /// `ClientIP`.
        ClientIP = "ClientIP",
        /// `None`.
        None = "None",
    }
}

string_enum! {
    /// How a Service routes traffic from outside the cluster.
    pub enum ServiceExternalTrafficPolicy {
        /// `Cluster`.
        Cluster = "Cluster",
        /// `Local`.
        Local = "Local",
    }
}

string_enum! {
    /// An IP family.
    pub enum IPFamily {
        /// `IPv4`.
        IPv4 = "IPv4",
        /// `IPv6`.
        IPv6 = "IPv6",
    }
}

string_enum! {
    /// Which IP families a Service gets.
    pub enum IPFamilyPolicy {
        /// `SingleStack`.
        SingleStack = "SingleStack",
        /// `PreferDualStack`.
        PreferDualStack = "PreferDualStack",
        /// `RequireDualStack`.
        RequireDualStack = "RequireDualStack",
    }
}

string_enum! {
    /// How a Service routes traffic from inside the cluster.
    pub enum ServiceInternalTrafficPolicy {
        /// `Cluster`.
        Cluster = "Cluster",
        /// `Local`.
        Local = "Local",
    }
}

string_enum! {
    /// A network protocol (of Service and container ports).
    pub enum Protocol {
        /// `SCTP`.
        Sctp = "SCTP",
        /// `TCP` (the default).
        Tcp = "TCP",
        /// `UDP`.
        Udp = "UDP",
    }
}

/// A named set of pods behind one network address.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Service {
    /// The API version.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// The kind.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Object metadata.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub spec: ServiceSpec,
    /// The observed state, written by controllers.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub status: ServiceStatus,
}

/// The desired state of a Service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceSpec {
    /// Ports.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ports: Vec<ServicePort>,
    /// The label selector of the pods.
    #[serde(
        default,
        skip_serializing_if = "BTreeMap::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub selector: BTreeMap<String, String>,
    /// Cluster IP.
    #[serde(
        default,
        rename = "clusterIP",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub cluster_ip: String,
    /// Cluster IPs.
    #[serde(
        default,
        rename = "clusterIPs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub cluster_ips: Vec<String>,
    /// The type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<ServiceType>,
    /// External IPs.
    #[serde(
        default,
        rename = "externalIPs",
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub external_ips: Vec<String>,
    /// Session affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity: Option<ServiceAffinity>,
    /// Load balancer IP.
    #[serde(
        default,
        rename = "loadBalancerIP",
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub load_balancer_ip: String,
    /// Load balancer source ranges.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub load_balancer_source_ranges: Vec<String>,
    /// External name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub external_name: String,
    /// External traffic policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<ServiceExternalTrafficPolicy>,
    /// Health check node port.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub health_check_node_port: i32,
    /// Publish not ready addresses.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub publish_not_ready_addresses: bool,
    /// Session affinity config.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    /// IP families.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ip_families: Vec<IPFamily>,
    /// IP family policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family_policy: Option<IPFamilyPolicy>,
    /// Allocate load balancer node ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocate_load_balancer_node_ports: Option<bool>,
    /// Load balancer class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_class: Option<String>,
    /// Internal traffic policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_traffic_policy: Option<ServiceInternalTrafficPolicy>,
    /// Traffic distribution.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_distribution: Option<String>,
}

/// The observed state of a Service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceStatus {
    /// Load balancer.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub load_balancer: LoadBalancerStatus,
    /// The latest observations of the object's state.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub conditions: Vec<Condition>,
}

/// One port of a Service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServicePort {
    /// Name.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub name: String,
    /// Protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// App protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
    /// Port.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub port: i32,
    /// Target port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// Node port.
    #[serde(
        default,
        skip_serializing_if = "crate::serde_util::is_default",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub node_port: i32,
}

/// Session affinity settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionAffinityConfig {
    /// Client IP.
    #[serde(default, rename = "clientIP", skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<ClientIPConfig>,
}

/// The load balancer of a Service.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadBalancerStatus {
    /// Ingress.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ingress: Vec<LoadBalancerIngress>,
}

/// Client IP session affinity settings.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClientIPConfig {
    /// Timeout seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
}

/// One ingress point of a load balancer.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoadBalancerIngress {
    /// IP.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ip: String,
    /// Hostname.
    #[serde(
        default,
        skip_serializing_if = "String::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub hostname: String,
    /// IP mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_mode: Option<String>,
    /// Ports.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub ports: Vec<PortStatus>,
}

/// The state of one load balancer port.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortStatus {
    /// Port.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub port: i32,
    /// Protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<Protocol>,
    /// Error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}
