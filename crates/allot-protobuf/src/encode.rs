//! Encoding: a `serde::Serializer` that writes a value's JSON shape as the protobuf message the
//! schema names, field by field, without an intermediate tree. Typed objects and
//! `serde_json::Value`s go through the same code: a struct's fields and a JSON object's keys are
//! both looked up by JSON name.

use serde::Serialize;
use serde::ser::{self, Impossible};

use crate::Error;
use crate::schema::{Card, Field, Message, Route, Schema, Ty};
use crate::time;
use crate::wire::{I32, I64, VARINT, begin_len, end_len, put_bytes, put_tag, put_varint};

/// Appends the fields of message `msg` taken from `value` (a struct or a JSON object).
pub fn message_fields<T: Serialize + ?Sized>(
    schema: &Schema,
    msg: u16,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    value.serialize(MsgSer {
        schema,
        msg: &schema.messages[msg as usize],
        out,
        start: None,
    })
}

fn write_field<T: Serialize + ?Sized>(
    schema: &Schema,
    field: &Field,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    match field.card {
        Card::One => write_value(schema, field.number, field.ty, value, out),
        Card::Repeated => value.serialize(RepSer {
            schema,
            number: field.number,
            ty: field.ty,
            out,
        }),
        Card::Map => value.serialize(MapSer {
            schema,
            number: field.number,
            ty: field.ty,
            out,
        }),
    }
    .map_err(|e| e.within(&field.json))
}

fn write_value<T: Serialize + ?Sized>(
    schema: &Schema,
    number: u32,
    ty: Ty,
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    if ty == Ty::Raw {
        let json = serde_json::to_vec(value).map_err(|e| Error::new(e.to_string()))?;
        if json != b"null" {
            let start = begin_len(out, number);
            put_bytes(out, 1, &json);
            end_len(out, start);
        }
        return Ok(());
    }
    value.serialize(ValSer {
        schema,
        number,
        ty,
        out,
    })
}

fn type_error(ty: Ty, got: &str) -> Error {
    Error::new(format!("a {got} cannot be encoded as {ty:?}"))
}

/// A message: the value must be a struct or an object.
struct MsgSer<'a> {
    schema: &'a Schema,
    msg: &'a Message,
    out: &'a mut Vec<u8>,
    /// Where the content starts when the message is a length-delimited field.
    start: Option<usize>,
}

impl<'a> MsgSer<'a> {
    fn writer(self) -> MsgWriter<'a> {
        MsgWriter {
            schema: self.schema,
            msg: self.msg,
            out: self.out,
            start: self.start,
            inline: Vec::new(),
            pending: None,
            cursor: 0,
        }
    }

    fn not_an_object(&self, got: &str) -> Error {
        Error::new(format!("{} must be an object, not a {got}", self.msg.name))
    }

    fn close_empty(self) -> Result<(), Error> {
        if let Some(start) = self.start {
            end_len(self.out, start);
        }
        Ok(())
    }
}

macro_rules! refuse {
    ($($method:ident($($arg:ty),*) $what:literal;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err(self.not_an_object($what))
        })*
    };
}

impl<'a> ser::Serializer for MsgSer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = MsgWriter<'a>;
    type SerializeStruct = MsgWriter<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    refuse! {
        serialize_bool(bool) "boolean";
        serialize_i8(i8) "number";
        serialize_i16(i16) "number";
        serialize_i32(i32) "number";
        serialize_i64(i64) "number";
        serialize_u8(u8) "number";
        serialize_u16(u16) "number";
        serialize_u32(u32) "number";
        serialize_u64(u64) "number";
        serialize_f32(f32) "number";
        serialize_f64(f64) "number";
        serialize_char(char) "string";
        serialize_str(&str) "string";
        serialize_bytes(&[u8]) "byte string";
        serialize_unit_variant(&'static str, u32, &'static str) "string";
    }

    fn serialize_none(self) -> Result<(), Error> {
        self.close_empty()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        self.close_empty()
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.close_empty()
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(self.not_an_object("variant"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(self.not_an_object("list"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(self.not_an_object("list"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(self.not_an_object("list"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(self.not_an_object("list"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MsgWriter<'a>, Error> {
        Ok(self.writer())
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<MsgWriter<'a>, Error> {
        Ok(self.writer())
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(self.not_an_object("variant"))
    }
}

/// The fields of one message being written.
struct MsgWriter<'a> {
    schema: &'a Schema,
    msg: &'a Message,
    out: &'a mut Vec<u8>,
    start: Option<usize>,
    /// The content of inlined structs (by field index), written as their field at the end.
    inline: Vec<(u16, Vec<u8>)>,
    /// The route of the key just given to `serialize_key` (`None` before any, `Some(None)`
    /// for a key that is skipped).
    pending: Option<Option<&'a Route>>,
    /// Where the next key is looked for first (see `Message::route_from`).
    cursor: usize,
}

impl<'a> MsgWriter<'a> {
    fn lookup(&mut self, key: &str) -> Result<Option<&'a Route>, Error> {
        let msg: &'a Message = self.msg;
        match msg.route_from(key, &mut self.cursor) {
            Some(route) => Ok(Some(route)),
            None => self.not_found(key),
        }
    }

    /// [`MsgWriter::lookup`] of a struct's field name.
    #[inline]
    fn lookup_static(&mut self, key: &'static str) -> Result<Option<&'a Route>, Error> {
        let msg: &'a Message = self.msg;
        match msg.route_static(key, &mut self.cursor) {
            Some(route) => Ok(Some(route)),
            None => self.not_found(key),
        }
    }

    /// A key the message has no field for: `apiVersion` and `kind` of a top-level object are
    /// skipped (they are in the envelope), any other is an error.
    #[cold]
    fn not_found(&self, key: &str) -> Result<Option<&'a Route>, Error> {
        if self.msg.object && (key == "apiVersion" || key == "kind") {
            return Ok(None);
        }
        Err(Error::unrepresentable(format!(
            "unknown field \"{key}\" in {}",
            self.msg.name
        )))
    }

    fn write<T: Serialize + ?Sized>(&mut self, route: &Route, value: &T) -> Result<(), Error> {
        match route {
            Route::Own(i) => {
                write_field(self.schema, &self.msg.fields[*i as usize], value, self.out)
            }
            Route::Inline(path) => {
                let outer = path[0];
                let at = match self.inline.iter().position(|(o, _)| *o == outer) {
                    Some(at) => at,
                    None => {
                        self.inline.push((outer, Vec::new()));
                        self.inline.len() - 1
                    }
                };
                let field = &self.msg.fields[outer as usize];
                write_inlined(
                    self.schema,
                    field,
                    &path[1..],
                    value,
                    &mut self.inline[at].1,
                )
            }
        }
    }

    fn finish(self) -> Result<(), Error> {
        for (outer, content) in &self.inline {
            put_bytes(
                self.out,
                self.msg.fields[*outer as usize].number,
                content.as_slice(),
            );
        }
        if let Some(start) = self.start {
            end_len(self.out, start);
        }
        Ok(())
    }
}

impl<'a> ser::SerializeStruct for MsgWriter<'a> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        match self.lookup_static(key)? {
            Some(route) => self.write(route, value),
            None => Ok(()),
        }
    }

    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

impl<'a> ser::SerializeMap for MsgWriter<'a> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let mut route = None;
        key.serialize(KeySer(|text: &str| {
            route = Some(self.lookup(text)?);
            Ok(())
        }))?;
        self.pending = route;
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self.pending.take() {
            Some(Some(route)) => self.write(route, value),
            Some(None) => Ok(()),
            None => Err(Error::new("a map value without a key")),
        }
    }

    fn end(self) -> Result<(), Error> {
        self.finish()
    }
}

/// Writes a field of the struct inlined as `field` (within nested inlined structs, each of
/// them its own chunk of the enclosing message: decoders merge repeated message fields).
fn write_inlined<T: Serialize + ?Sized>(
    schema: &Schema,
    field: &Field,
    path: &[u16],
    value: &T,
    out: &mut Vec<u8>,
) -> Result<(), Error> {
    let Ty::Message(m) = field.ty else {
        return Err(Error::new("inlined field is not a message"));
    };
    let inner = &schema.messages[m as usize].fields[path[0] as usize];
    if path.len() == 1 {
        return write_field(schema, inner, value, out);
    }
    let start = begin_len(out, inner.number);
    write_inlined(schema, inner, &path[1..], value, out)?;
    end_len(out, start);
    Ok(())
}

/// Hands a map key (JSON keys are strings) to a function.
struct KeySer<F>(F);

macro_rules! not_a_key {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Error> {
            Err(Error::new("keys must be strings"))
        })*
    };
}

impl<F: FnOnce(&str) -> Result<(), Error>> ser::Serializer for KeySer<F> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Impossible<(), Error>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Impossible<(), Error>;
    type SerializeStruct = Impossible<(), Error>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        (self.0)(v)
    }
    fn serialize_char(self, c: char) -> Result<(), Error> {
        self.serialize_str(c.encode_utf8(&mut [0; 4]))
    }
    fn serialize_unit_variant(self, _: &'static str, _: u32, v: &'static str) -> Result<(), Error> {
        self.serialize_str(v)
    }
    fn serialize_some<T: Serialize + ?Sized>(self, v: &T) -> Result<(), Error> {
        v.serialize(self)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        v: &T,
    ) -> Result<(), Error> {
        v.serialize(self)
    }
    not_a_key! {
        serialize_bool(bool);
        serialize_i8(i8);
        serialize_i16(i16);
        serialize_i32(i32);
        serialize_i64(i64);
        serialize_u8(u8);
        serialize_u16(u16);
        serialize_u32(u32);
        serialize_u64(u64);
        serialize_f32(f32);
        serialize_f64(f64);
        serialize_bytes(&[u8]);
        serialize_none();
        serialize_unit();
        serialize_unit_struct(&'static str);
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Error> {
        Err(Error::new("keys must be strings"))
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(Error::new("keys must be strings"))
    }
}

/// One value of a field (a single field, a list element, a map value).
struct ValSer<'a> {
    schema: &'a Schema,
    number: u32,
    ty: Ty,
    out: &'a mut Vec<u8>,
}

impl ValSer<'_> {
    fn varint(self, value: u64) -> Result<(), Error> {
        put_tag(self.out, self.number, VARINT);
        put_varint(self.out, value);
        Ok(())
    }

    fn quantity(self, text: &str) -> Result<(), Error> {
        let start = begin_len(self.out, self.number);
        put_bytes(self.out, 1, text.as_bytes());
        end_len(self.out, start);
        Ok(())
    }

    fn int(self, value: i128) -> Result<(), Error> {
        let out_of_range = || Error::new(format!("{value} is out of range for {:?}", self.ty));
        match self.ty {
            Ty::Int32 => {
                let v = i32::try_from(value).map_err(|_| out_of_range())?;
                self.varint(i64::from(v) as u64)
            }
            Ty::Int64 => {
                let v = i64::try_from(value).map_err(|_| out_of_range())?;
                self.varint(v as u64)
            }
            Ty::Uint32 => {
                let v = u32::try_from(value).map_err(|_| out_of_range())?;
                self.varint(u64::from(v))
            }
            Ty::Uint64 => {
                let v = u64::try_from(value).map_err(|_| out_of_range())?;
                self.varint(v)
            }
            Ty::Double => self.float(value as f64),
            Ty::Float => self.float(value as f64),
            Ty::Quantity => self.quantity(&value.to_string()),
            Ty::IntOrString => {
                let v = i32::try_from(value).map_err(|_| out_of_range())?;
                let start = begin_len(self.out, self.number);
                put_tag(self.out, 1, VARINT);
                put_varint(self.out, 0);
                put_tag(self.out, 2, VARINT);
                put_varint(self.out, i64::from(v) as u64);
                end_len(self.out, start);
                Ok(())
            }
            ty => Err(type_error(ty, "number")),
        }
    }

    fn float(self, value: f64) -> Result<(), Error> {
        match self.ty {
            Ty::Double => {
                put_tag(self.out, self.number, I64);
                self.out.extend_from_slice(&value.to_bits().to_le_bytes());
                Ok(())
            }
            Ty::Float => {
                put_tag(self.out, self.number, I32);
                self.out
                    .extend_from_slice(&(value as f32).to_bits().to_le_bytes());
                Ok(())
            }
            Ty::Int32 | Ty::Int64 | Ty::Uint32 | Ty::Uint64 | Ty::IntOrString
                if value.fract() == 0.0 && value.abs() < 9.0e18 =>
            {
                self.int(value as i128)
            }
            Ty::Quantity if value.is_finite() => self.quantity(&value.to_string()),
            ty => Err(type_error(ty, "number")),
        }
    }
}

/// Numbers of every width go through one of two writers: `int` (as an `i128`) or `float` (as
/// an `f64`), which check the field's type and range.
macro_rules! widen {
    ($($method:ident($arg:ty) $via:ident;)*) => {
        $(fn $method(self, v: $arg) -> Result<(), Error> {
            self.$via(v.into())
        })*
    };
}

impl<'a> ser::Serializer for ValSer<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = SeqWriter<'a>;
    type SerializeTuple = Impossible<(), Error>;
    type SerializeTupleStruct = Impossible<(), Error>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = MsgWriter<'a>;
    type SerializeStruct = MsgWriter<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        match self.ty {
            Ty::Bool => self.varint(u64::from(v)),
            ty => Err(type_error(ty, "boolean")),
        }
    }
    widen! {
        serialize_i8(i8) int;
        serialize_i16(i16) int;
        serialize_i32(i32) int;
        serialize_i64(i64) int;
        serialize_u8(u8) int;
        serialize_u16(u16) int;
        serialize_u32(u32) int;
        serialize_u64(u64) int;
        serialize_f32(f32) float;
        serialize_f64(f64) float;
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Result<(), Error> {
        match self.ty {
            Ty::String => {
                put_bytes(self.out, self.number, v.as_bytes());
                Ok(())
            }
            Ty::Bytes => {
                use base64::Engine;
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(v)
                    .map_err(|e| Error::new(format!("bytes must be base64: {e}")))?;
                put_bytes(self.out, self.number, &bytes);
                Ok(())
            }
            Ty::Quantity => self.quantity(v),
            Ty::Time | Ty::MicroTime => {
                // Upstream writes seconds only for metav1.Time, and microseconds for
                // MicroTime, as their JSON forms carry.
                let (seconds, nanos) = time::parse_rfc3339(v)?;
                let start = begin_len(self.out, self.number);
                put_tag(self.out, 1, VARINT);
                put_varint(self.out, seconds as u64);
                let micros = nanos / 1_000 * 1_000;
                if self.ty == Ty::MicroTime && micros != 0 {
                    put_tag(self.out, 2, VARINT);
                    put_varint(self.out, u64::from(micros));
                }
                end_len(self.out, start);
                Ok(())
            }
            Ty::Duration => {
                let nanos = time::parse_duration(v)?;
                let start = begin_len(self.out, self.number);
                put_tag(self.out, 1, VARINT);
                put_varint(self.out, nanos as u64);
                end_len(self.out, start);
                Ok(())
            }
            Ty::IntOrString => {
                let start = begin_len(self.out, self.number);
                put_tag(self.out, 1, VARINT);
                put_varint(self.out, 1);
                put_bytes(self.out, 3, v.as_bytes());
                end_len(self.out, start);
                Ok(())
            }
            ty => Err(type_error(ty, "string")),
        }
    }
    /// A value that prints itself (a `Quantity`) is printed straight into the message, not
    /// into a `String` first.
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<(), Error> {
        let (outer, start) = match self.ty {
            Ty::String => (None, begin_len(self.out, self.number)),
            Ty::Quantity => {
                let outer = begin_len(self.out, self.number);
                (Some(outer), begin_len(self.out, 1))
            }
            _ => return self.serialize_str(&value.to_string()),
        };
        use std::fmt::Write;
        write!(Text(self.out), "{value}").map_err(|e| Error::new(e.to_string()))?;
        end_len(self.out, start);
        if let Some(outer) = outer {
            end_len(self.out, outer);
        }
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        match self.ty {
            Ty::Bytes => {
                put_bytes(self.out, self.number, v);
                Ok(())
            }
            ty => Err(type_error(ty, "byte string")),
        }
    }
    fn serialize_none(self) -> Result<(), Error> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        write_value(self.schema, self.number, self.ty, value, self.out)
    }
    fn serialize_unit(self) -> Result<(), Error> {
        Ok(())
    }
    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<(), Error> {
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        write_value(self.schema, self.number, self.ty, value, self.out)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Error> {
        Err(type_error(self.ty, "variant"))
    }
    fn serialize_seq(self, _: Option<usize>) -> Result<SeqWriter<'a>, Error> {
        match self.ty {
            Ty::StringList => {
                let start = begin_len(self.out, self.number);
                Ok(SeqWriter {
                    schema: self.schema,
                    number: 1,
                    ty: Ty::String,
                    out: self.out,
                    start: Some(start),
                })
            }
            ty => Err(type_error(ty, "list")),
        }
    }
    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
        Err(type_error(self.ty, "list"))
    }
    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Error> {
        Err(type_error(self.ty, "list"))
    }
    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(type_error(self.ty, "list"))
    }
    fn serialize_map(self, _: Option<usize>) -> Result<MsgWriter<'a>, Error> {
        self.message()
    }
    fn serialize_struct(self, _: &'static str, _: usize) -> Result<MsgWriter<'a>, Error> {
        self.message()
    }
    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(type_error(self.ty, "variant"))
    }
}

impl<'a> ValSer<'a> {
    fn message(self) -> Result<MsgWriter<'a>, Error> {
        let Ty::Message(m) = self.ty else {
            return Err(type_error(self.ty, "object"));
        };
        let start = begin_len(self.out, self.number);
        Ok(MsgSer {
            schema: self.schema,
            msg: &self.schema.messages[m as usize],
            out: self.out,
            start: Some(start),
        }
        .writer())
    }
}

/// The message as a `fmt::Write` (printing cannot fail, where `io::Write`'s adapter carries
/// an error along).
struct Text<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Text<'_> {
    #[inline]
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        self.0.extend_from_slice(s.as_bytes());
        Ok(())
    }
}

/// A repeated field: the value must be a list (or null).
struct RepSer<'a> {
    schema: &'a Schema,
    number: u32,
    ty: Ty,
    out: &'a mut Vec<u8>,
}

/// A map field: the value must be an object (or null).
struct MapSer<'a> {
    schema: &'a Schema,
    number: u32,
    ty: Ty,
    out: &'a mut Vec<u8>,
}

/// Refuses a value that is not the container a field needs.
macro_rules! expected {
    ($what:literal; $($method:ident($arg:ty);)*) => {
        $(fn $method(self, _: $arg) -> Result<(), Error> {
            Err(Error::new(concat!("expected ", $what)))
        })*
    };
}

macro_rules! only_container {
    ($name:ident, $what:literal, $seq:ty, $map:ty) => {
        impl<'a> ser::Serializer for $name<'a> {
            type Ok = ();
            type Error = Error;
            type SerializeSeq = $seq;
            type SerializeTuple = Impossible<(), Error>;
            type SerializeTupleStruct = Impossible<(), Error>;
            type SerializeTupleVariant = Impossible<(), Error>;
            type SerializeMap = $map;
            type SerializeStruct = Impossible<(), Error>;
            type SerializeStructVariant = Impossible<(), Error>;

            expected! {
                $what;
                serialize_bool(bool);
                serialize_i8(i8);
                serialize_i16(i16);
                serialize_i32(i32);
                serialize_i64(i64);
                serialize_u8(u8);
                serialize_u16(u16);
                serialize_u32(u32);
                serialize_u64(u64);
                serialize_f32(f32);
                serialize_f64(f64);
                serialize_char(char);
                serialize_str(&str);
                serialize_bytes(&[u8]);
            }
            fn serialize_none(self) -> Result<(), Error> {
                Ok(())
            }
            fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
                value.serialize(self)
            }
            fn serialize_unit(self) -> Result<(), Error> {
                Ok(())
            }
            fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
                Ok(())
            }
            fn serialize_unit_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
            ) -> Result<(), Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_newtype_struct<T: Serialize + ?Sized>(
                self,
                _: &'static str,
                value: &T,
            ) -> Result<(), Error> {
                value.serialize(self)
            }
            fn serialize_newtype_variant<T: Serialize + ?Sized>(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: &T,
            ) -> Result<(), Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Error> {
                self.seq(len)
            }
            fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_tuple_struct(
                self,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeTupleStruct, Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_tuple_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeTupleVariant, Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, Error> {
                self.map(len)
            }
            fn serialize_struct(
                self,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeStruct, Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
            fn serialize_struct_variant(
                self,
                _: &'static str,
                _: u32,
                _: &'static str,
                _: usize,
            ) -> Result<Self::SerializeStructVariant, Error> {
                Err(Error::new(concat!("expected ", $what)))
            }
        }
    };
}

only_container!(RepSer, "a list", SeqWriter<'a>, Impossible<(), Error>);
only_container!(MapSer, "an object", Impossible<(), Error>, MapWriter<'a>);

impl<'a> RepSer<'a> {
    fn seq(self, _: Option<usize>) -> Result<SeqWriter<'a>, Error> {
        Ok(SeqWriter {
            schema: self.schema,
            number: self.number,
            ty: self.ty,
            out: self.out,
            start: None,
        })
    }
    fn map(self, _: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(Error::new("expected a list"))
    }
}

impl<'a> MapSer<'a> {
    fn seq(self, _: Option<usize>) -> Result<Impossible<(), Error>, Error> {
        Err(Error::new("expected an object"))
    }
    fn map(self, _: Option<usize>) -> Result<MapWriter<'a>, Error> {
        Ok(MapWriter {
            schema: self.schema,
            number: self.number,
            ty: self.ty,
            out: self.out,
            open: None,
        })
    }
}

/// The elements of a repeated field (or of a string list message).
struct SeqWriter<'a> {
    schema: &'a Schema,
    number: u32,
    ty: Ty,
    out: &'a mut Vec<u8>,
    start: Option<usize>,
}

impl ser::SerializeSeq for SeqWriter<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        write_value(self.schema, self.number, self.ty, value, self.out)
    }

    fn end(self) -> Result<(), Error> {
        if let Some(start) = self.start {
            end_len(self.out, start);
        }
        Ok(())
    }
}

/// The entries of a map field: each a message with the key (1) and the value (2).
struct MapWriter<'a> {
    schema: &'a Schema,
    number: u32,
    ty: Ty,
    out: &'a mut Vec<u8>,
    open: Option<usize>,
}

impl ser::SerializeMap for MapWriter<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        let start = begin_len(self.out, self.number);
        let out = &mut *self.out;
        key.serialize(KeySer(|text: &str| {
            put_bytes(out, 1, text.as_bytes());
            Ok(())
        }))?;
        self.open = Some(start);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let start = self
            .open
            .take()
            .ok_or_else(|| Error::new("a map value without a key"))?;
        write_value(self.schema, 2, self.ty, value, self.out)?;
        end_len(self.out, start);
        Ok(())
    }

    fn end(self) -> Result<(), Error> {
        Ok(())
    }
}
