//! YAML/JSON load and validate of arbitrary bytes: never a panic, every error at a line of the
//! file, pieces parsed apart equal to one pass (see `allot_validation::fuzzing`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    allot_validation::fuzzing::load_and_validate(data);
});
