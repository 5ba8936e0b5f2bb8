//! The DRA allocator on generated scenarios: the input bytes drive a small scenario generator
//! (`allot_dra::fuzzing::check`), which asserts that no device is handed out twice, no
//! capacity or counter is exceeded, every call ends within its step budget, and the prunings
//! answer as upstream's exhaustive walk wherever that walk finishes.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    allot_dra::fuzzing::check(data);
});
