//! The cost and result of calls: operators (cel-go's `functionCost` defaults), the Kubernetes
//! library functions (`library.CostEstimator.EstimateCallCost`, which takes precedence by
//! function name) and the result types and checks of the DRA environment.

use super::sizes::{Entries, Seg, device_path_size, scaled};
use super::{Analyzer, Info, KNOWN_FUNCTIONS, Size, Ty};
use crate::CelError;
use cel::common::ast::{CallExpr, Expr, LiteralValue};

/// cel-go's `StringTraversalCostFactor`.
const TRAVERSAL: f64 = 0.1;
/// cel-go's `RegexStringLengthCostFactor`.
const REGEX: f64 = 0.25;
/// The estimated cost of `includes` (`ResourceSliceMaxAttributeValuesPerDevice`).
pub(crate) const INCLUDES_COST: u64 = 48;

/// What a call adds to its operands: its own cost, and its result.
struct Call {
    own: u64,
    ty: Ty,
    size: Option<Size>,
    entries: Option<Entries>,
    path: Option<Vec<Seg>>,
}

impl Call {
    fn new(own: u64, ty: Ty) -> Self {
        Call {
            own,
            ty,
            size: None,
            entries: None,
            path: None,
        }
    }

    fn sized(mut self, size: Size) -> Self {
        self.size = Some(size);
        self
    }
}

/// Whether `target.name(...)` is a call of a namespaced global function (`strings.quote(x)`).
pub(crate) fn namespaced_function(call: &CallExpr) -> Option<String> {
    match call.target.as_deref().map(|t| &t.expr) {
        Some(Expr::Ident(ns)) => {
            let name = format!("{ns}.{}", call.func_name);
            KNOWN_FUNCTIONS.contains(&name.as_str()).then_some(name)
        }
        _ => None,
    }
}

impl Analyzer<'_> {
    pub(super) fn call(&mut self, id: u64, call: &CallExpr) -> Result<Info, CelError> {
        let mut name = call.func_name.clone();
        let mut target_expr = call.target.as_deref();
        if let Some(qualified) = namespaced_function(call)
            && let Some(Expr::Ident(ns)) = target_expr.map(|t| &t.expr)
            && self.lookup(ns).is_none()
        {
            name = qualified;
            target_expr = None;
        }
        let target = match target_expr {
            Some(t) => Some(self.analyze(t)?),
            None => None,
        };
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            args.push(self.analyze(a)?);
        }
        let operands = target
            .iter()
            .chain(args.iter())
            .fold(0u64, |acc, i| acc.saturating_add(i.cost));
        let result = match name.as_str() {
            "_?_:_" => return self.conditional(id, &name, &args),
            "dyn" if target.is_none() && args.len() == 1 => {
                let mut info = args[0].clone();
                info.ty = Ty::Dyn;
                info.cost = info.cost.saturating_add(1);
                info.path = None;
                self.own(id, 1);
                return Ok(info);
            }
            _ => match self.operator(id, &name, &args)? {
                Some(result) => result,
                None => self.function(id, &name, call, target.as_ref(), &args)?,
            },
        };
        self.own(id, result.own);
        let mut info = Info::new(result.ty, operands.saturating_add(result.own));
        info.size = result.size;
        info.entries = result.entries;
        info.path = result.path;
        Ok(info.with_fallback_size())
    }

    fn conditional(&mut self, id: u64, name: &str, args: &[Info]) -> Result<Info, CelError> {
        let [c, t, f] = args else {
            return Err(self.no_overload(id, name, &[]));
        };
        if !c.ty.is(&Ty::Bool) {
            return Err(self.no_overload(id, name, &[&c.ty, &t.ty, &f.ty]));
        }
        self.own(id, 0);
        let ty = if t.ty == f.ty { t.ty.clone() } else { Ty::Dyn };
        let mut info = Info::new(ty, c.cost.saturating_add(t.cost.max(f.cost)));
        info.size = Some(t.size_or_unknown().union(f.size_or_unknown()));
        info.entries = Entries::union(t.entries, f.entries);
        Ok(info)
    }

    /// Operators: `None` for named functions.
    fn operator(&self, id: u64, name: &str, args: &[Info]) -> Result<Option<Call>, CelError> {
        let arg = |i: usize| args.get(i).map_or(Ty::Dyn, |a| a.ty.clone());
        let size = |i: usize| args.get(i).map_or(Size::UNKNOWN, Info::size_or_unknown);
        Ok(Some(match name {
            "_&&_" | "_||_" => {
                for a in args {
                    if !a.ty.is(&Ty::Bool) {
                        let types: Vec<&Ty> = args.iter().map(|a| &a.ty).collect();
                        return Err(self.no_overload(id, name, &types));
                    }
                }
                Call::new(0, Ty::Bool)
            }
            "!_" => {
                let a = arg(0);
                if !a.is(&Ty::Bool) {
                    return Err(self.no_overload(id, name, &[&a]));
                }
                Call::new(1, Ty::Bool)
            }
            "@not_strictly_false" => Call::new(1, Ty::Bool),
            "-_" => Call::new(1, arg(0)),
            "_==_" | "_!=_" => Call::new(compare_cost(size(0), size(1)), Ty::Bool),
            "_<_" | "_<=_" | "_>_" | "_>=_" => {
                let (l, r) = (arg(0), arg(1));
                let sized = (l.may_be_string() && r.may_be_string())
                    || (l.may_be_bytes() && r.may_be_bytes());
                let exactly_sized =
                    matches!(l, Ty::String | Ty::Bytes) || matches!(r, Ty::String | Ty::Bytes);
                let own = match (sized, exactly_sized) {
                    (true, true) => compare_cost(size(0), size(1)),
                    (true, false) => compare_cost(size(0), size(1)).max(1),
                    (false, _) => 1,
                };
                Call::new(own, Ty::Bool)
            }
            "_+_" => add(args),
            "_-_" | "_*_" | "_/_" | "_%_" => {
                let (l, r) = (arg(0), arg(1));
                Call::new(1, if l == r { l } else { Ty::Dyn })
            }
            "_[_]" | "_[?_]" => {
                let container = args.first();
                let ty = self.member(id, &arg(0), None)?;
                let mut call = Call::new(1, ty);
                if let Some(c) = container {
                    let seg = if c.ty.may_be_map() {
                        Seg::Values
                    } else {
                        Seg::Items
                    };
                    call.size = c.entries.map(|e| e.val);
                    let mut path = c.path.clone().unwrap_or_default();
                    path.push(seg);
                    call.path = Some(path);
                }
                call
            }
            "@in" => {
                let container = arg(1);
                let mut own = 0;
                if container.may_be_list() {
                    own = own.max(size(1).max);
                }
                if container.may_be_map() || !container.may_be_list() {
                    own = own.max(1);
                }
                Call::new(own, Ty::Bool)
            }
            _ => return Ok(None),
        }))
    }

    /// A named (non-operator) function.
    fn function(
        &self,
        id: u64,
        name: &str,
        call: &CallExpr,
        target: Option<&Info>,
        args: &[Info],
    ) -> Result<Call, CelError> {
        if !KNOWN_FUNCTIONS.contains(&name) {
            return Err(self.undeclared(id, name));
        }
        self.check_receiver(id, name, target, args)?;
        let ty = result_type(name, target, args);
        if let Some(t) = target
            && let Some(call) = kubernetes_member(name, call, t, args, &ty)
        {
            return Ok(call);
        }
        Ok(match name {
            "sign" | "asInteger" | "isInteger" | "asApproximateFloat" | "isGreaterThan"
            | "isLessThan" | "compareTo" | "add" | "sub" => Call::new(1, ty),
            "includes" => Call::new(INCLUDES_COST, ty),
            _ => cel_go_default(name, target, args, ty),
        })
    }

    /// Receivers of a known, wrong type have no overload.
    fn check_receiver(
        &self,
        id: u64,
        name: &str,
        target: Option<&Info>,
        args: &[Info],
    ) -> Result<(), CelError> {
        let allowed: &[Ty] = match name {
            "sign" | "add" | "sub" | "isInteger" | "asInteger" | "asApproximateFloat" => {
                &[Ty::Quantity]
            }
            "major" | "minor" | "patch" => &[Ty::Semver],
            "isGreaterThan" | "isLessThan" | "compareTo" => &[Ty::Quantity, Ty::Semver],
            "charAt" | "lowerAscii" | "upperAscii" | "replace" | "split" | "substring" | "trim"
            | "find" | "findAll" | "startsWith" | "endsWith" | "matches" | "contains" => {
                &[Ty::String]
            }
            "isSorted" | "sum" | "join" => &[],
            _ => return Ok(()),
        };
        if let Some(r) = target.map(|t| &t.ty) {
            let list_ok = matches!(r, Ty::List(_)) && matches!(name, "isSorted" | "sum" | "join");
            if *r != Ty::Dyn && !allowed.contains(r) && !list_ok {
                let mut types = vec![r];
                types.extend(args.iter().map(|a| &a.ty));
                return Err(self.no_overload(id, name, &types));
            }
        }
        Ok(())
    }
}

/// cel-go's cost of comparing two values: `ceil(0.1 × min(sizes))`.
fn compare_cost(l: Size, r: Size) -> u64 {
    scaled(l.max.min(r.max), TRAVERSAL)
}

/// `_+_`: string, bytes and list concatenation sum their sizes; strings and bytes cost a
/// traversal of the result, lists 1, numbers 1.
fn add(args: &[Info]) -> Call {
    let (Some(l), Some(r)) = (args.first(), args.get(1)) else {
        return Call::new(1, Ty::Dyn);
    };
    let strings = l.ty.may_be_string() && r.ty.may_be_string();
    let bytes = l.ty.may_be_bytes() && r.ty.may_be_bytes();
    let lists = l.ty.may_be_list() && r.ty.may_be_list();
    let ty = match (&l.ty, &r.ty) {
        (Ty::String, _) | (_, Ty::String) => Ty::String,
        (Ty::List(_), _) | (_, Ty::List(_)) => {
            if l.ty == r.ty {
                l.ty.clone()
            } else {
                Ty::List(Box::new(Ty::Dyn))
            }
        }
        _ => {
            if l.ty == r.ty {
                l.ty.clone()
            } else {
                Ty::Dyn
            }
        }
    };
    let sum = l.size_or_unknown().add(r.size_or_unknown());
    let mut own = 0;
    if strings || bytes {
        own = own.max(sum.cost(TRAVERSAL));
    }
    let exactly = matches!(l.ty, Ty::String | Ty::Bytes | Ty::List(_))
        || matches!(r.ty, Ty::String | Ty::Bytes | Ty::List(_));
    if lists || !exactly {
        own = own.max(1);
    }
    let mut call = Call::new(own, ty);
    if strings || bytes || lists {
        call.size = Some(sum);
        call.entries = Entries::union(r.entries, l.entries);
    }
    call
}

/// The element type of a list receiver, with the declared size of its elements (Kubernetes'
/// `listElementNode`): `None` for receivers without a type parameter.
fn list_element(target: &Info) -> Option<(Ty, Size)> {
    let ty = target.ty.first_parameter()?;
    let size = target
        .path
        .as_ref()
        .and_then(|p| {
            let mut p = p.clone();
            p.push(Seg::Items);
            device_path_size(&p)
        })
        .unwrap_or(Size::UNKNOWN);
    Some((ty, size))
}

/// Kubernetes' estimates of member functions, which take precedence over cel-go's.
fn kubernetes_member(
    name: &str,
    call: &CallExpr,
    target: &Info,
    args: &[Info],
    ty: &Ty,
) -> Option<Call> {
    let sz = target.size_or_unknown();
    let arg = |i: usize| args.get(i).map_or(Size::UNKNOWN, Info::size_or_unknown);
    Some(match name {
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
            match list_element(target) {
                Some((elem, elem_size)) => {
                    let mut per = 1u64;
                    if matches!(elem, Ty::String | Ty::Bytes) {
                        per = per.saturating_add(elem_size.cost(TRAVERSAL));
                    }
                    Call::new(sz.max.saturating_mul(per), ty.clone())
                }
                None => Call::new(sz.cost(TRAVERSAL), ty.clone()),
            }
        }
        "lowerAscii" | "upperAscii" | "substring" | "trim" => {
            Call::new(sz.cost(TRAVERSAL), ty.clone()).sized(sz)
        }
        "replace" if args.len() >= 2 => {
            Call::new(sz.cost(2.0 * TRAVERSAL), ty.clone()).sized(replace_size(sz, arg(0), arg(1)))
        }
        "split" => {
            let mut max = sz.max;
            if let Some(Expr::Literal(l)) = call.args.get(1).map(|a| &a.expr) {
                match l {
                    LiteralValue::Int(n) if **n >= 0 => max = **n as u64,
                    LiteralValue::UInt(n) => max = **n,
                    _ => {}
                }
            }
            Call::new(sz.cost(2.0 * TRAVERSAL), ty.clone()).sized(Size { min: 0, max })
        }
        "join" => {
            let list = sz;
            let mut size = match list_element(target) {
                Some((_, elem)) => list.mul(elem),
                None => Size::fixed(0),
            };
            if !args.is_empty() {
                let separators = Size {
                    min: list.min.saturating_sub(1),
                    max: list.max.saturating_sub(1),
                };
                size = size.add(arg(0).mul(separators));
            }
            Call::new(size.cost(TRAVERSAL), ty.clone()).sized(size)
        }
        "find" | "findAll" if !args.is_empty() => {
            let string = sz.add(Size::fixed(1)).cost(TRAVERSAL);
            let regex = arg(0).cost(REGEX);
            Call::new(string.saturating_mul(regex), ty.clone()).sized(Size {
                min: 0,
                max: sz.max,
            })
        }
        _ => return None,
    })
}

/// The size of `s.replace(old, new)` (Kubernetes' estimate: the shortest `old` replaced by the
/// longest `new` as often as possible, with its quirks kept).
fn replace_size(sz: Size, old: Size, new: Size) -> Size {
    let mut count = Size::fixed(0);
    let mut retained = Size::fixed(0);
    if old.min == 0 {
        count.max = if sz.max < u64::MAX {
            sz.max + 1
        } else {
            sz.max
        };
        retained.max = sz.max;
    } else if new.max <= old.min {
        count.max = 0;
        retained.max = sz.max;
    } else {
        count.max = (sz.max as f64 / old.min as f64).ceil() as u64;
    }
    if old.max == 0 {
        count.min = if sz.min < u64::MAX {
            sz.min + 1
        } else {
            sz.min
        };
        retained.min = sz.min;
    } else if old.max <= new.min {
        count.min = 0;
        retained.min = sz.min;
    } else {
        count.min = (sz.min as f64 / old.max as f64).ceil() as u64;
    }
    count.mul(new).add(retained)
}

/// cel-go's default estimates of the standard library and strings extension.
fn cel_go_default(name: &str, target: Option<&Info>, args: &[Info], ty: Ty) -> Call {
    let arg = |i: usize| args.get(i).map_or(Size::UNKNOWN, Info::size_or_unknown);
    let target_size = target.map_or(Size::UNKNOWN, Info::size_or_unknown);
    let arg_ty = |i: usize| args.get(i).map_or(Ty::Dyn, |a| a.ty.clone());
    match (name, target.is_some(), args.len()) {
        ("format", true, _) => Call::new(target_size.cost(TRAVERSAL), ty),
        ("bytes", false, 1) if arg_ty(0).may_be_string() => {
            let s = arg(0);
            let own = s.cost(TRAVERSAL).max(u64::from(arg_ty(0) == Ty::Dyn));
            Call::new(own, ty).sized(Size {
                min: s.min,
                max: s.max.saturating_mul(4),
            })
        }
        ("string", false, 1) if arg_ty(0).may_be_bytes() => {
            let s = arg(0);
            let own = s.cost(TRAVERSAL).max(u64::from(arg_ty(0) == Ty::Dyn));
            Call::new(own, ty).sized(Size {
                min: s.min / 4,
                max: s.max,
            })
        }
        ("strings.quote", false, 1) => {
            let s = arg(0);
            Call::new(s.cost(TRAVERSAL), ty).sized(Size {
                min: s.min.saturating_add(2),
                max: s.max.saturating_mul(2).saturating_add(2),
            })
        }
        ("startsWith" | "endsWith", true, 1) => Call::new(arg(0).cost(TRAVERSAL), ty),
        ("matches", true, 1) => {
            let string = target_size.add(Size::fixed(1)).cost(TRAVERSAL);
            Call::new(string.saturating_mul(arg(0).cost(REGEX)), ty)
        }
        ("contains", true, 1) => {
            let own = target_size
                .cost(TRAVERSAL)
                .saturating_mul(arg(0).cost(TRAVERSAL));
            Call::new(own, ty)
        }
        _ => Call::new(1, ty),
    }
}

/// The result type of a named function.
fn result_type(name: &str, target: Option<&Info>, args: &[Info]) -> Ty {
    let recv = target.map(|t| &t.ty);
    let list_elem = || match recv {
        Some(Ty::List(e)) => (**e).clone(),
        _ => Ty::Dyn,
    };
    match name {
        "size" | "sign" | "compareTo" | "major" | "minor" | "patch" | "asInteger" | "int"
        | "indexOf" | "lastIndexOf" => Ty::Int,
        "matches" | "contains" | "startsWith" | "endsWith" | "isQuantity" | "isSemver"
        | "includes" | "isSorted" | "isGreaterThan" | "isLessThan" | "isInteger" | "bool" => {
            Ty::Bool
        }
        "find" | "lowerAscii" | "upperAscii" | "trim" | "replace" | "substring" | "charAt"
        | "join" | "string" | "format" | "strings.quote" => Ty::String,
        "findAll" | "split" => Ty::List(Box::new(Ty::String)),
        "quantity" | "add" | "sub" => Ty::Quantity,
        "semver" => Ty::Semver,
        "asApproximateFloat" | "double" => Ty::Double,
        "uint" => Ty::Uint,
        "bytes" => Ty::Bytes,
        "reverse" => recv.cloned().unwrap_or(Ty::Dyn),
        "sum" | "min" | "max" if target.is_some() => list_elem(),
        _ => {
            let _ = args;
            Ty::Dyn
        }
    }
}
