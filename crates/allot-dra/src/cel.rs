//! The bridge to `allot-cel`: a compile cache shared across calls, and one CEL view per device.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;

use allot_api::resource::v1::{Device, DeviceAttribute};
use allot_cel::{AttributeValue, CelDevice, CompiledExpression};

/// Compiled CEL expressions by source text, kept across allocation calls (upstream's
/// `cel.Cache`). Compile errors are cached too.
#[derive(Default)]
pub struct CelCache {
    compiled: RefCell<HashMap<String, Rc<Result<CompiledExpression, String>>>>,
}

impl std::fmt::Debug for CelCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CelCache").field("entries", &self.compiled.borrow().len()).finish()
    }
}

impl CelCache {
    /// The compiled form of `expression`, compiling it on first use.
    pub(crate) fn get(&self, expression: &str) -> Rc<Result<CompiledExpression, String>> {
        if let Some(hit) = self.compiled.borrow().get(expression) {
            return Rc::clone(hit);
        }
        let compiled = Rc::new(allot_cel::compile(expression).map_err(|err| err.to_string()));
        self.compiled.borrow_mut().insert(expression.to_string(), Rc::clone(&compiled));
        compiled
    }
}

fn attribute_value(attribute: &DeviceAttribute) -> Option<AttributeValue> {
    Some(if let Some(v) = attribute.bool_value {
        AttributeValue::Bool(v)
    } else if let Some(v) = attribute.int_value {
        AttributeValue::Int(v)
    } else if let Some(v) = &attribute.string_value {
        AttributeValue::String(v.clone())
    } else if let Some(v) = &attribute.version_value {
        AttributeValue::Version(v.clone())
    } else if !attribute.bool_values.is_empty() {
        AttributeValue::BoolList(attribute.bool_values.clone())
    } else if !attribute.int_values.is_empty() {
        AttributeValue::IntList(attribute.int_values.clone())
    } else if !attribute.string_values.is_empty() {
        AttributeValue::StringList(attribute.string_values.clone())
    } else if !attribute.version_values.is_empty() {
        AttributeValue::VersionList(attribute.version_values.clone())
    } else {
        return None;
    })
}

fn qualified(name: &str, driver: &str) -> String {
    if name.contains('/') { name.to_string() } else { format!("{driver}/{name}") }
}

/// The CEL view of a device: attributes and capacities under fully qualified names. An
/// attribute without a value of a known type is an error, as upstream reports it when the
/// device is converted for CEL.
pub(crate) fn cel_device(driver: &str, device: &Device, multi: bool) -> Result<CelDevice, String> {
    let mut cel = CelDevice::new(driver, multi);
    for (name, attribute) in &device.attributes {
        let Some(value) = attribute_value(attribute) else {
            return Err(format!("attribute {}: unsupported attribute value", qualified(name, driver)));
        };
        cel = cel.attribute(&qualified(name, driver), value);
    }
    for (name, capacity) in &device.capacity {
        cel = cel.capacity(&qualified(name, driver), capacity.value.clone());
    }
    Ok(cel)
}

/// Evaluates a compiled expression against a device.
pub(crate) fn evaluate(expression: &CompiledExpression, device: &CelDevice) -> Result<bool, String> {
    expression.evaluate(device).map_err(|err| err.to_string())
}
