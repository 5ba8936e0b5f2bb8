//! The protobuf wire format: varints, tags, length-delimited payloads.

use crate::Error;

/// Wire type of varints.
pub const VARINT: u32 = 0;
/// Wire type of fixed 64-bit values.
pub const I64: u32 = 1;
/// Wire type of length-delimited payloads.
pub const LEN: u32 = 2;
/// Wire type of fixed 32-bit values.
pub const I32: u32 = 5;

/// Appends a varint.
#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// Appends a field tag.
#[inline]
pub fn put_tag(out: &mut Vec<u8>, number: u32, wire: u32) {
    put_varint(out, (u64::from(number) << 3) | u64::from(wire));
}

/// Appends a length-delimited field.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, number: u32, bytes: &[u8]) {
    put_tag(out, number, LEN);
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// Starts a length-delimited field whose length is not known yet: returns where its content
/// starts, for [`end_len`].
#[inline]
pub fn begin_len(out: &mut Vec<u8>, number: u32) -> usize {
    put_tag(out, number, LEN);
    out.push(0);
    out.len()
}

/// Writes the length of a field begun with [`begin_len`] (moving its content when the length
/// needs more than one byte).
#[inline(always)]
pub fn end_len(out: &mut Vec<u8>, start: usize) {
    let len = out.len() - start;
    match out.get_mut(start.wrapping_sub(1)) {
        Some(byte) if len < 0x80 => *byte = len as u8,
        _ => end_long_len(out, start, len),
    }
}

/// [`end_len`] of content of 128 bytes or more: its length takes more than the one byte kept
/// for it, and the content moves on.
#[inline(never)]
fn end_long_len(out: &mut Vec<u8>, start: usize, len: usize) {
    let mut prefix = [0u8; 10];
    let mut n = 0;
    let mut value = len as u64;
    while value >= 0x80 {
        prefix[n] = (value as u8) | 0x80;
        value >>= 7;
        n += 1;
    }
    prefix[n] = value as u8;
    n += 1;
    // The content moves n - 1 bytes on, to make room for the longer length.
    let end = out.len();
    out.resize(end + n - 1, 0);
    out.copy_within(start..end, start + n - 1);
    out[start - 1..start - 1 + n].copy_from_slice(&prefix[..n]);
}

/// A reader over one message's bytes.
pub struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

/// One field value as read.
#[derive(Debug, Clone, Copy)]
pub enum Raw<'a> {
    /// A varint.
    Varint(u64),
    /// A fixed 64-bit value.
    I64(u64),
    /// A fixed 32-bit value.
    I32(u32),
    /// A length-delimited payload.
    Bytes(&'a [u8]),
}

/// [`Raw::bit`] of a varint.
pub const VARINT_BIT: u8 = 1;
/// [`Raw::bit`] of a fixed 64-bit value.
pub const I64_BIT: u8 = 2;
/// [`Raw::bit`] of a fixed 32-bit value.
pub const I32_BIT: u8 = 4;
/// [`Raw::bit`] of a length-delimited payload.
pub const BYTES_BIT: u8 = 8;

impl Raw<'_> {
    /// The value's wire type as a bit, to test against a field's wire types.
    #[inline(always)]
    pub fn bit(&self) -> u8 {
        match self {
            Raw::Varint(_) => VARINT_BIT,
            Raw::I64(_) => I64_BIT,
            Raw::I32(_) => I32_BIT,
            Raw::Bytes(_) => BYTES_BIT,
        }
    }
}

impl<'a> Reader<'a> {
    /// Reads `data`.
    pub fn new(data: &'a [u8]) -> Self {
        Reader { data, pos: 0 }
    }

    /// Reads a varint.
    #[inline(always)]
    pub fn varint(&mut self) -> Result<u64, Error> {
        // Tags and short lengths: one byte.
        if let Some(&byte) = self.data.get(self.pos)
            && byte < 0x80
        {
            self.pos += 1;
            return Ok(u64::from(byte));
        }
        self.long_varint()
    }

    /// A varint of more than one byte (or none: an error).
    #[inline(never)]
    fn long_varint(&mut self) -> Result<u64, Error> {
        let mut value = 0u64;
        let mut shift = 0;
        loop {
            let byte = *self
                .data
                .get(self.pos)
                .ok_or_else(|| Error::new("truncated varint"))?;
            self.pos += 1;
            if shift == 63 && byte > 1 {
                return Err(Error::new("varint overflows 64 bits"));
            }
            value |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                return Ok(value);
            }
            shift += 7;
            if shift > 63 {
                return Err(Error::new("varint overflows 64 bits"));
            }
        }
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|end| *end <= self.data.len())
            .ok_or_else(|| Error::new("truncated field"))?;
        let bytes = &self.data[self.pos..end];
        self.pos = end;
        Ok(bytes)
    }

    /// The next varint of a packed list, or `None` at the end.
    pub fn next_varint(&mut self) -> Result<Option<u64>, Error> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        self.varint().map(Some)
    }

    /// The next fixed 64-bit value of a packed list, or `None` at the end.
    pub fn fixed64(&mut self) -> Result<Option<u64>, Error> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let b = self.take(8)?;
        Ok(Some(u64::from_le_bytes(b.try_into().unwrap_or_default())))
    }

    /// The next fixed 32-bit value of a packed list, or `None` at the end.
    pub fn fixed32(&mut self) -> Result<Option<u32>, Error> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let b = self.take(4)?;
        Ok(Some(u32::from_le_bytes(b.try_into().unwrap_or_default())))
    }

    /// The field number of the next field, without reading it: `None` at the end or when its
    /// tag does not read.
    #[inline(always)]
    pub fn peek_number(&self) -> Option<u64> {
        let byte = *self.data.get(self.pos)?;
        if byte < 0x80 {
            return Some(u64::from(byte >> 3));
        }
        let mut copy = Reader {
            data: self.data,
            pos: self.pos,
        };
        copy.long_varint().ok().map(|tag| tag >> 3)
    }

    /// The next field (number and value), or `None` at the end. (Inlined where it is called:
    /// the field comes back in registers, not through memory.)
    #[inline(always)]
    pub fn field(&mut self) -> Result<Option<(u32, Raw<'a>)>, Error> {
        if self.pos >= self.data.len() {
            return Ok(None);
        }
        let tag = self.varint()?;
        let number = u32::try_from(tag >> 3).map_err(|_| Error::new("field number too large"))?;
        if number == 0 {
            return Err(Error::new("field number 0"));
        }
        let raw = match (tag & 7) as u32 {
            VARINT => Raw::Varint(self.varint()?),
            I64 => {
                let b = self.take(8)?;
                Raw::I64(u64::from_le_bytes(b.try_into().unwrap_or_default()))
            }
            LEN => {
                let len =
                    usize::try_from(self.varint()?).map_err(|_| Error::new("length too large"))?;
                Raw::Bytes(self.take(len)?)
            }
            I32 => {
                let b = self.take(4)?;
                Raw::I32(u32::from_le_bytes(b.try_into().unwrap_or_default()))
            }
            other => return Err(Error::new(format!("unsupported wire type {other}"))),
        };
        Ok(Some((number, raw)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip() {
        for value in [
            0u64,
            1,
            127,
            128,
            300,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(Reader::new(&out).varint().expect("reads"), value);
        }
    }

    #[test]
    fn long_lengths_move_the_content() {
        for len in [0usize, 1, 127, 128, 200, 16_383, 16_384, 70_000] {
            let mut out = vec![9u8];
            let start = begin_len(&mut out, 3);
            out.extend(std::iter::repeat_n(7u8, len));
            end_len(&mut out, start);
            let mut reader = Reader::new(&out[1..]);
            match reader.field().expect("reads") {
                Some((3, Raw::Bytes(b))) => assert_eq!(b.len(), len),
                other => panic!("{other:?}"),
            }
            assert!(reader.field().expect("end").is_none());
        }
    }

    #[test]
    fn truncated_input_is_an_error() {
        for data in [&[0x0a, 0x05, 1][..], &[0x08], &[0x08, 0x80], &[0x00, 0x00]] {
            let mut reader = Reader::new(data);
            assert!(reader.field().is_err(), "{data:?}");
        }
        let too_long = [0xffu8; 11];
        assert!(Reader::new(&too_long).varint().is_err());
    }
}
