//! `core/v1`: the subset of Node, Pod and Namespace this domain uses, plus node selectors,
//! taints and tolerations.

use crate::strenum::string_enum;
use serde::{Deserialize, Serialize};

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
    pub time_added: Option<crate::meta::v1::Time>,
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
