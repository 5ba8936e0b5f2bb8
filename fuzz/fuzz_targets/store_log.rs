//! The store's log replay on arbitrary bytes: never a panic, never a record whose checksum
//! fails (`allot_eventlog::fuzzing::scan_bytes` checks what it accepted against the bytes).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    allot_eventlog::fuzzing::scan_bytes(data);
});
