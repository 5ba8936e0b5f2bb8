//! How much one allocate call may spend before it gives up.
//!
//! Upstream bounds the DynamicResources filter by time (`DRASchedulerFilterTimeout`, 10 s per
//! node by default). Time is not deterministic, so allot counts work instead: a search step is
//! one position of the search entered, one candidate device looked at, one device visited by a
//! bound. Steps cost tens of nanoseconds each, so the default of [`Budget::DEFAULT_STEPS`]
//! stays around a tenth to a third of a second on a busy 2-core machine, far below upstream's timeout. The memo of failed
//! search states is the only thing that grows with the search rather than with the input; it
//! stops growing at [`Budget::max_memo_bytes`] (the search goes on without remembering more).
//!
//! A caller that wants upstream's time limit as well (the scheduler's `filterTimeout`) sets
//! [`Budget::max_time`]: the search then also gives up once that much wall-clock time has
//! passed since it started. Such a limit makes the answer depend on the machine's speed for
//! searches near it; at upstream's default of 10 s the step limit always comes first.

/// The work and memory one allocate call may spend (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// Search steps after which the call gives up ([`crate::Outcome::GaveUp`]).
    pub max_steps: u64,
    /// Bytes the memo of failed search states may hold.
    pub max_memo_bytes: u64,
    /// Wall-clock time after which the search gives up (`None`: no time limit).
    pub max_time: Option<std::time::Duration>,
}

impl Budget {
    /// The default step limit: 0.1 to 0.3 s of search on a busy 2-core machine.
    pub const DEFAULT_STEPS: u64 = 2_000_000;
    /// The default memo limit.
    pub const DEFAULT_MEMO_BYTES: u64 = 64 << 20;

    /// No limit at all (tests that compare with upstream's exhaustive walk).
    pub fn unlimited() -> Self {
        Budget {
            max_steps: u64::MAX,
            max_memo_bytes: u64::MAX,
            max_time: None,
        }
    }
}

impl Default for Budget {
    fn default() -> Self {
        Budget {
            max_steps: Self::DEFAULT_STEPS,
            max_memo_bytes: Self::DEFAULT_MEMO_BYTES,
            max_time: None,
        }
    }
}
