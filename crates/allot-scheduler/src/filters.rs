//! The cheap filter plugins, with the reasons upstream reports (`Status.Reasons()`).

use allot_api::core::v1::{
    Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm, Pod,
    Taint, TaintEffect, Toleration, TolerationOperator,
};

use crate::resources::Resources;

/// NodeName: "node(s) didn't match the requested node name".
pub const REASON_NODE_NAME: &str = "node(s) didn't match the requested node name";
/// NodeUnschedulable: "node(s) were unschedulable".
pub const REASON_UNSCHEDULABLE: &str = "node(s) were unschedulable";
/// NodeAffinity: "node(s) didn't match Pod's node affinity/selector".
pub const REASON_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
/// NodeResourcesFit: too many pods.
pub const REASON_TOO_MANY_PODS: &str = "Too many pods";
/// DynamicResources: the allocator found no devices.
pub const REASON_CANNOT_ALLOCATE: &str = "cannot allocate all claims";
/// DynamicResources: an allocated claim's node selector excludes the node, or its binding
/// failed.
pub const REASON_CLAIM_NOT_AVAILABLE: &str = "resourceclaim not available on the node";

/// NodeName filter. (The scheduler never sees pods with `spec.nodeName`, so this only rejects
/// when a caller passes such a pod.)
pub fn node_name(pod: &Pod, node: &Node) -> Option<String> {
    match pod.spec.node_name.as_deref() {
        Some(name) if !name.is_empty() && name != node.metadata.name => {
            Some(REASON_NODE_NAME.into())
        }
        _ => None,
    }
}

/// NodeUnschedulable filter: `spec.unschedulable` nodes accept only pods tolerating the
/// `node.kubernetes.io/unschedulable:NoSchedule` taint.
pub fn node_unschedulable(pod: &Pod, node: &Node) -> Option<String> {
    if node.spec.unschedulable != Some(true) {
        return None;
    }
    let taint = Taint {
        key: "node.kubernetes.io/unschedulable".into(),
        value: String::new(),
        effect: TaintEffect::NoSchedule,
        time_added: None,
    };
    if pod.spec.tolerations.iter().any(|t| tolerates(t, &taint)) {
        None
    } else {
        Some(REASON_UNSCHEDULABLE.into())
    }
}

/// Whether a toleration tolerates a taint (upstream `Toleration.ToleratesTaint`).
pub fn tolerates(toleration: &Toleration, taint: &Taint) -> bool {
    if let Some(effect) = &toleration.effect
        && *effect != taint.effect
    {
        return false;
    }
    if !toleration.key.is_empty() && toleration.key != taint.key {
        return false;
    }
    match toleration
        .operator
        .as_ref()
        .unwrap_or(&TolerationOperator::Equal)
    {
        TolerationOperator::Exists => true,
        TolerationOperator::Equal => toleration.value == taint.value,
        TolerationOperator::Lt | TolerationOperator::Gt => {
            let (Ok(tv), Ok(nv)) = (toleration.value.parse::<i64>(), taint.value.parse::<i64>())
            else {
                return false;
            };
            if *toleration
                .operator
                .as_ref()
                .unwrap_or(&TolerationOperator::Equal)
                == TolerationOperator::Lt
            {
                nv < tv
            } else {
                nv > tv
            }
        }
        TolerationOperator::Other(_) => false,
    }
}

/// TaintToleration filter: the first NoSchedule or NoExecute taint the pod does not tolerate.
pub fn untolerated_taint<'a>(pod: &Pod, node: &'a Node) -> Option<&'a Taint> {
    node.spec
        .taints
        .iter()
        .filter(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        .find(|taint| !pod.spec.tolerations.iter().any(|t| tolerates(t, taint)))
}

/// How many PreferNoSchedule taints the pod does not tolerate (TaintToleration score input).
pub fn intolerable_prefer_no_schedule(pod: &Pod, node: &Node) -> usize {
    node.spec
        .taints
        .iter()
        .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
        .filter(|taint| {
            !pod.spec
                .tolerations
                .iter()
                .filter(|t| t.effect.is_none() || t.effect == Some(TaintEffect::PreferNoSchedule))
                .any(|t| tolerates(t, taint))
        })
        .count()
}

/// NodeAffinity filter: `spec.nodeSelector` labels and the required node affinity.
pub fn node_affinity(pod: &Pod, node: &Node) -> Option<String> {
    for (key, value) in &pod.spec.node_selector {
        if node.metadata.labels.get(key) != Some(value) {
            return Some(REASON_AFFINITY.into());
        }
    }
    let required = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|a| {
            a.required_during_scheduling_ignored_during_execution
                .as_ref()
        });
    if let Some(selector) = required
        && !selector_matches(node, selector)
    {
        return Some(REASON_AFFINITY.into());
    }
    None
}

/// Whether a node selector matches a node: any term matches (an empty term matches nothing);
/// invalid requirements do not match.
pub fn selector_matches(node: &Node, selector: &NodeSelector) -> bool {
    selector
        .node_selector_terms
        .iter()
        .any(|term| term_matches(node, term))
}

/// Whether one node selector term matches. A term with an invalid requirement matches nothing
/// (upstream's `LazyErrorNodeSelector` leaves out the terms it cannot parse).
pub fn term_matches(node: &Node, term: &NodeSelectorTerm) -> bool {
    if term.match_expressions.is_empty() && term.match_fields.is_empty() {
        return false;
    }
    if !term_valid(term) {
        return false;
    }
    term.match_expressions
        .iter()
        .all(|r| requirement_matches(r, node.metadata.labels.get(&r.key).map(String::as_str)))
        && term.match_fields.iter().all(|r| {
            r.key == "metadata.name" && requirement_matches(r, Some(node.metadata.name.as_str()))
        })
}

/// Whether upstream parses the term: label requirements as `labels.NewRequirement` accepts
/// them (a qualified-name key; In/NotIn with valid label values; Exists/DoesNotExist without
/// values; Gt/Lt with one integer), field requirements as In/NotIn with one value.
pub fn term_valid(term: &NodeSelectorTerm) -> bool {
    let label_ok = |r: &NodeSelectorRequirement| {
        if !allot_validation::names::is_qualified_name(&r.key).is_empty() {
            return false;
        }
        match &r.operator {
            NodeSelectorOperator::In | NodeSelectorOperator::NotIn => {
                !r.values.is_empty()
                    && r.values
                        .iter()
                        .all(|v| crate::labels::invalid_label_value(v).is_none())
            }
            NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist => {
                r.values.is_empty()
            }
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
                r.values.len() == 1 && r.values[0].parse::<i64>().is_ok()
            }
            NodeSelectorOperator::Other(_) => false,
        }
    };
    let field_ok = |r: &NodeSelectorRequirement| {
        matches!(
            r.operator,
            NodeSelectorOperator::In | NodeSelectorOperator::NotIn
        ) && r.values.len() == 1
    };
    term.match_expressions.iter().all(label_ok) && term.match_fields.iter().all(field_ok)
}

/// Whether one requirement holds for a label (or field) value, `None` when the node lacks it.
pub fn requirement_matches(requirement: &NodeSelectorRequirement, value: Option<&str>) -> bool {
    let values = &requirement.values;
    match &requirement.operator {
        NodeSelectorOperator::In => value.is_some_and(|v| values.iter().any(|x| x == v)),
        NodeSelectorOperator::NotIn => !value.is_some_and(|v| values.iter().any(|x| x == v)),
        NodeSelectorOperator::Exists => value.is_some(),
        NodeSelectorOperator::DoesNotExist => value.is_none(),
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let (Some(bound), Some(v)) = (
                values.first().and_then(|b| b.parse::<i64>().ok()),
                value.and_then(|v| v.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if requirement.operator == NodeSelectorOperator::Gt {
                v > bound
            } else {
                v < bound
            }
        }
        NodeSelectorOperator::Other(_) => false,
    }
}

/// Sum of the weights of the preferred node affinity terms the node matches (NodeAffinity
/// score input).
pub fn preferred_affinity_weight(pod: &Pod, node: &Node) -> i64 {
    pod.spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .map(|a| {
            a.preferred_during_scheduling_ignored_during_execution
                .iter()
                .filter(|p| term_matches(node, &p.preference))
                .map(|p| i64::from(p.weight))
                .sum()
        })
        .unwrap_or(0)
}

/// NodeResourcesFit filter: every reason, in upstream's order (pods, cpu, memory, ephemeral
/// storage, then scalar resources by name). Scalar resources `delegated` says DRA serves on
/// this node (extended resources backed by a DeviceClass where the node has none) are left to
/// DynamicResources, as upstream's `shouldDelegateResourceToDRA`.
pub fn resources_fit(
    request: &Resources,
    allocatable: &Resources,
    requested: &Resources,
    pods_on_node: i64,
    delegated: &dyn Fn(&str) -> bool,
) -> Vec<String> {
    let mut reasons = Vec::new();
    if pods_on_node + 1 > allocatable.pods {
        reasons.push(REASON_TOO_MANY_PODS.to_string());
    }
    let check = |name: &str, want: i64, reasons: &mut Vec<String>| {
        if want > 0 && want > allocatable.get(name) - requested.get(name) {
            reasons.push(format!("Insufficient {name}"));
        }
    };
    check("cpu", request.milli_cpu, &mut reasons);
    check("memory", request.memory, &mut reasons);
    check("ephemeral-storage", request.ephemeral_storage, &mut reasons);
    for (name, want) in &request.scalar {
        if !delegated(name) {
            check(name, *want, &mut reasons);
        }
    }
    reasons
}

/// Whether [`resources_fit`] finds nothing for a request without scalar resources, without
/// building reasons: the common case, checked for every node a pod is filtered against.
pub fn fits_plain(
    request: &Resources,
    allocatable: &Resources,
    requested: &Resources,
    pods_on_node: i64,
) -> bool {
    let ok = |want: i64, have: i64, used: i64| want <= 0 || want <= have - used;
    request.scalar.is_empty()
        && pods_on_node < allocatable.pods
        && ok(
            request.milli_cpu,
            allocatable.milli_cpu,
            requested.milli_cpu,
        )
        && ok(request.memory, allocatable.memory, requested.memory)
        && ok(
            request.ephemeral_storage,
            allocatable.ephemeral_storage,
            requested.ephemeral_storage,
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str) -> Node {
        let mut node = Node::default();
        node.metadata.name = name.into();
        node
    }

    #[test]
    fn node_name_filter() {
        let mut pod = Pod::default();
        assert_eq!(node_name(&pod, &node("a")), None);
        pod.spec.node_name = Some("b".into());
        assert_eq!(
            node_name(&pod, &node("a")).as_deref(),
            Some(REASON_NODE_NAME)
        );
        assert_eq!(node_name(&pod, &node("b")), None);
    }

    #[test]
    fn unschedulable_filter_honours_toleration() {
        let mut n = node("a");
        n.spec.unschedulable = Some(true);
        let mut pod = Pod::default();
        assert_eq!(
            node_unschedulable(&pod, &n).as_deref(),
            Some(REASON_UNSCHEDULABLE)
        );
        pod.spec.tolerations.push(Toleration {
            key: "node.kubernetes.io/unschedulable".into(),
            operator: Some(TolerationOperator::Exists),
            ..Default::default()
        });
        assert_eq!(node_unschedulable(&pod, &n), None);
    }

    #[test]
    fn taints_need_tolerations() {
        let mut n = node("a");
        n.spec.taints.push(Taint {
            key: "gpu".into(),
            value: "true".into(),
            effect: TaintEffect::NoSchedule,
            time_added: None,
        });
        n.spec.taints.push(Taint {
            key: "soft".into(),
            value: String::new(),
            effect: TaintEffect::PreferNoSchedule,
            time_added: None,
        });
        let mut pod = Pod::default();
        assert_eq!(
            untolerated_taint(&pod, &n).map(|t| t.key.as_str()),
            Some("gpu")
        );
        assert_eq!(intolerable_prefer_no_schedule(&pod, &n), 1);
        pod.spec.tolerations.push(Toleration {
            key: "gpu".into(),
            value: "true".into(),
            effect: Some(TaintEffect::NoSchedule),
            ..Default::default()
        });
        assert_eq!(untolerated_taint(&pod, &n), None);
        pod.spec.tolerations[0].value = "false".into();
        assert!(untolerated_taint(&pod, &n).is_some());
    }

    #[test]
    fn affinity_filter() {
        let mut n = node("a");
        n.metadata.labels.insert("zone".into(), "z1".into());
        let mut pod = Pod::default();
        pod.spec.node_selector.insert("zone".into(), "z1".into());
        assert_eq!(node_affinity(&pod, &n), None);
        pod.spec.node_selector.insert("zone".into(), "z2".into());
        assert_eq!(node_affinity(&pod, &n).as_deref(), Some(REASON_AFFINITY));
        pod.spec.node_selector.clear();
        let term = NodeSelectorTerm {
            match_expressions: vec![NodeSelectorRequirement {
                key: "zone".into(),
                operator: NodeSelectorOperator::NotIn,
                values: vec!["z1".into()],
            }],
            match_fields: vec![],
        };
        pod.spec.affinity = Some(allot_api::core::v1::Affinity {
            node_affinity: Some(allot_api::core::v1::NodeAffinity {
                required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                    node_selector_terms: vec![term],
                }),
                preferred_during_scheduling_ignored_during_execution: vec![],
            }),
            pod_affinity: None,
            pod_anti_affinity: None,
        });
        assert_eq!(node_affinity(&pod, &n).as_deref(), Some(REASON_AFFINITY));
        n.metadata.labels.insert("zone".into(), "z3".into());
        assert_eq!(node_affinity(&pod, &n), None);
    }

    #[test]
    fn resources_fit_reports_every_shortage() {
        let mut alloc = Resources {
            milli_cpu: 4000,
            memory: 1000,
            pods: 2,
            ..Default::default()
        };
        alloc.scalar.insert("example.com/gpu".into(), 1);
        let requested = Resources {
            milli_cpu: 3500,
            memory: 0,
            ..Default::default()
        };
        let mut want = Resources {
            milli_cpu: 1000,
            memory: 2000,
            ..Default::default()
        };
        want.scalar.insert("example.com/gpu".into(), 2);
        assert_eq!(
            resources_fit(&want, &alloc, &requested, 2, &|_| false),
            vec![
                "Too many pods",
                "Insufficient cpu",
                "Insufficient memory",
                "Insufficient example.com/gpu"
            ]
        );
        // A resource DRA serves on this node is DynamicResources' business.
        assert_eq!(
            resources_fit(&want, &alloc, &requested, 1, &|n| n == "example.com/gpu"),
            vec!["Insufficient cpu", "Insufficient memory"]
        );
        let small = Resources {
            milli_cpu: 500,
            memory: 1000,
            ..Default::default()
        };
        assert!(resources_fit(&small, &alloc, &requested, 1, &|_| false).is_empty());
        // The quick check agrees with the full one on requests without scalar resources.
        assert!(fits_plain(&small, &alloc, &requested, 1));
        for (r, pods) in [(&small, 2), (&want, 1)] {
            let mut r = r.clone();
            r.scalar.clear();
            assert_eq!(
                fits_plain(&r, &alloc, &requested, pods),
                resources_fit(&r, &alloc, &requested, pods, &|_| false).is_empty()
            );
        }
    }
}
