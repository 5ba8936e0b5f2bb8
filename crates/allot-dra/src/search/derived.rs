//! Derived attributes (`DRADerivedAttributes`): a request computes a virtual attribute per
//! candidate device with a CEL expression, which its `matchAttribute` / `distinctAttribute`
//! constraints then see instead of a driver attribute of the same name.
//!
//! The spec's rules: the name is a DNS subdomain, `/`, and a C identifier of at most 32
//! characters; at most 32 per request, names unique; each must be used by a constraint that
//! applies to the request; the expressions' estimated costs, summed over the claim, stay within
//! a cap; the value is a scalar, or with `DRAListTypeAttributes` a list of scalars. Evaluation
//! errors abort the allocation rather than skip the device.

use std::rc::Rc;

use allot_api::resource::v1::{
    DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE, DeviceAttribute, DeviceDerivedAttribute,
};
use allot_cel::{AttributeValue, CompileOptions, CompiledExpression};

use crate::attributes::Constraint;

/// One compiled derived attribute of a request.
pub(crate) struct Derived {
    pub name: String,
    pub expression: Rc<CompiledExpression>,
}

/// Longest C identifier in an attribute name.
const IDENTIFIER_MAX_LENGTH: usize = 32;
/// Longest DNS subdomain.
const DOMAIN_MAX_LENGTH: usize = 253;

fn is_c_identifier(id: &str) -> bool {
    let mut chars = id.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_dns_subdomain(domain: &str) -> bool {
    !domain.is_empty()
        && domain.len() <= DOMAIN_MAX_LENGTH
        && domain.split('.').all(|label| {
            let bytes = label.as_bytes();
            !bytes.is_empty()
                && bytes.len() <= 63
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
                && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
                && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        })
}

/// Why a derived attribute name is not `domain/identifier`, if it is not.
pub(crate) fn name_problem(name: &str) -> Option<String> {
    let Some((domain, id)) = name.split_once('/') else {
        return Some("must be a DNS subdomain, a slash and a C identifier".to_string());
    };
    if !is_dns_subdomain(domain) {
        return Some(format!("domain {domain:?} is not a DNS subdomain"));
    }
    if !is_c_identifier(id) {
        return Some(format!("{id:?} is not a C identifier"));
    }
    if id.len() > IDENTIFIER_MAX_LENGTH {
        return Some(format!(
            "identifier {id:?} is longer than {IDENTIFIER_MAX_LENGTH} characters"
        ));
    }
    None
}

/// Checks the static rules for the derived attributes of one (sub)request and compiles them;
/// the error is the reason and the offending name. `cost` accumulates the claim's total.
pub(crate) fn compile(
    attributes: &[DeviceDerivedAttribute],
    constraints: &[Constraint],
    parent: &str,
    sub: Option<&str>,
    cost: &mut u64,
) -> Result<Vec<Derived>, (String, String)> {
    if attributes.len() > DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE {
        return Err((
            String::new(),
            format!(
                "{} derived attributes, at most {DEVICE_DERIVED_ATTRIBUTES_MAX_SIZE} allowed",
                attributes.len()
            ),
        ));
    }
    let mut out: Vec<Derived> = Vec::with_capacity(attributes.len());
    for attribute in attributes {
        let name = attribute.name.clone();
        if let Some(reason) = name_problem(&name) {
            return Err((name, reason));
        }
        if out.iter().any(|d| d.name == name) {
            return Err((name, "defined twice".to_string()));
        }
        if !constraints
            .iter()
            .any(|c| c.attribute == name && c.applies(parent, sub))
        {
            return Err((
                name,
                "not used by any matchAttribute or distinctAttribute constraint of this request"
                    .to_string(),
            ));
        }
        let options = CompileOptions {
            require_bool: false,
            ..CompileOptions::default()
        };
        let expression = allot_cel::compile_with(&attribute.expression, options)
            .map_err(|err| (name.clone(), format!("CEL compile error: {err}")))?;
        *cost = cost.saturating_add(expression.max_cost());
        out.push(Derived {
            name,
            expression: Rc::new(expression),
        });
    }
    Ok(out)
}

/// The claim-wide cap on the summed estimated cost of derived attribute expressions.
pub(crate) const CLAIM_MAX_COST: u64 =
    allot_api::resource::v1::DEVICE_CLAIM_DERIVED_ATTRIBUTE_CEL_MAX_COST;

/// Turns an evaluated value into a device attribute; lists only with list-type attributes.
pub(crate) fn to_attribute(value: AttributeValue, lists: bool) -> Result<DeviceAttribute, String> {
    let mut attribute = DeviceAttribute::default();
    let list_error = |kind: &str| {
        Err(format!(
            "the expression yields a list of {kind}, which needs the DRAListTypeAttributes feature"
        ))
    };
    match value {
        AttributeValue::Int(v) => attribute.int_value = Some(v),
        AttributeValue::Bool(v) => attribute.bool_value = Some(v),
        AttributeValue::String(v) => attribute.string_value = Some(v),
        AttributeValue::Version(v) => attribute.version_value = Some(v),
        AttributeValue::IntList(_) if !lists => return list_error("ints"),
        AttributeValue::BoolList(_) if !lists => return list_error("bools"),
        AttributeValue::StringList(_) if !lists => return list_error("strings"),
        AttributeValue::VersionList(_) if !lists => return list_error("versions"),
        AttributeValue::IntList(v) => attribute.int_values = v,
        AttributeValue::BoolList(v) => attribute.bool_values = v,
        AttributeValue::StringList(v) => attribute.string_values = v,
        AttributeValue::VersionList(v) => attribute.version_values = v,
    }
    Ok(attribute)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_the_attribute_name_format() {
        assert_eq!(name_problem("derived/numa"), None);
        assert_eq!(name_problem("example.com/numaNode"), None);
        assert!(name_problem("numa").is_some());
        assert!(name_problem("Derived/numa").is_some());
        assert!(name_problem("derived/9numa").is_some());
        assert!(name_problem("derived/numa-node").is_some());
        assert!(name_problem(&format!("derived/{}", "a".repeat(33))).is_some());
    }

    #[test]
    fn lists_need_the_list_gate() {
        assert!(to_attribute(AttributeValue::IntList(vec![1]), false).is_err());
        let attribute = to_attribute(AttributeValue::IntList(vec![1]), true).unwrap();
        assert_eq!(attribute.int_values, vec![1]);
        let attribute = to_attribute(AttributeValue::Int(3), false).unwrap();
        assert_eq!(attribute.int_value, Some(3));
    }
}
