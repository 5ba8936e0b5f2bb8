//! The seam to the CEL compiler: validation asks it to compile each selector and derived
//! attribute expression and to estimate its cost; the limits are applied here.

/// Which kind of expression is compiled (they differ in the allowed result type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpressionKind {
    /// A device selector: must evaluate to a bool.
    Selector,
    /// A derived attribute: must evaluate to a scalar or a list of scalars.
    DerivedAttribute,
}

/// How a compilation failure is reported (upstream's `cel.ErrorType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CelErrorKind {
    /// The expression is empty.
    Required,
    /// The expression does not compile or has the wrong type.
    Invalid,
    /// The compiler failed.
    Internal,
}

/// A compilation failure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CelCompileError {
    /// How to report it.
    pub kind: CelErrorKind,
    /// The compiler's message.
    pub detail: String,
}

/// Compiles CEL expressions in the DRA environment and estimates their worst-case cost.
pub trait CelCompiler {
    /// Compiles `expression`; returns the estimated maximum cost.
    fn compile(&self, expression: &str, kind: ExpressionKind) -> Result<u64, CelCompileError>;
}

/// The DRA CEL environment of `allot-cel`.
#[derive(Debug, Clone, Copy, Default)]
pub struct DraCel;

impl CelCompiler for DraCel {
    fn compile(&self, expression: &str, kind: ExpressionKind) -> Result<u64, CelCompileError> {
        if expression.is_empty() {
            return Err(CelCompileError {
                kind: CelErrorKind::Required,
                detail: String::new(),
            });
        }
        // The cost limit is applied by the caller, which reports it as upstream does.
        let options = allot_cel::CompileOptions {
            cost_limit: u64::MAX,
            require_bool: kind == ExpressionKind::Selector,
            ..allot_cel::CompileOptions::default()
        };
        match allot_cel::compile_with(expression, options) {
            Ok(compiled) => Ok(compiled.max_cost()),
            Err(
                err @ (allot_cel::CelError::Environment { .. }
                | allot_cel::CelError::ProgramInstantiation { .. }),
            ) => Err(CelCompileError {
                kind: CelErrorKind::Internal,
                detail: err.to_string(),
            }),
            Err(err) => Err(CelCompileError {
                kind: CelErrorKind::Invalid,
                detail: err.to_string(),
            }),
        }
    }
}
