//! The runtime meter: what one evaluation has cost so far, against two limits.
//!
//! - `cost`: cel-go's actual cost (its `CostTracker` units, with Kubernetes' `CallCost` for the
//!   library functions), against the per-expression runtime limit upstream configures for DRA
//!   selectors (`cel.CostLimit(CELSelectorExpressionMaxCost)`). An expression whose estimate is
//!   within the limit never reaches it, unless the estimate has a gap.
//! - `work`: allot's own bound on what the evaluator does beyond cel-go's model: bytes allocated
//!   or copied and nodes evaluated. cel-go charges a `size()` or a list concatenation 1, and
//!   upstream's estimator accepts expressions whose results hold billions of characters (a
//!   `replace` of a long receiver by a long replacement costs only its receiver's length); here
//!   every operation that allocates, copies or scans data charges its size *before* it does so,
//!   so an evaluation never holds more than [`WORK_LIMIT`] units of data or runs longer than as
//!   many steps.
//!
//! Either limit ends the evaluation with upstream's message, "operation cancelled: actual cost
//! limit exceeded". The meter lives in a thread-local for the duration of one evaluation, so the
//! metering functions registered in the environment (which cel-rust calls without a context) can
//! reach it.

use cel::ExecutionError;
use std::cell::RefCell;
use std::sync::Arc;

/// The most work one evaluation may do: bytes allocated, copied or scanned, plus nodes
/// evaluated. Selectors over device attributes (at most 64 characters or values each) stay
/// orders of magnitude below it.
pub(crate) const WORK_LIMIT: u64 = 16 << 20;

/// The message cel-go's cost tracker cancels an evaluation with.
pub(crate) const CANCELLED: &str = "operation cancelled: actual cost limit exceeded";

struct Meter {
    cost: u64,
    cost_limit: u64,
    work: u64,
    exceeded: bool,
    /// The expression's precompiled regular expressions (constant patterns).
    regexes: Arc<[regex::Regex]>,
    /// Patterns compiled during this evaluation (patterns that are not constants).
    dynamic: Vec<(String, regex::Regex)>,
}

thread_local! {
    static METER: RefCell<Option<Meter>> = const { RefCell::new(None) };
}

/// How an evaluation went, as far as the meter is concerned.
#[derive(Default)]
pub(crate) struct Usage {
    pub(crate) cost: u64,
    pub(crate) work: u64,
    pub(crate) exceeded: bool,
}

/// Runs `f` with a fresh meter that allows `cost_limit` cost units, having charged `start` (the
/// expression's statically known cost and node count outside of loops) first.
pub(crate) fn metered<T>(
    cost_limit: u64,
    start: (u64, u64),
    regexes: &Arc<[regex::Regex]>,
    f: impl FnOnce() -> T,
) -> (T, Usage) {
    let meter = Meter {
        cost: 0,
        cost_limit,
        work: 0,
        exceeded: false,
        regexes: Arc::clone(regexes),
        dynamic: Vec::new(),
    };
    let previous = METER.with(|m| m.borrow_mut().replace(meter));
    // The static part is charged up front; cancelling there still runs nothing.
    let started = charge(start.0, start.1);
    let out = f();
    let meter = METER.with(|m| std::mem::replace(&mut *m.borrow_mut(), previous));
    let usage = match meter {
        Some(m) => Usage {
            cost: m.cost,
            work: m.work,
            exceeded: m.exceeded || started.is_err(),
        },
        None => Usage {
            cost: 0,
            work: 0,
            exceeded: false,
        },
    };
    (out, usage)
}

/// The error a metering function returns once a limit is exceeded.
pub(crate) fn cancelled() -> ExecutionError {
    ExecutionError::function_error("cost", CANCELLED)
}

/// Charges `cost` cel-go units and `work` units. Fails once either limit is exceeded, and for
/// every charge after that, so that the evaluation unwinds without doing more work.
pub(crate) fn charge(cost: u64, work: u64) -> Result<(), ExecutionError> {
    METER.with(|m| {
        let mut m = m.borrow_mut();
        let Some(m) = m.as_mut() else {
            return Ok(());
        };
        if m.exceeded {
            return Err(cancelled());
        }
        // The work is charged only if it fits: the counter tells what was actually done.
        let work = m.work.saturating_add(work);
        m.cost = m.cost.saturating_add(cost);
        if m.cost > m.cost_limit || work > WORK_LIMIT {
            m.exceeded = true;
            return Err(cancelled());
        }
        m.work = work;
        Ok(())
    })
}

/// Runs `f` with the precompiled regular expression number `index` of the expression being
/// evaluated (`None` outside of a metered evaluation). `f` must not charge the meter.
pub(crate) fn with_regex<T>(index: usize, f: impl FnOnce(Option<&regex::Regex>) -> T) -> T {
    METER.with(|m| f(m.borrow().as_ref().and_then(|m| m.regexes.get(index))))
}

/// Runs `f` with `pattern` compiled, once per evaluation. `f` must not charge the meter.
pub(crate) fn with_dynamic_regex<T>(
    pattern: &str,
    f: impl FnOnce(&regex::Regex) -> T,
) -> Result<T, regex::Error> {
    let cached = METER.with(|m| {
        m.borrow()
            .as_ref()
            .is_some_and(|m| m.dynamic.iter().any(|(p, _)| p == pattern))
    });
    if !cached {
        let re = crate::regexes::compile(pattern)?;
        let installed = METER.with(|m| match m.borrow_mut().as_mut() {
            Some(m) => {
                // A handful of distinct patterns per evaluation at most; keep the latest few.
                if m.dynamic.len() >= 8 {
                    m.dynamic.remove(0);
                }
                m.dynamic.push((pattern.to_string(), re));
                None
            }
            None => Some(re),
        });
        if let Some(re) = installed {
            return Ok(f(&re));
        }
    }
    METER.with(|m| {
        let m = m.borrow();
        let re = m
            .as_ref()
            .and_then(|m| m.dynamic.iter().find(|(p, _)| p == pattern))
            .map(|(_, re)| re);
        match re {
            Some(re) => Ok(f(re)),
            None => crate::regexes::compile(pattern).map(|re| f(&re)),
        }
    })
}
