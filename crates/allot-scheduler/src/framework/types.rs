//! The values plugins see: a pod with its parsed affinity terms (upstream `PodInfo`), host ports,
//! node scores and PreFilter results.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use allot_api::core::v1::{Pod, PodAffinityTerm, WeightedPodAffinityTerm};

use crate::labels::{Operator, Requirement, Selector};

/// A parsed pod affinity term (upstream `fwk.AffinityTerm`): the namespaces and selector of the
/// pods it is about and the topology key of its domains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityTerm {
    /// The term's position in its list (for explanations).
    pub index: usize,
    /// Namespaces named by the term (or the owner's, when it names none and has no namespace
    /// selector), sorted.
    pub namespaces: BTreeSet<String>,
    /// Namespaces by label (an absent selector matches none).
    pub namespace_selector: Selector,
    /// The pods, with the term's `matchLabelKeys`/`mismatchLabelKeys` merged in from the
    /// owner's labels (as the API server does on pod creation).
    pub selector: Selector,
    /// The node label whose values are the domains.
    pub topology_key: String,
}

impl AffinityTerm {
    /// Parses term `index` of `owner`.
    pub fn parse(owner: &Pod, index: usize, term: &PodAffinityTerm) -> Result<Self, String> {
        let mut selector = Selector::from_api(term.label_selector.as_ref())?;
        if term.label_selector.is_some() {
            let labels = &owner.metadata.labels;
            for key in &term.match_label_keys {
                if let Some(value) = labels.get(key) {
                    selector.add(Requirement::new(
                        key.clone(),
                        Operator::In,
                        vec![value.clone()],
                    ));
                }
            }
            for key in &term.mismatch_label_keys {
                if let Some(value) = labels.get(key) {
                    selector.add(Requirement::new(
                        key.clone(),
                        Operator::NotIn,
                        vec![value.clone()],
                    ));
                }
            }
        }
        let namespaces: BTreeSet<String> =
            if term.namespaces.is_empty() && term.namespace_selector.is_none() {
                [owner.metadata.namespace.clone()].into()
            } else {
                term.namespaces.iter().cloned().collect()
            };
        Ok(AffinityTerm {
            index,
            namespaces,
            namespace_selector: Selector::from_api(term.namespace_selector.as_ref())?,
            selector,
            topology_key: term.topology_key.clone(),
        })
    }

    /// Whether `pod` is one of the term's pods: in one of its namespaces (by name, or by the
    /// namespace selector over `namespace_labels`, the labels of the pod's namespace) and
    /// matching its selector (upstream `AffinityTerm.Matches`).
    #[inline]
    pub fn matches(&self, pod: &Pod, namespace_labels: &BTreeMap<String, String>) -> bool {
        (self.namespaces.contains(&pod.metadata.namespace)
            || self.namespace_selector.matches(namespace_labels))
            && self.selector.matches(&pod.metadata.labels)
    }

    /// Upstream `mergeAffinityTermNamespacesIfNotEmpty`: the namespaces a namespace selector
    /// with requirements matches become named namespaces and the selector matches nothing
    /// (an everything selector is kept: it matches every namespace without a listing).
    pub fn merge_namespaces(&mut self, all: &[(String, BTreeMap<String, String>)]) {
        if self.namespace_selector.is_everything() || self.namespace_selector.is_nothing() {
            return;
        }
        for (name, labels) in all {
            if self.namespace_selector.matches(labels) {
                self.namespaces.insert(name.clone());
            }
        }
        self.namespace_selector = Selector::Nothing;
    }

    /// A short description for explanations: `topologyKey zone, selector app=web`.
    pub fn describe(&self) -> String {
        format!(
            "topologyKey {}, selector {}",
            self.topology_key, self.selector
        )
    }
}

/// A parsed weighted pod affinity term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WeightedAffinityTerm {
    /// The term.
    pub term: AffinityTerm,
    /// Its weight.
    pub weight: i32,
}

/// A host port a container takes on its node: `(host IP, protocol, port)`, with upstream's
/// defaults applied (`0.0.0.0`, `TCP`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct HostPort {
    /// The host IP (`0.0.0.0` binds every address).
    pub ip: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The port.
    pub port: i32,
}

/// The bind-all address.
pub const BIND_ALL: &str = "0.0.0.0";

impl HostPort {
    /// Whether two host ports conflict (upstream `HostPortInfo.CheckConflict`): same protocol
    /// and port, and the same IP or either binding every address.
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.ip == BIND_ALL || other.ip == BIND_ALL)
    }
}

/// The host ports of a pod (upstream `GetHostPorts`): those of its sidecars (init containers
/// with `restartPolicy: Always`) and containers with a host port above 0.
pub fn host_ports(pod: &Pod) -> Vec<HostPort> {
    let sidecars = pod
        .spec
        .init_containers
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    sidecars
        .chain(&pod.spec.containers)
        .flat_map(|c| &c.ports)
        .filter(|p| p.host_port.is_some_and(|h| h > 0))
        .map(|p| HostPort {
            ip: p
                .host_ip
                .clone()
                .filter(|ip| !ip.is_empty())
                .unwrap_or_else(|| BIND_ALL.to_string()),
            protocol: p
                .protocol
                .as_ref()
                .map(|p| p.as_str().to_string())
                .filter(|p| !p.is_empty())
                .unwrap_or_else(|| "TCP".to_string()),
            port: p.host_port.unwrap_or(0),
        })
        .collect()
}

/// A pod with what the scheduler derives from it once (upstream `PodInfo`): its affinity and
/// anti-affinity terms parsed.
#[derive(Debug, Clone)]
pub struct PodInfo {
    /// The pod (shared with the store).
    pub pod: Arc<Pod>,
    /// Required pod affinity terms.
    pub required_affinity_terms: Vec<AffinityTerm>,
    /// Required pod anti-affinity terms.
    pub required_anti_affinity_terms: Vec<AffinityTerm>,
    /// Preferred pod affinity terms.
    pub preferred_affinity_terms: Vec<WeightedAffinityTerm>,
    /// Preferred pod anti-affinity terms.
    pub preferred_anti_affinity_terms: Vec<WeightedAffinityTerm>,
    /// Why a term could not be parsed (an invalid selector); the terms are then empty.
    pub parse_error: Option<String>,
}

impl PodInfo {
    /// Parses a pod's terms.
    pub fn new(pod: Arc<Pod>) -> Self {
        let mut info = PodInfo {
            pod,
            required_affinity_terms: Vec::new(),
            required_anti_affinity_terms: Vec::new(),
            preferred_affinity_terms: Vec::new(),
            preferred_anti_affinity_terms: Vec::new(),
            parse_error: None,
        };
        if let Err(error) = info.parse() {
            info.required_affinity_terms.clear();
            info.required_anti_affinity_terms.clear();
            info.preferred_affinity_terms.clear();
            info.preferred_anti_affinity_terms.clear();
            info.parse_error = Some(error);
        }
        info
    }

    /// Parses the four term lists; the errors as upstream aggregates them
    /// (`requiredAffinityTerms: ...`, one error alone or `[e1, e2]`).
    fn parse(&mut self) -> Result<(), String> {
        let Some(affinity) = self.pod.spec.affinity.as_ref() else {
            return Ok(());
        };
        let mut errors = Vec::new();
        let pod = &self.pod;
        let required = |terms: &[PodAffinityTerm]| -> Result<Vec<AffinityTerm>, String> {
            terms
                .iter()
                .enumerate()
                .map(|(i, t)| AffinityTerm::parse(pod, i, t))
                .collect()
        };
        let preferred =
            |terms: &[WeightedPodAffinityTerm]| -> Result<Vec<WeightedAffinityTerm>, String> {
                terms
                    .iter()
                    .enumerate()
                    .map(|(i, t)| {
                        Ok(WeightedAffinityTerm {
                            term: AffinityTerm::parse(pod, i, &t.pod_affinity_term)?,
                            weight: t.weight,
                        })
                    })
                    .collect()
            };
        let empty = Default::default();
        let a = affinity.pod_affinity.as_ref().unwrap_or(&empty);
        let empty_anti = Default::default();
        let anti = affinity.pod_anti_affinity.as_ref().unwrap_or(&empty_anti);
        match required(&a.required_during_scheduling_ignored_during_execution) {
            Ok(t) => self.required_affinity_terms = t,
            Err(e) => errors.push(format!("requiredAffinityTerms: {e}")),
        }
        match required(&anti.required_during_scheduling_ignored_during_execution) {
            Ok(t) => self.required_anti_affinity_terms = t,
            Err(e) => errors.push(format!("requiredAntiAffinityTerms: {e}")),
        }
        match preferred(&a.preferred_during_scheduling_ignored_during_execution) {
            Ok(t) => self.preferred_affinity_terms = t,
            Err(e) => errors.push(format!("preferredAffinityTerms: {e}")),
        }
        match preferred(&anti.preferred_during_scheduling_ignored_during_execution) {
            Ok(t) => self.preferred_anti_affinity_terms = t,
            Err(e) => errors.push(format!("preferredAntiAffinityTerms: {e}")),
        }
        match errors.len() {
            0 => Ok(()),
            1 => Err(errors.remove(0)),
            _ => Err(format!("[{}]", errors.join(", "))),
        }
    }

    /// The same terms for a newer version of the pod whose labels, namespace and affinity
    /// are those this was parsed from.
    pub fn with_pod(&self, pod: Arc<Pod>) -> PodInfo {
        PodInfo {
            pod,
            ..self.clone()
        }
    }

    /// Whether the pod has any pod affinity or anti-affinity term (upstream's
    /// `PodsWithAffinity` membership).
    pub fn has_affinity(&self) -> bool {
        !self.required_affinity_terms.is_empty()
            || !self.required_anti_affinity_terms.is_empty()
            || !self.preferred_affinity_terms.is_empty()
            || !self.preferred_anti_affinity_terms.is_empty()
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.pod.metadata.namespace, self.pod.metadata.name)
    }
}

/// A node's score from one plugin, or in total.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeScore {
    /// The node's slot in the cache.
    pub slot: usize,
    /// The score.
    pub score: i64,
}

/// A raw score not computed yet (the framework asks [`super::ScorePlugin::score`]).
pub const UNSCORED: i64 = i64::MIN;

/// The highest score a Score plugin gives (after NormalizeScore).
pub const MAX_NODE_SCORE: i64 = 100;

/// Upstream `helper.DefaultNormalizeScore`: scales scores to `0..=max` by the highest score,
/// reversed when `reverse` (a highest score of 0 gives every node `max` when reversed, 0
/// otherwise).
pub fn default_normalize_score(max: i64, reverse: bool, scores: &mut [NodeScore]) {
    let highest = scores.iter().map(|s| s.score).max().unwrap_or(0).max(0);
    if highest == 0 {
        if reverse {
            for s in scores.iter_mut() {
                s.score = max;
            }
        }
        return;
    }
    for s in scores.iter_mut() {
        let scaled = max * s.score / highest;
        s.score = if reverse { max - scaled } else { scaled };
    }
}

/// What a PreFilter plugin may narrow the nodes to (upstream `PreFilterResult`): `None` means
/// every node.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreFilterResult {
    /// The node names to consider.
    pub node_names: Option<BTreeSet<String>>,
}

impl PreFilterResult {
    /// Every node.
    pub fn all_nodes() -> Self {
        PreFilterResult::default()
    }

    /// The intersection with another result (upstream `Merge`).
    pub fn merge(self, other: PreFilterResult) -> PreFilterResult {
        match (self.node_names, other.node_names) {
            (None, None) => PreFilterResult::default(),
            (Some(a), None) | (None, Some(a)) => PreFilterResult {
                node_names: Some(a),
            },
            (Some(a), Some(b)) => PreFilterResult {
                node_names: Some(a.intersection(&b).cloned().collect()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::core::v1::{Container, ContainerPort, Protocol};
    use allot_api::meta::v1::LabelSelector;

    #[test]
    fn default_normalize_matches_upstream() {
        let mut scores = vec![
            NodeScore { slot: 0, score: 0 },
            NodeScore { slot: 1, score: 2 },
            NodeScore { slot: 2, score: 3 },
        ];
        default_normalize_score(100, false, &mut scores);
        assert_eq!(
            scores.iter().map(|s| s.score).collect::<Vec<_>>(),
            [0, 66, 100]
        );
        let mut zeros = vec![NodeScore { slot: 0, score: 0 }];
        default_normalize_score(100, true, &mut zeros);
        assert_eq!(zeros[0].score, 100);
    }

    #[test]
    fn match_label_keys_merge_from_the_owner() {
        let mut pod = Pod::default();
        pod.metadata.namespace = "ns".into();
        pod.metadata.labels.insert("app".into(), "web".into());
        pod.metadata.labels.insert("rev".into(), "1".into());
        let term = PodAffinityTerm {
            label_selector: Some(LabelSelector::default()),
            topology_key: "zone".into(),
            match_label_keys: vec!["rev".into(), "missing".into()],
            mismatch_label_keys: vec!["app".into()],
            ..Default::default()
        };
        let t = AffinityTerm::parse(&pod, 0, &term).unwrap();
        assert_eq!(t.selector.to_string(), "app notin (web),rev=1");
        assert_eq!(t.namespaces, ["ns".to_string()].into());
        let mut other = Pod::default();
        other.metadata.namespace = "ns".into();
        other.metadata.labels.insert("rev".into(), "1".into());
        assert!(t.matches(&other, &BTreeMap::new()));
        other.metadata.namespace = "other".into();
        assert!(!t.matches(&other, &BTreeMap::new()));
    }

    #[test]
    fn host_ports_take_defaults_and_sidecars() {
        let mut pod = Pod::default();
        pod.spec.containers = vec![Container {
            ports: vec![
                ContainerPort {
                    host_port: Some(80),
                    container_port: 80,
                    ..Default::default()
                },
                ContainerPort {
                    container_port: 81,
                    ..Default::default()
                },
            ],
            ..Default::default()
        }];
        pod.spec.init_containers = vec![
            Container {
                restart_policy: Some("Always".into()),
                ports: vec![ContainerPort {
                    host_port: Some(53),
                    container_port: 53,
                    protocol: Some(Protocol::Udp),
                    host_ip: Some("10.0.0.1".into()),
                    ..Default::default()
                }],
                ..Default::default()
            },
            Container {
                ports: vec![ContainerPort {
                    host_port: Some(9),
                    container_port: 9,
                    ..Default::default()
                }],
                ..Default::default()
            },
        ];
        let ports = host_ports(&pod);
        assert_eq!(ports.len(), 2);
        assert_eq!(ports[0].ip, "10.0.0.1");
        assert_eq!(ports[1].ip, BIND_ALL);
        assert_eq!(ports[1].protocol, "TCP");
        let wild_udp = HostPort {
            ip: BIND_ALL.into(),
            protocol: "UDP".into(),
            port: 53,
        };
        assert!(ports[0].conflicts(&wild_udp));
        assert!(!ports[1].conflicts(&wild_udp));
    }
}
