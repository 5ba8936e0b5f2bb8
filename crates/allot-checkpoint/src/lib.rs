//! What the kubelet's checkpoint files share, whatever their content: the checksum (FNV-1a, 32
//! bit, over go-spew text), `checksum.New` of a string payload, the bytes Go's `encoding/json`
//! writes where serde_json differs, and how Go's decoder matches keys to struct fields and words
//! its errors. The CPU and Memory Manager checkpoint modules build their formats on these.

#![deny(missing_docs)]

use serde_json::{Map, Value};

/// The kubelet's checksum of a go-spew rendering: FNV-1a (32 bit), as a `checksum.Checksum`.
pub fn checksum_of(text: &str) -> u64 {
    let mut hash: u32 = 0x811c_9dc5;
    for byte in text.bytes() {
        hash ^= u32::from(byte);
        hash = hash.wrapping_mul(0x0100_0193);
    }
    u64::from(hash)
}

/// The kubelet's `checksum.New(data)` of a string: FNV-1a over `(string)` and the string.
pub fn data_checksum(data: &str) -> u64 {
    let mut text = String::with_capacity(data.len() + 8);
    text.push_str("(string)");
    text.push_str(data);
    checksum_of(&text)
}

/// Go's `encoding/json` escapes `<`, `>`, `&`, U+2028 and U+2029 inside strings; serde_json does
/// not. These characters only occur inside strings in JSON text, so escaping them afterwards
/// gives Go's bytes.
pub fn go_json_escape(json: String) -> String {
    if !json.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return json;
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        match c {
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// The JSON kind as Go's unmarshal errors name it.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Go's message for a JSON syntax error where it is common (truncated input), else serde's.
pub fn json_error(e: &serde_json::Error) -> String {
    if e.classify() == serde_json::error::Category::Eof {
        "unexpected end of JSON input".to_string()
    } else {
        e.to_string()
    }
}

/// Looks a field up the way Go's `encoding/json` matches keys to a struct field: exact name or
/// case-insensitive, the last matching key of the document winning.
pub fn go_field<'a>(obj: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    obj.iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v)
        .next_back()
}

/// Go's error for a value of the wrong JSON kind in struct field `ty.field` of Go type `go_type`.
pub fn type_error(v: &Value, ty: &str, field: &str, go_type: &str) -> String {
    format!(
        "json: cannot unmarshal {} into Go struct field {ty}.{field} of type {go_type}",
        json_kind(v)
    )
}

/// A `checksum.Checksum` (uint64) field: absent or `null` is 0.
pub fn go_checksum(obj: &Map<String, Value>, ty: &str, field: &str) -> Result<u64, String> {
    match go_field(obj, field) {
        None | Some(Value::Null) => Ok(0),
        Some(v) => v
            .as_u64()
            .ok_or_else(|| type_error(v, ty, field, "checksum.Checksum")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_and_escapes_are_gos() {
        // FNV-1a 32 of the empty string is the offset basis.
        assert_eq!(checksum_of(""), 0x811c_9dc5);
        assert_eq!(data_checksum("x"), checksum_of("(string)x"));
        assert_eq!(
            go_json_escape(r#"{"a":"<&>"}"#.into()),
            r#"{"a":"\u003c\u0026\u003e"}"#
        );
        assert_eq!(go_json_escape("plain".into()), "plain");
    }

    #[test]
    fn fields_match_as_go_decodes() {
        let obj: Map<String, Value> =
            serde_json::from_str(r#"{"Checksum": 1, "checksum": 7, "n": "x"}"#).unwrap();
        assert_eq!(go_checksum(&obj, "T", "checksum"), Ok(7));
        assert_eq!(
            go_checksum(&obj, "T", "n"),
            Err(
                "json: cannot unmarshal string into Go struct field T.n of type checksum.Checksum"
                    .into()
            )
        );
        assert_eq!(go_checksum(&obj, "T", "absent"), Ok(0));
    }
}
