//! CEL compile + evaluate with the runtime limit, on a generated device and two fixed ones;
//! the invariants are asserted in `allot_cel::fuzzing::compile_and_eval`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    allot_cel::fuzzing::compile_and_eval(data);
});
