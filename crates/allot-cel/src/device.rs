//! The `device` variable: built once per device, lent to every evaluation.

use crate::values::{QuantityVal, SemverVal, parse_semver};
use allot_quantity::Quantity;
use cel::ExecutionError;
use cel::common::traits::{Container, Indexer, Iterable, Sizer};
use cel::common::types::{CelBool, CelInt, CelList, CelMap, CelMapKey, CelString, Type};
use cel::common::value::{CowVal, StaticVal, Val};
use std::any::Any;
use std::collections::HashMap;

/// The value of a device attribute (`resource.k8s.io` `DeviceAttribute`), including the
/// list-typed values of `DRAListTypeAttributes`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttributeValue {
    /// `int`.
    Int(i64),
    /// `bool`.
    Bool(bool),
    /// `string`.
    String(String),
    /// `version`: a semantic version string, exposed to CEL as a `kubernetes.Semver`.
    Version(String),
    /// `ints`.
    IntList(Vec<i64>),
    /// `bools`.
    BoolList(Vec<bool>),
    /// `strings`.
    StringList(Vec<String>),
    /// `versions`.
    VersionList(Vec<String>),
}

/// A device as the CEL environment sees it. Build it once per device and evaluate any number of
/// compiled expressions against it.
///
/// Qualified names without a domain (`"model"`) belong to the driver's domain, as upstream's
/// `parseQualifiedName`.
#[derive(Debug)]
pub struct CelDevice {
    pub(crate) val: DeviceVal,
    /// The first attribute whose value cannot be represented (an unparsable version): every
    /// evaluation on this device fails with it, as upstream's conversion does.
    pub(crate) invalid: Option<(String, String)>,
    /// Attributes as plain values for the fast path: (domain, name, value).
    pub(crate) native_attributes: Vec<(String, String, Native)>,
    /// Capacities as plain values for the fast path: (domain, name, value).
    pub(crate) native_capacity: Vec<(String, String, Quantity)>,
}

/// A scalar attribute value as the fast path reads it.
#[derive(Debug, Clone)]
pub(crate) enum Native {
    Int(i64),
    Bool(bool),
    Str(String),
    Version(SemverVal),
    /// A list: the fast path leaves it to the interpreter.
    List,
}

/// Inserts or replaces `(domain, name) → value`.
fn set_native<T>(entries: &mut Vec<(String, String, T)>, domain: &str, name: &str, value: T) {
    match entries
        .iter_mut()
        .find(|(d, n, _)| d == domain && n == name)
    {
        Some(entry) => entry.2 = value,
        None => entries.push((domain.to_string(), name.to_string(), value)),
    }
}

impl CelDevice {
    /// A device of `driver` without attributes or capacity.
    pub fn new(driver: &str, allow_multiple_allocations: bool) -> Self {
        CelDevice {
            val: DeviceVal {
                driver: CelString::from(driver.to_string()),
                driver_name: driver.to_string(),
                attributes: DomainMap::default(),
                capacity: DomainMap::default(),
                allow_multiple_allocations: CelBool::from(allow_multiple_allocations),
            },
            invalid: None,
            native_attributes: Vec::new(),
            native_capacity: Vec::new(),
        }
    }

    /// Adds an attribute by qualified name (`"domain/name"` or `"name"`).
    pub fn attribute(mut self, qualified_name: &str, value: AttributeValue) -> Self {
        match attribute_val(&value) {
            Ok(v) => {
                let (domain, id) = split_qualified_name(qualified_name, &self.val.driver_name);
                let native = match &value {
                    AttributeValue::Int(i) => Native::Int(*i),
                    AttributeValue::Bool(b) => Native::Bool(*b),
                    AttributeValue::String(s) => Native::Str(s.clone()),
                    AttributeValue::Version(_) => match v.downcast_ref::<SemverVal>() {
                        Some(sv) => Native::Version(sv.clone()),
                        None => Native::List,
                    },
                    _ => Native::List,
                };
                set_native(&mut self.native_attributes, domain, id, native);
                self.val.attributes.insert(domain, id, v);
            }
            Err(message) => {
                if self.invalid.is_none() {
                    self.invalid = Some((qualified_name.to_string(), message));
                }
            }
        }
        self
    }

    /// Adds a capacity by qualified name (`"domain/name"` or `"name"`).
    pub fn capacity(mut self, qualified_name: &str, value: Quantity) -> Self {
        let (domain, id) = split_qualified_name(qualified_name, &self.val.driver_name);
        set_native(&mut self.native_capacity, domain, id, value.clone());
        self.val
            .capacity
            .insert(domain, id, Box::new(QuantityVal(value)));
        self
    }

    /// The driver name.
    pub fn driver(&self) -> &str {
        &self.val.driver_name
    }

    /// Whether the device allows multiple allocations.
    pub fn allow_multiple_allocations(&self) -> bool {
        *self.val.allow_multiple_allocations.inner()
    }
}

/// Splits a qualified name into domain and name; a name without a domain gets `driver`'s.
fn split_qualified_name<'a>(name: &'a str, driver: &'a str) -> (&'a str, &'a str) {
    match name.split_once('/') {
        Some((domain, id)) => (domain, id),
        None => (driver, name),
    }
}

fn version_val(text: &str) -> Result<Box<dyn Val>, String> {
    parse_semver(text, false)
        .map(|v| Box::new(SemverVal(v)) as Box<dyn Val>)
        .map_err(|e| format!("parse semantic version: {e}"))
}

fn attribute_val(value: &AttributeValue) -> Result<Box<dyn Val>, String> {
    let list = |items: Vec<Box<dyn Val>>| Box::new(CelList::from(items)) as Box<dyn Val>;
    Ok(match value {
        AttributeValue::Int(i) => Box::new(CelInt::from(*i)),
        AttributeValue::Bool(b) => Box::new(CelBool::from(*b)),
        AttributeValue::String(s) => Box::new(CelString::from(s.clone())),
        AttributeValue::Version(v) => version_val(v)?,
        AttributeValue::IntList(items) => list(
            items
                .iter()
                .map(|i| Box::new(CelInt::from(*i)) as Box<dyn Val>)
                .collect(),
        ),
        AttributeValue::BoolList(items) => list(
            items
                .iter()
                .map(|b| Box::new(CelBool::from(*b)) as Box<dyn Val>)
                .collect(),
        ),
        AttributeValue::StringList(items) => list(
            items
                .iter()
                .map(|s| Box::new(CelString::from(s.clone())) as Box<dyn Val>)
                .collect(),
        ),
        AttributeValue::VersionList(items) => list(
            items
                .iter()
                .map(|v| version_val(v))
                .collect::<Result<Vec<_>, _>>()?,
        ),
    })
}

static DEVICE_TYPE: Type = Type::new_unspecified_type("kubernetes.DRADevice");
static DOMAIN_MAP_TYPE: Type = Type::new_unspecified_type("map");

/// The names of the fields of `device`.
pub(crate) const DEVICE_FIELDS: [&str; 4] = [
    "driver",
    "attributes",
    "capacity",
    "allowMultipleAllocations",
];

/// The `device` variable: a struct-like value with four fields.
#[derive(Debug, Clone)]
pub(crate) struct DeviceVal {
    driver: CelString<'static>,
    driver_name: String,
    attributes: DomainMap,
    capacity: DomainMap,
    allow_multiple_allocations: CelBool,
}

impl Val for DeviceVal {
    fn get_type(&self) -> &Type {
        &DEVICE_TYPE
    }

    fn cel_type() -> &'static Type {
        &DEVICE_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for DeviceVal {}

fn string_key(idx: &dyn Val) -> Result<&str, ExecutionError> {
    idx.downcast_ref::<CelString>()
        .map(|s| s.inner())
        .ok_or_else(|| ExecutionError::UnexpectedType {
            got: idx.get_type().name().to_owned(),
            want: "string".to_owned(),
        })
}

impl Indexer for DeviceVal {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let key = string_key(idx)?;
        Ok(match key {
            "driver" => CowVal::Borrowed(&self.driver),
            "attributes" => CowVal::Borrowed(&self.attributes),
            "capacity" => CowVal::Borrowed(&self.capacity),
            "allowMultipleAllocations" => CowVal::Borrowed(&self.allow_multiple_allocations),
            other => return Err(ExecutionError::no_such_key(other)),
        })
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

/// `device.attributes` and `device.capacity`: domain → (name → value). Looking up an unknown
/// domain yields an empty map, as upstream's `newStringInterfaceMapWithDefault`, so that the
/// missing *name* is what a runtime error reports and `has()` is false; `in` still tests
/// whether the domain exists.
#[derive(Debug, Clone, Default)]
pub(crate) struct DomainMap {
    /// Domain → names. A device has few domains: a linear scan beats hashing.
    domains: Vec<(String, CelMap<'static>)>,
    /// The domains as CEL strings, in insertion order, for comprehensions over the map.
    keys: Vec<CelString<'static>>,
    empty: CelMap<'static>,
}

impl DomainMap {
    fn insert(&mut self, domain: &str, name: &str, value: Box<dyn Val>) {
        match self.domains.iter_mut().find(|(d, _)| d == domain) {
            Some((_, map)) => {
                let mut inner = std::mem::take(map).into_inner();
                inner.insert(CelMapKey::from(name.to_string()), value);
                *map = CelMap::from(inner);
            }
            None => {
                self.keys.push(CelString::from(domain.to_string()));
                let mut inner = HashMap::new();
                inner.insert(CelMapKey::from(name.to_string()), value);
                self.domains.push((domain.to_string(), CelMap::from(inner)));
            }
        }
    }
}

impl Val for DomainMap {
    fn get_type(&self) -> &Type {
        &DOMAIN_MAP_TYPE
    }

    fn cel_type() -> &'static Type {
        &DOMAIN_MAP_TYPE
    }

    fn as_indexer<'b, 'v>(&'b self) -> Option<&'b (dyn Indexer + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn as_container(&self) -> Option<&dyn Container> {
        Some(self)
    }

    fn as_sizer(&self) -> Option<&dyn Sizer> {
        Some(self)
    }

    fn as_iterable<'b, 'v>(&'b self) -> Option<&'b (dyn Iterable + 'v)>
    where
        Self: 'v,
    {
        Some(self)
    }

    fn clone_as_boxed<'v>(&self) -> Box<dyn Val + 'v> {
        Box::new(self.clone())
    }

    fn as_any(&self) -> Option<&dyn Any> {
        Some(self)
    }
}

impl StaticVal for DomainMap {}

/// Iterates over the domains of a [`DomainMap`].
struct KeyIter<'b>(std::slice::Iter<'b, CelString<'static>>);

impl<'b, 'v> cel::common::traits::Iterator<'b, 'v> for KeyIter<'b> {
    fn next(&mut self) -> Option<&'b (dyn Val + 'v)> {
        self.0.next().map(|k| k as &dyn Val)
    }
}

impl Iterable for DomainMap {
    fn iter<'b, 'v>(&'b self) -> Box<dyn cel::common::traits::Iterator<'b, 'v> + 'b>
    where
        Self: 'v,
    {
        Box::new(KeyIter(self.keys.iter()))
    }
}

impl Indexer for DomainMap {
    fn get<'b, 'v>(&'b self, idx: &dyn Val) -> Result<CowVal<'b, 'v>, ExecutionError>
    where
        Self: 'v,
    {
        let key = string_key(idx)?;
        Ok(CowVal::Borrowed(
            self.domains
                .iter()
                .find(|(d, _)| d == key)
                .map_or(&self.empty, |(_, m)| m),
        ))
    }

    fn steal<'v>(self: Box<Self>, idx: &dyn Val) -> Result<Box<dyn Val + 'v>, ExecutionError>
    where
        Self: 'v,
    {
        self.get(idx).map(CowVal::into_owned)
    }
}

impl Container for DomainMap {
    fn contains(&self, value: &dyn Val) -> Result<bool, ExecutionError> {
        Ok(string_key(value).is_ok_and(|k| self.domains.iter().any(|(d, _)| d == k)))
    }
}

impl Sizer for DomainMap {
    fn size(&self) -> CelInt {
        CelInt::from(self.domains.len() as i64)
    }
}
