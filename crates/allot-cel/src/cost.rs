//! Static checks and cost estimation over cel-rust's parsed (macro-expanded) AST.
//!
//! cel-rust has no type checker and no cost estimator, so this module does both in one pass. The
//! estimate follows cel-go's `checker/cost.go` (the `coster`: per-node costs, size and entry-size
//! propagation, field paths, comprehension and `cel.bind` costs), Kubernetes'
//! `library.CostEstimator` (`apiserver/pkg/cel/library/cost.go`: the string, list, regex and
//! quantity functions) and the DRA size estimator (`dynamic-resource-allocation/cel/compile.go`:
//! the declared maximum sizes of everything reachable from `device`), with the Kubernetes base
//! environment's option that presence tests (`has()`) cost nothing. The results match upstream's
//! `compile_test.go` table. What it approximates:
//!
//! - Types are inferred only as far as the checks and the estimate need: `device` and its fields,
//!   literals, operators, and the result types of the library functions. Attribute values are
//!   `dyn` (as upstream, whose attribute type is dynamic), so a call on them is costed as the
//!   union of every overload it could resolve to, as cel-go does for a `dyn` argument.
//! - Checks: undeclared identifiers and functions, unknown `device` fields, logical operators and
//!   conditions on non-bool operands, library member functions on receivers of a known wrong
//!   type, a result type other than bool or dyn, and cel-go's parser recursion limit (250).
//! - Mixed-type list and map literals are accepted (upstream's homogeneous-literal validator
//!   rejects them); their element type is `dyn`.

mod calls;
mod sizes;

pub(crate) use calls::namespaced_function;
pub(crate) use sizes::{Size, UNBOUNDED, scaled as scaled_cost};

use crate::CelError;
use cel::common::ast::{EntryExpr, Expr, IdedExpr, LiteralValue};
use sizes::{ATTRIBUTE_MAX, Entries, Seg, device_path_size};
use std::collections::HashMap;

/// cel-go's default parser recursion limit (`parser.MaxRecursionDepth`).
pub(crate) const MAX_DEPTH: usize = 250;

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

    /// Whether a value of this type may be a string (also for `dyn`).
    fn may_be_string(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::String)
    }

    fn may_be_bytes(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::Bytes)
    }

    fn may_be_list(&self) -> bool {
        matches!(self, Ty::Dyn | Ty::List(_))
    }

    fn is_map(&self) -> bool {
        matches!(self, Ty::Map(..) | Ty::Domains(_) | Ty::Names(_))
    }

    fn may_be_map(&self) -> bool {
        *self == Ty::Dyn || self.is_map()
    }

    /// Whether the type has a fixed size of 1 (cel-go's `isScalar`).
    fn is_scalar(&self) -> bool {
        matches!(self, Ty::Bool | Ty::Int | Ty::Uint | Ty::Double)
    }

    /// The first type parameter (a list's elements, a map's keys), as cel-go's
    /// `Type().Parameters()[0]`.
    fn first_parameter(&self) -> Option<Ty> {
        match self {
            Ty::List(e) => Some((**e).clone()),
            Ty::Map(k, _) => Some((**k).clone()),
            Ty::Domains(_) | Ty::Names(_) => Some(Ty::String),
            _ => None,
        }
    }
}

/// What the analysis knows about an expression.
#[derive(Debug, Clone)]
pub(crate) struct Info {
    pub(crate) ty: Ty,
    /// Maximum cost of evaluating it.
    pub(crate) cost: u64,
    /// The computed size (cel-go's `computeSize`), `None` when unknown.
    pub(crate) size: Option<Size>,
    /// The sizes of its entries, for containers whose entries are known.
    entries: Option<Entries>,
    /// Its field path from a variable, when it has one.
    path: Option<Vec<Seg>>,
}

impl Info {
    fn new(ty: Ty, cost: u64) -> Self {
        Info {
            ty,
            cost,
            size: None,
            entries: None,
            path: None,
        }
    }

    /// The size, or unknown (cel-go's `sizeOrUnknown`).
    pub(crate) fn size_or_unknown(&self) -> Size {
        self.size.unwrap_or(Size::UNKNOWN)
    }

    /// Fills in a missing size the way cel-go's `computeSize` falls back: the declared size of
    /// the field path, then 1 for scalars.
    fn with_fallback_size(mut self) -> Self {
        if self.size.is_none() {
            self.size = self
                .path
                .as_deref()
                .and_then(device_path_size)
                .or_else(|| self.ty.is_scalar().then(|| Size::fixed(1)));
        }
        self
    }
}

/// A local variable: a comprehension's iteration variable or accumulator, or a `cel.bind`.
#[derive(Debug, Clone)]
struct Local {
    ty: Ty,
    path: Option<Vec<Seg>>,
    size: Option<Size>,
    entries: Option<Entries>,
}

/// The analysis of an expression: its root, and the own cost of each node (what the node costs
/// beyond its children), which the evaluator's meter charges for nodes it does not meter itself.
pub(crate) struct Analysis {
    pub(crate) root: Info,
    pub(crate) own: HashMap<u64, u64>,
}

/// The depth of an expression's tree, computed without recursion.
pub(crate) fn depth(root: &IdedExpr) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(root, 1usize)];
    while let Some((e, d)) = stack.pop() {
        deepest = deepest.max(d);
        for child in children(e) {
            stack.push((child, d + 1));
        }
    }
    deepest
}

/// The direct children of an expression.
pub(crate) fn children(e: &IdedExpr) -> Vec<&IdedExpr> {
    let mut out = Vec::new();
    match &e.expr {
        Expr::Call(c) => {
            out.extend(c.target.as_deref());
            out.extend(c.args.iter());
        }
        Expr::Select(s) => out.push(&*s.operand),
        Expr::List(l) => out.extend(l.elements.iter()),
        Expr::Map(m) => {
            for entry in &m.entries {
                if let EntryExpr::MapEntry(me) = &entry.expr {
                    out.push(&me.key);
                    out.push(&me.value);
                }
            }
        }
        Expr::Struct(s) => {
            for entry in &s.entries {
                if let EntryExpr::StructField(f) = &entry.expr {
                    out.push(&f.value);
                }
            }
        }
        Expr::Comprehension(c) => {
            out.extend([
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ]);
        }
        Expr::Unspecified | Expr::Literal(_) | Expr::Ident(_) => {}
    }
    out
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

/// The name cel-go gives the accumulator of the standard macros, which `cel.bind` never uses.
const MACRO_ACCUMULATOR: &str = "__result__";

/// The analysis of one expression.
pub(crate) struct Analyzer<'a> {
    source: &'a cel::Program,
    scopes: Vec<(String, Local)>,
    own: HashMap<u64, u64>,
}

impl<'a> Analyzer<'a> {
    pub(crate) fn new(source: &'a cel::Program) -> Self {
        Analyzer {
            source,
            scopes: Vec::new(),
            own: HashMap::new(),
        }
    }

    /// Analyzes the program's expression.
    pub(crate) fn run(mut self) -> Result<Analysis, CelError> {
        let root = self.analyze(self.source.expression())?;
        Ok(Analysis {
            root,
            own: self.own,
        })
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

    fn undefined_field(&self, id: u64, field: &str) -> CelError {
        let (line, column) = self.position(id);
        CelError::UndefinedField {
            field: field.to_string(),
            line,
            column,
        }
    }

    fn lookup(&self, name: &str) -> Option<&Local> {
        self.scopes
            .iter()
            .rev()
            .find_map(|(n, l)| (n == name).then_some(l))
    }

    fn push(&mut self, name: &str, local: Local) {
        self.scopes.push((name.to_string(), local));
    }

    fn pop(&mut self, n: usize) {
        self.scopes.truncate(self.scopes.len().saturating_sub(n));
    }

    fn own(&mut self, id: u64, cost: u64) {
        self.own.insert(id, cost);
    }

    /// Analyzes an expression.
    pub(crate) fn analyze(&mut self, e: &IdedExpr) -> Result<Info, CelError> {
        match &e.expr {
            Expr::Unspecified => Ok(Info::new(Ty::Dyn, 0)),
            Expr::Literal(l) => {
                let (ty, size) = match l {
                    LiteralValue::Boolean(_) => (Ty::Bool, 1),
                    LiteralValue::Int(_) => (Ty::Int, 1),
                    LiteralValue::UInt(_) => (Ty::Uint, 1),
                    LiteralValue::Double(_) => (Ty::Double, 1),
                    LiteralValue::Null => (Ty::Null, 1),
                    LiteralValue::String(s) => (Ty::String, s.chars().count() as u64),
                    LiteralValue::Bytes(b) => (Ty::Bytes, b.len() as u64),
                };
                self.own(e.id, 0);
                let mut info = Info::new(ty, 0);
                info.size = Some(Size::fixed(size));
                Ok(info)
            }
            Expr::Ident(name) => self.ident(e.id, name),
            Expr::Select(select) => {
                let operand = self.analyze(&select.operand)?;
                if select.test {
                    if operand.ty == Ty::Device && !is_device_field(&select.field) {
                        return Err(self.undefined_field(e.id, &select.field));
                    }
                    // Kubernetes sets `PresenceTestHasCost(false)`.
                    self.own(e.id, 0);
                    let mut info = Info::new(Ty::Bool, operand.cost);
                    info.size = Some(Size::fixed(1));
                    return Ok(info);
                }
                let own = u64::from(matches!(operand.ty, Ty::Device) || operand.ty.is_map());
                self.own(e.id, own);
                let ty = self.member(e.id, &operand.ty, Some(&select.field))?;
                let mut path = operand.path.clone().unwrap_or_default();
                path.push(Seg::Field(select.field.clone()));
                let mut info = Info::new(ty, operand.cost.saturating_add(own));
                info.path = Some(path);
                Ok(info.with_fallback_size())
            }
            Expr::List(list) => {
                let mut cost: u64 = 10;
                let mut elem: Option<Ty> = None;
                let mut item = Size {
                    min: if list.elements.is_empty() {
                        0
                    } else {
                        UNBOUNDED
                    },
                    max: 0,
                };
                for element in &list.elements {
                    let info = self.analyze(element)?;
                    cost = cost.saturating_add(info.cost);
                    item = item.union(info.size_or_unknown());
                    elem = Some(match elem {
                        None => info.ty,
                        Some(t) if t == info.ty => t,
                        Some(_) => Ty::Dyn,
                    });
                }
                self.own(e.id, 10);
                let mut info = Info::new(Ty::List(Box::new(elem.unwrap_or(Ty::Dyn))), cost);
                info.size = Some(Size::fixed(list.elements.len() as u64));
                info.entries = Some(Entries {
                    list: true,
                    key: Size::fixed(1),
                    val: item,
                });
                Ok(info)
            }
            Expr::Map(map) => self.map_literal(e.id, map),
            Expr::Struct(s) => Err(self.undeclared(e.id, &s.type_name)),
            Expr::Comprehension(c) => self.comprehension(e.id, c),
            Expr::Call(call) => self.call(e.id, call),
        }
    }

    fn ident(&mut self, id: u64, name: &str) -> Result<Info, CelError> {
        self.own(id, 1);
        if let Some(local) = self.lookup(name) {
            let mut info = Info::new(local.ty.clone(), 1);
            info.path = local.path.clone();
            info.entries = local.entries;
            let fallback = local.size;
            let mut info = info.with_fallback_size();
            if info.size.is_none() {
                info.size = fallback;
            }
            return Ok(info);
        }
        if name == "device" {
            let mut info = Info::new(Ty::Device, 1);
            info.path = Some(vec![Seg::Field("device".into())]);
            return Ok(info.with_fallback_size());
        }
        Err(self.undeclared(id, name))
    }

    fn map_literal(&mut self, id: u64, map: &cel::common::ast::MapExpr) -> Result<Info, CelError> {
        let mut cost: u64 = 30;
        let empty = map.entries.is_empty();
        let start = Size {
            min: if empty { 0 } else { UNBOUNDED },
            max: 0,
        };
        let (mut key, mut val) = (start, start);
        for entry in &map.entries {
            if let EntryExpr::MapEntry(m) = &entry.expr {
                let k = self.analyze(&m.key)?;
                let v = self.analyze(&m.value)?;
                cost = cost.saturating_add(k.cost).saturating_add(v.cost);
                key = key.union(k.size_or_unknown());
                val = val.union(v.size_or_unknown());
            }
        }
        self.own(id, 30);
        let mut info = Info::new(Ty::Map(Box::new(Ty::Dyn), Box::new(Ty::Dyn)), cost);
        info.size = Some(Size::fixed(map.entries.len() as u64));
        info.entries = Some(Entries {
            list: false,
            key,
            val,
        });
        Ok(info)
    }

    /// A comprehension: a macro's loop, or `cel.bind` (an empty range and a `false` condition).
    fn comprehension(
        &mut self,
        id: u64,
        c: &cel::common::ast::ComprehensionExpr,
    ) -> Result<Info, CelError> {
        self.own(id, 0);
        if is_bind(c) {
            let range = self.analyze(&c.iter_range)?;
            let init = self.analyze(&c.accu_init)?;
            self.push(&c.accu_var, local_of(&init));
            let result = self.analyze(&c.result);
            self.pop(1);
            let result = result?;
            let cost = range
                .cost
                .saturating_add(init.cost)
                .saturating_add(result.cost);
            let mut info = Info::new(result.ty.clone(), cost);
            info.size = result.size;
            info.entries = result.entries;
            return Ok(info);
        }
        let range = self.analyze(&c.iter_range)?;
        let init = self.analyze(&c.accu_init)?;
        let range_count = range.size_or_unknown();
        let mut pushed = 1;
        self.push(&c.accu_var, local_of(&init));
        let list = range
            .entries
            .map(|e| e.list)
            .unwrap_or(matches!(range.ty, Ty::List(_)) || !range.ty.may_be_map());
        let base = range.path.clone().unwrap_or_default();
        let with = |seg: Seg| {
            let mut p = base.clone();
            p.push(seg);
            Some(p)
        };
        let (elem, _) = iteration(&range.ty);
        match &c.iter_var2 {
            None => {
                let (size, seg) = if list {
                    (range.entries.map(|e| e.val), Seg::Items)
                } else {
                    (range.entries.map(|e| e.key), Seg::Keys)
                };
                let local = Local {
                    ty: elem,
                    path: with(seg),
                    size,
                    entries: None,
                };
                self.push(&c.iter_var, local);
                pushed += 1;
            }
            Some(v2) => {
                let (key_ty, key_seg, val_seg) = if list {
                    (Ty::Int, Seg::Field("@indices".into()), Seg::Items)
                } else {
                    (elem, Seg::Keys, Seg::Values)
                };
                let key = Local {
                    ty: key_ty,
                    path: with(key_seg),
                    size: range.entries.map(|e| e.key),
                    entries: None,
                };
                let value = Local {
                    ty: Ty::Dyn,
                    path: with(val_seg),
                    size: range.entries.map(|e| e.val),
                    entries: None,
                };
                self.push(&c.iter_var, key);
                self.push(v2, value);
                pushed += 2;
            }
        }
        let cond = self.analyze(&c.loop_cond);
        let step = self.analyze(&c.loop_step);
        self.pop(pushed - 1);
        let result = self.analyze(&c.result);
        self.pop(1);
        let (cond, step, result) = (cond?, step?, result?);
        let per_iteration = cond.cost.saturating_add(step.cost);
        let cost = range
            .cost
            .saturating_add(init.cost)
            .saturating_add(result.cost)
            .saturating_add(range_count.max.saturating_mul(per_iteration));
        let mut info = Info::new(result.ty.clone(), cost);
        match &c.accu_init.expr {
            Expr::Literal(_) => info.size = init.size,
            Expr::List(_) | Expr::Map(_) => {
                info.size = Some(range_count);
                info.entries = step.entries;
            }
            _ => {}
        }
        Ok(info.with_fallback_size())
    }

    /// The type of `operand.field` (a select) or `operand[index]` (`field` is `None`).
    fn member(&self, id: u64, operand: &Ty, field: Option<&str>) -> Result<Ty, CelError> {
        Ok(match operand {
            Ty::Device => match field {
                Some("driver") => Ty::String,
                Some("attributes") => Ty::Domains(false),
                Some("capacity") => Ty::Domains(true),
                Some("allowMultipleAllocations") => Ty::Bool,
                Some(other) => return Err(self.undefined_field(id, other)),
                None => Ty::Dyn,
            },
            Ty::Domains(cap) => Ty::Names(*cap),
            Ty::Names(true) => Ty::Quantity,
            Ty::Names(false) => Ty::Dyn,
            Ty::List(e) if field.is_none() => (**e).clone(),
            Ty::Map(_, v) => (**v).clone(),
            Ty::Dyn => Ty::Dyn,
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
}

/// Whether a comprehension is `cel.bind` (cel-go's `isBind`).
pub(crate) fn is_bind(c: &cel::common::ast::ComprehensionExpr) -> bool {
    matches!(&c.iter_range.expr, Expr::List(l) if l.elements.is_empty())
        && matches!(&c.loop_cond.expr, Expr::Literal(LiteralValue::Boolean(b)) if !**b)
        && c.accu_var != MACRO_ACCUMULATOR
}

/// A variable bound to the value of `init` (cel-go's `pushLocalVar`).
fn local_of(init: &Info) -> Local {
    Local {
        ty: init.ty.clone(),
        path: init.path.clone(),
        size: init.size,
        entries: init.entries,
    }
}

/// Element type and size of iterating over a value of this type.
fn iteration(ty: &Ty) -> (Ty, u64) {
    match ty {
        Ty::List(e) => ((**e).clone(), UNBOUNDED),
        Ty::Map(k, _) => ((**k).clone(), UNBOUNDED),
        Ty::Domains(_) | Ty::Names(_) => (Ty::String, UNBOUNDED),
        _ => (Ty::Dyn, ATTRIBUTE_MAX),
    }
}

fn is_device_field(field: &str) -> bool {
    crate::device::DEVICE_FIELDS.contains(&field)
}
