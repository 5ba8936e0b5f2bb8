//! The DRA CEL environment (`device.driver`, `device.attributes`, `device.capacity`, quantity and
//! semver libraries) with static cost estimation; selectors compile once and evaluate per device.
//!
//! This crate is being written; its public API lands in the next commits.

#![deny(missing_docs)]
