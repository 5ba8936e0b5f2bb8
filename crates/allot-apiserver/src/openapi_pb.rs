//! `/openapi/v2` in protobuf (asked for as `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`):
//! the Swagger 2.0 document as gnostic's `openapi.v2.Document` message, which kubectl asks for
//! before it validates a manifest (without it kubectl stops with "the server was unable to
//! respond with a content type that the client supports" instead of the real reason).
//! Written field by field from the JSON document; every key the document has is mapped, and a
//! key this writer does not know is an error rather than a silent omission. Vendor extensions
//! (`x-kubernetes-...`) travel as `NamedAny` whose `Any.yaml` is the value's JSON (valid YAML).

use allot_protobuf::wire::{VARINT, begin_len, end_len, put_bytes, put_tag, put_varint};
use serde_json::Value;

/// The media type the document is answered with (and may be asked for).
pub const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The media type kubectl asks for (answered as [`MEDIA_TYPE`], as kube-apiserver does: the
/// `@` is not a token character, client-go could not parse it back).
pub const MEDIA_TYPE_ASKED: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";

fn unknown(what: &str, key: &str) -> String {
    format!("OpenAPI v2 {what}: no protobuf field for {key:?}")
}

fn string(out: &mut Vec<u8>, number: u32, value: &Value, what: &str) -> Result<(), String> {
    let text = value
        .as_str()
        .ok_or_else(|| format!("OpenAPI v2 {what}: {value} is not a string"))?;
    put_bytes(out, number, text.as_bytes());
    Ok(())
}

fn strings(out: &mut Vec<u8>, number: u32, value: &Value, what: &str) -> Result<(), String> {
    match value {
        Value::Array(items) => items.iter().try_for_each(|v| string(out, number, v, what)),
        single => string(out, number, single, what),
    }
}

fn boolean(out: &mut Vec<u8>, number: u32, value: &Value) {
    put_tag(out, number, VARINT);
    put_varint(out, u64::from(value.as_bool().unwrap_or(false)));
}

fn int64(out: &mut Vec<u8>, number: u32, value: &Value) {
    put_tag(out, number, VARINT);
    put_varint(out, value.as_i64().unwrap_or(0) as u64);
}

fn double(out: &mut Vec<u8>, number: u32, value: &Value) {
    put_tag(out, number, allot_protobuf::wire::I64);
    out.extend_from_slice(&value.as_f64().unwrap_or(0.0).to_bits().to_le_bytes());
}

/// `Any { yaml = 2 }` holding a JSON value.
fn any(out: &mut Vec<u8>, number: u32, value: &Value) {
    let start = begin_len(out, number);
    put_bytes(out, 2, value.to_string().as_bytes());
    end_len(out, start);
}

/// A `NamedAny` vendor extension.
fn extension(out: &mut Vec<u8>, number: u32, name: &str, value: &Value) {
    let start = begin_len(out, number);
    put_bytes(out, 1, name.as_bytes());
    any(out, 2, value);
    end_len(out, start);
}

/// `openapi.v2.Schema`.
fn schema(out: &mut Vec<u8>, number: u32, value: &Value) -> Result<(), String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("OpenAPI v2 schema: {value} is not an object"))?;
    let start = begin_len(out, number);
    for (key, field) in map {
        match key.as_str() {
            "$ref" => string(out, 1, field, "schema")?,
            "format" => string(out, 2, field, "schema")?,
            "title" => string(out, 3, field, "schema")?,
            "description" => string(out, 4, field, "schema")?,
            "default" => any(out, 5, field),
            "multipleOf" => double(out, 6, field),
            "maximum" => double(out, 7, field),
            "exclusiveMaximum" => boolean(out, 8, field),
            "minimum" => double(out, 9, field),
            "exclusiveMinimum" => boolean(out, 10, field),
            "maxLength" => int64(out, 11, field),
            "minLength" => int64(out, 12, field),
            "pattern" => string(out, 13, field, "schema")?,
            "maxItems" => int64(out, 14, field),
            "minItems" => int64(out, 15, field),
            "uniqueItems" => boolean(out, 16, field),
            "maxProperties" => int64(out, 17, field),
            "minProperties" => int64(out, 18, field),
            "required" => strings(out, 19, field, "schema required")?,
            "enum" => {
                for item in field.as_array().into_iter().flatten() {
                    any(out, 20, item);
                }
            }
            "additionalProperties" => {
                let item = begin_len(out, 21);
                match field {
                    Value::Bool(_) => boolean(out, 2, field),
                    _ => schema(out, 1, field)?,
                }
                end_len(out, item);
            }
            "type" => {
                let item = begin_len(out, 22);
                strings(out, 1, field, "schema type")?;
                end_len(out, item);
            }
            "items" => {
                let item = begin_len(out, 23);
                match field {
                    Value::Array(schemas) => {
                        for s in schemas {
                            schema(out, 1, s)?;
                        }
                    }
                    one => schema(out, 1, one)?,
                }
                end_len(out, item);
            }
            "allOf" => {
                for s in field.as_array().into_iter().flatten() {
                    schema(out, 24, s)?;
                }
            }
            "properties" => {
                let item = begin_len(out, 25);
                for (name, s) in field.as_object().into_iter().flatten() {
                    let named = begin_len(out, 1);
                    put_bytes(out, 1, name.as_bytes());
                    schema(out, 2, s)?;
                    end_len(out, named);
                }
                end_len(out, item);
            }
            "discriminator" => string(out, 26, field, "schema")?,
            "readOnly" => boolean(out, 27, field),
            "example" => any(out, 30, field),
            x if x.starts_with("x-") => extension(out, 31, x, field),
            other => return Err(unknown("schema", other)),
        }
    }
    end_len(out, start);
    Ok(())
}

/// `ParametersItem { Parameter { BodyParameter | NonBodyParameter { query | path } } }`.
fn parameter(out: &mut Vec<u8>, number: u32, value: &Value) -> Result<(), String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("OpenAPI v2 parameter: {value} is not an object"))?;
    let item = begin_len(out, number);
    let parameter = begin_len(out, 1);
    let location = map.get("in").and_then(Value::as_str).unwrap_or_default();
    if location == "body" {
        let body = begin_len(out, 1);
        for (key, field) in map {
            match key.as_str() {
                "description" => string(out, 1, field, "parameter")?,
                "name" => string(out, 2, field, "parameter")?,
                "in" => string(out, 3, field, "parameter")?,
                "required" => boolean(out, 4, field),
                "schema" => schema(out, 5, field)?,
                x if x.starts_with("x-") => extension(out, 6, x, field),
                other => return Err(unknown("body parameter", other)),
            }
        }
        end_len(out, body);
    } else {
        let non_body = begin_len(out, 2);
        // QueryParameterSubSchema (3) and PathParameterSubSchema (4) share these numbers.
        let (sub, type_number, extensions) = match location {
            "query" => (3, 6, 23),
            "path" => (4, 5, 22),
            other => {
                return Err(format!(
                    "OpenAPI v2 parameter in {other:?} is not supported"
                ));
            }
        };
        let sub_start = begin_len(out, sub);
        for (key, field) in map {
            match key.as_str() {
                "required" => boolean(out, 1, field),
                "in" => string(out, 2, field, "parameter")?,
                "description" => string(out, 3, field, "parameter")?,
                "name" => string(out, 4, field, "parameter")?,
                "allowEmptyValue" if location == "query" => boolean(out, 5, field),
                "type" => string(out, type_number, field, "parameter")?,
                "format" => string(out, type_number + 1, field, "parameter")?,
                "uniqueItems" if location == "query" => boolean(out, 20, field),
                "uniqueItems" => boolean(out, 19, field),
                x if x.starts_with("x-") => extension(out, extensions, x, field),
                other => return Err(unknown("parameter", other)),
            }
        }
        end_len(out, sub_start);
        end_len(out, non_body);
    }
    end_len(out, parameter);
    end_len(out, item);
    Ok(())
}

/// `openapi.v2.Operation`.
fn operation(out: &mut Vec<u8>, number: u32, value: &Value) -> Result<(), String> {
    let map = value
        .as_object()
        .ok_or_else(|| format!("OpenAPI v2 operation: {value} is not an object"))?;
    let start = begin_len(out, number);
    for (key, field) in map {
        match key.as_str() {
            "tags" => strings(out, 1, field, "operation")?,
            "summary" => string(out, 2, field, "operation")?,
            "description" => string(out, 3, field, "operation")?,
            "operationId" => string(out, 5, field, "operation")?,
            "produces" => strings(out, 6, field, "operation")?,
            "consumes" => strings(out, 7, field, "operation")?,
            "parameters" => {
                for p in field.as_array().into_iter().flatten() {
                    parameter(out, 8, p)?;
                }
            }
            "responses" => {
                let responses = begin_len(out, 9);
                for (code, response) in field.as_object().into_iter().flatten() {
                    let named = begin_len(out, 1);
                    put_bytes(out, 1, code.as_bytes());
                    let value = begin_len(out, 2);
                    let inner = begin_len(out, 1);
                    for (k, f) in response.as_object().into_iter().flatten() {
                        match k.as_str() {
                            "description" => string(out, 1, f, "response")?,
                            "schema" => {
                                let item = begin_len(out, 2);
                                schema(out, 1, f)?;
                                end_len(out, item);
                            }
                            x if x.starts_with("x-") => extension(out, 5, x, f),
                            other => return Err(unknown("response", other)),
                        }
                    }
                    end_len(out, inner);
                    end_len(out, value);
                    end_len(out, named);
                }
                end_len(out, responses);
            }
            "schemes" => strings(out, 10, field, "operation")?,
            "deprecated" => boolean(out, 11, field),
            x if x.starts_with("x-") => extension(out, 13, x, field),
            other => return Err(unknown("operation", other)),
        }
    }
    end_len(out, start);
    Ok(())
}

/// The Swagger 2.0 document as gnostic's `openapi.v2.Document`.
pub fn encode(document: &Value) -> Result<Vec<u8>, String> {
    let map = document
        .as_object()
        .ok_or("the OpenAPI v2 document is not an object")?;
    let mut out = Vec::with_capacity(256 * 1024);
    for (key, field) in map {
        match key.as_str() {
            "swagger" => string(&mut out, 1, field, "document")?,
            "info" => {
                let start = begin_len(&mut out, 2);
                for (k, f) in field.as_object().into_iter().flatten() {
                    match k.as_str() {
                        "title" => string(&mut out, 1, f, "info")?,
                        "version" => string(&mut out, 2, f, "info")?,
                        "description" => string(&mut out, 3, f, "info")?,
                        x if x.starts_with("x-") => extension(&mut out, 7, x, f),
                        other => return Err(unknown("info", other)),
                    }
                }
                end_len(&mut out, start);
            }
            "host" => string(&mut out, 3, field, "document")?,
            "basePath" => string(&mut out, 4, field, "document")?,
            "schemes" => strings(&mut out, 5, field, "document")?,
            "consumes" => strings(&mut out, 6, field, "document")?,
            "produces" => strings(&mut out, 7, field, "document")?,
            "paths" => {
                let start = begin_len(&mut out, 8);
                for (path, item) in field.as_object().into_iter().flatten() {
                    let named = begin_len(&mut out, 2);
                    put_bytes(&mut out, 1, path.as_bytes());
                    let value = begin_len(&mut out, 2);
                    for (verb, op) in item.as_object().into_iter().flatten() {
                        let number = match verb.as_str() {
                            "get" => 2,
                            "put" => 3,
                            "post" => 4,
                            "delete" => 5,
                            "options" => 6,
                            "head" => 7,
                            "patch" => 8,
                            "parameters" => {
                                for p in op.as_array().into_iter().flatten() {
                                    parameter(&mut out, 9, p)?;
                                }
                                continue;
                            }
                            x if x.starts_with("x-") => {
                                extension(&mut out, 10, x, op);
                                continue;
                            }
                            other => return Err(unknown("path item", other)),
                        };
                        operation(&mut out, number, op)?;
                    }
                    end_len(&mut out, value);
                    end_len(&mut out, named);
                }
                end_len(&mut out, start);
            }
            "definitions" => {
                let start = begin_len(&mut out, 9);
                for (name, s) in field.as_object().into_iter().flatten() {
                    let named = begin_len(&mut out, 1);
                    put_bytes(&mut out, 1, name.as_bytes());
                    schema(&mut out, 2, s)?;
                    end_len(&mut out, named);
                }
                end_len(&mut out, start);
            }
            x if x.starts_with("x-") => extension(&mut out, 16, x, field),
            other => return Err(unknown("document", other)),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use allot_protobuf::wire::{Raw, Reader};
    use serde_json::json;

    use super::*;

    /// The fields of a message, by number (the last of each).
    fn fields(bytes: &[u8]) -> Vec<(u32, Raw<'_>)> {
        let mut reader = Reader::new(bytes);
        let mut out = Vec::new();
        while let Some(field) = reader.field().expect("well-formed") {
            out.push(field);
        }
        out
    }

    fn bytes_of<'a>(fields: &[(u32, Raw<'a>)], number: u32) -> Vec<&'a [u8]> {
        fields
            .iter()
            .filter_map(|(n, raw)| match raw {
                Raw::Bytes(b) if *n == number => Some(*b),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn the_served_document_encodes_with_every_key() {
        let document = crate::openapi::v2();
        let bytes = encode(&document).expect("every key has a field");
        let top = fields(&bytes);
        assert_eq!(bytes_of(&top, 1), [b"2.0".as_slice()]);
        // Every definition is there, and a kind's carries its group-version-kind extension,
        // which is what kubectl indexes definitions by.
        let definitions = fields(bytes_of(&top, 9)[0]);
        let named = bytes_of(&definitions, 1);
        assert_eq!(
            named.len(),
            document["definitions"].as_object().map_or(0, |m| m.len())
        );
        let pod = named
            .iter()
            .map(|n| fields(n))
            .find(|f| bytes_of(f, 1) == [b"io.k8s.api.core.v1.Pod".as_slice()])
            .expect("the Pod definition");
        let schema = fields(bytes_of(&pod, 2)[0]);
        let extensions: Vec<Vec<(u32, Raw<'_>)>> =
            bytes_of(&schema, 31).into_iter().map(fields).collect();
        let gvk = extensions
            .iter()
            .find(|e| bytes_of(e, 1) == [b"x-kubernetes-group-version-kind".as_slice()])
            .expect("a gvk extension");
        let yaml = fields(bytes_of(gvk, 2)[0]);
        let value: Value =
            serde_json::from_slice(bytes_of(&yaml, 2)[0]).expect("JSON, which is YAML");
        assert_eq!(
            value,
            json!([{"group": "", "kind": "Pod", "version": "v1"}])
        );
    }

    #[test]
    fn unknown_keys_are_errors() {
        assert!(encode(&json!({"swagger": "2.0", "surprise": 1})).is_err());
        assert!(
            encode(&json!({"definitions": {"A": {"type": "object", "oddity": true}}})).is_err()
        );
    }
}
