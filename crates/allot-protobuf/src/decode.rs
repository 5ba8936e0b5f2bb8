//! Decoding: a `serde::Deserializer` over a protobuf message that presents it as the JSON
//! object its schema describes (JSON names as keys, special encodings as their JSON text), so
//! that allot's typed objects and `serde_json::Value` decode from it directly. A field number the
//! schema does not know, or a payload of the wrong wire type, is an error: nothing is dropped.

use std::cell::Cell;

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Visitor};
use smallvec::{SmallVec, smallvec};

use crate::Error;
use crate::schema::{Card, Field, Message, Presence, Schema, Ty};
use crate::time;
use crate::wire::{Raw, Reader};

/// What one decode shares: the schema, and how messages are read.
///
/// Encoders write each field of a message once, the values of a repeated field one after the
/// other (Kubernetes' in ascending number order, allot's in its JSON order). Such a message
/// is read as a stream: each field presented as it is read, a repeated field's run of values
/// gathered when its key is presented. A message that has a field come back after others
/// (protobuf allows it: the values merge) is noticed when the field comes back, before
/// anything of it is presented twice; the decode then starts again from the top with the
/// grouped reading, which gathers every message's fields by number first.
pub struct Cx<'s> {
    schema: &'s Schema,
    /// Messages are read grouped, not streamed.
    grouped: bool,
    /// The streamed reading met a message out of order: the decode is to be done grouped.
    out_of_order: Cell<bool>,
}

impl<'s> Cx<'s> {
    /// A streamed reading of `schema` (the typed readers' values read through serde: any
    /// message out of order makes them an error, and the whole decode is done again here).
    pub(crate) fn streamed(schema: &'s Schema) -> Self {
        Cx {
            schema,
            grouped: false,
            out_of_order: Cell::new(false),
        }
    }

    /// The schema.
    pub(crate) fn schema(&self) -> &'s Schema {
        self.schema
    }
}

/// Decodes `T` through serde from the values `vals` of a field of type `ty` and cardinality
/// `card` (a map's or list's whole run of values, or one value): what a typed object's field
/// is given by the message's map.
pub(crate) fn field_value<'de, T: de::Deserialize<'de>>(
    cx: &Cx<'_>,
    ty: Ty,
    card: Card,
    vals: &[Raw<'de>],
) -> Result<T, Error> {
    T::deserialize(FieldDe { cx, ty, card, vals })
}

/// Runs `decode` on message `msg` of `schema` in `data` (presented with `prefix` first), read
/// as a stream; again, grouped, when the stream met a message out of order.
pub fn read<'de, R>(
    schema: &Schema,
    msg: u16,
    data: &'de [u8],
    prefix: &[(&'static str, &'de str)],
    mut decode: impl FnMut(MessageDe<'de, '_>) -> Result<R, Error>,
) -> Result<R, Error> {
    let streamed = Cx {
        schema,
        grouped: false,
        out_of_order: Cell::new(false),
    };
    let result = decode(MessageDe::new(&streamed, msg, data, prefix));
    if !streamed.out_of_order.get() {
        return result;
    }
    drop(result);
    let grouped = Cx {
        schema,
        grouped: true,
        out_of_order: Cell::new(false),
    };
    decode(MessageDe::new(&grouped, msg, data, prefix))
}

/// The fields of one field number, in wire order. Up to four values inline: most repeated and
/// map fields of an object hold a few (labels, conditions, a container's arguments, resource
/// requests), and a heap list per such field cost more than the larger groups.
struct Group<'de, 's> {
    field: &'s Field,
    vals: SmallVec<[Raw<'de>; 4]>,
}

/// Gathers the fields of `data` into `groups`, by field. `ordered` is whether the fields read
/// so far into `groups` at this level came in ascending number order (as Kubernetes writes
/// them): then a field of a higher number than the last starts a new group without a search
/// of the groups so far. Inlined structs' fields, whose numbers are of another message, are
/// always searched for.
fn read_fields<'de, 's>(
    schema: &'s Schema,
    msg: &'s Message,
    data: &'de [u8],
    groups: &mut SmallVec<[Group<'de, 's>; 12]>,
    mut ordered: bool,
) -> Result<(), Error> {
    let mut reader = Reader::new(data);
    let mut last = 0;
    while let Some((number, raw)) = reader.field()? {
        let Some((_, field)) = msg.field_by_number(number) else {
            return Err(Error::new(format!(
                "{}: unknown field number {number}",
                msg.name
            )));
        };
        fits(msg, field, &raw)?;
        if field.inline {
            let (Ty::Message(m), Raw::Bytes(inner)) = (field.ty, raw) else {
                return Err(Error::new(format!("{}: bad inlined field", msg.name)));
            };
            read_fields(schema, &schema.messages[m as usize], inner, groups, false)?;
            // The last group may now be an inlined field's: it is searched for again.
            last = u32::MAX;
            continue;
        }
        let group = if ordered && number > last {
            // A field of a higher number than all before it: new.
            last = number;
            None
        } else if ordered && number == last {
            // The next value of the field just read (a repeated field's values come one
            // after the other): its group is the last.
            groups.last_mut()
        } else {
            ordered = false;
            // A repeated field's values come one after the other: the last group first.
            match groups.last_mut() {
                Some(last) if std::ptr::eq(last.field, field) => Some(last),
                _ => groups.iter_mut().find(|g| std::ptr::eq(g.field, field)),
            }
        };
        match group {
            Some(group) => group.vals.push(raw),
            None => groups.push(Group {
                field,
                vals: smallvec![raw],
            }),
        }
    }
    Ok(())
}

/// Whether a present field is left out of the JSON form (`omitempty` and a zero value, as Go's
/// encoder writes every non-pointer scalar). Inlined where the keys are presented: a call per
/// field cost more than the test.
#[inline]
fn omitted(group: &Group<'_, '_>) -> bool {
    match group.vals.last() {
        Some(last) => omitted_one(group.field, last),
        None => group.field.presence == Presence::OmitEmpty && group.field.card == Card::One,
    }
}

/// A message as a JSON object.
pub struct MessageDe<'de, 's> {
    cx: &'s Cx<'s>,
    msg: &'s Message,
    data: &'de [u8],
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
}

impl<'de, 's> MessageDe<'de, 's> {
    /// Message `msg` of the schema in `data`, presenting `key: value` string pairs first
    /// (apiVersion and kind from the envelope).
    fn new(cx: &'s Cx<'s>, msg: u16, data: &'de [u8], prefix: &[(&'static str, &'de str)]) -> Self {
        MessageDe {
            cx,
            msg: &cx.schema.messages[msg as usize],
            data,
            prefix: prefix.iter().copied().collect(),
        }
    }

    /// Presents the message to `visitor` as a map.
    fn visit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_message(self.cx, self.msg, &[self.data], self.prefix, visitor)
    }
}

/// Presents the message `msg` found in `payloads` (protobuf merges the parts of a message
/// found in several places) to `visitor` as a map: streamed when it is in one place and the
/// decode streams, else grouped. The grouped map's state is built where it stays and lent to
/// the visitor: it holds the groups inline, ~1.3 KiB not to be moved.
fn visit_message<'de, 's, V: Visitor<'de>>(
    cx: &'s Cx<'s>,
    msg: &'s Message,
    payloads: &[&'de [u8]],
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
    visitor: V,
) -> Result<V::Value, Error> {
    if let (false, [data]) = (cx.grouped, payloads) {
        return visitor.visit_map(Stream {
            cx,
            level: Level {
                msg,
                reader: Reader::new(data),
                seen: 0,
            },
            outer: SmallVec::new(),
            prefix,
            prefix_next: 0,
            current: None,
        });
    }
    let mut fields = Fields {
        cx,
        groups: SmallVec::new(),
        next: 0,
        prefix,
        prefix_next: 0,
        current: None,
    };
    // The parts of a message found in several places are read in order, each part's fields
    // searched for among the earlier parts'.
    let ordered = payloads.len() == 1;
    for payload in payloads {
        read_fields(cx.schema, msg, payload, &mut fields.groups, ordered)?;
    }
    visitor.visit_map(&mut fields)
}

impl<'de> de::Deserializer<'de> for MessageDe<'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.visit(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct enum identifier ignored_any
    }
}

/// The fields of a message, as map entries.
struct Fields<'de, 's> {
    cx: &'s Cx<'s>,
    groups: SmallVec<[Group<'de, 's>; 12]>,
    next: usize,
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
    prefix_next: usize,
    /// What `next_value_seed` reads: a prefix entry or a group.
    current: Option<Current>,
}

#[derive(Clone, Copy)]
enum Current {
    Prefix(usize),
    Group(usize),
}

impl<'de> de::MapAccess<'de> for Fields<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((at, key)) = next_prefix(&self.prefix, &mut self.prefix_next) {
            self.current = Some(Current::Prefix(at));
            return seed.deserialize(key).map(Some);
        }
        while self.next < self.groups.len() {
            let at = self.next;
            self.next += 1;
            if omitted(&self.groups[at]) {
                continue;
            }
            self.current = Some(Current::Group(at));
            let key: &str = &self.groups[at].field.json;
            return seed
                .deserialize(de::value::StrDeserializer::<Error>::new(key))
                .map(Some);
        }
        Ok(None)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        match self.current.take() {
            Some(Current::Prefix(at)) => seed.deserialize(Text(self.prefix[at].1)),
            Some(Current::Group(at)) => {
                let group = &self.groups[at];
                seed.deserialize(FieldDe {
                    cx: self.cx,
                    ty: group.field.ty,
                    card: group.field.card,
                    vals: &group.vals,
                })
                .map_err(|e| e.within(&group.field.json))
            }
            None => Err(Error::new("a value without a key")),
        }
    }
}

/// One message being read as a stream: the message itself, or an inlined struct of it.
struct Level<'de, 's> {
    msg: &'s Message,
    reader: Reader<'de>,
    /// The fields read so far, a bit per field index (a message of more than 64 fields is
    /// read grouped).
    seen: u64,
}

/// The fields of a message that has each field once, as map entries read as they come.
struct Stream<'de, 's> {
    cx: &'s Cx<'s>,
    /// The message, or the inlined struct being read inside it.
    level: Level<'de, 's>,
    /// The levels an inlined struct is read inside of, the message first.
    outer: SmallVec<[Level<'de, 's>; 1]>,
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
    prefix_next: usize,
    /// What `next_value_seed` reads: a prefix entry, or a field and its first value.
    current: Option<Streamed<'de, 's>>,
}

enum Streamed<'de, 's> {
    Prefix(usize),
    Field(&'s Field, Raw<'de>),
}

/// Whether `field`, read once with `raw`, is left out of the JSON form (see [`omitted`]).
#[inline]
pub(crate) fn omitted_one(field: &Field, raw: &Raw<'_>) -> bool {
    if field.presence != Presence::OmitEmpty || field.card != Card::One {
        return false;
    }
    match (field.ty, raw) {
        (Ty::String | Ty::Bytes, Raw::Bytes(b)) => b.is_empty(),
        (Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64, Raw::Varint(v)) => *v == 0,
        (Ty::Double, Raw::I64(v)) => f64::from_bits(*v) == 0.0,
        (Ty::Float, Raw::I32(v)) => f32::from_bits(*v) == 0.0,
        _ => false,
    }
}

/// Whether `raw` comes in a wire type of `field`.
#[inline(always)]
pub(crate) fn fits(msg: &Message, field: &Field, raw: &Raw<'_>) -> Result<(), Error> {
    if field.wires & raw.bit() != 0 {
        Ok(())
    } else {
        Err(wrong_wire_type(msg, field))
    }
}

#[cold]
fn wrong_wire_type(msg: &Message, field: &Field) -> Error {
    Error::new(format!(
        "{}: field {} has the wrong wire type",
        msg.name, field.json
    ))
}

impl Stream<'_, '_> {
    /// The stream turned: the decode is done again, grouped.
    fn out_of_order(&self) -> Error {
        self.cx.out_of_order.set(true);
        Error::new("fields out of order: read again grouped")
    }
}

impl<'de> de::MapAccess<'de> for Stream<'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        if let Some((at, key)) = next_prefix(&self.prefix, &mut self.prefix_next) {
            self.current = Some(Streamed::Prefix(at));
            return seed.deserialize(key).map(Some);
        }
        loop {
            let level = &mut self.level;
            let Some((number, raw)) = level.reader.field()? else {
                // An inlined struct ends and its parent goes on; the message's end ends all.
                match self.outer.pop() {
                    Some(parent) => {
                        self.level = parent;
                        continue;
                    }
                    None => return Ok(None),
                }
            };
            let msg = level.msg;
            let Some((index, field)) = msg.field_by_number(number) else {
                return Err(Error::new(format!(
                    "{}: unknown field number {number}",
                    msg.name
                )));
            };
            fits(msg, field, &raw)?;
            // A field read before (not in the run just read): its values are to merge.
            let bit = 1u64.checked_shl(u32::from(index)).unwrap_or(0);
            if level.seen & bit != 0 || bit == 0 {
                return Err(self.out_of_order());
            }
            level.seen |= bit;
            if field.inline {
                let (Ty::Message(m), Raw::Bytes(inner)) = (field.ty, raw) else {
                    return Err(Error::new(format!("{}: bad inlined field", msg.name)));
                };
                let inner = Level {
                    msg: &self.cx.schema.messages[m as usize],
                    reader: Reader::new(inner),
                    seen: 0,
                };
                self.outer.push(std::mem::replace(&mut self.level, inner));
                continue;
            }
            if omitted_one(field, &raw) {
                continue;
            }
            self.current = Some(Streamed::Field(field, raw));
            let key: &str = &field.json;
            return seed
                .deserialize(de::value::StrDeserializer::<Error>::new(key))
                .map(Some);
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let (field, raw) = match self.current.take() {
            Some(Streamed::Prefix(at)) => return seed.deserialize(Text(self.prefix[at].1)),
            Some(Streamed::Field(field, raw)) => (field, raw),
            None => return Err(Error::new("a value without a key")),
        };
        let value = if field.card == Card::One {
            seed.deserialize(FieldDe {
                cx: self.cx,
                ty: field.ty,
                card: Card::One,
                vals: std::slice::from_ref(&raw),
            })
        } else {
            // A repeated or map field: the run of its values, one after the other.
            let mut vals: SmallVec<[Raw<'de>; 8]> = smallvec![raw];
            let level = &mut self.level;
            while level.reader.peek_number() == Some(u64::from(field.number)) {
                let Some((_, raw)) = level.reader.field()? else {
                    break;
                };
                fits(level.msg, field, &raw)?;
                vals.push(raw);
            }
            seed.deserialize(FieldDe {
                cx: self.cx,
                ty: field.ty,
                card: field.card,
                vals: &vals,
            })
        };
        value.map_err(|e| e.within(&field.json))
    }
}

/// The next of the `key: value` pairs presented before a message's fields, if one is left:
/// its index and its key.
fn next_prefix<'de>(
    prefix: &[(&'static str, &'de str)],
    next: &mut usize,
) -> Option<(usize, BorrowedStrDeserializer<'de, Error>)> {
    let at = *next;
    let (key, _) = prefix.get(at)?;
    *next += 1;
    Some((at, BorrowedStrDeserializer::new(key)))
}

/// A string value that an `Option` takes as `Some`.
struct Text<'de>(&'de str);

impl<'de> de::Deserializer<'de> for Text<'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_borrowed_str(self.0)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visitor.visit_some(self)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct newtype_struct seq tuple tuple_struct map struct enum identifier
        ignored_any
    }
}

/// One field's values.
struct FieldDe<'a, 'de, 's> {
    cx: &'s Cx<'s>,
    ty: Ty,
    card: Card,
    vals: &'a [Raw<'de>],
}

fn bytes<'de>(raw: &Raw<'de>) -> Result<&'de [u8], Error> {
    match raw {
        Raw::Bytes(b) => Ok(b),
        _ => Err(Error::new("expected a length-delimited field")),
    }
}

#[inline]
pub(crate) fn utf8(b: &[u8]) -> Result<&str, Error> {
    if b.is_ascii() {
        // SAFETY: ASCII is UTF-8. (Most strings of an object are ASCII, and checking for that
        // takes a fraction of the general validation's instructions on short strings.)
        return Ok(unsafe { std::str::from_utf8_unchecked(b) });
    }
    std::str::from_utf8(b).map_err(|_| Error::new("a string is not UTF-8"))
}

/// The varint fields 1 and 2 and the bytes field 3 of a small message (time, duration,
/// IntOrString, Quantity's field 1 as bytes).
struct Small<'de> {
    one: u64,
    two: u64,
    text: Option<&'de [u8]>,
}

fn small<'de>(data: &'de [u8], what: &str) -> Result<Small<'de>, Error> {
    let mut out = Small {
        one: 0,
        two: 0,
        text: None,
    };
    let mut reader = Reader::new(data);
    while let Some((number, raw)) = reader.field()? {
        match (number, raw) {
            (1, Raw::Varint(v)) => out.one = v,
            (2, Raw::Varint(v)) => out.two = v,
            (1 | 3, Raw::Bytes(b)) => out.text = Some(b),
            _ => return Err(Error::new(format!("{what}: unknown field number {number}"))),
        }
    }
    Ok(out)
}

/// The JSON text of a time (`Ty::Time` or `Ty::MicroTime`) that is set (`b` not empty).
pub(crate) fn time_text(ty: Ty, b: &[u8]) -> Result<String, Error> {
    let t = small(b, "Time")?;
    let mut text = String::with_capacity(27);
    let micros = (ty == Ty::MicroTime).then_some((t.two as u32) / 1_000);
    time::format_rfc3339(&mut text, t.one as i64, micros);
    Ok(text)
}

fn single<'de, 's, V: Visitor<'de>>(
    cx: &'s Cx<'s>,
    ty: Ty,
    vals: &[Raw<'de>],
    visitor: V,
) -> Result<V::Value, Error> {
    let last = vals.last().ok_or_else(|| Error::new("no value"))?;
    match (ty, last) {
        (Ty::String, Raw::Bytes(b)) => visitor.visit_borrowed_str(utf8(b)?),
        (Ty::Bytes, Raw::Bytes(b)) => {
            use base64::Engine;
            visitor.visit_string(base64::engine::general_purpose::STANDARD.encode(b))
        }
        (Ty::Bool, Raw::Varint(v)) => visitor.visit_bool(*v != 0),
        (Ty::Int32, Raw::Varint(v)) => visitor.visit_i64(i64::from(*v as i32)),
        (Ty::Int64, Raw::Varint(v)) => visitor.visit_i64(*v as i64),
        (Ty::Uint32, Raw::Varint(v)) => visitor.visit_u64(u64::from(*v as u32)),
        (Ty::Uint64, Raw::Varint(v)) => visitor.visit_u64(*v),
        (Ty::Double, Raw::I64(v)) => visitor.visit_f64(f64::from_bits(*v)),
        (Ty::Float, Raw::I32(v)) => visitor.visit_f64(f64::from(f32::from_bits(*v))),
        (Ty::Message(m), Raw::Bytes(b)) if vals.len() == 1 => visit_message(
            cx,
            &cx.schema.messages[m as usize],
            &[b],
            SmallVec::new(),
            visitor,
        ),
        (Ty::Message(m), _) => {
            let mut payloads: SmallVec<[&'de [u8]; 4]> = SmallVec::new();
            for raw in vals {
                payloads.push(bytes(raw)?);
            }
            visit_message(
                cx,
                &cx.schema.messages[m as usize],
                &payloads,
                SmallVec::new(),
                visitor,
            )
        }
        (Ty::Quantity, Raw::Bytes(b)) => match small(b, "Quantity")?.text {
            Some(text) => visitor.visit_borrowed_str(utf8(text)?),
            None => visitor.visit_borrowed_str("0"),
        },
        (Ty::Time | Ty::MicroTime, Raw::Bytes(b)) => {
            if b.is_empty() {
                return visitor.visit_unit();
            }
            visitor.visit_string(time_text(ty, b)?)
        }
        (Ty::Duration, Raw::Bytes(b)) => {
            let mut text = String::new();
            time::format_duration(&mut text, small(b, "Duration")?.one as i64);
            visitor.visit_string(text)
        }
        (Ty::IntOrString, Raw::Bytes(b)) => {
            let v = small(b, "IntOrString")?;
            if v.one == 1 {
                visitor.visit_borrowed_str(utf8(v.text.unwrap_or_default())?)
            } else {
                visitor.visit_i64(i64::from(v.two as i32))
            }
        }
        (Ty::Raw, Raw::Bytes(b)) => {
            let raw = small(b, "RawExtension")?.text.unwrap_or_default();
            if raw.is_empty() {
                return visitor.visit_unit();
            }
            if raw.starts_with(crate::MAGIC) {
                return Err(Error::new(
                    "an embedded object in protobuf is not supported; embed it as JSON",
                ));
            }
            let mut json = serde_json::Deserializer::from_slice(raw);
            let value = de::Deserializer::deserialize_any(&mut json, visitor)
                .map_err(|e| Error::new(format!("embedded JSON: {e}")))?;
            json.end()
                .map_err(|e| Error::new(format!("embedded JSON: {e}")))?;
            Ok(value)
        }
        (Ty::StringList, Raw::Bytes(b)) => {
            let mut items: SmallVec<[Raw<'de>; 4]> = SmallVec::new();
            let mut reader = Reader::new(b);
            while let Some((number, raw)) = reader.field()? {
                match (number, raw) {
                    (1, raw @ Raw::Bytes(_)) => items.push(raw),
                    _ => return Err(Error::new(format!("list: unknown field number {number}"))),
                }
            }
            visitor.visit_seq(Elements {
                cx,
                ty: Ty::String,
                vals: &items,
                at: 0,
                packed: None,
            })
        }
        _ => Err(Error::new("a field has the wrong wire type")),
    }
}

impl<'de> de::Deserializer<'de> for FieldDe<'_, 'de, '_> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.card {
            Card::One => single(self.cx, self.ty, self.vals, visitor),
            Card::Repeated => visitor.visit_seq(Elements {
                cx: self.cx,
                ty: self.ty,
                vals: self.vals,
                at: 0,
                packed: None,
            }),
            Card::Map => visitor.visit_map(Entries {
                cx: self.cx,
                ty: self.ty,
                vals: self.vals,
                at: 0,
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        if is_null(self.ty, self.card, self.vals)? {
            visitor.visit_none()
        } else {
            visitor.visit_some(self)
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _: &'static str,
        _: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        match (self.ty, self.card, self.vals.last()) {
            (Ty::String, Card::One, Some(Raw::Bytes(b))) => {
                visitor.visit_enum(BorrowedStrDeserializer::<Error>::new(utf8(b)?))
            }
            _ => Err(Error::new("expected a string")),
        }
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

/// Whether a field's values are JSON `null`: an empty time, or a raw extension without JSON
/// (what an `Option` reads as `None`).
pub(crate) fn is_null(ty: Ty, card: Card, vals: &[Raw<'_>]) -> Result<bool, Error> {
    Ok(card == Card::One
        && matches!(ty, Ty::Time | Ty::MicroTime | Ty::Raw)
        && match vals.last() {
            Some(Raw::Bytes(b)) if ty == Ty::Raw => small(b, "RawExtension")?
                .text
                .unwrap_or_default()
                .is_empty(),
            Some(Raw::Bytes(b)) => b.is_empty(),
            _ => true,
        })
}

/// The elements of a repeated field.
struct Elements<'a, 'de, 's> {
    cx: &'s Cx<'s>,
    ty: Ty,
    vals: &'a [Raw<'de>],
    at: usize,
    /// Packed scalars being read.
    packed: Option<Reader<'de>>,
}

impl<'de, 's> Elements<'_, 'de, 's> {
    /// One element.
    fn one<'r>(&self, raw: &'r Raw<'de>) -> FieldDe<'r, 'de, 's> {
        FieldDe {
            cx: self.cx,
            ty: self.ty,
            card: Card::One,
            vals: std::slice::from_ref(raw),
        }
    }
}

impl<'de> de::SeqAccess<'de> for Elements<'_, 'de, '_> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        loop {
            if let Some(reader) = &mut self.packed {
                let raw = match self.ty {
                    Ty::Double => reader.fixed64()?.map(Raw::I64),
                    Ty::Float => reader.fixed32()?.map(Raw::I32),
                    _ => reader.next_varint()?.map(Raw::Varint),
                };
                match raw {
                    Some(raw) => return seed.deserialize(self.one(&raw)).map(Some),
                    None => self.packed = None,
                }
            }
            let Some(raw) = self.vals.get(self.at) else {
                return Ok(None);
            };
            self.at += 1;
            let scalar = matches!(
                self.ty,
                Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::Double | Ty::Float
            );
            if let (true, Raw::Bytes(b)) = (scalar, raw) {
                self.packed = Some(Reader::new(b));
                continue;
            }
            return seed.deserialize(self.one(raw)).map(Some);
        }
    }

    fn size_hint(&self) -> Option<usize> {
        self.packed.is_none().then(|| self.vals.len() - self.at)
    }
}

/// A map entry's key and value (of type `ty`); a missing value is the value type's zero.
pub(crate) fn map_entry<'de>(raw: &Raw<'de>, ty: Ty) -> Result<(&'de [u8], Raw<'de>), Error> {
    let entry = bytes(raw)?;
    // As encoders write most entries: a short key, then a short length-delimited value.
    if let [0x0a, key_len, rest @ ..] = entry
        && *key_len < 0x80
        && let Some((key, rest)) = rest.split_at_checked(usize::from(*key_len))
        && let [0x12, value_len, value @ ..] = rest
        && *value_len < 0x80
        && value.len() == usize::from(*value_len)
    {
        return Ok((key, Raw::Bytes(value)));
    }
    let mut key: &'de [u8] = &[];
    let mut value = match ty {
        Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 => Raw::Varint(0),
        Ty::Double => Raw::I64(0),
        Ty::Float => Raw::I32(0),
        _ => Raw::Bytes(&[]),
    };
    let mut reader = Reader::new(entry);
    while let Some((number, raw)) = reader.field()? {
        match (number, raw) {
            (1, Raw::Bytes(b)) => key = b,
            (2, raw) => value = raw,
            _ => {
                return Err(Error::new(format!(
                    "map entry: unknown field number {number}"
                )));
            }
        }
    }
    Ok((key, value))
}

/// The entries of a map field.
struct Entries<'a, 'de, 's> {
    cx: &'s Cx<'s>,
    ty: Ty,
    vals: &'a [Raw<'de>],
    at: usize,
    value: Option<Raw<'de>>,
}

impl<'de> de::MapAccess<'de> for Entries<'_, 'de, '_> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        let Some(raw) = self.vals.get(self.at) else {
            return Ok(None);
        };
        self.at += 1;
        let (key, value) = map_entry(raw, self.ty)?;
        self.value = Some(value);
        seed.deserialize(BorrowedStrDeserializer::<Error>::new(utf8(key)?))
            .map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| Error::new("a value without a key"))?;
        seed.deserialize(FieldDe {
            cx: self.cx,
            ty: self.ty,
            card: Card::One,
            vals: std::slice::from_ref(&value),
        })
    }
}
