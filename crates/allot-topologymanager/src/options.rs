//! Policies, scopes and policy options, parsed as the kubelet parses its configuration.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::Error;

/// The option name that orders equally wide hints by average NUMA distance.
pub const PREFER_CLOSEST_NUMA_NODES: &str = "prefer-closest-numa-nodes";
/// The option name that raises the NUMA node count the Topology Manager accepts.
pub const MAX_ALLOWABLE_NUMA_NODES: &str = "max-allowable-numa-nodes";
/// The NUMA node count accepted without `max-allowable-numa-nodes`, and its minimum value.
pub const DEFAULT_MAX_ALLOWABLE_NUMA_NODES: usize = 8;

/// A Topology Manager policy (`topologyManagerPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Policy {
    /// No alignment: admits everything, records no affinity.
    #[serde(rename = "none")]
    None,
    /// Merges hints and admits whatever the result.
    #[serde(rename = "best-effort")]
    BestEffort,
    /// Admits only when the merged hint is preferred.
    #[serde(rename = "restricted")]
    Restricted,
    /// Admits only a preferred result on a single NUMA node (or no NUMA preference at all).
    #[serde(rename = "single-numa-node")]
    SingleNumaNode,
}

impl Policy {
    /// The name used in the kubelet configuration.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::BestEffort => "best-effort",
            Policy::Restricted => "restricted",
            Policy::SingleNumaNode => "single-numa-node",
        }
    }

    /// Whether an admitted pod is guaranteed to be NUMA aligned (upstream `IsAlignmentGuaranteed`).
    pub fn is_alignment_guaranteed(self) -> bool {
        matches!(self, Policy::SingleNumaNode)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "none" => Ok(Policy::None),
            "best-effort" => Ok(Policy::BestEffort),
            "restricted" => Ok(Policy::Restricted),
            "single-numa-node" => Ok(Policy::SingleNumaNode),
            other => Err(Error::UnknownPolicy {
                name: other.to_string(),
            }),
        }
    }
}

/// Where hints are gathered and merged (`topologyManagerScope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Scope {
    /// One merge per container, in init-then-app order.
    #[serde(rename = "container")]
    Container,
    /// One merge for the whole pod; every container gets the same affinity.
    #[serde(rename = "pod")]
    Pod,
}

impl Scope {
    /// The name used in the kubelet configuration.
    pub fn name(self) -> &'static str {
        match self {
            Scope::Container => "container",
            Scope::Pod => "pod",
        }
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Scope {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        match s {
            "container" => Ok(Scope::Container),
            "pod" => Ok(Scope::Pod),
            other => Err(Error::UnknownScope {
                name: other.to_string(),
            }),
        }
    }
}

/// Parsed `topologyManagerPolicyOptions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PolicyOptions {
    /// `prefer-closest-numa-nodes`: among equally wide preferred masks, take the one with the
    /// lowest average distance between its nodes.
    pub prefer_closest_numa: bool,
    /// `max-allowable-numa-nodes`: the most NUMA nodes a machine may have (at least 8).
    pub max_allowable_numa_nodes: usize,
}

impl Default for PolicyOptions {
    fn default() -> Self {
        Self {
            prefer_closest_numa: false,
            max_allowable_numa_nodes: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
        }
    }
}

impl PolicyOptions {
    /// Parses the option map as the kubelet does (`NewPolicyOptions`): boolean values as Go's
    /// `strconv.ParseBool`, integers as `strconv.Atoi`, and `max-allowable-numa-nodes` at least 8.
    ///
    /// Both options are generally available upstream, so no feature gate is consulted. Options are
    /// checked in name order, so the first bad one (by name) is reported.
    pub fn parse(options: &BTreeMap<String, String>) -> Result<Self, Error> {
        let mut parsed = PolicyOptions::default();
        for (name, value) in options {
            match name.as_str() {
                PREFER_CLOSEST_NUMA_NODES => {
                    parsed.prefer_closest_numa =
                        parse_go_bool(value).ok_or_else(|| Error::BadBoolOption {
                            name: name.clone(),
                            value: value.clone(),
                        })?;
                }
                MAX_ALLOWABLE_NUMA_NODES => {
                    let number = parse_go_int(value).map_err(|reason| Error::BadIntOption {
                        name: name.clone(),
                        value: value.clone(),
                        reason,
                    })?;
                    if number < DEFAULT_MAX_ALLOWABLE_NUMA_NODES as i64 {
                        return Err(Error::OptionBelowMinimum {
                            name: name.clone(),
                            minimum: DEFAULT_MAX_ALLOWABLE_NUMA_NODES,
                        });
                    }
                    parsed.max_allowable_numa_nodes = usize::try_from(number).unwrap_or(usize::MAX);
                }
                other => {
                    return Err(Error::UnknownOption {
                        name: other.to_string(),
                    });
                }
            }
        }
        Ok(parsed)
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(value: &str) -> Option<bool> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `strconv.Atoi` on a 64-bit platform, with its error reasons.
fn parse_go_int(value: &str) -> Result<i64, &'static str> {
    let digits = value.strip_prefix(['+', '-']).unwrap_or(value);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err("invalid syntax");
    }
    value.parse::<i64>().map_err(|_| "value out of range")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn defaults_without_options() {
        assert_eq!(
            PolicyOptions::parse(&BTreeMap::new()),
            Ok(PolicyOptions::default())
        );
    }

    #[test]
    fn go_bool_and_int_syntax() {
        let parsed = PolicyOptions::parse(&opts(&[
            ("prefer-closest-numa-nodes", "TRUE"),
            ("max-allowable-numa-nodes", "+12"),
        ]))
        .expect("valid options");
        assert!(parsed.prefer_closest_numa);
        assert_eq!(parsed.max_allowable_numa_nodes, 12);
        let err = PolicyOptions::parse(&opts(&[("prefer-closest-numa-nodes", "maybe")]))
            .expect_err("maybe is not a bool");
        assert_eq!(
            err.to_string(),
            "bad value for option \"prefer-closest-numa-nodes\": strconv.ParseBool: parsing \"maybe\": invalid syntax"
        );
        let err = PolicyOptions::parse(&opts(&[(
            "max-allowable-numa-nodes",
            "99999999999999999999",
        )]))
        .expect_err("overflow");
        assert!(matches!(
            err,
            Error::BadIntOption {
                reason: "value out of range",
                ..
            }
        ));
    }

    #[test]
    fn max_allowable_below_eight_and_unknown_options_fail() {
        assert_eq!(
            PolicyOptions::parse(&opts(&[("max-allowable-numa-nodes", "4")])),
            Err(Error::OptionBelowMinimum {
                name: "max-allowable-numa-nodes".into(),
                minimum: 8
            })
        );
        assert!(matches!(
            PolicyOptions::parse(&opts(&[("bogus", "1")])),
            Err(Error::UnknownOption { .. })
        ));
    }

    #[test]
    fn policy_and_scope_names_round_trip() {
        for p in [
            Policy::None,
            Policy::BestEffort,
            Policy::Restricted,
            Policy::SingleNumaNode,
        ] {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
        }
        for s in [Scope::Container, Scope::Pod] {
            assert_eq!(s.name().parse::<Scope>(), Ok(s));
        }
        assert!("static".parse::<Policy>().is_err());
    }
}
