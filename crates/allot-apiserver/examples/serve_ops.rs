//! What `allot serve` spends on one object's body, repeated, for instruction counts under
//! callgrind (wall time on a shared machine says little): `serve_ops OBJECT OP COUNT`, OBJECT
//! `pod` or `resourceslice`, OP one of
//! - `get-json`, `get-protobuf`: the response body of a GET of the object
//!   (`server::object_body`, what the GET handler writes: JSON through the rendered `Value`,
//!   protobuf from the typed object);
//! - `get-protobuf-value`: the protobuf body as serve wrote it before, from the rendered
//!   `Value` (`server::render`'s `versions::render`, then `media::body`);
//! - `create-json`, `create-protobuf`: a create's request body into the typed object serve
//!   admits (`server::request_object`: JSON text or protobuf → `Value` → typed).
//!
//! ```text
//! cargo build --profile bench -p allot-apiserver --example serve_ops
//! valgrind --tool=callgrind --toggle-collect='*serve_ops::measured*' \
//!     target/release/examples/serve_ops pod get-protobuf 1000
//! ```
//! Instructions per operation: the collected total over COUNT (setup is not collected).

#[global_allocator]
static GLOBAL: allot_alloc::Allocator = allot_alloc::Allocator;

#[path = "../../allot-protobuf/benches/fixtures/mod.rs"]
mod fixtures;

use std::hint::black_box;
use std::process::ExitCode;

use allot_apiserver::media::{Format, Media, Shape};
use allot_apiserver::resources::{ResourceInfo, info_of};
use allot_apiserver::server::{object_body, request_object};
use allot_store::Stored;

struct Inputs {
    object: Stored,
    info: &'static ResourceInfo,
    path: &'static str,
    json: Vec<u8>,
    protobuf: Vec<u8>,
}

const JSON: Media = Media {
    format: Format::Json,
    shape: Shape::Object,
};
const PROTOBUF: Media = Media {
    format: Format::Protobuf,
    shape: Shape::Object,
};

#[inline(never)]
fn measured(inputs: &Inputs, op: &str, count: usize) -> Result<usize, String> {
    let mut bytes = 0;
    for _ in 0..count {
        bytes += match op {
            "get-json" => object_body(JSON, inputs.info, black_box(&inputs.object))
                .1
                .len(),
            "get-protobuf" => object_body(PROTOBUF, inputs.info, black_box(&inputs.object))
                .1
                .len(),
            "get-protobuf-value" => {
                let value =
                    allot_apiserver::versions::render(inputs.info, black_box(&inputs.object));
                allot_apiserver::media::body(PROTOBUF, &value).1.len()
            }
            "create-json" => {
                drop(black_box(request_object(
                    inputs.path,
                    "application/json",
                    black_box(&inputs.json),
                )?));
                1
            }
            "create-protobuf" => {
                drop(black_box(request_object(
                    inputs.path,
                    allot_protobuf::MEDIA_TYPE,
                    black_box(&inputs.protobuf),
                )?));
                1
            }
            other => return Err(format!("unknown operation {other:?}")),
        };
    }
    Ok(bytes)
}

fn inputs(object: Stored, path: &'static str) -> Result<Inputs, String> {
    let info = info_of(object.kind()).ok_or("no resource info")?;
    let (_, json) = object_body(JSON, info, &object);
    let (content_type, protobuf) = object_body(PROTOBUF, info, &object);
    if content_type != allot_protobuf::MEDIA_TYPE {
        return Err(format!("{path}: the object is not served as protobuf"));
    }
    Ok(Inputs {
        object,
        info,
        path,
        json,
        protobuf,
    })
}

/// The bench's slice with its `gpu.example.com/mig-capable` attribute spelled as serve's
/// validation accepts (an attribute's name is a C identifier), so that a create admits it.
fn valid_slice() -> allot_api::resource::v1::ResourceSlice {
    let mut slice = fixtures::slice();
    for device in &mut slice.spec.devices {
        let attributes = &mut device.attributes;
        let renamed: Vec<_> = attributes
            .keys()
            .filter(|k| k.contains('-'))
            .cloned()
            .collect();
        for key in renamed {
            if let Some(value) = attributes.remove(&key) {
                attributes.insert(key.replace('-', "_"), value);
            }
        }
    }
    slice
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [object, op, count] = args.as_slice() else {
        eprintln!("usage: serve_ops pod|resourceslice OP COUNT");
        return ExitCode::from(2);
    };
    let Ok(count) = count.parse::<usize>() else {
        eprintln!("serve_ops: COUNT must be a number, not {count:?}");
        return ExitCode::from(2);
    };
    let result = match object.as_str() {
        "pod" => inputs(
            Stored::Pod(fixtures::pod().into()),
            "/api/v1/namespaces/team-a/pods",
        ),
        "resourceslice" => inputs(
            Stored::ResourceSlice(valid_slice().into()),
            "/apis/resource.k8s.io/v1/resourceslices",
        ),
        other => Err(format!("unknown object {other:?}")),
    }
    .and_then(|inputs| measured(&inputs, op, count));
    match result {
        Ok(bytes) => {
            println!("{object} {op} x{count}: {bytes}");
            ExitCode::SUCCESS
        }
        Err(err) => {
            eprintln!("serve_ops: {err}");
            ExitCode::from(2)
        }
    }
}
