//! The message schema: which protobuf field carries which JSON field, read once from
//! `schema.txt` (see its header for the notation).

use std::collections::HashMap;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use foldhash::fast::RandomState;

/// A field's value type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// UTF-8 text.
    String,
    /// Bytes (base64 in JSON).
    Bytes,
    /// `bool`.
    Bool,
    /// `int32` (varint, sign-extended).
    Int32,
    /// `int64` (varint).
    Int64,
    /// `uint32` (varint).
    Uint32,
    /// `uint64` (varint).
    Uint64,
    /// `double` (fixed 64 bits).
    Double,
    /// `float` (fixed 32 bits).
    Float,
    /// A message, by index in [`Schema::messages`].
    Message(u16),
    /// `resource.Quantity`: a message whose field 1 is the canonical string.
    Quantity,
    /// `metav1.Time`: seconds (field 1); JSON RFC 3339 with seconds.
    Time,
    /// `metav1.MicroTime`: seconds (1) and nanoseconds (2); JSON RFC 3339 with microseconds.
    MicroTime,
    /// `metav1.Duration`: nanoseconds (field 1); JSON as Go prints a duration.
    Duration,
    /// `intstr.IntOrString`: type (1), intVal (2), strVal (3).
    IntOrString,
    /// `runtime.RawExtension` or `metav1.FieldsV1`: JSON bytes in field 1.
    Raw,
    /// A message whose field 1 repeats strings (`ExtraValue`): a JSON array.
    StringList,
}

/// How many values a field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Card {
    /// One.
    One,
    /// A list.
    Repeated,
    /// A map with string keys (entries: key 1, value 2).
    Map,
}

/// When the JSON form has the field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// A Go pointer: present when set, even to a zero value.
    Pointer,
    /// `omitempty`: absent when zero or empty.
    OmitEmpty,
    /// Always present.
    Always,
}

/// One field of a message.
#[derive(Debug, Clone)]
pub struct Field {
    /// The JSON name (empty for an inlined struct).
    pub json: Box<str>,
    /// The protobuf field number.
    pub number: u32,
    /// The value type.
    pub ty: Ty,
    /// One, repeated or a map.
    pub card: Card,
    /// JSON presence.
    pub presence: Presence,
    /// An inlined Go struct: its fields are the parent's in JSON.
    pub inline: bool,
    /// The wire types a value of the field may come in, a bit each ([`crate::wire::Raw::bit`]).
    pub wires: u8,
}

/// The wire types of `ty` with cardinality `card`: a map entry and a message are
/// length-delimited, a scalar comes in its own wire type, and a repeated scalar also packed.
fn wires(ty: Ty, card: Card) -> u8 {
    use crate::wire::{BYTES_BIT, I32_BIT, I64_BIT, VARINT_BIT};
    let packed = if card == Card::Repeated { BYTES_BIT } else { 0 };
    match (card, ty) {
        (Card::Map, _) => BYTES_BIT,
        (_, Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64) => VARINT_BIT | packed,
        (_, Ty::Double) => I64_BIT | packed,
        (_, Ty::Float) => I32_BIT | packed,
        _ => BYTES_BIT,
    }
}

/// Where a JSON key of a message goes.
#[derive(Debug, Clone)]
pub(crate) enum Route {
    /// One of the message's own fields.
    Own(u16),
    /// A field of an inlined struct: the field indices from the message's inlined field down
    /// through nested inlined structs to the field itself.
    Inline(Box<[u16]>),
}

/// One message type.
#[derive(Debug)]
pub struct Message {
    /// `package/version.Name`.
    pub name: Box<str>,
    /// A top-level kind (apiVersion and kind are in the envelope).
    pub object: bool,
    /// The fields, in schema order.
    pub fields: Vec<Field>,
    keys: HashMap<Box<str>, Route, RandomState>,
    /// `Route::Own(i)` for each field `i`: the route of a key found by position.
    own: Vec<Route>,
    /// Static keys' fields by their address (see [`Message::route_static`]): each slot holds
    /// the key's address (bits 16 and up), its length (bits 8-15) and its field index (bits
    /// 0-7); 0 when empty (no key is at address 0). A power of two slots, at least four times
    /// the fields (few keys share one).
    seen: Box<[AtomicU64]>,
    by_number: Vec<u16>,
}

const NONE: u16 = u16::MAX;

impl Message {
    #[cfg(test)]
    pub(crate) fn route(&self, key: &str) -> Option<&Route> {
        self.keys.get(key)
    }

    /// The route of `key`, looked for first among the fields from `*cursor` on (a struct
    /// serialises its fields in the schema's order, Go's, so the next key is usually a few
    /// fields on: a comparison of names instead of a hash), then by hash. `cursor` moves past
    /// a field found by position.
    #[inline]
    pub(crate) fn route_from(&self, key: &str, cursor: &mut usize) -> Option<&Route> {
        let from = *cursor;
        for (i, field) in self.fields.iter().enumerate().skip(from) {
            let name: &str = &field.json;
            if name.len() == key.len() && name == key {
                *cursor = i + 1;
                return Some(&self.own[i]);
            }
        }
        self.keys.get(key)
    }

    /// [`Message::route_from`] for a key with a static address (a struct's field name, as
    /// serde passes it): one of two slots chosen by the address remembers the field that the
    /// key at that address (and of that length) was found to name, or that it names none (the
    /// envelope's `apiVersion` and `kind`), so the next time it comes a comparison or two find
    /// it, in any order (allot's structs do not always declare their fields in the schema's
    /// order).
    #[inline(always)]
    pub(crate) fn route_static(&self, key: &'static str, cursor: &mut usize) -> Option<&Route> {
        let address = key.as_ptr() as u64;
        // The same address and length: the same bytes.
        let wanted = address << 16 | (key.len() as u64) << 8;
        let at = self.slot_of(address);
        for slot in [at, at ^ 1] {
            let remembered = self.seen.get(slot).map_or(0, |s| s.load(Ordering::Relaxed));
            if remembered & !0xff == wanted && key.len() < 0x100 {
                return self.own.get((remembered & 0xff) as usize);
            }
        }
        self.route_remembered(key, cursor)
    }

    /// [`Message::route_static`] of a key in neither of its slots: looked for by name, then
    /// remembered in a free one of the two (else the first).
    #[inline(never)]
    fn route_remembered(&self, key: &'static str, cursor: &mut usize) -> Option<&Route> {
        let address = key.as_ptr() as u64;
        let route = self.route_from(key, cursor);
        let index = match route {
            Some(Route::Own(i)) if *i < NOT_A_FIELD => Some(*i as u8),
            None => Some(NOT_A_FIELD as u8),
            _ => None,
        };
        if let Some(index) = index
            && address >> 48 == 0
            && key.len() < 0x100
        {
            let at = self.slot_of(address);
            let free =
                |slot: usize| self.seen.get(slot).map(|s| s.load(Ordering::Relaxed)) == Some(0);
            let slot = if !free(at) && free(at ^ 1) {
                at ^ 1
            } else {
                at
            };
            if let Some(slot) = self.seen.get(slot) {
                slot.store(
                    address << 16 | (key.len() as u64) << 8 | u64::from(index),
                    Ordering::Relaxed,
                );
            }
        }
        route
    }

    /// The first of the two slots of a key at `address`.
    #[inline]
    fn slot_of(&self, address: u64) -> usize {
        (address.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as usize
            & self.seen.len().wrapping_sub(1)
    }

    /// The field with a protobuf number.
    pub fn field_by_number(&self, number: u32) -> Option<(u16, &Field)> {
        let index = *self.by_number.get(number as usize)?;
        (index != NONE).then(|| (index, &self.fields[index as usize]))
    }
}

/// The index a slot remembers for a key that names no field (no message has so many).
const NOT_A_FIELD: u16 = 0xff;

/// Every message of the schema.
#[derive(Debug)]
pub struct Schema {
    /// The messages, in name order.
    pub messages: Vec<Message>,
    by_name: HashMap<Box<str>, u16, RandomState>,
}

static SCHEMA: OnceLock<Schema> = OnceLock::new();

impl Schema {
    /// The schema of the served Kubernetes API (parsed on first use).
    pub fn get() -> &'static Schema {
        SCHEMA.get_or_init(|| {
            Schema::parse(include_str!("schema.txt"))
                .unwrap_or_else(|e| panic!("the built-in protobuf schema does not parse: {e}"))
        })
    }

    /// A message by `package/version.Name`.
    pub fn message(&self, name: &str) -> Option<u16> {
        self.by_name.get(name).copied()
    }

    /// The message of a top-level kind: `apiVersion` `v1` is package `core/v1`, a group's
    /// package is its first label (`resource.k8s.io/v1` → `resource/v1`,
    /// `rbac.authorization.k8s.io/v1` → `rbac/v1`). The options kinds of `meta.k8s.io/v1`
    /// (DeleteOptions, ...) are found under any group version, as upstream registers them.
    pub fn object(&self, api_version: &str, kind: &str) -> Option<u16> {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        let package = if group.is_empty() {
            "core"
        } else {
            group.split('.').next().unwrap_or(group)
        };
        // The name in a stack buffer: this runs for every object encoded or decoded.
        let mut buffer = [0u8; 192];
        let mut name = |parts: &[&str]| -> Option<u16> {
            let mut at = 0;
            for part in parts {
                let bytes = part.as_bytes();
                buffer.get_mut(at..at + bytes.len())?.copy_from_slice(bytes);
                at += bytes.len();
            }
            self.message(std::str::from_utf8(&buffer[..at]).ok()?)
        };
        name(&[package, "/", version, ".", kind])
            .or_else(|| name(&["meta/v1.", kind]))
            .filter(|m| self.messages[*m as usize].object)
    }

    /// Parses the notation of `schema.txt`.
    pub fn parse(text: &str) -> Result<Schema, String> {
        // First pass: message names, so that fields can refer to later messages.
        let mut by_name: HashMap<Box<str>, u16, RandomState> = HashMap::default();
        for line in text.lines() {
            if let Some(head) = line.strip_prefix('@') {
                let name = head.split_whitespace().next().unwrap_or_default();
                let index = u16::try_from(by_name.len()).map_err(|_| "too many messages")?;
                if by_name.insert(name.into(), index).is_some() {
                    return Err(format!("message {name} twice"));
                }
            }
        }
        let mut messages: Vec<Message> = Vec::with_capacity(by_name.len());
        for (number, line) in text.lines().enumerate() {
            let at = |message: String| format!("schema.txt:{}: {message}", number + 1);
            if line.starts_with('#') || line.trim().is_empty() {
                continue;
            }
            if let Some(head) = line.strip_prefix('@') {
                let mut words = head.split_whitespace();
                let name = words.next().unwrap_or_default();
                let object = words.next() == Some("object");
                messages.push(Message {
                    name: name.into(),
                    object,
                    fields: Vec::new(),
                    keys: HashMap::default(),
                    own: Vec::new(),
                    seen: Box::default(),
                    by_number: Vec::new(),
                });
                continue;
            }
            let message = messages
                .last_mut()
                .ok_or_else(|| at("a field before any message".into()))?;
            let package = message
                .name
                .rsplit_once('.')
                .map(|(p, _)| p.to_string())
                .unwrap_or_default();
            let field = parse_field(line, &package, &by_name).map_err(at)?;
            message.fields.push(field);
        }
        // Routes, including the keys of inlined messages (and of theirs).
        for index in 0..messages.len() {
            let mut keys: HashMap<Box<str>, Route, RandomState> = HashMap::default();
            let mut by_number = Vec::new();
            for (i, field) in messages[index].fields.iter().enumerate() {
                let n = field.number as usize;
                if by_number.len() <= n {
                    by_number.resize(n + 1, NONE);
                }
                by_number[n] = i as u16;
                if field.inline {
                    inline_keys(&messages, field, &mut vec![i as u16], &mut keys, 0)?;
                } else {
                    keys.insert(field.json.clone(), Route::Own(i as u16));
                }
            }
            messages[index].own = (0..messages[index].fields.len())
                .map(|i| Route::Own(i as u16))
                .collect();
            if messages[index].fields.len() >= usize::from(NOT_A_FIELD) {
                return Err(format!(
                    "{}: more fields than a slot can name",
                    messages[index].name
                ));
            }
            let slots = (messages[index].fields.len() * 4)
                .next_power_of_two()
                .max(8);
            messages[index].seen = (0..slots).map(|_| AtomicU64::new(0)).collect();
            messages[index].keys = keys;
            messages[index].by_number = by_number;
        }
        Ok(Schema { messages, by_name })
    }
}

/// Adds the keys of an inlined struct's message (recursively) under `path`.
fn inline_keys(
    messages: &[Message],
    field: &Field,
    path: &mut Vec<u16>,
    keys: &mut HashMap<Box<str>, Route, RandomState>,
    depth: usize,
) -> Result<(), String> {
    let Ty::Message(inner) = field.ty else {
        return Err(format!("inlined field {} is not a message", field.number));
    };
    if depth > 4 {
        return Err("inlined structs nest too deep".into());
    }
    for (j, f) in messages[inner as usize].fields.iter().enumerate() {
        path.push(j as u16);
        if f.inline {
            inline_keys(messages, f, path, keys, depth + 1)?;
        } else {
            keys.entry(f.json.clone())
                .or_insert_with(|| Route::Inline(path.clone().into_boxed_slice()));
        }
        path.pop();
    }
    Ok(())
}

fn parse_field(
    line: &str,
    package: &str,
    by_name: &HashMap<Box<str>, u16, RandomState>,
) -> Result<Field, String> {
    let mut words = line.split_whitespace();
    let head = words.next().ok_or("empty field")?;
    let (json, number) = head.split_once('=').ok_or("a field is json=number")?;
    let number: u32 = number.parse().map_err(|_| format!("bad number {number}"))?;
    let mut ty = words.next().ok_or("a field needs a type")?;
    let presence = match words.next() {
        None => Presence::OmitEmpty,
        Some("?") => Presence::Pointer,
        Some("!") => Presence::Always,
        Some(other) => return Err(format!("bad presence {other}")),
    };
    let card = if let Some(rest) = ty.strip_prefix("[]") {
        ty = rest;
        Card::Repeated
    } else if let Some(rest) = ty.strip_prefix("{string}") {
        ty = rest;
        Card::Map
    } else {
        Card::One
    };
    let ty = match ty {
        "string" => Ty::String,
        "bytes" => Ty::Bytes,
        "bool" => Ty::Bool,
        "int32" => Ty::Int32,
        "int64" => Ty::Int64,
        "uint32" => Ty::Uint32,
        "uint64" => Ty::Uint64,
        "double" => Ty::Double,
        "float" => Ty::Float,
        "quantity" => Ty::Quantity,
        "time" => Ty::Time,
        "microtime" => Ty::MicroTime,
        "duration" => Ty::Duration,
        "intorstring" => Ty::IntOrString,
        "raw" => Ty::Raw,
        "stringlist" => Ty::StringList,
        name => {
            let full = if name.contains('.') {
                name.to_string()
            } else {
                format!("{package}.{name}")
            };
            Ty::Message(
                *by_name
                    .get(full.as_str())
                    .ok_or_else(|| format!("unknown message {full}"))?,
            )
        }
    };
    let inline = json == "-";
    Ok(Field {
        json: if inline { "".into() } else { json.into() },
        number,
        ty,
        card,
        presence,
        inline,
        wires: wires(ty, card),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_schema_parses_and_finds_kinds() {
        let schema = Schema::get();
        let pod = schema.object("v1", "Pod").expect("core/v1 Pod");
        assert_eq!(&*schema.messages[pod as usize].name, "core/v1.Pod");
        let slice = schema
            .object("resource.k8s.io/v1", "ResourceSlice")
            .expect("slices");
        assert_eq!(
            &*schema.messages[slice as usize].name,
            "resource/v1.ResourceSlice"
        );
        let role = schema
            .object("rbac.authorization.k8s.io/v1", "Role")
            .expect("roles");
        assert_eq!(&*schema.messages[role as usize].name, "rbac/v1.Role");
        // Options kinds are found under any group version.
        assert!(schema.object("v1", "DeleteOptions").is_some());
        // A message that is not a kind is no object.
        assert!(schema.object("v1", "PodSpec").is_none());
    }

    #[test]
    fn inlined_structs_route_their_keys() {
        let schema = Schema::get();
        let volume = &schema.messages[schema.message("core/v1.Volume").expect("volume") as usize];
        assert!(matches!(volume.route("name"), Some(Route::Own(_))));
        assert!(matches!(volume.route("hostPath"), Some(Route::Inline(_))));
        // Nested inlining: NamedRuleWithOperations ⊃ RuleWithOperations ⊃ Rule.
        let named = &schema.messages[schema
            .message("admissionregistration/v1.NamedRuleWithOperations")
            .expect("named rule") as usize];
        assert!(matches!(named.route("apiGroups"), Some(Route::Inline(path)) if path.len() == 3));
        assert!(volume.route("nonsense").is_none());
    }

    #[test]
    fn bad_notation_is_refused_with_its_line() {
        for (text, wanted) in [
            (
                "@a/v1.A\n x=1 b/v1.Missing\n",
                "schema.txt:2: unknown message",
            ),
            (" x=1 string\n", "schema.txt:1: a field before any message"),
            ("@a/v1.A\n x=one string\n", "bad number"),
            ("@a/v1.A\n@a/v1.A\n", "twice"),
        ] {
            let err = Schema::parse(text).expect_err(text);
            assert!(err.contains(wanted), "{err}");
        }
    }
}
