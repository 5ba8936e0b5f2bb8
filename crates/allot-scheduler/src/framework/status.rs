//! The result of running a plugin: upstream's `Status` with its codes and reasons.

use std::borrow::Cow;
use std::fmt;

use allot_runtime::SimTime;

/// What a plugin's answer means (upstream `framework.Code`, same order).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    /// The plugin ran and found the pod schedulable (here).
    Success,
    /// An unexpected failure: the scheduling attempt stops.
    Error,
    /// The pod does not fit (here); preemption might help.
    Unschedulable,
    /// The pod does not fit (here) and preemption would not help.
    UnschedulableAndUnresolvable,
    /// A Permit or PreBind plugin asks to wait (see [`Status::retry_at`]).
    Wait,
    /// The plugin has nothing to do for this pod: its coupled points are skipped.
    Skip,
    /// The cycle succeeded but the plugin wants to stop here without a penalty.
    Pending,
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Code::Success => "Success",
            Code::Error => "Error",
            Code::Unschedulable => "Unschedulable",
            Code::UnschedulableAndUnresolvable => "UnschedulableAndUnresolvable",
            Code::Wait => "Wait",
            Code::Skip => "Skip",
            Code::Pending => "Pending",
        })
    }
}

/// One reason of a [`Status`]: upstream's fixed texts are static, others are formatted.
pub type Reason = Cow<'static, str>;

/// A plugin's answer: a code, the reasons that explain a rejection, and the plugin that gave it
/// (set by the framework).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Status {
    code: Code,
    reasons: Vec<Reason>,
    plugin: &'static str,
    retry_at: Option<SimTime>,
}

impl Status {
    /// Success (upstream's nil status).
    pub const fn success() -> Self {
        Status {
            code: Code::Success,
            reasons: Vec::new(),
            plugin: "",
            retry_at: None,
        }
    }

    /// A status with one reason.
    pub fn new(code: Code, reason: impl Into<Reason>) -> Self {
        Status {
            code,
            reasons: vec![reason.into()],
            plugin: "",
            retry_at: None,
        }
    }

    /// A status with several reasons.
    pub fn with_reasons(code: Code, reasons: Vec<Reason>) -> Self {
        Status {
            code,
            reasons,
            plugin: "",
            retry_at: None,
        }
    }

    /// A status with a code and no reason (`Skip`, `Success`).
    pub const fn code_only(code: Code) -> Self {
        Status {
            code,
            reasons: Vec::new(),
            plugin: "",
            retry_at: None,
        }
    }

    /// `Skip`.
    pub const fn skip() -> Self {
        Status::code_only(Code::Skip)
    }

    /// `Unschedulable` with one reason.
    pub fn unschedulable(reason: impl Into<Reason>) -> Self {
        Status::new(Code::Unschedulable, reason)
    }

    /// `UnschedulableAndUnresolvable` with one reason.
    pub fn unresolvable(reason: impl Into<Reason>) -> Self {
        Status::new(Code::UnschedulableAndUnresolvable, reason)
    }

    /// `Error` with a message.
    pub fn error(message: impl Into<Reason>) -> Self {
        Status::new(Code::Error, message)
    }

    /// `Wait` until `at` (simulated time): the framework asks the plugin again then, or
    /// earlier when an event concerns the pod.
    pub fn wait_until(at: SimTime) -> Self {
        Status {
            code: Code::Wait,
            reasons: Vec::new(),
            plugin: "",
            retry_at: Some(at),
        }
    }

    /// `Wait` until `at`, with a reason (shown while the pod waits).
    pub fn wait_until_because(at: SimTime, reason: impl Into<Reason>) -> Self {
        Status {
            code: Code::Wait,
            reasons: vec![reason.into()],
            plugin: "",
            retry_at: Some(at),
        }
    }

    /// The code.
    pub fn code(&self) -> Code {
        self.code
    }

    /// The reasons.
    pub fn reasons(&self) -> &[Reason] {
        &self.reasons
    }

    /// The reasons joined by `", "` (upstream `Status.Message`).
    pub fn message(&self) -> String {
        self.reasons.join(", ")
    }

    /// The plugin that gave this status (empty until the framework sets it).
    pub fn plugin(&self) -> &'static str {
        self.plugin
    }

    /// Sets the plugin.
    pub fn with_plugin(mut self, plugin: &'static str) -> Self {
        self.plugin = plugin;
        self
    }

    /// When a `Wait` status asks to be asked again.
    pub fn retry_at(&self) -> Option<SimTime> {
        self.retry_at
    }

    /// Whether the code is `Success`.
    pub fn is_success(&self) -> bool {
        self.code == Code::Success
    }

    /// Whether the code is `Skip`.
    pub fn is_skip(&self) -> bool {
        self.code == Code::Skip
    }

    /// Whether the code is `Wait`.
    pub fn is_wait(&self) -> bool {
        self.code == Code::Wait
    }

    /// Whether the pod was rejected: `Unschedulable`, `UnschedulableAndUnresolvable` or
    /// `Pending` (upstream `IsRejected`).
    pub fn is_rejected(&self) -> bool {
        matches!(
            self.code,
            Code::Unschedulable | Code::UnschedulableAndUnresolvable | Code::Pending
        )
    }
}

impl Default for Status {
    fn default() -> Self {
        Status::success()
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejection_codes_follow_upstream() {
        assert!(Status::unschedulable("x").is_rejected());
        assert!(Status::unresolvable("x").is_rejected());
        assert!(Status::code_only(Code::Pending).is_rejected());
        assert!(!Status::error("x").is_rejected());
        assert!(!Status::skip().is_rejected());
        assert!(Status::default().is_success());
    }

    #[test]
    fn message_joins_reasons() {
        let s = Status::with_reasons(
            Code::Unschedulable,
            vec!["Insufficient cpu".into(), "Insufficient memory".into()],
        );
        assert_eq!(s.message(), "Insufficient cpu, Insufficient memory");
        assert_eq!(
            s.with_plugin("NodeResourcesFit").plugin(),
            "NodeResourcesFit"
        );
    }
}
