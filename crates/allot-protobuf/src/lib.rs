//! Kubernetes' protobuf wire format (`application/vnd.kubernetes.protobuf`) for allot's objects.
//!
//! Key design decision: a *schema-driven transcoder* over serde, not generated types. The
//! schema (`schema.txt`, in allot's own notation) says for every message of the served API which
//! field number carries which JSON field, its type and its JSON presence; the encoder is a
//! `serde::Serializer` that writes a value's JSON shape straight into protobuf bytes, and the
//! decoder a `serde::Deserializer` that presents protobuf bytes as that JSON shape. So allot's
//! typed objects (and `serde_json::Value`s, for the parts allot keeps opaque) go to and from the
//! wire without a second set of types to keep in step with allot-api, and without a tree in
//! between. Kubernetes' special encodings are types of the schema: `resource.Quantity` (a
//! message holding the string), `metav1.Time` (seconds), `MicroTime` (seconds and nanoseconds,
//! microsecond precision), `Duration`, `IntOrString`, `RawExtension` (JSON bytes), inlined Go
//! structs (flat in JSON, a nested message on the wire).
//!
//! What it costs: every field is found by name where generated code would use a fixed offset.
//! On encode, a struct's field names are `&'static str`s: each message remembers, in one of
//! two slots chosen by the name's address, which field (or that no field) the name at that
//! address is, so a struct's field is found with a comparison or two after the first time; a
//! map key (a `serde_json::Value`'s) is compared with the schema's next fields (a value
//! decoded from JSON has them in the schema's order), else looked up by hash. A nested
//! message's length is patched after it is written (a move of its bytes when it is 128 bytes
//! or longer: one byte is kept for it). The decoder reads a message as a stream, presenting
//! each field as it comes; protobuf merges a field found in two places, so a message whose
//! field comes back after others makes the whole decode start again, gathering each
//! message's values by field first. [`decode_json`] writes the JSON text with no tree at all.
//! Field numbers the schema does not know, wrong wire types, and JSON keys that have no field
//! are errors: nothing is dropped.
//!
//! Typed readers (`typed.rs`, [`decode_typed`]): for the kinds read most (Pods,
//! ResourceSlices) and for `serde_json::Value`s, a table per message sends each field number to
//! its struct field, and the value's type reads itself, as generated protobuf code does; the
//! leaves with their own encodings (quantities, enumerations, raw JSON) still go through serde,
//! from their field's values alone. serde's presentation of a message as a map, and the match of
//! each key against the struct's names, cost more than the rest of a typed decode; without them
//! a Pod decodes in 0.8 of the instructions. The serde decoder stays the definition: a
//! message the typed reader would not read exactly as it does (a field that comes back after
//! others, an inlined struct in a typed message, a field the table leaves to serde) stops the
//! typed reader, and the object is decoded again through serde, so results and errors are the
//! same either way.
//!
//! Framing: [`encode`] writes the `k8s\0` magic and the `runtime.Unknown` envelope
//! (apiVersion, kind, the raw message); lists are the `XList` messages; watch events are
//! `metav1.WatchEvent` messages, each behind a 4-byte big-endian length ([`watch_frame`]).

#![deny(missing_docs)]

mod decode;
mod encode;
#[doc(hidden)]
pub mod fuzzing;
mod json;
pub mod schema;
pub mod time;
pub(crate) mod typed;
pub mod wire;

use std::fmt;

use serde::{Deserialize, Serialize};

pub use schema::Schema;
pub use typed::Typed;

/// The media type.
pub const MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf";
/// The media type of a watch stream.
pub const WATCH_MEDIA_TYPE: &str = "application/vnd.kubernetes.protobuf;stream=watch";
/// The magic in front of every encoded object.
pub const MAGIC: &[u8] = b"k8s\0";

/// An encoding or decoding error, with the JSON path of the field it concerns.
///
/// Boxed: every serializer and deserializer call of the codec returns a `Result<_, Error>`,
/// and a one-pointer error keeps those results in a register instead of in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(Box<ErrorInner>);

#[derive(Debug, Clone, PartialEq, Eq)]
struct ErrorInner {
    path: Vec<Box<str>>,
    message: String,
    unrepresentable: bool,
}

impl Error {
    /// An error without a path.
    #[cold]
    pub fn new(message: impl Into<String>) -> Self {
        Error(Box::new(ErrorInner {
            path: Vec::new(),
            message: message.into(),
            unrepresentable: false,
        }))
    }

    /// A JSON field that the protobuf schema has no field for (an alpha field of allot's
    /// model that upstream's wire format does not carry yet).
    pub(crate) fn unrepresentable(message: impl Into<String>) -> Self {
        let mut error = Error::new(message);
        error.0.unrepresentable = true;
        error
    }

    /// Whether the value holds a field the wire format lacks (as opposed to a malformed
    /// value): the object is fine, but only JSON can carry it.
    pub fn is_unrepresentable(&self) -> bool {
        self.0.unrepresentable
    }

    /// The same error inside the field `name`.
    #[cold]
    pub(crate) fn within(mut self, name: &str) -> Self {
        if !name.is_empty() {
            self.0.path.push(name.into());
        }
        self
    }

    /// What went wrong, without the path.
    pub fn message(&self) -> &str {
        &self.0.message
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, name) in self.0.path.iter().rev().enumerate() {
            if i > 0 {
                f.write_str(".")?;
            }
            f.write_str(name)?;
        }
        if !self.0.path.is_empty() {
            f.write_str(": ")?;
        }
        f.write_str(&self.0.message)
    }
}

impl std::error::Error for Error {}

impl serde::ser::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(msg.to_string())
    }
}

impl serde::de::Error for Error {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Error::new(msg.to_string())
    }
}

/// Whether objects of this kind have a protobuf form.
pub fn supports(api_version: &str, kind: &str) -> bool {
    Schema::get().object(api_version, kind).is_some()
}

pub(crate) fn object_message(api_version: &str, kind: &str) -> Result<u16, Error> {
    // The kind of the last object this thread encoded or decoded: a server thread answers a
    // list or a watch with many of one kind, and the schema's lookup by name costs more than
    // the comparison.
    thread_local! {
        static LAST: std::cell::RefCell<(String, String, u16)> =
            const { std::cell::RefCell::new((String::new(), String::new(), 0)) };
    }
    let remembered = LAST
        .with_borrow(|(v, k, m)| (!k.is_empty() && v == api_version && k == kind).then_some(*m));
    if let Some(m) = remembered {
        return Ok(m);
    }
    let m = Schema::get().object(api_version, kind).ok_or_else(|| {
        Error::new(format!(
            "{api_version} {kind} has no protobuf encoding; use application/json"
        ))
    })?;
    LAST.with_borrow_mut(|(v, k, last)| {
        v.clear();
        v.push_str(api_version);
        k.clear();
        k.push_str(kind);
        *last = m;
    });
    Ok(m)
}

/// Encodes an object (a typed object or a JSON value) of `kind` at `api_version`: the magic,
/// then the `runtime.Unknown` envelope around the message.
pub fn encode<T: Serialize + ?Sized>(
    api_version: &str,
    kind: &str,
    value: &T,
) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(SIZE_HINT.load(std::sync::atomic::Ordering::Relaxed));
    encode_into(&mut out, api_version, kind, value)?;
    remember_size(out.len());
    Ok(out)
}

/// The size of the last object encoded (at least 512 bytes, at most 64 KiB): the capacity the
/// next one starts with, so that an object of the same kind as the last is written without
/// growing its buffer.
static SIZE_HINT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(512);

fn remember_size(len: usize) {
    SIZE_HINT.store(
        (len + len / 8).clamp(512, 64 * 1024),
        std::sync::atomic::Ordering::Relaxed,
    );
}

/// [`encode`], appending to `out`.
pub fn encode_into<T: Serialize + ?Sized>(
    out: &mut Vec<u8>,
    api_version: &str,
    kind: &str,
    value: &T,
) -> Result<(), Error> {
    let msg = object_message(api_version, kind)?;
    envelope_into(out, api_version, kind, |out| {
        encode::message_fields(Schema::get(), msg, value, out)
    })
}

/// Writes the magic and the envelope, with the raw message written by `raw`.
fn envelope_into(
    out: &mut Vec<u8>,
    api_version: &str,
    kind: &str,
    raw: impl FnOnce(&mut Vec<u8>) -> Result<(), Error>,
) -> Result<(), Error> {
    out.extend_from_slice(MAGIC);
    let type_meta = wire::begin_len(out, 1);
    wire::put_bytes(out, 1, api_version.as_bytes());
    wire::put_bytes(out, 2, kind.as_bytes());
    wire::end_len(out, type_meta);
    let start = wire::begin_len(out, 2);
    raw(out)?;
    wire::end_len(out, start);
    // contentEncoding and contentType, empty, as Go writes them.
    wire::put_bytes(out, 3, b"");
    wire::put_bytes(out, 4, b"");
    Ok(())
}

/// The list metadata of a list response.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ListMeta {
    /// The list's resourceVersion.
    #[serde(skip_serializing_if = "String::is_empty")]
    pub resource_version: String,
    /// The continue token.
    #[serde(rename = "continue", skip_serializing_if = "String::is_empty")]
    pub continue_: String,
    /// How many items are left after this page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remaining_item_count: Option<i64>,
}

/// Encodes a list (`kind` is the list kind, e.g. `PodList`) of items of the list's item type.
pub fn encode_list<'a, T: Serialize + 'a>(
    api_version: &str,
    kind: &str,
    meta: &ListMeta,
    items: impl IntoIterator<Item = &'a T>,
) -> Result<Vec<u8>, Error> {
    let schema = Schema::get();
    let list = object_message(api_version, kind)?;
    let list_msg = &schema.messages[list as usize];
    let (meta_field, items_field) = match (list_msg.field_by_number(1), list_msg.field_by_number(2))
    {
        (Some((_, m)), Some((_, i))) if &*m.json == "metadata" && &*i.json == "items" => (m, i),
        _ => return Err(Error::new(format!("{kind} is not a list"))),
    };
    let (schema::Ty::Message(meta_msg), schema::Ty::Message(item_msg)) =
        (meta_field.ty, items_field.ty)
    else {
        return Err(Error::new(format!("{kind} is not a list")));
    };
    let mut out = Vec::with_capacity(4096);
    envelope_into(&mut out, api_version, kind, |out| {
        let start = wire::begin_len(out, 1);
        encode::message_fields(schema, meta_msg, meta, out)?;
        wire::end_len(out, start);
        for item in items {
            let start = wire::begin_len(out, 2);
            encode::message_fields(schema, item_msg, item, out)?;
            wire::end_len(out, start);
        }
        Ok(())
    })?;
    Ok(out)
}

/// Appends one watch event: a 4-byte big-endian length, then a `metav1.WatchEvent` with the
/// event type and the encoded object (as [`encode`] writes it) in a `RawExtension`.
pub fn watch_frame(out: &mut Vec<u8>, event_type: &str, object: &[u8]) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    wire::put_bytes(out, 1, event_type.as_bytes());
    let raw = wire::begin_len(out, 2);
    wire::put_bytes(out, 1, object);
    wire::end_len(out, raw);
    let len = u32::try_from(out.len() - at - 4).unwrap_or(u32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
}

/// The envelope of an encoded object.
#[derive(Debug, Clone, Copy)]
pub struct Envelope<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// The message.
    pub raw: &'a [u8],
}

/// Reads the magic and the envelope (a content encoding such as gzip is refused).
pub fn envelope(bytes: &[u8]) -> Result<Envelope<'_>, Error> {
    fn text(b: &[u8]) -> Result<&str, Error> {
        std::str::from_utf8(b).map_err(|_| Error::new("the envelope's type is not UTF-8"))
    }
    let body = bytes
        .strip_prefix(MAGIC)
        .ok_or_else(|| Error::new("missing the k8s protobuf magic"))?;
    let mut out = Envelope {
        api_version: "",
        kind: "",
        raw: &[],
    };
    let mut reader = wire::Reader::new(body);
    while let Some((number, raw)) = reader.field()? {
        match (number, raw) {
            (1, wire::Raw::Bytes(type_meta)) => {
                let mut inner = wire::Reader::new(type_meta);
                while let Some((n, raw)) = inner.field()? {
                    match (n, raw) {
                        (1, wire::Raw::Bytes(b)) => out.api_version = text(b)?,
                        (2, wire::Raw::Bytes(b)) => out.kind = text(b)?,
                        _ => return Err(Error::new(format!("TypeMeta: unknown field {n}"))),
                    }
                }
            }
            (2, wire::Raw::Bytes(raw)) => out.raw = raw,
            (3 | 4, wire::Raw::Bytes([])) => {}
            (3, wire::Raw::Bytes(b)) => {
                return Err(Error::new(format!(
                    "content encoding {:?} is not supported",
                    String::from_utf8_lossy(b)
                )));
            }
            (4, wire::Raw::Bytes(_)) => {}
            (n, _) => return Err(Error::new(format!("Unknown: unknown field {n}"))),
        }
    }
    if out.kind.is_empty() {
        return Err(Error::new("the envelope names no kind"));
    }
    Ok(out)
}

/// Decodes an encoded object into `T` (a typed object or a `serde_json::Value`), with
/// `apiVersion` and `kind` from the envelope.
pub fn decode<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Error> {
    let envelope = envelope(bytes)?;
    let msg = object_message(envelope.api_version, envelope.kind)?;
    let prefix = [
        ("apiVersion", envelope.api_version),
        ("kind", envelope.kind),
    ];
    decode::read(Schema::get(), msg, envelope.raw, &prefix, |message| {
        T::deserialize(message)
    })
}

/// Decodes an encoded object with a typed reader ([`Typed`]: Pods, ResourceSlices, and
/// `serde_json::Value` for any kind): [`decode`]'s result, read field number by field number
/// into the struct where it can be, through serde where it cannot (see `typed.rs`).
pub fn decode_typed<T: Typed>(bytes: &[u8]) -> Result<T, Error> {
    let typed = envelope(bytes).and_then(|envelope| {
        let msg = object_message(envelope.api_version, envelope.kind)?;
        T::read(envelope.raw, msg, envelope.api_version, envelope.kind)
    });
    match typed {
        Ok(object) => Ok(object),
        Err(_) => decode(bytes),
    }
}

/// Decodes an encoded object straight into its JSON text (with `apiVersion` and `kind` from
/// the envelope): the bytes `serde_json::to_vec` writes for `decode::<serde_json::Value>`,
/// without building the `Value`.
pub fn decode_json(bytes: &[u8]) -> Result<Vec<u8>, Error> {
    let envelope = envelope(bytes)?;
    let msg = object_message(envelope.api_version, envelope.kind)?;
    // JSON text is about twice the size of the message.
    let mut out = Vec::with_capacity(envelope.raw.len() * 2 + 64);
    let prefix = [
        ("apiVersion", envelope.api_version),
        ("kind", envelope.kind),
    ];
    decode::read(Schema::get(), msg, envelope.raw, &prefix, |message| {
        // Read again grouped: the text starts again.
        out.clear();
        serde::de::DeserializeSeed::deserialize(json::Json(&mut out), message)
    })?;
    Ok(out)
}

/// Splits a watch stream into its events: `(type, encoded object)`; the rest that does not
/// hold a whole frame yet is left in `buffer`.
pub fn watch_events(buffer: &mut Vec<u8>) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut events = Vec::new();
    let mut at = 0;
    while buffer.len() >= at + 4 {
        let len = u32::from_be_bytes([buffer[at], buffer[at + 1], buffer[at + 2], buffer[at + 3]])
            as usize;
        if buffer.len() < at + 4 + len {
            break;
        }
        let frame = &buffer[at + 4..at + 4 + len];
        let (mut event_type, mut object) = (String::new(), Vec::new());
        let mut reader = wire::Reader::new(frame);
        while let Some((n, raw)) = reader.field()? {
            match (n, raw) {
                (1, wire::Raw::Bytes(b)) => event_type = String::from_utf8_lossy(b).into_owned(),
                (2, wire::Raw::Bytes(b)) => {
                    let mut inner = wire::Reader::new(b);
                    while let Some((m, raw)) = inner.field()? {
                        if let (1, wire::Raw::Bytes(o)) = (m, raw) {
                            object = o.to_vec();
                        }
                    }
                }
                _ => return Err(Error::new(format!("WatchEvent: unknown field {n}"))),
            }
        }
        events.push((event_type, object));
        at += 4 + len;
    }
    buffer.drain(..at);
    Ok(events)
}

#[cfg(test)]
mod tests;
