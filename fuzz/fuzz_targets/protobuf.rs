//! Arbitrary bytes as the message of a Pod's protobuf envelope, decoded every way: never a
//! panic, the `Value` and the JSON text agree (see `allot_protobuf::fuzzing`), and the typed
//! Pod decodes or refuses.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    allot_protobuf::fuzzing::check(data);
    let body = allot_protobuf::fuzzing::pod_body(data);
    let _ = allot_protobuf::decode::<allot_api::core::v1::Pod>(&body);
});
