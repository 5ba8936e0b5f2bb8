//! Kubernetes' time encodings: RFC 3339 text in JSON, seconds and nanoseconds on the wire; Go's
//! duration text.

use std::fmt::Write;

use crate::Error;

fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn digits(text: &[u8], at: usize, n: usize) -> Option<u32> {
    let slice = text.get(at..at + n)?;
    let mut value = 0u32;
    for b in slice {
        if !b.is_ascii_digit() {
            return None;
        }
        value = value * 10 + u32::from(b - b'0');
    }
    Some(value)
}

/// Parses RFC 3339 (`2026-01-02T15:04:05Z`, fractions and offsets allowed) into Unix seconds
/// and nanoseconds.
pub fn parse_rfc3339(text: &str) -> Result<(i64, u32), Error> {
    let bad = || Error::new(format!("{text:?} is not an RFC 3339 time"));
    let b = text.as_bytes();
    let year = digits(b, 0, 4).ok_or_else(bad)?;
    let month = digits(b, 5, 2).ok_or_else(bad)?;
    let day = digits(b, 8, 2).ok_or_else(bad)?;
    let hour = digits(b, 11, 2).ok_or_else(bad)?;
    let minute = digits(b, 14, 2).ok_or_else(bad)?;
    let second = digits(b, 17, 2).ok_or_else(bad)?;
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || !matches!(b[10], b'T' | b't')
        || b[13] != b':'
        || b[16] != b':'
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    let mut at = 19;
    let mut nanos = 0u32;
    if b[at] == b'.' {
        at += 1;
        let start = at;
        while at < b.len() && b[at].is_ascii_digit() {
            if at - start < 9 {
                nanos = nanos * 10 + u32::from(b[at] - b'0');
            }
            at += 1;
        }
        if at == start {
            return Err(bad());
        }
        for _ in (at - start)..9 {
            nanos *= 10;
        }
    }
    let offset = match b.get(at) {
        Some(b'Z' | b'z') if at + 1 == b.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == b.len() && b[at + 3] == b':' => {
            let h = digits(b, at + 1, 2).ok_or_else(bad)?;
            let m = digits(b, at + 4, 2).ok_or_else(bad)?;
            let seconds = i64::from(h * 3600 + m * 60);
            if *sign == b'+' { seconds } else { -seconds }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(i64::from(year), month, day);
    let seconds = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset;
    Ok((seconds, nanos))
}

/// Formats Unix seconds (and `micros`, when given, as six fraction digits) as RFC 3339 in UTC.
pub fn format_rfc3339(out: &mut String, seconds: i64, micros: Option<u32>) {
    let days = seconds.div_euclid(86_400);
    let rest = seconds.rem_euclid(86_400) as u32;
    let (y, m, d) = civil_from_days(days);
    // The text in one buffer, digit pairs written in place, then appended at once.
    let mut text = *b"0000-00-00T00:00:00.000000Z";
    let pair = |text: &mut [u8; 27], at: usize, value: u32| {
        text[at] = b'0' + (value / 10 % 10) as u8;
        text[at + 1] = b'0' + (value % 10) as u8;
    };
    let year = y.clamp(0, 9999) as u32;
    pair(&mut text, 0, year / 100);
    pair(&mut text, 2, year % 100);
    pair(&mut text, 5, m);
    pair(&mut text, 8, d);
    pair(&mut text, 11, rest / 3600);
    pair(&mut text, 14, rest / 60 % 60);
    pair(&mut text, 17, rest % 60);
    let end = match micros {
        Some(micros) => {
            let micros = micros % 1_000_000;
            pair(&mut text, 20, micros / 10_000);
            pair(&mut text, 22, micros / 100 % 100);
            pair(&mut text, 24, micros % 100);
            27
        }
        None => {
            text[19] = b'Z';
            20
        }
    };
    let from = if (0..=9999).contains(&y) {
        0
    } else {
        let _ = write!(out, "{y:04}");
        4
    };
    // ASCII digits and punctuation only.
    out.push_str(std::str::from_utf8(&text[from..end]).unwrap_or_default());
}

const UNITS: [(&str, u64); 9] = [
    ("ns", 1),
    ("us", 1_000),
    ("µs", 1_000),
    ("μs", 1_000),
    ("ms", 1_000_000),
    ("s", 1_000_000_000),
    ("m", 60_000_000_000),
    ("h", 3_600_000_000_000),
    ("", 0),
];

/// Parses a Go duration (`1h2m3.5s`, `300ms`, `-1.5h`) into nanoseconds.
pub fn parse_duration(text: &str) -> Result<i64, Error> {
    let bad = || Error::new(format!("{text:?} is not a duration"));
    let (negative, mut rest) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(bad());
    }
    let mut total: u128 = 0;
    while !rest.is_empty() {
        let int_end = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        let whole: u128 = if int_end == 0 {
            0
        } else {
            rest[..int_end].parse().map_err(|_| bad())?
        };
        rest = &rest[int_end..];
        let (mut frac, mut scale) = (0u128, 1u128);
        let mut had_fraction = false;
        if let Some(after) = rest.strip_prefix('.') {
            let end = after
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(after.len());
            for c in after[..end].bytes().take(18) {
                frac = frac * 10 + u128::from(c - b'0');
                scale *= 10;
            }
            had_fraction = end > 0;
            rest = &after[end..];
        }
        if int_end == 0 && !had_fraction {
            return Err(bad());
        }
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        let per = UNITS
            .iter()
            .find(|(name, _)| !name.is_empty() && *name == unit)
            .map(|(_, n)| u128::from(*n))
            .ok_or_else(bad)?;
        total += whole * per + frac * per / scale;
        rest = &rest[unit_end..];
        if total > i64::MAX as u128 {
            return Err(bad());
        }
    }
    let total = total as i64;
    Ok(if negative { -total } else { total })
}

/// Formats nanoseconds as Go's `time.Duration.String` does.
pub fn format_duration(out: &mut String, nanos: i64) {
    if nanos == 0 {
        out.push_str("0s");
        return;
    }
    if nanos < 0 {
        out.push('-');
    }
    let u = nanos.unsigned_abs();
    let fraction = |out: &mut String, value: u64, digits: u32| {
        let scale = 10u64.pow(digits);
        let _ = write!(out, "{}", value / scale);
        let frac = value % scale;
        if frac != 0 {
            let mut text = format!("{frac:0width$}", width = digits as usize);
            while text.ends_with('0') {
                text.pop();
            }
            out.push('.');
            out.push_str(&text);
        }
    };
    if u < 1_000_000_000 {
        let (digits, unit) = if u < 1_000 {
            (0, "ns")
        } else if u < 1_000_000 {
            (3, "µs")
        } else {
            (6, "ms")
        };
        fraction(out, u, digits);
        out.push_str(unit);
        return;
    }
    let hours = u / 3_600_000_000_000;
    let minutes = u / 60_000_000_000 % 60;
    let seconds = u % 60_000_000_000;
    if hours > 0 {
        let _ = write!(out, "{hours}h");
    }
    if hours > 0 || minutes > 0 {
        let _ = write!(out, "{minutes}m");
    }
    fraction(out, seconds, 9);
    out.push('s');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip() {
        for (text, seconds, nanos) in [
            ("1970-01-01T00:00:00Z", 0, 0),
            ("2026-01-02T15:04:05Z", 1_767_366_245, 0),
            ("2000-02-29T23:59:59Z", 951_868_799, 0),
            ("1969-12-31T23:59:59Z", -1, 0),
        ] {
            assert_eq!(parse_rfc3339(text).expect(text), (seconds, nanos));
            let mut out = String::new();
            format_rfc3339(&mut out, seconds, None);
            assert_eq!(out, text);
        }
        assert_eq!(
            parse_rfc3339("2026-01-02T16:04:05.123456789+01:00").expect("offset"),
            (1_767_366_245, 123_456_789)
        );
        let mut out = String::new();
        format_rfc3339(&mut out, 1_767_366_245, Some(1_500));
        assert_eq!(out, "2026-01-02T15:04:05.001500Z");
    }

    #[test]
    fn formatted_times_parse_back_to_their_seconds() {
        // Every day boundary and odd second of four centuries' worth of samples, with and
        // without microseconds: the pairs of digits land where the parser reads them.
        let mut seconds = -62_135_596_800i64; // 0001-01-01T00:00:00Z
        while seconds < 253_402_300_799 {
            for micros in [None, Some(0), Some(7), Some(999_999)] {
                let mut out = String::new();
                format_rfc3339(&mut out, seconds, micros);
                let (back, nanos) = parse_rfc3339(&out).expect(&out);
                assert_eq!(back, seconds, "{out}");
                assert_eq!(nanos, micros.unwrap_or(0) * 1_000, "{out}");
                assert_eq!(out.len(), if micros.is_some() { 27 } else { 20 });
            }
            seconds += 86_400 * 97 + 3_661;
        }
        // Years outside 0..=9999 keep Go's wider year.
        let mut out = String::new();
        format_rfc3339(&mut out, 253_402_300_800, None);
        assert_eq!(out, "10000-01-01T00:00:00Z");
        let mut out = String::from("x");
        format_rfc3339(&mut out, 0, Some(1_234_567));
        assert_eq!(out, "x1970-01-01T00:00:00.234567Z");
    }

    #[test]
    fn bad_times_are_refused() {
        for text in [
            "",
            "2026-01-02",
            "2026-13-02T15:04:05Z",
            "2026-01-02T15:04:05",
            "2026-01-02 15:04:05Z",
            "2026-01-02T15:04:05.Z",
            "2026-01-02T15:04:05+0100",
        ] {
            assert!(parse_rfc3339(text).is_err(), "{text}");
        }
    }

    #[test]
    fn durations_as_go_prints_and_parses_them() {
        for (nanos, text) in [
            (0i64, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (2_000_000, "2ms"),
            (1_500_000_000, "1.5s"),
            (60_000_000_000, "1m0s"),
            (3_600_000_000_000, "1h0m0s"),
            (3_661_000_000_000, "1h1m1s"),
            (-90_000_000_000, "-1m30s"),
        ] {
            let mut out = String::new();
            format_duration(&mut out, nanos);
            assert_eq!(out, text);
            assert_eq!(parse_duration(text).expect(text), nanos);
        }
        assert_eq!(parse_duration("1.5h").expect("fraction"), 5_400_000_000_000);
        assert_eq!(parse_duration("300us").expect("us"), 300_000);
        for bad in ["", "1", "h", "1x", ".h", "-"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
