//! Admission: gathering hints per container or per pod, merging, recording affinities and
//! letting the providers allocate (upstream `topology_manager.go`, `scope*.go`).

use std::collections::BTreeMap;
use std::fmt;

use crate::{
    Error, NumaInfo, NumaMask, Policy, PolicyOptions, ProviderHints, Scope, TopologyHint, merge,
};

/// The reason string the kubelet reports when the Topology Manager rejects a pod.
pub const TOPOLOGY_AFFINITY_ERROR: &str = "TopologyAffinityError";

/// A component that proposes NUMA placements and then allocates (CPU, memory and device
/// managers), upstream's `HintProvider`.
///
/// `P` is the pod type and `C` the container type; the trait does not depend on any particular
/// object model. Unlike upstream, the merged affinity is handed to `allocate` instead of being
/// fetched back from the manager.
pub trait HintProvider<P: ?Sized, C: ?Sized> {
    /// Why an allocation failed (for example an SMT alignment error).
    type Error;

    /// Hints for one container, by resource name (container scope).
    fn get_topology_hints(&self, pod: &P, container: &C) -> ProviderHints;

    /// Hints for the whole pod, by resource name (pod scope).
    fn get_pod_topology_hints(&self, pod: &P) -> ProviderHints;

    /// Allocates the container's resources, aligned to `affinity` where possible.
    fn allocate(
        &mut self,
        pod: &P,
        container: &C,
        affinity: &TopologyHint,
    ) -> Result<(), Self::Error>;

    /// Allocates the whole pod at once with the pod's affinity (pod-level resource managers,
    /// upstream `AllocatePod`). The default allocates each container in turn with that
    /// affinity, which is what pod scope does for pods without pod-level resources.
    fn allocate_pod(
        &mut self,
        pod: &P,
        containers: &[(&str, &C)],
        affinity: &TopologyHint,
    ) -> Result<(), Self::Error> {
        for &(_, container) in containers {
            self.allocate(pod, container, affinity)?;
        }
        Ok(())
    }
}

/// The Topology Manager rejected a pod: no acceptable NUMA alignment exists under the policy.
///
/// `Display` gives upstream's message; the fields say what was merged and what came out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopologyAffinityError {
    /// The policy that refused.
    pub policy: Policy,
    /// The container whose merge failed, or `None` in pod scope.
    pub container: Option<String>,
    /// The best hint the merge found (not acceptable under the policy).
    pub best_hint: TopologyHint,
    /// What each provider proposed, in provider order.
    pub providers_hints: Vec<ProviderHints>,
}

impl TopologyAffinityError {
    /// The kubelet's reason: `TopologyAffinityError`.
    pub fn reason(&self) -> &'static str {
        TOPOLOGY_AFFINITY_ERROR
    }

    /// A sentence a person can act on: which resources could not be placed on the NUMA nodes
    /// the others need.
    pub fn explain(&self) -> String {
        let who = match &self.container {
            Some(name) => format!("container {name:?}"),
            None => "the pod".to_string(),
        };
        let mut parts = Vec::new();
        for hints in &self.providers_hints {
            for (resource, list) in hints {
                match list {
                    None => {}
                    Some(list) if list.is_empty() => {
                        parts.push(format!("{resource}: no NUMA placement is possible"))
                    }
                    Some(list) => {
                        let show = |h: &&TopologyHint| match &h.affinity {
                            Some(mask) => format!("[{mask}]"),
                            None => "any".to_string(),
                        };
                        let preferred: Vec<&TopologyHint> =
                            list.iter().filter(|h| h.preferred).collect();
                        let usable: Vec<String> = preferred
                            .iter()
                            .filter(|h| {
                                self.policy != Policy::SingleNumaNode
                                    || h.affinity.as_ref().is_none_or(|m| m.count() == 1)
                            })
                            .map(show)
                            .collect();
                        if preferred.is_empty() {
                            parts.push(format!("{resource}: no preferred NUMA placement"));
                        } else if usable.is_empty() {
                            let wide: Vec<String> = preferred.iter().map(show).collect();
                            parts.push(format!(
                                "{resource}: needs more than one NUMA node (preferred on {})",
                                wide.join(" or ")
                            ));
                        } else {
                            parts.push(format!("{resource}: preferred on {}", usable.join(" or ")));
                        }
                    }
                }
            }
        }
        let detail = if parts.is_empty() {
            String::new()
        } else {
            format!("; hints: {}", parts.join("; "))
        };
        format!(
            "{who} cannot be aligned under the {} policy: the best merge is {}{detail}",
            self.policy, self.best_hint
        )
    }
}

impl fmt::Display for TopologyAffinityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Resources cannot be allocated with Topology locality")
    }
}

impl std::error::Error for TopologyAffinityError {}

/// Why a pod was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection<E> {
    /// The merge found no alignment the policy accepts.
    TopologyAffinity(TopologyAffinityError),
    /// A provider failed to allocate for a container.
    Allocation {
        /// The container being allocated; empty for a pod-level allocation.
        container: String,
        /// The provider's error.
        error: E,
    },
}

/// The outcome of [`TopologyManager::admit`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission<E> {
    /// Every container was allocated.
    Admitted,
    /// The pod was refused; allocations already made for earlier containers stay (as upstream).
    Rejected(Rejection<E>),
}

impl<E> Admission<E> {
    /// Whether the pod was admitted.
    pub fn is_admitted(&self) -> bool {
        matches!(self, Admission::Admitted)
    }
}

/// A pure Topology Manager: configuration plus the affinity recorded for each admitted
/// container, upstream's `manager` with its scope and store.
#[derive(Debug, Clone)]
pub struct TopologyManager {
    policy: Policy,
    scope: Scope,
    options: PolicyOptions,
    numa: NumaInfo,
    /// (pod UID, container name) to the affinity given at admission.
    affinities: BTreeMap<(String, String), TopologyHint>,
}

impl TopologyManager {
    /// Configures a manager as upstream's `NewManager`: with policy none the options are not
    /// read and nothing is checked; otherwise the options are parsed, distances are required for
    /// prefer-closest-numa-nodes, and the NUMA node count must not exceed
    /// max-allowable-numa-nodes.
    pub fn new(
        policy: Policy,
        scope: Scope,
        options: &BTreeMap<String, String>,
        numa_nodes: &[usize],
        distances: Option<&BTreeMap<usize, Vec<u64>>>,
    ) -> Result<Self, Error> {
        if policy == Policy::None {
            let options = PolicyOptions::default();
            return Ok(Self {
                policy,
                scope,
                numa: NumaInfo::new(numa_nodes, None, &options)?,
                options,
                affinities: BTreeMap::new(),
            });
        }
        let options = PolicyOptions::parse(options)?;
        let numa = NumaInfo::new(numa_nodes, distances, &options)?;
        if numa.nodes().len() > options.max_allowable_numa_nodes {
            return Err(Error::TooManyNumaNodes {
                count: numa.nodes().len(),
                max: options.max_allowable_numa_nodes,
            });
        }
        Ok(Self {
            policy,
            scope,
            options,
            numa,
            affinities: BTreeMap::new(),
        })
    }

    /// The policy.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// The scope.
    pub fn scope(&self) -> Scope {
        self.scope
    }

    /// The parsed options.
    pub fn options(&self) -> &PolicyOptions {
        &self.options
    }

    /// The NUMA nodes and distances.
    pub fn numa_info(&self) -> &NumaInfo {
        &self.numa
    }

    /// The mask of all NUMA nodes.
    pub fn default_mask(&self) -> &NumaMask {
        self.numa.default_mask()
    }

    /// Merges hints under this manager's policy (see [`merge`]).
    pub fn merge(&self, providers_hints: &[ProviderHints]) -> (TopologyHint, bool) {
        merge(self.policy, &self.options, &self.numa, providers_hints)
    }

    /// The affinity recorded for a container (upstream `GetAffinity`); `{any, not preferred}`
    /// when none was recorded.
    pub fn affinity(&self, pod_uid: &str, container: &str) -> TopologyHint {
        self.affinities
            .get(&(pod_uid.to_string(), container.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// Forgets a container's affinity.
    pub fn remove_container(&mut self, pod_uid: &str, container: &str) {
        self.affinities
            .remove(&(pod_uid.to_string(), container.to_string()));
    }

    /// Forgets every affinity of a pod.
    pub fn remove_pod(&mut self, pod_uid: &str) {
        self.affinities.retain(|(uid, _), _| uid != pod_uid);
    }

    /// Admits a pod as the kubelet's Topology Manager does.
    ///
    /// `containers` are the init containers then the app containers, in spec order, with their
    /// names. Container scope merges each container's hints, stops at the first rejection, and
    /// otherwise records the affinity and lets every provider allocate before moving on. Pod scope
    /// merges the pod's hints once and gives every container that affinity. Policy none merges
    /// nothing and lets the providers allocate with no affinity.
    pub fn admit<P: ?Sized, C: ?Sized, E>(
        &mut self,
        pod_uid: &str,
        pod: &P,
        containers: &[(&str, &C)],
        providers: &mut [&mut dyn HintProvider<P, C, Error = E>],
    ) -> Admission<E> {
        if self.policy == Policy::None {
            for &(name, container) in containers {
                for provider in providers.iter_mut() {
                    if let Err(error) = provider.allocate(pod, container, &TopologyHint::default())
                    {
                        return Admission::Rejected(Rejection::Allocation {
                            container: name.to_string(),
                            error,
                        });
                    }
                }
            }
            return Admission::Admitted;
        }
        match self.scope {
            Scope::Container => {
                for &(name, container) in containers {
                    let hints: Vec<ProviderHints> = providers
                        .iter()
                        .map(|p| p.get_topology_hints(pod, container))
                        .collect();
                    let (best, admit) = self.merge(&hints);
                    if !admit {
                        return Admission::Rejected(Rejection::TopologyAffinity(
                            TopologyAffinityError {
                                policy: self.policy,
                                container: Some(name.to_string()),
                                best_hint: best,
                                providers_hints: hints,
                            },
                        ));
                    }
                    if let Err(rejection) =
                        self.record_and_allocate(pod_uid, pod, name, container, best, providers)
                    {
                        return Admission::Rejected(rejection);
                    }
                }
                Admission::Admitted
            }
            Scope::Pod => {
                let hints: Vec<ProviderHints> = providers
                    .iter()
                    .map(|p| p.get_pod_topology_hints(pod))
                    .collect();
                let (best, admit) = self.merge(&hints);
                if !admit {
                    return Admission::Rejected(Rejection::TopologyAffinity(
                        TopologyAffinityError {
                            policy: self.policy,
                            container: None,
                            best_hint: best,
                            providers_hints: hints,
                        },
                    ));
                }
                for &(name, container) in containers {
                    if let Err(rejection) = self.record_and_allocate(
                        pod_uid,
                        pod,
                        name,
                        container,
                        best.clone(),
                        providers,
                    ) {
                        return Admission::Rejected(rejection);
                    }
                }
                Admission::Admitted
            }
        }
    }

    /// Admits a pod that sets `.spec.resources` with the PodLevelResourceManagers gate on
    /// (upstream `admitUsingPodResources`). In pod scope the pod's hints are merged once, every
    /// container records the affinity, and each provider allocates the whole pod at once
    /// ([`HintProvider::allocate_pod`]). Container scope and policy none admit as [`Self::admit`].
    pub fn admit_pod_level<P: ?Sized, C: ?Sized, E>(
        &mut self,
        pod_uid: &str,
        pod: &P,
        containers: &[(&str, &C)],
        providers: &mut [&mut dyn HintProvider<P, C, Error = E>],
    ) -> Admission<E> {
        if self.policy == Policy::None || self.scope == Scope::Container {
            return self.admit(pod_uid, pod, containers, providers);
        }
        let hints: Vec<ProviderHints> = providers
            .iter()
            .map(|p| p.get_pod_topology_hints(pod))
            .collect();
        let (best, admit) = self.merge(&hints);
        if !admit {
            return Admission::Rejected(Rejection::TopologyAffinity(TopologyAffinityError {
                policy: self.policy,
                container: None,
                best_hint: best,
                providers_hints: hints,
            }));
        }
        for &(name, _) in containers {
            self.affinities
                .insert((pod_uid.to_string(), name.to_string()), best.clone());
        }
        for provider in providers.iter_mut() {
            if let Err(error) = provider.allocate_pod(pod, containers, &best) {
                return Admission::Rejected(Rejection::Allocation {
                    container: String::new(),
                    error,
                });
            }
        }
        Admission::Admitted
    }

    fn record_and_allocate<P: ?Sized, C: ?Sized, E>(
        &mut self,
        pod_uid: &str,
        pod: &P,
        name: &str,
        container: &C,
        best: TopologyHint,
        providers: &mut [&mut dyn HintProvider<P, C, Error = E>],
    ) -> Result<(), Rejection<E>> {
        self.affinities
            .insert((pod_uid.to_string(), name.to_string()), best.clone());
        for provider in providers.iter_mut() {
            provider
                .allocate(pod, container, &best)
                .map_err(|error| Rejection::Allocation {
                    container: name.to_string(),
                    error,
                })?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A provider that proposes fixed hints and records allocations.
    struct Fixed {
        container_hints: BTreeMap<String, ProviderHints>,
        pod_hints: ProviderHints,
        allocated: Vec<(String, TopologyHint)>,
        fail_on: Option<String>,
    }

    impl HintProvider<str, str> for Fixed {
        type Error = String;

        fn get_topology_hints(&self, _pod: &str, container: &str) -> ProviderHints {
            self.container_hints
                .get(container)
                .cloned()
                .unwrap_or_default()
        }

        fn get_pod_topology_hints(&self, _pod: &str) -> ProviderHints {
            self.pod_hints.clone()
        }

        fn allocate(
            &mut self,
            _pod: &str,
            container: &str,
            affinity: &TopologyHint,
        ) -> Result<(), String> {
            if self.fail_on.as_deref() == Some(container) {
                return Err(format!("cannot allocate {container}"));
            }
            self.allocated
                .push((container.to_string(), affinity.clone()));
            Ok(())
        }
    }

    fn hints(resource: &str, list: Vec<TopologyHint>) -> ProviderHints {
        ProviderHints::from([(resource.to_string(), Some(list))])
    }

    fn on(ids: &[usize], preferred: bool) -> TopologyHint {
        TopologyHint::new(NumaMask::from_ids(ids.iter().copied()), preferred)
    }

    fn manager(policy: Policy, scope: Scope) -> TopologyManager {
        TopologyManager::new(policy, scope, &BTreeMap::new(), &[0, 1], None).expect("valid")
    }

    #[test]
    fn container_scope_records_each_container_and_rejects_unaligned() {
        let mut cpu = Fixed {
            container_hints: BTreeMap::from([
                (
                    "a".to_string(),
                    hints("cpu", vec![on(&[1], true), on(&[0, 1], false)]),
                ),
                ("b".to_string(), hints("cpu", vec![on(&[0, 1], false)])),
            ]),
            pod_hints: ProviderHints::new(),
            allocated: vec![],
            fail_on: None,
        };
        let mut tm = manager(Policy::Restricted, Scope::Container);
        let outcome = tm.admit("uid", "pod", &[("a", "a"), ("b", "b")], &mut [&mut cpu]);
        match outcome {
            Admission::Rejected(Rejection::TopologyAffinity(err)) => {
                assert_eq!(err.container.as_deref(), Some("b"));
                assert_eq!(
                    err.to_string(),
                    "Resources cannot be allocated with Topology locality"
                );
                assert_eq!(err.reason(), "TopologyAffinityError");
                assert!(err.explain().contains("cpu: no preferred NUMA placement"));
            }
            other => panic!("expected a topology rejection, got {other:?}"),
        }
        // Container a was admitted and allocated before b failed, as upstream.
        assert_eq!(cpu.allocated, vec![("a".to_string(), on(&[1], true))]);
        assert_eq!(tm.affinity("uid", "a"), on(&[1], true));
        assert_eq!(tm.affinity("uid", "b"), TopologyHint::default());
    }

    #[test]
    fn pod_scope_gives_every_container_the_pod_affinity() {
        let mut cpu = Fixed {
            container_hints: BTreeMap::new(),
            pod_hints: hints("cpu", vec![on(&[0], true), on(&[1], true)]),
            allocated: vec![],
            fail_on: None,
        };
        let mut tm = manager(Policy::SingleNumaNode, Scope::Pod);
        let outcome: Admission<String> = tm.admit(
            "uid",
            "pod",
            &[("init", "init"), ("app", "app")],
            &mut [&mut cpu],
        );
        assert!(outcome.is_admitted());
        assert_eq!(tm.affinity("uid", "init"), on(&[0], true));
        assert_eq!(tm.affinity("uid", "app"), on(&[0], true));
        tm.remove_pod("uid");
        assert_eq!(tm.affinity("uid", "app"), TopologyHint::default());
    }

    #[test]
    fn pod_level_admission_allocates_the_pod_once_per_provider() {
        let mut cpu = Fixed {
            container_hints: BTreeMap::new(),
            pod_hints: hints("cpu", vec![on(&[1], true)]),
            allocated: vec![],
            fail_on: None,
        };
        let mut tm = manager(Policy::Restricted, Scope::Pod);
        let outcome: Admission<String> =
            tm.admit_pod_level("uid", "pod", &[("a", "a"), ("b", "b")], &mut [&mut cpu]);
        assert!(outcome.is_admitted());
        // The default allocate_pod allocates each container with the pod's affinity.
        assert_eq!(
            cpu.allocated,
            vec![
                ("a".to_string(), on(&[1], true)),
                ("b".to_string(), on(&[1], true))
            ]
        );
        assert_eq!(tm.affinity("uid", "b"), on(&[1], true));
        let mut none_fit = Fixed {
            container_hints: BTreeMap::new(),
            pod_hints: hints("memory", vec![]),
            allocated: vec![],
            fail_on: None,
        };
        let outcome = tm.admit_pod_level("uid2", "pod", &[("a", "a")], &mut [&mut none_fit]);
        assert!(matches!(
            outcome,
            Admission::Rejected(Rejection::TopologyAffinity(_))
        ));
        assert!(none_fit.allocated.is_empty());
    }

    #[test]
    fn allocation_errors_reject_with_the_container() {
        let mut cpu = Fixed {
            container_hints: BTreeMap::new(),
            pod_hints: ProviderHints::new(),
            allocated: vec![],
            fail_on: Some("app".to_string()),
        };
        let mut tm = manager(Policy::None, Scope::Container);
        let outcome = tm.admit("uid", "pod", &[("app", "app")], &mut [&mut cpu]);
        assert_eq!(
            outcome,
            Admission::Rejected(Rejection::Allocation {
                container: "app".to_string(),
                error: "cannot allocate app".to_string()
            })
        );
    }

    #[test]
    fn new_checks_node_count_but_not_for_none() {
        let nodes: Vec<usize> = (0..9).collect();
        assert_eq!(
            TopologyManager::new(
                Policy::BestEffort,
                Scope::Container,
                &BTreeMap::new(),
                &nodes,
                None
            )
            .err(),
            Some(Error::TooManyNumaNodes { count: 9, max: 8 })
        );
        let raised = BTreeMap::from([("max-allowable-numa-nodes".to_string(), "9".to_string())]);
        assert!(
            TopologyManager::new(Policy::BestEffort, Scope::Container, &raised, &nodes, None)
                .is_ok()
        );
        let bad = BTreeMap::from([("max-allowable-numa-nodes".to_string(), "x".to_string())]);
        assert!(TopologyManager::new(Policy::None, Scope::Container, &bad, &nodes, None).is_ok());
    }
}
