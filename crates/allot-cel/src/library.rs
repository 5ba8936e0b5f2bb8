//! The environment: cel-rust's standard library and strings extension, plus what Kubernetes adds
//! for DRA (quantity, semver, list and regex libraries, `includes`, `cel.bind`).

use crate::values::{QuantityVal, SemverVal, parse_semver, quantity_type, semver_type};
use allot_quantity::{Format, Quantity};
use cel::common::ast::{ComprehensionExpr, Expr, IdedExpr, ListExpr, LiteralValue};
use cel::common::types::{
    BOOL_TYPE, CelBool, CelDouble, CelInt, CelList, CelString, CelUInt, DYN_TYPE, INT_TYPE,
    LIST_TYPE, STRING_TYPE,
};
use cel::common::value::{CowVal, Val};
use cel::parser::{Macro, MacroExprHelper, ParseError};
use cel::{DeclarationError, Env, ExecutionError};
use std::cmp::Ordering;
use std::sync::{Arc, LazyLock};

/// The most values a device's attributes hold (`ResourceSliceMaxAttributeValuesPerDevice`).
const MAX_ATTRIBUTE_VALUES: usize = 48;

/// The shared environment, built once.
pub(crate) static ENV: LazyLock<Result<Arc<Env>, DeclarationError>> =
    LazyLock::new(|| build_env().map(Arc::new));

fn build_env() -> Result<Env, DeclarationError> {
    let mut env = Env::stdlib();
    env.add_extension(cel::extensions::strings)?;
    env.add_macro(Macro::receiver("bind", 3, bind_macro))?;

    // Quantity library (k8s.io/apiserver/pkg/cel/library/quantity.go).
    let q = quantity_type;
    env.add_overload(
        "quantity",
        "string_to_quantity",
        vec![STRING_TYPE],
        quantity,
    )?;
    env.add_overload(
        "isQuantity",
        "is_quantity_string",
        vec![STRING_TYPE],
        is_quantity,
    )?;
    env.add_member_overload("sign", "quantity_sign", q(), vec![], quantity_sign)?;
    env.add_member_overload(
        "isGreaterThan",
        "quantity_is_greater_than",
        q(),
        vec![q()],
        quantity_is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "quantity_is_less_than",
        q(),
        vec![q()],
        quantity_is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "quantity_compare_to",
        q(),
        vec![q()],
        quantity_compare_to,
    )?;
    env.add_member_overload("add", "quantity_add", q(), vec![q()], quantity_add)?;
    env.add_member_overload("add", "quantity_add_int", q(), vec![INT_TYPE], quantity_add)?;
    env.add_member_overload("sub", "quantity_sub", q(), vec![q()], quantity_sub)?;
    env.add_member_overload("sub", "quantity_sub_int", q(), vec![INT_TYPE], quantity_sub)?;
    env.add_member_overload(
        "isInteger",
        "quantity_is_integer",
        q(),
        vec![],
        quantity_is_integer,
    )?;
    env.add_member_overload(
        "asInteger",
        "quantity_get_integer",
        q(),
        vec![],
        quantity_as_integer,
    )?;
    env.add_member_overload(
        "asApproximateFloat",
        "quantity_get_float",
        q(),
        vec![],
        quantity_as_float,
    )?;

    // Semver library (k8s.io/apiserver/pkg/cel/library/semverlib.go), with normalization.
    let s = semver_type;
    env.add_overload("semver", "string_to_semver", vec![STRING_TYPE], semver)?;
    env.add_overload(
        "semver",
        "string_bool_to_semver",
        vec![STRING_TYPE, BOOL_TYPE],
        semver,
    )?;
    env.add_overload("isSemver", "is_semver_string", vec![STRING_TYPE], is_semver)?;
    env.add_overload(
        "isSemver",
        "is_semver_string_bool",
        vec![STRING_TYPE, BOOL_TYPE],
        is_semver,
    )?;
    env.add_member_overload("major", "semver_major", s(), vec![], semver_major)?;
    env.add_member_overload("minor", "semver_minor", s(), vec![], semver_minor)?;
    env.add_member_overload("patch", "semver_patch", s(), vec![], semver_patch)?;
    env.add_member_overload(
        "isGreaterThan",
        "semver_is_greater_than",
        s(),
        vec![s()],
        semver_is_greater_than,
    )?;
    env.add_member_overload(
        "isLessThan",
        "semver_is_less_than",
        s(),
        vec![s()],
        semver_is_less_than,
    )?;
    env.add_member_overload(
        "compareTo",
        "semver_compare_to",
        s(),
        vec![s()],
        semver_compare_to,
    )?;

    // List-type attributes: `includes` on scalars and lists.
    env.add_member_overload(
        "includes",
        "dyn_includes_dyn",
        DYN_TYPE,
        vec![DYN_TYPE],
        includes,
    )?;

    // Kubernetes list library (k8s.io/apiserver/pkg/cel/library/lists.go).
    env.add_member_overload(
        "isSorted",
        "list_is_sorted",
        LIST_TYPE,
        vec![],
        list_is_sorted,
    )?;
    env.add_member_overload("sum", "list_sum", LIST_TYPE, vec![], list_sum)?;
    env.add_member_overload("min", "list_min", LIST_TYPE, vec![], list_min)?;
    env.add_member_overload("max", "list_max", LIST_TYPE, vec![], list_max)?;
    env.add_member_overload(
        "indexOf",
        "list_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_index_of,
    )?;
    env.add_member_overload(
        "lastIndexOf",
        "list_last_index_of",
        LIST_TYPE,
        vec![DYN_TYPE],
        list_last_index_of,
    )?;

    // Kubernetes regex library (k8s.io/apiserver/pkg/cel/library/regex.go).
    env.add_member_overload(
        "find",
        "string_find_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string",
        STRING_TYPE,
        vec![STRING_TYPE],
        find_all,
    )?;
    env.add_member_overload(
        "findAll",
        "string_find_all_string_int",
        STRING_TYPE,
        vec![STRING_TYPE, INT_TYPE],
        find_all,
    )?;
    crate::metered::register(&mut env)?;
    Ok(env)
}

/// Expands `cel.bind(var, init, body)` (cel-go `ext.Bindings`) into a comprehension over an
/// empty list whose accumulator is `var`.
fn bind_macro(
    helper: &mut MacroExprHelper<'_>,
    target: &mut Option<IdedExpr>,
    args: &mut Vec<IdedExpr>,
) -> Result<Option<IdedExpr>, ParseError> {
    if !matches!(target.as_ref().map(|t| &t.expr), Some(Expr::Ident(n)) if n == "cel") {
        return Ok(None);
    }
    let var = match args.first().map(|a| &a.expr) {
        Some(Expr::Ident(name)) => name.clone(),
        _ => {
            let id = args.first().map(|a| a.id).unwrap_or_default();
            return Err(
                helper.new_error(id, "cel.bind() variable names must be simple identifiers")
            );
        }
    };
    let body = args.pop().unwrap_or_default();
    let init = args.pop().unwrap_or_default();
    target.take();
    let bind = ComprehensionExpr {
        iter_range: helper.next_expr(Expr::List(ListExpr::new(Vec::new()))),
        iter_var: "#unused".to_owned(),
        iter_var2: None,
        accu_var: var.clone(),
        accu_init: init,
        loop_cond: helper.next_expr(Expr::Literal(LiteralValue::Boolean(false.into()))),
        loop_step: helper.next_expr(Expr::Ident(var)),
        result: body,
    };
    Ok(Some(helper.next_expr(Expr::Comprehension(Box::new(bind)))))
}

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

fn wrong_type(function: &str, got: &dyn Val, want: &str) -> ExecutionError {
    ExecutionError::function_error(
        function,
        format!("expected {want}, got {}", got.get_type().name()),
    )
}

fn arg<'a, 'b, 'v>(
    args: &'a [CowVal<'b, 'v>],
    i: usize,
    function: &str,
) -> Result<&'a (dyn Val + 'v), ExecutionError> {
    args.get(i)
        .map(|a| a.as_ref())
        .ok_or_else(|| ExecutionError::invalid_argument_count(i + 1, args.len()))
        .map_err(|e| ExecutionError::function_error(function, e))
}

fn str_arg<'a, 'b, 'v>(
    args: &'a [CowVal<'b, 'v>],
    i: usize,
    function: &str,
) -> Result<&'a str, ExecutionError> {
    let v = arg(args, i, function)?;
    v.downcast_ref::<CelString>()
        .map(|s| s.inner())
        .ok_or_else(|| wrong_type(function, v, "string"))
}

fn bool_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<bool, ExecutionError> {
    let v = arg(args, i, function)?;
    v.downcast_ref::<CelBool>()
        .map(|b| *b.inner())
        .ok_or_else(|| wrong_type(function, v, "bool"))
}

fn int_arg(args: &[CowVal<'_, '_>], i: usize, function: &str) -> Result<i64, ExecutionError> {
    let v = arg(args, i, function)?;
    v.downcast_ref::<CelInt>()
        .map(|n| *n.inner())
        .ok_or_else(|| wrong_type(function, v, "int"))
}

fn quantity_arg<'a>(
    args: &'a [CowVal<'_, '_>],
    i: usize,
    function: &str,
) -> Result<&'a Quantity, ExecutionError> {
    let v = arg(args, i, function)?;
    v.downcast_ref::<QuantityVal>()
        .map(|q| &q.0)
        .ok_or_else(|| wrong_type(function, v, "kubernetes.Quantity"))
}

fn semver_arg<'a>(
    args: &'a [CowVal<'_, '_>],
    i: usize,
    function: &str,
) -> Result<&'a SemverVal, ExecutionError> {
    let v = arg(args, i, function)?;
    v.downcast_ref::<SemverVal>()
        .ok_or_else(|| wrong_type(function, v, "kubernetes.Semver"))
}

fn ok_bool<'b, 'v>(b: bool) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

fn ok_int<'b, 'v>(i: i64) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(i)))
}

fn ordering_int(o: Ordering) -> i64 {
    match o {
        Ordering::Less => -1,
        Ordering::Equal => 0,
        Ordering::Greater => 1,
    }
}

/// Kubernetes' runtime cost of parsing a string argument: a traversal of it.
fn charge_parse(s: &str) -> Result<(), ExecutionError> {
    let chars = s.chars().count() as u64;
    crate::meter::charge(crate::cost::scaled_cost(chars, 0.1), s.len() as u64 + 1)
}

fn quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "quantity")?;
    charge_parse(s)?;
    let q: Quantity = s
        .parse()
        .map_err(|e| ExecutionError::function_error("quantity", e))?;
    Ok(CowVal::owned(QuantityVal(q)))
}

fn is_quantity<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "isQuantity")?;
    charge_parse(s)?;
    ok_bool(s.parse::<Quantity>().is_ok())
}

fn quantity_sign<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ok_int(i64::from(quantity_arg(&args, 0, "sign")?.sign()))
}

fn quantity_is_greater_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = quantity_arg(&args, 0, "isGreaterThan")?;
    let b = quantity_arg(&args, 1, "isGreaterThan")?;
    ok_bool(a > b)
}

fn quantity_is_less_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = quantity_arg(&args, 0, "isLessThan")?;
    let b = quantity_arg(&args, 1, "isLessThan")?;
    ok_bool(a < b)
}

fn quantity_compare_to<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = quantity_arg(&args, 0, "compareTo")?;
    let b = quantity_arg(&args, 1, "compareTo")?;
    ok_int(ordering_int(a.cmp(b)))
}

/// The second operand of `add`/`sub`: a quantity, or an int as `DecimalExponent` (as upstream).
fn quantity_operand(args: &[CowVal<'_, '_>], function: &str) -> Result<Quantity, ExecutionError> {
    let v = arg(args, 1, function)?;
    if let Some(i) = v.downcast_ref::<CelInt>() {
        return Ok(Quantity::from_i64(*i.inner(), Format::DecimalExponent));
    }
    quantity_arg(args, 1, function).cloned()
}

fn quantity_add<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = quantity_arg(&args, 0, "add")?;
    let b = quantity_operand(&args, "add")?;
    let sum = a
        .checked_add(&b)
        .ok_or_else(|| ExecutionError::function_error("add", "quantity out of range"))?;
    Ok(CowVal::owned(QuantityVal(sum)))
}

fn quantity_sub<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = quantity_arg(&args, 0, "sub")?;
    let b = quantity_operand(&args, "sub")?;
    let diff = a
        .checked_sub(&b)
        .ok_or_else(|| ExecutionError::function_error("sub", "quantity out of range"))?;
    Ok(CowVal::owned(QuantityVal(diff)))
}

fn quantity_is_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ok_bool(
        quantity_arg(&args, 0, "isInteger")?
            .upstream_as_int64()
            .is_some(),
    )
}

fn quantity_as_integer<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let q = quantity_arg(&args, 0, "asInteger")?;
    match q.upstream_as_int64() {
        Some(i) => ok_int(i),
        None => Err(ExecutionError::function_error(
            "asInteger",
            "cannot convert value to integer",
        )),
    }
}

fn quantity_as_float<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let q = quantity_arg(&args, 0, "asApproximateFloat")?;
    Ok(CowVal::owned(CelDouble::from(q.as_approximate_f64())))
}

fn semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "semver")?;
    crate::meter::charge(1, s.len() as u64 + 1)?;
    let normalize = args.len() > 1 && bool_arg(&args, 1, "semver")?;
    let v = parse_semver(s, normalize).map_err(|e| ExecutionError::function_error("semver", e))?;
    Ok(CowVal::owned(SemverVal(v)))
}

fn is_semver<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "isSemver")?;
    crate::meter::charge(1, s.len() as u64 + 1)?;
    let normalize = args.len() > 1 && bool_arg(&args, 1, "isSemver")?;
    ok_bool(parse_semver(s, normalize).is_ok())
}

fn semver_major<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ok_int(semver_arg(&args, 0, "major")?.0.major as i64)
}

fn semver_minor<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ok_int(semver_arg(&args, 0, "minor")?.0.minor as i64)
}

fn semver_patch<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    ok_int(semver_arg(&args, 0, "patch")?.0.patch as i64)
}

fn semver_is_greater_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = semver_arg(&args, 0, "isGreaterThan")?;
    let b = semver_arg(&args, 1, "isGreaterThan")?;
    ok_bool(a.compare(b) == Ordering::Greater)
}

fn semver_is_less_than<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = semver_arg(&args, 0, "isLessThan")?;
    let b = semver_arg(&args, 1, "isLessThan")?;
    ok_bool(a.compare(b) == Ordering::Less)
}

fn semver_compare_to<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let a = semver_arg(&args, 0, "compareTo")?;
    let b = semver_arg(&args, 1, "compareTo")?;
    ok_int(ordering_int(a.compare(b)))
}

/// The elements of a list value.
fn elements<'a, 'v>(
    list: &'a (dyn Val + 'v),
    function: &str,
) -> Result<Vec<&'a (dyn Val + 'v)>, ExecutionError> {
    let iterable = list
        .as_iterable()
        .ok_or_else(|| wrong_type(function, list, "list"))?;
    let mut it = iterable.iter();
    let mut out = Vec::new();
    while let Some(v) = it.next() {
        out.push(v);
    }
    Ok(out)
}

/// `x.includes(v)`: for a list, whether it contains `v`; for a scalar, whether it equals `v`.
fn includes<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let target = arg(&args, 0, "includes")?;
    let needle = arg(&args, 1, "includes")?;
    if target.downcast_ref::<CelList>().is_some() {
        let items = elements(target, "includes")?;
        let inspected = items.len().min(MAX_ATTRIBUTE_VALUES) as u64;
        crate::meter::charge(inspected.max(1), crate::metered::deep_size(target))?;
        if items.len() > MAX_ATTRIBUTE_VALUES {
            return Err(ExecutionError::function_error(
                "includes",
                format!(
                    "'includes' function cannot be applied to lists longer than {MAX_ATTRIBUTE_VALUES} values"
                ),
            ));
        }
        return ok_bool(items.iter().any(|v| v.equals(needle)));
    }
    crate::meter::charge(1, crate::metered::deep_size(target))?;
    ok_bool(target.equals(needle))
}

fn compare(a: &dyn Val, b: &dyn Val, function: &str) -> Result<Ordering, ExecutionError> {
    a.as_comparer()
        .ok_or_else(|| wrong_type(function, a, "comparable elements"))?
        .compare(b)
}

/// Kubernetes' runtime cost of a list function: a traversal of its receiver (each element 1, a
/// string element a tenth of its length); the work is the receiver's size.
fn charge_traversal(list: &dyn Val) -> Result<(), ExecutionError> {
    let mut cost: u64 = 0;
    if let Some(iterable) = list.as_iterable() {
        let mut it = iterable.iter();
        while let Some(v) = it.next() {
            cost = cost.saturating_add(match v.downcast_ref::<CelString>() {
                Some(s) => (s.inner().len() as f64 * 0.1) as u64,
                None => 1,
            });
        }
    }
    crate::meter::charge(cost, crate::metered::deep_size(list))
}

fn list_is_sorted<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_traversal(arg(&args, 0, "isSorted")?)?;
    let items = elements(arg(&args, 0, "isSorted")?, "isSorted")?;
    for pair in items.windows(2) {
        if compare(pair[0], pair[1], "isSorted")? == Ordering::Greater {
            return ok_bool(false);
        }
    }
    ok_bool(true)
}

fn list_sum<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_traversal(arg(&args, 0, "sum")?)?;
    let items = elements(arg(&args, 0, "sum")?, "sum")?;
    let overflow = || ExecutionError::function_error("sum", "integer overflow");
    match items.first() {
        None => ok_int(0),
        Some(first) if first.downcast_ref::<CelInt>().is_some() => {
            let mut total: i64 = 0;
            for v in &items {
                let i = v
                    .downcast_ref::<CelInt>()
                    .ok_or_else(|| wrong_type("sum", *v, "int"))?;
                total = total.checked_add(*i.inner()).ok_or_else(overflow)?;
            }
            ok_int(total)
        }
        Some(first) if first.downcast_ref::<CelUInt>().is_some() => {
            let mut total: u64 = 0;
            for v in &items {
                let i = v
                    .downcast_ref::<CelUInt>()
                    .ok_or_else(|| wrong_type("sum", *v, "uint"))?;
                total = total.checked_add(*i.inner()).ok_or_else(overflow)?;
            }
            Ok(CowVal::owned(CelUInt::from(total)))
        }
        Some(_) => {
            let mut total = 0.0;
            for v in &items {
                let d = v
                    .downcast_ref::<CelDouble>()
                    .ok_or_else(|| wrong_type("sum", *v, "double"))?;
                total += *d.inner();
            }
            Ok(CowVal::owned(CelDouble::from(total)))
        }
    }
}

fn list_extreme<'b, 'v>(args: Args<'b, 'v>, function: &str, want: Ordering) -> Ret<'b, 'v> {
    charge_traversal(arg(&args, 0, function)?)?;
    let items = elements(arg(&args, 0, function)?, function)?;
    let mut best = *items.first().ok_or_else(|| {
        ExecutionError::function_error(function, format!("{function} called on empty list"))
    })?;
    for v in items.iter().skip(1) {
        if compare(*v, best, function)? == want {
            best = *v;
        }
    }
    Ok(CowVal::Owned(best.clone_as_boxed()))
}

fn list_min<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    list_extreme(args, "min", Ordering::Less)
}

fn list_max<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    list_extreme(args, "max", Ordering::Greater)
}

pub(crate) fn list_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_traversal(arg(&args, 0, "indexOf")?)?;
    let items = elements(arg(&args, 0, "indexOf")?, "indexOf")?;
    let needle = arg(&args, 1, "indexOf")?;
    ok_int(
        items
            .iter()
            .position(|v| v.equals(needle))
            .map_or(-1, |i| i as i64),
    )
}

pub(crate) fn list_last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_traversal(arg(&args, 0, "lastIndexOf")?)?;
    let items = elements(arg(&args, 0, "lastIndexOf")?, "lastIndexOf")?;
    let needle = arg(&args, 1, "lastIndexOf")?;
    ok_int(
        items
            .iter()
            .rposition(|v| v.equals(needle))
            .map_or(-1, |i| i as i64),
    )
}

/// Charges what cel-go charges for `find`/`findAll` (the string times the pattern).
fn charge_regex(args: &[CowVal<'_, '_>], function: &str) -> Result<(), ExecutionError> {
    let s = str_arg(args, 0, function)?;
    let pattern = str_arg(args, 1, function)?;
    let chars = s.chars().count() as u64;
    let cost = crate::cost::scaled_cost(chars.saturating_add(1), 0.1).saturating_mul(
        crate::cost::scaled_cost(pattern.chars().count() as u64, 0.25),
    );
    crate::meter::charge(cost, cost.saturating_add(s.len() as u64))
}

fn find<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "find")?;
    let pattern = str_arg(&args, 1, "find")?;
    charge_regex(&args, "find")?;
    let found = crate::meter::with_dynamic_regex(pattern, |re| {
        re.find(s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default()
    })
    .map_err(|e| ExecutionError::function_error("find", e))?;
    Ok(CowVal::owned(CelString::from(found)))
}

fn find_all<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let s = str_arg(&args, 0, "findAll")?;
    let pattern = str_arg(&args, 1, "findAll")?;
    charge_regex(&args, "findAll")?;
    let limit = if args.len() > 2 {
        int_arg(&args, 2, "findAll")?
    } else {
        -1
    };
    let ranges = crate::meter::with_dynamic_regex(pattern, |re| {
        let mut ranges = Vec::new();
        for m in re.find_iter(s) {
            if limit >= 0 && ranges.len() as i64 >= limit {
                break;
            }
            ranges.push(m.range());
        }
        ranges
    })
    .map_err(|e| ExecutionError::function_error("findAll", e))?;
    strings_at(s, ranges)
}

/// The substrings of `s` at `ranges` as a list, each charged before it is added.
pub(crate) fn strings_at<'b, 'v>(s: &str, ranges: Vec<std::ops::Range<usize>>) -> Ret<'b, 'v> {
    let mut items: Vec<Box<dyn Val>> = Vec::with_capacity(ranges.len());
    for r in ranges {
        crate::meter::charge(0, r.len() as u64 + 48)?;
        items.push(Box::new(CelString::from(s[r].to_string())));
    }
    Ok(CowVal::owned(CelList::from(items)))
}
