//! Cron schedules as the CronJob controller reads them (upstream uses robfig/cron v3's
//! `ParseStandard`): five fields (minute, hour, day of month, month, day of week) with `*`,
//! `?`, ranges `a-b`, steps `*/n`, `a-b/n` and `a/n`, lists, month and weekday names, and the
//! descriptors `@yearly`, `@annually`, `@monthly`, `@weekly`, `@daily`, `@midnight`, `@hourly`.
//! As in robfig/cron, when both day fields are restricted a day matching either runs; when
//! either is `*` (or `?`), both must match.
//!
//! Times are UTC minutes; `spec.timeZone` is applied by the caller as a fixed offset.

use std::fmt;

/// A parsed schedule: the allowed values of each field as bit sets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    minute: u64,
    hour: u64,
    dom: u64,
    month: u64,
    dow: u64,
    /// `*` or `?` in the day-of-month field.
    dom_star: bool,
    /// `*` or `?` in the day-of-week field.
    dow_star: bool,
}

/// Why a schedule does not parse (the text upstream's validation would print after
/// "unparseable schedule").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(pub String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(text: &str, names: &[&str], offset: u32) -> Result<u32, ParseError> {
    let lower = text.to_ascii_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + offset);
    }
    text.parse::<u32>()
        .map_err(|_| ParseError(format!("failed to parse int from {text}")))
}

/// One field: returns its bits and whether it was `*`/`?` without a step.
fn field(
    text: &str,
    min: u32,
    max: u32,
    names: &[&str],
    name_offset: u32,
) -> Result<(u64, bool), ParseError> {
    let mut bits = 0u64;
    let mut star = false;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step = s
                    .parse::<u32>()
                    .map_err(|_| ParseError(format!("failed to parse int from {s}")))?;
                if step == 0 {
                    return Err(ParseError(format!(
                        "step of range should be a positive number: {part}"
                    )));
                }
                (r, Some(step))
            }
            None => (part, None),
        };
        let (start, end, whole) = if range == "*" || range == "?" {
            (min, max, true)
        } else if let Some((a, b)) = range.split_once('-') {
            (
                value(a, names, name_offset)?,
                value(b, names, name_offset)?,
                false,
            )
        } else {
            let v = value(range, names, name_offset)?;
            // "a/n" means from a to the end, by n.
            (v, if step.is_some() { max } else { v }, false)
        };
        if start < min {
            return Err(ParseError(format!(
                "beginning of range ({start}) below minimum ({min}): {part}"
            )));
        }
        if end > max {
            return Err(ParseError(format!(
                "end of range ({end}) above maximum ({max}): {part}"
            )));
        }
        if start > end {
            return Err(ParseError(format!(
                "beginning of range ({start}) beyond end of range ({end}): {part}"
            )));
        }
        let step = step.unwrap_or(1);
        if whole && step == 1 {
            star = true;
        }
        let mut v = start;
        while v <= end {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

impl Schedule {
    /// Parses a standard five-field schedule or a descriptor.
    pub fn parse(text: &str) -> Result<Schedule, ParseError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(ParseError("empty spec string".into()));
        }
        let expanded = match text {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            t if t.starts_with('@') => {
                return Err(ParseError(format!("unrecognized descriptor: {t}")));
            }
            t => t,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(ParseError(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            )));
        }
        let (minute, _) = field(fields[0], 0, 59, &[], 0)?;
        let (hour, _) = field(fields[1], 0, 23, &[], 0)?;
        let (dom, dom_star) = field(fields[2], 1, 31, &[], 0)?;
        let (month, _) = field(fields[3], 1, 12, &MONTHS, 1)?;
        let (dow, dow_star) = field(fields[4], 0, 6, &DAYS, 0)?;
        Ok(Schedule {
            minute,
            hour,
            dom,
            month,
            dow,
            dom_star,
            dow_star,
        })
    }

    fn day_matches(&self, day: u32, weekday: u32) -> bool {
        let dom = self.dom & (1 << day) != 0;
        let dow = self.dow & (1 << weekday) != 0;
        if self.dom_star || self.dow_star {
            dom && dow
        } else {
            dom || dow
        }
    }

    /// The first time strictly after `after` (seconds since the Unix epoch, local to the
    /// schedule) that the schedule fires, within about five years.
    pub fn next_after(&self, after: i64) -> Option<i64> {
        // Start at the next whole minute.
        let mut t = after.div_euclid(60) * 60 + 60;
        let limit = after + 5 * 366 * 86_400;
        while t <= limit {
            let days = t.div_euclid(86_400);
            let (y, m, d) = civil(days);
            let weekday = (days + 4).rem_euclid(7) as u32; // 1970-01-01 was a Thursday.
            if self.month & (1 << m) == 0 {
                // The first day of the next month.
                let (ny, nm) = if m == 12 { (y + 1, 1) } else { (y, m + 1) };
                t = days_from_civil(ny, nm, 1) * 86_400;
                continue;
            }
            if !self.day_matches(d, weekday) {
                t = (days + 1) * 86_400;
                continue;
            }
            let secs = t.rem_euclid(86_400);
            let hour = (secs / 3600) as u32;
            if self.hour & (1 << hour) == 0 {
                t = t - secs + i64::from(hour + 1) * 3600;
                continue;
            }
            let minute = ((secs % 3600) / 60) as u32;
            if self.minute & (1 << minute) == 0 {
                t += 60;
                continue;
            }
            return Some(t);
        }
        None
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date.
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let (m, d) = (i64::from(m), i64::from(d));
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of a day count since 1970-01-01.
fn civil(z: i64) -> (i64, u32, u32) {
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

/// The offset of a `spec.timeZone` in seconds east of UTC, for the zones that have a fixed
/// one (`UTC`, `Etc/UTC`, `Etc/GMT`, `Etc/GMT+N`, `Etc/GMT-N`, `GMT`, `Zulu`, ...). `None`
/// for any other name: allot carries no time zone database.
pub fn fixed_offset(zone: &str) -> Option<i64> {
    match zone {
        "UTC" | "Etc/UTC" | "Etc/UCT" | "Etc/Universal" | "Etc/Zulu" | "UCT" | "Universal"
        | "Zulu" | "GMT" | "Etc/GMT" | "Etc/GMT0" | "Etc/GMT+0" | "Etc/GMT-0" | "GMT0"
        | "Etc/Greenwich" | "Greenwich" => Some(0),
        z => {
            let rest = z.strip_prefix("Etc/GMT")?;
            let (sign, hours) = rest.split_at(1);
            let hours: i64 = hours.parse().ok()?;
            // POSIX style: Etc/GMT+5 is five hours west of Greenwich.
            match sign {
                "+" if (1..=12).contains(&hours) => Some(-hours * 3600),
                "-" if (1..=14).contains(&hours) => Some(hours * 3600),
                _ => None,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(y: i64, m: u32, d: u32, h: i64, min: i64) -> i64 {
        days_from_civil(y, m, d) * 86_400 + h * 3600 + min * 60
    }

    #[test]
    fn fields_and_descriptors_fire_when_robfig_cron_does() {
        let start = at(2026, 1, 1, 0, 0); // a Thursday
        let next = |spec: &str, after: i64| Schedule::parse(spec).unwrap().next_after(after);
        assert_eq!(next("*/15 * * * *", start), Some(at(2026, 1, 1, 0, 15)));
        assert_eq!(next("0 9 * * MON-FRI", start), Some(at(2026, 1, 1, 9, 0)));
        assert_eq!(next("0 9 * * sat", start), Some(at(2026, 1, 3, 9, 0)));
        assert_eq!(next("@hourly", start), Some(at(2026, 1, 1, 1, 0)));
        assert_eq!(next("@monthly", start), Some(at(2026, 2, 1, 0, 0)));
        assert_eq!(next("30 2 29 2 *", start), Some(at(2028, 2, 29, 2, 30)));
        assert_eq!(next("5/20 * * * *", start), Some(at(2026, 1, 1, 0, 5)));
        // Both day fields restricted: either matches (the 15th, or any Friday).
        assert_eq!(next("0 0 15 * FRI", start), Some(at(2026, 1, 2, 0, 0)));
        // A step over the whole weekday range is a restriction, not a star.
        assert_eq!(next("0 0 15 * */2", start), Some(at(2026, 1, 3, 0, 0)));
    }

    #[test]
    fn bad_schedules_are_explained() {
        for (spec, want) in [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("61 * * * *", "end of range (61) above maximum (59): 61"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
            ("@often", "unrecognized descriptor: @often"),
            ("x * * * *", "failed to parse int from x"),
        ] {
            assert_eq!(Schedule::parse(spec).unwrap_err().0, want, "{spec}");
        }
    }

    #[test]
    fn fixed_zones_have_offsets_and_others_none() {
        assert_eq!(fixed_offset("Etc/UTC"), Some(0));
        assert_eq!(fixed_offset("Etc/GMT+5"), Some(-5 * 3600));
        assert_eq!(fixed_offset("Etc/GMT-14"), Some(14 * 3600));
        assert_eq!(fixed_offset("Europe/Paris"), None);
    }
}
