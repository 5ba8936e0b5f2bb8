//! The DRA CEL environment: compile selectors once, estimate their cost, evaluate them per device.
//!
//! Key design decision: each device is converted once into a [`CelDevice`] and lent to every
//! evaluation through a cel-rust variable resolver, so evaluating a selector never copies the
//! device. Compilation parses with cel-rust, then runs this crate's own static checks (undeclared
//! identifiers, unknown `device` fields, unknown functions, result type) and cost estimator,
//! because cel-rust has neither a type checker nor a cost estimator; both follow cel-go's rules
//! closely enough for the DRA environment (see the `cost` module for what is approximated).
//! Evaluation is metered as cel-go meters it: compilation also builds an instrumented copy of the
//! expression whose data-dependent operations go through metering functions (the `instrument`,
//! `metered` and `meter` modules), so a gap in the estimate ends in upstream's "actual cost limit
//! exceeded" error before anything large is allocated; constant regex patterns are compiled once
//! per expression. Compilation, and evaluation of deeply nested expressions, run on a stack
//! segment of their own when the caller's stack is short. The common selector shapes (driver, attribute and capacity comparisons with
//! literals under `&&`/`||`/`!`) also get a native fast path that answers only when the answer is
//! unambiguous and otherwise defers to the interpreter, so results and errors stay the
//! interpreter's (checked by differential tests).

#![deny(missing_docs)]

mod cost;
mod device;
mod fast;
#[doc(hidden)]
pub mod fuzzing;
mod instrument;
mod library;
mod meter;
mod metered;
mod regexes;
mod values;

pub use device::{AttributeValue, CelDevice};

use cel::common::types::{CelBool, CelInt, CelList, CelString};
use cel::common::value::{CowVal, Val};
use cel::context::VariableResolver;
use cel::{Context, ExecutionError, Value};
use std::sync::Arc;
use values::SemverVal;

/// Maximum length of a selector expression in bytes (`CELSelectorExpressionMaxLength`).
pub const CEL_SELECTOR_EXPRESSION_MAX_LENGTH: usize = 10 * 1024;
/// Maximum estimated cost of a selector expression (`CELSelectorExpressionMaxCost`), also the
/// runtime cost limit upstream evaluates DRA selectors with (`cel.CostLimit`).
pub const CEL_SELECTOR_EXPRESSION_MAX_COST: u64 = 1_000_000;
/// What an evaluation may do beyond cel-go's cost model: bytes allocated, copied or scanned,
/// plus nodes evaluated (see the `meter` module).
pub const EVALUATION_WORK_LIMIT: u64 = meter::WORK_LIMIT;

/// Everything that can go wrong compiling or evaluating an expression. Compile-time variants
/// print like upstream's `compilation failed: ERROR: <input>:LINE:COLUMN: ...` messages;
/// runtime variants like cel-go's runtime errors.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CelError {
    /// The expression is longer than [`CEL_SELECTOR_EXPRESSION_MAX_LENGTH`].
    #[error("expression too long: {length} bytes, CELSelectorExpressionMaxLength is {limit}")]
    TooLong {
        /// The expression's length in bytes.
        length: usize,
        /// The limit.
        limit: usize,
    },
    /// The expression does not parse.
    #[error("compilation failed: ERROR: <input>: Syntax error: {message}")]
    Syntax {
        /// The parser's message.
        message: String,
    },
    /// An identifier or function that the environment does not declare.
    #[error(
        "compilation failed: ERROR: <input>:{line}:{column}: undeclared reference to '{name}' (in container '')"
    )]
    UndeclaredReference {
        /// The identifier or function name.
        name: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// A field of `device` that does not exist.
    #[error("compilation failed: ERROR: <input>:{line}:{column}: undefined field '{field}'")]
    UndefinedField {
        /// The field name.
        field: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// A field selection on a type that has no fields.
    #[error(
        "compilation failed: ERROR: <input>:{line}:{column}: type '{type_name}' does not support field selection"
    )]
    NoFieldSelection {
        /// The operand's type.
        type_name: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// A function or operator applied to arguments of the wrong types.
    #[error(
        "compilation failed: ERROR: <input>:{line}:{column}: found no matching overload for '{function}' applied to '({})'",
        argument_types.join(", ")
    )]
    NoMatchingOverload {
        /// The function or operator.
        function: String,
        /// The argument types (the receiver first for member functions).
        argument_types: Vec<String>,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// The expression's type is neither bool nor dynamic.
    #[error("must evaluate to bool or the unknown type, not {type_name}")]
    WrongResultType {
        /// The expression's type.
        type_name: String,
    },
    /// The worst-case estimated cost exceeds the limit.
    #[error("too complex, exceeds cost limit: estimated cost {cost} exceeds limit {limit}")]
    CostLimitExceeded {
        /// The estimated worst-case cost.
        cost: u64,
        /// The limit.
        limit: u64,
    },
    /// A constant regex pattern of `matches` that does not compile (cel-go's regex validator).
    #[error("compilation failed: ERROR: <input>:{line}:{column}: invalid {function} argument")]
    InvalidArgument {
        /// The function.
        function: String,
        /// 1-based line.
        line: u32,
        /// 1-based column.
        column: u32,
    },
    /// The program could not be built: a constant regex pattern of `find`/`findAll` that does
    /// not compile (upstream compiles them when it instantiates the program).
    #[error("program instantiation failed: {message}")]
    ProgramInstantiation {
        /// What went wrong.
        message: String,
    },
    /// The CEL environment could not be built (an internal error).
    #[error("unexpected error loading CEL environment: {message}")]
    Environment {
        /// What went wrong.
        message: String,
    },
    /// A map lookup of a key that does not exist, e.g. a missing attribute.
    #[error("no such key: {key}")]
    NoSuchKey {
        /// The missing key.
        key: String,
    },
    /// A device attribute whose value cannot be represented (as upstream's conversion error).
    #[error("attribute {name}: {message}")]
    InvalidAttribute {
        /// The attribute's qualified name.
        name: String,
        /// Why it cannot be represented.
        message: String,
    },
    /// The expression evaluated to something other than a bool.
    #[error("CEL result of type {type_name} could not be converted to bool")]
    NotBool {
        /// The result's type.
        type_name: String,
    },
    /// The result of a value expression is not an attribute value.
    #[error("CEL result of type {type_name} is not a device attribute value")]
    NotAttributeValue {
        /// The result's type.
        type_name: String,
    },
    /// The evaluation exceeded the runtime cost limit, or allocated or scanned more than an
    /// evaluation may ([`EVALUATION_WORK_LIMIT`]).
    #[error("{}", meter::CANCELLED)]
    RuntimeCostLimitExceeded,
    /// Any other runtime error.
    #[error("{message}")]
    Runtime {
        /// cel-rust's message.
        message: String,
    },
}

impl CelError {
    /// Whether this error happens at compile time (the expression is invalid) rather than while
    /// evaluating it on a device.
    pub fn is_compile_error(&self) -> bool {
        !matches!(
            self,
            CelError::NoSuchKey { .. }
                | CelError::RuntimeCostLimitExceeded
                | CelError::InvalidAttribute { .. }
                | CelError::NotBool { .. }
                | CelError::NotAttributeValue { .. }
                | CelError::Runtime { .. }
        )
    }
}

/// Errors from [`compile`].
pub type CompileError = CelError;
/// Errors from [`CompiledExpression::evaluate`].
pub type EvalError = CelError;

/// Options for [`compile_with`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompileOptions {
    /// The maximum estimated cost ([`CEL_SELECTOR_EXPRESSION_MAX_COST`] by default).
    pub cost_limit: u64,
    /// The cost limit of each evaluation ([`CEL_SELECTOR_EXPRESSION_MAX_COST`] by default, as
    /// upstream's `cel.CostLimit` for DRA expressions).
    pub runtime_cost_limit: u64,
    /// Whether the result must be a bool (selectors) rather than any attribute value (derived
    /// attributes).
    pub require_bool: bool,
}

impl Default for CompileOptions {
    fn default() -> Self {
        CompileOptions {
            cost_limit: CEL_SELECTOR_EXPRESSION_MAX_COST,
            runtime_cost_limit: CEL_SELECTOR_EXPRESSION_MAX_COST,
            require_bool: true,
        }
    }
}

/// A compiled expression; evaluate it against any number of devices.
pub struct CompiledExpression {
    expression: String,
    program: cel::Program,
    /// The instrumented copy the evaluator runs.
    instrumented: cel::IdedExpr,
    /// The static cost and node count charged when an evaluation starts.
    start: (u64, u64),
    /// The constant regex patterns, compiled.
    regexes: Arc<[regex::Regex]>,
    /// The depth of the expression's tree, which bounds the evaluator's recursion.
    depth: usize,
    /// Whether the expression is evaluated as it is, without a meter (see `instrument`).
    plain: bool,
    max_cost: u64,
    runtime_cost_limit: u64,
    env: Arc<cel::Env>,
    /// The fast path for common selector shapes, when the expression has one.
    fast: Option<fast::Fast>,
}

/// Compiles a selector expression: length limit, parse, static checks, a bool (or dynamic)
/// result, and the cost limit.
pub fn compile(expr: &str) -> Result<CompiledExpression, CompileError> {
    compile_with(expr, CompileOptions::default())
}

/// Compiles an expression with explicit options.
pub fn compile_with(
    expr: &str,
    options: CompileOptions,
) -> Result<CompiledExpression, CompileError> {
    if expr.len() > CEL_SELECTOR_EXPRESSION_MAX_LENGTH {
        return Err(CelError::TooLong {
            length: expr.len(),
            limit: CEL_SELECTOR_EXPRESSION_MAX_LENGTH,
        });
    }
    // The parser needs several MiB of stack for nesting it accepts (more in debug builds).
    stacker::maybe_grow(COMPILE_RED_ZONE, COMPILE_STACK, || {
        compile_on_stack(expr, options)
    })
}

/// The stack compilation needs left, and the segment it gets otherwise: the parser needs about
/// 1 MiB for the nesting it accepts in an optimized build, and ten times as much unoptimized.
const COMPILE_RED_ZONE: usize = if cfg!(debug_assertions) {
    32 << 20
} else {
    4 << 20
};
const COMPILE_STACK: usize = 4 * COMPILE_RED_ZONE;

/// Evaluations of trees at most this deep run on the caller's stack as they are.
const SHALLOW_DEPTH: usize = 24;

fn compile_on_stack(
    expr: &str,
    options: CompileOptions,
) -> Result<CompiledExpression, CompileError> {
    let env = environment()?;
    let program = env.compile(expr).map_err(|e| CelError::Syntax {
        message: e.to_string(),
    })?;
    let depth = cost::depth(program.expression());
    if depth > cost::MAX_DEPTH {
        return Err(CelError::Syntax {
            message: "max recursion depth exceeded".to_string(),
        });
    }
    let analysis = cost::Analyzer::new(&program).run()?;
    let info = &analysis.root;
    if options.require_bool && !matches!(info.ty, cost::Ty::Bool | cost::Ty::Dyn) {
        return Err(CelError::WrongResultType {
            type_name: info.ty.name(),
        });
    }
    if info.cost > options.cost_limit {
        return Err(CelError::CostLimitExceeded {
            cost: info.cost,
            limit: options.cost_limit,
        });
    }
    let instrumented = instrument::instrument(program.expression(), &analysis.own);
    let mut regexes = Vec::with_capacity(instrumented.patterns.len());
    for p in &instrumented.patterns {
        match regexes::compile(&p.pattern) {
            Ok(re) => regexes.push(re),
            Err(_) if p.member_matches => {
                let (line, column) = program.source_info().offset_for(p.id).unwrap_or((1, 1));
                return Err(CelError::InvalidArgument {
                    function: "matches".to_string(),
                    line,
                    column,
                });
            }
            Err(e) => {
                return Err(CelError::ProgramInstantiation {
                    message: e.to_string(),
                });
            }
        }
    }
    let fast = if options.require_bool {
        fast::build(program.expression())
    } else {
        None
    };
    Ok(CompiledExpression {
        expression: expr.to_string(),
        instrumented: instrumented.expr,
        start: instrumented.start,
        regexes: regexes.into(),
        depth,
        plain: instrumented.plain && info.cost <= options.runtime_cost_limit,
        max_cost: info.cost,
        runtime_cost_limit: options.runtime_cost_limit,
        program,
        env,
        fast,
    })
}

pub(crate) fn environment() -> Result<Arc<cel::Env>, CelError> {
    match &*library::ENV {
        Ok(env) => Ok(Arc::clone(env)),
        Err(e) => Err(CelError::Environment {
            message: e.to_string(),
        }),
    }
}

/// Lends a device to one evaluation as the `device` variable.
struct DeviceResolver<'a>(&'a device::DeviceVal);

impl VariableResolver for DeviceResolver<'_> {
    fn resolve<'b>(&'b self, variable: &str) -> Option<CowVal<'b, 'b>> {
        (variable == "device").then(|| CowVal::Borrowed(self.0 as &dyn Val))
    }
}

fn runtime_error(e: ExecutionError) -> CelError {
    match e {
        ExecutionError::NoSuchKey(key) => CelError::NoSuchKey {
            key: key.to_string(),
        },
        other => CelError::Runtime {
            message: other.to_string(),
        },
    }
}

impl std::fmt::Debug for CompiledExpression {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledExpression")
            .field("expression", &self.expression)
            .field("max_cost", &self.max_cost)
            .finish()
    }
}

impl CompiledExpression {
    /// The source text.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The worst-case estimated cost.
    pub fn max_cost(&self) -> u64 {
        self.max_cost
    }

    /// Whether common selector shapes are answered natively (see the `fast` module).
    #[doc(hidden)]
    pub fn has_fast_path(&self) -> bool {
        self.fast.is_some()
    }

    /// Runs the expression on a device and hands its result to `f`.
    fn with_result<T>(
        &self,
        device: &CelDevice,
        f: impl FnOnce(&dyn Val) -> Result<T, CelError>,
    ) -> Result<T, CelError> {
        self.run(device, None, f)
    }

    /// Runs the instrumented expression on a device under a meter and hands its result to `f`;
    /// reports the meter's reading to `usage`.
    fn run<T>(
        &self,
        device: &CelDevice,
        usage: Option<&mut Usage>,
        f: impl FnOnce(&dyn Val) -> Result<T, CelError>,
    ) -> Result<T, CelError> {
        if let Some((name, message)) = &device.invalid {
            return Err(CelError::InvalidAttribute {
                name: name.clone(),
                message: message.clone(),
            });
        }
        let plain = self.plain && usage.is_none();
        let run = || {
            let resolver = DeviceResolver(&device.val);
            let mut ctx = Context::with_env(Arc::clone(&self.env));
            ctx.set_variable_resolver(&resolver);
            if plain {
                let result = Value::resolve_val(self.program.expression(), &ctx)
                    .map_err(runtime_error)
                    .and_then(|value| f(value.as_ref()));
                return (result, meter::Usage::default());
            }
            let (result, meter) =
                meter::metered(self.runtime_cost_limit, self.start, &self.regexes, || {
                    Value::resolve_val(&self.instrumented, &ctx)
                        .map_err(runtime_error)
                        .and_then(|value| f(value.as_ref()))
                });
            (result, meter)
        };
        let (result, meter) = if self.depth <= SHALLOW_DEPTH {
            run()
        } else {
            // Each level of the tree is a few frames of the recursive evaluator.
            let red_zone = self.depth * (96 << 10) + (512 << 10);
            stacker::maybe_grow(red_zone, 2 * red_zone, run)
        };
        if let Some(usage) = usage {
            *usage = Usage {
                cost: meter.cost,
                work: meter.work,
                exceeded: meter.exceeded,
            };
        }
        // cel-go abandons the evaluation when the limit is exceeded, whatever the expression
        // made of the error.
        if meter.exceeded {
            return Err(CelError::RuntimeCostLimitExceeded);
        }
        result
    }

    /// Evaluates a selector like [`CompiledExpression::evaluate_interpreted`], and tells what the
    /// evaluation cost: cel-go's cost units, allot's work units, and whether a limit ended it.
    pub fn evaluate_with_usage(&self, device: &CelDevice) -> (Result<bool, EvalError>, Usage) {
        let mut usage = Usage::default();
        let result = self.run(device, Some(&mut usage), bool_result);
        (result, usage)
    }

    /// Evaluates the expression with cel-rust alone, without metering: the reference metered
    /// evaluation is tested against. Only for expressions known to be cheap.
    #[doc(hidden)]
    pub fn evaluate_uninstrumented(&self, device: &CelDevice) -> Result<bool, EvalError> {
        if let Some((name, message)) = &device.invalid {
            return Err(CelError::InvalidAttribute {
                name: name.clone(),
                message: message.clone(),
            });
        }
        let resolver = DeviceResolver(&device.val);
        let mut ctx = Context::with_env(Arc::clone(&self.env));
        ctx.set_variable_resolver(&resolver);
        let run = || {
            Value::resolve_val(self.program.expression(), &ctx)
                .map_err(runtime_error)
                .and_then(|v| bool_result(v.as_ref()))
        };
        stacker::maybe_grow(COMPILE_RED_ZONE, COMPILE_STACK, run)
    }

    /// Evaluates a selector on a device: `Ok(true)` when it matches. A result that is not a bool
    /// is an error, as are runtime errors such as a missing attribute.
    pub fn evaluate(&self, device: &CelDevice) -> Result<bool, EvalError> {
        if device.invalid.is_none()
            && let Some(result) = self.fast.as_ref().and_then(|f| f.eval(device))
        {
            return Ok(result);
        }
        self.evaluate_interpreted(device)
    }

    /// Evaluates a selector with the cel-rust interpreter only, bypassing the fast path for
    /// common shapes; the reference the fast path is tested against.
    pub fn evaluate_interpreted(&self, device: &CelDevice) -> Result<bool, EvalError> {
        self.with_result(device, bool_result)
    }

    /// Evaluates an expression that yields an attribute value (derived attributes): int, bool,
    /// string, semantic version, or a list of one of those.
    pub fn evaluate_value(&self, device: &CelDevice) -> Result<AttributeValue, EvalError> {
        self.with_result(device, to_attribute_value)
    }
}

/// What one evaluation cost.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// cel-go's cost units.
    pub cost: u64,
    /// allot's work units (bytes allocated, copied or scanned, nodes evaluated).
    pub work: u64,
    /// Whether a limit ended the evaluation.
    pub exceeded: bool,
}

fn bool_result(v: &dyn Val) -> Result<bool, CelError> {
    v.downcast_ref::<CelBool>()
        .map(|b| *b.inner())
        .ok_or_else(|| CelError::NotBool {
            type_name: v.get_type().name().to_owned(),
        })
}

fn to_attribute_value(v: &dyn Val) -> Result<AttributeValue, CelError> {
    let not_value = || CelError::NotAttributeValue {
        type_name: v.get_type().name().to_owned(),
    };
    if let Some(i) = v.downcast_ref::<CelInt>() {
        return Ok(AttributeValue::Int(*i.inner()));
    }
    if let Some(b) = v.downcast_ref::<CelBool>() {
        return Ok(AttributeValue::Bool(*b.inner()));
    }
    if let Some(s) = v.downcast_ref::<CelString>() {
        return Ok(AttributeValue::String(s.inner().to_string()));
    }
    if let Some(s) = v.downcast_ref::<SemverVal>() {
        return Ok(AttributeValue::Version(s.0.to_string()));
    }
    if v.downcast_ref::<CelList>().is_some() {
        let iterable = v.as_iterable().ok_or_else(not_value)?;
        let mut it = iterable.iter();
        let mut items = Vec::new();
        while let Some(item) = it.next() {
            items.push(to_attribute_value(item)?);
        }
        return list_value(items).ok_or_else(not_value);
    }
    Err(not_value())
}

/// A homogeneous list of scalars as a list attribute value.
fn list_value(items: Vec<AttributeValue>) -> Option<AttributeValue> {
    let mut out = match items.first() {
        None | Some(AttributeValue::Int(_)) => AttributeValue::IntList(Vec::new()),
        Some(AttributeValue::Bool(_)) => AttributeValue::BoolList(Vec::new()),
        Some(AttributeValue::String(_)) => AttributeValue::StringList(Vec::new()),
        Some(AttributeValue::Version(_)) => AttributeValue::VersionList(Vec::new()),
        Some(_) => return None,
    };
    for item in items {
        match (&mut out, item) {
            (AttributeValue::IntList(l), AttributeValue::Int(i)) => l.push(i),
            (AttributeValue::BoolList(l), AttributeValue::Bool(b)) => l.push(b),
            (AttributeValue::StringList(l), AttributeValue::String(s)) => l.push(s),
            (AttributeValue::VersionList(l), AttributeValue::Version(s)) => l.push(s),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;
