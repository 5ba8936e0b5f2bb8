//! Static checks and cost estimation over cel-rust's parsed (macro-expanded) AST.
//!
//! cel-rust has no type checker and no cost estimator, so this module does both in one pass,
//! following cel-go's checker and `checker/cost.go` with Kubernetes' `library.CostEstimator` and
//! the DRA size estimator (`dynamic-resource-allocation/cel/compile.go`) as closely as the DRA
//! environment needs. The result matches the worst-case costs in upstream's `compile_test.go`
//! table for the expressions found there. What it approximates:
//!
//! - Types are inferred only as far as cost and the checks below need: `device` and its fields,
//!   literals, operators, and the result types of the library functions. Attribute values are
//!   `dyn` (as upstream, whose attribute type is "any"), so most type errors on them surface at
//!   runtime, as upstream.
//! - Checks: undeclared identifiers and functions, unknown `device` fields, logical operators and
//!   conditions on non-bool operands, library member functions on receivers of a known wrong
//!   type, and a result type other than bool or dyn.
//! - Sizes: driver names ≤ 63, domains ≤ 63, attribute/capacity names ≤ 32, ≤ 32 entries per map
//!   (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`), attribute values (strings or lists)
//!   ≤ 64 elements, `includes` over ≤ 48 values (`ResourceSliceMaxAttributeValuesPerDevice`).
//!   Literals have their own size; a size that cannot be bounded is unbounded, and any cost
//!   multiplied by it saturates (so the expression exceeds the limit, as in cel-go).
//! - Per-call costs: identifiers and field selections 1, literals 0, list literals 10 and map
//!   literals 30 plus their elements, `&&`/`||` 0, conditionals the condition plus the dearer
//!   branch, string comparisons `ceil(0.1 × shorter length)`, other comparisons and arithmetic 1,
//!   `in` on a list its length, regular expressions `ceil(0.1 × string) × ceil(0.25 × pattern)`,
//!   `split` `ceil(0.2 × length)`, other string functions `ceil(0.1 × length)`, list library
//!   functions the list length, `includes` 48, other calls 1; comprehensions cost their range,
//!   initializer and result plus the range size times (condition + step).

use crate::CelError;
use cel::common::ast::{Expr, IdedExpr, LiteralValue};
use std::collections::HashMap;

/// An unbounded size.
const UNBOUNDED: u64 = u64::MAX;

/// Maximum length of a driver name (`DriverNameMaxLength`).
const DRIVER_MAX: u64 = 63;
/// Maximum length of an attribute domain (`DeviceMaxDomainLength`).
const DOMAIN_MAX: u64 = 63;
/// Maximum length of an attribute or capacity name (`DeviceMaxIDLength`).
const ID_MAX: u64 = 32;
/// Maximum entries per attribute/capacity map (`ResourceSliceMaxAttributesAndCapacitiesPerDevice`).
const MAP_MAX: u64 = 32;
/// Maximum size of an attribute value: string length or list length (the larger of
/// `DeviceAttributeMaxValueLength` and `ResourceSliceMaxAttributeValuesPerDevice`).
const ATTRIBUTE_MAX: u64 = 64;
/// The cost of `includes` (`ResourceSliceMaxAttributeValuesPerDevice`).
const INCLUDES_COST: u64 = 48;

/// The statically known type of an expression.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Ty {
    Dyn,
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    List(Box<Ty>),
    Map(Box<Ty>, Box<Ty>),
    Quantity,
    Semver,
    Device,
    /// `device.attributes` (`false`) or `device.capacity` (`true`).
    Domains(bool),
    /// One domain of `device.attributes` (`false`) or `device.capacity` (`true`).
    Names(bool),
}

impl Ty {
    /// The name cel-go uses in messages.
    pub(crate) fn name(&self) -> String {
        match self {
            Ty::Dyn => "dyn".into(),
            Ty::Bool => "bool".into(),
            Ty::Int => "int".into(),
            Ty::Uint => "uint".into(),
            Ty::Double => "double".into(),
            Ty::String => "string".into(),
            Ty::Bytes => "bytes".into(),
            Ty::Null => "null_type".into(),
            Ty::List(e) => format!("list({})", e.name()),
            Ty::Map(k, v) => format!("map({}, {})", k.name(), v.name()),
            Ty::Quantity => "kubernetes.Quantity".into(),
            Ty::Semver => "kubernetes.Semver".into(),
            Ty::Device => "kubernetes.DRADevice".into(),
            Ty::Domains(false) => "map(string, map(string, any))".into(),
            Ty::Domains(true) => "map(string, map(string, kubernetes.Quantity))".into(),
            Ty::Names(false) => "map(string, any)".into(),
            Ty::Names(true) => "map(string, kubernetes.Quantity)".into(),
        }
    }

    fn is(&self, other: &Ty) -> bool {
        *self == Ty::Dyn || self == other
    }
}

/// What the analysis knows about an expression.
#[derive(Debug, Clone)]
pub(crate) struct Info {
    pub(crate) ty: Ty,
    /// Maximum size: string length, list or map entries.
    pub(crate) size: u64,
    /// Maximum cost of evaluating it.
    pub(crate) cost: u64,
}

impl Info {
    fn new(ty: Ty, size: u64, cost: u64) -> Self {
        Info { ty, size, cost }
    }
}

/// `ceil(factor × size)`, saturating.
fn scaled(size: u64, factor: f64) -> u64 {
    if size == UNBOUNDED {
        return UNBOUNDED;
    }
    let v = (size as f64 * factor).ceil();
    if v >= u64::MAX as f64 {
        UNBOUNDED
    } else {
        v as u64
    }
}

/// Element type and size of iterating over a value of this type.
fn iteration(info: &Info) -> (Ty, u64) {
    match &info.ty {
        Ty::List(e) => ((**e).clone(), elem_size(e)),
        Ty::Map(k, _) => ((**k).clone(), UNBOUNDED),
        Ty::Domains(_) => (Ty::String, DOMAIN_MAX),
        Ty::Names(_) => (Ty::String, ID_MAX),
        _ => (Ty::Dyn, ATTRIBUTE_MAX),
    }
}

/// The maximum size of an element of this type, where known.
fn elem_size(ty: &Ty) -> u64 {
    match ty {
        Ty::Dyn => ATTRIBUTE_MAX,
        _ => UNBOUNDED,
    }
}

/// Function names the environment declares (besides operators), for undeclared-reference checks.
const KNOWN_FUNCTIONS: &[&str] = &[
    // Standard library.
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "int",
    "uint",
    "double",
    "string",
    "bytes",
    "bool",
    "type",
    "dyn",
    "duration",
    "timestamp",
    "getFullYear",
    "getMonth",
    "getDayOfYear",
    "getDayOfMonth",
    "getDate",
    "getDayOfWeek",
    "getHours",
    "getMinutes",
    "getSeconds",
    "getMilliseconds",
    "max",
    "min",
    "has",
    // Strings extension.
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "replace",
    "split",
    "substring",
    "trim",
    "join",
    "format",
    "strings.quote",
    "reverse",
    // Kubernetes libraries.
    "quantity",
    "isQuantity",
    "sign",
    "isGreaterThan",
    "isLessThan",
    "compareTo",
    "add",
    "sub",
    "isInteger",
    "asInteger",
    "asApproximateFloat",
    "semver",
    "isSemver",
    "major",
    "minor",
    "patch",
    "includes",
    "isSorted",
    "sum",
    "find",
    "findAll",
];

/// The analysis of one expression.
pub(crate) struct Analyzer<'a> {
    source: &'a cel::Program,
    scopes: Vec<HashMap<String, Info>>,
}

impl<'a> Analyzer<'a> {
    pub(crate) fn new(source: &'a cel::Program) -> Self {
        Analyzer {
            source,
            scopes: Vec::new(),
        }
    }

    fn position(&self, id: u64) -> (u32, u32) {
        self.source.source_info().offset_for(id).unwrap_or((1, 1))
    }

    fn undeclared(&self, id: u64, name: &str) -> CelError {
        let (line, column) = self.position(id);
        CelError::UndeclaredReference {
            name: name.to_string(),
            line,
            column,
        }
    }

    fn no_overload(&self, id: u64, function: &str, args: &[&Ty]) -> CelError {
        let (line, column) = self.position(id);
        CelError::NoMatchingOverload {
            function: function.to_string(),
            argument_types: args.iter().map(|t| t.name()).collect(),
            line,
            column,
        }
    }

    fn lookup(&self, name: &str) -> Option<&Info> {
        self.scopes.iter().rev().find_map(|s| s.get(name))
    }

    /// Analyzes an expression.
    pub(crate) fn analyze(&mut self, e: &IdedExpr) -> Result<Info, CelError> {
        match &e.expr {
            Expr::Unspecified => Ok(Info::new(Ty::Dyn, UNBOUNDED, 0)),
            Expr::Literal(l) => Ok(match l {
                LiteralValue::Boolean(_) => Info::new(Ty::Bool, 0, 0),
                LiteralValue::Int(_) => Info::new(Ty::Int, 0, 0),
                LiteralValue::UInt(_) => Info::new(Ty::Uint, 0, 0),
                LiteralValue::Double(_) => Info::new(Ty::Double, 0, 0),
                LiteralValue::Null => Info::new(Ty::Null, 0, 0),
                LiteralValue::String(s) => Info::new(Ty::String, s.chars().count() as u64, 0),
                LiteralValue::Bytes(b) => Info::new(Ty::Bytes, b.len() as u64, 0),
            }),
            Expr::Ident(name) => {
                if let Some(info) = self.lookup(name) {
                    let mut info = info.clone();
                    info.cost = 1;
                    return Ok(info);
                }
                if name == "device" {
                    return Ok(Info::new(Ty::Device, 4, 1));
                }
                Err(self.undeclared(e.id, name))
            }
            Expr::Select(select) => {
                let operand = self.analyze(&select.operand)?;
                let cost = operand.cost.saturating_add(1);
                if select.test {
                    if operand.ty == Ty::Device && !is_device_field(&select.field) {
                        return Err(self.undefined_field(e.id, &select.field));
                    }
                    return Ok(Info::new(Ty::Bool, 0, cost));
                }
                let mut info = self.member(e.id, &operand, Some(&select.field))?;
                info.cost = cost;
                Ok(info)
            }
            Expr::List(list) => {
                let mut cost: u64 = 10;
                let mut elem: Option<Ty> = None;
                for item in &list.elements {
                    let info = self.analyze(item)?;
                    cost = cost.saturating_add(info.cost);
                    elem = Some(match elem {
                        None => info.ty,
                        Some(t) if t == info.ty => t,
                        Some(_) => Ty::Dyn,
                    });
                }
                Ok(Info::new(
                    Ty::List(Box::new(elem.unwrap_or(Ty::Dyn))),
                    list.elements.len() as u64,
                    cost,
                ))
            }
            Expr::Map(map) => {
                let mut cost: u64 = 30;
                for entry in &map.entries {
                    if let cel::common::ast::EntryExpr::MapEntry(m) = &entry.expr {
                        cost = cost
                            .saturating_add(self.analyze(&m.key)?.cost)
                            .saturating_add(self.analyze(&m.value)?.cost);
                    }
                }
                Ok(Info::new(
                    Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)),
                    map.entries.len() as u64,
                    cost,
                ))
            }
            Expr::Struct(s) => Err(self.undeclared(e.id, &s.type_name)),
            Expr::Comprehension(c) => {
                let range = self.analyze(&c.iter_range)?;
                let init = self.analyze(&c.accu_init)?;
                let (elem, elem_size) = iteration(&range);
                let n = match &range.ty {
                    Ty::List(_) | Ty::Map(..) | Ty::Domains(_) | Ty::Names(_) => range.size,
                    _ => ATTRIBUTE_MAX,
                };
                let mut scope = HashMap::new();
                scope.insert(c.iter_var.clone(), Info::new(elem, elem_size, 1));
                if let Some(v2) = &c.iter_var2 {
                    scope.insert(v2.clone(), Info::new(Ty::Dyn, ATTRIBUTE_MAX, 1));
                }
                // The accumulator: a growing list for map/filter, otherwise its initial value.
                let accu = match &init.ty {
                    Ty::List(_) => Info::new(Ty::List(Box::new(Ty::Dyn)), n, 1),
                    _ => Info::new(init.ty.clone(), init.size, 1),
                };
                scope.insert(c.accu_var.clone(), accu);
                self.scopes.push(scope);
                let cond = self.analyze(&c.loop_cond);
                let step = self.analyze(&c.loop_step);
                let result = self.analyze(&c.result);
                self.scopes.pop();
                let (cond, step, result) = (cond?, step?, result?);
                let per_iteration = cond.cost.saturating_add(step.cost);
                let cost = range
                    .cost
                    .saturating_add(init.cost)
                    .saturating_add(n.saturating_mul(per_iteration))
                    .saturating_add(result.cost);
                Ok(Info::new(result.ty, result.size, cost))
            }
            Expr::Call(call) => self.call(e.id, call),
        }
    }

    fn undefined_field(&self, id: u64, field: &str) -> CelError {
        let (line, column) = self.position(id);
        CelError::UndefinedField {
            field: field.to_string(),
            line,
            column,
        }
    }

    /// The type of `operand.field` (a select) or `operand[index]` (`field` is `None`).
    fn member(&self, id: u64, operand: &Info, field: Option<&str>) -> Result<Info, CelError> {
        Ok(match &operand.ty {
            Ty::Device => match field {
                Some("driver") => Info::new(Ty::String, DRIVER_MAX, 0),
                Some("attributes") => Info::new(Ty::Domains(false), MAP_MAX, 0),
                Some("capacity") => Info::new(Ty::Domains(true), MAP_MAX, 0),
                Some("allowMultipleAllocations") => Info::new(Ty::Bool, 0, 0),
                Some(other) => return Err(self.undefined_field(id, other)),
                None => Info::new(Ty::Dyn, UNBOUNDED, 0),
            },
            Ty::Domains(cap) => Info::new(Ty::Names(*cap), MAP_MAX, 0),
            Ty::Names(true) => Info::new(Ty::Quantity, 0, 0),
            Ty::Names(false) => Info::new(Ty::Dyn, ATTRIBUTE_MAX, 0),
            Ty::List(e) if field.is_none() => Info::new((**e).clone(), elem_size(e), 0),
            Ty::Map(_, v) => Info::new((**v).clone(), elem_size(v), 0),
            Ty::Dyn => Info::new(Ty::Dyn, ATTRIBUTE_MAX, 0),
            other => {
                let (line, column) = self.position(id);
                return Err(match field {
                    Some(_) => CelError::NoFieldSelection {
                        type_name: other.name(),
                        line,
                        column,
                    },
                    None => CelError::NoMatchingOverload {
                        function: "_[_]".to_string(),
                        argument_types: vec![other.name()],
                        line,
                        column,
                    },
                });
            }
        })
    }

    fn call(&mut self, id: u64, call: &cel::common::ast::CallExpr) -> Result<Info, CelError> {
        let name = call.func_name.as_str();
        let target = match &call.target {
            Some(t) => Some(self.analyze(t)?),
            None => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.analyze(a)?);
        }
        let base = target
            .iter()
            .chain(args.iter())
            .fold(0u64, |acc, i| acc.saturating_add(i.cost));
        let arg = |i: usize| {
            args.get(i)
                .cloned()
                .unwrap_or(Info::new(Ty::Dyn, UNBOUNDED, 0))
        };
        let (ty, size, own) = match name {
            "_&&_" | "_||_" => {
                for a in &args {
                    if !a.ty.is(&Ty::Bool) {
                        let types: Vec<&Ty> = args.iter().map(|a| &a.ty).collect();
                        return Err(self.no_overload(id, name, &types));
                    }
                }
                (Ty::Bool, 0, 0)
            }
            "!_" => {
                let a = arg(0);
                if !a.ty.is(&Ty::Bool) {
                    return Err(self.no_overload(id, name, &[&a.ty]));
                }
                (Ty::Bool, 0, 1)
            }
            "_?_:_" => {
                let (c, t, f) = (arg(0), arg(1), arg(2));
                if !c.ty.is(&Ty::Bool) {
                    return Err(self.no_overload(id, name, &[&c.ty, &t.ty, &f.ty]));
                }
                let ty = if t.ty == f.ty { t.ty.clone() } else { Ty::Dyn };
                let cost = c.cost.saturating_add(t.cost.max(f.cost));
                return Ok(Info::new(ty, t.size.max(f.size), cost));
            }
            "-_" => (arg(0).ty, 0, 1),
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let (l, r) = (arg(0), arg(1));
                let cost = if l.ty == Ty::String
                    || r.ty == Ty::String
                    || l.ty == Ty::Bytes
                    || r.ty == Ty::Bytes
                {
                    scaled(l.size.min(r.size), 0.1)
                } else {
                    1
                };
                (Ty::Bool, 0, cost)
            }
            "_+_" => {
                let (l, r) = (arg(0), arg(1));
                match (&l.ty, &r.ty) {
                    (Ty::String, _) | (_, Ty::String) => (
                        Ty::String,
                        l.size.saturating_add(r.size),
                        scaled(l.size.saturating_add(r.size), 0.1),
                    ),
                    (Ty::List(_), _) | (_, Ty::List(_)) => {
                        let ty = if l.ty == r.ty {
                            l.ty.clone()
                        } else {
                            Ty::List(Box::new(Ty::Dyn))
                        };
                        (ty, l.size.saturating_add(r.size), 1)
                    }
                    _ => (if l.ty == r.ty { l.ty.clone() } else { Ty::Dyn }, 0, 1),
                }
            }
            "_-_" | "_*_" | "_/_" | "_%_" => {
                let (l, r) = (arg(0), arg(1));
                (if l.ty == r.ty { l.ty.clone() } else { Ty::Dyn }, 0, 1)
            }
            "_[_]" | "_[?_]" => {
                let info = self.member(id, &arg(0), None)?;
                (info.ty, info.size, 1)
            }
            "@in" => {
                let container = arg(1);
                let cost = match container.ty {
                    Ty::List(_) | Ty::Dyn => container.size,
                    _ => 1,
                };
                (Ty::Bool, 0, cost)
            }
            "@not_strictly_false" => (Ty::Bool, 0, 1),
            _ => return self.function(id, name, target, args, base),
        };
        Ok(Info::new(ty, size, base.saturating_add(own)))
    }

    /// A named (non-operator) function: its result and cost.
    fn function(
        &mut self,
        id: u64,
        name: &str,
        target: Option<Info>,
        args: Vec<Info>,
        base: u64,
    ) -> Result<Info, CelError> {
        if !KNOWN_FUNCTIONS.contains(&name) {
            return Err(self.undeclared(id, name));
        }
        let arg_size = |i: usize| args.get(i).map_or(UNBOUNDED, |a| a.size);
        let recv = target.as_ref().map(|t| t.ty.clone());
        let recv_size = target.as_ref().map_or(UNBOUNDED, |t| t.size);
        // Receivers of a known, wrong type have no overload.
        let allowed: Option<&[Ty]> = match name {
            "sign" | "add" | "sub" | "isInteger" | "asInteger" | "asApproximateFloat" => {
                Some(&[Ty::Quantity])
            }
            "major" | "minor" | "patch" => Some(&[Ty::Semver]),
            "isGreaterThan" | "isLessThan" | "compareTo" => Some(&[Ty::Quantity, Ty::Semver]),
            "charAt" | "lowerAscii" | "upperAscii" | "replace" | "split" | "substring" | "trim"
            | "find" | "findAll" | "startsWith" | "endsWith" | "matches" | "contains" => {
                Some(&[Ty::String])
            }
            "isSorted" | "sum" | "join" => Some(&[]),
            _ => None,
        };
        if let (Some(allowed), Some(r)) = (allowed, &recv) {
            let list_ok = matches!(r, Ty::List(_)) && matches!(name, "isSorted" | "sum" | "join");
            if *r != Ty::Dyn && !allowed.contains(r) && !list_ok {
                let mut types = vec![r];
                types.extend(args.iter().map(|a| &a.ty));
                return Err(self.no_overload(id, name, &types));
            }
        }
        let list_elem = |r: &Option<Ty>| match r {
            Some(Ty::List(e)) => (**e).clone(),
            _ => Ty::Dyn,
        };
        let (ty, size, own) = match name {
            "size" => (Ty::Int, 0, 1),
            "matches" | "find" | "findAll" => {
                let (s, pattern) = if target.is_some() {
                    (recv_size, arg_size(0))
                } else {
                    (arg_size(0), arg_size(1))
                };
                let cost = scaled(s, 0.1).saturating_mul(scaled(pattern, 0.25));
                match name {
                    "matches" => (Ty::Bool, 0, cost),
                    "find" => (Ty::String, s, cost),
                    _ => (Ty::List(Box::new(Ty::String)), s, cost),
                }
            }
            "contains" | "startsWith" | "endsWith" => {
                (Ty::Bool, 0, scaled(arg_size(0).min(recv_size), 0.1).max(1))
            }
            "quantity" => (Ty::Quantity, 0, scaled(arg_size(0), 0.1).max(1)),
            "isQuantity" | "isSemver" => (Ty::Bool, 0, scaled(arg_size(0), 0.1).max(1)),
            "semver" => (Ty::Semver, 0, scaled(arg_size(0), 0.1).max(1)),
            "includes" => (Ty::Bool, 0, INCLUDES_COST),
            "split" => (
                Ty::List(Box::new(Ty::String)),
                recv_size,
                scaled(recv_size, 0.2),
            ),
            "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt" => {
                (Ty::String, recv_size, scaled(recv_size, 0.1).max(1))
            }
            "indexOf" | "lastIndexOf" => match &recv {
                Some(Ty::String) => (Ty::Int, 0, scaled(recv_size, 0.1).max(1)),
                _ => (Ty::Int, 0, recv_size),
            },
            "join" => (Ty::String, UNBOUNDED, recv_size),
            "isSorted" => (Ty::Bool, 0, recv_size),
            "sum" | "min" | "max" if target.is_some() => (list_elem(&recv), 0, recv_size),
            "sign" | "compareTo" | "major" | "minor" | "patch" | "asInteger" => (Ty::Int, 0, 1),
            "isGreaterThan" | "isLessThan" | "isInteger" => (Ty::Bool, 0, 1),
            "add" | "sub" => (Ty::Quantity, 0, 1),
            "asApproximateFloat" | "double" => (Ty::Double, 0, 1),
            "int" => (Ty::Int, 0, 1),
            "uint" => (Ty::Uint, 0, 1),
            "string" | "format" | "strings.quote" => (Ty::String, UNBOUNDED, 1),
            "bool" => (Ty::Bool, 0, 1),
            "bytes" => (Ty::Bytes, UNBOUNDED, 1),
            "reverse" => (
                recv.clone().unwrap_or(Ty::Dyn),
                recv_size,
                scaled(recv_size, 0.1).max(1),
            ),
            _ => (Ty::Dyn, UNBOUNDED, 1),
        };
        Ok(Info::new(ty, size, base.saturating_add(own)))
    }
}

fn is_device_field(field: &str) -> bool {
    crate::device::DEVICE_FIELDS.contains(&field)
}
