//! Instrumentation: a copy of the expression in which every operation whose cost or work depends
//! on the data goes through a metering function (see the `metered` module), and every loop
//! iteration charges the static cost of its body, so that an evaluation is metered as cel-go's
//! cost tracker meters it.
//!
//! The metering functions are registered in the environment under names that no CEL source can
//! spell (`@allot.…`), so the instrumented tree is only ever built here. The shapes cel-rust's
//! interpreter recognises are kept: the accumulator steps of `map`/`filter` (appended in place)
//! and of `all`/`exists` (whose errors are absorbed like cel-go's), so results and errors stay
//! those of the original expression.

use crate::cost::namespaced_function;
use crate::regexes::constant_pattern;
use cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, IdedExpr, ListExpr, LiteralValue, SelectExpr,
};
use std::collections::HashMap;

/// The prefix of the metering functions' names.
pub(crate) const PREFIX: &str = "@allot.";

/// Operators whose cost depends on their operands (and `_+_`, which allocates).
pub(crate) const METERED_OPERATORS: &[&str] =
    &["_==_", "_!=_", "_<_", "_<=_", "_>_", "_>=_", "_+_", "@in"];

/// Global functions of the standard library delegated to after metering.
pub(crate) const METERED_GLOBALS: &[&str] = &[
    "size",
    "matches",
    "string",
    "bytes",
    "int",
    "uint",
    "double",
    "bool",
    "duration",
    "timestamp",
    "strings.quote",
];

/// The instrumented expression.
pub(crate) struct Instrumented {
    pub(crate) expr: IdedExpr,
    /// The static cost and node count of the expression outside of loop bodies, charged when
    /// an evaluation starts.
    pub(crate) start: (u64, u64),
    /// The constant regex patterns, in the order of the indices the calls refer to.
    pub(crate) patterns: Vec<Pattern>,
    /// Whether the expression is plain: no loop, no constant pattern, and no operation whose
    /// result can outgrow its operands (concatenation, `replace`, `join`, `format`, `split`,
    /// quoting, list and map literals of computed values). Every node of a plain expression is
    /// evaluated at most once and none builds more than it reads, so its evaluation is bounded by
    /// its size times its input's, and needs no meter.
    pub(crate) plain: bool,
}

/// Metering functions that leave an expression plain (see [`Instrumented::plain`]).
const PLAIN: &[&str] = &[
    "_==_",
    "_!=_",
    "_<_",
    "_<=_",
    "_>_",
    "_>=_",
    "@in",
    "size",
    "contains",
    "startsWith",
    "endsWith",
    "matches",
    "charAt",
    "indexOf",
    "lastIndexOf",
    "lowerAscii",
    "upperAscii",
    "trim",
    "reverse",
    "substring",
];

/// A constant regex pattern of the expression.
pub(crate) struct Pattern {
    pub(crate) pattern: String,
    /// The id of the literal.
    pub(crate) id: u64,
    /// Whether the call is `s.matches(pattern)`, whose invalid constant patterns cel-go's
    /// validator reports at compile time.
    pub(crate) member_matches: bool,
}

/// Library functions that charge the meter themselves (their own cost is not static).
const SELF_CHARGING: &[&str] = &[
    "quantity",
    "isQuantity",
    "semver",
    "isSemver",
    "includes",
    "isSorted",
    "sum",
    "find",
    "findAll",
];

/// What a loop iteration or the whole expression charges statically.
#[derive(Default, Clone, Copy)]
struct Region {
    cost: u64,
    nodes: u64,
}

struct Rewriter<'a> {
    own: &'a HashMap<u64, u64>,
    next_id: u64,
    patterns: Vec<Pattern>,
    /// Local variables in scope, which shadow namespaces such as `strings`.
    locals: Vec<String>,
    /// Cleared by anything that makes the expression not plain.
    plain: bool,
    /// Set while touching an index key (which does not make the expression less plain).
    touching_key: bool,
}

/// Builds the instrumented copy of `root`; `own` holds the estimator's own cost of each node.
pub(crate) fn instrument(root: &IdedExpr, own: &HashMap<u64, u64>) -> Instrumented {
    let mut max_id = 0;
    let mut stack = vec![root];
    while let Some(e) = stack.pop() {
        max_id = max_id.max(e.id);
        stack.extend(crate::cost::children(e));
    }
    let mut rewriter = Rewriter {
        own,
        next_id: max_id + 1,
        patterns: Vec::new(),
        locals: Vec::new(),
        plain: true,
        touching_key: false,
    };
    let mut region = Region::default();
    let expr = rewriter.rewrite(root, &mut region);
    let plain = rewriter.plain && rewriter.patterns.is_empty();
    Instrumented {
        expr,
        start: (region.cost, region.nodes),
        patterns: rewriter.patterns,
        plain,
    }
}

fn literal(id: u64, value: LiteralValue) -> IdedExpr {
    IdedExpr {
        id,
        expr: Expr::Literal(value),
    }
}

fn is_literal(e: &IdedExpr) -> bool {
    matches!(e.expr, Expr::Literal(_))
}

impl Rewriter<'_> {
    fn id(&mut self) -> u64 {
        self.next_id += 1;
        self.next_id
    }

    /// A call of the metering function `name` (without the prefix).
    fn metering_call(&mut self, name: &str, args: Vec<IdedExpr>) -> IdedExpr {
        let key_touch = name == "touch" && self.touching_key;
        let global_ok = name == "g"
            && matches!(
                args.first().map(|a| &a.expr),
                Some(Expr::Literal(LiteralValue::String(n))) if !matches!(n.inner(), "strings.quote")
            );
        if !(PLAIN.contains(&name) || key_touch || global_ok) {
            self.plain = false;
        }
        IdedExpr {
            id: self.id(),
            expr: Expr::Call(CallExpr {
                func_name: format!("{PREFIX}{name}"),
                target: None,
                args,
            }),
        }
    }

    fn int(&mut self, n: u64) -> IdedExpr {
        let id = self.id();
        literal(
            id,
            LiteralValue::Int((n.min(i64::MAX as u64) as i64).into()),
        )
    }

    fn string(&mut self, s: &str) -> IdedExpr {
        let id = self.id();
        literal(id, LiteralValue::String(s.to_string().into()))
    }

    /// `@allot.touch(e)`: charges the size of `e`'s value, which the interpreter is about to
    /// copy. Literals are small and already counted in the expression's length.
    fn touch(&mut self, e: IdedExpr) -> IdedExpr {
        if is_literal(&e) {
            return e;
        }
        self.metering_call("touch", vec![e])
    }

    /// `@allot.tick(e, cost, nodes)`: charges one loop iteration, then yields `e`.
    fn tick(&mut self, e: IdedExpr, region: Region) -> IdedExpr {
        let cost = self.int(region.cost);
        let nodes = self.int(region.nodes.max(1));
        self.metering_call("tick", vec![e, cost, nodes])
    }

    fn rewrite(&mut self, e: &IdedExpr, region: &mut Region) -> IdedExpr {
        // A node is one unit of work; a string or bytes literal as many as its bytes, as a list
        // or map literal or a `cel.bind` copies it.
        let weight = match &e.expr {
            Expr::Literal(LiteralValue::String(s)) => s.inner().len() as u64,
            Expr::Literal(LiteralValue::Bytes(b)) => b.inner().len() as u64,
            _ => 0,
        };
        region.nodes = region.nodes.saturating_add(1).saturating_add(weight);
        let expr = match &e.expr {
            Expr::Call(call) => return self.call(e, call, region),
            Expr::Comprehension(c) => {
                self.plain = false;
                Expr::Comprehension(Box::new(self.comprehension(c, region)))
            }
            Expr::Select(s) => Expr::Select(SelectExpr {
                operand: Box::new(self.rewrite(&s.operand, region)),
                field: s.field.clone(),
                test: s.test,
            }),
            Expr::List(l) => {
                let elements = l
                    .elements
                    .iter()
                    .map(|x| {
                        let x = self.rewrite(x, region);
                        self.touch(x)
                    })
                    .collect();
                Expr::List(ListExpr {
                    elements,
                    optional_indices: l.optional_indices.clone(),
                })
            }
            Expr::Map(m) => {
                let mut m = m.clone();
                for entry in &mut m.entries {
                    if let EntryExpr::MapEntry(me) = &mut entry.expr {
                        let key = self.rewrite(&me.key, region);
                        me.key = self.touch(key);
                        let value = self.rewrite(&me.value, region);
                        me.value = self.touch(value);
                    }
                }
                Expr::Map(m)
            }
            other => other.clone(),
        };
        region.cost = region
            .cost
            .saturating_add(self.own.get(&e.id).copied().unwrap_or(0));
        IdedExpr { id: e.id, expr }
    }

    fn call(&mut self, e: &IdedExpr, call: &CallExpr, region: &mut Region) -> IdedExpr {
        let name = call.func_name.as_str();
        let namespaced = namespaced_function(call).filter(|_| match call.target.as_deref() {
            Some(IdedExpr {
                expr: Expr::Ident(ns),
                ..
            }) => !self.locals.iter().any(|l| l == ns),
            _ => false,
        });
        let mut args: Vec<IdedExpr> = call.args.iter().map(|a| self.rewrite(a, region)).collect();
        // The metering function `g` takes the global's name and one or two arguments; a call
        // with another count stays as written, so it fails with the library's own error.
        let global_arity = (1..=2).contains(&args.len());
        if let Some(qualified) = namespaced {
            if global_arity && METERED_GLOBALS.contains(&qualified.as_str()) {
                let name = self.string(&qualified);
                args.insert(0, name);
                return self.metering_call("g", args);
            }
            let target = call.target.as_deref().cloned();
            return self.same_call(e, call, target, args, region);
        }
        let target = call.target.as_deref().map(|t| self.rewrite(t, region));
        let member = target.is_some();
        if let Some(pattern) = constant_pattern(name, member, &call.args) {
            let index = self.patterns.len();
            let literal_index = usize::from(!member && name == "matches");
            self.patterns.push(Pattern {
                pattern: pattern.to_string(),
                id: call.args[literal_index].id,
                member_matches: member && name == "matches",
            });
            let index = self.int(index as u64);
            let mut all: Vec<IdedExpr> = target.into_iter().collect();
            all.extend(args);
            all.push(index);
            let form = match (name, member) {
                ("matches", true) => "regex.matches",
                ("matches", false) => "regex.matches_global",
                ("find", _) => "regex.find",
                _ => "regex.findAll",
            };
            return self.metering_call(form, all);
        }
        match (name, target) {
            ("format", Some(t)) => {
                // The native `format`, between a charge for its template and one for its result.
                let t = self.metering_call("format_template", vec![t]);
                let formatted = IdedExpr {
                    id: e.id,
                    expr: Expr::Call(CallExpr {
                        func_name: name.to_string(),
                        target: Some(Box::new(t)),
                        args,
                    }),
                };
                self.metering_call("output", vec![formatted])
            }
            (_, Some(t)) if crate::metered::metered_member(name, args.len() + 1) => {
                args.insert(0, t);
                self.metering_call(name, args)
            }
            (_, None) if METERED_OPERATORS.contains(&name) => self.metering_call(name, args),
            (_, None) if global_arity && METERED_GLOBALS.contains(&name) => {
                let n = self.string(name);
                args.insert(0, n);
                self.metering_call("g", args)
            }
            ("_[_]" | "_[?_]", None) if args.len() == 2 => {
                let key = args.pop().expect("two arguments");
                self.touching_key = true;
                let key = self.touch(key);
                self.touching_key = false;
                args.push(key);
                self.same_call(e, call, None, args, region)
            }
            (_, target) => self.same_call(e, call, target, args, region),
        }
    }

    /// The call as it was (with rewritten operands), its own cost charged statically.
    fn same_call(
        &mut self,
        e: &IdedExpr,
        call: &CallExpr,
        target: Option<IdedExpr>,
        args: Vec<IdedExpr>,
        region: &mut Region,
    ) -> IdedExpr {
        let name = call.func_name.as_str();
        let charges_itself =
            SELF_CHARGING.contains(&name) || (target.is_some() && matches!(name, "min" | "max"));
        if !charges_itself {
            region.cost = region
                .cost
                .saturating_add(self.own.get(&e.id).copied().unwrap_or(0));
        }
        IdedExpr {
            id: e.id,
            expr: Expr::Call(CallExpr {
                func_name: call.func_name.clone(),
                target: target.map(Box::new),
                args,
            }),
        }
    }

    fn comprehension(&mut self, c: &ComprehensionExpr, region: &mut Region) -> ComprehensionExpr {
        let bind = crate::cost::is_bind(c);
        let iter_range = self.rewrite(&c.iter_range, region);
        let iter_range = if bind {
            iter_range
        } else {
            self.metering_call("range", vec![iter_range])
        };
        let accu_init = self.rewrite(&c.accu_init, region);
        let accu_init = if bind {
            self.touch(accu_init)
        } else {
            accu_init
        };
        self.locals.push(c.accu_var.clone());
        self.locals.push(c.iter_var.clone());
        self.locals.extend(c.iter_var2.clone());
        let mut body = Region::default();
        let (loop_cond, loop_step) = if bind {
            (
                self.rewrite(&c.loop_cond, region),
                self.rewrite(&c.loop_step, region),
            )
        } else if let Some((guard, items)) = append_step(c) {
            self.append_loop(c, guard, items, &mut body)
        } else {
            let cond = self.rewrite(&c.loop_cond, &mut body);
            let step = self.rewrite(&c.loop_step, &mut body);
            (self.tick(cond, body), step)
        };
        self.locals
            .truncate(self.locals.len() - 2 - usize::from(c.iter_var2.is_some()));
        self.locals.push(c.accu_var.clone());
        let result = self.rewrite(&c.result, region);
        self.locals.pop();
        ComprehensionExpr {
            iter_range,
            iter_var: c.iter_var.clone(),
            iter_var2: c.iter_var2.clone(),
            accu_var: c.accu_var.clone(),
            accu_init,
            loop_cond,
            loop_step,
            result,
        }
    }

    /// A `map`/`filter` loop, whose step keeps the shape cel-rust appends in place: the tick goes
    /// in the guard, or in the appended element.
    fn append_loop(
        &mut self,
        c: &ComprehensionExpr,
        guard: Option<&IdedExpr>,
        items: &IdedExpr,
        body: &mut Region,
    ) -> (IdedExpr, IdedExpr) {
        let cond = self.rewrite(&c.loop_cond, body);
        let Expr::Call(step_call) = &c.loop_step.expr else {
            return (cond, c.loop_step.clone());
        };
        body.nodes += 1;
        body.cost += self.own.get(&c.loop_step.id).copied().unwrap_or(0);
        let rewritten_guard = guard.map(|g| self.rewrite(g, body));
        let add = match guard {
            Some(_) => &step_call.args[1],
            None => &c.loop_step,
        };
        let Expr::Call(add_call) = &add.expr else {
            return (cond, c.loop_step.clone());
        };
        if guard.is_some() {
            body.nodes += 1;
            body.cost += self.own.get(&add.id).copied().unwrap_or(0);
        }
        let accu = add_call.args[0].clone();
        body.nodes += 1;
        body.cost += self.own.get(&accu.id).copied().unwrap_or(0);
        let mut list = self.rewrite(items, body);
        let new_add = |list: IdedExpr| IdedExpr {
            id: add.id,
            expr: Expr::Call(CallExpr {
                func_name: add_call.func_name.clone(),
                target: None,
                args: vec![accu.clone(), list],
            }),
        };
        let step = match rewritten_guard {
            Some(g) => {
                let g = self.tick(g, *body);
                IdedExpr {
                    id: c.loop_step.id,
                    expr: Expr::Call(CallExpr {
                        func_name: step_call.func_name.clone(),
                        target: None,
                        args: vec![g, new_add(list), step_call.args[2].clone()],
                    }),
                }
            }
            None => {
                if let Expr::List(l) = &mut list.expr
                    && let Some(first) = l.elements.first_mut()
                {
                    let element = std::mem::take(first);
                    *first = self.tick(element, *body);
                }
                new_add(list)
            }
        };
        (cond, step)
    }
}

/// The step of a comprehension that cel-rust runs as an in-place append (its `AppendStep`):
/// `accu + [x]` or `guard ? accu + [x] : accu`, with a literal condition and the accumulator
/// as the result. Returns the guard and the appended list.
fn append_step(c: &ComprehensionExpr) -> Option<(Option<&IdedExpr>, &IdedExpr)> {
    let accu = c.accu_var.as_str();
    let is_accu = |e: &IdedExpr| matches!(&e.expr, Expr::Ident(n) if n == accu);
    fn items_of<'e>(e: &'e IdedExpr, accu: &str) -> Option<&'e IdedExpr> {
        match &e.expr {
            Expr::Call(call) if call.func_name == "_+_" && call.target.is_none() => {
                match call.args.as_slice() {
                    [lhs, rhs]
                        if matches!(&lhs.expr, Expr::Ident(n) if n == accu)
                            && matches!(rhs.expr, Expr::List(_)) =>
                    {
                        Some(rhs)
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
    if !is_accu(&c.result) || !matches!(c.loop_cond.expr, Expr::Literal(_)) {
        return None;
    }
    match &c.loop_step.expr {
        Expr::Call(call) if call.func_name == "_?_:_" && call.target.is_none() => {
            match call.args.as_slice() {
                [guard, step, otherwise] if is_accu(otherwise) => {
                    Some((Some(guard), items_of(step, accu)?))
                }
                _ => None,
            }
        }
        _ => Some((None, items_of(&c.loop_step, accu)?)),
    }
}
