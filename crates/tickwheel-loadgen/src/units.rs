//! Units: durations in nanoseconds, durations parsed from human text, and numbers formatted
//! for people (`1.23µs`, `6,012,345`, `45.2M`).
//!
//! The ground floor of the crate: it imports nothing from the crate, so every module may use it.

use std::time::Duration;

/// Nanoseconds in `d`, saturating at `u64::MAX`.
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Parses a human duration: a number (decimals allowed) and a unit out of `ns`, `us`/`µs`,
/// `ms`, `s`, `m`, `h`; e.g. `30s`, `250ms`, `1.5s`.
///
/// # Errors
/// A message naming the accepted form when `text` is not one.
pub(crate) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let scale_ns: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        "" => {
            return Err(format!(
                "`{text}` has no unit; write e.g. `30s`, `250ms`, `100us` or `5ns`"
            ))
        }
        other => {
            return Err(format!(
                "unknown unit `{other}` in `{text}`; use ns, us, ms, s, m or h"
            ))
        }
    };
    let value: f64 = number
        .parse()
        .map_err(|_| format!("`{text}` is not a duration; write e.g. `30s` or `250ms`"))?;
    if !value.is_finite() || value < 0.0 {
        return Err(format!("duration `{text}` must not be negative"));
    }
    let ns = value * scale_ns;
    if ns > u64::MAX as f64 {
        return Err(format!("duration `{text}` is too long"));
    }
    Ok(Duration::from_nanos(ns.round() as u64))
}

/// A whole number for a count flag, with a clear error for a negative one (which clap would
/// otherwise take for another flag).
pub(crate) fn non_negative<T: std::str::FromStr>(text: &str) -> Result<T, String>
where
    T::Err: std::fmt::Display,
{
    if text.trim_start().starts_with('-') {
        return Err(format!("`{text}` must not be negative"));
    }
    text.parse()
        .map_err(|e| format!("`{text}` is not a whole number: {e}"))
}

/// `v` nanoseconds with three significant digits and a unit: `87ns`, `1.23µs`, `45.6ms`, `2.10s`.
pub(crate) fn human_ns(v: f64) -> String {
    // A value that rounds to 1000 of one unit is written in the next: `1.00ms`, not `1000µs`.
    let units = [(1.0, "ns"), (1e3, "µs"), (1e6, "ms"), (1e9, "s")];
    let mut at = units
        .iter()
        .rposition(|&(scale, _)| v >= scale)
        .unwrap_or(0);
    let rounds_up = |at: usize| {
        let value = v / units[at].0;
        if at == 0 {
            value.round() >= 1000.0
        } else {
            value >= 999.5
        }
    };
    if at + 1 < units.len() && rounds_up(at) {
        at += 1;
    }
    let (scale, unit) = units[at];
    let value = v / scale;
    if at == 0 {
        format!("{value:.0}{unit}")
    } else if value < 9.995 {
        format!("{value:.2}{unit}")
    } else if value < 99.95 {
        format!("{value:.1}{unit}")
    } else {
        format!("{value:.0}{unit}")
    }
}

/// A per-call cost from the runs: `7.41ns`, `23.4ns`, `1.23µs`.
pub(crate) fn fine_ns(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}ns")
    } else if v < 100.0 {
        format!("{v:.1}ns")
    } else {
        human_ns(v)
    }
}

/// A count with thousands separators: `6,012,345`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate or size in engineering form: `45.2M`, `812k`, `950`.
pub(crate) fn si(v: f64) -> String {
    if v >= 1e9 {
        format!("{:.2}G", v / 1e9)
    } else if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_in_human_forms() {
        assert_eq!(parse_duration("30s"), Ok(Duration::from_secs(30)));
        assert_eq!(parse_duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100us"), Ok(Duration::from_micros(100)));
        assert_eq!(parse_duration("7ns"), Ok(Duration::from_nanos(7)));
        assert_eq!(parse_duration("2m"), Ok(Duration::from_secs(120)));
        assert_eq!(parse_duration("0s"), Ok(Duration::ZERO));
        assert!(parse_duration("30").unwrap_err().contains("no unit"));
        assert!(parse_duration("3 weeks").is_err());
        assert!(parse_duration("-1s").unwrap_err().contains("negative"));
        assert!(parse_duration("abc").is_err());
    }

    #[test]
    fn human_units() {
        assert_eq!(human_ns(0.0), "0ns");
        assert_eq!(human_ns(87.0), "87ns");
        assert_eq!(human_ns(1234.0), "1.23µs");
        assert_eq!(human_ns(45_600_000.0), "45.6ms");
        assert_eq!(human_ns(30e9), "30.0s");
        // Three significant digits that round up into the next unit, or the next width.
        assert_eq!(human_ns(999_600.0), "1.00ms");
        assert_eq!(human_ns(999.6), "1.00µs");
        assert_eq!(human_ns(999_400.0), "999µs");
        assert_eq!(human_ns(9_996.0), "10.0µs");
        assert_eq!(human_ns(99_960.0), "100µs");
        assert_eq!(human_ns(1e12), "1000s");
        assert_eq!(count(6_012_345), "6,012,345");
        assert_eq!(count(12), "12");
        assert_eq!(si(45_200_000.0), "45.2M");
    }
}
