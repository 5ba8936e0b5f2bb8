//! Regular expressions: compiled once per compiled expression for constant patterns (upstream
//! compiles constant patterns when it builds the program, `cel.OptimizeRegex`), and once per
//! evaluation for patterns computed at run time.

use cel::common::ast::{Expr, IdedExpr, LiteralValue};

/// Compiles a pattern with the `regex` crate's default limits (a compiled program of at most
/// 10 MiB, nesting at most 250 deep), which bound its size as RE2's do in cel-go.
pub(crate) fn compile(pattern: &str) -> Result<regex::Regex, regex::Error> {
    regex::Regex::new(pattern)
}

/// The constant pattern of a regex call: the argument a `matches`, `find` or `findAll` call
/// takes its pattern from, when it is a string literal.
pub(crate) fn constant_pattern<'a>(
    name: &str,
    member: bool,
    args: &'a [IdedExpr],
) -> Option<&'a str> {
    // Only with the argument counts the library has overloads for (receiver not counted): a
    // call with another count stays as written and fails with the library's own error.
    let index = match (name, member, args.len()) {
        ("matches" | "find", true, 1) | ("findAll", true, 1 | 2) => 0,
        ("matches", false, 2) => 1,
        _ => return None,
    };
    match &args.get(index)?.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner()),
        _ => None,
    }
}
