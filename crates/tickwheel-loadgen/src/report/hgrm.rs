//! `.hgrm` files: the percentile distribution in HdrHistogram's text layout, character for
//! character what Java's `AbstractHistogram.outputPercentileDistribution` (non-CSV, ticks per
//! half distance 5, value scaling ratio 1) writes for the same histogram, which is also what
//! `HistogramLogProcessor -outputValueUnitRatio 1` writes into its `.hgrm`; one line is added
//! on top, a `#` comment naming the unit of the values.
//!
//! ```text
//! #[Values in ns]
//!        Value     Percentile TotalCount 1/(1-Percentile)
//!
//!       10.000 0.000000000000          1           1.00
//!        ...
//!     5003.000 0.971875000000        103          35.56
//!     5003.000 1.000000000000        103
//! #[Mean    =      635.981, StdDeviation   =      807.937]
//! #[Max     =     5003.000, Total count    =          103]
//! #[Buckets =           24, SubBuckets     =         2048]
//! ```
//!
//! Rows step through percentiles as Java's `PercentileIterator` does (computed here the same way,
//! in percent, so that rows fall where Java's fall); the last row, percentile 1, has three fields
//! (its `1/(1-Percentile)` would be infinite; only Java's CSV layout writes `Infinity`). Numbers
//! are formatted as `java.util.Formatter` does (`%12.{sigfig}f` for values, mean and deviation,
//! `%2.12f`, `%10d`, `%14.2f`), rounding half up on the shortest decimal form of the double.
//!
//! HdrHistogram's plotter (`plotFiles.html`) trims each line, splits it on spaces and keeps it
//! when it does not start with `#`, has exactly 4 fields, and its first field (the value, y) and
//! its fourth (`1/(1-Percentile)`, x) both parse with JavaScript's `parseFloat`. So it skips the
//! unit line, the column header and the footer, and, as for Java's own files, the last row: the
//! row before it has the same value and count, so the plot still reaches the maximum.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Percentile steps per halving distance, Java's default.
const TICKS_PER_HALF_DISTANCE: i64 = 5;

/// One row of the distribution: value, percentile level in percent (as Java keeps it), count
/// of values up to and including this one.
struct Row {
    value: u64,
    percent: f64,
    total: u64,
}

/// The rows Java's `PercentileIterator` visits: every recorded value (highest equivalent) is
/// reported once per percentile level it reaches; at the value that completes the count, once,
/// then once more at level 100.
fn percentile_rows(hist: &Histogram<u64>, ticks_per_half: i64) -> Vec<Row> {
    let count = hist.len();
    let mut rows = Vec::new();
    let mut level = 0.0_f64;
    let mut running = 0u64;
    for v in hist.iter_recorded() {
        running += v.count_at_value();
        let value = v.value_iterated_to();
        while 100.0 * running as f64 / count as f64 >= level {
            rows.push(Row {
                value,
                percent: level,
                total: running,
            });
            // Java: ticks * (long) Math.pow(2, (long) (log(100 / (100 - level)) / log(2)) + 1).
            let halvings = ((100.0 / (100.0 - level)).ln() / 2.0_f64.ln()) as i64;
            let reporting_ticks = ticks_per_half.wrapping_mul(
                2.0_f64.powi(i32::try_from(halvings.saturating_add(1)).unwrap_or(i32::MAX)) as i64,
            );
            level += 100.0 / reporting_ticks as f64;
            if running == count {
                rows.push(Row {
                    value,
                    percent: 100.0,
                    total: running,
                });
                return rows;
            }
        }
    }
    rows
}

/// `x` as Java's `String.format(Locale.US, "%.{decimals}f", x)` writes it: the shortest decimal
/// digits that read back as `x`, rounded half up at `decimals`.
pub(crate) fn java_fixed(x: f64, decimals: usize) -> String {
    if x.is_nan() {
        return "NaN".to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity" } else { "-Infinity" }.to_string();
    }
    // Rust's `{:e}` writes the shortest round-tripping digits: "d.ddde±x".
    let sci = format!("{:e}", x.abs());
    let (mantissa, exp) = sci.split_once('e').expect("{:e} writes an exponent");
    let exp: i64 = exp.parse().expect("{:e} writes an integer exponent");
    let digits: Vec<u8> = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|b| b - b'0')
        .collect();
    // Digit i of `digits` has weight 10^(exp - i); out[k] has weight 10^(top - k).
    let top = exp.max(0);
    let decimals_i = i64::try_from(decimals).expect("few decimals");
    let digit_at = |weight: i64| -> u8 {
        usize::try_from(exp - weight)
            .ok()
            .and_then(|i| digits.get(i).copied())
            .unwrap_or(0)
    };
    let mut out: Vec<u8> = (-decimals_i..=top).rev().map(digit_at).collect();
    if digit_at(-decimals_i - 1) >= 5 {
        let mut k = out.len();
        loop {
            if k == 0 {
                out.insert(0, 1);
                break;
            }
            k -= 1;
            if out[k] == 9 {
                out[k] = 0;
            } else {
                out[k] += 1;
                break;
            }
        }
    }
    let int_len = out.len() - decimals;
    let mut text = String::new();
    if x.is_sign_negative() {
        text.push('-');
    }
    let int_part = &out[..int_len];
    let first = int_part.iter().position(|d| *d != 0).unwrap_or(int_len - 1);
    text.extend(int_part[first..].iter().map(|d| char::from(b'0' + d)));
    if decimals > 0 {
        text.push('.');
        text.extend(out[int_len..].iter().map(|d| char::from(b'0' + d)));
    }
    text
}

/// Java's mean and standard deviation: over recorded values, each at its median equivalent.
fn java_mean_stdev(hist: &Histogram<u64>) -> (f64, f64) {
    let count = hist.len();
    if count == 0 {
        return (0.0, 0.0);
    }
    let mut total = 0.0_f64;
    for v in hist.iter_recorded() {
        // Java multiplies two longs, then adds to a double.
        total += hist
            .median_equivalent(v.value_iterated_to())
            .wrapping_mul(v.count_at_value()) as f64;
    }
    let mean = total / count as f64;
    let mut deviations = 0.0_f64;
    for v in hist.iter_recorded() {
        let deviation = hist.median_equivalent(v.value_iterated_to()) as f64 - mean;
        deviations += deviation * deviation * v.count_since_last_iteration() as f64;
    }
    (mean, (deviations / count as f64).sqrt())
}

/// Renders `hist`, whose values are in `unit` (named on the first line), in Java's layout.
pub(crate) fn render(hist: &Histogram<u64>, unit: &str) -> String {
    let sig = usize::from(hist.sigfig());
    let mut out = String::new();
    let _ = writeln!(out, "#[Values in {unit}]");
    let _ = write!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    for row in percentile_rows(hist, TICKS_PER_HALF_DISTANCE) {
        let value = java_fixed(row.value as f64, sig);
        let quantile = java_fixed(row.percent / 100.0, 12);
        if row.percent == 100.0 {
            let _ = writeln!(out, "{value:>12} {quantile:>2} {:>10}", row.total);
        } else {
            let inverse = java_fixed(1.0 / (1.0 - row.percent / 100.0), 2);
            let _ = writeln!(
                out,
                "{value:>12} {quantile:>2} {:>10} {inverse:>14}",
                row.total
            );
        }
    }
    let (mean, stdev) = java_mean_stdev(hist);
    let _ = writeln!(
        out,
        "#[Mean    = {:>12}, StdDeviation   = {:>12}]",
        java_fixed(mean, sig),
        java_fixed(stdev, sig)
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12}, Total count    = {:>12}]",
        java_fixed(hist.max() as f64, sig),
        hist.len()
    );
    // Java: subBucketCount = 2^ceil(log2(2 * 10^sigfig)).
    let sub_buckets = (2 * 10u64.pow(u32::from(hist.sigfig()))).next_power_of_two();
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {sub_buckets:>12}]",
        hist.buckets()
    );
    out
}

#[cfg(test)]
/// JavaScript's `parseFloat`: the longest numeric prefix, or `None` (NaN).
fn js_parse_float(field: &str) -> Option<f64> {
    let s = field.trim_start();
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    if unsigned.starts_with("Infinity") {
        return Some(if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        });
    }
    (1..=s.len())
        .rev()
        .filter(|&end| s.is_char_boundary(end))
        .find_map(|end| {
            let prefix = &s[..end];
            // Rust accepts "inf"/"nan" spellings JavaScript does not; digits only here.
            let numeric = prefix
                .chars()
                .all(|c| c.is_ascii_digit() || matches!(c, '.' | 'e' | 'E' | '+' | '-'));
            numeric.then(|| prefix.parse::<f64>().ok()).flatten()
        })
}

#[cfg(test)]
/// The rows HdrHistogram's plotter (`plotFiles.html`, `appendDataSeries`) plots: the line
/// trimmed and split on runs of spaces, kept when it does not start with `#`, has exactly 4
/// fields, and the first (y) and fourth (x) fields parse with `parseFloat`.
pub(crate) fn plotter_rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.starts_with('#'))
        .map(|line| {
            line.split(' ')
                .filter(|f| !f.is_empty())
                .collect::<Vec<_>>()
        })
        .filter(|fields| fields.len() == 4)
        .filter(|fields| js_parse_float(fields[0]).is_some() && js_parse_float(fields[3]).is_some())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::{new_histogram, COST_MAX, LATENESS_MAX};

    fn sample() -> Histogram<u64> {
        let mut h = new_histogram(COST_MAX);
        for v in 1..=100u64 {
            h.record(v * 10).unwrap();
        }
        h.record_n(5_000, 3).unwrap();
        h
    }

    #[test]
    fn matches_the_golden_file() {
        // UPDATE_GOLDEN=1 rewrites the file; review the diff before committing it.
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/sample.hgrm");
        let text = render(&sample(), "ns");
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        assert_eq!(text, std::fs::read_to_string(path).unwrap());
    }

    #[test]
    fn last_row_has_three_fields_as_in_java() {
        let text = render(&sample(), "ns");
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .skip(1)
            .collect();
        let last = rows.last().unwrap();
        // Java: "%12.3f %2.12f %10d\n".
        assert_eq!(*last, "    5003.000 1.000000000000        103");
        assert!(!text.contains("Infinity"));
        for row in &rows[..rows.len() - 1] {
            assert_eq!(row.split_whitespace().count(), 4, "{row}");
        }
    }

    #[test]
    fn the_unit_is_a_comment_on_the_first_line() {
        let text = render(&sample(), "ns");
        assert_eq!(text.lines().next(), Some("#[Values in ns]"));
        assert_eq!(
            text.lines().nth(1).unwrap().trim_start(),
            "Value     Percentile TotalCount 1/(1-Percentile)"
        );
    }

    #[test]
    fn plotter_plots_every_row_but_the_last_and_reaches_the_max() {
        for h in [sample(), new_histogram(LATENESS_MAX)] {
            let text = render(&h, "ns");
            let data_rows: Vec<&str> = text
                .lines()
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .skip(1)
                .collect();
            let kept = plotter_rows(&text);
            assert_eq!(kept.len(), data_rows.len().saturating_sub(1));
            for row in &kept {
                let x = js_parse_float(row[3]).unwrap();
                assert!(x.is_finite() && x >= 1.0, "{row:?}");
                let q = row[1].parse::<f64>().unwrap();
                assert!((0.0..1.0).contains(&q), "{row:?}");
            }
            if !h.is_empty() {
                let last = kept.last().unwrap();
                assert_eq!(last[2].parse::<u64>().unwrap(), h.len());
                assert_eq!(last[0].parse::<f64>().unwrap(), h.max() as f64);
            }
        }
    }

    #[test]
    fn rows_fall_where_javas_percent_levels_fall() {
        // 1000 values 1..=1000: 75 % of the count is reached exactly at value 750. Java's level
        // 75.0 is exact in percent; stepping in quantiles (0.05 five times from 0.5) lands just
        // above 0.75 and would report the row at 751 instead.
        let mut h = new_histogram(COST_MAX);
        for v in 1..=1000u64 {
            h.record(v).unwrap();
        }
        let text = render(&h, "ns");
        assert!(
            text.contains("     750.000 0.750000000000        750           4.00\n"),
            "{text}"
        );
    }

    #[test]
    fn numbers_round_half_up_as_java_formatter_does() {
        assert_eq!(java_fixed(0.125, 2), "0.13");
        // 0.15 is 0.1499999... in binary; Java rounds its shortest form "0.15" up.
        assert_eq!(java_fixed(0.15, 1), "0.2");
        assert_eq!(java_fixed(9.9996, 3), "10.000");
        assert_eq!(java_fixed(0.0, 3), "0.000");
        assert_eq!(java_fixed(5003.0, 3), "5003.000");
        assert_eq!(java_fixed(1e-7, 3), "0.000");
        assert_eq!(java_fixed(0.0005, 3), "0.001");
        assert_eq!(java_fixed(123_456_789_012.0, 0), "123456789012");
        assert_eq!(java_fixed(1.0 / 3.0, 12), "0.333333333333");
    }

    #[test]
    fn empty_histogram_is_valid() {
        let text = render(&new_histogram(COST_MAX), "ns");
        assert!(text.contains("Total count    =            0"));
        assert!(!text.contains("NaN"));
    }
}
