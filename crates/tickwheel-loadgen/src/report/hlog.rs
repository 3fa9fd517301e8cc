//! `<timer>.hlog`: an HdrHistogram interval log laid out as Java's `HistogramLogWriter`
//! (log format 1.3) writes it, one interval per second of run time, two tags: `lateness` and
//! `cost` (sampled cost of every operation, ns). HdrHistogram's `HistogramLogReader` and
//! `HistogramLogProcessor`, and the Rust crate's `IntervalLogIterator`, read it.
//!
//! ```text
//! #tickwheel-loadgen hierarchical virtual clock; tag lateness in ns, tag cost in ns
//! #[Histogram log format version 1.3]
//! #[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]
//! #[BaseTime: 1700000000.123 (seconds since epoch)]
//! "StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram"
//! Tag=lateness,0.000,1.000,0.042,HISTFAAAA...
//! ```
//!
//! The header is Java's `outputComment`, `outputLogFormatVersion`, `outputStartTime`,
//! `outputBaseTime` and `outputLegend`, in the order its documentation gives: start and base
//! time are whole milliseconds (`%.3f` of msec / 1000.0), the date is `java.util.Date`'s
//! `toString` in UTC. The Rust crate's `IntervalLogWriterBuilder` writes neither the version
//! nor the legend nor the date, and its max value divisor adds a `#[MaxValueDivisor: ...]` line
//! Java never writes, so the header is written here. Interval lines are Java's
//! `Tag=%s,%.3f,%.3f,%.3f,%s`: start and length in seconds from the base time, then
//! `Interval_Max` divided by Java's default `maxValueUnitRatio` (1,000,000: ns shown as ms),
//! formatted as `java.util.Formatter` does, then the V2 DEFLATE-compressed histogram in base64
//! (starting `HISTF`; the `base64` crate's standard alphabet with padding, as Java's
//! `Base64Helper.printBase64Binary`).

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hdrhistogram::serialization::Deserializer;
use hdrhistogram::Histogram;

use super::hgrm::java_fixed;
use crate::context::civil_date;
use crate::error::Error;
use crate::measure::Interval;

/// Java's `HistogramLogWriter` default ratio for `Interval_Max`: msec : nsec.
const MAX_VALUE_UNIT_RATIO: f64 = 1_000_000.0;

/// `java.util.Date.toString()` for `ms` since the epoch, in UTC: `EEE MMM dd HH:mm:ss zzz yyyy`.
fn java_date(ms: u128) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = ms / 1000;
    let (days, of_day) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(u64::try_from(days).unwrap_or(u64::MAX));
    format!(
        "{} {} {day:02} {:02}:{:02}:{:02} UTC {year}",
        DAYS[usize::try_from(days % 7).expect("< 7")],
        MONTHS[usize::try_from(month - 1).expect("< 12")],
        of_day / 3600,
        of_day / 60 % 60,
        of_day % 60,
    )
}

/// Whole milliseconds since the epoch (0 before it), as Java's writer takes them.
fn epoch_ms(time: SystemTime) -> u128 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis()
}

/// Java's `"%.3f"` of `ms / 1000.0`: exact for whole milliseconds.
fn ms_as_seconds(ms: u128) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// The header, everything before the first interval line.
fn header(comment: &str, start: SystemTime) -> String {
    let ms = epoch_ms(start);
    let mut out = String::new();
    for line in comment.split('\n') {
        out.push_str(&format!("#{line}\n"));
    }
    out.push_str("#[Histogram log format version 1.3]\n");
    out.push_str(&format!(
        "#[StartTime: {} (seconds since epoch), {}]\n",
        ms_as_seconds(ms),
        java_date(ms)
    ));
    out.push_str(&format!(
        "#[BaseTime: {} (seconds since epoch)]\n",
        ms_as_seconds(ms)
    ));
    out.push_str(
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n",
    );
    out
}

/// Renders the log: the header, then each interval of each tag in time order.
///
/// # Errors
/// [`Error::Io`] (against `path`) when an interval cannot be decoded.
pub(crate) fn render(
    path: &Path,
    comment: &str,
    start: SystemTime,
    series: &[(&str, &[Interval])],
) -> Result<Vec<u8>, Error> {
    let bad = |what: String| Error::io("encoding", path, std::io::Error::other(what));
    let mut out = header(comment, start);
    let mut entries: Vec<(&str, &Interval)> = series
        .iter()
        .flat_map(|(tag, intervals)| intervals.iter().map(move |i| (*tag, i)))
        .collect();
    entries.sort_by_key(|(_, interval)| interval.start);
    let mut deserializer = Deserializer::new();
    for (tag, interval) in entries {
        // Decoded only for its max: the line carries the encoding as recorded.
        let hist: Histogram<u64> = deserializer
            .deserialize(&mut interval.encoded.as_slice())
            .map_err(|e| bad(format!("{e:?}")))?;
        out.push_str(&format!(
            "Tag={tag},{},{},{},{}\n",
            java_fixed(interval.start.as_secs_f64(), 3),
            java_fixed(interval.length.as_secs_f64(), 3),
            java_fixed(hist.max() as f64 / MAX_VALUE_UNIT_RATIO, 3),
            STANDARD.encode(&interval.encoded)
        ));
    }
    Ok(out.into_bytes())
}

/// Writes the log to `path`.
///
/// # Errors
/// [`Error::Io`] when it cannot be encoded or written.
pub(crate) fn write(
    path: &Path,
    comment: &str,
    start: SystemTime,
    series: &[(&str, &[Interval])],
) -> Result<(), Error> {
    let bytes = render(path, comment, start, series)?;
    fs::write(path, bytes).map_err(|e| Error::io("writing", path, e))
}

#[cfg(test)]
/// Reads a log back: per tag, the intervals' histograms added up, and the number of intervals.
///
/// # Errors
/// A description of the first line that does not parse or decode.
pub(crate) fn read_totals(bytes: &[u8]) -> Result<Vec<(String, Histogram<u64>, usize)>, String> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};

    let mut totals: Vec<(String, Histogram<u64>, usize)> = Vec::new();
    let mut deserializer = Deserializer::new();
    for entry in IntervalLogIterator::new(bytes) {
        let entry = entry.map_err(|e| format!("{e:?}"))?;
        let LogEntry::Interval(interval) = entry else {
            continue;
        };
        let tag = interval
            .tag()
            .map(|t| t.as_str().to_string())
            .unwrap_or_default();
        let encoded = interval.encoded_histogram();
        if !encoded.starts_with("HISTF") {
            return Err(format!("interval not DEFLATE-compressed V2: {encoded:.8}"));
        }
        let raw = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .map_err(|e| e.to_string())?;
        let hist: Histogram<u64> = deserializer
            .deserialize(&mut raw.as_slice())
            .map_err(|e| format!("{e:?}"))?;
        match totals.iter_mut().find(|(t, _, _)| *t == tag) {
            Some((_, total, n)) => {
                total.add(&hist).map_err(|e| format!("{e:?}"))?;
                *n += 1;
            }
            None => totals.push((tag, hist, 1)),
        }
    }
    Ok(totals)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{Intervals, COST_MAX};

    /// A fixed start with sub-millisecond digits: Java's writer takes whole milliseconds.
    fn fixed_start() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789)
    }

    /// Two one-second intervals of each tag, the lateness max 1,234,500 ns.
    fn two_intervals() -> (Vec<Interval>, Vec<Interval>) {
        let mut lateness = Intervals::new(COST_MAX);
        let mut cost = Intervals::new(COST_MAX);
        for second in 0..2u64 {
            for v in 1..=100u64 {
                lateness.record(v * 1_000 + second);
                cost.record(v * 3);
            }
            lateness.record(1_234_500);
            let at = Duration::from_secs(second + 1);
            lateness.close(at);
            cost.close(at);
        }
        (lateness.into_closed(), cost.into_closed())
    }

    fn render_fixed() -> String {
        let (l, c) = two_intervals();
        let bytes = render(
            Path::new("test.hlog"),
            "tickwheel-loadgen hierarchical virtual clock; tag lateness in ns, tag cost in ns",
            fixed_start(),
            &[("lateness", &l), ("cost", &c)],
        )
        .unwrap();
        String::from_utf8(bytes).unwrap()
    }

    /// Everything before the first interval line.
    fn header_of(text: &str) -> &str {
        &text[..text.find("\nTag=").map_or(text.len(), |i| i + 1)]
    }

    #[test]
    fn header_matches_the_golden_file() {
        // UPDATE_GOLDEN=1 rewrites the file; review the diff before committing it.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/header.hlog");
        let text = render_fixed();
        let header = header_of(&text);
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, header).unwrap();
        }
        assert_eq!(header, std::fs::read_to_string(path).unwrap());
    }

    #[test]
    fn header_is_javas_writer_layout() {
        let text = render_fixed();
        let lines: Vec<&str> = header_of(&text).lines().collect();
        // outputComment: "#%s\n".
        assert_eq!(
            lines[0],
            "#tickwheel-loadgen hierarchical virtual clock; tag lateness in ns, tag cost in ns"
        );
        // outputLogFormatVersion: "#[Histogram log format version " + "1.3" + "]".
        assert_eq!(lines[1], "#[Histogram log format version 1.3]");
        // outputStartTime: "#[StartTime: %.3f (seconds since epoch), %s]\n" of msec / 1000.0
        // and new Date(msec).
        assert_eq!(
            lines[2],
            "#[StartTime: 1700000000.123 (seconds since epoch), Tue Nov 14 22:13:20 UTC 2023]"
        );
        // outputBaseTime: "#[BaseTime: %.3f (seconds since epoch)]\n".
        assert_eq!(
            lines[3],
            "#[BaseTime: 1700000000.123 (seconds since epoch)]"
        );
        // outputLegend.
        assert_eq!(
            lines[4],
            r#""StartTimestamp","Interval_Length","Interval_Max","Interval_Compressed_Histogram""#
        );
        assert_eq!(lines.len(), 5);
    }

    #[test]
    fn interval_max_is_scaled_as_javas_default_ratio() {
        let text = render_fixed();
        let first = text
            .lines()
            .find(|l| l.starts_with("Tag=lateness,"))
            .unwrap();
        let fields: Vec<&str> = first.split(',').collect();
        // Tag, start, length, max / 1e6 ("%.3f"), histogram.
        assert_eq!(&fields[..4], ["Tag=lateness", "0.000", "1.000", "1.235"]);
        assert!(fields[4].starts_with("HISTF"));
    }

    #[test]
    fn java_date_is_dates_to_string_in_utc() {
        assert_eq!(java_date(0), "Thu Jan 01 00:00:00 UTC 1970");
        assert_eq!(java_date(951_782_400_000), "Tue Feb 29 00:00:00 UTC 2000");
        assert_eq!(java_date(4_102_444_799_999), "Thu Dec 31 23:59:59 UTC 2099");
    }

    #[test]
    fn log_reads_back_to_the_same_histograms() {
        let mut lateness = Intervals::new(COST_MAX);
        let mut cost = Intervals::new(COST_MAX);
        let mut total_lateness = crate::measure::new_histogram(COST_MAX);
        let mut total_cost = crate::measure::new_histogram(COST_MAX);
        for second in 0..4u64 {
            for v in 0..1_000u64 {
                let l = (v * 7919 + second * 13) % 50_000;
                lateness.record(l);
                total_lateness.record(l).unwrap();
                let c = 10 + (v * 31) % 900;
                cost.record(c);
                total_cost.record(c).unwrap();
            }
            let at = Duration::from_secs(second + 1);
            lateness.close(at);
            cost.close(at);
        }
        let (l, c) = (lateness.into_closed(), cost.into_closed());
        let bytes = render(
            Path::new("test.hlog"),
            "test",
            SystemTime::UNIX_EPOCH,
            &[("lateness", &l), ("cost", &c)],
        )
        .unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(text.contains("Tag=lateness,0.000,1.000,"));
        assert!(text.contains(",HISTF"));
        let totals = read_totals(&bytes).unwrap();
        assert_eq!(totals.len(), 2);
        for (tag, hist, n) in totals {
            assert_eq!(n, 4, "{tag}");
            let want = if tag == "lateness" {
                &total_lateness
            } else {
                &total_cost
            };
            assert_eq!(hist.len(), want.len(), "{tag}");
            let got: Vec<_> = hist
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            let exp: Vec<_> = want
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value()))
                .collect();
            assert_eq!(got, exp, "{tag}");
        }
    }
}
