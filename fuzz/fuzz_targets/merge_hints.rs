//! `allot node merge-hints`' input: decode the document, check its NUMA ids, merge the hints.
//! Never a panic, never an allocation sized by an id (see allot_topologymanager::document).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    allot_topologymanager::document::fuzzing::merge_hints(data);
});
