//! `.hgrm` files: HdrHistogram's percentile-distribution text layout, as Java's
//! `outputPercentileDistribution` writes it, so HdrHistogram's plotter and scripts read it.
//!
//! ```text
//!        Value     Percentile TotalCount 1/(1-Percentile)
//!
//!        1.000 0.000000000000          1           1.00
//!        ...
//!       42.000 1.000000000000        100       Infinity
//! #[Mean    =       12.345, StdDeviation   =        6.789]
//! #[Max     =       42.000, Total count    =          100]
//! #[Buckets =           22, SubBuckets     =         2048]
//! ```
//!
//! Rows step through percentiles with 5 steps per halving of the remaining distance, as Java's
//! default does. Every data row has exactly 4 fields, the last one (percentile 1) included,
//! whose `1/(1-Percentile)` is written `Infinity` (as Java's CSV output does) so that a reader
//! keeping "lines not starting with `#` with exactly 4 fields" sees every data row. Values are
//! in the histogram's own unit (ns, or ticks for virtual-clock lateness) with 3 decimals.

use std::fmt::Write as _;

use hdrhistogram::Histogram;

/// Percentile steps per halving distance, Java's default.
const TICKS_PER_HALF_DISTANCE: u32 = 5;

/// Renders `hist` in the percentile-distribution layout.
pub(crate) fn render(hist: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !hist.is_empty() {
        let mut total = 0u64;
        for v in hist.iter_quantiles(TICKS_PER_HALF_DISTANCE) {
            total += v.count_since_last_iteration();
            let q = v.quantile_iterated_to();
            let inverse = if q < 1.0 {
                format!("{:>14.2}", 1.0 / (1.0 - q))
            } else {
                format!("{:>14}", "Infinity")
            };
            let _ = writeln!(
                out,
                "{:>12.3} {:>2.12} {:>10} {inverse}",
                v.value_iterated_to() as f64,
                q,
                total
            );
        }
    }
    let (mean, stdev, max) = if hist.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (hist.mean(), hist.stdev(), hist.max() as f64)
    };
    let sub_buckets = (2 * 10u64.pow(u32::from(hist.sigfig()))).next_power_of_two();
    let _ = writeln!(
        out,
        "#[Mean    = {mean:>12.3}, StdDeviation   = {stdev:>12.3}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {max:>12.3}, Total count    = {:>12}]",
        hist.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {sub_buckets:>12}]",
        hist.buckets()
    );
    out
}

#[cfg(test)]
/// The plotter's rule: lines that do not start with `#` and have exactly 4 whitespace-separated
/// fields. (The header line passes it too; a plotter skips it because it is not numeric.)
pub(crate) fn plotter_rows(text: &str) -> Vec<Vec<&str>> {
    text.lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| line.split_whitespace().collect::<Vec<_>>())
        .filter(|fields| fields.len() == 4)
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
        let text = render(&sample());
        if std::env::var_os("UPDATE_GOLDEN").is_some() {
            std::fs::write(path, &text).unwrap();
        }
        assert_eq!(text, std::fs::read_to_string(path).unwrap());
    }

    #[test]
    fn plotter_rule_reads_every_data_row() {
        for h in [sample(), new_histogram(LATENESS_MAX)] {
            let text = render(&h);
            let data_rows: Vec<&str> = text
                .lines()
                .skip(2)
                .filter(|l| !l.is_empty() && !l.starts_with('#'))
                .collect();
            let kept = plotter_rows(&text);
            assert_eq!(
                kept[0],
                ["Value", "Percentile", "TotalCount", "1/(1-Percentile)"]
            );
            assert_eq!(kept.len() - 1, data_rows.len());
            for row in &kept[1..] {
                let numbers: Vec<f64> = row.iter().map(|f| f.parse::<f64>().unwrap()).collect();
                assert!(numbers[1] >= 0.0 && numbers[1] <= 1.0);
            }
            if !h.is_empty() {
                let last = kept.last().unwrap();
                assert_eq!(last[2].parse::<u64>().unwrap(), h.len());
                assert_eq!(last[0].parse::<f64>().unwrap(), h.max() as f64);
            }
        }
    }

    #[test]
    fn empty_histogram_is_valid() {
        let text = render(&new_histogram(COST_MAX));
        assert!(text.contains("Total count    =            0"));
        assert!(!text.contains("NaN"));
    }
}
