//! `ByteSize`: a memory amount in whole bytes, written as a Kubernetes quantity string.
//!
//! Memory and hugepage sizes are whole bytes, so a `u64` is exact. The text form accepts the
//! quantity suffixes that make sense for bytes (`Ki`..`Ei`, `k`..`E`, none) and whole numbers;
//! it is printed with the largest binary suffix that divides it, else the largest decimal one.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::TopologyError;

/// A number of bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteSize(pub u64);

const BINARY: [(&str, u32); 6] = [
    ("Ei", 60),
    ("Pi", 50),
    ("Ti", 40),
    ("Gi", 30),
    ("Mi", 20),
    ("Ki", 10),
];
const DECIMAL: [(&str, u32); 6] = [
    ("E", 18),
    ("P", 15),
    ("T", 12),
    ("G", 9),
    ("M", 6),
    ("k", 3),
];

impl ByteSize {
    /// The number of bytes.
    pub fn bytes(self) -> u64 {
        self.0
    }

    /// Parses a quantity such as `2Gi`, `512Mi`, `1G`, `1048576`; the value must be a whole
    /// number of bytes.
    pub fn parse(text: &str) -> Result<Self, TopologyError> {
        let bad = |reason: &str| TopologyError::ByteSize {
            input: text.to_string(),
            reason: reason.to_string(),
        };
        let s = text.trim();
        let split = s
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(s.len());
        let (number, suffix) = s.split_at(split);
        if number.is_empty() {
            return Err(bad("no number"));
        }
        let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
        if int_part.is_empty() && frac_part.is_empty() {
            return Err(bad("no digits"));
        }
        let (base, exp): (u128, u32) = if suffix.is_empty() {
            (10, 0)
        } else if let Some((_, e)) = BINARY.iter().find(|(n, _)| *n == suffix) {
            (2, *e)
        } else if let Some((_, e)) = DECIMAL.iter().find(|(n, _)| *n == suffix) {
            (10, *e)
        } else {
            return Err(bad("unknown suffix"));
        };
        let multiplier = base.checked_pow(exp).ok_or_else(|| bad("too large"))?;
        let digits = format!("{int_part}{frac_part}");
        let mantissa: u128 = digits.parse().map_err(|_| bad("invalid number"))?;
        let scale = 10u128
            .checked_pow(frac_part.len() as u32)
            .ok_or_else(|| bad("too precise"))?;
        let total = mantissa
            .checked_mul(multiplier)
            .ok_or_else(|| bad("too large"))?;
        if total % scale != 0 {
            return Err(bad("not a whole number of bytes"));
        }
        u64::try_from(total / scale)
            .map(ByteSize)
            .map_err(|_| bad("too large"))
    }
}

impl fmt::Display for ByteSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.0;
        if v == 0 {
            return write!(f, "0");
        }
        for (name, shift) in BINARY {
            if v.is_multiple_of(1u64 << shift) {
                return write!(f, "{}{name}", v >> shift);
            }
        }
        for (name, exp) in DECIMAL {
            let m = 10u64.pow(exp);
            if v.is_multiple_of(m) {
                return write!(f, "{}{name}", v / m);
            }
        }
        write!(f, "{v}")
    }
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ByteSize;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte quantity such as \"2Gi\" or a whole number")
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ByteSize, E> {
                Ok(ByteSize(v))
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ByteSize, E> {
                u64::try_from(v)
                    .map(ByteSize)
                    .map_err(|_| E::custom("negative byte quantity"))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ByteSize, E> {
                ByteSize::parse(v).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let cases = [
            ("2Gi", 2u64 << 30, "2Gi"),
            ("512Mi", 512 << 20, "512Mi"),
            ("1G", 1_000_000_000, "1G"),
            ("1024", 1024, "1Ki"),
            ("1000", 1000, "1k"),
            ("1.5Gi", 3 << 29, "1536Mi"),
            ("0", 0, "0"),
            ("7", 7, "7"),
        ];
        for (text, bytes, printed) in cases {
            let b = ByteSize::parse(text).unwrap();
            assert_eq!(b.bytes(), bytes, "{text}");
            assert_eq!(b.to_string(), printed, "{text}");
        }
        for text in ["", "Gi", "1.1", "1Xi", "-1", "100Ei"] {
            assert!(ByteSize::parse(text).is_err(), "{text}");
        }
    }
}
