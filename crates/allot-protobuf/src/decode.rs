//! Decoding: a `serde::Deserializer` over a protobuf message that presents it as the JSON
//! object its schema describes (JSON names as keys, special encodings as their JSON text), so
//! that allot's typed objects and `serde_json::Value` decode from it directly. A field number the
//! schema does not know, or a payload of the wrong wire type, is an error: nothing is dropped.

use serde::de::value::BorrowedStrDeserializer;
use serde::de::{self, DeserializeSeed, Visitor};
use smallvec::{SmallVec, smallvec};

use crate::Error;
use crate::schema::{Card, Field, Message, Presence, Schema, Ty};
use crate::time;
use crate::wire::{Raw, Reader};

/// The fields of one field number, in wire order. Up to four values inline: most repeated and
/// map fields of an object hold a few (labels, conditions, a container's arguments, resource
/// requests), and a heap list per such field cost more than the larger groups.
struct Group<'de, 's> {
    field: &'s Field,
    vals: SmallVec<[Raw<'de>; 4]>,
}

fn wire_fits(field: &Field, raw: &Raw<'_>) -> bool {
    match (field.ty, raw) {
        (Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64, Raw::Varint(_))
        | (Ty::Double, Raw::I64(_))
        | (Ty::Float, Raw::I32(_)) => true,
        // Packed repeated scalars.
        (
            Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::Double | Ty::Float,
            Raw::Bytes(_),
        ) => field.card == Card::Repeated,
        (_, Raw::Bytes(_)) => !matches!(
            field.ty,
            Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::Double | Ty::Float
        ),
        _ => false,
    }
}

/// Gathers the fields of `data` into `groups`, by field. `ordered` is whether the fields read
/// so far into `groups` at this level came in ascending number order (as every encoder writes
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
        let fits = match field.card {
            Card::Map => matches!(raw, Raw::Bytes(_)),
            _ => wire_fits(field, &raw),
        };
        if !fits {
            return Err(Error::new(format!(
                "{}: field {} has the wrong wire type",
                msg.name, field.json
            )));
        }
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
    let field = group.field;
    if field.presence != Presence::OmitEmpty || field.card != Card::One {
        return false;
    }
    let Some(last) = group.vals.last() else {
        return true;
    };
    match (field.ty, last) {
        (Ty::String | Ty::Bytes, Raw::Bytes(b)) => b.is_empty(),
        (Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64, Raw::Varint(v)) => *v == 0,
        (Ty::Double, Raw::I64(v)) => f64::from_bits(*v) == 0.0,
        (Ty::Float, Raw::I32(v)) => f32::from_bits(*v) == 0.0,
        _ => false,
    }
}

/// A message as a JSON object.
pub struct MessageDe<'de, 's> {
    schema: &'s Schema,
    msg: &'s Message,
    payloads: SmallVec<[&'de [u8]; 1]>,
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
}

impl<'de, 's> MessageDe<'de, 's> {
    /// Message `msg` of `schema` in `data`.
    pub fn new(schema: &'s Schema, msg: u16, data: &'de [u8]) -> Self {
        MessageDe {
            schema,
            msg: &schema.messages[msg as usize],
            payloads: smallvec![data],
            prefix: SmallVec::new(),
        }
    }

    /// Presents `key: value` string pairs first (apiVersion and kind from the envelope).
    pub fn with_prefix(mut self, key: &'static str, value: &'de str) -> Self {
        self.prefix.push((key, value));
        self
    }

    /// Presents the message to `visitor` as a map.
    fn visit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        visit_message(self.schema, self.msg, &self.payloads, self.prefix, visitor)
    }
}

/// Presents the message `msg` found in `payloads` (protobuf merges the parts of a message
/// found in several places) to `visitor` as a map. The map's state is built where it stays
/// and lent to the visitor: it holds the groups inline, ~1.3 KiB not to be moved.
fn visit_message<'de, 's, V: Visitor<'de>>(
    schema: &'s Schema,
    msg: &'s Message,
    payloads: &[&'de [u8]],
    prefix: SmallVec<[(&'static str, &'de str); 2]>,
    visitor: V,
) -> Result<V::Value, Error> {
    let mut fields = Fields {
        schema,
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
        read_fields(schema, msg, payload, &mut fields.groups, ordered)?;
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
    schema: &'s Schema,
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
        if self.prefix_next < self.prefix.len() {
            let key = self.prefix[self.prefix_next].0;
            self.current = Some(Current::Prefix(self.prefix_next));
            self.prefix_next += 1;
            return seed
                .deserialize(BorrowedStrDeserializer::<Error>::new(key))
                .map(Some);
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
                    schema: self.schema,
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
    schema: &'s Schema,
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
fn utf8(b: &[u8]) -> Result<&str, Error> {
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

fn single<'de, V: Visitor<'de>>(
    schema: &Schema,
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
            schema,
            &schema.messages[m as usize],
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
                schema,
                &schema.messages[m as usize],
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
            let t = small(b, "Time")?;
            let mut text = String::with_capacity(27);
            let micros = (ty == Ty::MicroTime).then_some((t.two as u32) / 1_000);
            time::format_rfc3339(&mut text, t.one as i64, micros);
            visitor.visit_string(text)
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
                schema,
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
            Card::One => single(self.schema, self.ty, self.vals, visitor),
            Card::Repeated => visitor.visit_seq(Elements {
                schema: self.schema,
                ty: self.ty,
                vals: self.vals,
                at: 0,
                packed: None,
            }),
            Card::Map => visitor.visit_map(Entries {
                schema: self.schema,
                ty: self.ty,
                vals: self.vals,
                at: 0,
                value: None,
            }),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let null = self.card == Card::One
            && matches!(self.ty, Ty::Time | Ty::MicroTime | Ty::Raw)
            && match self.vals.last() {
                Some(Raw::Bytes(b)) if self.ty == Ty::Raw => small(b, "RawExtension")?
                    .text
                    .unwrap_or_default()
                    .is_empty(),
                Some(Raw::Bytes(b)) => b.is_empty(),
                _ => true,
            };
        if null {
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

/// The elements of a repeated field.
struct Elements<'a, 'de, 's> {
    schema: &'s Schema,
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
            schema: self.schema,
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

/// The entries of a map field.
struct Entries<'a, 'de, 's> {
    schema: &'s Schema,
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
        let mut key: &'de [u8] = &[];
        // A missing value is the value type's zero.
        let mut value = match self.ty {
            Ty::Bool | Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 => Raw::Varint(0),
            Ty::Double => Raw::I64(0),
            Ty::Float => Raw::I32(0),
            _ => Raw::Bytes(&[]),
        };
        let mut reader = Reader::new(bytes(raw)?);
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
            schema: self.schema,
            ty: self.ty,
            card: Card::One,
            vals: std::slice::from_ref(&value),
        })
    }
}
