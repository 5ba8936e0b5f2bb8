//! The standard cron schedule syntax a CronJob's `schedule` is parsed with (robfig/cron's
//! `ParseStandard`, which kube-apiserver uses), with its error messages: five fields (minute,
//! hour, day of month, month, day of week; ranges, lists, steps, `*`, `?`, month and day names)
//! or a descriptor (`@hourly`, `@every 1h30m`, ...), after an optional `TZ=`/`CRON_TZ=` prefix.

/// Bounds and names of one field.
struct Bounds {
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const MINUTES: Bounds = Bounds {
    min: 0,
    max: 59,
    names: &[],
};
const HOURS: Bounds = Bounds {
    min: 0,
    max: 23,
    names: &[],
};
const DOM: Bounds = Bounds {
    min: 1,
    max: 31,
    names: &[],
};
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &["sun", "mon", "tue", "wed", "thu", "fri", "sat"],
};

/// Checks a standard cron spec; the parser's message when it does not parse.
pub fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let end = spec.find(' ').unwrap_or(spec.len());
        spec = spec[end..].trim();
    }
    if let Some(rest) = spec.strip_prefix('@') {
        return parse_descriptor(rest, spec);
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        return Err(format!(
            "expected exactly 5 fields, found {}: [{}]",
            fields.len(),
            fields.join(" ")
        ));
    }
    for (field, bounds) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        for range in field.split(',') {
            parse_range(range, bounds)?;
        }
    }
    Ok(())
}

fn parse_descriptor(name: &str, spec: &str) -> Result<(), String> {
    match name {
        "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
        _ => match name.strip_prefix("every ") {
            Some(duration) => parse_go_duration(duration)
                .map_err(|e| format!("failed to parse duration {spec}: {e}")),
            None => Err(format!("unrecognized descriptor: {spec}")),
        },
    }
}

/// Go's `time.ParseDuration`, for its acceptance only.
fn parse_go_duration(text: &str) -> Result<(), String> {
    let invalid = || format!("time: invalid duration {text:?}");
    let mut rest = text.strip_prefix(['+', '-']).unwrap_or(text);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(invalid());
    }
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        if digits == 0 {
            return Err(invalid());
        }
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {text:?}"));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!("time: unknown unit {unit:?} in duration {text:?}"));
        }
        rest = &rest[unit_len..];
    }
    Ok(())
}

/// One range: `*`, `?`, `N`, `N-M`, each with an optional `/step`.
fn parse_range(expr: &str, bounds: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let single = low_and_high.len() == 1;
    let (start, end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (bounds.min, bounds.max)
    } else {
        let start = parse_int_or_name(low_and_high[0], bounds.names)?;
        let end = match low_and_high.len() {
            1 => start,
            2 => parse_int_or_name(low_and_high[1], bounds.names)?,
            _ => return Err(format!("too many hyphens: {expr}")),
        };
        (start, end)
    };
    let (start, end) = match range_and_step.len() {
        1 => (start, end),
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            if step == 0 {
                return Err(format!("step of range should be a positive number: {expr}"));
            }
            // `N/step` means `N-max/step`.
            (start, if single { bounds.max } else { end })
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < bounds.min {
        return Err(format!(
            "beginning of range ({start}) below minimum ({}): {expr}",
            bounds.min
        ));
    }
    if end > bounds.max {
        return Err(format!(
            "end of range ({end}) above maximum ({}): {expr}",
            bounds.max
        ));
    }
    if start > end {
        return Err(format!(
            "beginning of range ({start}) beyond end of range ({end}): {expr}"
        ));
    }
    Ok(())
}

fn parse_int_or_name(expr: &str, names: &[&str]) -> Result<u32, String> {
    let lower = expr.to_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        let offset = if names.len() == 12 { 1 } else { 0 };
        return Ok(i as u32 + offset);
    }
    must_parse_int(expr)
}

fn must_parse_int(expr: &str) -> Result<u32, String> {
    let value: i64 = expr.parse().map_err(|_| {
        format!("failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: invalid syntax")
    })?;
    if value < 0 {
        return Err(format!("negative number ({value}) not allowed: {expr}"));
    }
    u32::try_from(value).map_err(|_| {
        format!(
            "failed to parse int from {expr}: strconv.Atoi: parsing {expr:?}: value out of range"
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_as_robfig_cron_does() {
        for good in [
            "*/5 * * * *",
            "0 0 1 jan *",
            "0 9-17 * * MON-FRI",
            "@hourly",
            "@every 1h30m",
            "TZ=UTC 0 0 * * *",
            "0,30 * * * ?",
        ] {
            assert_eq!(parse_standard(good), Ok(()), "{good}");
        }
        let cases = [
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
            (
                "5-1 * * * *",
                "beginning of range (5) beyond end of range (1): 5-1",
            ),
            (
                "x * * * *",
                "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            ("@often", "unrecognized descriptor: @often"),
            (
                "*/0 * * * *",
                "step of range should be a positive number: */0",
            ),
        ];
        for (spec, message) in cases {
            assert_eq!(parse_standard(spec), Err(message.to_string()), "{spec}");
        }
    }
}
