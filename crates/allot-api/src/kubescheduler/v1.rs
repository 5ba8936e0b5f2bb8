//! `kubescheduler.config.k8s.io/v1`: KubeSchedulerConfiguration, as far as this domain reads it
//! (profiles and their plugin arguments, notably `DynamicResourcesArgs`). Other top-level
//! sections are accepted as opaque JSON so real configuration files load.

use serde::{Deserialize, Serialize};

use crate::core::v1::Opaque;

/// The API version of this module's kinds.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// The kube-scheduler's configuration file.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerConfiguration {
    /// `kubescheduler.config.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `KubeSchedulerConfiguration`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Scheduling profiles.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub profiles: Vec<KubeSchedulerProfile>,
    /// Opaque: parallelism.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallelism: Option<Opaque>,
    /// Opaque: leader election.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub leader_election: Option<Opaque>,
    /// Opaque: client connection.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_connection: Option<Opaque>,
    /// Opaque: debugging configuration (`enableProfiling`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_profiling: Option<Opaque>,
    /// Opaque: contention profiling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_contention_profiling: Option<Opaque>,
    /// Opaque: percentage of nodes to score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<Opaque>,
    /// Opaque: initial pod backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_initial_backoff_seconds: Option<Opaque>,
    /// Opaque: maximum pod backoff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_max_backoff_seconds: Option<Opaque>,
    /// Opaque: extenders.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extenders: Option<Opaque>,
    /// Opaque: delay cache until active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_cache_until_active: Option<Opaque>,
}

/// One scheduling profile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeSchedulerProfile {
    /// The scheduler name pods select the profile with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    /// Opaque: percentage of nodes to score.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<Opaque>,
    /// Opaque: enabled and disabled plugins per extension point.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plugins: Option<Opaque>,
    /// Plugin arguments.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "crate::serde_util::nullable"
    )]
    pub plugin_config: Vec<PluginConfig>,
}

/// Arguments of one plugin; `DynamicResources` arguments are typed, others opaque.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PluginConfig {
    /// The plugin's name.
    #[serde(default, deserialize_with = "crate::serde_util::nullable")]
    pub name: String,
    /// The arguments (an object with its own apiVersion and kind).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Opaque>,
}

/// Arguments of the DynamicResources plugin.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DynamicResourcesArgs {
    /// `kubescheduler.config.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    /// `DynamicResourcesArgs`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub kind: String,
    /// Time limit for the Filter operation per node (a duration, e.g. `10s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter_timeout: Option<String>,
    /// How long to wait for binding conditions (a duration, default `600s`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding_timeout: Option<String>,
}
