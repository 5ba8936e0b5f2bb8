//! Protobuf straight to JSON text: the decoder's JSON view of a message written out as it is
//! visited, key by key, with no `serde_json::Value` tree in between (`decode_json`, for
//! whoever wants the text: a `Value` costs a map, a `String` key and a boxed value per field
//! before its text). `allot serve` decodes protobuf request bodies into the `Value` its
//! admission reads instead. The text is the same byte for byte: keys in the order the
//! decoder presents them, strings escaped and numbers printed by serde_json's own serializer,
//! as `serde_json::to_vec` of that `Value` writes them.
//!
//! One difference, on purpose: a key repeated inside an embedded JSON document (a
//! `RawExtension`) is written as often as it comes, where a `Value` keeps the last value
//! only (a JSON reader of the text then sees the repeat as it was sent). The schema
//! gives no message two fields of one JSON name (a test says so), so the decoder's own keys
//! never repeat.

use std::fmt;

use serde::Serializer as _;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};

use crate::Error;

/// Writes the JSON text of whatever the deserializer presents into `out`.
pub(crate) struct Json<'a>(pub &'a mut Vec<u8>);

fn json_error(e: serde_json::Error) -> Error {
    Error::new(e.to_string())
}

impl Json<'_> {
    fn text(&mut self, v: &str) -> Result<(), Error> {
        serde_json::Serializer::new(&mut *self.0)
            .serialize_str(v)
            .map_err(json_error)
    }
}

impl<'de> DeserializeSeed<'de> for Json<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }
}

/// A map key: a string, written with its colon.
struct Key<'a>(&'a mut Vec<u8>);

impl<'de> DeserializeSeed<'de> for Key<'_> {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a string key")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<(), E> {
        Json(&mut *self.0).text(v).map_err(E::custom)?;
        self.0.push(b':');
        Ok(())
    }
}

/// Scalars go through serde_json's serializer, which prints them as it prints a `Value`'s.
macro_rules! scalar {
    ($($method:ident($ty:ty) $via:ident;)*) => {
        $(fn $method<E: de::Error>(self, v: $ty) -> Result<(), E> {
            serde_json::Serializer::new(self.0).$via(v).map_err(E::custom)
        })*
    };
}

impl<'de> Visitor<'de> for Json<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    scalar! {
        visit_bool(bool) serialize_bool;
        visit_i64(i64) serialize_i64;
        visit_u64(u64) serialize_u64;
        visit_f64(f64) serialize_f64;
    }

    fn visit_str<E: de::Error>(mut self, v: &str) -> Result<(), E> {
        self.text(v).map_err(E::custom)
    }

    fn visit_unit<E: de::Error>(self) -> Result<(), E> {
        self.0.extend_from_slice(b"null");
        Ok(())
    }

    fn visit_none<E: de::Error>(self) -> Result<(), E> {
        self.visit_unit()
    }

    fn visit_some<D: de::Deserializer<'de>>(self, deserializer: D) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_newtype_struct<D: de::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<(), D::Error> {
        deserializer.deserialize_any(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'[');
        let mut first = true;
        loop {
            // The comma goes in before the element is known to exist, and out again after
            // the last.
            let at = out.len();
            if !first {
                out.push(b',');
            }
            if seq.next_element_seed(Json(&mut *out))?.is_none() {
                out.truncate(at);
                break;
            }
            first = false;
        }
        out.push(b']');
        Ok(())
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let out = self.0;
        out.push(b'{');
        let mut first = true;
        loop {
            let at = out.len();
            if !first {
                out.push(b',');
            }
            if map.next_key_seed(Key(&mut *out))?.is_none() {
                out.truncate(at);
                break;
            }
            map.next_value_seed(Json(&mut *out))?;
            first = false;
        }
        out.push(b'}');
        Ok(())
    }
}
