//! The Kubernetes value types of the DRA CEL environment: `kubernetes.Quantity` and
//! `kubernetes.Semver`.

use allot_quantity::Quantity;
use cel::common::types::Type;
use cel::common::value::{StaticVal, Val};
use std::any::Any;
use std::cmp::Ordering;

/// The CEL type name of quantities, as upstream's `apiservercel.QuantityType`.
pub(crate) const QUANTITY_TYPE_NAME: &str = "kubernetes.Quantity";
/// The CEL type name of semantic versions, as upstream's `apiservercel.SemverType`.
pub(crate) const SEMVER_TYPE_NAME: &str = "kubernetes.Semver";

static QUANTITY_TYPE: Type = Type::new_unspecified_type(QUANTITY_TYPE_NAME);
static SEMVER_TYPE: Type = Type::new_unspecified_type(SEMVER_TYPE_NAME);

/// The CEL type of quantities.
pub(crate) fn quantity_type() -> Type {
    Type::new_unspecified_type(QUANTITY_TYPE_NAME)
}

/// The CEL type of semantic versions.
pub(crate) fn semver_type() -> Type {
    Type::new_unspecified_type(SEMVER_TYPE_NAME)
}

/// A quantity as a CEL value; equal when numerically equal.
#[derive(Debug, Clone)]
pub(crate) struct QuantityVal(pub(crate) Quantity);

impl Val for QuantityVal {
    fn get_type(&self) -> &Type {
        &QUANTITY_TYPE
    }

    fn cel_type() -> &'static Type {
        &QUANTITY_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<QuantityVal>()
            .is_some_and(|o| o.0 == self.0)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for QuantityVal {}

/// A semantic version as a CEL value; equality and order ignore build metadata, as
/// blang/semver's `Compare` does.
#[derive(Debug, Clone)]
pub(crate) struct SemverVal(pub(crate) semver::Version);

impl SemverVal {
    /// Semantic-version precedence: major, minor, patch, then pre-release (a version without
    /// one is greater); build metadata is ignored.
    pub(crate) fn compare(&self, other: &SemverVal) -> Ordering {
        let (a, b) = (&self.0, &other.0);
        a.major
            .cmp(&b.major)
            .then(a.minor.cmp(&b.minor))
            .then(a.patch.cmp(&b.patch))
            .then_with(|| match (a.pre.is_empty(), b.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => a.pre.cmp(&b.pre),
            })
    }
}

impl Val for SemverVal {
    fn get_type(&self) -> &Type {
        &SEMVER_TYPE
    }

    fn cel_type() -> &'static Type {
        &SEMVER_TYPE
    }

    fn equals(&self, other: &dyn Val) -> bool {
        other
            .downcast_ref::<SemverVal>()
            .is_some_and(|o| self.compare(o) == Ordering::Equal)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for SemverVal {}

/// Parses a semantic version like blang/semver's `Parse` (strict semver.org 2.0.0), or with
/// upstream's `normalizeAndParse` when `normalize` is set: a leading "v" is dropped, leading
/// zeros are removed from the first three components, and missing minor/patch become 0.
pub(crate) fn parse_semver(text: &str, normalize: bool) -> Result<semver::Version, String> {
    if !normalize {
        return strict_parse(text);
    }
    let s = text.strip_prefix('v').unwrap_or(text);
    let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_string).collect();
    for p in parts.iter_mut() {
        if p.len() > 1 {
            let trimmed = p.trim_start_matches('0');
            *p = if trimmed.is_empty() || !trimmed.starts_with(|c: char| c.is_ascii_digit()) {
                format!("0{trimmed}")
            } else {
                trimmed.to_string()
            };
        }
    }
    if parts.len() < 3 {
        if parts
            .last()
            .is_some_and(|p| p.contains('+') || p.contains('-'))
        {
            return Err("short version cannot contain PreRelease/Build meta data".to_string());
        }
        while parts.len() < 3 {
            parts.push("0".to_string());
        }
    }
    strict_parse(&parts.join("."))
}

fn strict_parse(text: &str) -> Result<semver::Version, String> {
    if text.is_empty() {
        return Err("Version string empty".to_string());
    }
    semver::Version::parse(text).map_err(|e| e.to_string())
}
