//! Kubernetes `resource.Quantity`: exact parsing, canonical formatting and arithmetic.
//!
//! Key design decision: a quantity is a sign-carrying `i128` mantissa times a power of ten
//! (`mantissa × 10^scale`), always normalised (no trailing zero digits in the mantissa, zero is
//! `0 × 10^0`), plus the [`Format`] that decides how it is printed. Normalisation makes equality
//! and hashing plain field comparisons, and comparisons never go through floating point. The cost:
//! mantissas are limited to 38 significant decimal digits (upstream uses an unbounded big integer).
//! Parsing a quantity that needs more digits fails with [`ParseQuantityError::TooManyDigits`];
//! arithmetic whose exact result needs more digits is reported by [`Quantity::checked_add`] /
//! [`Quantity::checked_sub`] returning `None`, while the operators round the least significant
//! digits away from zero instead of panicking. Every quantity that fits in an `int64` at nano
//! precision (everything Kubernetes stores in practice) is represented exactly.
//!
//! Parsing follows upstream's `ParseQuantity` byte for byte, including its quirks: values below
//! nano precision round up (away from zero) to `1n`, `BinarySI` values are capped at `2^63-1`, and
//! an input already in canonical form is remembered and printed back unchanged (so `"1e3"` prints
//! as `"1e3"` and `"+1Ki"` as `"+1Ki"`, exactly like upstream's cached string).

#![deny(missing_docs)]

use std::cmp::Ordering;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::iter::Sum;
use std::ops::{Add, AddAssign, Neg, Sub, SubAssign};
use std::str::FromStr;
use std::sync::Arc;

/// Mantissas stay strictly below this magnitude (38 decimal digits).
const MANTISSA_LIMIT: u128 = 100_000_000_000_000_000_000_000_000_000_000_000_000;

/// The number of decimal digits after the point that a parsed quantity keeps (nano precision).
const NANO: i64 = -9;

/// How a quantity is printed; upstream's `resource.Format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Format {
    /// Decimal SI suffixes: `n`, `u`, `m`, ``, `k`, `M`, `G`, `T`, `P`, `E`.
    #[default]
    DecimalSI,
    /// Binary SI suffixes: `Ki`, `Mi`, `Gi`, `Ti`, `Pi`, `Ei`.
    BinarySI,
    /// Decimal exponent notation: `1e3`, `12e-3`.
    DecimalExponent,
}

impl Format {
    /// The upstream name of the format (`"DecimalSI"`, `"BinarySI"`, `"DecimalExponent"`).
    pub fn as_str(self) -> &'static str {
        match self {
            Format::DecimalSI => "DecimalSI",
            Format::BinarySI => "BinarySI",
            Format::DecimalExponent => "DecimalExponent",
        }
    }
}

/// Why a string is not a quantity. The messages are upstream's (`ErrFormatWrong`, `ErrSuffix`,
/// `ErrNumeric`); the offending input is kept as data.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ParseQuantityError {
    /// The text does not have the shape `<sign><digits>.<digits><suffix>` (upstream `ErrFormatWrong`).
    #[error(
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )]
    FormatWrong {
        /// The text that failed to parse.
        input: String,
    },
    /// The suffix is not a known SI, binary SI or exponent suffix (upstream `ErrSuffix`).
    #[error("unable to parse quantity's suffix")]
    Suffix {
        /// The text that failed to parse.
        input: String,
    },
    /// The numeric part has no digits (upstream `ErrNumeric`).
    #[error("unable to parse numeric part of quantity")]
    Numeric {
        /// The text that failed to parse.
        input: String,
    },
    /// The value needs more than 38 significant decimal digits, which this implementation does
    /// not represent (upstream accepts it with an unbounded mantissa).
    #[error("quantity needs more than 38 significant decimal digits")]
    TooManyDigits {
        /// The text that failed to parse.
        input: String,
    },
}

impl ParseQuantityError {
    /// The text that failed to parse.
    pub fn input(&self) -> &str {
        match self {
            ParseQuantityError::FormatWrong { input }
            | ParseQuantityError::Suffix { input }
            | ParseQuantityError::Numeric { input }
            | ParseQuantityError::TooManyDigits { input } => input,
        }
    }
}

/// A Kubernetes resource quantity (`resource.Quantity`).
///
/// Equality, ordering and hashing are by numeric value only: `1Ki == 1024`, whatever the format or
/// the original spelling.
#[derive(Clone)]
pub struct Quantity {
    /// Normalised mantissa: zero, or not divisible by ten; magnitude below [`MANTISSA_LIMIT`].
    mantissa: i128,
    /// Power of ten; zero when the mantissa is zero.
    scale: i32,
    format: Format,
    /// The parsed text when upstream would keep it as the canonical string.
    text: Option<Arc<str>>,
    /// Upstream's `int64Amount` (value, scale) when upstream would hold the value in that form
    /// rather than as an `inf.Dec`; it decides upstream's representation-dependent `AsInt64`.
    int_repr: Option<(i64, i32)>,
}

/// `base × 10^scale` if it fits in an `i64` (upstream `positiveScaleInt64`).
fn positive_scale_i64(base: i64, scale: i32) -> Option<i64> {
    let p = 10i64.checked_pow(u32::try_from(scale).ok()?)?;
    base.checked_mul(p)
}

/// Upstream's `int64Amount.Add`: `None` when upstream falls back to `inf.Dec`.
fn int_repr_add(a: (i64, i32), b: (i64, i32)) -> Option<(i64, i32)> {
    if b.0 == 0 {
        return Some(a);
    }
    if a.0 == 0 {
        return Some(b);
    }
    if a.1 == b.1 {
        Some((a.0.checked_add(b.0)?, a.1))
    } else if a.1 > b.1 {
        let c = positive_scale_i64(a.0, a.1 - b.1)?;
        Some((c.checked_add(b.0)?, b.1))
    } else {
        let c = positive_scale_i64(b.0, b.1 - a.1)?;
        Some((a.0.checked_add(c)?, a.1))
    }
}

fn pow10(k: u32) -> Option<u128> {
    10u128.checked_pow(k)
}

/// Divides a non-negative magnitude by `10^k`, rounding any remainder up (away from zero).
fn div_pow10_round_up(m: u128, k: u32) -> u128 {
    match pow10(k) {
        Some(d) => {
            let q = m / d;
            if m.is_multiple_of(d) { q } else { q + 1 }
        }
        None => u128::from(m != 0),
    }
}

impl Quantity {
    /// Builds a normalised quantity; `None` when the mantissa or scale is out of range.
    fn from_parts(negative: bool, magnitude: u128, scale: i64, format: Format) -> Option<Self> {
        let mut m = magnitude;
        let mut s = scale;
        if m == 0 {
            return Some(Quantity {
                mantissa: 0,
                scale: 0,
                format,
                text: None,
                int_repr: None,
            });
        }
        while m.is_multiple_of(10) {
            m /= 10;
            s += 1;
        }
        if m >= MANTISSA_LIMIT {
            return None;
        }
        let scale = i32::try_from(s).ok()?;
        let m = m as i128;
        Some(Quantity {
            mantissa: if negative { -m } else { m },
            scale,
            format,
            text: None,
            int_repr: None,
        })
    }

    /// The quantity zero, in `DecimalSI` format.
    pub fn zero() -> Self {
        Quantity {
            mantissa: 0,
            scale: 0,
            format: Format::DecimalSI,
            text: None,
            int_repr: Some((0, 0)),
        }
    }

    /// `value` in the given format (upstream `NewQuantity`).
    pub fn from_i64(value: i64, format: Format) -> Self {
        Self::from_scaled(value, 0, format)
    }

    /// `value / 1000` in the given format (upstream `NewMilliQuantity`).
    pub fn from_milli(value: i64, format: Format) -> Self {
        Self::from_scaled(value, -3, format)
    }

    /// `value × 10^scale` in the given format (upstream `NewScaledQuantity` with a format).
    pub fn from_scaled(value: i64, scale: i32, format: Format) -> Self {
        let mut q = Self::from_parts(
            value < 0,
            u128::from(value.unsigned_abs()),
            i64::from(scale),
            format,
        )
        .unwrap_or_else(Self::zero);
        q.int_repr = Some((value, scale));
        q
    }

    /// The format used when printing.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The same value printed in another format.
    pub fn with_format(&self, format: Format) -> Self {
        Quantity {
            mantissa: self.mantissa,
            scale: self.scale,
            format,
            text: None,
            int_repr: self.int_repr,
        }
    }

    /// Whether the value is zero.
    pub fn is_zero(&self) -> bool {
        self.mantissa == 0
    }

    /// -1, 0 or 1 by the sign of the value.
    pub fn sign(&self) -> i32 {
        self.mantissa.signum() as i32
    }

    /// The value as `mantissa × 10^scale`, normalised (no trailing zeros in the mantissa).
    pub fn to_parts(&self) -> (i128, i32) {
        (self.mantissa, self.scale)
    }

    /// The value at the given power of ten, rounded away from zero (upstream `ScaledValue`),
    /// saturating at the `i64` range.
    pub fn scaled_value(&self, scale: i32) -> i64 {
        let negative = self.mantissa < 0;
        let mag = self.mantissa.unsigned_abs();
        let diff = i64::from(self.scale) - i64::from(scale);
        let result: Option<u128> = if diff >= 0 {
            u32::try_from(diff)
                .ok()
                .and_then(pow10)
                .and_then(|p| mag.checked_mul(p))
        } else {
            let k = u32::try_from(-diff).unwrap_or(u32::MAX);
            Some(div_pow10_round_up(mag, k))
        };
        match result {
            Some(v) if negative => {
                if v > u128::from(i64::MAX.unsigned_abs()) + 1 {
                    i64::MIN
                } else {
                    (-(v as i128)) as i64
                }
            }
            Some(v) => i64::try_from(v).unwrap_or(i64::MAX),
            None if negative => i64::MIN,
            None => i64::MAX,
        }
    }

    /// The value rounded up (away from zero) to an integer (upstream `Value()`), saturating.
    pub fn value(&self) -> i64 {
        self.scaled_value(0)
    }

    /// The value in thousandths, rounded up (away from zero) (upstream `MilliValue()`), saturating.
    pub fn milli_value(&self) -> i64 {
        self.scaled_value(-3)
    }

    /// The value as an `i64` when it is an integer in range (upstream `AsInt64`, without its
    /// dependence on the internal representation).
    pub fn as_i64(&self) -> Option<i64> {
        if self.scale < 0 {
            return None;
        }
        let p = pow10(self.scale as u32)?;
        let v = self.mantissa.checked_mul(i128::try_from(p).ok()?)?;
        i64::try_from(v).ok()
    }

    /// Whether the value is an integer that fits in an `i64`.
    pub fn is_integer(&self) -> bool {
        self.as_i64().is_some()
    }

    /// Upstream's `AsInt64`, which depends on how upstream happens to hold the value: only a
    /// value held as an `int64Amount` with a non-negative scale converts, so `"1000m"` and
    /// `"1.5Gi"` do not although they are integers. The Kubernetes CEL library's `isInteger()`
    /// and `asInteger()` use it.
    pub fn upstream_as_int64(&self) -> Option<i64> {
        let (value, scale) = self.int_repr?;
        match scale {
            0 => Some(value),
            s if s < 0 => None,
            s => positive_scale_i64(value, s),
        }
    }

    /// The value as a float, possibly losing precision (upstream `AsApproximateFloat64`).
    pub fn as_approximate_f64(&self) -> f64 {
        let base = self.mantissa as f64;
        if self.scale == 0 {
            return base;
        }
        base * pow10_f64(self.scale)
    }

    /// The exact sum, or `None` when it needs more than 38 significant digits. The format is
    /// this quantity's, or `other`'s when this one is zero (as upstream `Add`).
    pub fn checked_add(&self, other: &Self) -> Option<Self> {
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        let s = self.scale.min(other.scale);
        let a = self
            .mantissa
            .checked_mul(i128::try_from(pow10((self.scale - s) as u32)?).ok()?)?;
        let b = other
            .mantissa
            .checked_mul(i128::try_from(pow10((other.scale - s) as u32)?).ok()?)?;
        let sum = a.checked_add(b)?;
        let mut q = Self::from_parts(sum < 0, sum.unsigned_abs(), i64::from(s), format)?;
        q.int_repr = match (self.int_repr, other.int_repr) {
            (Some(x), Some(y)) => int_repr_add(x, y),
            _ => None,
        };
        Some(q)
    }

    /// The exact difference, or `None` when it needs more than 38 significant digits. The
    /// format is this quantity's, or `other`'s when this one is zero (as upstream `Sub`).
    pub fn checked_sub(&self, other: &Self) -> Option<Self> {
        self.checked_add(&-other)
    }

    /// The sum, exact when possible; otherwise the least significant digits of the operands are
    /// rounded away from zero until the sum fits in 38 digits.
    fn lossy_add(&self, other: &Self) -> Self {
        if let Some(q) = self.checked_add(other) {
            return q;
        }
        let format = if self.is_zero() {
            other.format
        } else {
            self.format
        };
        let round = |q: &Quantity, t: i64| -> i128 {
            let diff = t - i64::from(q.scale);
            let mag = q.mantissa.unsigned_abs();
            let v = if diff <= 0 {
                // Only reached when it fits: the operand's own scale is at least `t`.
                pow10(u32::try_from(-diff).unwrap_or(u32::MAX))
                    .and_then(|p| mag.checked_mul(p))
                    .unwrap_or(MANTISSA_LIMIT)
            } else {
                div_pow10_round_up(mag, u32::try_from(diff).unwrap_or(u32::MAX))
            };
            let v = v.min(MANTISSA_LIMIT) as i128;
            if q.mantissa < 0 { -v } else { v }
        };
        let lo = i64::from(self.scale.min(other.scale));
        let hi = i64::from(self.scale.max(other.scale));
        let mut t = lo;
        loop {
            let a = round(self, t);
            let b = round(other, t);
            if let Some(sum) = a.checked_add(b)
                && let Some(q) = Self::from_parts(sum < 0, sum.unsigned_abs(), t, format)
            {
                return q;
            }
            if t > hi + 2 {
                // Unreachable in practice: both operands are below 10^37 at this scale.
                return Self::from_parts(false, 0, 0, format).unwrap_or_else(Self::zero);
            }
            t += 1;
        }
    }

    /// Compares two normalised values.
    fn cmp_value(&self, other: &Self) -> Ordering {
        let sa = self.mantissa.signum();
        let sb = other.mantissa.signum();
        if sa != sb {
            return sa.cmp(&sb);
        }
        if sa == 0 {
            return Ordering::Equal;
        }
        let a = self.mantissa.unsigned_abs();
        let b = other.mantissa.unsigned_abs();
        // Align the operand with the larger scale; if that overflows, it is the larger one
        // (magnitudes are below 10^38, far below u128::MAX).
        let mag = match self.scale.cmp(&other.scale) {
            Ordering::Equal => a.cmp(&b),
            Ordering::Greater => {
                match pow10((self.scale - other.scale) as u32).and_then(|p| a.checked_mul(p)) {
                    Some(aligned) => aligned.cmp(&b),
                    None => Ordering::Greater,
                }
            }
            Ordering::Less => {
                match pow10((other.scale - self.scale) as u32).and_then(|p| b.checked_mul(p)) {
                    Some(aligned) => a.cmp(&aligned),
                    None => Ordering::Less,
                }
            }
        };
        if sa < 0 { mag.reverse() } else { mag }
    }

    /// The canonical string (upstream `CanonicalizeBytes`), ignoring any remembered input text.
    pub fn canonical_string(&self) -> String {
        if self.mantissa == 0 {
            return "0".to_string();
        }
        let mut format = self.format;
        if format == Format::BinarySI {
            let limit = Quantity::from_i64(1024, Format::DecimalSI);
            let neg_limit = Quantity::from_i64(-1024, Format::DecimalSI);
            if self.cmp_value(&neg_limit) == Ordering::Greater
                && self.cmp_value(&limit) == Ordering::Less
            {
                format = Format::DecimalSI;
            } else if self.scale < 0 {
                // Not an integer: upstream shows it as DecimalSI rather than lose precision.
                format = Format::DecimalSI;
            } else if let Some(s) = self.binary_string() {
                return s;
            } else {
                // Beyond the "Ei" suffix there is no binary spelling: exponent notation.
                format = Format::DecimalExponent;
            }
        }
        let mut out = String::new();
        if self.mantissa < 0 {
            out.push('-');
        }
        out.push_str(&self.mantissa.unsigned_abs().to_string());
        let mut exponent = i64::from(self.scale);
        let r = exponent.rem_euclid(3);
        for _ in 0..r {
            out.push('0');
        }
        exponent -= r;
        match format {
            Format::DecimalExponent => {
                if exponent != 0 {
                    out.push('e');
                    out.push_str(&exponent.to_string());
                }
            }
            _ => {
                let suffix = match exponent {
                    -9 => Some("n"),
                    -6 => Some("u"),
                    -3 => Some("m"),
                    0 => Some(""),
                    3 => Some("k"),
                    6 => Some("M"),
                    9 => Some("G"),
                    12 => Some("T"),
                    15 => Some("P"),
                    18 => Some("E"),
                    _ => None,
                };
                match suffix {
                    Some(suffix) => out.push_str(suffix),
                    // No SI suffix beyond "E" or below "n": upstream falls back to exponent
                    // notation rather than dropping the magnitude.
                    None => {
                        out.push('e');
                        out.push_str(&exponent.to_string());
                    }
                }
            }
        }
        out
    }

    /// The binary SI string of an integer value, or `None` when its power of 1024 has no suffix
    /// (beyond "Ei") or the integer does not fit in an `i128`.
    fn binary_string(&self) -> Option<String> {
        let p = i128::try_from(pow10(u32::try_from(self.scale).ok()?)?).ok()?;
        let mut v = self.mantissa.checked_mul(p)?;
        let mut times = 0;
        while v.unsigned_abs() >= 1024 && v % 1024 == 0 {
            v /= 1024;
            times += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"].get(times)?;
        Some(format!("{v}{suffix}"))
    }

    /// Parses a quantity exactly as upstream `ParseQuantity`.
    pub fn parse(text: &str) -> Result<Self, ParseQuantityError> {
        parse_quantity(text)
    }
}

struct Parts<'a> {
    positive: bool,
    /// Integer digits without leading zeros; `"0"` when there are none.
    num: &'a [u8],
    denom: &'a [u8],
    suffix: &'a [u8],
    /// Whether the numeric part contains any digit at all.
    has_digit: bool,
}

/// Splits a quantity into sign, integer digits, fraction digits and suffix, mirroring upstream's
/// `parseQuantityString`.
fn split(b: &[u8]) -> Option<Parts<'_>> {
    let end = b.len();
    let mut pos = 0;
    let mut positive = true;
    if let Some(&c) = b.first() {
        if c == b'-' {
            positive = false;
            pos += 1;
        } else if c == b'+' {
            pos += 1;
        }
    }
    let zeros_start = pos;
    while pos < end && b[pos] == b'0' {
        pos += 1;
    }
    let had_zeros = pos > zeros_start;
    let mut parts = Parts {
        positive,
        num: b"0",
        denom: b"",
        suffix: b"",
        has_digit: true,
    };
    if pos >= end {
        return Some(parts);
    }
    let start = pos;
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    let num_digits = pos > start;
    if num_digits {
        parts.num = &b[start..pos];
    }
    if pos >= end {
        return Some(parts);
    }
    if b[pos] == b'.' {
        pos += 1;
        let ds = pos;
        while pos < end && b[pos].is_ascii_digit() {
            pos += 1;
        }
        parts.denom = &b[ds..pos];
    }
    parts.has_digit = had_zeros || num_digits || !parts.denom.is_empty();
    if pos >= end {
        return Some(parts);
    }
    let suffix_start = pos;
    while pos < end && b"eEinumkKMGTP".contains(&b[pos]) {
        pos += 1;
    }
    if pos < end && (b[pos] == b'-' || b[pos] == b'+') {
        pos += 1;
    }
    while pos < end && b[pos].is_ascii_digit() {
        pos += 1;
    }
    if pos < end {
        return None;
    }
    parts.suffix = &b[suffix_start..];
    Some(parts)
}

/// Interprets a suffix as (base, exponent, format), as upstream's suffixer.
fn interpret_suffix(s: &[u8]) -> Option<(u32, i32, Format)> {
    let r = match s {
        b"" => (10, 0, Format::DecimalSI),
        b"n" => (10, -9, Format::DecimalSI),
        b"u" => (10, -6, Format::DecimalSI),
        b"m" => (10, -3, Format::DecimalSI),
        b"k" => (10, 3, Format::DecimalSI),
        b"M" => (10, 6, Format::DecimalSI),
        b"G" => (10, 9, Format::DecimalSI),
        b"T" => (10, 12, Format::DecimalSI),
        b"P" => (10, 15, Format::DecimalSI),
        b"E" => (10, 18, Format::DecimalSI),
        b"Ki" => (2, 10, Format::BinarySI),
        b"Mi" => (2, 20, Format::BinarySI),
        b"Gi" => (2, 30, Format::BinarySI),
        b"Ti" => (2, 40, Format::BinarySI),
        b"Pi" => (2, 50, Format::BinarySI),
        b"Ei" => (2, 60, Format::BinarySI),
        [b'e' | b'E', rest @ ..] if !rest.is_empty() => {
            let text = std::str::from_utf8(rest).ok()?;
            let parsed: i64 = text.parse().ok()?;
            // Exponents outside [-MaxInt32, MaxInt32] are rejected rather than truncated.
            if parsed.unsigned_abs() > i32::MAX as u64 {
                return None;
            }
            (10, parsed as i32, Format::DecimalExponent)
        }
        _ => return None,
    };
    Some(r)
}

fn parse_quantity(text: &str) -> Result<Quantity, ParseQuantityError> {
    let err_input = || text.to_string();
    if text.is_empty() {
        return Err(ParseQuantityError::FormatWrong { input: err_input() });
    }
    if text == "0" {
        let mut q = Quantity::zero();
        q.int_repr = Some((0, 0));
        q.text = Some(Arc::from("0"));
        return Ok(q);
    }
    let parts = split(text.as_bytes())
        .ok_or_else(|| ParseQuantityError::FormatWrong { input: err_input() })?;
    let (base, exponent, mut format) = interpret_suffix(parts.suffix)
        .ok_or_else(|| ParseQuantityError::Suffix { input: err_input() })?;
    let len_num = parts.num.len() as i64;
    let len_denom = parts.denom.len() as i64;

    // Upstream's fast path keeps the input text when it is already canonical.
    let precision = match format {
        Format::DecimalSI | Format::DecimalExponent => 18 - (len_num + len_denom),
        Format::BinarySI if len_denom == 0 => 15 - len_num - i64::from(exponent) * 3 / 10 - 1,
        Format::BinarySI => -1,
    };
    let mut keep_text = false;
    let mut fast = false;
    let mut int_repr = None;
    if precision >= 0 {
        let scale = if base == 10 { i64::from(exponent) } else { 0 } - len_denom;
        if scale >= NANO {
            // The digits of the integer and fraction parts as one integer (at most 18 of
            // them: it fits).
            let shifted = || parts.num.iter().chain(parts.denom);
            let value = shifted()
                .try_fold(0i64, |v, &d| {
                    v.checked_mul(10)?.checked_add(i64::from(d - b'0'))
                })
                .ok_or_else(|| ParseQuantityError::Numeric { input: err_input() })?;
            let mult: i64 = if base == 2 { 1i64 << exponent } else { 1 };
            if let Some(result) = value.checked_mul(mult) {
                fast = true;
                let result = if parts.positive { result } else { -result };
                int_repr = i32::try_from(scale).ok().map(|s| (result, s));
                let ends_in_000 = shifted().rev().take(3).filter(|&&d| d == b'0').count() == 3;
                keep_text = match format {
                    Format::BinarySI => exponent % 10 == 0 && value & 0x07 != 0,
                    _ => scale % 3 == 0 && !ends_in_000 && parts.num[0] != b'0',
                };
            }
        }
    }
    if !fast && !parts.has_digit {
        return Err(ParseQuantityError::Numeric { input: err_input() });
    }

    let too_many = || ParseQuantityError::TooManyDigits { input: err_input() };
    // Exact value: digits × 10^scale (× 2^exponent for binary suffixes).
    // The digits on the stack when they are few (as they almost always are).
    let mut stack = [0u8; 40];
    let heap: Vec<u8>;
    let total = parts.num.len() + parts.denom.len();
    let digits: &[u8] = if total <= stack.len() {
        stack[..parts.num.len()].copy_from_slice(parts.num);
        stack[parts.num.len()..total].copy_from_slice(parts.denom);
        &stack[..total]
    } else {
        heap = [parts.num, parts.denom].concat();
        &heap
    };
    let first = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let mut digits = &digits[first..];
    let mut scale = -len_denom + if base == 10 { i64::from(exponent) } else { 0 };
    while let [rest @ .., b'0'] = digits {
        digits = rest;
        scale += 1;
    }
    let mut magnitude: u128;
    if digits.is_empty() {
        magnitude = 0;
        scale = 0;
    } else if base == 10 && scale < NANO {
        // Round up to nano precision on the digit string, so long inputs still round exactly.
        let drop = (NANO - scale) as usize;
        if drop >= digits.len() {
            magnitude = 1;
        } else {
            magnitude = digits_value(&digits[..digits.len() - drop]).ok_or_else(too_many)? + 1;
        }
        scale = NANO;
    } else {
        magnitude = digits_value(digits).ok_or_else(too_many)?;
    }
    if base == 2 && magnitude != 0 {
        let max = u128::from(i64::MAX as u64);
        match magnitude.checked_mul(1u128 << exponent) {
            Some(v) => magnitude = v,
            None if scale >= 0 => {
                magnitude = max;
                scale = 0;
            }
            None => return Err(too_many()),
        }
        if scale < NANO {
            magnitude = div_pow10_round_up(magnitude, (NANO - scale) as u32);
            scale = NANO;
        }
        let q = Quantity::from_parts(false, magnitude, scale, format).ok_or_else(too_many)?;
        let max_q = Quantity::from_i64(i64::MAX, Format::DecimalSI);
        if q.cmp_value(&max_q) == Ordering::Greater {
            magnitude = max;
            scale = 0;
        } else if q.cmp_value(&Quantity::from_i64(1, Format::DecimalSI)) == Ordering::Less {
            format = Format::DecimalSI;
        }
    }
    let mut q =
        Quantity::from_parts(!parts.positive, magnitude, scale, format).ok_or_else(too_many)?;
    if keep_text {
        q.text = Some(Arc::from(text));
    }
    q.int_repr = int_repr;
    Ok(q)
}

/// `10^n` as an `f64`, computed like Go's `math.Pow10` (so results match upstream bit for bit).
fn pow10_f64(n: i32) -> f64 {
    const TAB: [f64; 32] = [
        1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
        1e17, 1e18, 1e19, 1e20, 1e21, 1e22, 1e23, 1e24, 1e25, 1e26, 1e27, 1e28, 1e29, 1e30, 1e31,
    ];
    const POS: [f64; 10] = [
        1e0, 1e32, 1e64, 1e96, 1e128, 1e160, 1e192, 1e224, 1e256, 1e288,
    ];
    const NEG: [f64; 11] = [
        1e-0, 1e-32, 1e-64, 1e-96, 1e-128, 1e-160, 1e-192, 1e-224, 1e-256, 1e-288, 1e-320,
    ];
    if (0..=308).contains(&n) {
        let n = n as usize;
        return POS[n / 32] * TAB[n % 32];
    }
    if (-323..0).contains(&n) {
        let m = n.unsigned_abs() as usize;
        return NEG[m / 32] / TAB[m % 32];
    }
    if n > 0 { f64::INFINITY } else { 0.0 }
}

/// The value of a decimal digit string, or `None` beyond 38 digits.
fn digits_value(digits: &[u8]) -> Option<u128> {
    if digits.len() > 38 {
        return None;
    }
    let mut v: u128 = 0;
    for &d in digits {
        v = v * 10 + u128::from(d - b'0');
    }
    Some(v)
}

impl FromStr for Quantity {
    type Err = ParseQuantityError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        parse_quantity(s)
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.text {
            Some(t) => f.write_str(t),
            None => f.write_str(&self.canonical_string()),
        }
    }
}

impl fmt::Debug for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Quantity({}, {})", self, self.format.as_str())
    }
}

impl Default for Quantity {
    fn default() -> Self {
        Quantity::zero()
    }
}

impl PartialEq for Quantity {
    fn eq(&self, other: &Self) -> bool {
        self.mantissa == other.mantissa && self.scale == other.scale
    }
}

impl Eq for Quantity {}

impl Hash for Quantity {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.mantissa.hash(state);
        self.scale.hash(state);
    }
}

impl PartialOrd for Quantity {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Quantity {
    fn cmp(&self, other: &Self) -> Ordering {
        self.cmp_value(other)
    }
}

impl Neg for Quantity {
    type Output = Quantity;
    fn neg(self) -> Quantity {
        -&self
    }
}

impl Neg for &Quantity {
    type Output = Quantity;
    fn neg(self) -> Quantity {
        Quantity {
            mantissa: -self.mantissa,
            scale: self.scale,
            format: self.format,
            text: None,
            // Negating i64::MIN moves upstream to inf.Dec.
            int_repr: self
                .int_repr
                .and_then(|(v, s)| v.checked_neg().map(|n| (n, s))),
        }
    }
}

impl Add<&Quantity> for &Quantity {
    type Output = Quantity;
    fn add(self, rhs: &Quantity) -> Quantity {
        self.lossy_add(rhs)
    }
}

impl Add for Quantity {
    type Output = Quantity;
    fn add(self, rhs: Quantity) -> Quantity {
        self.lossy_add(&rhs)
    }
}

impl Add<&Quantity> for Quantity {
    type Output = Quantity;
    fn add(self, rhs: &Quantity) -> Quantity {
        self.lossy_add(rhs)
    }
}

impl Sub<&Quantity> for &Quantity {
    type Output = Quantity;
    fn sub(self, rhs: &Quantity) -> Quantity {
        self.lossy_add(&-rhs)
    }
}

impl Sub for Quantity {
    type Output = Quantity;
    fn sub(self, rhs: Quantity) -> Quantity {
        self.lossy_add(&-rhs)
    }
}

impl Sub<&Quantity> for Quantity {
    type Output = Quantity;
    fn sub(self, rhs: &Quantity) -> Quantity {
        self.lossy_add(&-rhs)
    }
}

impl AddAssign<&Quantity> for Quantity {
    fn add_assign(&mut self, rhs: &Quantity) {
        *self = self.lossy_add(rhs);
    }
}

impl AddAssign for Quantity {
    fn add_assign(&mut self, rhs: Quantity) {
        *self = self.lossy_add(&rhs);
    }
}

impl SubAssign<&Quantity> for Quantity {
    fn sub_assign(&mut self, rhs: &Quantity) {
        *self = self.lossy_add(&-rhs);
    }
}

impl SubAssign for Quantity {
    fn sub_assign(&mut self, rhs: Quantity) {
        *self = self.lossy_add(&-rhs);
    }
}

impl Sum for Quantity {
    fn sum<I: Iterator<Item = Quantity>>(iter: I) -> Quantity {
        iter.fold(Quantity::zero(), |acc, q| acc + q)
    }
}

impl<'a> Sum<&'a Quantity> for Quantity {
    fn sum<I: Iterator<Item = &'a Quantity>>(iter: I) -> Quantity {
        iter.fold(Quantity::zero(), |acc, q| acc + q)
    }
}

impl serde::Serialize for Quantity {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

struct QuantityVisitor;

impl serde::de::Visitor<'_> for QuantityVisitor {
    type Value = Quantity;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a quantity string such as \"1.5Gi\" or a number")
    }

    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
        parse_quantity(v.trim()).map_err(|e| E::custom(format!("{e}: {v:?}")))
    }

    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
        Ok(Quantity::from_i64(v, Format::DecimalSI))
    }

    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
        self.visit_str(&v.to_string())
    }

    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
        if !v.is_finite() {
            return Err(E::custom(format!("quantity is not a finite number: {v}")));
        }
        self.visit_str(&v.to_string())
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Quantity, E> {
        Ok(Quantity::zero())
    }
}

impl<'de> serde::Deserialize<'de> for Quantity {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(QuantityVisitor)
    }
}

#[cfg(test)]
mod tests;
