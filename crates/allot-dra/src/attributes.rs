//! Attribute lookup and the `matchAttribute` / `distinctAttribute` claim constraints.
//!
//! Without `DRAListTypeAttributes` values compare as scalars (a list value never matches).
//! With it, every value is a set (a scalar is a one-element set): `matchAttribute` needs a
//! non-empty intersection over all devices, `distinctAttribute` pairwise disjoint sets.

use std::collections::BTreeMap;

use allot_api::resource::v1::DeviceAttribute;

/// One attribute value, normalised for comparisons.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Value {
    Bool(bool),
    Int(i64),
    Str(String),
    Version(String),
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Value::Bool(v) => write!(f, "{v}"),
            Value::Int(v) => write!(f, "{v}"),
            Value::Str(v) => write!(f, "{v:?}"),
            Value::Version(v) => write!(f, "version {v}"),
        }
    }
}

/// An attribute as a set of values; `None` for an attribute with no value of a known type.
pub(crate) fn as_set(attribute: &DeviceAttribute) -> Option<Vec<Value>> {
    let mut values: Vec<Value> = Vec::new();
    if let Some(v) = attribute.bool_value {
        values.push(Value::Bool(v));
    } else if let Some(v) = attribute.int_value {
        values.push(Value::Int(v));
    } else if let Some(v) = &attribute.string_value {
        values.push(Value::Str(v.clone()));
    } else if let Some(v) = &attribute.version_value {
        values.push(Value::Version(v.clone()));
    } else if !attribute.bool_values.is_empty() {
        values.extend(attribute.bool_values.iter().copied().map(Value::Bool));
    } else if !attribute.int_values.is_empty() {
        values.extend(attribute.int_values.iter().copied().map(Value::Int));
    } else if !attribute.string_values.is_empty() {
        values.extend(attribute.string_values.iter().cloned().map(Value::Str));
    } else if !attribute.version_values.is_empty() {
        values.extend(attribute.version_values.iter().cloned().map(Value::Version));
    } else {
        return None;
    }
    values.sort();
    values.dedup();
    Some(values)
}

/// The scalar value of an attribute, `None` for lists and empty attributes.
fn as_scalar(attribute: &DeviceAttribute) -> Option<Value> {
    if let Some(v) = &attribute.string_value {
        Some(Value::Str(v.clone()))
    } else if let Some(v) = attribute.int_value {
        Some(Value::Int(v))
    } else if let Some(v) = attribute.bool_value {
        Some(Value::Bool(v))
    } else {
        attribute
            .version_value
            .as_ref()
            .map(|v| Value::Version(v.clone()))
    }
}

/// Looks up a fully qualified attribute name on a device of `driver`: the exact name first,
/// then, when the domain is the driver's, the bare identifier.
pub(crate) fn lookup<'a>(
    attributes: &'a BTreeMap<String, DeviceAttribute>,
    driver: &str,
    name: &str,
) -> Option<&'a DeviceAttribute> {
    if let Some(attribute) = attributes.get(name) {
        return Some(attribute);
    }
    // The domain is what precedes the first '/': `name` is `driver/id` exactly when it starts
    // with the driver and a '/' and the driver itself has no '/'.
    let id = name.strip_prefix(driver)?.strip_prefix('/')?;
    if driver.contains('/') {
        return None;
    }
    attributes.get(id)
}

fn intersect(a: &[Value], b: &[Value]) -> Vec<Value> {
    a.iter()
        .filter(|value| b.contains(value))
        .cloned()
        .collect()
}

fn disjoint(a: &[Value], b: &[Value]) -> bool {
    a.iter().all(|value| !b.contains(value))
}

/// The running state of one claim constraint during the search.
#[derive(Debug, Clone)]
pub(crate) struct Constraint {
    /// Requests (or `request/subrequest`) the constraint applies to; empty means all.
    pub requests: Vec<String>,
    /// The fully qualified attribute name.
    pub attribute: String,
    pub kind: ConstraintKind,
    list_semantics: bool,
    /// Per added device: the value set it contributed (list semantics) or its scalar.
    added: Vec<Added>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConstraintKind {
    Match,
    Distinct,
}

#[derive(Debug, Clone)]
enum Added {
    /// Scalar mode: the attribute (kept whole: a list or empty value is "unknown type").
    Scalar(Option<Value>),
    /// List mode: the device's value set, plus (for match) the intersection after adding it.
    Set {
        values: Option<Vec<Value>>,
        running: Vec<Value>,
    },
}

impl Constraint {
    pub fn new(
        kind: ConstraintKind,
        attribute: String,
        requests: Vec<String>,
        list_semantics: bool,
    ) -> Self {
        Self {
            requests,
            attribute,
            kind,
            list_semantics,
            added: Vec::new(),
        }
    }

    /// Whether the constraint applies to a device picked for `request` (and `subrequest`).
    pub fn applies(&self, request: &str, subrequest: Option<&str>) -> bool {
        if self.requests.is_empty() {
            return true;
        }
        self.requests.iter().any(|name| match subrequest {
            None => name == request,
            Some(sub) => {
                name == request
                    || (name.len() == request.len() + 1 + sub.len()
                        && name.starts_with(request)
                        && name.as_bytes()[request.len()] == b'/'
                        && name.ends_with(sub))
            }
        })
    }

    /// Number of devices currently in the set.
    pub fn len(&self) -> usize {
        self.added.len()
    }

    /// Whether a device with `attribute` (looked up already) may join; does not change state.
    /// A shared device picked a second time is compared with itself like any other device
    /// (upstream's table: one shared device cannot satisfy a distinct constraint twice).
    pub fn admits(&self, attribute: Option<&DeviceAttribute>) -> bool {
        let Some(attribute) = attribute else {
            return false;
        };
        if self.list_semantics {
            let Some(values) = as_set(attribute) else {
                return false;
            };
            match self.kind {
                ConstraintKind::Match => match self.added.last() {
                    Some(Added::Set { running, .. }) => !intersect(running, &values).is_empty(),
                    _ => true,
                },
                ConstraintKind::Distinct => self.added.iter().all(|added| match added {
                    Added::Set {
                        values: Some(existing),
                        ..
                    } => disjoint(existing, &values),
                    _ => true,
                }),
            }
        } else {
            let value = as_scalar(attribute);
            match self.kind {
                ConstraintKind::Match => match self.added.first() {
                    None => true,
                    Some(Added::Scalar(first)) => value.is_some() && &value == first,
                    Some(Added::Set { .. }) => false,
                },
                ConstraintKind::Distinct => {
                    if self.added.is_empty() {
                        return true;
                    }
                    // A value of unknown type (a list, or nothing) cannot be compared.
                    let Some(value) = value else {
                        return false;
                    };
                    self.added.iter().all(|added| match added {
                        Added::Scalar(Some(existing)) => existing != &value,
                        _ => true,
                    })
                }
            }
        }
    }

    /// Adds a device (which [`Constraint::admits`] accepted).
    pub fn add(&mut self, attribute: &DeviceAttribute) {
        if self.list_semantics {
            let values = as_set(attribute);
            let running = match (self.kind, self.added.last(), &values) {
                (ConstraintKind::Match, Some(Added::Set { running, .. }), Some(values)) => {
                    intersect(running, values)
                }
                (ConstraintKind::Match, None, Some(values)) => values.clone(),
                _ => Vec::new(),
            };
            self.added.push(Added::Set { values, running });
        } else {
            self.added.push(Added::Scalar(as_scalar(attribute)));
        }
    }

    /// Removes the device added last.
    pub fn remove(&mut self) {
        self.added.pop();
    }

    /// For a match constraint that already has devices: the values a new device must share
    /// (list semantics: any of them; scalar semantics: exactly the one).
    pub fn required_values(&self) -> Option<&[Value]> {
        if self.kind != ConstraintKind::Match {
            return None;
        }
        match self.added.last()? {
            Added::Set { running, .. } => Some(running),
            Added::Scalar(_) => match self.added.first() {
                Some(Added::Scalar(Some(value))) => Some(std::slice::from_ref(value)),
                _ => Some(&[]),
            },
        }
    }

    /// Whether values of this attribute are compared as sets.
    pub fn list_semantics(&self) -> bool {
        self.list_semantics
    }
}

/// The values by which a device can satisfy a match constraint: its set (list semantics) or
/// its scalar.
pub(crate) fn match_keys(attribute: &DeviceAttribute, list_semantics: bool) -> Vec<Value> {
    if list_semantics {
        as_set(attribute).unwrap_or_default()
    } else {
        as_scalar(attribute).into_iter().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(values: &[&str]) -> DeviceAttribute {
        DeviceAttribute {
            string_values: values.iter().map(|v| v.to_string()).collect(),
            ..Default::default()
        }
    }

    fn string(value: &str) -> DeviceAttribute {
        DeviceAttribute {
            string_value: Some(value.to_string()),
            ..Default::default()
        }
    }

    #[test]
    fn match_with_lists_needs_a_common_element_across_all() {
        let mut c = Constraint::new(ConstraintKind::Match, "d/a".into(), vec![], true);
        assert!(c.admits(Some(&string("v1"))));
        c.add(&string("v1"));
        assert!(c.admits(Some(&strings(&["v1", "v2"]))));
        c.add(&strings(&["v1", "v2"]));
        assert!(!c.admits(Some(&strings(&["v2", "v3"]))));
        c.remove();
        c.remove();
        assert!(c.admits(Some(&strings(&["v2", "v3"]))));
    }

    #[test]
    fn scalar_match_rejects_lists_after_the_first_device() {
        let mut c = Constraint::new(ConstraintKind::Match, "d/a".into(), vec![], false);
        assert!(c.admits(Some(&strings(&["v1"]))));
        c.add(&strings(&["v1"]));
        assert!(!c.admits(Some(&strings(&["v1"]))));
        assert!(!c.admits(None));
    }

    #[test]
    fn distinct_with_lists_needs_pairwise_disjoint_sets() {
        let mut c = Constraint::new(ConstraintKind::Distinct, "d/a".into(), vec![], true);
        c.add(&strings(&["a", "b"]));
        assert!(c.admits(Some(&strings(&["c"]))));
        assert!(!c.admits(Some(&strings(&["b", "c"]))));
        assert!(!c.admits(Some(&DeviceAttribute::default())));
    }

    #[test]
    fn applies_to_requests_and_subrequests() {
        let c = Constraint::new(
            ConstraintKind::Match,
            "d/a".into(),
            vec!["r1".into(), "r2/s1".into()],
            false,
        );
        assert!(c.applies("r1", None));
        assert!(c.applies("r1", Some("x")));
        assert!(c.applies("r2", Some("s1")));
        assert!(!c.applies("r2", Some("s2")));
        assert!(!c.applies("r2", None));
    }

    #[test]
    fn lookup_falls_back_to_the_bare_identifier_of_the_driver_domain() {
        let mut attributes = BTreeMap::new();
        attributes.insert("numa".to_string(), string("0"));
        assert!(lookup(&attributes, "gpu.example.com", "gpu.example.com/numa").is_some());
        assert!(lookup(&attributes, "gpu.example.com", "other.example.com/numa").is_none());
        assert!(lookup(&attributes, "gpu.example.com", "gpu.example.comx/numa").is_none());
        assert!(lookup(&attributes, "gpu.example.com", "gpu.example.com").is_none());
        // A driver with a '/' is never a domain: the domain ends at the first '/'.
        attributes.insert("c/numa".to_string(), string("1"));
        assert!(lookup(&attributes, "a/b", "a/b/c/numa").is_none());
        attributes.insert("x".to_string(), string("2"));
        assert!(lookup(&attributes, "a/b", "a/b/x").is_none());
    }
}
