//! `<timer>.hlog`: an HdrHistogram interval log (V2 format, DEFLATE-compressed histograms in
//! base64, each starting `HISTF`), one interval per second of run time, two tags:
//! `lateness` (ticks on the virtual clock, ns on the real one) and `cost` (sampled cost of every
//! operation, ns). HdrHistogram's `HistogramLogProcessor` and the Rust crate's
//! `IntervalLogIterator` read it back.

use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime};

use hdrhistogram::serialization::interval_log::{IntervalLogWriterBuilder, Tag};
use hdrhistogram::serialization::{Deserializer, V2DeflateSerializer};
use hdrhistogram::Histogram;

use crate::error::Error;
use crate::measure::Interval;

/// Renders the log: a comment naming the run, then each interval of each tag in time order.
///
/// # Errors
/// [`Error::Io`] (against `path`) when an interval cannot be decoded or re-encoded.
pub(crate) fn render(
    path: &Path,
    comment: &str,
    start: SystemTime,
    series: &[(&str, &[Interval])],
) -> Result<Vec<u8>, Error> {
    let bad = |what: String| Error::io("encoding", path, std::io::Error::other(what));
    let mut buf = Vec::new();
    let mut serializer = V2DeflateSerializer::new();
    {
        let mut writer = IntervalLogWriterBuilder::new()
            .add_comment(comment)
            .with_start_time(start)
            .with_base_time(start)
            .begin_log_with(&mut buf, &mut serializer)
            .map_err(|e| bad(e.to_string()))?;
        let mut entries: Vec<(Duration, &str, &Interval)> = series
            .iter()
            .flat_map(|(tag, intervals)| intervals.iter().map(move |i| (i.start, *tag, i)))
            .collect();
        entries.sort_by_key(|(start, _, _)| *start);
        let mut deserializer = Deserializer::new();
        for (_, tag, interval) in entries {
            let hist: Histogram<u64> = deserializer
                .deserialize(&mut interval.encoded.as_slice())
                .map_err(|e| bad(format!("{e:?}")))?;
            writer
                .write_histogram(&hist, interval.start, interval.length, Tag::new(tag))
                .map_err(|e| bad(format!("{e:?}")))?;
        }
    }
    Ok(buf)
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
