//! The entry point of the `protobuf` fuzz target (fuzz/fuzz_targets/protobuf.rs), also
//! replayed over its committed corpus by a test: arbitrary bytes as the message of a Pod's
//! envelope, so every input reaches the decoder of a served kind.

use serde_json::Value;

/// `data` as the message of a `v1` Pod in its envelope.
pub fn pod_body(data: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(data.len() + 16);
    crate::envelope_into(&mut body, "v1", "Pod", |out| {
        out.extend_from_slice(data);
        Ok(())
    })
    .unwrap_or_else(|e| panic!("an envelope around any bytes: {e}"));
    body
}

/// Decodes `data` (a Pod's message) into a `Value` and into JSON text: never a panic, both
/// succeed or both fail, and the text reads back as the `Value` (a key repeated inside an
/// embedded JSON document is written twice and read back last-wins, as the `Value` keeps it).
/// The typed readers ([`crate::decode_typed`]) give what serde's reading gives, errors
/// included, for the `Value` and the typed Pod.
pub fn check(data: &[u8]) {
    let body = pod_body(data);
    let value = crate::decode::<Value>(&body);
    let text = crate::decode_json(&body);
    match (&value, &text) {
        (Ok(value), Ok(text)) => {
            let read: Value = serde_json::from_slice(text)
                .unwrap_or_else(|e| panic!("decode_json wrote what is not JSON: {e}"));
            assert_eq!(&read, value, "the JSON text reads back as another value");
        }
        (Err(_), Err(_)) => {}
        _ => panic!(
            "the Value and the JSON text disagree: {:?} / {:?}",
            value.as_ref().map(|_| ()),
            text.as_ref().map(|_| ())
        ),
    }
    let _ = crate::decode::<serde::de::IgnoredAny>(&body);
    assert_eq!(
        crate::decode_typed::<Value>(&body),
        value,
        "the typed reader's Value differs"
    );
    assert_eq!(
        crate::decode_typed::<allot_api::core::v1::Pod>(&body),
        crate::decode::<allot_api::core::v1::Pod>(&body),
        "the typed reader's Pod differs"
    );
}

/// [`crate::decode_typed`] without its fallback to serde: the typed reader's own result, an
/// error where it stops. Tests check that the objects it is for are read by it.
pub fn typed_only<T: crate::Typed>(bytes: &[u8]) -> Result<T, crate::Error> {
    let envelope = crate::envelope(bytes)?;
    let msg = crate::object_message(envelope.api_version, envelope.kind)?;
    T::read(envelope.raw, msg, envelope.api_version, envelope.kind)
}
