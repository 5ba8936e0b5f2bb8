//! Label selectors as the scheduler evaluates them (upstream `metav1.LabelSelectorAsSelector`
//! and `labels.Selector`): compiled once per term or constraint, matched against many pods.
//!
//! As upstream: an absent selector matches nothing, an empty one (no `matchLabels`, no
//! `matchExpressions`) matches everything, `matchLabels` entries are `key In (value)`
//! requirements, and every requirement must hold.

use std::collections::BTreeMap;
use std::fmt;

use allot_api::meta::v1::LabelSelector;

/// The operator of one [`Requirement`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Operator {
    /// The label is present with one of the values.
    In,
    /// The label is absent or has none of the values.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
}

/// One requirement of a [`Selector`]: a key, an operator and (for `In`/`NotIn`) sorted values.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Requirement {
    /// The label key.
    pub key: String,
    /// The operator.
    pub operator: Operator,
    /// The values, sorted and deduplicated.
    pub values: Vec<String>,
}

impl Requirement {
    /// A requirement; values are sorted and deduplicated.
    pub fn new(key: impl Into<String>, operator: Operator, mut values: Vec<String>) -> Self {
        values.sort();
        values.dedup();
        Requirement {
            key: key.into(),
            operator,
            values,
        }
    }

    /// Whether the labels satisfy this requirement.
    #[inline]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::In => value.is_some_and(|v| self.has(v)),
            Operator::NotIn => !value.is_some_and(|v| self.has(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
        }
    }

    fn has(&self, value: &str) -> bool {
        match self.values.as_slice() {
            [one] => one == value,
            values => values.binary_search_by(|v| v.as_str().cmp(value)).is_ok(),
        }
    }
}

impl fmt::Display for Requirement {
    /// Upstream's `Requirement.String()`: `k in (a,b)`, `k notin (a)`, `k`, `!k`, and `k=v`
    /// for a single-valued `In`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operator {
            Operator::Exists => write!(f, "{}", self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::In if self.values.len() == 1 => write!(f, "{}={}", self.key, self.values[0]),
            Operator::In => write!(f, "{} in ({})", self.key, self.values.join(",")),
            Operator::NotIn => write!(f, "{} notin ({})", self.key, self.values.join(",")),
        }
    }
}

/// Why a label value is invalid (upstream `IsValidLabelValue`), `None` when it is valid.
pub fn invalid_label_value(value: &str) -> Option<String> {
    let mut problems = Vec::new();
    if value.len() > 63 {
        problems.push("must be no more than 63 characters".to_string());
    }
    let bytes = value.as_bytes();
    let alnum = |b: u8| b.is_ascii_alphanumeric();
    let valid = bytes.is_empty()
        || (alnum(bytes[0])
            && alnum(bytes[bytes.len() - 1])
            && bytes
                .iter()
                .all(|b| alnum(*b) || matches!(b, b'-' | b'_' | b'.')));
    if !valid {
        problems.push(
            "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
                .to_string(),
        );
    }
    (!problems.is_empty()).then(|| problems.join("; "))
}

/// A compiled label selector.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Selector {
    /// Matches no labels (an absent selector).
    Nothing,
    /// Every requirement must hold; no requirement matches everything.
    All(Vec<Requirement>),
}

impl Selector {
    /// A label (key, value) every matching label set has: the first requirement that is `In`
    /// a single value. `None` when there is none (or the selector matches nothing).
    pub fn equality(&self) -> Option<(&str, &str)> {
        let Selector::All(requirements) = self else {
            return None;
        };
        requirements
            .iter()
            .find_map(|r| match (r.operator, r.values.as_slice()) {
                (Operator::In, [value]) => Some((r.key.as_str(), value.as_str())),
                _ => None,
            })
    }

    /// The selector that matches every label set.
    pub fn everything() -> Self {
        Selector::All(Vec::new())
    }

    /// Compiles an optional API selector: `None` matches nothing. `Err` names the first
    /// invalid requirement, as upstream's conversion error does.
    pub fn from_api(selector: Option<&LabelSelector>) -> Result<Self, String> {
        let Some(selector) = selector else {
            return Ok(Selector::Nothing);
        };
        let mut requirements = Vec::new();
        for (key, value) in &selector.match_labels {
            requirements.push(Requirement::new(
                key.clone(),
                Operator::In,
                vec![value.clone()],
            ));
        }
        for expression in &selector.match_expressions {
            let operator = match expression.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => return Err(format!("{other:?} is not a valid label selector operator")),
            };
            let key_problems = allot_validation::names::is_qualified_name(&expression.key);
            if !key_problems.is_empty() {
                return Err(format!(
                    "key: Invalid value: {:?}: {}",
                    expression.key,
                    key_problems.join("; ")
                ));
            }
            let needs_values = matches!(operator, Operator::In | Operator::NotIn);
            if needs_values && expression.values.is_empty() {
                return Err(
                    "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty"
                        .to_string(),
                );
            }
            if !needs_values && !expression.values.is_empty() {
                return Err(format!(
                    "values: Invalid value: {:?}: values set must be empty for exists and does not exist",
                    expression.values
                ));
            }
            for (i, value) in expression.values.iter().enumerate() {
                if let Some(problem) = invalid_label_value(value) {
                    return Err(format!(
                        "values[{i}][{}]: Invalid value: {value:?}: {problem}",
                        expression.key
                    ));
                }
            }
            requirements.push(Requirement::new(
                expression.key.clone(),
                operator,
                expression.values.clone(),
            ));
        }
        requirements.sort();
        Ok(Selector::All(requirements))
    }

    /// Adds a requirement (an `everything` selector becomes a one-requirement selector; a
    /// `Nothing` selector stays `Nothing`).
    pub fn add(&mut self, requirement: Requirement) {
        if let Selector::All(requirements) = self
            && !requirements.contains(&requirement)
        {
            requirements.push(requirement);
            requirements.sort();
        }
    }

    /// Whether the labels match.
    #[inline]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::All(requirements) => requirements.iter().all(|r| r.matches(labels)),
        }
    }

    /// Whether this selector matches everything.
    pub fn is_everything(&self) -> bool {
        matches!(self, Selector::All(r) if r.is_empty())
    }

    /// Whether this selector matches nothing.
    pub fn is_nothing(&self) -> bool {
        matches!(self, Selector::Nothing)
    }
}

impl fmt::Display for Selector {
    /// Upstream's `Selector.String()`: requirements joined by commas; `<none>` for nothing.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Nothing => f.write_str("<none>"),
            Selector::All(requirements) if requirements.is_empty() => f.write_str("<everything>"),
            Selector::All(requirements) => {
                for (i, r) in requirements.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{r}")?;
                }
                Ok(())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use allot_api::meta::v1::LabelSelectorRequirement;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn absent_matches_nothing_and_empty_matches_everything() {
        assert!(!Selector::from_api(None).unwrap().matches(&labels(&[])));
        let empty = LabelSelector::default();
        assert!(
            Selector::from_api(Some(&empty))
                .unwrap()
                .matches(&labels(&[("a", "b")]))
        );
    }

    #[test]
    fn operators_follow_upstream() {
        let mut selector = LabelSelector::default();
        selector.match_labels.insert("app".into(), "web".into());
        selector.match_expressions = vec![
            LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: vec!["db".into()],
            },
            LabelSelectorRequirement {
                key: "canary".into(),
                operator: "DoesNotExist".into(),
                values: vec![],
            },
        ];
        let s = Selector::from_api(Some(&selector)).unwrap();
        assert!(s.matches(&labels(&[("app", "web")])));
        assert!(s.matches(&labels(&[("app", "web"), ("tier", "front")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!s.matches(&labels(&[("app", "web"), ("canary", "")])));
        assert!(!s.matches(&labels(&[("app", "api")])));
        assert_eq!(s.to_string(), "app=web,!canary,tier notin (db)");
    }

    #[test]
    fn invalid_requirements_are_errors() {
        let selector = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: "In".into(),
                values: vec![],
            }],
            ..Default::default()
        };
        assert!(Selector::from_api(Some(&selector)).is_err());
    }
}
