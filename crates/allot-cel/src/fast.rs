//! A fast path for the selector shapes the allocator evaluates most: comparisons of the driver,
//! attributes and capacities with literals, combined with `&&`, `||` and `!`.
//!
//! It only answers when the answer is unambiguous (the values exist and have the literal's type);
//! otherwise it answers "don't know" and the cel-rust interpreter evaluates the whole expression,
//! which also produces the exact runtime errors. `&&` and `||` absorb an unknown operand when the
//! other operand decides, which is exactly CEL's commutative error semantics, so a known answer is
//! always the interpreter's answer.

use crate::device::{CelDevice, Native};
use crate::values::{SemverVal, parse_semver};
use allot_quantity::Quantity;
use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue};
use std::cmp::Ordering;

/// A comparison operator.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn from_name(name: &str) -> Option<Op> {
        Some(match name {
            "_==_" => Op::Eq,
            "_!=_" => Op::Ne,
            "_<_" => Op::Lt,
            "_<=_" => Op::Le,
            "_>_" => Op::Gt,
            "_>=_" => Op::Ge,
            _ => return None,
        })
    }

    /// The operator with its operands swapped (`1 < x` is `x > 1`).
    fn flipped(self) -> Op {
        match self {
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
            other => other,
        }
    }

    fn holds(self, o: Ordering) -> bool {
        match self {
            Op::Eq => o == Ordering::Equal,
            Op::Ne => o != Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
        }
    }

    fn is_equality(self) -> bool {
        matches!(self, Op::Eq | Op::Ne)
    }
}

/// A literal operand.
#[derive(Debug, Clone)]
pub(crate) enum Lit {
    Int(i64),
    Bool(bool),
    Str(String),
}

/// A value read from the device.
#[derive(Debug, Clone)]
pub(crate) enum Operand {
    Driver,
    AllowMultipleAllocations,
    Attribute {
        domain: String,
        name: String,
    },
    /// `attribute % modulus`.
    AttributeMod {
        domain: String,
        name: String,
        modulus: i64,
    },
}

/// A compiled fast-path expression.
#[derive(Debug, Clone)]
pub(crate) enum Fast {
    /// A sub-expression the fast path does not handle.
    Unknown,
    Const(bool),
    And(Box<Fast>, Box<Fast>),
    Or(Box<Fast>, Box<Fast>),
    Not(Box<Fast>),
    Compare {
        lhs: Operand,
        op: Op,
        rhs: Lit,
    },
    /// A bare bool-valued operand.
    Truthy(Operand),
    /// `capacity.compareTo(quantity(lit)) op rhs`.
    QuantityCompare {
        domain: String,
        name: String,
        q: Quantity,
        op: Op,
        rhs: i64,
    },
    /// `capacity.isGreaterThan(quantity(lit))` (`want` Greater) or `isLessThan` (Less).
    QuantityRel {
        domain: String,
        name: String,
        q: Quantity,
        want: Ordering,
    },
    /// `attribute.isGreaterThan(semver(lit))` or `isLessThan`.
    SemverRel {
        domain: String,
        name: String,
        v: SemverVal,
        want: Ordering,
    },
}

fn call<'a>(e: &'a IdedExpr, name: &str) -> Option<&'a CallExpr> {
    match &e.expr {
        Expr::Call(c) if c.func_name == name => Some(c),
        _ => None,
    }
}

fn string_lit(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}

fn lit(e: &IdedExpr) -> Option<Lit> {
    match &e.expr {
        Expr::Literal(LiteralValue::Int(i)) => Some(Lit::Int(*i.inner())),
        Expr::Literal(LiteralValue::Boolean(b)) => Some(Lit::Bool(*b.inner())),
        Expr::Literal(LiteralValue::String(s)) => Some(Lit::Str(s.inner().to_string())),
        _ => None,
    }
}

/// `device.<field>`.
fn device_field(e: &IdedExpr) -> Option<&str> {
    match &e.expr {
        Expr::Select(s)
            if !s.test && matches!(&s.operand.expr, Expr::Ident(n) if n == "device") =>
        {
            Some(&s.field)
        }
        _ => None,
    }
}

/// `device.attributes["d"].n` or `device.attributes["d"]["n"]` (`field` "attributes"), or the
/// same for "capacity": the domain and name.
fn entry(e: &IdedExpr, field: &str) -> Option<(String, String)> {
    let (domains, name) = match &e.expr {
        Expr::Select(s) if !s.test => (&*s.operand, s.field.clone()),
        Expr::Call(c) if c.func_name == "_[_]" && c.target.is_none() && c.args.len() == 2 => {
            (&c.args[0], string_lit(&c.args[1])?.to_string())
        }
        _ => return None,
    };
    let index = call(domains, "_[_]")?;
    if index.target.is_some() || index.args.len() != 2 || device_field(&index.args[0])? != field {
        return None;
    }
    Some((string_lit(&index.args[1])?.to_string(), name))
}

fn operand(e: &IdedExpr) -> Option<Operand> {
    if let Some(field) = device_field(e) {
        return match field {
            "driver" => Some(Operand::Driver),
            "allowMultipleAllocations" => Some(Operand::AllowMultipleAllocations),
            _ => None,
        };
    }
    if let Some(c) = call(e, "_%_")
        && c.args.len() == 2
        && let (Some((domain, name)), Some(Lit::Int(modulus))) =
            (entry(&c.args[0], "attributes"), lit(&c.args[1]))
    {
        return Some(Operand::AttributeMod {
            domain,
            name,
            modulus,
        });
    }
    let (domain, name) = entry(e, "attributes")?;
    Some(Operand::Attribute { domain, name })
}

/// `receiver.method(function("literal"))` with a one-argument literal call: receiver, literal.
fn method_with_literal<'a>(
    e: &'a IdedExpr,
    method: &str,
    function: &str,
) -> Option<(&'a IdedExpr, &'a str)> {
    let c = call(e, method)?;
    let target = c.target.as_deref()?;
    let [arg] = c.args.as_slice() else {
        return None;
    };
    let inner = call(arg, function)?;
    if inner.target.is_some() {
        return None;
    }
    let [text] = inner.args.as_slice() else {
        return None;
    };
    Some((target, string_lit(text)?))
}

/// Compiles the supported shapes; `None` when the fast path would never answer.
pub(crate) fn build(e: &IdedExpr) -> Option<Fast> {
    match node(e) {
        Fast::Unknown => None,
        fast => Some(fast),
    }
}

/// A node, with [`Fast::Unknown`] for unsupported shapes, so that `&&`/`||` can still decide
/// through their other operand.
fn node(e: &IdedExpr) -> Fast {
    leaf(e).unwrap_or(Fast::Unknown)
}

fn leaf(e: &IdedExpr) -> Option<Fast> {
    if let Expr::Literal(LiteralValue::Boolean(b)) = &e.expr {
        return Some(Fast::Const(*b.inner()));
    }
    let Expr::Call(c) = &e.expr else {
        return operand(e).map(Fast::Truthy);
    };
    let name = c.func_name.as_str();
    match (name, c.args.as_slice()) {
        ("_&&_", [a, b]) => return Some(Fast::And(Box::new(node(a)), Box::new(node(b)))),
        ("_||_", [a, b]) => return Some(Fast::Or(Box::new(node(a)), Box::new(node(b)))),
        ("!_", [a]) => return Some(Fast::Not(Box::new(node(a)))),
        _ => {}
    }
    if let (Some(op), [l, r]) = (Op::from_name(name), c.args.as_slice()) {
        let (value, literal, op) = match (lit(l), lit(r)) {
            (None, Some(rhs)) => (l, rhs, op),
            (Some(lhs), None) => (r, lhs, op.flipped()),
            _ => return None,
        };
        if let Some((target, text)) = method_with_literal(value, "compareTo", "quantity")
            && let Lit::Int(rhs) = literal
        {
            let (domain, name) = entry(target, "capacity")?;
            let q = text.parse().ok()?;
            return Some(Fast::QuantityCompare {
                domain,
                name,
                q,
                op,
                rhs,
            });
        }
        return Some(Fast::Compare {
            lhs: operand(value)?,
            op,
            rhs: literal,
        });
    }
    for (method, want) in [
        ("isGreaterThan", Ordering::Greater),
        ("isLessThan", Ordering::Less),
    ] {
        if let Some((target, text)) = method_with_literal(e, method, "quantity") {
            let (domain, name) = entry(target, "capacity")?;
            return Some(Fast::QuantityRel {
                domain,
                name,
                q: text.parse().ok()?,
                want,
            });
        }
        if let Some((target, text)) = method_with_literal(e, method, "semver") {
            let (domain, name) = entry(target, "attributes")?;
            return Some(Fast::SemverRel {
                domain,
                name,
                v: SemverVal(parse_semver(text, false).ok()?),
                want,
            });
        }
    }
    None
}

fn attribute<'a>(d: &'a CelDevice, domain: &str, name: &str) -> Option<&'a Native> {
    d.native_attributes
        .iter()
        .find(|(dd, n, _)| dd == domain && n == name)
        .map(|(_, _, v)| v)
}

fn capacity<'a>(d: &'a CelDevice, domain: &str, name: &str) -> Option<&'a Quantity> {
    d.native_capacity
        .iter()
        .find(|(dd, n, _)| dd == domain && n == name)
        .map(|(_, _, v)| v)
}

/// A device value for an operand, borrowed where possible.
enum Value<'a> {
    Int(i64),
    Bool(bool),
    Str(&'a str),
}

fn value<'a>(d: &'a CelDevice, o: &Operand) -> Option<Value<'a>> {
    Some(match o {
        Operand::Driver => Value::Str(d.driver()),
        Operand::AllowMultipleAllocations => Value::Bool(d.allow_multiple_allocations()),
        Operand::Attribute { domain, name } => match attribute(d, domain, name)? {
            Native::Int(i) => Value::Int(*i),
            Native::Bool(b) => Value::Bool(*b),
            Native::Str(s) => Value::Str(s),
            Native::Version(_) | Native::List => return None,
        },
        Operand::AttributeMod {
            domain,
            name,
            modulus,
        } => match attribute(d, domain, name)? {
            Native::Int(i) => Value::Int(i.checked_rem(*modulus)?),
            _ => return None,
        },
    })
}

fn ordering_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

impl Fast {
    /// The result when it is unambiguous; `None` leaves the expression to the interpreter.
    pub(crate) fn eval(&self, d: &CelDevice) -> Option<bool> {
        match self {
            Fast::Unknown => None,
            Fast::Const(b) => Some(*b),
            Fast::And(a, b) => match (a.eval(d), b.eval(d)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Fast::Or(a, b) => match (a.eval(d), b.eval(d)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Fast::Not(a) => a.eval(d).map(|b| !b),
            Fast::Truthy(o) => match value(d, o)? {
                Value::Bool(b) => Some(b),
                _ => None,
            },
            Fast::Compare { lhs, op, rhs } => match (value(d, lhs)?, rhs) {
                (Value::Int(a), Lit::Int(b)) => Some(op.holds(a.cmp(b))),
                (Value::Str(a), Lit::Str(b)) => Some(op.holds(a.cmp(b.as_str()))),
                (Value::Bool(a), Lit::Bool(b)) if op.is_equality() => Some(op.holds(a.cmp(b))),
                _ => None,
            },
            Fast::QuantityCompare {
                domain,
                name,
                q,
                op,
                rhs,
            } => {
                let c = ordering_int(capacity(d, domain, name)?.cmp(q));
                Some(op.holds(c.cmp(rhs)))
            }
            Fast::QuantityRel {
                domain,
                name,
                q,
                want,
            } => Some(capacity(d, domain, name)?.cmp(q) == *want),
            Fast::SemverRel {
                domain,
                name,
                v,
                want,
            } => match attribute(d, domain, name)? {
                Native::Version(a) => Some(a.compare(v) == *want),
                _ => None,
            },
        }
    }
}
