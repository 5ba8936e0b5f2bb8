//! The metering functions the instrumented expression calls (see `instrument`): each charges the
//! meter what cel-go's cost tracker charges for the operation it stands for, plus the work it is
//! about to do, *before* doing it; then does what cel-rust's interpreter or library would.
//!
//! The string functions are reimplemented here rather than wrapped, with cel-rust's semantics and
//! errors (the overload is chosen by the same `Type::is_assignable` tests, in the order cel-rust
//! declares them), because their cost depends on their arguments and some build results far
//! larger than their receiver: a result's size is computed and charged before it is built.

use crate::meter::{self, charge};
use cel::common::traits::Iterable;
use cel::common::types::{
    BYTES_TYPE, CelBool, CelBytes, CelInt, CelList, CelString, DYN_TYPE, INT_TYPE, Kind, LIST_TYPE,
    MAP_TYPE, STRING_TYPE, Type,
};
use cel::common::value::{CowVal, Val};
use cel::{DeclarationError, Env, ExecutionError, Value};
use std::cmp::Ordering;

type Args<'b, 'v> = Vec<CowVal<'b, 'v>>;
type Ret<'b, 'v> = Result<CowVal<'b, 'v>, ExecutionError>;

/// cel-go's `StringTraversalCostFactor`.
const TRAVERSAL: f64 = 0.1;
/// cel-go's `RegexStringLengthCostFactor`.
const REGEX: f64 = 0.25;
/// What one element of a built list holds besides its bytes (a box and a string header).
const ELEMENT_OVERHEAD: u64 = 48;

/// Member functions of the standard library and strings extension that scan or build strings,
/// reimplemented here, with the argument counts (the receiver included) they are reimplemented
/// for. The instrumenter rewrites a member call only with one of these counts: a call with
/// another stays as written, so that it fails with the library's own error (`found no matching
/// overload for 'replace' applied to 'string.(string)'`), not one naming the metering function.
pub(crate) const MEMBERS: &[(&str, &[usize], cel::common::functions::Function)] = &[
    ("contains", &[2], contains),
    ("startsWith", &[2], starts_with),
    ("endsWith", &[2], ends_with),
    ("matches", &[2], matches),
    ("size", &[1], size),
    ("charAt", &[2], char_at),
    ("indexOf", &[2, 3], index_of),
    ("lastIndexOf", &[2, 3], last_index_of),
    ("lowerAscii", &[1], lower_ascii),
    ("upperAscii", &[1], upper_ascii),
    ("trim", &[1], trim),
    ("reverse", &[1], reverse),
    ("replace", &[3, 4], replace),
    ("split", &[2, 3], split),
    ("substring", &[2, 3], substring),
    ("join", &[1, 2], join),
];

/// Whether `name` with `arity` arguments (the receiver included) is a metered member call.
pub(crate) fn metered_member(name: &str, arity: usize) -> bool {
    MEMBERS
        .iter()
        .any(|(member, arities, _)| *member == name && arities.contains(&arity))
}

/// Registers the metering functions.
pub(crate) fn register(env: &mut Env) -> Result<(), DeclarationError> {
    let p = crate::instrument::PREFIX;
    let dyns = |n: usize| (0..n).map(|_| DYN_TYPE).collect::<Vec<Type>>();
    let mut add = |name: &str, arity: usize, f: cel::common::functions::Function| {
        env.add_overload(
            &format!("{p}{name}"),
            &format!("{p}{name}/{arity}"),
            dyns(arity),
            f,
        )
    };
    add("touch", 1, touch)?;
    add("output", 1, touch)?;
    add("range", 1, touch)?;
    add("tick", 3, tick)?;
    add("format_template", 1, format_template)?;
    add("_==_", 2, equals)?;
    add("_!=_", 2, not_equals)?;
    add("_<_", 2, less)?;
    add("_<=_", 2, less_equals)?;
    add("_>_", 2, greater)?;
    add("_>=_", 2, greater_equals)?;
    add("_+_", 2, plus)?;
    add("@in", 2, contained)?;
    add("g", 2, global)?;
    add("g", 3, global)?;
    for &(name, arities, f) in MEMBERS {
        for &arity in arities {
            add(name, arity, f)?;
        }
    }
    add("regex.matches", 3, regex_matches)?;
    add("regex.matches_global", 3, regex_matches_global)?;
    add("regex.find", 3, regex_find)?;
    add("regex.findAll", 3, regex_find_all)?;
    add("regex.findAll", 4, regex_find_all)?;
    Ok(())
}

/// `ceil(x × factor)` for run-time costs.
fn scaled(x: u64, factor: f64) -> u64 {
    crate::cost::scaled_cost(x, factor)
}

/// cel-go's `actualSize`: a sizer's size (code points, bytes, entries), else 1.
pub(crate) fn cel_size(v: &dyn Val) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return s.inner().chars().count() as u64;
    }
    v.as_sizer()
        .map(|s| u64::try_from(*s.size().inner()).unwrap_or(0))
        .unwrap_or(1)
}

/// Upper bound of the bytes a value holds (what copying or scanning it touches).
pub(crate) fn deep_size(v: &dyn Val) -> u64 {
    deep_size_at(v, 0)
}

fn deep_size_at(v: &dyn Val, depth: usize) -> u64 {
    if let Some(s) = v.downcast_ref::<CelString>() {
        return s.inner().len() as u64 + 1;
    }
    if let Some(b) = v.downcast_ref::<CelBytes>() {
        return b.inner().len() as u64 + 1;
    }
    if depth > 64 {
        return 1;
    }
    let Some(iterable) = v.as_iterable() else {
        return 1;
    };
    let indexer = (v.get_type().kind() == Kind::Map)
        .then(|| v.as_indexer())
        .flatten();
    let mut total: u64 = 1;
    let mut it = iterable.iter();
    while let Some(item) = it.next() {
        total = total.saturating_add(deep_size_at(item, depth + 1));
        if let Some(value) = indexer.and_then(|i| i.get(item).ok()) {
            total = total.saturating_add(deep_size_at(value.as_ref(), depth + 1));
        }
    }
    total
}

fn string(s: String) -> CowVal<'static, 'static> {
    CowVal::owned(CelString::from(s))
}

fn boolean<'b, 'v>(b: bool) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelBool::from(b)))
}

fn int<'b, 'v>(i: i64) -> Ret<'b, 'v> {
    Ok(CowVal::owned(CelInt::from(i)))
}

fn type_names(args: &[CowVal<'_, '_>]) -> Vec<String> {
    args.iter()
        .map(|a| a.get_type().name().to_owned())
        .collect()
}

/// cel-rust's error for a member call without a matching overload.
fn no_member_overload(name: &str, args: &[CowVal<'_, '_>]) -> ExecutionError {
    ExecutionError::no_such_member_overload(name, type_names(args))
}

/// Whether the arguments match the declared parameter types, as cel-rust picks overloads.
fn signature(args: &[CowVal<'_, '_>], types: &[Type]) -> bool {
    args.len() == types.len()
        && types
            .iter()
            .zip(args)
            .all(|(t, a)| t.is_assignable(a.as_ref()))
}

fn str_at<'a>(args: &'a [CowVal<'_, '_>], i: usize) -> &'a str {
    args[i]
        .downcast_ref::<CelString>()
        .map(|s| s.inner())
        .unwrap_or_default()
}

fn int_at(args: &[CowVal<'_, '_>], i: usize) -> i64 {
    args[i]
        .downcast_ref::<CelInt>()
        .map(|n| *n.inner())
        .unwrap_or(0)
}

// --- Metering of the interpreter's own work. ---

/// Charges copying (or iterating over) its argument, and yields it.
fn touch<'b, 'v>(mut args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge(0, deep_size(args[0].as_ref()))?;
    Ok(args.swap_remove(0))
}

/// One loop iteration: its static cost and node count, and the copy of its value.
fn tick<'b, 'v>(mut args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let cost = u64::try_from(int_at(&args, 1)).unwrap_or(0);
    let nodes = u64::try_from(int_at(&args, 2)).unwrap_or(0);
    charge(cost, nodes.saturating_add(deep_size(args[0].as_ref())))?;
    args.truncate(1);
    Ok(args.swap_remove(0))
}

/// The template of `format`: cel-go charges a traversal of it.
fn format_template<'b, 'v>(mut args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let t = args[0].as_ref();
    charge(scaled(cel_size(t), TRAVERSAL), deep_size(t))?;
    Ok(args.swap_remove(0))
}

// --- Operators. ---

/// cel-go's cost of comparing two values of these sizes.
fn compare_cost(a: &dyn Val, b: &dyn Val) -> u64 {
    scaled(cel_size(a).min(cel_size(b)), TRAVERSAL)
}

fn charge_comparison(a: &dyn Val, b: &dyn Val) -> Result<(), ExecutionError> {
    charge(
        compare_cost(a, b),
        deep_size(a).min(deep_size(b)).saturating_add(1),
    )
}

fn equals<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_comparison(args[0].as_ref(), args[1].as_ref())?;
    boolean(args[0].as_ref().equals(args[1].as_ref()))
}

fn not_equals<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    charge_comparison(args[0].as_ref(), args[1].as_ref())?;
    boolean(!args[0].as_ref().equals(args[1].as_ref()))
}

/// cel-rust's `compare_values`: an error from comparing values of types that cannot be
/// compared becomes a "no matching overload" error of the operator.
fn compare(operator: &str, args: &[CowVal<'_, '_>]) -> Result<Ordering, ExecutionError> {
    let (l, r) = (args[0].as_ref(), args[1].as_ref());
    let sized = |v: &dyn Val| {
        v.downcast_ref::<CelString>().is_some() || v.downcast_ref::<CelBytes>().is_some()
    };
    if sized(l) && sized(r) {
        charge_comparison(l, r)?;
    } else {
        charge(1, 1)?;
    }
    let context = || ExecutionError::no_such_overload(operator, type_names(args));
    l.as_comparer()
        .ok_or_else(context)
        .and_then(|c| c.compare(r))
        .map_err(|e| overload_context(e, context))
}

/// cel-rust's `with_overload_context`.
fn overload_context(e: ExecutionError, context: impl FnOnce() -> ExecutionError) -> ExecutionError {
    match e {
        ExecutionError::NoSuchOverload(_)
        | ExecutionError::ValuesNotComparable(_, _)
        | ExecutionError::UnsupportedKeyType(_)
        | ExecutionError::UnexpectedType { .. } => context(),
        other => other,
    }
}

fn less<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(compare("_<_", &args)? == Ordering::Less)
}

fn less_equals<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(compare("_<=_", &args)? != Ordering::Greater)
}

fn greater<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(compare("_>_", &args)? == Ordering::Greater)
}

fn greater_equals<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    boolean(compare("_>=_", &args)? != Ordering::Less)
}

/// `_+_`: a concatenation charges its whole result before it is built.
fn plus<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (l, r) = (args[0].as_ref(), args[1].as_ref());
    let strings =
        l.downcast_ref::<CelString>().is_some() && r.downcast_ref::<CelString>().is_some();
    let bytes = l.downcast_ref::<CelBytes>().is_some() && r.downcast_ref::<CelBytes>().is_some();
    let lists = l.get_type().kind() == Kind::List && r.get_type().kind() == Kind::List;
    if strings || bytes {
        let cost = scaled(cel_size(l).saturating_add(cel_size(r)), TRAVERSAL);
        charge(cost, deep_size(l).saturating_add(deep_size(r)))?;
    } else if lists {
        let elements = cel_size(l).saturating_add(cel_size(r));
        let work = deep_size(l)
            .saturating_add(deep_size(r))
            .saturating_add(elements.saturating_mul(ELEMENT_OVERHEAD));
        charge(1, work)?;
    } else {
        charge(1, 1)?;
    }
    let unsupported = || {
        ExecutionError::UnsupportedBinaryOperator(
            "add",
            Value::try_from(l).unwrap_or(Value::Null),
            Value::try_from(r).unwrap_or(Value::Null),
        )
    };
    let sum = l.as_adder().ok_or_else(unsupported)?.add(r)?.into_owned();
    Ok(CowVal::Owned(sum))
}

/// `@in`: a list is searched (cel-go charges its size), a map looked up (1).
fn contained<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let (x, c) = (args[0].as_ref(), args[1].as_ref());
    if c.get_type().kind() == Kind::List {
        charge(cel_size(c), deep_size(c).saturating_add(deep_size(x)))?;
    } else {
        charge(1, deep_size(x))?;
    }
    let context = || ExecutionError::no_such_overload("@in", type_names(&args));
    let container = c.as_container().ok_or_else(context)?;
    let found = container
        .contains(x)
        .map_err(|e| overload_context(e, context))?;
    boolean(found)
}

// --- Global functions of the standard library: metered, then delegated. ---

fn global<'b, 'v>(mut args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let name = str_at(&args, 0).to_string();
    args.remove(0);
    let env = crate::environment().map_err(|e| ExecutionError::function_error(&name, e))?;
    let arg = args.first().map(|a| a.as_ref());
    let cost = match (name.as_str(), arg) {
        ("string", Some(a)) if a.downcast_ref::<CelBytes>().is_some() => {
            scaled(cel_size(a), TRAVERSAL)
        }
        ("bytes" | "strings.quote", Some(a)) if a.downcast_ref::<CelString>().is_some() => {
            scaled(cel_size(a), TRAVERSAL)
        }
        _ => 1,
    };
    let input: u64 = args.iter().map(|a| deep_size(a.as_ref())).sum();
    // The results are at most a small multiple of the input (`strings.quote` doubles at most).
    charge(cost, input.saturating_mul(3))?;
    match env.find_overload(&name, &args) {
        Some(op) => {
            let out = op(args)?;
            charge(0, deep_size(out.as_ref()))?;
            Ok(out)
        }
        None => Err(ExecutionError::no_such_overload(&name, type_names(&args))),
    }
}

// --- Member functions of strings (standard library and strings extension). ---

fn contains<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("contains", &args));
    }
    let (s, sub) = (str_at(&args, 0), str_at(&args, 1));
    let cost = scaled(cel_size(args[0].as_ref()), TRAVERSAL)
        .saturating_mul(scaled(cel_size(args[1].as_ref()), TRAVERSAL));
    charge(cost, (s.len() + sub.len()) as u64 + 1)?;
    boolean(s.contains(sub))
}

fn starts_with<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("startsWith", &args));
    }
    let (s, prefix) = (str_at(&args, 0), str_at(&args, 1));
    charge(
        scaled(cel_size(args[0].as_ref()), TRAVERSAL),
        prefix.len() as u64 + 1,
    )?;
    boolean(s.starts_with(prefix))
}

fn ends_with<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("endsWith", &args));
    }
    let (s, suffix) = (str_at(&args, 0), str_at(&args, 1));
    charge(
        scaled(cel_size(args[0].as_ref()), TRAVERSAL),
        suffix.len() as u64 + 1,
    )?;
    boolean(s.ends_with(suffix))
}

/// cel-go's cost of matching a string against a pattern.
fn regex_cost(s: &str, pattern: &str) -> u64 {
    let chars = s.chars().count() as u64;
    scaled(chars.saturating_add(1), TRAVERSAL)
        .saturating_mul(scaled(pattern.chars().count() as u64, REGEX))
}

fn invalid_regex(pattern: &str, err: &regex::Error) -> ExecutionError {
    ExecutionError::FunctionError {
        function: "matches".to_string(),
        message: format!("'{pattern}' not a valid regex:\n{err}"),
    }
}

/// `s.matches(re)` with a pattern computed at run time.
fn matches<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("matches", &args));
    }
    let (s, pattern) = (str_at(&args, 0), str_at(&args, 1));
    let cost = regex_cost(s, pattern);
    charge(cost, cost.saturating_add((s.len() + pattern.len()) as u64))?;
    let found = meter::with_dynamic_regex(pattern, |re| re.is_match(s))
        .map_err(|e| invalid_regex(pattern, &e))?;
    boolean(found)
}

/// Runs `f` with the regex of a constant-pattern call (whose arguments end with the pattern's
/// index, the pattern itself before it), compiling it if the meter has none.
fn with_precompiled<T>(
    args: &[CowVal<'_, '_>],
    pattern: &str,
    f: impl Fn(&regex::Regex) -> T,
) -> Result<T, regex::Error> {
    let index = usize::try_from(int_at(args, args.len() - 1)).unwrap_or(usize::MAX);
    match meter::with_regex(index, |re| re.map(&f)) {
        Some(out) => Ok(out),
        None => meter::with_dynamic_regex(pattern, f),
    }
}

fn regex_matches<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let plain = &args[..args.len() - 1];
    if !signature(plain, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("matches", plain));
    }
    let (s, pattern) = (str_at(plain, 0), str_at(plain, 1));
    let cost = regex_cost(s, pattern);
    charge(cost, cost.saturating_add(s.len() as u64))?;
    let found = with_precompiled(&args, pattern, |re| re.is_match(s))
        .map_err(|e| invalid_regex(pattern, &e))?;
    boolean(found)
}

fn regex_matches_global<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let plain = &args[..args.len() - 1];
    if !signature(plain, &[STRING_TYPE, STRING_TYPE]) {
        return Err(ExecutionError::no_such_overload(
            "matches",
            type_names(plain),
        ));
    }
    let (s, pattern) = (str_at(plain, 0), str_at(plain, 1));
    // The global form's overload is `matches`, which cel-go charges 1.
    charge(1, regex_cost(s, pattern).saturating_add(s.len() as u64))?;
    let found = with_precompiled(&args, pattern, |re| re.is_match(s))
        .map_err(|e| invalid_regex(pattern, &e))?;
    boolean(found)
}

fn regex_find<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let plain = &args[..args.len() - 1];
    if !signature(plain, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("find", plain));
    }
    let (s, pattern) = (str_at(plain, 0), str_at(plain, 1));
    let cost = regex_cost(s, pattern);
    charge(cost, cost.saturating_add(s.len() as u64))?;
    let found = with_precompiled(&args, pattern, |re| {
        re.find(s)
            .map(|m| m.as_str().to_string())
            .unwrap_or_default()
    })
    .map_err(|e| ExecutionError::function_error("find", e))?;
    Ok(string(found))
}

fn regex_find_all<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let plain = &args[..args.len() - 1];
    let with_limit = signature(plain, &[STRING_TYPE, STRING_TYPE, INT_TYPE]);
    if !with_limit && !signature(plain, &[STRING_TYPE, STRING_TYPE]) {
        return Err(no_member_overload("findAll", plain));
    }
    let (s, pattern) = (str_at(plain, 0), str_at(plain, 1));
    let cost = regex_cost(s, pattern);
    charge(cost, cost.saturating_add(s.len() as u64))?;
    let limit = if with_limit { int_at(plain, 2) } else { -1 };
    // The matches are at most as many as the characters, and hold at most the string.
    let ranges = with_precompiled(&args, pattern, |re| {
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
    crate::library::strings_at(s, ranges)
}

fn size<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let v = args[0].as_ref();
    // cel-rust declares `size` on bytes, lists, maps and strings, in that order.
    for (t, sizer) in [
        (BYTES_TYPE, true),
        (LIST_TYPE, true),
        (MAP_TYPE, true),
        (STRING_TYPE, false),
    ] {
        if t.is_assignable(v) {
            charge(1, deep_size(v))?;
            if !sizer {
                return int(str_at(&args, 0).chars().count() as i64);
            }
            return match v.as_sizer() {
                Some(s) => Ok(CowVal::owned(s.size())),
                None => Err(ExecutionError::UnexpectedType {
                    got: v.get_type().name().to_owned(),
                    want: "missing trait Sizer".to_owned(),
                }),
            };
        }
    }
    Err(no_member_overload("size", &args))
}

fn out_of_range(function: &str, idx: i64) -> ExecutionError {
    ExecutionError::function_error(function, format!("index out of range: {idx}"))
}

fn char_at<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE, INT_TYPE]) {
        return Err(no_member_overload("charAt", &args));
    }
    let (s, idx) = (str_at(&args, 0), int_at(&args, 1));
    charge(1, s.len() as u64 + 1)?;
    let len = s.chars().count() as i64;
    if idx < 0 || idx > len {
        return Err(out_of_range("charAt", idx));
    }
    Ok(string(
        s.chars()
            .nth(idx as usize)
            .map(|c| c.to_string())
            .unwrap_or_default(),
    ))
}

/// The byte offset of code point `n` of `s` (its length past the end).
fn byte_offset(s: &str, n: usize) -> usize {
    s.char_indices().nth(n).map_or(s.len(), |(i, _)| i)
}

/// The code-point index of byte offset `b` of `s`.
fn char_index(s: &str, b: usize) -> i64 {
    s[..b].chars().count() as i64
}

/// Kubernetes' runtime cost of `indexOf`/`lastIndexOf` on a string: its traversal
/// (`uint64(len × 0.1)`, bytes, rounded down).
fn string_traversal(s: &str) -> u64 {
    (s.len() as f64 * TRAVERSAL) as u64
}

fn index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let two = signature(&args, &[STRING_TYPE, STRING_TYPE]);
    let three = signature(&args, &[STRING_TYPE, STRING_TYPE, INT_TYPE]);
    if !two && !three {
        if signature(&args, &[LIST_TYPE, DYN_TYPE]) {
            return crate::library::list_index_of(args);
        }
        return Err(no_member_overload("indexOf", &args));
    }
    let (s, needle) = (str_at(&args, 0), str_at(&args, 1));
    charge(string_traversal(s), (s.len() + needle.len()) as u64 + 1)?;
    if two {
        return int(s.find(needle).map_or(-1, |b| char_index(s, b)));
    }
    let offset = int_at(&args, 2);
    let len = s.chars().count() as i64;
    if offset < 0 {
        return Err(out_of_range("indexOf", offset));
    }
    if needle.is_empty() {
        return int(offset.min(len));
    }
    if offset >= len {
        return Err(out_of_range("indexOf", offset));
    }
    let start = byte_offset(s, offset as usize);
    int(s[start..]
        .find(needle)
        .map_or(-1, |b| char_index(s, start + b)))
}

fn last_index_of<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let two = signature(&args, &[STRING_TYPE, STRING_TYPE]);
    let three = signature(&args, &[STRING_TYPE, STRING_TYPE, INT_TYPE]);
    if !two && !three {
        if signature(&args, &[LIST_TYPE, DYN_TYPE]) {
            return crate::library::list_last_index_of(args);
        }
        return Err(no_member_overload("lastIndexOf", &args));
    }
    let (s, needle) = (str_at(&args, 0), str_at(&args, 1));
    charge(string_traversal(s), (s.len() + needle.len()) as u64 + 1)?;
    if two {
        return int(s.rfind(needle).map_or(-1, |b| char_index(s, b)));
    }
    let offset = int_at(&args, 2);
    let len = s.chars().count() as i64;
    if offset < 0 {
        return Err(out_of_range("lastIndexOf", offset));
    }
    if needle.is_empty() {
        return int(offset.min(len));
    }
    if offset >= len {
        return Err(out_of_range("lastIndexOf", offset));
    }
    // A match starting at or before `offset` ends at most `needle` code points after it.
    let needle_chars = needle.chars().count();
    let end = byte_offset(s, (offset as usize).saturating_add(needle_chars));
    int(s[..end].rfind(needle).map_or(-1, |b| char_index(s, b)))
}

/// A function of one string that returns a string at most as long: `lowerAscii`, `upperAscii`,
/// `trim`, `reverse`.
fn string_to_string<'b, 'v>(
    name: &str,
    args: Args<'b, 'v>,
    cost: impl FnOnce(&dyn Val) -> u64,
    f: impl FnOnce(&str) -> String,
) -> Ret<'b, 'v> {
    if !signature(&args, &[STRING_TYPE]) {
        return Err(no_member_overload(name, &args));
    }
    let s = str_at(&args, 0);
    charge(cost(args[0].as_ref()), 2 * s.len() as u64 + 1)?;
    Ok(string(f(s)))
}

fn traversal(v: &dyn Val) -> u64 {
    scaled(cel_size(v), TRAVERSAL)
}

fn lower_ascii<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string_to_string("lowerAscii", args, traversal, str::to_ascii_lowercase)
}

fn upper_ascii<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string_to_string("upperAscii", args, traversal, str::to_ascii_uppercase)
}

fn trim<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string_to_string("trim", args, traversal, |s| s.trim().to_owned())
}

fn reverse<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    string_to_string("reverse", args, |_| 1, |s| s.chars().rev().collect())
}

/// `s.replace(old, new[, n])`: the result's length is computed (counting the replacements) and
/// charged before it is built.
fn replace<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let three = signature(&args, &[STRING_TYPE, STRING_TYPE, STRING_TYPE]);
    let four = signature(&args, &[STRING_TYPE, STRING_TYPE, STRING_TYPE, INT_TYPE]);
    if !three && !four {
        return Err(no_member_overload("replace", &args));
    }
    let (s, old, new) = (str_at(&args, 0), str_at(&args, 1), str_at(&args, 2));
    let limit = if four {
        usize::try_from(int_at(&args, 3)).ok()
    } else {
        None
    };
    charge(
        scaled(cel_size(args[0].as_ref()), 2.0 * TRAVERSAL),
        s.len() as u64 + 1,
    )?;
    let found = if old.is_empty() {
        s.chars().count() + 1
    } else {
        s.matches(old).count()
    };
    let count = limit.map_or(found, |n| n.min(found)) as u64;
    let len = (s.len() as u64)
        .saturating_sub(count.saturating_mul(old.len() as u64))
        .saturating_add(count.saturating_mul(new.len() as u64));
    charge(0, len)?;
    Ok(string(match limit {
        Some(n) => s.replacen(old, new, n),
        None => s.replace(old, new),
    }))
}

/// `s.split(sep[, n])`: the parts are counted and charged before they are built.
fn split<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let two = signature(&args, &[STRING_TYPE, STRING_TYPE]);
    let three = signature(&args, &[STRING_TYPE, STRING_TYPE, INT_TYPE]);
    if !two && !three {
        return Err(no_member_overload("split", &args));
    }
    let (s, sep) = (str_at(&args, 0), str_at(&args, 1));
    let n = if three { int_at(&args, 2) } else { -1 };
    charge(
        scaled(cel_size(args[0].as_ref()), 2.0 * TRAVERSAL),
        s.len() as u64 + 1,
    )?;
    let found = if sep.is_empty() {
        s.chars().count()
    } else {
        s.matches(sep).count() + 1
    };
    let parts = match usize::try_from(n) {
        Ok(n) => n.min(found),
        Err(_) => found,
    } as u64;
    charge(
        0,
        (s.len() as u64).saturating_add(parts.saturating_mul(ELEMENT_OVERHEAD)),
    )?;
    let parts: Vec<&str> = match (usize::try_from(n), sep.is_empty()) {
        (Ok(0), _) => Vec::new(),
        (Ok(n), true) => {
            let mut parts: Vec<&str> = Vec::new();
            let mut rest: &str = s;
            while let Some(c) = rest.chars().next() {
                if parts.len() + 1 == n {
                    break;
                }
                let (head, tail) = rest.split_at(c.len_utf8());
                parts.push(head);
                rest = tail;
            }
            if !rest.is_empty() {
                parts.push(rest);
            }
            parts
        }
        (Ok(n), false) => s.splitn(n, sep).collect(),
        (Err(_), true) => s
            .char_indices()
            .map(|(i, c)| &s[i..i + c.len_utf8()])
            .collect(),
        (Err(_), false) => s.split(sep).collect(),
    };
    let items: Vec<Box<dyn Val>> = parts
        .into_iter()
        .map(|p| Box::new(CelString::from(p.to_owned())) as Box<dyn Val>)
        .collect();
    Ok(CowVal::owned(CelList::from(items)))
}

fn substring<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let two = signature(&args, &[STRING_TYPE, INT_TYPE]);
    let three = signature(&args, &[STRING_TYPE, INT_TYPE, INT_TYPE]);
    if !two && !three {
        return Err(no_member_overload("substring", &args));
    }
    let s = str_at(&args, 0);
    charge(traversal(args[0].as_ref()), 2 * s.len() as u64 + 1)?;
    let len = s.chars().count() as i64;
    let start = int_at(&args, 1);
    let end = if three {
        int_at(&args, 2)
    } else {
        if start < 0 || start > len {
            return Err(out_of_range("substring", start));
        }
        len
    };
    if start > end {
        return Err(ExecutionError::function_error(
            "substring",
            format!("invalid substring range. start: {start}, end: {end}"),
        ));
    }
    if start < 0 || start > len {
        return Err(out_of_range("substring", start));
    }
    if end > len {
        return Err(out_of_range("substring", end));
    }
    Ok(string(
        s.chars()
            .skip(start as usize)
            .take((end - start) as usize)
            .collect(),
    ))
}

/// `list.join([sep])`: the result's length is charged before it is built; Kubernetes charges
/// twice a traversal of it.
fn join<'b, 'v>(args: Args<'b, 'v>) -> Ret<'b, 'v> {
    let with_sep = signature(&args, &[LIST_TYPE, STRING_TYPE]);
    if !with_sep && !signature(&args, &[LIST_TYPE]) {
        return Err(no_member_overload("join", &args));
    }
    let sep = if with_sep { str_at(&args, 1) } else { "" };
    let list = args[0].as_ref();
    let iterable: &dyn Iterable =
        list.as_iterable()
            .ok_or_else(|| ExecutionError::UnexpectedType {
                got: list.get_type().name().to_owned(),
                want: "iterable".to_owned(),
            })?;
    let mut parts: Vec<&str> = Vec::new();
    let mut items = iterable.iter();
    while let Some(item) = items.next() {
        match item.downcast_ref::<CelString>() {
            Some(s) => parts.push(s.inner()),
            None => {
                return Err(ExecutionError::UnexpectedType {
                    got: item.get_type().name().to_owned(),
                    want: STRING_TYPE.name().to_owned(),
                });
            }
        }
    }
    let bytes: u64 = parts
        .iter()
        .map(|p| p.len() as u64)
        .sum::<u64>()
        .saturating_add((sep.len() as u64).saturating_mul(parts.len().saturating_sub(1) as u64));
    let chars: u64 = parts
        .iter()
        .map(|p| p.chars().count() as u64)
        .sum::<u64>()
        .saturating_add(
            (sep.chars().count() as u64).saturating_mul(parts.len().saturating_sub(1) as u64),
        );
    charge(scaled(chars, 2.0 * TRAVERSAL), bytes.saturating_add(1))?;
    Ok(string(parts.join(sep)))
}
