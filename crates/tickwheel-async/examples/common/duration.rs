//! The examples' one duration parser for their flags: `500ms` or `2s` (a bare number is
//! milliseconds). Shared by path (`#[path = "common/duration.rs"]`), so each example stays one
//! file with no argument-parsing dependency.

use std::time::Duration;

/// `500ms` or `2s` (a bare number is milliseconds).
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let bad = || format!("bad duration {s:?}: expected e.g. 500ms or 2s");
    let (digits, per_unit) = if let Some(ms) = s.strip_suffix("ms") {
        (ms, Duration::from_millis(1))
    } else if let Some(secs) = s.strip_suffix('s') {
        (secs, Duration::from_secs(1))
    } else {
        (s, Duration::from_millis(1))
    };
    let n: u32 = digits.parse().map_err(|_| bad())?;
    per_unit.checked_mul(n).ok_or_else(bad)
}
