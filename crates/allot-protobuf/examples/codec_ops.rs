//! One operation of the codec bench, repeated, for instruction counts under callgrind (wall
//! time on a shared machine says little): `codec_ops OBJECT OP COUNT`, OBJECT `pod` or
//! `resourceslice`, OP one of `encode-json`, `encode-json-value`, `encode-protobuf`,
//! `encode-protobuf-value`, `decode-json`, `decode-json-value`, `decode-protobuf`,
//! `decode-protobuf-typed` (the typed reader, `decode_typed`), `decode-json-to-value`,
//! `decode-protobuf-to-value`, `decode-protobuf-to-value-typed`, `decode-json-no-object`,
//! `decode-protobuf-no-object`, `to-json-text-via-value`, `to-json-text`. The `-value` encodings go through a `serde_json::Value` first, as
//! `allot serve` renders its responses (`Stored::to_json`, then JSON or protobuf).
//!
//! ```text
//! cargo build --profile bench -p allot-protobuf --example codec_ops
//! valgrind --tool=callgrind --toggle-collect='*codec_ops::measured*' \
//!     target/release/examples/codec_ops pod decode-protobuf 1000
//! ```
//! Instructions per operation: the collected total over COUNT (setup is not collected).

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

#[path = "../benches/fixtures/mod.rs"]
mod fixtures;

use std::hint::black_box;
use std::process::ExitCode;

use serde::Serialize;

struct Inputs<'a, T> {
    object: &'a T,
    api_version: &'a str,
    kind: &'a str,
    json: Vec<u8>,
    protobuf: Vec<u8>,
}

/// 1 for a decoded object, dropped (its drop is part of the measure); the error as text.
fn decoded<V, E: std::fmt::Display>(result: Result<V, E>) -> Result<usize, String> {
    drop(black_box(result.map_err(|e| e.to_string())?));
    Ok(1)
}

#[inline(never)]
fn measured<T: Serialize + allot_protobuf::Typed>(
    inputs: &Inputs<'_, T>,
    op: &str,
    count: usize,
) -> Result<usize, String> {
    let mut bytes = 0;
    for _ in 0..count {
        bytes += match op {
            "encode-json" => serde_json::to_vec(black_box(inputs.object))
                .map_err(|e| e.to_string())?
                .len(),
            "encode-json-value" => {
                let value =
                    serde_json::to_value(black_box(inputs.object)).map_err(|e| e.to_string())?;
                serde_json::to_vec(&value).map_err(|e| e.to_string())?.len()
            }
            "encode-protobuf-value" => {
                let value =
                    serde_json::to_value(black_box(inputs.object)).map_err(|e| e.to_string())?;
                allot_protobuf::encode(inputs.api_version, inputs.kind, &value)
                    .map_err(|e| e.to_string())?
                    .len()
            }
            "encode-protobuf" => {
                allot_protobuf::encode(inputs.api_version, inputs.kind, black_box(inputs.object))
                    .map_err(|e| e.to_string())?
                    .len()
            }
            "decode-json" => decoded(serde_json::from_slice::<T>(black_box(&inputs.json)))?,
            "decode-json-value" => {
                let value: serde_json::Value =
                    serde_json::from_slice(black_box(&inputs.json)).map_err(|e| e.to_string())?;
                drop(black_box(
                    serde_json::from_value::<T>(value).map_err(|e| e.to_string())?,
                ));
                1
            }
            "decode-protobuf" => decoded(allot_protobuf::decode::<T>(black_box(&inputs.protobuf)))?,
            "decode-protobuf-typed" => decoded(allot_protobuf::decode_typed::<T>(black_box(
                &inputs.protobuf,
            )))?,
            "decode-protobuf-to-value" => decoded(allot_protobuf::decode::<serde_json::Value>(
                black_box(&inputs.protobuf),
            ))?,
            "decode-protobuf-to-value-typed" => {
                decoded(allot_protobuf::decode_typed::<serde_json::Value>(
                    black_box(&inputs.protobuf),
                ))?
            }
            "decode-json-to-value" => decoded(serde_json::from_slice::<serde_json::Value>(
                black_box(&inputs.json),
            ))?,
            "decode-json-no-object" => {
                serde_json::from_slice::<serde::de::IgnoredAny>(black_box(&inputs.json))
                    .map_err(|e| e.to_string())?;
                1
            }
            "decode-protobuf-no-object" => {
                allot_protobuf::decode::<serde::de::IgnoredAny>(black_box(&inputs.protobuf))
                    .map_err(|e| e.to_string())?;
                1
            }
            "to-json-text-via-value" => {
                let value: serde_json::Value = allot_protobuf::decode(black_box(&inputs.protobuf))
                    .map_err(|e| e.to_string())?;
                serde_json::to_vec(&value).map_err(|e| e.to_string())?.len()
            }
            "to-json-text" => allot_protobuf::decode_json(black_box(&inputs.protobuf))
                .map_err(|e| e.to_string())?
                .len(),
            other => return Err(format!("unknown operation {other:?}")),
        };
    }
    Ok(bytes)
}

fn run<T: Serialize + allot_protobuf::Typed>(
    object: &T,
    api_version: &str,
    kind: &str,
    op: &str,
    count: usize,
) -> Result<usize, String> {
    let inputs = Inputs {
        object,
        api_version,
        kind,
        json: serde_json::to_vec(object).map_err(|e| e.to_string())?,
        protobuf: allot_protobuf::encode(api_version, kind, object).map_err(|e| e.to_string())?,
    };
    measured(&inputs, op, count)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [object, op, count] = args.as_slice() else {
        eprintln!("usage: codec_ops pod|resourceslice OP COUNT");
        return ExitCode::from(2);
    };
    let Ok(count) = count.parse::<usize>() else {
        eprintln!("codec_ops: COUNT must be a number, not {count:?}");
        return ExitCode::from(2);
    };
    let result = match object.as_str() {
        "pod" => run(&fixtures::pod(), "v1", "Pod", op, count),
        "resourceslice" => run(
            &fixtures::slice(),
            "resource.k8s.io/v1",
            "ResourceSlice",
            op,
            count,
        ),
        other => Err(format!("unknown object {other:?}")),
    };
    match result {
        Ok(bytes) => {
            println!("{object} {op} x{count}: {bytes}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("codec_ops: {err}");
            ExitCode::from(2)
        }
    }
}
