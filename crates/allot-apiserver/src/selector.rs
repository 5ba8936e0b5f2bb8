//! Label and field selectors, as `?labelSelector=` and `?fieldSelector=` spell them.

use std::collections::BTreeMap;

use serde_json::Value;

/// One requirement of a selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Requirement {
    /// `key=value` or `key==value`.
    Equals(String, String),
    /// `key!=value`: the key is absent or has another value.
    NotEquals(String, String),
    /// `key in (a,b)`.
    In(String, Vec<String>),
    /// `key notin (a,b)`: the key is absent or has none of the values.
    NotIn(String, Vec<String>),
    /// `key`.
    Exists(String),
    /// `!key`.
    DoesNotExist(String),
}

/// A parsed selector: every requirement must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector {
    /// The requirements.
    pub requirements: Vec<Requirement>,
}

/// Splits at commas outside parentheses.
fn split_terms(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&text[start..]);
    out.into_iter()
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect()
}

fn values(list: &str) -> Result<Vec<String>, String> {
    let inner = list
        .trim()
        .strip_prefix('(')
        .and_then(|l| l.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised list, found {list:?}"))?;
    Ok(inner
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect())
}

impl Selector {
    /// Parses a label selector (equality- and set-based).
    pub fn parse_labels(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            let requirement = if let Some(key) = term.strip_prefix('!') {
                Requirement::DoesNotExist(key.trim().to_string())
            } else if let Some((key, rest)) = term.split_once(" notin ") {
                Requirement::NotIn(key.trim().to_string(), values(rest)?)
            } else if let Some((key, rest)) = term.split_once(" in ") {
                Requirement::In(key.trim().to_string(), values(rest)?)
            } else {
                Self::parse_equality(term)?
            };
            requirements.push(requirement);
        }
        Ok(Selector { requirements })
    }

    fn parse_equality(term: &str) -> Result<Requirement, String> {
        if let Some((k, v)) = term.split_once("!=") {
            Ok(Requirement::NotEquals(k.trim().into(), v.trim().into()))
        } else if let Some((k, v)) = term.split_once("==") {
            Ok(Requirement::Equals(k.trim().into(), v.trim().into()))
        } else if let Some((k, v)) = term.split_once('=') {
            Ok(Requirement::Equals(k.trim().into(), v.trim().into()))
        } else if term.contains(' ') || term.contains('(') {
            Err(format!("unable to parse requirement: {term:?}"))
        } else {
            Ok(Requirement::Exists(term.to_string()))
        }
    }

    /// Parses a field selector (`f=v`, `f==v`, `f!=v`).
    pub fn parse_fields(text: &str) -> Result<Selector, String> {
        let mut requirements = Vec::new();
        for term in split_terms(text) {
            match Self::parse_equality(term)? {
                r @ (Requirement::Equals(..) | Requirement::NotEquals(..)) => requirements.push(r),
                _ => return Err(format!("invalid field selector: {term:?}")),
            }
        }
        Ok(Selector { requirements })
    }

    /// Whether a label map satisfies every requirement.
    pub fn matches_labels(&self, labels: &BTreeMap<String, String>) -> bool {
        self.matches(|k| labels.get(k).cloned())
    }

    /// Whether an object's fields (dotted paths) satisfy every requirement.
    pub fn matches_fields(&self, object: &Value) -> bool {
        self.matches(|path| {
            let pointer = format!("/{}", path.replace('.', "/"));
            match object.pointer(&pointer) {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Null) | None => Some(String::new()),
                Some(other) => Some(other.to_string()),
            }
        })
    }

    fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::Equals(k, v) => get(k).as_deref() == Some(v.as_str()),
            Requirement::NotEquals(k, v) => get(k).as_deref() != Some(v.as_str()),
            Requirement::In(k, vs) => get(k).is_some_and(|x| vs.contains(&x)),
            Requirement::NotIn(k, vs) => get(k).is_none_or(|x| !vs.contains(&x)),
            Requirement::Exists(k) => get(k).is_some(),
            Requirement::DoesNotExist(k) => get(k).is_none(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn label_selectors_match_as_upstream() {
        let l = labels(&[("app", "web"), ("tier", "front")]);
        let cases = [
            ("app=web", true),
            ("app==web", true),
            ("app!=web", false),
            ("app=db", false),
            ("app in (db, web)", true),
            ("app notin (db,web)", false),
            ("missing notin (x)", true),
            ("tier,app=web", true),
            ("!tier", false),
            ("!missing", true),
            ("app=web,tier in (back)", false),
            ("", true),
        ];
        let failures: Vec<String> = cases
            .iter()
            .filter(|(text, want)| {
                Selector::parse_labels(text).map(|s| s.matches_labels(&l)) != Ok(*want)
            })
            .map(|(text, want)| format!("{text}: want {want}"))
            .collect();
        assert!(failures.is_empty(), "{failures:?}");
    }

    #[test]
    fn bad_selectors_are_errors() {
        assert!(Selector::parse_labels("app in web").is_err());
        assert!(Selector::parse_fields("spec.nodeName").is_err());
    }

    #[test]
    fn field_selectors_read_dotted_paths() {
        let pod = serde_json::json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"}});
        let s = Selector::parse_fields("metadata.name=p,spec.nodeName!=n2").expect("parses");
        assert!(s.matches_fields(&pod));
        let s = Selector::parse_fields("spec.nodeName=").expect("parses");
        assert!(!s.matches_fields(&pod));
    }
}
