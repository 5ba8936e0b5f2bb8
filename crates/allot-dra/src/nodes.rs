//! Node matching: `nodeName`, `allNodes` and node selectors, as upstream's `NodeMatches`.

use allot_api::core::v1::{Node, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement};

/// Whether a slice or device with these node fields is visible from `node`.
///
/// The first field that is set decides: `nodeName`, then `allNodes`, then `nodeSelector`;
/// nothing set means "not visible".
pub(crate) fn node_matches(
    node: &Node,
    node_name: Option<&str>,
    all_nodes: bool,
    selector: Option<&NodeSelector>,
) -> Result<bool, String> {
    match (
        node_name.filter(|name| !name.is_empty()),
        all_nodes,
        selector,
    ) {
        (Some(name), _, _) => Ok(node.metadata.name == name),
        (None, true, _) => Ok(true),
        (None, false, Some(selector)) => selector_matches(node, selector),
        (None, false, None) => Ok(false),
    }
}

/// Whether `node` matches any term of `selector`; an invalid requirement is an error, as in
/// upstream's `nodeaffinity.NewNodeSelector`.
pub(crate) fn selector_matches(node: &Node, selector: &NodeSelector) -> Result<bool, String> {
    let mut matched = false;
    for term in &selector.node_selector_terms {
        if term.match_expressions.is_empty() && term.match_fields.is_empty() {
            // An empty term matches no node.
            continue;
        }
        let mut term_matches = true;
        for requirement in &term.match_expressions {
            let value = node
                .metadata
                .labels
                .get(&requirement.key)
                .map(String::as_str);
            if !requirement_matches(requirement, value)? {
                term_matches = false;
            }
        }
        for requirement in &term.match_fields {
            if requirement.key != "metadata.name" {
                return Err(format!(
                    "not a valid field selector key: {:?}, only metadata.name is supported",
                    requirement.key
                ));
            }
            if !matches!(
                requirement.operator,
                NodeSelectorOperator::In | NodeSelectorOperator::NotIn
            ) || requirement.values.len() != 1
            {
                return Err(format!(
                    "field selector for metadata.name must use In or NotIn with one value, got {} {:?}",
                    requirement.operator, requirement.values
                ));
            }
            if !requirement_matches(requirement, Some(node.metadata.name.as_str()))? {
                term_matches = false;
            }
        }
        matched |= term_matches;
    }
    Ok(matched)
}

fn requirement_matches(
    requirement: &NodeSelectorRequirement,
    value: Option<&str>,
) -> Result<bool, String> {
    let values = &requirement.values;
    match &requirement.operator {
        NodeSelectorOperator::In | NodeSelectorOperator::NotIn => {
            if values.is_empty() {
                return Err(format!(
                    "values: Required value: must be specified when operator is {}",
                    requirement.operator
                ));
            }
            let found = value.is_some_and(|value| values.iter().any(|v| v == value));
            Ok(if requirement.operator == NodeSelectorOperator::In {
                found
            } else {
                !found
            })
        }
        NodeSelectorOperator::Exists | NodeSelectorOperator::DoesNotExist => {
            if !values.is_empty() {
                return Err(format!(
                    "values: Forbidden: may not be specified when operator is {}",
                    requirement.operator
                ));
            }
            let exists = value.is_some();
            Ok(if requirement.operator == NodeSelectorOperator::Exists {
                exists
            } else {
                !exists
            })
        }
        NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
            let [bound] = values.as_slice() else {
                return Err(format!(
                    "values: Required value: must be specified as a single value when operator is {}",
                    requirement.operator
                ));
            };
            let bound: i64 = bound
                .parse()
                .map_err(|_| format!("values[0]: Invalid value: {bound:?}: must be an integer"))?;
            let Some(value) = value.and_then(|value| value.parse::<i64>().ok()) else {
                return Ok(false);
            };
            Ok(if requirement.operator == NodeSelectorOperator::Gt {
                value > bound
            } else {
                value < bound
            })
        }
        NodeSelectorOperator::Other(operator) => Err(format!(
            "{operator:?} is not a valid node selector operator"
        )),
    }
}
